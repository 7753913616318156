// Package plan searches every layout of a training job on a TPU topology —
// all factorizations of the chips over the data, fsdp, tensor, pipeline and
// context axes, split into ICI and DCN factors, with micro-batch counts,
// rematerialisation policies and batch sizes — drops those that cannot run,
// ranks the rest by throughput with package cost, and picks one in the
// order the rules give: pure data parallelism while the model fits, FSDP
// when memory binds, pipeline across slices only when data parallelism over
// DCN would need a global batch above the convergence limit, tensor and
// context parallelism only inside a slice. The plan carries its reasons.
package plan

import (
	"errors"

	"shardlab/cost"
	"shardlab/mesh"
)

// Candidate is one evaluated layout.
type Candidate struct {
	Estimate cost.Estimate
	Tier     Tier
}

// Plan is the answer: the chosen layout, the runners-up, and why.
type Plan struct {
	Request Request
	Best    Candidate
	// Rule is the layout the rule order chose. Best is the same unless a
	// layout outside the rule order is predicted faster by more than the
	// model's error band allows (Band), and the reasons then say why.
	Rule Candidate
	// Top holds the best layouts of the chosen tier, best first.
	Top []Candidate
	// Alternatives holds the best layout of every other tier that can run.
	Alternatives []Candidate
	// Reasons and Warnings name the options they concern; Note.Phrase
	// spells them as the front end does.
	Reasons  []Note
	Warnings []Note
	// Rejected counts layouts that cannot run, by reason.
	Rejected map[cost.Reason]int
	// Evaluated counts the (layout, micro-batches, remat) combinations
	// costed.
	Evaluated int
	// MaxMicroBatch is the most sequences per batch shard (data x fsdp x
	// expert; ChipBatch scales it to a chip) per micro-batch the chosen
	// layout fits with (cost.Estimator.MaxMicroBatch), up to
	// MaxBatch sequences in all; 0 when it does not fit one.
	// MaxMicroBatchBound is what stops one more: cost.ReasonHBM,
	// cost.ReasonHost, or "" where MaxBatch does
	// (cost.Estimator.MaxMicroBatchBound).
	MaxMicroBatch      int
	MaxMicroBatchBound cost.Reason
	// Band is the step-time model's measured error on the chosen
	// layout's generation and model class (cost.Job.Band): the band every
	// predicted figure carries, and the margin by which a layout outside
	// the rule order must be faster to be chosen over the rule's.
	Band cost.StepBand
	// Published is validate's published runs of this very job, which the
	// front ends set (validate.Beside; PublishedRun); nil where it has none.
	Published []PublishedRun
}

// ErrNoPlan is returned when no layout can run the job.
var ErrNoPlan = errors.New("no layout can run this job")

// search state
type searcher struct {
	req Request
	// est is the estimator the plan's notes and its largest micro-batch
	// are costed with, once the layouts are (the cache's: Cache.take).
	est      *cost.Estimator
	rejected map[Tier]map[cost.Reason]int
	// refusedDCN counts the factorizations that put tensor or context on
	// DCN, by reason: they belong to no tier.
	refusedDCN map[cost.Reason]int
	evaluated  int
	best       map[Tier][]Candidate // best first, at most keep
	keep       int
	// unfit is the requested layout that uses the least HBM, when it does
	// not fit at any batch (--mesh only).
	unfit *Candidate
	// expert is the best layout with expert parallelism, for a mixture of
	// experts.
	expert *Candidate
	// bounded is what the first pass found to run and could keep, for
	// finishBounded; bars the throughput of the best of it.
	bounded []contender
	bars    bars
	// layout costs a mesh: (*worker).layout.
	layout func(*worker, mesh.Mesh) outcome
	// bulk is set when the search rejects in one step what has no batch
	// within the limit: a layout at its fewest micro-batches
	// (searcher.batchLimited) before layout costs it, and (worker.bulk) a
	// layout's micro-batch counts as worker.layout comes to them. Unset,
	// each combination is tried (TestBulkRejectionChangesNothing).
	bulk bool
	// schedules counts, by pipeline stages, the schedules a layout is
	// costed with (schedulesFor), for batchLimited.
	schedules map[int]int
	// across is where the rule order put the across-slices reason, and
	// what it saw there, for acrossNote once the layout is chosen.
	across acrossSlot
}

// Search plans the request: on its multislice, or, when the request holds
// only a chip, on the smallest footprint of its generation that runs the
// job (SearchScope, up to MaxScopeSlices slices).
func Search(r Request) (Plan, error) {
	if r.Cache == nil {
		r.Cache = new(Cache) // for the searches of a scope and of fixes
	}
	if ms := r.Multislice; ms.Slices == 0 && ms.Slice.Chips() == 0 && ms.Slice.Chip.Generation != "" {
		return SearchScope(r, ms.Slice.Chip, MaxScopeSlices)
	}
	p, err := search(r)
	var none *NoPlanError
	if errors.As(err, &none) && none.Rejected[cost.ReasonHBM] > 0 {
		none.Fixes = fixes(r)
	}
	return p, err
}

// search is Search on one multislice, without looking for fixes when
// nothing runs. A lean search (Request.BestOnly) that runs nothing
// returns the full search's error, not searching again: until a
// combination runs no bar rises (bars.raise), so the lean bars outclass
// nothing (outclassedLean: no throughput is below the fastest, 0),
// hold no tier full and mark nothing hopeless (worker.hopeless), and the
// lean search costs every combination the full one costs, as it costs
// it; only the cross-slice factorizations come in another order
// (leanBars.order), and the rejections are counted by reason whatever
// the order, a layout remembering its sizes' reasons (worker.batches)
// finding the one it would itself. TestLeanFixesAreTheFulls and the
// -lean-whole sweep (TestLeanWholeSweep) hold the errors to the full
// search's.
func search(r Request) (Plan, error) {
	if err := r.defaults(); err != nil {
		return Plan{}, err
	}
	if r.DeviceAxes != nil {
		return searchDevices(r)
	}
	if r.Axes != nil && r.Multislice.Slice.Chip.JAXDevicesPerChip <= 1 {
		// a chip is a device: the mesh asked is MaxText's
		if err := r.askedRing(r.Axes, spellAxes(r.Axes)); err != nil {
			return Plan{}, err
		}
	}
	step := r.microStep
	r.microStep = max(step, r.maxTextStep())
	p, err := searchWith(r, (*worker).layout, true)
	p.Request.microStep = step
	return p, err
}

// searchWith is search of a request that passed defaults, each mesh costed
// by layout, those with no batch within the limit rejected in one step
// when bulk is set.
func searchWith(r Request, layout func(*worker, mesh.Mesh) outcome, bulk bool) (Plan, error) {
	s := &searcher{req: r, keep: r.Top, layout: layout, bulk: bulk, bars: bars{keep: r.Top},
		rejected: map[Tier]map[cost.Reason]int{}, refusedDCN: map[cost.Reason]int{}, best: map[Tier][]Candidate{}}
	for _, t := range tiers(r.Multislice.Slices) {
		s.rejected[t] = map[cost.Reason]int{}
	}
	if r.BestOnly && r.Axes == nil {
		s.bars.lean = r.leanBars()
	}
	if r.Axes != nil {
		m, err := askedMesh(r.Multislice, r.Axes, spellAxes(r.Axes))
		if err != nil {
			return Plan{}, err
		}
		s.run([]mesh.Mesh{m})
		if s.unfit != nil && len(s.best[s.unfit.Tier]) == 0 {
			// nothing fits: show the layout asked for, costed in full
			s.best[s.unfit.Tier] = []Candidate{*s.unfit}
		}
	} else {
		s.enumerate()
	}
	ests := r.Cache.take(1)
	defer r.Cache.give(ests)
	s.est = ests[0]
	p, err := s.choose()
	if err != nil {
		return p, err
	}
	if n, ok := accumulationNote(p, s.est); ok {
		p.Reasons = append(p.Reasons, n)
	}
	e := p.Best.Estimate
	shards := max(e.Job.GlobalBatch/max(e.MicroBatchSize, 1), 1)
	p.MaxMicroBatch, p.MaxMicroBatchBound, err = s.est.MaxMicroBatchBound(e.Job, e.Mesh, max(MaxBatch/shards, 1))
	if step := s.req.microStep; step > 1 && p.MaxMicroBatch >= step {
		// only multiples of the step run: the chip's devices split its
		// sequences (the chosen layout's count is one)
		p.MaxMicroBatch -= p.MaxMicroBatch % step
	}
	return p, err
}
