package cost

import (
	"time"

	"shardlab/hw"
	"shardlab/mesh"
	"shardlab/model"
	"shardlab/systolic"
	"shardlab/unit"
)

// compute fills in the FLOPs and the compute part of the step: the
// matmuls at the quantized peak times the MXU efficiency of their shapes,
// the attention core (flash attention skips the masked half of causal
// attention, whatever convention MFU counts in) at the bf16 peak times
// the MXU efficiency of its own GEMMs' shapes (a head of 128 fills half a
// 256-wide array), both times the residual efficiency, plus the memory-bound work at HBM bandwidth, and
// host-offload transfers that do not hide under the matmuls.
func (e *Estimator) compute(est *Estimate, sh *shape) error {
	j, m := &est.Job, &est.Mesh
	chip := &m.Multislice.Slice.Chip
	tokens := float64(j.GlobalBatch) * float64(j.Seq)
	fl := j.computeFLOPs(sh, tokens)
	est.ModelFLOPs = unit.FLOPs(sh.flops.model * tokens)
	est.HardwareFLOPs = unit.FLOPs(fl.matmul + fl.recompute + fl.attention + fl.dispatch)

	mx, err := e.mxu(j, sh, systolic.PresetFor(*chip))
	if err != nil {
		return err
	}
	est.MXUEfficiency, est.PaddingLoss, est.RaggedGEMMs = mx.efficiency, mx.padding, mx.ragged
	est.MatmulEfficiency, est.AttentionEfficiency = mx.matmul, mx.attention
	t := &est.Time
	mxu, attention := j.matmulSeconds(chip, float64(m.Chips()), fl, mx.matmul, mx.attention)
	t.MXU, t.Attention = seconds(mxu), seconds(attention)
	t.Vector = seconds(j.vectorBytes(sh, sh.r) / float64(chip.HBMBandwidth))
	t.Optimizer = seconds(j.optimizerBytes(sh) / float64(chip.HBMBandwidth))
	if pcie := j.offloadBytes(sh, sh.r, est.Memory); pcie > 0 && chip.PCIe > 0 {
		t.Offload = max(0, seconds(pcie/float64(chip.PCIe))-t.MXU-t.Attention)
	}
	t.Compute = t.MXU + t.Attention + t.Vector + t.Optimizer + t.Offload
	return nil
}

// stepFLOPs is a step's FLOPs on the whole layout, by the time they take:
// the matmuls' (with the experts' padding), the recomputed forward's and
// the attention core's (flash attention skips the masked half of causal
// attention, whatever convention MFU counts in), and the dropless sort,
// permutation and combine, on each chip, with the dropping path's
// dispatch einsums (dispatch, over all chips), as bf16 GEMM FLOPs. Each is
// in proportion to the step's tokens.
type stepFLOPs struct {
	matmul, recompute, attention, sortPerChip, dispatch float64
	// bf16 is the part of matmul and recompute a quantized job still
	// runs in bf16 (headFLOPs, and UnquantizedExperts' routed GEMMs); 0
	// without quantization.
	bf16 float64
	// tiles is the part of matmul the grouped GEMMs' tiles spend on
	// other experts' rows (gmmTilePadding), in bf16 too where the routed
	// GEMMs are (tilesBF16). Unlike the rest it does not grow with the
	// tokens of a micro-batch: (G − 1)·(tm − 1) rows a GEMM.
	tiles     float64
	tilesBF16 bool
}

// withoutTiles is fl less its tiles: what grows with the batch, the
// floor computeFloor takes (the tiles' rows are never negative).
func (fl stepFLOPs) withoutTiles() stepFLOPs {
	fl.matmul -= fl.tiles
	if fl.tilesBF16 {
		fl.bf16 -= fl.tiles
	}
	fl.tiles, fl.tilesBF16 = 0, false
	return fl
}

// computeFLOPs is j's stepFLOPs in shape sh at tokens per step.
func (j *Job) computeFLOPs(sh *shape, tokens float64) stepFLOPs {
	attnFwd, mtpFwd := sh.flops.attention*tokens, sh.flops.mtpAttention*tokens
	if j.Attention.SkipsMasked() {
		// the kernel skips blocks above the causal diagonal and, in a
		// local layer, those behind the window (jobFLOPs)
		attnFwd, mtpFwd = sh.flops.attentionSkipping*tokens, mtpFwd/2
	}
	fl := stepFLOPs{
		matmul:    6*sh.flops.matmulParams*tokens + j.expertPadding(tokens),
		recompute: sh.r.recompute * float64(j.Model.Layers) * tokens,
		attention: 3 * (attnFwd + mtpFwd),
	}
	if sh.r.attention {
		fl.attention += attnFwd
	}
	// The dropless sort, permutation and combine are data movement in the
	// activation dtype, expressed as bf16 GEMM time: quantization (MaxText's
	// fp8_full quantizes the dot_generals and the grouped GEMMs, qwix rules
	// in layers/quantizations.py and layers/moe.py @e591f30c) does not
	// speed them up. Nor does tensor parallelism split them: the MoE
	// layer's tokens are sharded over the batch axes and the sequence's
	// (activation_batch: data, fsdp, fsdp_transpose, expert;
	// activation_norm_length: tensor_sequence, context; base.yml
	// logical_axis_rules, layers/moe.py get_routed_moe_shardings
	// @e591f30c), not over tensor, so every tensor rank routes and sorts the
	// same tokens while the grouped GEMMs split each expert's width.
	// The dropping path's dispatch and combine einsums (denseDispatchFLOPs)
	// are real GEMMs (hardware FLOPs, not model FLOPs) on bf16 masks, at
	// the bf16 peak; every axis splits them (the tokens over the batch
	// axes, the experts over expert, d_model over tensor).
	fl.dispatch = j.denseDispatchFLOPs(tokens)
	fl.sortPerChip = j.droplessExtra(tokens)*float64(sh.t) + fl.dispatch
	// The routed GEMMs, the recomputed ones too, and the rows of other
	// experts their tiles compute (gmmTilePadding).
	routed := j.routedFLOPs(tokens) + sh.r.routed*float64(j.Model.Layers)*tokens
	fl.tiles = j.gmmTilePadding(sh) * routed
	fl.matmul += fl.tiles
	if j.Quantization != QuantNone {
		fl.bf16 = j.headFLOPs(tokens)
		if j.UnquantizedExperts() {
			fl.bf16 += routed + fl.tiles
			fl.tilesBF16 = true
		}
	}
	return fl
}

// UnquantizedExperts reports whether a quantized MoE job's routed expert
// GEMMs still run in bf16 in the MaxText configuration shardlab exports
// for it (export/maxtext.go: quantization through qwix,
// use_qwix_quantization true). Qwix quantizes the ops its rule names
// (qwix/_src/qconfig.py: op_names; qwix/_src/providers/qt.py intercepts
// jax.lax.dot_general, jax.numpy.einsum and jax.lax.ragged_dot by those
// names, and not the calls an intercepted op makes, @aa623acb), and
// MaxText's rules name dot_general, gmm and ragged_dot for fp8_full but
// dot_general alone for int8 (layers/quantizations.py
// get_quantization_rule @e591f30c). Dropless, the routed experts are
// grouped GEMMs, which layers/moe.py quantizes "only [for] fp8_full";
// with a capacity factor they are dense_matmul's jnp.einsum calls (its
// get_einsum returns jnp.einsum when the layer has no AQT quantization,
// which qwix leaves it), an op neither rule names. So int8 leaves them in
// bf16 either way, and fp8 with a capacity factor.
func (j Job) UnquantizedExperts() bool {
	if !j.Model.MoE() {
		return false
	}
	return j.Quantization == QuantInt8 || j.CapacityFactor > 0
}

// headFLOPs is the matmul FLOPs a step spends outside the decoder layers,
// which MaxText's quantization leaves in bf16: the output layer (or the
// tied embedding's attend) and the multi-token prediction modules, forward
// and backward. MaxText says "We do not quantize the logits matmul"
// (layers/decoders.py apply_output_head @e591f30c), and its qwix rules
// match module_path "decoder/.*layers.*" only (layers/quantizations.py
// get_quantization_rule, get_fp8_full_qwix_rule_w_sparsity; their
// op_names are dot_general, gmm and ragged_dot for fp8_full, dot_general
// alone for int8: UnquantizedExperts), which neither decoder/logits_dense
// nor the model's mtp_block, beside the decoder (models/models.py),
// matches.
func (j *Job) headFLOPs(tokens float64) float64 {
	spec := &j.Model
	return 6 * float64(spec.OutputMatmulParams()+spec.MTPMatmulParams()) * tokens
}

// matmulSeconds is the MXU's and the attention core's time per step, in
// seconds, of fl on chips chips whose projections' GEMMs run at MXU
// efficiency matmul and the attention core's at attention: the matmuls at
// the quantized peak but those left in bf16 (stepFLOPs.bf16), the
// attention core and the sort at the bf16 peak, all times the residual
// efficiency.
func (j *Job) matmulSeconds(chip *hw.Chip, chips float64, fl stepFLOPs, matmul, attention float64) (mxu, attn float64) {
	peak, _ := j.matmulPeak(chip)
	eff := j.efficiency(chip)
	bf16Eff := matmul * eff // a bf16 GEMM's share of the bf16 peak
	mmEff := bf16Eff
	if j.Quantization != QuantNone {
		mmEff *= j.calibration().Quantized
	}
	mxu = (fl.matmul-fl.bf16+fl.recompute)/chips/(peak*mmEff) + (fl.bf16+fl.sortPerChip)/chips/(float64(chip.PeakBF16)*bf16Eff)
	attn = fl.attention / chips / (float64(chip.PeakBF16) * attention * eff * j.calibration().Attention)
	return mxu, attn
}

// projWidths is d_model and the widths of a layer's query and key (or
// value) projections, heads × head_dim and KV heads × head_dim: the
// matmuls' sizes that the tensor collectives hide under and the vector
// work reads.
func projWidths(spec *model.Spec) (d, q, kv float64) {
	return float64(spec.DModel), float64(spec.Heads * spec.Head()), float64(spec.KV() * spec.Head())
}

// vectorBytes is the HBM traffic per chip per step of the memory-bound
// work the MXU does not do: per layer and token, each norm reads and
// writes the residual stream, the two residual sums read two operands and
// write one (a parallel block's one sum reads three), rotary embedding rewrites Q and K, and the MLP's activation
// reads its inputs and writes its product; the backward pass moves about
// twice the forward's bytes and every policy but none redoes the forward's
// (Korthikanti et al. 2022 count the same tensors). The output layer's
// softmax and loss read and write the logits in fp32 about four times.
func (j *Job) vectorBytes(sh *shape, r remat) float64 {
	spec := j.Model
	e := float64(j.Precision.Activation)
	d, q, kv := projWidths(&spec)
	act := float64(spec.MLPInputs()+1) * float64(spec.DFF)
	sums := 2 * 3 * d // two residual sums, each reading two operands and writing one
	if spec.ParallelBlock {
		sums = 4 * d // one, reading three and writing one
	}
	perToken := e * (float64(spec.Norms())*2*d + sums + 2*(q+kv) + act) / float64(sh.t)
	passes := 3.0
	if j.Remat != RematNone {
		passes++
	}
	tokens := float64(sh.b) * float64(sh.s) * float64(sh.m)
	bytes := float64(sh.ls) * tokens * perToken * passes
	bytes += tokens * float64(spec.Vocab) / float64(sh.t) * 4 * 4
	return bytes
}

// optimizerBytes is the HBM traffic of the Adam update per chip: it reads
// the weights, gradients and both moments and writes the weights and
// moments back.
//
// Under gradient accumulation (a job's micro-batches without a pipeline)
// each micro-batch's gradient is added to the accumulator as well
// (accumulator): the sum reads both and writes the accumulator, once
// per micro-batch (gradient_accumulation.py's accumulate_gradient).
func (j *Job) optimizerBytes(sh *shape) float64 {
	p := j.Precision
	per := float64(2*(p.Weight+p.Master) + p.Gradient + 2*p.Optimizer)
	if sh.p == 1 && sh.m > 1 {
		per += float64(sh.m * (p.Gradient + 2*p.Weight))
	}
	return j.paramsPerChip(sh) * per
}

// offloadBytes is what moves over PCIe per chip per step: offloaded
// activations out in the forward pass and back in the backward, and
// offloaded parameters and optimizer state in and out once.
func (j *Job) offloadBytes(sh *shape, r remat, mem Memory) float64 {
	x := 2 * float64(sh.ls) * float64(sh.m) * r.offload
	if j.ParameterOffload || j.OptimizerOffload {
		x += 2 * float64(mem.Host)
	}
	return x
}

// mxuFLOPsPerChip is the matmul FLOPs one chip runs in a step, the ones
// Time.MXU is the time of.
func mxuFLOPsPerChip(est *Estimate, sh *shape) float64 {
	j := &est.Job
	r := sh.r
	tokens := float64(j.GlobalBatch) * float64(j.Seq)
	return (6*sh.flops.matmulParams + r.recompute*float64(j.Model.Layers)) * tokens / float64(est.Mesh.Chips())
}

func seconds(s float64) time.Duration { return time.Duration(s * 1e9) }

// computeFloor bounds compute's Time.Compute of j on m in shape sh from
// below, in seconds, up to the rounding of each of its terms to the
// nanosecond: what grows in proportion to the batch (perBatch, at sh's
// sequences per micro-batch) and what does not (fixed). It is compute
// with every GEMM at the MXU's full efficiency (systolic.Preset.Efficiency
// is useful MACs over the arrays' capacity, at most 1, and mxuStats'
// means of it are too) and without the grouped GEMMs' tiles of other
// experts' rows (a fixed cost a micro-batch, which the fewest sequences
// would overstate), the vector work and the optimizer's update as
// compute has them, and nothing offloaded.
func (j *Job) computeFloor(m *mesh.Mesh, sh *shape) (perBatch, fixed float64) {
	chip := &m.Multislice.Slice.Chip
	shards := sh.d * sh.f * sh.e * sh.m
	tokens := float64(sh.b*shards) * float64(j.Seq)
	mxu, attn := j.matmulSeconds(chip, float64(m.Chips()), j.computeFLOPs(sh, tokens).withoutTiles(), 1, 1)
	bw := float64(chip.HBMBandwidth)
	return mxu + attn + j.vectorBytes(sh, sh.r)/bw, j.optimizerBytes(sh) / bw
}
