// Package cost estimates what one training step of a layout costs on TPU:
// HBM per chip by component (weights, gradients, optimizer state,
// activations under a rematerialisation policy, transient buffers), and the
// step time broken into compute, exposed ICI and DCN communication and the
// pipeline bubble, with MFU and tokens per second. Every formula lives here
// once; collectives come from package collective and bubbles from package
// schedule.
package cost

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"shardlab/hw"
	"shardlab/model"
	"shardlab/schedule"
)

// Precision gives the bytes per parameter of each piece of model state and
// per element of activations.
type Precision struct {
	Weight     int `json:"weight_bytes"`     // stored weights (MaxText weight_dtype)
	Master     int `json:"master_bytes"`     // extra master copy (0 when weights are already fp32)
	Gradient   int `json:"gradient_bytes"`   // gradients, and what the gradient collectives carry
	Optimizer  int `json:"optimizer_bytes"`  // optimizer state (Adam: two moments)
	Activation int `json:"activation_bytes"` // activations (MaxText dtype), gathered weights, and what tensor/pipeline collectives carry
}

// MaxTextPrecision is MaxText's default: fp32 weights (weight_dtype) and
// gradients, fp32 Adam moments, bf16 activations — 16 bytes of state per
// parameter, and the fp32 gradients the Multislice guidance's 32 bits per
// parameter assume.
func MaxTextPrecision() Precision {
	return Precision{Weight: 4, Gradient: 4, Optimizer: 8, Activation: 2}
}

// MaxTextBF16Precision is MaxText with weight_dtype bfloat16: JAX's
// gradients take the parameters' dtype, and optax's Adam keeps mu in
// mu_dtype (unset: the parameters' dtype) and nu in the parameters' dtype,
// so every piece of state is 2 bytes — 8 bytes per parameter.
func MaxTextBF16Precision() Precision {
	return Precision{Weight: 2, Gradient: 2, Optimizer: 4, Activation: 2}
}

// ZeROPrecision is the ZeRO paper's mixed-precision Adam (Rajbhandari et
// al. 2019, §3.1): bf16 weights and gradients, fp32 master weights and
// moments — 2Ψ + 2Ψ + 12Ψ = 16Ψ bytes.
func ZeROPrecision() Precision {
	return Precision{Weight: 2, Master: 4, Gradient: 2, Optimizer: 8, Activation: 2}
}

// AMPPrecision is PyTorch's automatic mixed precision on an fp32 model,
// as PyTorch/XLA runs it on TPU: fp32 parameters, gradients and Adam
// moments (16 bytes of state a parameter, as MaxText's), the forward and
// the loss under torch.autocast('xla', dtype=torch.bfloat16), which casts
// the ops it lists (the matmuls) to bf16 and runs the rest "in the type
// defined by their inputs" (pytorch/xla docs/source/perf/amp.md
// @41398bff): the embedding's output, the residual stream it feeds (each
// decoder layer's input, what remat full keeps), the norms and the
// weights FSDP gathers stay fp32. Activations are costed at 4 bytes, what
// the layer inputs and the gathered weights hold; the bf16 matmul outputs
// take less, so it bounds them from above (the fit answer is safe; the
// step time is pessimistic where tensor parallelism's collectives carry
// those bf16 outputs, costed at 4 bytes). It is what MaxText's precision
// becomes in a PyTorch/XLA job (plan.FrameworkPyTorch), not a preset a
// MaxText job can ask.
func AMPPrecision() Precision {
	return Precision{Weight: 4, Gradient: 4, Optimizer: 8, Activation: 4}
}

// StateBytes is the bytes of model state per parameter.
func (p Precision) StateBytes() int { return p.Weight + p.Master + p.Gradient + p.Optimizer }

// Precisions names the presets: maxtext (weight_dtype float32), bf16
// (weight_dtype bfloat16) and zero.
func Precisions() map[string]Precision {
	return map[string]Precision{"maxtext": MaxTextPrecision(), "bf16": MaxTextBF16Precision(), "zero": ZeROPrecision()}
}

// ParsePrecision reads a preset name, in any case.
func ParsePrecision(s string) (Precision, error) {
	if p, ok := Precisions()[strings.ToLower(strings.TrimSpace(s))]; ok {
		return p, nil
	}
	return Precision{}, fmt.Errorf("cost: precision %q, want maxtext (fp32 weights, 16 B/param), bf16 (MaxText weight_dtype bfloat16, 8 B/param) or zero (bf16 weights, fp32 master, 16 B/param)", s)
}

// Name is the preset's name (amp for AMPPrecision), or a byte summary.
func (p Precision) Name() string {
	for _, n := range []string{"maxtext", "bf16", "zero"} {
		if Precisions()[n] == p {
			return n
		}
	}
	if p == AMPPrecision() {
		return "amp"
	}
	return fmt.Sprintf("weights %d B, master %d B, gradients %d B, optimizer %d B, activations %d B", p.Weight, p.Master, p.Gradient, p.Optimizer, p.Activation)
}

// Quantization is the number format of the matmuls (MaxText quantization).
type Quantization string

// The formats: none (bf16), int8 and fp8, as MaxText runs them through
// qwix (the config export writes): which matmuls each quantizes is
// headFLOPs' and UnquantizedExperts' to say.
const (
	QuantNone Quantization = ""
	QuantInt8 Quantization = "int8"
	QuantFP8  Quantization = "fp8"
)

// Format is the number format the quantization runs the matmuls in:
// bf16 for none.
func (q Quantization) Format() hw.Format {
	switch q {
	case QuantInt8:
		return hw.Int8
	case QuantFP8:
		return hw.FP8
	}
	return hw.BF16
}

// ParseQuantization reads "", none, int8 or fp8.
func ParseQuantization(s string) (Quantization, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "none", "bf16", "bfloat16":
		return QuantNone, nil
	case "int8":
		return QuantInt8, nil
	case "fp8":
		return QuantFP8, nil
	}
	return "", fmt.Errorf("cost: quantization %q, want none, int8 or fp8", s)
}

// AttentionKind is how the attention core runs (MaxText attention).
type AttentionKind string

// The kinds: flash (splash) attention keeps no score matrix and skips the
// masked blocks of causal attention; dot_product materialises the scores;
// flash_noncausal is the flash kernel called without its causal flag,
// which computes every block, as MaxText's flash path did until it passed
// causal=True (MaxText/layers.py @e47fa1b5d: flash_attention(query, key,
// value, causal = False, ...); MaxText/layers/attentions.py @76bd53b0:
// causal=True).
const (
	AttentionFlash          AttentionKind = "flash"
	AttentionDot            AttentionKind = "dot_product"
	AttentionFlashNonCausal AttentionKind = "flash_noncausal"
)

// SkipsMasked reports whether the kernel skips the blocks above the causal
// diagonal: flash attention with its causal flag ("" is flash).
func (k AttentionKind) SkipsMasked() bool { return k == "" || k == AttentionFlash }

// Job is what is trained and how, independent of the layout.
type Job struct {
	Model model.Spec
	// Seq is the sequence length in tokens; GlobalBatch is sequences per
	// step.
	Seq         int
	GlobalBatch int
	// MicroBatches is the number of micro-batches per step, run one after
	// another: with pipeline parallelism the pipeline's (MaxText
	// num_pipeline_microbatches); without, MaxText's gradient accumulation
	// (gradient_accumulation_steps: a scan over the micro-batches that sums
	// their gradients, utils/gradient_accumulation.py), 1 for none.
	MicroBatches int
	Schedule     schedule.Kind
	// Chunks is the chunks of layers per pipeline device for the
	// interleaved and circular schedules (virtual stages per device; MaxText
	// num_pipeline_repeats); 0 means 1.
	Chunks int
	Remat  Remat
	// Custom places the tagged tensors under RematCustom.
	Custom Places
	// Settings are the precision, kernels, offloads and factors.
	Settings
	// Calibration, when set, replaces Calibrated() (validate fits with it).
	Calibration *Calibration
	// RingOfExperts runs expert parallelism as MaxText's ring of experts
	// (use_ring_of_experts, a dropless sparse_matmul path): every expert
	// rank all-gathers the tokens and router scores, runs its own experts
	// on the ones routed to them and reduce-scatters the outputs, in place
	// of the dispatch and combine all-to-alls.
	RingOfExperts bool
	// Dropout stores dropout masks (GPT-3-era training); modern LLM
	// pre-training runs without dropout.
	Dropout bool
}

// MaxChunks is the most chunks of layers per pipeline device a job may
// have.
const MaxChunks = 64

// DefaultHBMHeadroom keeps no HBM free beyond what XLA keeps itself:
// the usable HBM is the capacity per device XLA's compiler checks a
// program against (hw/xla_hbm.csv, from its out-of-memory messages), its
// own reservations already out, and plan, validate, the web UI and every
// export hold a job to it alike, so a published run that ran is never
// refused for a margin. The plan's "HBM at the edge" warning, from the
// memory model's measured error, is where the uncertainty goes; a user's
// own margin is --hbm-headroom.
const DefaultHBMHeadroom = 0.0

// Settings are a job's choices beyond its model, shape and layout: the
// precision, the kernels, the offloads, the MoE dispatch's factors and
// the estimate's residuals. plan.Request carries them as they are, so
// they are listed once.
type Settings struct {
	Precision Precision
	// Quantization runs the decoder layers' matmuls that MaxText's qwix
	// rules quantize in int8 or fp8 at the chip's peak for that format
	// (the rest at the bf16 peak: headFLOPs, UnquantizedExperts).
	Quantization Quantization
	// Attention is the attention kernel; "" means flash.
	Attention AttentionKind
	// RepeatKV hands the attention core grouped-query keys and values
	// repeated to the query's heads, and so keeps them for its backward
	// pass: what a PyTorch/XLA job does (plan.FrameworkPyTorch), whose
	// script repeats K and V (Hugging Face's repeat_kv in its eager
	// attention; the export's xla_flash_attention before torch_xla's
	// flash_attention, whose FlashAttention.forward saves the q, k and v
	// it was given for the backward: torch_xla/experimental/
	// custom_kernel.py 795-823 @41398bff). MaxText's kernels take the
	// KV heads as they are (false). tensorWidths says what it changes.
	RepeatKV bool
	// OptimizerOffload and ParameterOffload keep the optimizer state and
	// the fp32 parameters in host memory between steps (MaxText
	// optimizer_memory_host_offload, parameter_memory_host_offload).
	OptimizerOffload, ParameterOffload bool
	// VocabTiles splits the output layer's logits and loss into this many
	// chunks over the tokens (MaxText num_vocab_tiling); 0 means 1.
	VocabTiles int
	// Efficiency is the fraction of the MXU-limited rate the matmuls and
	// the attention kernel reach once their shapes' MXU efficiency is
	// counted: the residual of what the model does not see op by op. 0
	// means the value calibrated for the chip's generation (Calibrated()).
	Efficiency float64
	// HBMHeadroom is the fraction of HBM kept free for the compiler's
	// buffers and fragmentation.
	HBMHeadroom float64
	// TempScale scales the estimate of what a compiler counts as the
	// step's temporaries (gradients, held activations, the largest phase)
	// to what it reported for this job (MemoryCalibration); 0 means 1.
	TempScale float64
	// CausalFLOPs halves the attention FLOPs in MFU (MaxText's convention
	// since its PR 2031); off, the PaLM convention.
	CausalFLOPs bool
	// CapacityFactor caps the rows each expert takes from a device at
	// ceil(factor · tokens · k / experts) (MaxText capacity_factor; tokens
	// past it are dropped, short experts padded); 0 means dropless
	// (MaxText sparse_matmul with megablox: ragged grouped GEMMs).
	CapacityFactor float64
	// LoadImbalance is the most loaded expert's tokens over the mean,
	// dropless (1 or 0: perfectly balanced).
	LoadImbalance float64
	// GMMTile is the row tile of a dropless MoE layer's grouped GEMMs,
	// averaged over the nine a layer runs (wi_0, wi_1 and wo, each as the
	// forward gmm, the lhs-gradient gmm and the rhs-gradient tgmm): a tile
	// computes all its rows whichever expert they belong to
	// (gmmTilePadding). 0 means MaxText's default, GMMTileRows.
	GMMTile float64
}

// NewJob returns a job with MaxText precision, 1F1B, full remat and the
// default efficiency and headroom.
func NewJob(m model.Spec, seq, globalBatch int) Job {
	return Job{
		Model: m, Seq: seq, GlobalBatch: globalBatch, MicroBatches: 1,
		Schedule: schedule.OneFOneB, Remat: RematFull,
		Settings: Settings{Precision: MaxTextPrecision(), HBMHeadroom: DefaultHBMHeadroom},
	}
}

// Reason classifies why a layout cannot run a job.
type Reason string

// The reasons.
const (
	ReasonHeads       Reason = "tensor does not divide the heads, KV heads or d_ff"
	ReasonLayers      Reason = "pipeline does not divide the layers"
	ReasonSeq         Reason = "context does not divide the sequence"
	ReasonBatch       Reason = "global batch does not split evenly over data, fsdp and micro-batches"
	ReasonMicroBatch  Reason = "micro-batches given without pipeline stages"
	ReasonHBM         Reason = "does not fit in HBM"
	ReasonHost        Reason = "does not fit in host RAM (offloaded buffers)"
	ReasonTensorDCN   Reason = "tensor parallelism over DCN"
	ReasonContextDCN  Reason = "context parallelism over DCN"
	ReasonInvalidMesh Reason = "axes do not multiply to the chips"
	ReasonExperts     Reason = "expert does not divide the experts"
)

// Infeasible says why a layout cannot run a job.
type Infeasible struct {
	Reason Reason
	Detail string
}

func (e *Infeasible) Error() string {
	if e.Detail == "" {
		return "cost: " + string(e.Reason)
	}
	return "cost: " + string(e.Reason) + ": " + e.Detail
}

// ErrJob is wrapped by errors in the job itself (as opposed to the layout).
var ErrJob = errors.New("invalid job")

func (j *Job) validate() error {
	if err := j.validateSettings(); err != nil {
		return err
	}
	return j.Model.Validate()
}

// CheckTrainable reports whether cost models training the model: the
// layer walk and the remat policies are those of softmax attention in
// layers of one shape, with shared experts as wide as the routed ones,
// so a hybrid model's gated-delta-rule layers, a model with
// sliding-window layers whose global layers have other KV heads or head
// widths (Gemma 4), and shared experts of their own width (all modelled
// for serving only, in inference) are refused rather than costed as
// something else. Sliding-window layers of the global layers' shape
// (Gemma 2) are trainable: only their attention core's work differs
// (jobFLOPs).
func CheckTrainable(spec model.Spec) error { return checkTrainable(&spec) }

// checkTrainable is CheckTrainable, the spec read in place (a search
// checks a job per layout it costs).
func checkTrainable(spec *model.Spec) error {
	switch {
	case spec.Hybrid():
		return fmt.Errorf("cost: model = %s (full_attention_every %d), want softmax attention in every layer: training a hybrid linear-attention model is not modelled: %w",
			spec.Name, spec.FullAttentionEvery, ErrJob)
	case spec.Windowed() && !sameAttentionShape(spec):
		g := spec.Global()
		return fmt.Errorf("cost: model = %s (sliding_window %d), want global attention in every layer: training a model with sliding-window layers is not modelled unless its global layers attend as its local ones (global layers: %d KV heads of %d, keys as values %v; local: %d of %d): %w",
			spec.Name, spec.SlidingWindow, g.KV(), g.Head(), spec.GlobalKeyAsValue, spec.KV(), spec.Head(), ErrJob)
	case spec.SharedExpertDFF != 0 && spec.SharedExpertDFF != spec.ExpertFF():
		return fmt.Errorf("cost: model = %s (shared_expert_d_ff %d), want shared experts as wide as the routed ones (%d): training them at their own width is not modelled: %w",
			spec.Name, spec.SharedExpertDFF, spec.ExpertFF(), ErrJob)
	}
	return nil
}

// sameAttentionShape reports whether a windowed spec's global layers
// attend with its local layers' KV heads and head widths, their values
// projected as the local layers' are.
func sameAttentionShape(spec *model.Spec) bool {
	g := spec.Global()
	return g.KV() == spec.KV() && g.QKHead() == spec.QKHead() && g.VHead() == spec.VHead() && !spec.GlobalKeyAsValue
}

// validateSettings is validate without the model's own checks, which an
// Estimator runs once per model (Estimator.validate).
func (j *Job) validateSettings() error {
	bad := badSetting
	switch {
	case j.Seq <= 0:
		return bad("seq", j.Seq, "a positive number of tokens")
	case j.GlobalBatch <= 0:
		return bad("global batch", j.GlobalBatch, "a positive number of sequences")
	case j.MicroBatches <= 0:
		return bad("micro-batches", j.MicroBatches, "at least 1")
	case !(j.Efficiency >= 0 && j.Efficiency <= 1):
		return bad("efficiency", j.Efficiency, "a fraction in (0, 1], or 0 for the generation's calibrated value")
	case j.VocabTiles < 0:
		return bad("vocab tiles", j.VocabTiles, "a positive count (0 means 1)")
	case j.HBMHeadroom < 0 || j.HBMHeadroom >= 1:
		return bad("HBM headroom", j.HBMHeadroom, "a fraction in [0, 1)")
	case !(j.TempScale == 0 || j.TempScale >= MinTempScale && j.TempScale <= MaxTempScale):
		return bad("temp scale", j.TempScale, fmt.Sprintf("0 (none) or a factor in [%g, %g]", MinTempScale, MaxTempScale))
	case j.Precision.Weight <= 0 || j.Precision.Gradient <= 0 || j.Precision.Activation <= 0 || j.Precision.Optimizer < 0 || j.Precision.Master < 0:
		return bad("precision", j.Precision, "positive weight, gradient and activation bytes")
	}
	if err := checkTrainable(&j.Model); err != nil {
		return err
	}
	if err := j.rematErr(); err != nil {
		return err
	}
	if k := j.Schedule; k != schedule.GPipe && k != schedule.OneFOneB && k != schedule.Interleaved && k != schedule.Circular {
		if _, err := schedule.ParseKind(string(k)); err != nil {
			return bad("schedule", j.Schedule, "gpipe, 1f1b, interleaved or circular")
		}
	}
	if j.Chunks < 0 || j.Chunks > MaxChunks || (j.Chunks > 1 && !j.Schedule.Chunked()) || (j.Schedule == schedule.Interleaved && j.Chunks < 2) {
		return bad("chunks", j.Chunks, "1 for gpipe and 1f1b, 2 to 64 for interleaved, 1 to 64 for circular")
	}
	if !(j.CapacityFactor >= 0 && j.CapacityFactor <= 64) {
		return bad("capacity factor", j.CapacityFactor, "0 (dropless) or a factor in (0, 64]")
	}
	if !(j.LoadImbalance == 0 || (j.LoadImbalance >= 1 && j.LoadImbalance <= 64)) {
		return bad("load imbalance", j.LoadImbalance, "0 (balanced) or a ratio in [1, 64]")
	}
	if !(j.GMMTile == 0 || (j.GMMTile >= 1 && j.GMMTile <= MaxGMMTile)) {
		return bad("grouped GEMM tile", j.GMMTile, fmt.Sprintf("0 (MaxText's %d rows) or a mean row tile in [1, %d]", GMMTileRows, MaxGMMTile))
	}
	return j.ringErr()
}

// badSetting is the error of a job's setting field, v, outside want.
func badSetting(field string, v any, want string) error {
	return fmt.Errorf("cost: %s = %v, want %s: %w", field, v, want, ErrJob)
}

// rematErr is validateSettings' check of the remat policy.
func (j *Job) rematErr() error {
	// a name as the parsers spell it passes without parsing (a search
	// checks a job per layout it costs)
	if !slices.Contains(policies[:], j.Remat) {
		if _, err := ParseRemat(string(j.Remat)); err != nil {
			return badSetting("remat", j.Remat, remats())
		}
	}
	return nil
}

// ringErr is validateSettings' check of the ring of experts, its last.
func (j *Job) ringErr() error {
	if j.RingOfExperts && (!j.Model.MoE() || j.CapacityFactor > 0) {
		return badSetting("ring of experts", j.RingOfExperts, "false, or true only for a mixture of experts run dropless (capacity factor 0: MaxText's ring of experts is a sparse_matmul path)")
	}
	return nil
}
