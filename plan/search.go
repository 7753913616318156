package plan

import (
	"cmp"
	"errors"
	"slices"
	"sort"

	"shardlab/cost"
	"shardlab/mesh"
	"shardlab/schedule"
)

// How a search costs its layouts, in two passes. First, workers, each
// with its own estimator, cost the meshes in batches, merged in
// enumeration order: each mesh is tried over its combinations (layout),
// each combination's batch found in HBM and its step bounded (fit); a
// combination that cannot beat the bars of the layouts known so far is
// dropped as soon as a ceiling on its throughput shows it (before its
// batch is looked for: cost.BatchMemory.MaxThroughput; before its bound:
// ThroughputCeiling; before its collectives: its bound, and BoundCeiling
// with the collectives remembered from the ceilings), and the others'
// throughput is worked out in full (cost.Throughput), which is all that
// ranks them. Then only the
// combinations that can be kept are finished (finishBounded), the fastest
// first: once a tier holds keep layouts, no slower one can enter it.
// What has no batch within the limit is counted as rejected in one step,
// not tried: a layout at its fewest micro-batches before its mesh is
// built (searcher.batchLimited), and a layout's larger micro-batch counts
// as layout comes to them (searcher.bulk).

// worker costs meshes with its own estimator (whose caches are not safe to
// share).
type worker struct {
	req Request
	job cost.Job // the request's (Request.job)
	// cur is the job try costs: the request's run as the combination
	// last tried (combo.set)
	cur cost.Job
	// bound is fit's scratch
	bound cost.Bound
	est   *cost.Estimator
	keep  int
	// bulk is the search's (searcher.bulk): a layout's micro-batch
	// counts with no batch within the limit are rejected in one step.
	bulk bool
	// bars is the throughput of the best layouts this worker knows of:
	// those merged before the batch and its own since.
	bars bars
	// arena holds the bounded combinations of the worker's outcomes in a
	// batch, each outcome a part of it, until they are merged.
	arena []bounded
	// rejects holds the reasons of the worker's outcomes in a batch in
	// the same way, a run of one reason as one entry (a mesh's
	// combinations mostly fail for one reason in a row), the outcome
	// being costed's from rejectsFrom on.
	rejects     []reasonRun
	rejectsFrom int
	// fitChunk is where layout takes the batches it remembers from, a
	// chunk at a time.
	fitChunk []batchFit
	// scheds is schedules by pipeline stages, and remats the remat
	// policies a layout is costed with.
	scheds map[int][]sched
	remats []cost.Remat
	// batches remembers, on a multislice, each layout size's batches: a
	// layout's memory depends on its size on each axis, not on which of
	// its factors cross DCN, so the layouts that split the same sizes
	// otherwise find the same batch (or the same reason), combination by
	// combination in the order layout tries them.
	batches map[[mesh.NumAxes]int][]batchFit
	// family is the memory of the schedule and micro-batches the layout
	// being costed was last weighed with, which its remat policies and
	// expert dispatches share (cost.BatchMemory.Policy).
	family family
	// stretches is the schedules' stretches by pipeline stages and
	// micro-batches (stretchesOf).
	stretches map[[2]int]stretches
}

// family is a layout's memory with one schedule, its chunks and
// micro-batches, or the layout's reason it cannot run them.
type family struct {
	ok    bool
	k     schedule.Kind
	v, mb int
	bm    cost.BatchMemory
	err   error
}

// memory is j's memory on m (cost.Estimator.BatchMemory), the family's
// set to j's policy when j shares its schedule, chunks and micro-batches:
// a layout that cannot run them (*cost.Infeasible) cannot with any
// policy. It is good until the next call.
func (w *worker) memory(j *cost.Job, m *mesh.Mesh) (*cost.BatchMemory, error) {
	f := &w.family
	if f.ok && f.k == j.Schedule && f.v == j.Chunks && f.mb == j.MicroBatches {
		if f.err != nil {
			return nil, f.err
		}
		return &f.bm, f.bm.SetPolicy(j.Remat, j.RingOfExperts)
	}
	var err error
	if f.ok && f.err == nil {
		// f.bm is this layout's (worker.layout forgets the last's)
		err = f.bm.Reschedule(j)
	} else {
		err = f.bm.Reset(w.est, j, m)
	}
	f.ok, f.k, f.v, f.mb, f.err = err == nil || infeasible(err), j.Schedule, j.Chunks, j.MicroBatches, err
	return &f.bm, err
}

// infeasible reports whether err is a *cost.Infeasible. It is its own
// function so that its target, which errors.As moves to the heap, is
// allocated only for an error, not on each of the millions of memories
// a search weighs that have none.
func infeasible(err error) bool {
	var inf *cost.Infeasible
	return errors.As(err, &inf)
}

// batchFit is the batch fit chose for one combination, or why none runs,
// and the throughput of its step's bound (cost.Bound), when it was
// bounded (0 when not): a layout's bound depends only on its size on each
// axis, so one of the same sizes is outclassed at the same bars.
type batchFit struct {
	batch  int
	reason cost.Reason
	bound  float64
}

// bars is, per tier, the throughput of the fastest layouts known, best
// first, at most keep, and the fastest with an expert axis: a layout whose
// bound is below a full tier's bar, and below the expert bar if it has an
// expert axis, is not among those the search keeps (outclassed).
type bars struct {
	keep       int
	tier       [numTiers][]float64 // by tierIndex
	expert     float64
	haveExpert bool
	// lean, when on, holds a lean search's bars (leanBars).
	lean leanBars
}

// numTiers is how many tiers there are: the in-slice strategies by the
// cross-slice ones.
const numTiers = int(InModel+1) * int(AcrossPipeline+1)

// tierIndex is t's place in bars.tier: a search asks for its tier's bars
// several times per combination, and an array is cheaper than a map.
func tierIndex(t Tier) int { return int(t.In)*int(AcrossPipeline+1) + int(t.Across) }

// copyFrom sets b to o.
func (b *bars) copyFrom(o *bars) {
	for i := range b.tier {
		b.tier[i] = append(b.tier[i][:0], o.tier[i]...)
	}
	b.keep, b.expert, b.haveExpert, b.lean = o.keep, o.expert, o.haveExpert, o.lean
}

// raise adds a layout of tier t, with an expert axis or not, whose
// throughput is v.
func (b *bars) raise(t Tier, v float64, expert bool) {
	if b.lean.on {
		b.raiseLean(t, v)
	}
	l := b.tier[tierIndex(t)]
	i := sort.Search(len(l), func(i int) bool { return v > l[i] })
	if i < b.keep {
		l = append(l, 0)
		copy(l[i+1:], l[i:])
		l[i] = v
		b.tier[tierIndex(t)] = l[:min(len(l), b.keep)]
	}
	if expert && (!b.haveExpert || v > b.expert) {
		b.expert, b.haveExpert = v, true
	}
}

// full reports whether tier t holds keep layouts: until it does, it
// outclasses none. In a lean search one is enough, and a tier that can
// no longer enter the pool needs none (outclassedLean).
func (b *bars) full(t Tier) bool {
	i := tierIndex(t)
	if b.lean.on {
		return len(b.tier[i]) > 0 || b.lean.out[i]
	}
	return len(b.tier[i]) >= b.keep
}

// outclassed reports whether a layout of tier t, with an expert axis or
// not, whose throughput is at most max cannot be kept: keep layouts of its
// tier are faster, and with an expert axis so is the best of those (in a
// lean search, outclassedLean).
func (b *bars) outclassed(t Tier, max float64, expert bool) bool {
	if b.lean.on {
		return b.outclassedLean(t, max)
	}
	l := b.tier[tierIndex(t)]
	if len(l) < b.keep || !(max < l[b.keep-1]) {
		return false
	}
	return !expert || (b.haveExpert && max < b.expert)
}

// contender is a bounded combination that may be kept, and its mesh.
type contender struct {
	bounded
	m mesh.Mesh
}

// bounded is a combination whose batch fits and that is not outclassed,
// with the throughput its estimate finishes with (cost.Throughput).
type bounded struct {
	tier   Tier
	expert bool // the mesh has an expert axis
	tps    float64
	batch  int
	c      combo
}

// outcome is what costing one mesh found: it is merged into the searcher
// in the order the meshes were enumerated, so the plan does not depend on
// how many workers ran or how they were scheduled.
type outcome struct {
	tier      Tier
	evaluated int
	rejected  []reasonRun
	offers    []Candidate // finished layouts, best first, at most keep
	bounded   []bounded   // layouts to finish if they can be kept (mesh unset)
	unfit     *Candidate
}

// finishBounded finishes, fastest first, the bounded combinations that
// could still be kept: in their tier, or as the best with an expert axis.
// A tier's keep-th layout faster than the next combination (or the best
// expert layout) stops it: no later one is faster. The layouts kept are
// those finishing every combination would keep, as better orders them
// (ties in throughput are all finished, for better to break).
func (s *searcher) finishBounded(w *worker) {
	order := make([]int32, len(s.bounded))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(s.bounded[b].tps, s.bounded[a].tps) })
	for _, i := range order {
		b := &s.bounded[i]
		if !s.finishes(b) {
			continue
		}
		j := b.c.job(s.req)
		j.GlobalBatch = b.batch
		bd, err := w.est.Bound(j, b.m)
		if err != nil {
			panic(err) // the first pass bounded this batch
		}
		s.offerAll(Candidate{Estimate: w.est.Finish(bd), Tier: b.tier})
	}
	s.bounded = nil
}

// finishes reports whether finishBounded finishes b, the fastest of those
// left: it could be kept in its tier, or as the best with an expert axis;
// in a lean search, it is its tier's first, or the final bars do not
// outclass it.
func (s *searcher) finishes(b *contender) bool {
	l := s.best[b.tier]
	if s.bars.lean.on {
		return len(l) == 0 || !s.bars.outclassedLean(b.tier, b.tps)
	}
	tier := len(l) < s.keep || !(b.tps < l[s.keep-1].Estimate.TokensPerSecondPerChip)
	expert := b.expert && (s.expert == nil || !(b.tps < s.expert.Estimate.TokensPerSecondPerChip))
	return tier || expert
}

// merge adds the outcome of mesh m, as costing it in place would have. A
// bounded combination the bars already outclass can never be kept (they
// only rise) and is dropped.
func (s *searcher) merge(o outcome, m mesh.Mesh) {
	s.evaluated += o.evaluated
	rejected := s.rejected[o.tier]
	for _, rr := range o.rejected {
		rejected[rr.reason] += rr.n
	}
	for _, c := range o.offers {
		s.offerAll(c)
	}
	for _, b := range o.bounded {
		if !s.bars.outclassed(b.tier, b.tps, b.expert) {
			s.bounded = append(s.bounded, contender{b, m})
			s.bars.raise(b.tier, b.tps, b.expert)
		}
	}
	if o.unfit != nil && (s.unfit == nil || o.unfit.Estimate.Memory.Total() < s.unfit.Estimate.Memory.Total()) {
		s.unfit = o.unfit
	}
}

// offerAll offers c to its tier and, with an expert axis, as the best
// expert layout.
func (s *searcher) offerAll(c Candidate) {
	s.offer(c)
	if c.Estimate.Mesh.Size(mesh.Expert) > 1 && (s.expert == nil || better(c, *s.expert)) {
		s.expert = &c
	}
}

// unfitCandidate costs a requested layout that does not fit, at the
// request's batch or the smallest one, so the plan can show by how much it
// misses.
func (w *worker) unfitCandidate(jp *cost.Job, m *mesh.Mesh) *Candidate {
	j := *jp
	j.GlobalBatch = w.req.GlobalBatch
	if j.GlobalBatch == 0 {
		j.GlobalBatch = m.Size(mesh.Data) * m.Size(mesh.FSDP) * j.MicroBatches
	}
	est, err := w.est.Estimate(j, *m)
	if err != nil {
		return nil
	}
	return &Candidate{Estimate: est, Tier: TierOf(*m)}
}

// layout costs one mesh over its micro-batch counts and remat policies.
func (w *worker) layout(m mesh.Mesh) outcome {
	out := outcome{tier: TierOf(m)}
	p := m.Size(mesh.Pipeline)
	micros := [4]int{1}
	micro := micros[:1]
	if p > 1 {
		micros = [4]int{p, 2 * p, 4 * p, 8 * p}
		micro = micros[:]
	}
	if w.remats == nil {
		w.remats = rematsFor(&w.req)
	}
	remats := w.remats
	scheds := w.schedules(p)
	rings := w.rings(m)
	w.family.ok = false // the last layout's
	if p == 1 {
		micros[0] = w.accumulation(&m, remats, rings)
	}
	hopeless, all := w.hopeless(&m, scheds, micro, remats)
	if all {
		out.evaluated = len(scheds) * len(micro) * len(remats) * len(rings)
		return out
	}
	start, startR := len(w.arena), len(w.rejects)
	w.rejectsFrom = startR
	sm := w.memo(&m, len(scheds)*len(micro)*len(remats)*len(rings))
	for si, sc := range scheds {
		for mi, mb := range micro {
			if lo, hi := w.batchRange(&m, mb); w.bulk && hi < lo {
				// no batch within the limit: every policy and dispatch
				// of these micro-batches is rejected as fitBatch would
				n := len(remats) * len(rings)
				w.rejectBatchLimit(&out, n)
				for range n {
					sm.next()
					sm.keep(batchFit{reason: ReasonBatchLimit})
				}
				continue
			}
			for ri, r := range remats {
				for _, ring := range rings {
					if hopeless.has(si, mi, ri) {
						out.evaluated++
						sm.next()
						sm.keep(hopelessFit)
						continue
					}
					sm.keep(w.try(&out, &m, combo{sc.k, sc.v, mb, r, ring}, sm.next()))
				}
			}
		}
	}
	w.remember(&sm)
	out.bounded = w.arena[start:len(w.arena):len(w.arena)]
	out.rejected = w.rejects[startR:len(w.rejects):len(w.rejects)]
	return out
}

// reasonRun is n combinations in a row rejected for one reason.
type reasonRun struct {
	reason cost.Reason
	n      int
}

// reject counts a combination of the outcome being costed as rejected
// for reason r.
func (w *worker) reject(r cost.Reason) {
	if n := len(w.rejects); n > w.rejectsFrom && w.rejects[n-1].reason == r {
		w.rejects[n-1].n++
		return
	}
	w.rejects = append(w.rejects, reasonRun{r, 1})
}

// try bounds one mesh run as c, with the batch a mesh of its sizes found
// (prior) when there is one, and returns the batch.
func (w *worker) try(out *outcome, m *mesh.Mesh, c combo, prior *batchFit) batchFit {
	out.evaluated++
	j := &w.cur
	c.set(j, w.job.Schedule, w.job.Chunks)
	expert := m.Size(mesh.Expert) > 1
	var tps float64
	fit := batchFit{reason: ReasonMaxTextRing}
	refused, depends := w.req.maxTextRing(m)
	if !refused {
		tps, fit = w.fit(j, m, prior, out.tier, expert)
	}
	if depends && fit.reason == "" && w.req.maxTextRefuses(j, m, fit.batch) {
		fit.reason = ReasonMaxTextRing
	}
	switch fit.reason {
	case outclassed:
		fit.reason = "" // the batch runs; the layout cannot be kept
	case "":
		w.arena = append(w.arena, bounded{tier: out.tier, expert: expert, tps: tps, batch: fit.batch, c: c})
		w.bars.raise(out.tier, tps, expert)
	case cost.ReasonHBM, cost.ReasonHost:
		if w.req.Axes != nil {
			if u := w.unfitCandidate(j, m); u != nil && (out.unfit == nil || u.Estimate.Memory.Total() < out.unfit.Estimate.Memory.Total()) {
				out.unfit = u
			}
		}
		fallthrough
	default:
		w.reject(fit.reason)
	}
	return fit
}

// outclassed marks a combination fit did not cost in full: its bound is
// below the worker's bars. It is neither kept nor rejected.
const outclassed cost.Reason = "outclassed"

// fit picks the global batch (the request's, or the largest that fits HBM and host memory
// within the limit; prior's when a layout of m's sizes found it) and costs
// the step of m, a layout of tier t with an expert axis or not. It returns
// the throughput (cost.Throughput) and the batch, or why there is none:
// outclassed when the step's bound (cost.Bound) or its ceiling with the
// collectives (cost.BatchMemory.BoundCeiling), or before the batch is
// found every batch's (cost.BatchMemory.MaxThroughput), or before the
// bound is worked out the batch's ceiling with its collectives
// (cost.BatchMemory.ThroughputCeiling), is already too slow.
func (w *worker) fit(j *cost.Job, m *mesh.Mesh, prior *batchFit, t Tier, expert bool) (float64, batchFit) {
	if prior != nil && prior.batch == 0 && prior.reason == "" && !w.bars.outclassed(t, prior.bound, expert) {
		// the layout of m's sizes was outclassed before its batch was
		// found: find it now
		tps, f := w.fit(j, m, nil, t, expert)
		*prior = f
		if f.reason == outclassed {
			prior.reason = ""
		}
		return tps, f
	}
	b := &w.bound
	f := batchFit{}
	var bm *cost.BatchMemory
	if prior != nil {
		f = *prior
		if f.reason != "" {
			return 0, f
		}
		if w.bars.outclassed(t, f.bound, expert) {
			f.reason = outclassed
			return 0, f
		}
		var err error
		if bm, err = w.memory(j, m); err != nil {
			panic(err) // a layout of the same sizes ran this batch
		}
		if w.bars.full(t) && w.bars.outclassed(t, bm.ThroughputCeiling(f.batch), expert) {
			f.reason = outclassed // its collectives make it too slow
			return 0, f
		}
		if *b, err = bm.Bound(f.batch); err != nil {
			panic(err)
		}
	} else {
		if f, bm = w.fitBatch(j, m, t, expert); f.reason != "" {
			return 0, f
		}
		if w.bars.full(t) && w.bars.outclassed(t, bm.ThroughputCeiling(f.batch), expert) {
			// its collectives make it too slow here; a layout of its sizes
			// elsewhere (prior) has its compute's bound
			f.reason, f.bound = outclassed, bm.MaxThroughput(f.batch, f.batch)
			return 0, f
		}
		var err error
		if *b, err = bm.Bound(f.batch); err != nil {
			var inf *cost.Infeasible
			if errors.As(err, &inf) {
				return 0, batchFit{reason: inf.Reason}
			}
			panic(err) // memory passed, so the job and shape are valid
		}
		f.bound = b.TokensPerSecondPerChip()
	}
	if w.bars.outclassed(t, f.bound, expert) || w.bars.full(t) && w.bars.outclassed(t, bm.BoundCeiling(b), expert) {
		f.reason = outclassed // its compute, or with it its collectives, too slow
		return 0, f
	}
	return w.est.Throughput(b), f
}

// fitBatch picks the global batch of j on m, a layout of tier t with an
// expert axis or not, or says why none runs, and returns the job's memory
// on m (worker.memory) when it found one. Where the smallest batch fits
// but no batch up to the largest could be kept
// (cost.BatchMemory.MaxThroughput), the combination is outclassed with
// that bound and its batch is not looked for (0, when the request sets
// none). Where the state alone exceeds the usable HBM
// (cost.BatchMemory.StateExceeds) no batch is weighed: Check is ReasonHBM
// at every multiple of the shards, as the batches it would weigh are (but
// a request's batch, which Check may refuse first).
func (w *worker) fitBatch(j *cost.Job, m *mesh.Mesh, t Tier, expert bool) (batchFit, *cost.BatchMemory) {
	shards := m.Size(mesh.Data) * m.Size(mesh.FSDP) * m.Size(mesh.Expert) * j.MicroBatches
	reason := func(err error) cost.Reason {
		var inf *cost.Infeasible
		if errors.As(err, &inf) {
			return inf.Reason
		}
		panic(err) // the job was validated by defaults
	}
	var bm *cost.BatchMemory
	try := func(b int) cost.Reason {
		why, err := bm.Check(b)
		if err != nil {
			return reason(err)
		}
		return why
	}
	lo, hi := w.batchRange(m, j.MicroBatches)
	if hi < lo {
		return batchFit{reason: ReasonBatchLimit}, nil
	}
	var err error
	if bm, err = w.memory(j, m); err != nil {
		return batchFit{reason: reason(err)}, nil
	}
	if hi%shards == 0 && bm.StateExceeds() {
		return batchFit{reason: cost.ReasonHBM}, nil
	}
	// What a batch needs never falls as it grows (cost's
	// TestBatchMemoryGrowsWithTheBatch): where the largest batch fits, as
	// it mostly does, it is the batch, in one weighing, and the smallest
	// fits too; else the batches between are bisected
	batch := 0 // not yet found
	if why := try(hi); why == "" {
		batch = hi
	} else if lo == hi {
		return batchFit{reason: why}, nil
	} else if why := try(lo); why != "" {
		return batchFit{reason: why}, nil
	}
	if w.bars.full(t) {
		if ub := bm.MaxThroughput(max(lo, batch), hi); w.bars.outclassed(t, ub, expert) {
			return batchFit{batch: batch, reason: outclassed, bound: ub}, nil
		}
	}
	if batch == 0 {
		unit := w.req.batchUnit(shards)
		batch = bisect(1, hi/unit-1, func(n int) bool { return try(n*unit) == "" }) * unit
	}
	return batchFit{batch: batch}, bm
}

// bisect is the largest of lo to hi that fits, where lo does, weighing
// neither lo nor more than log2(hi-lo+1) others rounded up.
func bisect(lo, hi int, fits func(n int) bool) int {
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// better ranks by throughput, then by smaller batch, less memory, and the
// layout's spelling so the order is total and deterministic.
func better(a, b Candidate) bool {
	x, y := a.Estimate, b.Estimate
	if x.TokensPerSecondPerChip != y.TokensPerSecondPerChip {
		return x.TokensPerSecondPerChip > y.TokensPerSecondPerChip
	}
	if x.Job.GlobalBatch != y.Job.GlobalBatch {
		return x.Job.GlobalBatch < y.Job.GlobalBatch
	}
	if x.Memory.Total() != y.Memory.Total() {
		return x.Memory.Total() < y.Memory.Total()
	}
	if x.Job.MicroBatches != y.Job.MicroBatches {
		return x.Job.MicroBatches < y.Job.MicroBatches
	}
	if x.Job.Remat != y.Job.Remat {
		return x.Job.Remat < y.Job.Remat
	}
	return x.Mesh.String() < y.Mesh.String()
}

func (s *searcher) offer(c Candidate) {
	s.best[c.Tier] = offer(s.best[c.Tier], c, s.keep)
}

// offer inserts c into list, best first, keeping at most keep.
func offer(list []Candidate, c Candidate, keep int) []Candidate {
	i := sort.Search(len(list), func(i int) bool { return better(c, list[i]) })
	if i >= keep {
		return list
	}
	list = append(list, Candidate{})
	copy(list[i+1:], list[i:])
	list[i] = c
	if len(list) > keep {
		list = list[:keep]
	}
	return list
}
