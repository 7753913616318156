package inference

import (
	"fmt"

	"shardlab/collective"
	"shardlab/unit"
)

// The collectives between the JAX devices of one chip. A TPU7x chip is two
// chiplets, each a TensorCore with its own HBM and its own JAX device
// (hw/xla_hbm.csv: 94.74 GiB a device); their exchanges cross the chip's
// die-to-die (D2D) link, a transfer of its own (tpu-inference's
// hierarchical reduce-scatter copies each micro-batch "from local HBM over
// to the partner chiplet" before the chip-to-chip ICI phase:
// kernels/collectives/hierrs_sc/kernel.py @b8692ff0). Google describes
// that link only relative to ICI, as six times faster than a 1D ICI link
// (cloud.google.com/tpu/docs/tpu7x, "Dual-chiplet architecture", as
// transcribed by public copies; the stored copy of the page cuts off
// before it), and publishes no latency for it. Package hw holds no rate
// for it, and the training cost model does not cost it either (plan
// folds the in-chip factor into fsdp or context, and cost costs chips).
// So the serving cost here prices a TP group's collectives over the ICI
// ring of its chips only (replicaCost.allReduce), and the in-chip part is
// assumed free: inChipWarning says so on every plan whose replicas span
// the devices of a chip.

// inChipDevices is how many devices of one chip take part in each of a
// tp-way replica's collectives: min(tp, devices a chip), 1 where a chip
// is one device or the replica one device.
func inChipDevices(r Request, tp int) int {
	return min(tp, max(r.Slice.Chip.JAXDevicesPerChip, 1))
}

// inChipWarning says that the in-chip part of b's collectives is not
// costed, what it carries (per device, from collective.Bytes, for a
// decode step of the sequences b runs at once, Running, and for a prompt
// chunk of the token budget), and, when the plan ranks b above a layout
// whose replicas need no in-chip collective, that the ranking rests on
// it. "" when b's collectives have no in-chip part.
func inChipWarning(r Request, p Plan) string {
	b := p.Best
	n := inChipDevices(r, b.TP)
	if n <= 1 {
		return ""
	}
	m := r.Model
	ops := passCollectives(m, r.AttentionDP())
	// what a device moves in a pass of tokens tokens, and how many
	// collectives a pass runs
	step := func(tokens int) unit.Bytes {
		var b unit.Bytes
		for _, c := range ops {
			b += unit.Bytes(c.n) * collective.Bytes(c.op, n, unit.Bytes(tokens*m.DModel*2))
		}
		return b
	}
	count := 0
	for _, c := range ops {
		count += c.n
	}
	what := "all-reduces"
	if r.AttentionDP() {
		what = "all-gathers and reduce-scatters"
	}
	return inChipText(r, p, n, what, count, step(b.Running()), step(r.MaxNumBatchedTokens)) // the decode step the ITL costs
}

// inChipText phrases inChipWarning: the n devices of a chip in each of
// count collectives a step, moving decode and prefill bytes a device over
// the die-to-die link in a decode step and a prompt chunk.
func inChipText(r Request, p Plan, n int, what string, count int, decode, prefill unit.Bytes) string {
	b := p.Best
	s := fmt.Sprintf("in-chip collectives assumed free: at TP %d each of a step's %d %s also runs between the %d devices of a %s chip (its TensorCores, each with its own HBM) over the chip's die-to-die link, which Google rates only as six times faster than a 1D ICI link, with no latency (cloud.google.com/tpu/docs/tpu7x), and for which shardlab's hardware catalog holds no rate; this plan's TTFT and ITL leave out its %v a device in a decode step of %d sequences, %v in a prompt chunk of %d tokens, and its %d latencies a step",
		b.TP, count, what, n, r.Slice.Chip.Generation, decode, b.Running(), prefill, r.MaxNumBatchedTokens, count)
	for _, l := range p.Layouts {
		if l.Fits && inChipDevices(r, l.TP) == 1 {
			bt, bi := r.Seen(b)
			lt, li := r.Seen(l)
			s += fmt.Sprintf("; TP %d ranks above TP %d, whose replicas need none (ITL %v against %v, TTFT %v against %v), without them", b.TP, l.TP, secs(bi), secs(li), secs(bt), secs(lt))
			break
		}
	}
	return s
}
