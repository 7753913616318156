package plan

import (
	"errors"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"shardlab/cost"
	"shardlab/mesh"
	"shardlab/schedule"
)

// How a search costs its layouts: workers, each with its own estimator,
// cost the meshes in batches, merged in enumeration order; each mesh is
// tried over its combinations (layout), each combination's batch found in
// HBM and its step bounded before the estimate is finished (fit).

// worker costs meshes with its own estimator (whose caches are not safe to
// share).
type worker struct {
	req  Request
	est  *cost.Estimator
	keep int
	// bar is, per tier, the throughput of the best layouts this worker
	// knows of, best first, at most keep: those merged before the batch
	// and its own since; expertBar is the best with an expert axis, when
	// haveExpert. A layout no faster than a full bar is not among those
	// the search keeps (outclassed).
	bar        map[Tier][]float64
	expertBar  float64
	haveExpert bool
	// batches remembers, on a multislice, each layout size's batches: a
	// layout's memory depends on its size on each axis, not on which of
	// its factors cross DCN, so the layouts that split the same sizes
	// otherwise find the same batch (or the same reason), combination by
	// combination in the order layout tries them.
	batches map[[mesh.NumAxes]int][]batchFit
}

// batchFit is the batch fit chose for one combination, or why none runs.
type batchFit struct {
	batch  int
	reason cost.Reason
}

// outclassed marks a layout fit did not finish costing: its bound is
// below the worker's bar. It is neither offered nor rejected.
const outclassed cost.Reason = "outclassed"

// know sets w's bars to the layouts s has merged.
func (w *worker) know(s *searcher) {
	if w.bar == nil {
		w.bar = map[Tier][]float64{}
	}
	for t := range w.bar {
		w.bar[t] = w.bar[t][:0]
	}
	for t, l := range s.best {
		for _, c := range l {
			w.bar[t] = append(w.bar[t], c.Estimate.TokensPerSecondPerChip)
		}
	}
	w.haveExpert = s.expert != nil
	if w.haveExpert {
		w.expertBar = s.expert.Estimate.TokensPerSecondPerChip
	}
}

// raise adds c, a layout w costed, to its bars.
func (w *worker) raise(c Candidate) {
	v := c.Estimate.TokensPerSecondPerChip
	l := w.bar[c.Tier]
	i := sort.Search(len(l), func(i int) bool { return v > l[i] })
	if i < w.keep {
		l = append(l, 0)
		copy(l[i+1:], l[i:])
		l[i] = v
		w.bar[c.Tier] = l[:min(len(l), w.keep)]
	}
	if c.Estimate.Mesh.Size(mesh.Expert) > 1 && (!w.haveExpert || v > w.expertBar) {
		w.expertBar, w.haveExpert = v, true
	}
}

// outclassed reports whether a layout of tier t, with an expert axis or
// not, whose throughput is at most max cannot be kept: keep layouts of
// its tier are faster, each distinct (the merged and w's own since), and
// with an expert axis so is the best of those.
func (w *worker) outclassed(t Tier, max float64, expert bool) bool {
	l := w.bar[t]
	if len(l) < w.keep || !(max < l[w.keep-1]) {
		return false
	}
	return !expert || (w.haveExpert && max < w.expertBar)
}

// outcome is what costing one mesh found: it is merged into the searcher
// in the order the meshes were enumerated, so the plan does not depend on
// how many workers ran or how they were scheduled.
type outcome struct {
	tier      Tier
	evaluated int
	rejected  []cost.Reason
	offers    []Candidate // the mesh's best keep, best first
	unfit     *Candidate
}

// meshBatch is how many meshes are costed before their outcomes are
// merged, which bounds the memory the outcomes hold.
const meshBatch = 256

// run costs the meshes on Request.Workers goroutines (0: one per CPU) and
// merges their outcomes in order.
func (s *searcher) run(meshes []mesh.Mesh) {
	n := s.req.Workers
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	n = max(1, min(n, len(meshes)))
	workers := make([]*worker, n)
	for i := range workers {
		workers[i] = &worker{req: s.req, est: cost.NewEstimator(), keep: s.keep}
	}
	outs := make([]outcome, min(meshBatch, len(meshes)))
	for lo := 0; lo < len(meshes); lo += meshBatch {
		batch := meshes[lo:min(lo+meshBatch, len(meshes))]
		for _, w := range workers {
			w.know(s)
		}
		if n == 1 {
			for i, m := range batch {
				outs[i] = s.layout(workers[0], m)
			}
		} else {
			var next atomic.Int64
			var wg sync.WaitGroup
			for _, w := range workers {
				wg.Go(func() {
					for i := int(next.Add(1) - 1); i < len(batch); i = int(next.Add(1) - 1) {
						outs[i] = s.layout(w, batch[i])
					}
				})
			}
			wg.Wait()
		}
		for i := range batch {
			s.merge(outs[i])
			outs[i] = outcome{}
		}
	}
}

// merge adds one mesh's outcome, as costing it in place would have.
func (s *searcher) merge(o outcome) {
	s.evaluated += o.evaluated
	for _, r := range o.rejected {
		s.rejected[o.tier][r]++
	}
	for _, c := range o.offers {
		s.offer(c)
		if c.Estimate.Mesh.Size(mesh.Expert) > 1 && (s.expert == nil || better(c, *s.expert)) {
			s.expert = &c
		}
	}
	if o.unfit != nil && (s.unfit == nil || o.unfit.Estimate.Memory.Total() < s.unfit.Estimate.Memory.Total()) {
		s.unfit = o.unfit
	}
}

// unfitCandidate costs a requested layout that does not fit, at the
// request's batch or the smallest one, so the plan can show by how much it
// misses.
func (w *worker) unfitCandidate(j cost.Job, m mesh.Mesh) *Candidate {
	j.GlobalBatch = w.req.GlobalBatch
	if j.GlobalBatch == 0 {
		j.GlobalBatch = m.Size(mesh.Data) * m.Size(mesh.FSDP) * j.MicroBatches
	}
	est, err := w.est.Estimate(j, m)
	if err != nil {
		return nil
	}
	return &Candidate{Estimate: est, Tier: TierOf(m)}
}

// layout costs one mesh over its micro-batch counts and remat policies.
func (w *worker) layout(m mesh.Mesh) outcome {
	out := outcome{tier: TierOf(m)}
	p := m.Size(mesh.Pipeline)
	micro := []int{1}
	if p > 1 {
		micro = []int{p, 2 * p, 4 * p, 8 * p}
	}
	remats := cost.SearchRemats()
	if w.req.Remat != "" {
		remats = []cost.Remat{w.req.Remat}
	}
	scheds := w.schedules(p)
	rings := w.rings(m)
	var sizes [mesh.NumAxes]int
	for _, a := range mesh.All() {
		sizes[a] = m.Size(a)
	}
	known, seen := w.batches[sizes]
	remember := !seen && w.req.Multislice.Slices > 1
	var fits []batchFit
	i := 0
	for _, sc := range scheds {
		for _, mb := range micro {
			for _, r := range remats {
				for _, ring := range rings {
					var prior *batchFit
					if seen {
						prior = &known[i]
					}
					i++
					f := w.try(&out, m, sc.k, sc.v, mb, r, ring, prior)
					if remember {
						fits = append(fits, f)
					}
				}
			}
		}
	}
	if remember {
		if w.batches == nil {
			w.batches = map[[mesh.NumAxes]int][]batchFit{}
		}
		w.batches[sizes] = fits
	}
	return out
}

// sched is a pipeline schedule and its chunks per stage.
type sched struct {
	k schedule.Kind
	v int
}

// schedules are the pipeline schedules a mesh of p stages is costed with:
// the request's, or when it sets none and the mesh pipelines, GPipe, 1F1B
// and the chunked schedule with 2 and 4 chunks where they divide the
// layers (MaxText's, when the framework is MaxText: no 1F1B, circular).
func (w *worker) schedules(p int) []sched {
	scheds := []sched{{w.req.Schedule, max(w.req.Chunks, 1)}}
	if p <= 1 || w.req.Schedule != "" {
		return scheds
	}
	one, chunked := schedule.OneFOneB, schedule.Interleaved
	if w.req.Framework == FrameworkMaxText {
		one, chunked = "", schedule.Circular
	}
	scheds = []sched{{schedule.GPipe, 1}}
	if one != "" {
		scheds = append(scheds, sched{one, 1})
	}
	for _, v := range []int{2, 4} {
		if w.req.Model.Layers%(p*v) == 0 {
			scheds = append(scheds, sched{chunked, v})
		}
	}
	return scheds
}

// rings are the expert dispatches m is costed with: the all-to-alls, and
// for a dropless mixture of experts over an expert axis MaxText's ring of
// experts too.
func (w *worker) rings(m mesh.Mesh) []bool {
	rings := []bool{false}
	if w.req.Model.MoE() && m.Size(mesh.Expert) > 1 && w.req.CapacityFactor <= 0 {
		rings = append(rings, true)
	}
	return rings
}

// try costs one mesh with one schedule, micro-batch count, policy and
// expert dispatch, with the batch a mesh of its sizes found (prior) when
// there is one, and returns the batch.
func (w *worker) try(out *outcome, m mesh.Mesh, k schedule.Kind, v, mb int, r cost.Remat, ring bool, prior *batchFit) batchFit {
	out.evaluated++
	j := w.req.job()
	if k != "" {
		j.Schedule, j.Chunks = k, v
	}
	j.MicroBatches = mb
	j.Remat = r
	j.RingOfExperts = ring
	c, fit := w.fit(j, m, out.tier, prior)
	reason := fit.reason
	if reason == cost.ReasonHBM && w.req.Axes != nil {
		if u := w.unfitCandidate(j, m); u != nil && (out.unfit == nil || u.Estimate.Memory.Total() < out.unfit.Estimate.Memory.Total()) {
			out.unfit = u
		}
	}
	switch reason {
	case outclassed:
		fit.reason = "" // the batch runs; the layout was not finished
	case "":
		out.offers = offer(out.offers, c, w.keep)
		w.raise(c)
	default:
		out.rejected = append(out.rejected, reason)
	}
	return fit
}

// fit picks the global batch (the request's, or the largest that fits HBM
// within the limit; prior's when a layout of m's sizes found it) and costs
// the step of m, a layout of tier t. It returns the candidate and the
// batch or why there is none: outclassed when the bound was too slow to
// finish.
func (w *worker) fit(j cost.Job, m mesh.Mesh, t Tier, prior *batchFit) (Candidate, batchFit) {
	if prior != nil {
		if prior.reason != "" {
			return Candidate{}, *prior
		}
		j.GlobalBatch = prior.batch
		b, err := w.est.Bound(j, m)
		if err != nil {
			panic(err) // a layout of the same sizes ran this batch
		}
		return w.finish(b, m, t)
	}
	var c Candidate
	var bm cost.BatchMemory
	f := w.fitBatch(j, m, &bm)
	if f.reason == "" {
		b, err := bm.Bound(f.batch)
		if err != nil {
			var inf *cost.Infeasible
			if errors.As(err, &inf) {
				return Candidate{}, batchFit{reason: inf.Reason}
			}
			panic(err) // memory passed, so the job and shape are valid
		}
		c, f = w.finish(b, m, t)
	}
	return c, f
}

// finish completes b's estimate for m, a layout of tier t, unless its
// bound is outclassed.
func (w *worker) finish(b cost.Bound, m mesh.Mesh, t Tier) (Candidate, batchFit) {
	f := batchFit{batch: b.GlobalBatch()}
	if w.outclassed(t, b.TokensPerSecondPerChip(), m.Size(mesh.Expert) > 1) {
		f.reason = outclassed
		return Candidate{}, f
	}
	return Candidate{Estimate: w.est.Finish(b), Tier: t}, f
}

// fitBatch picks the global batch of j on m, or says why none runs, and
// sets bm to the job's memory on m.
func (w *worker) fitBatch(j cost.Job, m mesh.Mesh, bm *cost.BatchMemory) batchFit {
	// the expert axis shards the batch as data and fsdp do
	shards := m.Size(mesh.Data) * m.Size(mesh.FSDP) * m.Size(mesh.Expert) * j.MicroBatches
	reason := func(err error) cost.Reason {
		var inf *cost.Infeasible
		if errors.As(err, &inf) {
			return inf.Reason
		}
		panic(err) // the job was validated by defaults
	}
	try := func(b int) cost.Reason {
		fits, err := bm.Fits(b)
		switch {
		case err != nil:
			return reason(err)
		case !fits:
			return cost.ReasonHBM
		}
		return ""
	}
	if w.req.GlobalBatch > 0 {
		j.GlobalBatch = w.req.GlobalBatch
		var err error
		if *bm, err = w.est.BatchMemory(j, m); err != nil {
			return batchFit{reason: reason(err)}
		}
		if why := try(j.GlobalBatch); why != "" {
			return batchFit{reason: why}
		}
	} else {
		// per-shard batches are multiples of step: 1, or the chip's
		// devices when they must split its sequences (microStep)
		step := max(w.req.microStep, 1)
		hi := w.req.MaxGlobalBatch / shards / step
		if hi < 1 {
			return batchFit{reason: ReasonBatchLimit}
		}
		var err error
		if *bm, err = w.est.BatchMemory(j, m); err != nil {
			return batchFit{reason: reason(err)}
		}
		if why := try(step * shards); why != "" {
			return batchFit{reason: why}
		}
		lo := 1 // fits; find the largest per-shard batch that does
		for lo < hi {
			mid := lo + (hi-lo+1)/2
			if why := try(mid * step * shards); why == "" {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		j.GlobalBatch = lo * step * shards
	}
	return batchFit{batch: j.GlobalBatch}
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
