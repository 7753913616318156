package plan

// The search as it was before issue 31's speed work (471f65d): every batch
// the fit tries is a full cost.Estimator.Memory (the job checked, the
// shape, the state, the phases spelled out), and every layout that fits
// is estimated in full. It is kept here, in a test, as the second
// implementation the search is held to (TestSearchMatchesReference) and
// the baseline its benchmarks report against in the same run.

import (
	"errors"

	"shardlab/cost"
	"shardlab/mesh"
	"shardlab/schedule"
)

// searchReference is search with every mesh costed the old way.
func searchReference(r Request) (Plan, error) {
	if err := r.defaults(); err != nil {
		return Plan{}, err
	}
	step := r.microStep
	r.microStep = max(step, r.maxTextStep())
	p, err := searchWith(r, (*worker).referenceLayout, false)
	p.Request.microStep = step
	return p, err
}

// referenceLayout costs one mesh over its micro-batch counts and remat policies.
func (w *worker) referenceLayout(m mesh.Mesh) outcome {
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
	// the same schedules and expert dispatches as the search weighs
	scheds, rings := schedulesFor(&w.req, p), w.rings(m)
	for _, sc := range scheds {
		for _, mb := range micro {
			for _, r := range remats {
				for _, ring := range rings {
					w.referenceTry(&out, m, sc.k, sc.v, mb, r, ring)
				}
			}
		}
	}
	return out
}

// referenceTry costs one mesh with one schedule, micro-batch count, policy and
// expert dispatch.
func (w *worker) referenceTry(out *outcome, m mesh.Mesh, k schedule.Kind, v, mb int, r cost.Remat, ring bool) {
	out.evaluated++
	j := w.req.job()
	if k != "" {
		j.Schedule, j.Chunks = k, v
	}
	j.MicroBatches = mb
	j.Remat = r
	j.RingOfExperts = ring
	c, reason := w.referenceFit(j, m)
	if (reason == cost.ReasonHBM || reason == cost.ReasonHost) && w.req.Axes != nil {
		if u := w.referenceUnfit(j, m); u != nil && (out.unfit == nil || u.Estimate.Memory.Total() < out.unfit.Estimate.Memory.Total()) {
			out.unfit = u
		}
	}
	if reason == "" && w.referenceRingRefuses(c) {
		reason = ReasonMaxTextRing
	}
	if reason != "" {
		out.rejected = append(out.rejected, reasonRun{reason, 1})
		return
	}
	out.offers = offer(out.offers, c, w.keep)
}

// referenceFit picks the global batch (the request's, or the largest that fits HBM and host memory
// within the limit) and costs the step.
func (w *worker) referenceFit(j cost.Job, m mesh.Mesh) (Candidate, cost.Reason) {
	// the expert axis shards the batch as data and fsdp do
	shards := m.Size(mesh.Data) * m.Size(mesh.FSDP) * m.Size(mesh.Expert) * j.MicroBatches
	try := func(b int) (cost.Memory, cost.Reason) {
		j.GlobalBatch = b
		mem, err := w.est.Memory(j, m)
		if err != nil {
			var inf *cost.Infeasible
			if errors.As(err, &inf) {
				return mem, inf.Reason
			}
			panic(err) // the job was validated by defaults
		}
		return mem, mem.Reason()
	}
	// MaxText's ring, where it refuses m whatever the batch, is asked
	// first, as the search asks it, after the batch limit
	refused, _ := w.req.maxTextRing(&m)
	if w.req.GlobalBatch > 0 {
		j.GlobalBatch = w.req.GlobalBatch
		if refused {
			return Candidate{}, ReasonMaxTextRing
		}
		if _, why := try(j.GlobalBatch); why != "" {
			return Candidate{}, why
		}
	} else {
		// per-shard batches are multiples of step: 1, or the chip's
		// devices when they must split its sequences (microStep)
		step := max(w.req.microStep, 1)
		hi := w.req.MaxGlobalBatch / shards / step
		if hi < 1 {
			return Candidate{}, ReasonBatchLimit
		}
		if refused {
			return Candidate{}, ReasonMaxTextRing
		}
		if _, why := try(step * shards); why != "" {
			return Candidate{}, why
		}
		lo := 1 // fits; find the largest per-shard batch that does
		for lo < hi {
			mid := lo + (hi-lo+1)/2
			if _, why := try(mid * step * shards); why == "" {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		j.GlobalBatch = lo * step * shards
	}
	est, err := w.est.Estimate(j, m)
	if err != nil {
		var inf *cost.Infeasible
		if errors.As(err, &inf) {
			return Candidate{}, inf.Reason
		}
		panic(err) // memory passed, so the job and shape are valid
	}
	return Candidate{Estimate: est, Tier: TierOf(m)}, ""
}

// referenceUnfit costs a requested layout that does not fit, at the
// request's batch or the smallest one, so the plan can show by how much it
// misses.
func (w *worker) referenceUnfit(j cost.Job, m mesh.Mesh) *Candidate {
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

// referenceRingRefuses is Request.maxTextRefuses read off c's estimate in
// full: its MaxText mesh as a plan of it gives it (Plan.Devices, from the
// estimate's sequences per chip per micro-batch), and MaxText's ring
// rule on that mesh's context and tensor sizes.
func (w *worker) referenceRingRefuses(c Candidate) bool {
	if w.req.Framework != FrameworkMaxText {
		return false
	}
	d, err := Plan{Request: w.req, Best: c}.Devices()
	if err != nil {
		return true
	}
	size := map[mesh.Axis]int{mesh.Context: 1, mesh.Tensor: 1}
	for _, g := range d.Degrees {
		size[g.Axis] = g.ICI * g.DCN
	}
	return w.req.ring(size[mesh.Context], size[mesh.Tensor]).Check() != nil
}
