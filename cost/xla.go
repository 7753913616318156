package cost

import "shardlab/unit"

// What XLA keeps and what it can recompute. A job needs its state, its
// held activations and its largest phase's buffers (Memory.Total): that
// is what fits or does not. XLA's memory report of a program that fits
// as written also holds what XLA keeps while HBM allows and recomputes
// when it does not (Phase.Recomputable); a program whose needed peak
// fits but whose laid-out one does not is squeezed to the limit by XLA's
// rematerialization pass. Memory.Compiled says which report to expect,
// which `shardlab validate --memory` holds to the compilers' reports and
// `shardlab check` to a user's compile log.

// BufferLossExponentials names the loss's fp32 exponentials, the output
// phase's recomputable buffer (lossExponentials).
const BufferLossExponentials = "the loss's fp32 exponentials (exp_shifted)"

// lossExponentials is the bytes of a loss's exponentials for logits of
// row bytes (one micro-batch's, in the compute dtype, over one vocabulary
// tile). MaxText casts the logits to fp32 (base.yml cast_logits_to_fp32:
// true) and its loss, cross_entropy_with_logits, is a custom VJP whose
// forward returns exp_shifted = exp(logits - max) as a residual for the
// backward (utils/max_utils.py _cross_entropy_with_logits_fwd,
// @e591f30c): a [tokens, vocab] fp32 array. That XLA keeps it is an
// inference from its generic fusion pass, not read from the TPU
// compiler, which is not public: the residual has two readers, the
// loss's sum in the forward and its gradient in the backward, and XLA
// does not duplicate an exp into several consumers, while a widening
// convert it always duplicates, so the fp32 logits are read from the
// bf16 ones and not kept (xla/service/instruction_fusion.cc IsExpensive,
// IsAlwaysDuplicable, openxla/xla@001918b7). It is recomputable: its
// inputs, the logits and a per-row maximum, stay live until the backward
// reads them, and XLA's rematerialization pass recomputes such values
// when a program does not fit the HBM it compiles against
// (--xla_tpu_max_hbm_size_mib sets that limit; docs/errors/error_1000.md,
// openxla/xla@49aac430). With vocabulary tiling each tile's loss runs its
// own forward and backward, so a tile's exponentials are what is live.
// An MTP module's loss (layers/multi_token_prediction.py
// _cross_entropy_with_integer_labels, @e591f30c) takes jax's logsumexp,
// whose custom JVP multiplies the tangent by exp(a - out) (jax/_src/ops/
// special.py, jax-ml/jax@0f103d33): a [tokens, vocab] value too, but one
// the forward does not read (it sums its own exp(a - max)), so its one
// reader is the backward's product, into which fusion moves it, and it is
// not kept; the Hunyuan3 reports, which such a buffer would put 25-33 %
// over, agree.
func (j *Job) lossExponentials(row float64) float64 {
	return row / float64(j.Precision.Activation) * 4
}

// Nominal is the peak as XLA lays the step out when HBM allows: Total
// with each phase's recomputable buffers on top of its own, at the phase
// where that is largest, and for a pipeline the larger of its two costed
// stages' (the same program runs on every stage: the one with the
// exponentials may not be the one that needs more; LaidOut). It is what
// XLA's memory report shows for a program that fits as written.
func (m Memory) Nominal() unit.Bytes {
	if m.LaidOut != nil {
		return max(m.LaidOut.ownNominal(), m.ownNominal())
	}
	return m.ownNominal()
}

// ownNominal is Nominal of the stage m is.
func (m Memory) ownNominal() unit.Bytes {
	peak := m.Transient
	for _, p := range m.Phases {
		b := p.Bytes()
		for _, r := range p.Recomputable {
			b += r.Bytes
		}
		peak = max(peak, b)
	}
	return m.Total() - m.Transient + peak
}

// Compiled is what XLA's memory report shows for the step compiled
// against limit bytes of HBM, and whether XLA had to recompute to get
// there (squeezed). Where Nominal fits, Nominal. Where only Total does,
// at most limit: XLA's rematerialization pass recomputes values until
// the program fits the limit and stops there (docs/errors/error_1000.md,
// openxla/xla@49aac430), so the report lands at or just under it. Where
// not even Total fits, Total: XLA runs out of memory having recomputed
// what it could, and reports at least that.
func (m Memory) Compiled(limit unit.Bytes) (report unit.Bytes, squeezed bool) {
	switch n, t := m.Nominal(), m.Total(); {
	case n <= limit:
		return n, false
	case t <= limit:
		return limit, true
	default:
		return t, true
	}
}

// Report is Compiled against the chip's XLACapacity: what train_compile
// should print for the plan, per chip (XLA prints it per JAX device).
func (m Memory) Report() (report unit.Bytes, squeezed bool) {
	return m.Compiled(m.XLACapacity)
}
