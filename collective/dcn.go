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
// tokensPerSlice tokens per slice: 4·B / bits-per-parameter.
func DCNIntensity(tokensPerSlice float64, slices int) float64 {
	bits := MultisliceBitsPerParam(slices)
	if bits == 0 {
		return 0
	}
	return 4 * tokensPerSlice / float64(bits)
}

// MinTokensPerSlice is the smallest batch per slice, in tokens, at which the
// backward pass hides the DCN gradient all-reduce: the B that makes
// DCNIntensity equal to peak FLOP/s over DCN bits/s per chip.
func MinTokensPerSlice(peak unit.FLOPsPerSecond, dcnPerChip unit.BytesPerSecond, slices int) float64 {
	bits := MultisliceBitsPerParam(slices)
	if bits == 0 || dcnPerChip <= 0 {
		return 0
	}
	return float64(bits) / 4 * float64(peak) / dcnPerChip.Bits()
}

// PracticalHeadroom is the factor the Multislice guidance applies on top of
// MinTokensPerSlice for real jobs.
const PracticalHeadroom = 2
