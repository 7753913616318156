package plan

import (
	"math"
	"slices"

	"shardlab/cost"
	"shardlab/mesh"
)

// A lean search (Request.BestOnly) answers only what a plan's Best, Rule
// and Band are, as the full search would (TestLeanSearchIsExact). Those
// depend on few of the layouts the full search ranks:
//
//   - which tiers that can still enter the pool run at all (firstTiers
//     reads the pool from them): such a tier is not pruned before one of
//     its layouts runs;
//   - the best layout of the pool's tiers (Rule);
//   - the fastest layout of all: beyondBand chooses it over the rule's
//     when it lies outside the pool and is faster by more than the band.
//
// So a combination whose throughput is at most max need not be costed
// when it is slower than the fastest layout known, and either its tier
// cannot enter the pool (a tier before it in rule order runs) or a faster
// layout of its own tier is known. Each test only grows truer as the
// search goes on: the fastest layout and a tier's best only rise, and a
// tier that left the pool does not come back. On a pipelined layout the
// same test skips, before any is costed, the micro-batch counts and
// remat policies that no schedule and no batch within the limit lets
// pass (worker.hopeless), and a layout whose state alone exceeds the
// usable HBM, which no combination runs. The Band is the job's (cost.Job.Band),
// whichever layout runs it. The layouts outside the pool that are not the
// fastest are then not their tier's best, and Rejected counts less than
// the full search's; where nothing runs, no bar rose, the lean search
// costed what the full one costs, and its error is the full search's
// (search). A lean search costs a sample of the layouts first
// (sampleStride), so that the fastest known rises sooner.

// leanBars is what bars needs to decide for a lean search.
type leanBars struct {
	on bool
	// multislice and tooSmall are the request's: whether it has several
	// slices, and whether the batch rule puts pipeline across slices in
	// the pool beside DP or FSDP across them (searcher.batchRule).
	multislice, tooSmall bool
	// fastest is the throughput of the fastest layout known.
	fastest float64
	// out marks, by tierIndex, the tiers that can no longer enter the
	// pool: a tier before them in rule order runs.
	out [numTiers]bool
}

// leanBars is the lean bars of a search of r, before any layout runs.
func (r *Request) leanBars() leanBars {
	_, need, limit := r.batchRuleTokens()
	return leanBars{on: true, multislice: r.Multislice.Slices > 1, tooSmall: limit < need}
}

// outclassedLean is bars.outclassed for a lean search.
func (b *bars) outclassedLean(t Tier, max float64) bool {
	i := tierIndex(t)
	if !(max < b.lean.fastest) {
		return false // maybe the fastest
	}
	l := b.tier[i]
	return b.lean.out[i] || len(l) > 0 && max < l[0]
}

// raiseLean notes, for a lean search, a layout of tier t whose throughput
// is v: the fastest known, and the tiers that leave the pool once t runs.
func (b *bars) raiseLean(t Tier, v float64) {
	b.lean.fastest = math.Max(b.lean.fastest, v)
	n := 1
	if b.lean.multislice {
		n = 2
	}
	for _, u := range tiers(n) {
		if b.after(t, u) {
			b.lean.out[tierIndex(u)] = true
		}
	}
}

// after reports whether tier u cannot enter the pool once tier t runs
// (searcher.firstTiers): on one slice, a later in-slice strategy; with
// pipeline across slices, a later in-slice one; with DP across slices,
// a later in-slice one with DP across and every one with FSDP across;
// with FSDP across, a later in-slice one with FSDP across; and, once DP
// or FSDP across slices runs, pipeline across slices too unless the batch
// rule says the batch is too small.
func (b *bars) after(t, u Tier) bool {
	if !b.lean.multislice {
		return u.In > t.In
	}
	if t.Across == AcrossPipeline {
		return u.Across == AcrossPipeline && u.In > t.In
	}
	if u.Across == AcrossPipeline {
		return !b.lean.tooSmall
	}
	return u.Across > t.Across || u.Across == t.Across && u.In > t.In
}

// order is the order a search costs dcn, the cross-slice factorizations,
// in: theirs, or for a lean search data across slices first, then FSDP,
// then pipeline, each in its order in dcn, so that the tiers the rule
// order reaches first raise the fastest known layout before those it
// reaches last are costed.
func (lb *leanBars) order(dcn [][]int) [][]int {
	if !lb.on {
		return dcn
	}
	ones := make([]int, mesh.NumAxes)
	for i := range ones {
		ones[i] = 1
	}
	rank := func(dn []int) int {
		a := tierOf(ones, dn).Across
		if a == AcrossNone { // tensor or context on DCN: refused
			return int(AcrossPipeline) + 1
		}
		return int(a)
	}
	out := slices.Clone(dcn)
	slices.SortStableFunc(out, func(x, y []int) int { return rank(x) - rank(y) })
	return out
}

// hopelessSet marks the (schedule, micro-batch count, remat policy)
// triples of a layout that worker.hopeless found none of whose
// combinations can be kept: by the schedule's index, bit i·8+j for the
// i-th count and j-th policy.
type hopelessSet [maxHopelessScheds]uint32

// maxHopelessScheds is the most schedules worker.hopeless weighs a
// layout's pairs under (schedulesFor's most: GPipe, 1F1B and two chunk
// counts).
const maxHopelessScheds = 4

// has reports whether the triple of the si-th schedule, the mi-th
// micro-batch count and the ri-th remat policy is marked.
func (h *hopelessSet) has(si, mi, ri int) bool { return h[si]&(1<<(mi*8+ri)) != 0 }

// hopelessFit is what a layout remembers (sizeMemo) of a combination it
// did not cost: nothing, so that one of the same sizes elsewhere costs it
// (its bound, +Inf, outclasses nothing).
var hopelessFit = batchFit{bound: math.Inf(1)}

// hopeless is, for a lean search, the triples of schedule, micro-batch
// count and remat policy of mesh m none of whose combinations, at any
// batch within the limit, the bars can keep, and whether that is every
// triple. A pair of count and policy is marked under every schedule
// where its ceiling with the least stretch of the schedules
// (cost.BatchMemory.RangeCeiling) says so, and otherwise under each
// schedule whose own ceiling (at its Stretch) does: the least stretch
// bounds every schedule's throughput, a schedule's own only its; first,
// one ceiling with no remat (noRematHopeless) may mark a count's every
// pair. Where m is weighed under one schedule (it does not pipeline, or
// the request sets its schedule), only that ceiling is weighed: each
// pair's own is what try weighs. It looks only at a dense model, in a
// tier one of whose layouts runs already or that can no longer enter the
// pool (bars.full), so the pool does not change. A pair with no batch
// within the limit is not marked (none of its combinations runs: the
// search rejects them), and does not keep the others from being every
// triple. Before any ceiling, a layout whose state alone exceeds the
// usable HBM is every triple (stateExceeds): none of its combinations
// runs, so none can be kept. The layout's memory it leaves
// (worker.family) is the layout's, which try reschedules (worker.memory).
func (w *worker) hopeless(m *mesh.Mesh, scheds []sched, micro []int, remats []cost.Remat) (hopelessSet, bool) {
	t := TierOf(*m)
	var h hopelessSet
	if !w.bars.lean.on || len(scheds) > maxHopelessScheds || len(remats) > 8 || w.req.Model.MoE() || !w.bars.full(t) {
		return h, false
	}
	if w.stateExceeds(m, scheds[0], micro[0]) {
		return h, true
	}
	all := true
	for mi, mb := range micro {
		lo, hi := w.batchRange(m, mb)
		if hi < lo {
			continue // no batch within the limit: none runs
		}
		var st stretches // the schedules', once worked out
		if w.noRematHopeless(m, scheds, mb, lo, hi, remats, &st) {
			for si := range scheds {
				h[si] |= uint32(1)<<(mi*8+len(remats)) - uint32(1)<<(mi*8)
			}
			continue
		}
		if len(scheds) < 2 {
			all = false // one schedule: try weighs each policy's own ceilings
			continue
		}
		for ri, r := range remats {
			bit := uint32(1) << (mi*8 + ri)
			bm, ok := w.pairMemory(m, scheds, mb, r, &st)
			if ok && w.rangeOutclassed(t, bm, lo, hi, st.least) {
				for si := range scheds {
					h[si] |= bit
				}
				continue
			}
			for si := range scheds {
				// a schedule of the least stretch has the ceiling just weighed
				if ok && st.of[si] != st.least && w.rangeOutclassed(t, bm, lo, hi, st.of[si]) {
					h[si] |= bit
				} else {
					all = false
				}
			}
		}
	}
	return h, all
}

// noRematHopeless reports whether every remat policy of remats, under
// every schedule of scheds, with mb micro-batches, is hopeless on mesh m
// at every batch from lo to hi, by one ceiling: that of the job with no
// remat (cost.RematNone) over the range, with the least stretch of the
// schedules (worked out in st). With no remat the ceiling's every term is
// at most any policy's (cost.BatchMemory.RangeCeiling), so it bounds
// every policy's throughput too. It does not look where the request
// weighs one policy (that policy's own ceiling is as cheap), and is false
// where the job cannot run so (the pairs' own memories then say why).
func (w *worker) noRematHopeless(m *mesh.Mesh, scheds []sched, mb, lo, hi int, remats []cost.Remat, st *stretches) bool {
	if len(remats) < 2 {
		return false
	}
	bm, ok := w.pairMemory(m, scheds, mb, cost.RematNone, st)
	return ok && w.rangeOutclassed(TierOf(*m), bm, lo, hi, st.least)
}

// rangeOutclassed reports whether the bars outclass, for a dense layout
// of tier t, bm.RangeCeiling(lo, hi, stretch): bars.outclassed holds of
// every throughput below one it holds of, so the ceiling's parts are
// weighed cheapest first, each only where those before it are not below
// (cost.BatchMemory.RangeCeilingBelow).
func (w *worker) rangeOutclassed(t Tier, bm *cost.BatchMemory, lo, hi int, stretch float64) bool {
	return bm.RangeCeilingBelow(lo, hi, stretch, func(v float64) bool { return w.bars.outclassed(t, v, false) })
}

// stateExceeds reports whether the state of mesh m alone, run under
// schedule sc with mb micro-batches and no remat, exceeds the usable HBM
// (cost.BatchMemory.StateExceeds): then no combination of m runs, at any
// batch, since no schedule, remat policy or dispatch, nor on a pipeline
// the micro-batch count, changes the state, and a layout without one is
// weighed with one count (worker.layout). False where that job cannot
// run for another reason: each combination's own reason is then the
// search's.
func (w *worker) stateExceeds(m *mesh.Mesh, sc sched, mb int) bool {
	j := &w.cur
	combo{sc.k, sc.v, mb, cost.RematNone, false}.set(j, w.job.Schedule, w.job.Chunks)
	bm, err := w.memory(j, m)
	return err == nil && bm.StateExceeds()
}

// stretches is the Stretch of each schedule a layout is weighed under
// (cost.BatchMemory.Stretch), by index, and the least of them, once ok.
type stretches struct {
	ok    bool
	of    [maxHopelessScheds]float64
	least float64
}

// pairMemory is the memory of mesh m run with mb micro-batches and remat
// policy r (and no ring of experts) under the first of scheds, whose
// ceilings (cost.BatchMemory.RangeCeiling) bound the throughput under
// every schedule of stretch at least theirs, and it works out st, the
// schedules' stretches, when not ok (they do not depend on the policy).
// False where the job cannot run so.
func (w *worker) pairMemory(m *mesh.Mesh, scheds []sched, mb int, r cost.Remat, st *stretches) (*cost.BatchMemory, bool) {
	j := &w.cur
	combo{scheds[0].k, scheds[0].v, mb, r, false}.set(j, w.job.Schedule, w.job.Chunks)
	bm, err := w.memory(j, m)
	if err != nil {
		return nil, false
	}
	if !st.ok {
		*st = w.stretchesOf(bm, m.Size(mesh.Pipeline), scheds, mb)
	}
	return bm, true
}

// stretchesOf is the stretches of scheds (those of p stages) with mb
// micro-batches, worked out from bm, the memory of a layout of p stages
// run with mb micro-batches, the first time and remembered: a Stretch
// reads only the schedule, its chunks, the stages, the micro-batches,
// the slices and the job's calibration (cost.BatchMemory.Stretch), and
// all but the first four are the search's, so every layout of p stages
// weighed with mb micro-batches has the same.
func (w *worker) stretchesOf(bm *cost.BatchMemory, p int, scheds []sched, mb int) stretches {
	key := [2]int{p, mb}
	if st, ok := w.stretches[key]; ok {
		return st
	}
	st := stretches{ok: true, least: math.Inf(1)}
	for si, sc := range scheds {
		st.of[si] = bm.Stretch(sc.k, sc.v)
		st.least = min(st.least, st.of[si])
	}
	if w.stretches == nil {
		w.stretches = map[[2]int]stretches{}
	}
	w.stretches[key] = st
	return st
}
