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
	"strings"

	"shardlab/model"
	"shardlab/schedule"
)

// Remat is a rematerialisation (activation checkpointing) policy.
type Remat string

// The policies.
const (
	// RematNone stores every activation the backward pass needs.
	RematNone Remat = "none"
	// RematSelective stores everything except the attention scores and
	// recomputes the attention core (Korthikanti et al. 2022, §4).
	RematSelective Remat = "selective"
	// RematFull stores only each layer's input and recomputes the layer's
	// forward pass during backward.
	RematFull Remat = "full"
)

// Remats lists the policies, least recompute first.
func Remats() []Remat { return []Remat{RematNone, RematSelective, RematFull} }

// ParseRemat reads a policy name.
func ParseRemat(s string) (Remat, error) {
	for _, r := range Remats() {
		if strings.EqualFold(strings.TrimSpace(s), string(r)) {
			return r, nil
		}
	}
	return "", fmt.Errorf("cost: remat policy %q, want none, selective or full", s)
}

// Precision gives the bytes per parameter of each piece of model state and
// per element of activations.
type Precision struct {
	Weight     int `json:"weight"`     // stored weights
	Master     int `json:"master"`     // extra master copy (0 when weights are already fp32)
	Gradient   int `json:"gradient"`   // gradients, and what the gradient collectives carry
	Optimizer  int `json:"optimizer"`  // optimizer state (Adam: two moments)
	Activation int `json:"activation"` // activations and what tensor/pipeline collectives carry
}

// MaxTextPrecision is MaxText's default: fp32 weights (weight_dtype) and
// gradients, fp32 Adam moments, bf16 activations — 16 bytes of state per
// parameter, and the fp32 gradients the Multislice guidance's 32 bits per
// parameter assume.
func MaxTextPrecision() Precision {
	return Precision{Weight: 4, Gradient: 4, Optimizer: 8, Activation: 2}
}

// ZeROPrecision is the ZeRO paper's mixed-precision Adam (Rajbhandari et
// al. 2019, §3.1): bf16 weights and gradients, fp32 master weights and
// moments — 2Ψ + 2Ψ + 12Ψ = 16Ψ bytes.
func ZeROPrecision() Precision {
	return Precision{Weight: 2, Master: 4, Gradient: 2, Optimizer: 8, Activation: 2}
}

// StateBytes is the bytes of model state per parameter.
func (p Precision) StateBytes() int { return p.Weight + p.Master + p.Gradient + p.Optimizer }

// Job is what is trained and how, independent of the layout.
type Job struct {
	Model model.Spec
	// Seq is the sequence length in tokens; GlobalBatch is sequences per
	// step.
	Seq         int
	GlobalBatch int
	// MicroBatches is the number of pipeline micro-batches per step (1
	// without pipeline parallelism).
	MicroBatches int
	Schedule     schedule.Kind
	Remat        Remat
	Precision    Precision
	// Efficiency is the fraction of the MXU-limited rate the chip reaches
	// (overheads outside the systolic array).
	Efficiency float64
	// HBMHeadroom is the fraction of HBM kept free for the compiler's
	// buffers and fragmentation.
	HBMHeadroom float64
	// CausalFLOPs halves the attention FLOPs in MFU (MaxText's convention
	// since its PR 2031); off, the PaLM convention.
	CausalFLOPs bool
	// Dropout stores dropout masks (GPT-3-era training); modern LLM
	// pre-training runs without dropout.
	Dropout bool
}

// DefaultEfficiency is the fraction of the MXU-limited rate the chip
// reaches once the systolic model has charged padding, fill and drain: the
// rest (vector and transpose work, HBM-bound ops, scheduling gaps) is not
// modelled op by op. MaxText's published large-model runs on TPU reach
// MFUs in the 50–65 % range; 0.7 of the MXU-limited rate lands there for
// large shapes.
const DefaultEfficiency = 0.7

// DefaultHBMHeadroom keeps 10 % of HBM free: near the limit XLA
// rematerialises on its own and step time jumps
// (marin-community/marin issue 8054: 18.07 s vs 16.43 s).
const DefaultHBMHeadroom = 0.10

// NewJob returns a job with MaxText precision, 1F1B, full remat and the
// default efficiency and headroom.
func NewJob(m model.Spec, seq, globalBatch int) Job {
	return Job{
		Model: m, Seq: seq, GlobalBatch: globalBatch, MicroBatches: 1,
		Schedule: schedule.OneFOneB, Remat: RematFull, Precision: MaxTextPrecision(),
		Efficiency: DefaultEfficiency, HBMHeadroom: DefaultHBMHeadroom,
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
	ReasonBatchLimit  Reason = "needs a global batch above --max-global-batch"
	ReasonTensorDCN   Reason = "tensor parallelism over DCN"
	ReasonInvalidMesh Reason = "axes do not multiply to the chips"
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

func (j Job) validate() error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("cost: %s = %v, want %s: %w", field, v, want, ErrJob)
	}
	switch {
	case j.Seq <= 0:
		return bad("seq", j.Seq, "a positive number of tokens")
	case j.GlobalBatch <= 0:
		return bad("global batch", j.GlobalBatch, "a positive number of sequences")
	case j.MicroBatches <= 0:
		return bad("micro-batches", j.MicroBatches, "at least 1")
	case j.Efficiency <= 0 || j.Efficiency > 1:
		return bad("efficiency", j.Efficiency, "a fraction in (0, 1]")
	case j.HBMHeadroom < 0 || j.HBMHeadroom >= 1:
		return bad("HBM headroom", j.HBMHeadroom, "a fraction in [0, 1)")
	case j.Precision.Weight <= 0 || j.Precision.Gradient <= 0 || j.Precision.Activation <= 0 || j.Precision.Optimizer < 0 || j.Precision.Master < 0:
		return bad("precision", j.Precision, "positive weight, gradient and activation bytes")
	}
	if _, err := ParseRemat(string(j.Remat)); err != nil {
		return bad("remat", j.Remat, "none, selective or full")
	}
	if _, err := schedule.ParseKind(string(j.Schedule)); err != nil {
		return bad("schedule", j.Schedule, "gpipe or 1f1b")
	}
	return j.Model.Validate()
}
