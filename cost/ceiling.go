package cost

import (
	"math"
	"time"

	"shardlab/collective"
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
// dispatch rounds its tokens to each expert's capacity. With no remat
// (RematNone) it bounds every policy's Throughput as well. It is the
// least of four ceilings: computeCeiling's, from the compute's floor
// alone; layoutCeiling's, from it and the collectives no batch changes;
// commCeiling's, from commFloor (+Inf where that one cannot say); and
// exposedCeiling's, from the collectives' exposure.
func (bm *BatchMemory) RangeCeiling(lo, hi int, stretch float64) float64 {
	least := min(bm.computeCeiling(lo, hi, stretch), bm.layoutCeiling(lo, hi, stretch))
	c, ok := bm.commCeiling(lo, hi, stretch)
	if !ok {
		return least
	}
	return min(least, c, bm.exposedCeiling(lo, hi, stretch))
}

// RangeCeilingBelow reports whether below holds of RangeCeiling(lo, hi,
// stretch), for a below that holds of every number less than one it
// holds of (as a bar does: x < bar). A search asks only that, of most
// layouts, and the ceilings cost more each than the one before:
// computeCeiling's works out no collective, layoutCeiling's those of a
// layout once (and a sum at each micro-batch count), commCeiling's every
// collective at a batch, and the exposure's more than the one from
// commFloor. Each is weighed only where those before it are
// not below, since such a below holds of the least of several numbers
// exactly where it holds of one of them (no ceiling is NaN: each is
// +Inf, or a throughput at a positive step).
func (bm *BatchMemory) RangeCeilingBelow(lo, hi int, stretch float64, below func(float64) bool) bool {
	if below(bm.computeCeiling(lo, hi, stretch)) || below(bm.layoutCeiling(lo, hi, stretch)) {
		return true
	}
	c, ok := bm.commCeiling(lo, hi, stretch)
	if !ok {
		return false // the compute's ceiling, the least, is not below
	}
	return below(c) || below(bm.exposedCeiling(lo, hi, stretch))
}

// computeCeiling is the first of RangeCeiling's four ceilings, at least
// the same throughputs, from the compute's floor alone, with no
// collective worked out; +Inf where it cannot say, and for a mixture of
// experts (as RangeCeiling) or a negative Contention (where commFloor is
// -Inf: hiding would save more than it takes).
//
// Why: as commCeiling says, Throughput's step at b is at least
// stretch·(floor(b) − 4) − 2 + comm(b) in nanoseconds, for every schedule
// whose Stretch is at least stretch, wherever floor(b) > 4; and comm(b),
// commFloor's, is at least −1 where the Contention is not negative (each
// of its terms is a share not negative of a time, or a time, less a
// nanosecond; one more covers its floating-point rounding, which slack
// covers in commCeiling). So the step is at least stretch·(floor(b) − 4)
// − 4, which is affine in b as floor is (computeFloor), and b over it is
// monotone:
// the largest is at lo or at hi, where it is positive at both ends (then
// floor(lo) > 4, floor growing with b). With no remat the floor is at
// most any policy's (commCeiling), so it bounds every policy's
// throughput too. It is MaxThroughput's ceiling at stretch, but for the
// collectives' nanosecond.
func (bm *BatchMemory) computeCeiling(lo, hi int, stretch float64) float64 {
	f := bm.stepFloor()
	if f.noPeak || bm.est.Job.Model.MoE() || bm.est.Job.calibration().Contention < 0 {
		return math.Inf(1)
	}
	perShard, fixed := bm.computeFloor()
	best := 0.0
	for _, b := range [2]int{lo, hi} {
		floorNs := (perShard*float64(b)/float64(bm.shards) + fixed) * 1e9 * (1 - slack)
		stepNs := stretch*(floorNs-4) - 4
		if !(stepNs > 0) {
			return math.Inf(1)
		}
		best = max(best, float64(b)*float64(bm.est.Job.Seq)/(stepNs/1e9)/f.chips)
	}
	return best * (1 + slack)
}

// commCeiling is the third of RangeCeiling's four ceilings, at least the
// same throughputs, from the collectives' floor; false where it cannot
// say (RangeCeiling is then +Inf), and for a mixture of experts.
//
// Why: Throughput's step at b is at least stretch·(floor(b) − 4) − 2 +
// comm(b) (in nanoseconds; leastStep's step, ThroughputCeiling's, is at
// least that, every term of it at least commFloor's). Neither floor
// nor comm reads the schedule: both take the fewest parameters any
// schedule lays out on a stage (leastParams; MaxText's schedules hold
// more and sum their ends' gradients over the stages besides), the
// compute's floor is the shape's (computeFloor), and the collectives'
// floor counts the pipeline's fill
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
// With no remat, floor and comm are at most any policy's at the same
// batch: the compute's floor adds no recomputed projections and no second
// attention core (shape.r's recompute and attention), and its vector work
// makes three passes where every other policy makes four (vectorBytes);
// its collectives are the others' but for those a recomputed forward
// repeats (commKey's flags: tensor parallel, ring attention), and
// commFloor only grows with each. So every policy's step is at least no
// remat's affine function at each batch, and b over it is at most this
// ceiling.
func (bm *BatchMemory) commCeiling(lo, hi int, stretch float64) (float64, bool) {
	f := bm.stepFloor()
	if f.noPeak || bm.est.Job.Model.MoE() {
		return 0, false
	}
	_, fixed := bm.computeFloor()
	best := 0.0
	for _, b := range [2]int{hi, lo} {
		c, ok := bm.ceilingStep(b)
		stepNs := stretch*(c.floorNs-4) - 2 + c.commNs - 2*c.roundNs
		if !ok || !(c.floorNs > 4) || !(stepNs > 0) {
			return 0, false
		}
		best = max(best, float64(b)*float64(bm.est.Job.Seq)/(stepNs/1e9)/f.chips)
		if lo == hi || stretch*(fixed*1e9*(1-slack)-4)-3-c.roundNs >= 0 {
			break // the affine function's part that does not grow with the batch is not negative: b over it grows
		}
	}
	return best * (1 + slack), true
}

// exposedCeiling is a fourth ceiling RangeCeiling takes the least of, at
// least the same throughputs: with the gathers and reductions exposed as
// leastStep exposes them, each tier's exposure bounded from below by a
// fixed mixture of its pieces, so that the bound on the step stays
// affine in the batch. +Inf where it cannot say.
//
// Why: leastStep's g(C) is at least the step at each batch b for the
// compute C the step has, C at least floor(b) − 4. Each tier's E(x) =
// max of its pieces a_i − w_i·x is at least any mixture of them, weights
// not negative and summing to one; with the ICI exposure at its piece i
// alone and the DCN's at its piece j by μ and its constant piece (total
// cut per layer) by 1 − μ, g(C) is at least σ·C + R, σ = stretch − (1 −
// s)·w_i − μ·w_j, and μ = min(1, (stretch − (1 − s)·w_i)/w_j) keeps σ
// not negative (stretch ≥ 1 > (1 − s)·w_i), so the least over C is σ at
// the floor plus R. Each piece's a is a tally part (total, grad) or the
// total cut per layer, and R weighs each collective's time by at most
// one (the contention share s and the exposure's 1 − s, or μ and 1 − μ,
// together), so as for commFloor it is affine in b but for roundNs
// (which sums each collective's rounding) and the two cuts per layer
// (under a nanosecond each): the step is at least an affine function of b
// less roundNs and 2, at least that at lo and hi less twice roundNs and
// 2, and b over it is largest at one of them: at hi where its part
// that does not grow with the batch is not negative, which it is where
// stretch·(fixed − 4) − 5 − roundNs is (fixed the floor's, in
// nanoseconds): the floor's part is fixed − 4 at slope σ, each piece's
// −w·x at x = C + 1 − fixed adds w·(fixed − 1) ≥ w·(fixed − 4) of the
// rest of stretch, every collective's affine time is not negative at no
// batch (its latency and the bytes that do not grow with the batch), and
// the constants are −3, −2 and −roundNs. Every mixture gives a
// ceiling; exposedCeiling weighs the nine pairs (i, j). With no remat,
// every part is at most any policy's (RangeCeiling) and leastStep's g
// grows with each, so it bounds every policy's throughput too.
func (bm *BatchMemory) exposedCeiling(lo, hi int, stretch float64) float64 {
	f := bm.stepFloor()
	share := min(bm.est.Job.calibration().Contention, 1)
	if f.noPeak || bm.est.Job.Model.MoE() || share < 0 {
		return math.Inf(1)
	}
	_, fixed := bm.computeFloor()
	toPasses := 1 - fixed*1e9 // the passes are at most the compute plus this (leastStep)
	// at each end: the two tiers' exposures, and the rest of the step but
	// the compute
	var ici, dcn [2]exposure
	var rest, floor [2]float64
	ends, n := [2]int{hi, lo}, 2
	for e := 0; e < n; e++ {
		c, ok := bm.ceilingStep(ends[e])
		if !ok || !(c.floorNs > 4) {
			return math.Inf(1)
		}
		if lo == hi || stretch*(fixed*1e9*(1-slack)-4)-5-c.roundNs >= 0 {
			n = 1 // every mixture's part that does not grow with the batch is not negative: b over it grows
		}
		p := &c.parts
		ici[e], dcn[e] = overlapFloor(p.gradICI, p.gatherICI, bm.sh.ls, bm.sh.m), overlapFloor(p.gradDCN, p.gatherDCN, bm.sh.ls, bm.sh.m)
		rest[e] = share*float64(p.gradICI+p.gatherICI+p.tpAll) + float64(p.pathICI+p.pathDCN) - 3 - 2*c.roundNs - 2
		floor[e] = c.floorNs - 4
	}
	best := math.Inf(1)
	for i := range 3 {
		for j := range 3 {
			// the weights are the same at both ends: the pieces' slopes
			// are the shape's
			slope, mu := stretch-(1-share)*ici[0][i].w, 1.0
			if w := dcn[0][j].w; w > 0 {
				mu = min(1, slope/w)
			}
			slope -= mu * dcn[0][j].w
			most := 0.0
			for e := range n {
				x, y := &ici[e], &dcn[e]
				exposed := (1-share)*(x[i].a-x[i].w*toPasses) + mu*(y[j].a-y[j].w*toPasses) + (1-mu)*y[2].a
				stepNs := slope*floor[e] + exposed + rest[e]
				if !(stepNs > 0) {
					most = math.Inf(1)
					break
				}
				most = max(most, float64(ends[e])*float64(bm.est.Job.Seq)/(stepNs/1e9)/f.chips)
			}
			best = min(best, most)
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

// leastStep is at most the step, in nanoseconds, of the estimator's
// Throughput at the batch whose ceiling terms are c, under a schedule of
// the given Stretch: the least the step can be over every compute time
// at least MaxThroughput's floor, the collectives' exposure worked out
// as communicate works it out at that compute. It is -Inf where the
// calibration's Contention is negative.
//
// Why: Throughput's step is C + bubble + sync + ICI + DCN, with C the
// compute (Time.Compute), at least floorNs − 4 (MaxThroughput), and the
// bubble and sync each C times a factor cut to the nanosecond, so
// together at least (stretch − 1)·C − 2. The passes P (Time.Passes) are C
// less the optimizer's update, which is computeFloor's fixed part cut to
// the nanosecond (the same product), and less the offload, none
// negative: P ≤ C − fixed + 1 ns. On each tier, overlap.exposed(grad,
// gather) is the largest of total − window, grad − bwdWindow and
// total/ls cut to the nanosecond (none exceeds total, so its min with
// total changes nothing), and the windows are P's fixed shares cut
// toward zero, at most P's shares times (1 + slack): so the exposed time
// is at least E(P) = max(total − w·P, grad − bw·P, total/ls), each
// piece's slope as newOverlap's shares, and E falls as P grows, so it is
// at least E(C − fixed + 1). On ICI communicate adds the contention, the
// share s of what hides, hidden·s cut to the nanosecond with hidden not
// negative (exposed ≤ total; tensor-parallel time hidden ≥ tpAll − its
// exposed time tp), and the tensor-parallel exposed time: ICI ≥ exposed
// + s·(total − exposed + tpAll − tp) + tp + path − 1 ≥ (1 − s)·exposed +
// s·(total + tpAll) + path − 1 for s = min(Contention, 1) in [0, 1];
// DCN is its exposed time plus its path. So the step is at least g(C) =
// stretch·C − 3 + (1 − s)·E_ICI(C − fixed + 1) + E_DCN(C − fixed + 1) +
// s·(total_ICI + tpAll) + path_ICI + path_DCN, for the compute C it has.
// g is convex and piecewise affine in C (a sum of maxima of affine
// functions with factors not negative) and grows without end (stretch ≥
// 1, and each E is constant for large C), so its least over C at least
// the floor is at the floor or at a C where two pieces of one E meet,
// all of which leastStep weighs. Every term is at least commFloor's
// (E_DCN ≥ total_DCN/ls, E_ICI ≥ 0), so the step is no less than
// ThroughputCeiling's was with commFloor alone.
func (bm *BatchMemory) leastStep(c *ceilingTerms, stretch float64) float64 {
	share := min(bm.est.Job.calibration().Contention, 1)
	if share < 0 {
		return math.Inf(-1) // hiding would save more than it takes
	}
	_, fixed := bm.computeFloor()
	sh, p := &bm.sh, &c.parts
	ici, dcn := overlapFloor(p.gradICI, p.gatherICI, sh.ls, sh.m), overlapFloor(p.gradDCN, p.gatherDCN, sh.ls, sh.m)
	path := share*float64(p.gradICI+p.gatherICI+p.tpAll) + float64(p.pathICI+p.pathDCN) - 3
	toPasses := 1 - fixed*1e9 // P ≤ C + toPasses
	g := func(compute float64) float64 {
		x := compute + toPasses
		return stretch*compute + (1-share)*ici.at(x) + dcn.at(x) + path
	}
	lo := c.floorNs - 4
	least := g(lo)
	for _, e := range [2]*exposure{&ici, &dcn} {
		for i := range e {
			for k := i + 1; k < len(e); k++ {
				if dw := e[i].w - e[k].w; dw != 0 {
					if at := (e[i].a-e[k].a)/dw - toPasses; at > lo {
						least = min(least, g(at))
					}
				}
			}
		}
	}
	return least
}

// exposure is overlap.exposed(grad, gather) from below as a function of
// the passes' time x in nanoseconds: the largest of its pieces a − w·x.
type exposure [3]struct{ a, w float64 }

// overlapFloor is the exposure of a tier's gradient reductions grad and
// gathers gather in a shape of ls layers per stage and m micro-batches:
// total − window, grad − bwdWindow (newOverlap's shares of the passes,
// raised by slack for their rounding) and total/ls as exposed cuts it.
func overlapFloor(grad, gather time.Duration, ls, m int) exposure {
	total, l := grad+gather, float64(ls)
	w := (l - 1) / l * (1 + slack)
	bw := 2.0 / 3 / float64(m) * (l - 1) / l * (1 + slack)
	return exposure{{float64(total), w}, {float64(grad), bw}, {float64(time.Duration(float64(total) / l)), 0}}
}

// at is the exposure at passes of x nanoseconds.
func (e *exposure) at(x float64) float64 {
	return max(e[0].a-e[0].w*x, e[1].a-e[1].w*x, e[2].a-e[2].w*x)
}

// BoundCeiling is at least the estimator's Throughput of b, a Bound of
// the job at its batch (BatchMemory.Bound): its step's compute, bubble
// and sync as b has them, and its collectives (collectivesFloor's,
// remembered from the ceilings at the batch) exposed under b's passes as
// communicate exposes them, but for the tensor-parallel collectives'
// exposed part, of which it counts only the contention share. +Inf where
// it cannot say, and for a mixture of experts (whose collectives are not
// remembered).
//
// Why: communicate's DCN time is overlap.exposed of the DCN gathers and
// reductions under the passes, plus the fill and drain and what runs
// after the loop, all of which BoundCeiling works out as it does. Its ICI
// time is the exposed gathers and reductions x, the contention (hidden·s
// cut to the nanosecond, hidden = total − x + max(tpAll − tp, 0), s the
// Contention), the tensor-parallel exposed time tp and the rest as on
// DCN; with s' = min(s, 1) and hidden not negative it is at least x +
// s'·(total − x + tpAll − tp) + tp − 1 + rest ≥ x + s'·(total − x +
// tpAll) − 1 + rest, tp being between 0 and tpAll.
func (bm *BatchMemory) BoundCeiling(b *Bound) float64 {
	share := min(bm.est.Job.calibration().Contention, 1)
	if bm.est.Job.Model.MoE() || share < 0 {
		return math.Inf(1)
	}
	f, ok := bm.collectivesFloor(b.est.Job.GlobalBatch)
	if !ok {
		return math.Inf(1)
	}
	p, t := &f.parts, &b.est.Time
	o := newOverlap(t.Passes(), b.sh.ls, b.sh.m)
	ici := o.exposed(p.gradICI, p.gatherICI)
	stepNs := float64(t.Compute+t.Bubble+t.Sync+ici+p.pathICI+o.exposed(p.gradDCN, p.gatherDCN)+p.pathDCN) +
		share*float64(p.gradICI+p.gatherICI-ici+p.tpAll) - 1
	if !(stepNs > 0) {
		return math.Inf(1)
	}
	return float64(b.est.Job.GlobalBatch) * float64(b.est.Job.Seq) / (stepNs / 1e9) / float64(b.est.Mesh.Chips()) * (1 + slack)
}

// layoutCeiling is a ceiling RangeCeiling takes the least of, at least
// the same throughputs: computeCeiling's, with the collectives that read
// neither the batch nor the remat policy (layoutComm) in place of
// commCeiling's every collective. +Inf where it cannot say, and for a
// mixture of experts.
//
// Why: as commCeiling says, Throughput's step at b is at least
// stretch·(floor(b) − 4) − 2 + comm(b) in nanoseconds, for every
// schedule whose Stretch is at least stretch and, with no remat, every
// policy, wherever floor(b) > 4; comm(b) is commParts.floor of the
// step's collectives (collectivesFloor). Those include the data-parallel
// all-reduce and FSDP's gathers and reduce-scatters, which tally adds to
// its parts whole (integer nanoseconds), the gathers 2·m times and the
// reduce-scatters m times for m micro-batches, and what it adds besides
// is not negative (collective.Time); commParts.floor grows with each part
// (each term is a part's seconds times a share not negative, a part's
// seconds, or a sum of parts over the layers cut to the nanosecond, and
// each step of that grows with its argument in floating point too), so
// comm(b) is at least L, floor of those alone, which no batch changes.
// The step is then at least stretch·(floor(b) − 4) − 2 + L, affine in b,
// and b over it is monotone: the largest is at lo or at hi where it is
// positive at both ends (and so between them). floorNs is at most
// floor(b) as in computeCeiling, and taking a nanosecond and L's slack
// share off L covers its conversion to nanoseconds.
func (bm *BatchMemory) layoutCeiling(lo, hi int, stretch float64) float64 {
	f := bm.stepFloor()
	if f.noPeak || bm.est.Job.Model.MoE() {
		return math.Inf(1)
	}
	l := bm.layoutFloor() * 1e9
	l -= math.Abs(l)*slack + 1
	perShard, fixed := bm.computeFloor()
	best := 0.0
	for _, b := range [2]int{lo, hi} {
		floorNs := (perShard*float64(b)/float64(bm.shards) + fixed) * 1e9 * (1 - slack)
		stepNs := stretch*(floorNs-4) - 2 + l
		if !(floorNs > 4) || !(stepNs > 0) {
			return math.Inf(1)
		}
		best = max(best, float64(b)*float64(bm.est.Job.Seq)/(stepNs/1e9)/f.chips)
	}
	return best * (1 + slack)
}

// layoutComm is what of a dense layout's collectives reads neither the
// batch, the micro-batches, the schedule nor the remat policy: the
// data-parallel all-reduce and FSDP's gather and reduce-scatter of one
// micro-batch (tally.dataParallelCost, tally.fsdpCosts), with
// leastParams' parameters as collectivesFloor has them. They read the
// layout, its shape's degrees and layers per stage, and the job's
// precision and DCN latency, none of which Reschedule or SetPolicy
// changes.
type layoutComm struct {
	ok         bool
	dp, ag, rs collective.Cost
}

// layoutFloor is commParts.floor, in seconds, of the job's layoutComm
// alone at its micro-batches, as tally adds them up: at most
// collectivesFloor's comm at every batch (layoutCeiling).
func (bm *BatchMemory) layoutFloor() float64 {
	c := &bm.lc
	if !c.ok {
		least := bm.sh
		bm.leastParams(&least)
		t := newTally(&bm.est, &least)
		grads, gathered, headGrads, headGathered := bm.est.Job.gradBytes(&least)
		c.dp, _ = t.dataParallelCost(grads)
		c.ag, c.rs, _ = t.fsdpCosts(grads-headGrads, gathered-headGathered)
		c.ok = true
	}
	m := bm.sh.m
	ag, rs := c.ag.Scale(2*m), c.rs.Scale(m)
	p := commParts{gradICI: c.dp.ICITime + rs.ICITime, gradDCN: c.dp.DCNTime + rs.DCNTime, gatherICI: ag.ICITime, gatherDCN: ag.DCNTime}
	return p.floor(bm.est.Job.calibration().Contention, bm.sh.ls)
}
