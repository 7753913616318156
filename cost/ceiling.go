package cost

import (
	"math"

	"shardlab/schedule"
)

// A search may skip a whole layout when no way of running it could be
// kept: RangeCeiling bounds from above the throughput of every
// combination of a layout's schedules and batches for one micro-batch
// count and remat policy, from one BatchMemory, without the memory of
// any.

// Stretch is by how much the pipeline bubble and the slice sync stretch
// the job's compute on its layout under schedule k with v chunks per
// stage (its stages and micro-batches): the factor MaxThroughput's step
// applies to the compute's floor.
func (bm *BatchMemory) Stretch(k schedule.Kind, v int) float64 {
	j, m, sh := &bm.est.Job, &bm.est.Mesh, &bm.sh
	pp := bm.e.pipe(k, sh.p, sh.m, v)
	return 1 + pp.bubble/(1-pp.bubble) + j.calibration().SliceJitter*bm.e.maxNormal(m.Multislice.Slices)
}

// RangeCeiling is at least the Throughput of the job's Bound at every
// batch from lo to hi sequences per step (multiples of the layout's
// shards) under every schedule whose Stretch is at least stretch (the
// same micro-batches and remat policy): at least its ThroughputCeiling
// there. +Inf where it cannot say, and for a mixture of experts, whose
// dispatch rounds its tokens to each expert's capacity.
//
// Why: ThroughputCeiling(b) is b tokens over the step
// stretch·(floor(b) − 4) − 2 + comm(b) (in nanoseconds). Neither floor
// nor comm reads the schedule: the compute's floor is the shape's
// (computeFloor), and the collectives' floor counts the pipeline's fill
// and drain sends, which do not depend on its chunks (tally.pipeline); so
// the least stretch bounds every schedule's step from below wherever
// floor(b) > 4. floor is affine in b by construction, and comm(b) is
// affine in b but for rounding: every collective's bytes are in
// proportion to the micro-batch (activations, K/V blocks, stage sends)
// or do not depend on it (gradients, weights), its count does not
// depend on it (the remat policy's recompute and attention flags are the
// policy's), and its time is affine in its bytes (collective.Time) until
// it is cut to the nanosecond, which moves comm by less than roundNs. So
// the step is at least an affine function of b less roundNs, and b over
// it is monotone in b: its largest is at lo or at hi, where the affine
// function is at least the step there less twice roundNs. It is at hi
// alone where that function's part that does not grow with the batch,
// at least stretch·(fixed − 4) − 2 for the compute (computeFloor's fixed
// part: the optimizer's update) and −1 for the collectives (every
// collective's time is its bytes' plus its hops' latency, none negative,
// and commFloor takes off a nanosecond), less roundNs, is not negative.
func (bm *BatchMemory) RangeCeiling(lo, hi int, stretch float64) float64 {
	f := bm.stepFloor()
	if f.noPeak || bm.est.Job.Model.MoE() {
		return math.Inf(1)
	}
	_, fixed := bm.computeFloor()
	best := 0.0
	for _, b := range [2]int{hi, lo} {
		c, ok := bm.ceilingStep(b)
		stepNs := stretch*(c.floorNs-4) - 2 + c.commNs - 2*c.roundNs
		if !ok || !(c.floorNs > 4) || !(stepNs > 0) {
			return math.Inf(1)
		}
		best = max(best, float64(b)*float64(bm.est.Job.Seq)/(stepNs/1e9)/f.chips)
		if lo == hi || stretch*(fixed*1e9*(1-slack)-4)-3-c.roundNs >= 0 {
			break // the affine function's part that does not grow with the batch is not negative: b over it grows
		}
	}
	return best * (1 + slack)
}

// roundingNs bounds how far rounding moves commFloor of comms (a step's
// collectives in shape sh) from an affine function of the batch, in
// nanoseconds: each time is cut to the nanosecond once per ring step of a
// hierarchical collective (at most three: collective.Hierarchical), per
// layer where it is issued a layer at a time (tally.perLayer), per count,
// and its bytes are cut to whole bytes a few times on the way (a shard, a
// layer's part, a ring step's), each under a nanosecond on any link of a
// byte a nanosecond or more: eight nanoseconds a ring step covers both;
// the pipeline's fill and drain add two sends per stage boundary on each
// tier, and commFloor's DCN share of a layer is cut once more.
func roundingNs(comms []Comm, sh *shape) float64 {
	n := 16*float64(sh.p) + 8
	for _, c := range comms {
		n += 8 * 3 * float64(c.Count) * float64(max(sh.ls, 1))
	}
	return n
}
