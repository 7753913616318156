package cost

import (
	"fmt"
	"math"
	"testing"

	"shardlab/hw"
	"shardlab/mesh"
	"shardlab/model"
	"shardlab/schedule"
)

// TestRangeCeiling holds RangeCeiling to what it bounds, pipelined layout
// by layout of dense models (tensor, context, fsdp, data and pipeline over
// ICI and DCN): for every micro-batch count and remat policy, the ceiling
// over a range of batches with the least stretch of the schedules is at
// least every schedule's ThroughputCeiling and Throughput at every batch
// of the range, and so is the compute's ceiling (computeCeiling) alone;
// and near enough to be of use, within 1.5 times the fastest in most
// ranges. The exposure's ceiling (exposedCeiling) must be the least of
// RangeCeiling's four in many ranges, and within 1.1 times the fastest
// in some.
func TestRangeCeiling(t *testing.T) {
	e := NewEstimator()
	n, near, exposed, close := 0, 0, 0, 0
	eachRangeJob(t, e, []int{1, 2, 4, 8}, func(rj rangeJob) {
		c, m, spec, mb, r, j, bm := rj, rj.m, rj.spec, rj.mb, rj.r, rj.j, rj.bm
		p := m.Size(mesh.Pipeline)
		var ok []rangeSched
		stretch := 0.0
		for _, s := range rangeScheds {
			if spec.Layers%(p*s.v) == 0 {
				ok = append(ok, s)
				if st := bm.Stretch(s.k, s.v); stretch == 0 || st < stretch {
					stretch = st
				}
			}
		}
		for _, rg := range []struct{ lo, hi int }{{1, 1}, {1, 8}, {2, 30}, {1, 64}} {
			lo, hi := rg.lo*bm.shards, rg.hi*bm.shards
			got := bm.RangeCeiling(lo, hi, stretch)
			ex, cc := bm.exposedCeiling(lo, hi, stretch), bm.computeCeiling(lo, hi, stretch)
			if ex < got {
				t.Errorf("%s on %s, %d micro-batches, %s, batches %d to %d: exposedCeiling %v below RangeCeiling %v, the least of it", c.model, c.layout, mb, r, lo, hi, ex, got)
			}
			fastest := 0.0
			for _, s := range ok {
				js := j
				js.Schedule, js.Chunks = s.k, s.v
				bs, err := e.BatchMemory(js, m)
				if err != nil {
					t.Fatalf("%s on %s, %s: %v", c.model, c.layout, s.k, err)
				}
				for b := lo; b <= hi; b += lo {
					bd, err := bs.Bound(b)
					if err != nil {
						t.Fatalf("%s on %s, batch %d: %v", c.model, c.layout, b, err)
					}
					tp, ceil := e.Throughput(&bd), bs.ThroughputCeiling(b)
					fastest = max(fastest, tp)
					if got < tp || got < ceil {
						t.Errorf("%s on %s, %d micro-batches, %s, %s with %d chunks, batch %d of %d to %d: RangeCeiling %v, below the ceiling %v or the throughput %v",
							c.model, c.layout, mb, r, s.k, s.v, b, lo, hi, got, ceil, tp)
					}
					if cc < tp || cc < ceil { // one of four, it is rarely RangeCeiling
						t.Errorf("%s on %s, %d micro-batches, %s, %s with %d chunks, batch %d of %d to %d: computeCeiling %v, below the ceiling %v or the throughput %v",
							c.model, c.layout, mb, r, s.k, s.v, b, lo, hi, cc, ceil, tp)
					}
				}
			}
			n++
			if got <= 1.5*fastest {
				near++
			}
			if ex == got && !math.IsInf(ex, 1) {
				exposed++
			}
			if ex <= 1.1*fastest {
				close++
			}
		}
	})
	t.Logf("%d ranges, %d within 1.5 times; the exposure's the lower in %d, within 1.1 times in %d", n, near, exposed, close)
	if n < 300 || near < n/2 {
		t.Errorf("RangeCeiling within 1.5 times the fastest in %d of %d ranges, want at least half of at least 300", near, n)
	}
	if exposed < n/4 || close < n/10 {
		t.Errorf("exposedCeiling the lower in %d of %d ranges and within 1.1 times the fastest in %d, want a quarter and a tenth", exposed, n, close)
	}
}

// TestRangeCeilingBelow holds RangeCeilingBelow to RangeCeiling: on
// TestRangeCeiling's layouts, for every micro-batch count, remat policy,
// range of batches and several stretches, below as a bar (v < bar) must
// hold of RangeCeiling exactly where RangeCeilingBelow says it does, for
// bars at, just above and just below, and between, each of the four
// ceilings it is the least of (computeCeiling, layoutCeiling,
// commCeiling, exposedCeiling), and for none and every throughput. Some bars must be
// met by the compute's ceiling, some by commFloor's and not the
// compute's, some only by the exposure's, and some by none.
func TestRangeCeilingBelow(t *testing.T) {
	e := NewEstimator()
	byCompute, byComm, byExposed, neither := 0, 0, 0, 0
	eachRangeJob(t, e, []int{1, 4}, func(rj rangeJob) {
		c, mb, r, bm := rj, rj.mb, rj.r, rj.bm
		for _, rg := range []struct{ lo, hi int }{{1, 1}, {1, 8}, {2, 30}} {
			lo, hi := rg.lo*bm.shards, rg.hi*bm.shards
			for _, stretch := range []float64{1, 1.3, bm.Stretch(schedule.GPipe, 1)} {
				got := bm.RangeCeiling(lo, hi, stretch)
				comm, ok := bm.commCeiling(lo, hi, stretch)
				ex := bm.exposedCeiling(lo, hi, stretch)
				cc := bm.computeCeiling(lo, hi, stretch)
				bars := []float64{0, math.Inf(1), got, ex, (comm + ex) / 2, cc, (cc + ex) / 2, bm.layoutCeiling(lo, hi, stretch)}
				if ok {
					bars = append(bars, comm)
				}
				for _, x := range bars[2:] {
					bars = append(bars, x*(1+1e-9), x*(1-1e-9))
				}
				for _, bar := range bars {
					want := got < bar
					if below := bm.RangeCeilingBelow(lo, hi, stretch, func(v float64) bool { return v < bar }); below != want {
						t.Errorf("%s on %s, %d micro-batches, %s, batches %d to %d, stretch %v, bar %v: RangeCeilingBelow %v, RangeCeiling %v (its parts %v, %v, %v)",
							c.model, c.layout, mb, r, lo, hi, stretch, bar, below, got, cc, comm, ex)
					}
					switch {
					case cc < bar:
						byCompute++
					case ok && comm < bar:
						byComm++
					case want:
						byExposed++
					default:
						neither++
					}
				}
			}
		}
	})
	t.Logf("bars met by the compute's ceiling %d, by commFloor's and not the compute's %d, by the exposure's alone %d, by none %d", byCompute, byComm, byExposed, neither)
	if byCompute == 0 || byComm == 0 || byExposed == 0 || neither == 0 {
		t.Errorf("bars met by the compute's ceiling %d, by commFloor's and not the compute's %d, by the exposure's alone %d, by none %d: want some of each", byCompute, byComm, byExposed, neither)
	}
}

// rangeSched is a pipeline schedule and its chunks.
type rangeSched struct {
	k schedule.Kind
	v int
}

// rangeScheds are the schedules TestRangeCeiling weighs a layout under,
// where they divide its layers.
var rangeScheds = []rangeSched{{schedule.GPipe, 1}, {schedule.OneFOneB, 1}, {schedule.Interleaved, 2}, {schedule.Interleaved, 4}, {schedule.Circular, 2}}

// rangeCases are TestRangeCeiling's pipelined layouts of dense models.
// rangeJob is one of the range tests' jobs: a layout of rangeCases, a
// micro-batch count and a remat policy, under GPipe, with its memory.
type rangeJob struct {
	model, layout string
	spec          model.Spec
	m             mesh.Mesh
	mb            int
	r             Remat
	j             Job
	bm            BatchMemory
}

// eachRangeJob calls f on every layout of rangeCases with every
// micro-batch count of mults times its stages and every searched remat
// policy.
func eachRangeJob(t *testing.T, e *Estimator, mults []int, f func(rj rangeJob)) {
	t.Helper()
	for _, c := range rangeCases {
		m := layout(t, c.accel, c.slices, c.layout)
		spec := lookup(t, c.model)
		p := m.Size(mesh.Pipeline)
		for _, k := range mults {
			for _, r := range SearchRemats() {
				j := NewJob(spec, spec.SeqLen, 1)
				j.Schedule, j.Chunks, j.MicroBatches, j.Remat = schedule.GPipe, 1, k*p, r
				bm, err := e.BatchMemory(j, m)
				if err != nil {
					t.Fatalf("%s on %s: %v", c.model, c.layout, err)
				}
				f(rangeJob{c.model, c.layout, spec, m, k * p, r, j, bm})
			}
		}
	}
}

var rangeCases = []struct {
	model, accel string
	slices       int
	layout       string
}{
	{"llama3-70b", "v5p-128", 2, "fsdp=16,pipeline=4,pipeline=2(dcn)"},
	{"llama3-70b", "v5p-128", 2, "data=2(dcn),tensor=8,pipeline=4,context=2"},
	{"llama3-70b", "tpu7x-128", 4, "data=2,tensor=4,pipeline=2,context=4,pipeline=4(dcn)"},
	{"llama3-8b", "v5litepod-64", 2, "fsdp=4,tensor=4,pipeline=4,fsdp=2(dcn)"},
	{"gemma2-9b", "v6e-64", 1, "data=2,tensor=4,pipeline=2,context=4"},
	{"qwen3-32b", "v5p-256", 1, "fsdp=4,tensor=8,pipeline=4"},
	{"gpt3-175b", "v4-256", 2, "tensor=8,pipeline=8,context=2,data=2(dcn)"},
	// no pipeline: the micro-batches are gradient accumulation's
	{"llama3-8b", "v6e-16", 1, "fsdp=8,tensor=2"},
	{"llama3-70b", "v5p-128", 2, "fsdp=32,context=2,data=2(dcn)"},
}

// TestCollectivesFloorMemo holds the collectives' floors a BatchMemory
// remembers across its policies (collectivesFloor, commMemo) to the
// uncached computation: on layouts with tensor (a sequential and a
// parallel block), context, fsdp, data and pipeline over ICI and DCN, and
// a mixture of experts (not remembered), one BatchMemory walks every
// policy in turn (SetPolicy) and is asked ceilingStep, ThroughputCeiling
// and RangeCeiling at several batches, repeats among them; each answer
// must equal, bit for bit, that of a BatchMemory of a fresh estimator
// made for the policy and asked at that batch alone, and its parts those
// of the collectives in the shape worked out at the batch (shapedParts,
// every part of it, where collectivesFloor sets only the sequences per
// micro-batch). Some answers must
// come from the memo, and some policies must miss it; the policy's flags
// the memo is keyed by must be the same at every batch.
func TestCollectivesFloorMemo(t *testing.T) {
	parallel := lookup(t, "llama3-8b")
	parallel.ParallelBlock = true
	cases := []struct {
		spec       model.Spec
		accel      string
		slices     int
		layout     string
		k          schedule.Kind
		chunks, mb int
	}{
		{lookup(t, "llama3-70b"), "v5p-128", 2, "fsdp=16,pipeline=4,pipeline=2(dcn)", schedule.GPipe, 1, 8},
		{lookup(t, "llama3-70b"), "v5p-128", 2, "data=2(dcn),tensor=8,pipeline=4,context=2", schedule.Interleaved, 2, 8},
		{lookup(t, "llama3-70b"), "tpu7x-128", 4, "data=2,tensor=4,pipeline=2,context=4,pipeline=4(dcn)", schedule.OneFOneB, 1, 16},
		{lookup(t, "llama3-8b"), "v5litepod-64", 2, "fsdp=4,tensor=4,pipeline=4,fsdp=2(dcn)", schedule.Circular, 2, 4},
		{parallel, "v6e-64", 1, "data=2,tensor=4,pipeline=2,context=4", schedule.GPipe, 1, 2},
		{lookup(t, "gemma2-9b"), "v5litepod-16", 1, "data=2,tensor=8", schedule.GPipe, 1, 1},
		{lookup(t, "mixtral-8x7b"), "v5p-64", 1, "fsdp=4,expert=2,tensor=4", schedule.GPipe, 1, 1},
	}
	hits, misses := 0, 0
	for _, c := range cases {
		m := layout(t, c.accel, c.slices, c.layout)
		j := NewJob(c.spec, c.spec.SeqLen, 1)
		j.Schedule, j.Chunks, j.MicroBatches = c.k, c.chunks, c.mb
		e := NewEstimator()
		var bm BatchMemory
		if err := bm.Reset(e, &j, &m); err != nil {
			t.Fatalf("%s on %s: %v", c.spec.Name, c.layout, err)
		}
		for _, r := range Remats() {
			if r == RematCustom || bm.SetPolicy(r, false) != nil {
				continue
			}
			jr := j
			jr.Remat = r
			for _, per := range []int{8, 1, 8, 3, 1} {
				name := fmt.Sprintf("%s on %s, %s, batch %d", c.spec.Name, c.layout, r, per*bm.shards)
				if compareFloors(t, name, &bm, jr, m, per*bm.shards) {
					hits++
				} else {
					misses++
				}
			}
		}
	}
	t.Logf("%d hits, %d misses", hits, misses)
	if hits < 100 || misses < 40 {
		t.Errorf("%d answers from the memo and %d worked out, want at least 100 and 40", hits, misses)
	}
}

// compareFloors compares bm's ceilings at batch b, with what bm remembers,
// with those of a BatchMemory of jr on m from a fresh estimator, and
// reports whether bm answered from its memo.
func compareFloors(t *testing.T, name string, bm *BatchMemory, jr Job, m mesh.Mesh, b int) (hit bool) {
	t.Helper()
	sh, err := bm.shapeAt(b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	k := commKey{batch: b, micro: bm.est.Job.MicroBatches, recompute: sh.r.recompute > 0, attention: sh.r.attention}
	if k.recompute != (bm.sh.r.recompute > 0) || k.attention != bm.sh.r.attention {
		t.Errorf("%s: the policy's flags %v %v, at one sequence per shard %v %v", name, k.recompute, k.attention, bm.sh.r.recompute > 0, bm.sh.r.attention)
	}
	_, hit = bm.comm.get(k)
	got, gotOK := bm.ceilingStep(b)
	gotTC, gotRC := bm.ThroughputCeiling(b), bm.RangeCeiling(bm.shards, b, 1.25)
	fresh, err := NewEstimator().BatchMemory(jr, m)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if want, wantOK := fresh.ceilingStep(b); got != want || gotOK != wantOK {
		t.Errorf("%s: ceilingStep %+v %v, want %+v %v", name, got, gotOK, want, wantOK)
	}
	if want := shapedParts(&fresh, b); gotOK && got.parts != want {
		t.Errorf("%s: ceilingStep's parts %+v, want %+v from the shape at the batch", name, got.parts, want)
	}
	for _, x := range []struct {
		what      string
		got, want float64
	}{
		{"ThroughputCeiling", gotTC, freshCeiling(jr, m, b, func(f *BatchMemory) float64 { return f.ThroughputCeiling(b) })},
		{"RangeCeiling", gotRC, freshCeiling(jr, m, b, func(f *BatchMemory) float64 { return f.RangeCeiling(f.shards, b, 1.25) })},
	} {
		if x.got != x.want {
			t.Errorf("%s: %s %v, want %v", name, x.what, x.got, x.want)
		}
	}
	return hit
}

// shapedParts is the commParts of bm's collectives at batch b in the
// shape at b (shapeAt, every part of it worked out at b), with
// leastParams' parameters, as collectivesFloor asks for them.
func shapedParts(bm *BatchMemory, b int) commParts {
	sh, err := bm.shapeAt(b)
	if err != nil {
		return commParts{}
	}
	least := *sh
	bm.leastParams(&least)
	est := bm.est
	est.Job.GlobalBatch, est.MicroBatchSize, est.Comms = b, least.b, nil
	return bm.e.commParts(&est, &least)
}

// freshCeiling is f of a BatchMemory of j on m from a fresh estimator.
func freshCeiling(j Job, m mesh.Mesh, b int, f func(*BatchMemory) float64) float64 {
	bm, err := NewEstimator().BatchMemory(j, m)
	if err != nil {
		return -1
	}
	return f(&bm)
}

// TestThroughputCeilingOverLayouts holds ThroughputCeiling to what it
// bounds on every layout of a few slices (each ordered factorization of
// the chips over data, fsdp, tensor, pipeline and context, and of the
// slices over data, fsdp or pipeline), dense models with a sequential and
// a parallel block: at every remat policy, schedule, micro-batch count
// and a few batches, the ceiling is at least Throughput of the batch's
// Bound, and never above the ceiling of the collectives' floor alone
// (commFloor, which leastStep tightens: the compute floor stretched plus
// commFloor). It must be tighter than that floor's somewhere: within 1.1
// times the throughput in more batches. BoundCeiling of the batch's Bound
// must lie between the throughput and the ceiling, and be within 1.1
// times the throughput in more batches still.
func TestThroughputCeilingOverLayouts(t *testing.T) {
	parallel := lookup(t, "llama3-8b")
	parallel.ParallelBlock = true
	cases := []struct {
		spec   model.Spec
		accel  string
		slices int
	}{
		{lookup(t, "llama3-70b"), "v5p-64", 2},
		{lookup(t, "llama3-8b"), "v5litepod-16", 1},
		{parallel, "v6e-16", 2},
		{lookup(t, "llama3-70b"), "tpu7x-32", 4},
	}
	axes := []string{"data", "fsdp", "tensor", "pipeline", "context"}
	e := NewEstimator()
	n, near, nearFloor, nearBound := 0, 0, 0, 0
	for _, c := range cases {
		sl, err := hw.ParseAcceleratorType(c.accel)
		if err != nil {
			t.Fatal(err)
		}
		chips := sl.Chips()
		for _, in := range factorsOver(chips, len(axes)) {
			for _, across := range []string{"data", "fsdp", "pipeline"} {
				spec := ""
				for i, a := range axes {
					spec += fmt.Sprintf("%s=%d,", a, in[i])
				}
				m, err := mesh.ParseOn(c.accel, c.slices, fmt.Sprintf("%s%s=%d(dcn)", spec, across, c.slices))
				if err != nil {
					t.Fatal(err)
				}
				for _, j := range ceilingJobs(c.spec, m.Size(mesh.Pipeline)) {
					bm, err := e.BatchMemory(j, m)
					if err != nil {
						continue // the layout does not run the job
					}
					for _, per := range []int{1, 4, 16} {
						b := per * bm.shards
						bd, err := bm.Bound(b)
						if err != nil {
							t.Fatalf("%s on %v, batch %d: %v", c.spec.Name, m, b, err)
						}
						got, want := bm.ThroughputCeiling(b), e.Throughput(&bd)
						floor := commFloorCeiling(&bm, b)
						n++
						if got < want || got > floor {
							t.Errorf("%s on %v, %s, %s with %d chunks, %d micro-batches, batch %d: ceiling %v, want at least the throughput %v and at most commFloor's ceiling %v",
								c.spec.Name, m, j.Remat, j.Schedule, j.Chunks, j.MicroBatches, b, got, want, floor)
						}
						if got <= 1.1*want {
							near++
						}
						if bc := bm.BoundCeiling(&bd); bc < want || bc > got {
							t.Errorf("%s on %v, %s, %s with %d chunks, %d micro-batches, batch %d: BoundCeiling %v, want between the throughput %v and the ceiling %v",
								c.spec.Name, m, j.Remat, j.Schedule, j.Chunks, j.MicroBatches, b, bc, want, got)
						} else if bc <= 1.1*want {
							nearBound++
						}
						if floor <= 1.1*want {
							nearFloor++
						}
					}
				}
			}
		}
	}
	t.Logf("%d batches: ceiling within 1.1 times the throughput in %d, commFloor's in %d, BoundCeiling in %d", n, near, nearFloor, nearBound)
	if n < 5000 || near <= nearFloor || nearBound <= near {
		t.Errorf("ceiling within 1.1 times the throughput in %d of %d batches, commFloor's in %d, BoundCeiling in %d: want at least 5000 batches, each nearer in more", near, n, nearFloor, nearBound)
	}
}

// ceilingJobs is spec's job at every remat policy the search weighs, and
// for p > 1 stages every schedule at p and 4p micro-batches, and without
// a pipeline one micro-batch and four (gradient accumulation).
func ceilingJobs(spec model.Spec, p int) []Job {
	type sc struct {
		k schedule.Kind
		v int
	}
	scheds, micros := []sc{{"", 1}}, []int{1, 4}
	if p > 1 {
		scheds, micros = []sc{{schedule.GPipe, 1}, {schedule.OneFOneB, 1}, {schedule.Interleaved, 2}}, []int{p, 4 * p}
	}
	var out []Job
	for _, r := range SearchRemats() {
		for _, s := range scheds {
			for _, mb := range micros {
				j := NewJob(spec, spec.SeqLen, 1)
				j.Remat, j.MicroBatches = r, mb
				if s.k != "" {
					j.Schedule, j.Chunks = s.k, s.v
				}
				out = append(out, j)
			}
		}
	}
	return out
}

// commFloorCeiling is the ceiling at batch b from the compute floor,
// stretched, and commFloor alone: ThroughputCeiling before leastStep.
func commFloorCeiling(bm *BatchMemory, b int) float64 {
	f := bm.stepFloor()
	c, ok := bm.ceilingStep(b)
	stepNs := f.stretch*(c.floorNs-4) - 2 + c.commNs
	if f.noPeak || !ok || !(stepNs > 0) {
		return math.Inf(1)
	}
	return float64(b) * float64(bm.est.Job.Seq) / (stepNs / 1e9) / f.chips * (1 + slack)
}

// factorsOver lists every ordered k-tuple of positive integers whose
// product is n.
func factorsOver(n, k int) [][]int {
	if k == 1 {
		return [][]int{{n}}
	}
	var out [][]int
	for d := 1; d <= n; d++ {
		if n%d == 0 {
			for _, rest := range factorsOver(n/d, k-1) {
				out = append(out, append([]int{d}, rest...))
			}
		}
	}
	return out
}

// TestLayoutCeilingOverLayouts holds layoutCeiling to what it bounds on
// TestThroughputCeilingOverLayouts' layouts (every ordered factorization
// of a few slices' chips over data, fsdp, tensor, pipeline and context,
// and of the slices over data, fsdp or pipeline) at every remat policy,
// schedule and micro-batch count: layoutFloor is at most the collectives'
// floor (collectivesFloor) at every batch weighed, and the ceiling over
// batches from one to 16 per shard, at the job's own stretch, is at
// least Throughput of every batch's Bound there; with no remat it is at
// least every policy's. It must be tighter than the compute's ceiling
// (computeCeiling) in most ranges, and no tighter than RangeCeiling.
func TestLayoutCeilingOverLayouts(t *testing.T) {
	e := NewEstimator()
	n, tighter := 0, 0
	for _, c := range []struct {
		spec   model.Spec
		accel  string
		slices int
	}{{lookup(t, "llama3-70b"), "v5p-64", 2}, {lookup(t, "llama3-8b"), "v5litepod-16", 1}, {lookup(t, "llama3-70b"), "tpu7x-32", 4}} {
		for _, m := range ceilingLayouts(t, c.accel, c.slices) {
			for _, j := range ceilingJobs(c.spec, m.Size(mesh.Pipeline)) {
				bm, err := e.BatchMemory(j, m)
				if err != nil {
					continue // the layout does not run the job
				}
				lo, hi := bm.shards, 16*bm.shards
				stretch := bm.jobStretch()
				got, none := bm.layoutCeiling(lo, hi, stretch), math.Inf(1)
				j0 := j
				j0.Remat = RematNone
				if b0, err := e.BatchMemory(j0, m); err == nil {
					none = b0.layoutCeiling(lo, hi, stretch)
				}
				name := fmt.Sprintf("%s on %v, %s, %s with %d chunks, %d micro-batches", c.spec.Name, m, j.Remat, j.Schedule, j.Chunks, j.MicroBatches)
				for _, per := range []int{1, 3, 16} {
					b := per * bm.shards
					bd, err := bm.Bound(b)
					if err != nil {
						t.Fatalf("%s, batch %d: %v", name, b, err)
					}
					tp := e.Throughput(&bd)
					if f, ok := bm.collectivesFloor(b); ok && bm.layoutFloor() > f.comm {
						t.Errorf("%s, batch %d: layoutFloor %v above the collectives' floor %v", name, b, bm.layoutFloor(), f.comm)
					}
					if got < tp || none < tp {
						t.Errorf("%s, batch %d: layoutCeiling %v (with no remat %v) below the throughput %v", name, b, got, none, tp)
					}
				}
				if rc := bm.RangeCeiling(lo, hi, stretch); rc > got {
					t.Errorf("%s: RangeCeiling %v above layoutCeiling %v, one of those it is the least of", name, rc, got)
				}
				n++
				if got < bm.computeCeiling(lo, hi, stretch) {
					tighter++
				}
			}
		}
	}
	t.Logf("%d ranges, layoutCeiling below the compute's ceiling in %d", n, tighter)
	if n < 2000 || tighter < n/2 {
		t.Errorf("layoutCeiling below the compute's ceiling in %d of %d ranges, want at least half of at least 2000", tighter, n)
	}
}

// ceilingLayouts is every layout of slices accel slices whose chips are
// split over data, fsdp, tensor, pipeline and context, the slices over
// data, fsdp or pipeline (TestThroughputCeilingOverLayouts').
func ceilingLayouts(t *testing.T, accel string, slices int) []mesh.Mesh {
	t.Helper()
	sl, err := hw.ParseAcceleratorType(accel)
	if err != nil {
		t.Fatal(err)
	}
	axes := []string{"data", "fsdp", "tensor", "pipeline", "context"}
	var out []mesh.Mesh
	for _, in := range factorsOver(sl.Chips(), len(axes)) {
		for _, across := range []string{"data", "fsdp", "pipeline"} {
			spec := ""
			for i, a := range axes {
				spec += fmt.Sprintf("%s=%d,", a, in[i])
			}
			m, err := mesh.ParseOn(accel, slices, fmt.Sprintf("%s%s=%d(dcn)", spec, across, slices))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
	}
	return out
}
