package collective

import "shardlab/unit"

// The Cloud TPU Multislice performance guidance
// (https://cloud.google.com/tpu/docs/multislice-introduction and its
// performance notes) sizes data parallelism across slices like this:
//
//   - the gradient all-reduce moves 32 bits of DCN traffic per parameter per
//     step when there are two slices and 64 bits when there are more (fp32
//     gradients; a ring all-reduce sends 2(n−1)/n of the buffer, 1× at n = 2
//     and approaching 2× for many slices);
//   - the backward pass does 4·B FLOPs per parameter (B tokens per slice),
//     so the operational intensity over DCN is 4·B/32 FLOPs per bit (two
//     slices) and 4·B/64 (many);
//   - a step is compute-bound (strong scaling holds) when the backward time
//     is at least the DCN all-reduce time, i.e. when that intensity reaches
//     the chip's FLOP/s over its share of the host's DCN bandwidth in
//     bits/s. For 275 TFLOP/s chips with 12.5 Gbit/s of DCN each this is
//     176k tokens per slice (pod) for two slices and 352k for more, and the
//     doc recommends about twice that in practice (350k and 700k).
//
// The guidance's models are dense: every parameter a gradient is reduced
// for is one each token runs. A mixture of experts' token runs only the
// active parameters (its top-k experts, the shared ones, attention and
// the rest), so its backward pass does 4·B·N_active FLOPs, while the
// all-reduce still carries the gradient of all N_total parameters (every
// expert's weights are replicated across the slices): the intensity is
// 4·B·(N_active/N_total)/64 and the break-even batch N_total/N_active
// times the dense one.

// GradientBits is the width of the gradients the DCN all-reduce carries in
// that guidance (fp32).
const GradientBits = 32

// MultisliceBitsPerParam is the DCN traffic per parameter per step that the
// Multislice guidance assigns to data parallelism across slices: 32 bits for
// two slices, 64 for more, 0 for one.
func MultisliceBitsPerParam(slices int) int {
	switch {
	case slices <= 1:
		return 0
	case slices == 2:
		return GradientBits
	default:
		return 2 * GradientBits
	}
}

// DCNIntensity is the backward pass's FLOPs per bit of DCN traffic for
// tokensPerSlice tokens per slice of a model with total parameters, of
// which a token runs active: 4·B·(active/total) / bits-per-parameter. The
// backward pass does 4 FLOPs per parameter a token runs, while the
// all-reduce carries the gradient of every parameter; for a dense model
// active = total and this is the guidance's 4·B/32 or 4·B/64, for a
// mixture of experts (whose tokens run top-k of the experts) it is that
// times active/total.
func DCNIntensity(tokensPerSlice float64, slices int, active, total int64) float64 {
	bits := MultisliceBitsPerParam(slices)
	if bits == 0 || total <= 0 {
		return 0
	}
	return 4 * tokensPerSlice * float64(active) / float64(total) / float64(bits)
}

// MinTokensPerSlice is the smallest batch per slice, in tokens, at which the
// backward pass hides the DCN gradient all-reduce: the B that makes
// DCNIntensity equal to peak FLOP/s over DCN bits/s per chip, the
// guidance's bits/4 · peak/DCN for a dense model, total/active times that
// for a mixture of experts. It is 0 for one slice, no DCN, or no active
// parameters.
func MinTokensPerSlice(peak unit.FLOPsPerSecond, dcnPerChip unit.BytesPerSecond, slices int, active, total int64) float64 {
	bits := MultisliceBitsPerParam(slices)
	if bits == 0 || dcnPerChip <= 0 || active <= 0 {
		return 0
	}
	return float64(bits) / 4 * float64(peak) / dcnPerChip.Bits() * float64(total) / float64(active)
}

// PracticalHeadroom is the factor the Multislice guidance applies on top of
// MinTokensPerSlice for real jobs.
const PracticalHeadroom = 2
