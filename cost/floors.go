package cost

import "math"

// The floors a layout's ceilings are made of (ceiling.go), at a batch:
// the compute's and the collectives', and what a BatchMemory remembers
// of them for its layout while a search weighs its schedules, micro-batch
// counts and policies in turn.

// ceilingTerms is what the ceilings' step at a batch is made of, in
// nanoseconds: MaxThroughput's compute floor, before the bubble and the
// slice sync stretch it, and the collectives' floor (commFloor); the
// most that rounding each collective's time to the nanosecond can have
// moved the collectives' floor (roundNs, RangeCeiling); and the
// collectives' parts, which ThroughputCeiling exposes (leastStep).
type ceilingTerms struct {
	floorNs, commNs, roundNs float64
	parts                    commParts
}

// ceilingStep is the ceilingTerms at globalBatch; false where the batch
// does not split over the layout or the collectives' floor says nothing.
func (bm *BatchMemory) ceilingStep(globalBatch int) (ceilingTerms, bool) {
	f, ok := bm.collectivesFloor(globalBatch)
	if !ok {
		return ceilingTerms{}, false
	}
	perShard, fixed := bm.computeFloor()
	c := ceilingTerms{floorNs: (perShard*float64(globalBatch)/float64(bm.shards) + fixed) * 1e9 * (1 - slack), roundNs: f.round, parts: f.parts}
	comm := f.comm
	c.commNs = comm * 1e9
	c.commNs -= math.Abs(c.commNs) * slack
	return c, !math.IsInf(comm, 0)
}

// collectivesFloor is commFloor of the job's collectives at globalBatch,
// in its shape (shapeAt's), roundingNs of them and their commParts; false where the
// batch does not split over the layout. On a dense model it is
// remembered (commMemo) by the batch, the micro-batches and what of the
// remat policy and the expert dispatch the collectives read (commKey),
// so that the policies and schedules a search weighs a layout's batches
// with in turn share it: Reset forgets it, Reschedule does not. The
// policy's flags are the same at every batch (Job.rematIn reads them
// from the layer), so they are read from the shape at one sequence per
// shard, and a batch remembered is not shaped again; nor is one worked
// out: a dense model's collectives read of the shape at the batch its
// degrees, layers, micro-batches, sequences per micro-batch and those
// flags, not the footprint setBatch works out at the batch (the rest of
// shape.r), so they take the shape at one sequence per shard with its
// sequences per micro-batch set. No schedule
// reaches the answer: the collectives are worked out with leastParams'
// parameters (no schedule's ends), and of the schedule's chunks only the
// stage sends' bytes and time read them (tally.pipeline), which none of
// commParts, commFloor and roundingNs (which counts each collective's
// Count, 1 for the sends) reads; their fill and drain do not.
// TestRescheduleIsReset holds the remembered answers to fresh ones.
func (bm *BatchMemory) collectivesFloor(globalBatch int) (commFloors, bool) {
	j := &bm.est.Job
	k := commKey{batch: globalBatch, micro: j.MicroBatches, recompute: bm.sh.r.recompute > 0, attention: bm.sh.r.attention, ring: j.RingOfExperts}
	memo := !j.Model.MoE() && globalBatch > 0 && globalBatch%bm.shards == 0
	if memo {
		if f, ok := bm.comm.get(k); ok {
			return f, true
		}
	}
	var least shape
	if memo {
		// the footprint at the batch (setBatch) is memory's, not the
		// collectives'
		least = bm.sh
		least.b = globalBatch / bm.shards
	} else {
		sh, err := bm.shapeAt(globalBatch)
		if err != nil {
			return commFloors{}, false
		}
		least = *sh
	}
	e, est := bm.e, &bm.est
	bm.leastParams(&least)
	est.Job.GlobalBatch, est.MicroBatchSize, est.Comms = globalBatch, least.b, e.comms[:0]
	f := commFloors{parts: e.commParts(est, &least)}
	f.comm = f.parts.floor(j.calibration().Contention, least.ls)
	f.round = roundingNs(est.Comms, &least)
	e.comms = est.Comms
	est.Job.GlobalBatch, est.MicroBatchSize, est.Comms = bm.shards, 0, nil
	if memo {
		bm.comm.put(k, f)
	}
	return f, true
}

// commKey is what, besides the layout and the job Reset set, a dense
// model's collectives read (Estimator.collectives with its tally, at
// the batch's shape): the global batch, whether the remat policy
// recomputes anything (the tensor-parallel collectives run again in the
// forward it recomputes: tensorParallel, parallelTensor) and whether it
// recomputes the attention core (tensorParallel; ring attention's K/V
// gradients: tally.context), and the expert dispatch. Nothing else of
// the policy reaches them: its layer's footprint (shape.layerShape, the
// rest of shape.r) is memory's. With the micro-batches, which set the
// shape's sequences per micro-batch at the batch and how often the
// layers' collectives run, it is also all a schedule changes that they
// read (collectivesFloor). A mixture of experts' dispatch reads more of
// the shape, and is not remembered.
type commKey struct {
	batch, micro               int
	recompute, attention, ring bool
}

// commFloors is collectivesFloor's answer.
type commFloors struct {
	comm, round float64
	parts       commParts
}

// commMemo holds the last few collectivesFloor answers by key: a
// RangeCeiling asks at two batches per policy, and a search asks again
// under each schedule, at the batch it finds, for each micro-batch
// count.
type commMemo struct {
	k       [16]commKey
	f       [16]commFloors
	n, next int
}

func (c *commMemo) get(k commKey) (commFloors, bool) {
	for i := range c.n {
		if c.k[i] == k {
			return c.f[i], true
		}
	}
	return commFloors{}, false
}

func (c *commMemo) put(k commKey, f commFloors) {
	c.k[c.next], c.f[c.next] = k, f
	c.next, c.n = (c.next+1)%len(c.k), min(c.n+1, len(c.k))
}

// computeFloor is computeFloor of the job at one sequence per
// micro-batch, worked out once per micro-batch count, policy and
// dispatch of the layout Reset set (floorMemo): a search weighs each of
// them under every schedule in turn (Reschedule), and the floor does not
// read the schedule or its chunks. It reads the layout, the shape's
// degrees, layers per stage, micro-batches, tokens and FLOPs, its remat
// flags at one sequence (the policy's) and leastParams' parameters,
// which no schedule moves, and of the job all but the schedule, the
// chunks and the global batch; and Reschedule and SetPolicy change
// nothing else of the job (Reschedule's "same" job), a change of
// anything else taking Reset's path, which forgets them.
// TestRescheduleIsReset holds it to the floor worked out afresh.
func (bm *BatchMemory) computeFloor() (perShard, fixed float64) {
	f := &bm.floor
	if !f.computeOK {
		j := &bm.est.Job
		k := floorKey{j.MicroBatches, j.Remat, j.RingOfExperts}
		var ok bool
		if f.perShard, f.fixed, ok = bm.floors.get(k); !ok {
			least := bm.sh
			bm.leastParams(&least)
			f.perShard, f.fixed = j.computeFloor(&bm.est.Mesh, &least)
			bm.floors.put(k, f.perShard, f.fixed)
		}
		f.computeOK = true
	}
	return f.perShard, f.fixed
}

// floorKey is what of a job Reschedule and SetPolicy change that
// computeFloor reads.
type floorKey struct {
	micro int
	remat Remat
	ring  bool
}

// floorMemo holds a layout's compute floors by floorKey: its micro-batch
// counts (at most four) by its policies (at most five with the ceilings'
// RematNone) and dispatches (two), the oldest forgotten first past that.
type floorMemo struct {
	k               [40]floorKey
	perShard, fixed [40]float64
	n, next         int
}

func (c *floorMemo) get(k floorKey) (perShard, fixed float64, ok bool) {
	for i := range c.n {
		if c.k[i] == k {
			return c.perShard[i], c.fixed[i], true
		}
	}
	return 0, 0, false
}

func (c *floorMemo) put(k floorKey, perShard, fixed float64) {
	c.k[c.next], c.perShard[c.next], c.fixed[c.next] = k, perShard, fixed
	c.next, c.n = (c.next+1)%len(c.k), min(c.n+1, len(c.k))
}

// leastParams sets sh's parameters to fewer than any schedule lays out
// on its stages: with a pipeline, the layers' alone (endsNone). Megatron's
// layout (the embedding on the first stage, the output layer on the last)
// holds fewer than MaxText's (all of them on every stage) but gathers
// its ends for every micro-batch where MaxText's gathers them once a
// step (tally.fsdpHead), so neither's collectives are at most the
// other's; without the ends they are at most both. The ceilings' floors
// (collectivesFloor, computeFloor) read them, so that a ceiling worked
// out under one schedule bounds the others' throughput (RangeCeiling).
// Without a pipeline there is one layout, and sh keeps it.
//
// The ceilings ask for them at every batch and policy they weigh, so
// they are worked out (Estimator.setParamsEnds) once per
// Reset: endsNone's parameters read the shape's degrees and layers per
// stage (paramsKey), which neither Reschedule nor SetPolicy nor a batch
// changes, and its head holds none (headParams).
func (bm *BatchMemory) leastParams(sh *shape) {
	if sh.p <= 1 {
		return
	}
	if !bm.leastOK {
		bm.e.setParamsEnds(sh, &bm.est.Job, endsNone)
		bm.least, bm.leastOK = sh.params, true
		return
	}
	sh.params, sh.head = bm.least, 0
}
