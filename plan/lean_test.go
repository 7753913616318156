package plan

import (
	"errors"
	"flag"
	"reflect"
	"testing"

	"shardlab/cost"
	"shardlab/mesh"
)

var leanWhole = flag.Bool("lean-whole", false, "compare the lean search with the full one on every configuration of issue 31's whole sweep (minutes; not run by default)")

// leanDiff is how the lean search's plan of r (Request.BestOnly) differs
// from the full search's in what the lean search answers (Best, Rule,
// Band, and what Best determines), or "" when it does not. It also
// returns whether the full search chose outside the rule order, and
// whether nothing runs.
func leanDiff(r Request) (diff string, beyond, none bool) {
	full, errFull := Search(r)
	r.BestOnly = true
	lean, errLean := Search(r)
	if errFull != nil || errLean != nil {
		if errString(errFull) != errString(errLean) {
			return "error " + errString(errLean) + ", want " + errString(errFull), false, false
		}
		return "", false, true
	}
	beyond = full.Best.Tier != full.Rule.Tier
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"Best", lean.Best, full.Best},
		{"Rule", lean.Rule, full.Rule},
		{"Band", lean.Band, full.Band},
		{"MaxMicroBatch", lean.MaxMicroBatch, full.MaxMicroBatch},
		{"MaxMicroBatchBound", lean.MaxMicroBatchBound, full.MaxMicroBatchBound},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			return c.what + " differs: lean " + lean.Best.Estimate.Mesh.String() + ", full " + full.Best.Estimate.Mesh.String(), beyond, false
		}
	}
	return "", beyond, false
}

func errString(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}

// TestLeanSearchIsExact checks that a lean search (Request.BestOnly)
// answers Best, Rule and Band as the full search does, on requests that
// reach each part of the rule order: one slice and several, dense and
// mixture-of-experts models, pipeline across slices in the pool (a batch
// limit below the Multislice batch rule's), a choice beyond the band, a
// fixed batch, remat policy and schedule, and a job nothing runs.
func TestLeanSearchIsExact(t *testing.T) {
	type edit func(*Options)
	cases := []struct {
		name string
		edit edit
	}{
		{"8b one slice", func(o *Options) { o.Model, o.TPU = "llama3-8b", "v5e-16" }},
		{"8b two slices", func(o *Options) { o.Model, o.TPU, o.Slices = "llama3-8b", "v5e-32", 2 }},
		{"8b four slices, pipeline across in the pool", func(o *Options) { o.Model, o.TPU, o.Slices, o.MaxGlobalBatch = "llama3-8b", "v5p-64", 4, "32" }},
		{"8b two slices, beyond the band", func(o *Options) { o.Model, o.TPU, o.Slices, o.MaxGlobalBatch = "llama3-8b", "v5p-64", 2, "128" }},
		{"8b four slices, beyond the band from pipeline across", func(o *Options) {
			o.Model, o.TPU, o.Slices, o.MaxGlobalBatch = "llama3-8b", "v6e-64", 4, "128"
		}},
		{"70b one slice", func(o *Options) { o.Model, o.TPU = "llama3-70b", "v5p-128" }},
		{"70b two slices", func(o *Options) { o.Model, o.TPU, o.Slices = "llama3-70b", "v6e-64", 2 }},
		{"70b four slices, tpu7x", func(o *Options) { o.Model, o.TPU, o.Slices = "llama3-70b", "tpu7x-128", 4 }},
		{"70b fixed batch", func(o *Options) { o.Model, o.TPU, o.Slices, o.GlobalBatch = "llama3-70b", "v5p-64", 2, "256" }},
		{"8b fixed batch, accumulated", func(o *Options) { o.Model, o.TPU, o.GlobalBatch = "llama3-8b", "v6e-8", "64" }},
		{"8b two slices, fixed batch, accumulated", func(o *Options) { o.Model, o.TPU, o.Slices, o.GlobalBatch = "llama3-8b", "v5e-32", 2, "512" }},
		{"70b fixed batch, accumulated, MaxText", func(o *Options) {
			o.Model, o.TPU, o.GlobalBatch, o.Framework = "llama3-70b", "v6e-256", "2048", "maxtext"
		}},
		{"70b fixed remat and schedule", func(o *Options) {
			o.Model, o.TPU, o.Slices, o.Remat, o.Schedule = "llama3-70b", "v5p-64", 2, "full", "gpipe"
		}},
		{"mixtral one slice", func(o *Options) { o.Model, o.TPU = "mixtral-8x7b", "v5p-64" }},
		{"mixtral two slices", func(o *Options) { o.Model, o.TPU, o.Slices = "mixtral-8x7b", "v6e-32", 2 }},
		{"405b nothing runs", func(o *Options) { o.Model, o.TPU = "llama3-405b", "v5e-8" }},
	}
	beyond, none := 0, 0
	for _, c := range cases {
		o := DefaultOptions()
		o.Top = 1
		c.edit(&o)
		r, err := ParseRequest(o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		diff, b, n := leanDiff(r)
		if diff != "" {
			t.Errorf("%s: %s", c.name, diff)
		}
		if b {
			beyond++
		}
		if n {
			none++
		}
	}
	if beyond == 0 || none == 0 {
		t.Errorf("%d cases chose beyond the band and %d ran nothing, want some of each", beyond, none)
	}
}

// TestLeanWholeSweep compares the lean search with the full one on every
// configuration of issue 31's whole sweep (wholeSweep); run by hand with
// -lean-whole.
func TestLeanWholeSweep(t *testing.T) {
	if !*leanWhole {
		t.Skip("run with -lean-whole")
	}
	rs := wholeSweep(t)
	same, beyond := 0, 0
	for _, r := range rs {
		diff, b, _ := leanDiff(r)
		if diff != "" {
			t.Errorf("%s: %s", r.Multislice, diff)
			continue
		}
		same++
		if b {
			beyond++
		}
	}
	t.Logf("%d of %d configurations: the lean search's Best, Rule and Band are the full search's (%d chosen beyond the band)", same, len(rs), beyond)
}

// TestPairCeiling holds the ceilings a lean search skips combinations by
// (worker.hopeless) to what they bound: on a sample of the pipelined
// layouts of dense jobs, for every micro-batch count and remat policy,
// the ceiling with the least stretch of the schedules is at least the
// throughput of every schedule the search costs the layout with at every
// batch within the limit, and each schedule's own ceiling (at its
// Stretch) at least that schedule's; some schedules' own ceilings must
// be below the least stretch's, or they would skip nothing more. The
// ceiling with no remat (worker.noRematHopeless) must be at least every
// policy's throughput too, and near enough to skip: within 1.25 times the
// largest of the policies' own least-stretch ceilings in most cases.
func TestPairCeiling(t *testing.T) {
	n, lower, counts, near := 0, 0, 0, 0
	for _, c := range []struct {
		model, tpu string
		slices     int
	}{{"llama3-70b", "v5p-64", 2}, {"llama3-8b", "v6e-32", 4}, {"gemma2-9b", "v5e-32", 1}, {"qwen3-32b", "tpu7x-64", 2}} {
		w, r := testWorker(t, c.model, c.tpu, c.slices)
		for _, m := range pipelined(r, 40) {
			w.family.ok = false // the last layout's (as worker.layout starts)
			p := m.Size(mesh.Pipeline)
			scheds := w.schedules(p)
			for _, mb := range []int{p, 2 * p, 4 * p, 8 * p} {
				lo, hi := w.batchRange(&m, mb)
				var st stretches
				bn, ok := w.pairMemory(&m, scheds, mb, cost.RematNone, &st)
				if !ok || hi < lo {
					continue
				}
				none, largest := bn.RangeCeiling(lo, hi, st.least), 0.0
				counts++
				for _, rm := range rematsFor(&r) {
					var st stretches
					bm, ok := w.pairMemory(&m, scheds, mb, rm, &st)
					if !ok || hi < lo {
						continue
					}
					least := bm.RangeCeiling(lo, hi, st.least)
					largest = max(largest, least)
					var own [maxHopelessScheds]float64
					for si := range scheds {
						own[si] = bm.RangeCeiling(lo, hi, st.of[si])
						if own[si] < least {
							lower++
						}
					}
					n++
					for si, sc := range scheds {
						j := combo{sc.k, sc.v, mb, rm, false}.job(r)
						for b := lo; b <= hi; b += max(lo, (hi-lo)/lo/16*lo) {
							j.GlobalBatch = b
							bd, err := w.est.Bound(j, m)
							if err != nil {
								continue
							}
							if tp := w.est.Throughput(&bd); tp > least || tp > own[si] || tp > none {
								t.Errorf("%s on %s, %d micro-batches, %s, %s with %d chunks, batch %d: throughput %v above the ceiling %v, the schedule's own %v or no remat's %v",
									c.model, m, mb, rm, sc.k, sc.v, b, tp, least, own[si], none)
							}
						}
					}
				}
				if none <= 1.25*largest {
					near++
				}
			}
		}
	}
	t.Logf("%d ceilings, %d own below; %d counts, no remat's within 1.25 times the policies' in %d", n, lower, counts, near)
	if n < 300 || lower < n/4 {
		t.Errorf("%d ceilings checked, %d schedules' own below the least stretch's, want at least 300 and a quarter as many", n, lower)
	}
	if counts < 100 || near < counts/2 {
		t.Errorf("no remat's ceiling within 1.25 times the policies' in %d of %d micro-batch counts, want at least half of at least 100", near, counts)
	}
}

// TestNoRematCeilingUnpipelined holds the ceiling with no remat that a
// lean search marks a layout without a pipeline hopeless by
// (worker.noRematHopeless) to every policy's throughput at every batch
// within the limit, on a sample of such layouts of dense jobs.
func TestNoRematCeilingUnpipelined(t *testing.T) {
	n := 0
	for _, c := range []struct {
		model, tpu string
		slices     int
	}{{"llama3-70b", "v5p-64", 2}, {"llama3-8b", "v6e-32", 4}, {"gemma2-9b", "v5e-32", 1}} {
		w, r := testWorker(t, c.model, c.tpu, c.slices)
		all := unpipelined(r)
		for i := 0; i < len(all); i += max(1, len(all)/40) {
			m := all[i]
			w.family.ok = false // the last layout's (as worker.layout starts)
			scheds := w.schedules(1)
			lo, hi := w.batchRange(&m, 1)
			var st stretches
			bn, ok := w.pairMemory(&m, scheds, 1, cost.RematNone, &st)
			if !ok || hi < lo {
				continue
			}
			none := bn.RangeCeiling(lo, hi, st.least)
			n++
			for _, rm := range rematsFor(&r) {
				j := combo{scheds[0].k, scheds[0].v, 1, rm, false}.job(r)
				for b := lo; b <= hi; b += max(lo, (hi-lo)/lo/16*lo) {
					j.GlobalBatch = b
					bd, err := w.est.Bound(j, m)
					if err != nil {
						continue
					}
					if tp := w.est.Throughput(&bd); tp > none {
						t.Errorf("%s on %s, %s, batch %d: throughput %v above no remat's ceiling %v", c.model, m, rm, b, tp, none)
					}
				}
			}
		}
	}
	if n < 60 {
		t.Errorf("%d layouts checked, want at least 60", n)
	}
}

// unpipelined is the layouts a search of r costs without a pipeline axis.
func unpipelined(r Request) []mesh.Mesh {
	ms := r.Multislice
	free := searchAxes(&r)
	var all []mesh.Mesh
	for _, dn := range factorizationsOver(ms.Slices, free) {
		for _, in := range factorizationsOver(ms.Slice.Chips(), free) {
			if in[mesh.Pipeline]*dn[mesh.Pipeline] != 1 {
				continue
			}
			var degrees []mesh.Degree
			for _, a := range mesh.All() {
				degrees = append(degrees, mesh.Degree{Axis: a, ICI: in[a], DCN: dn[a]})
			}
			if m, err := mesh.New(ms, degrees...); err == nil {
				all = append(all, m)
			}
		}
	}
	return all
}

// pipelined is up to n of the layouts a search of r costs with a pipeline
// axis, spread evenly over its factorizations.
func pipelined(r Request, n int) []mesh.Mesh {
	ms := r.Multislice
	free := searchAxes(&r)
	var all []mesh.Mesh
	for _, dn := range factorizationsOver(ms.Slices, free) {
		for _, in := range factorizationsOver(ms.Slice.Chips(), free) {
			if in[mesh.Pipeline]*dn[mesh.Pipeline] == 1 || r.Model.Layers%(in[mesh.Pipeline]*dn[mesh.Pipeline]) != 0 {
				continue
			}
			var degrees []mesh.Degree
			for _, a := range mesh.All() {
				degrees = append(degrees, mesh.Degree{Axis: a, ICI: in[a], DCN: dn[a]})
			}
			if m, err := mesh.New(ms, degrees...); err == nil {
				all = append(all, m)
			}
		}
	}
	var out []mesh.Mesh
	for i := 0; i < len(all); i += max(1, len(all)/n) {
		out = append(out, all[i])
	}
	return out
}

// TestLeanFixesAreTheFulls checks that a lean search nothing runs on
// says what the full search says (its error, with the fixes, each of
// whose searches is lean: search), not searching again in full:
// on jobs that do not fit their slices, some with fixes, one with none.
func TestLeanFixesAreTheFulls(t *testing.T) {
	withFixes := 0
	for _, c := range []struct {
		model, tpu string
		slices     int
		seq        int
	}{
		{"llama3-70b", "v6e-32", 1, 8192},
		{"llama3-70b", "v5litepod-16", 1, 0},
		{"llama3-70b", "v5litepod-16", 2, 0},
		{"llama3-405b", "v5p-64", 1, 0},
		{"llama3-405b", "v5litepod-4", 1, 0},
	} {
		o := DefaultOptions()
		o.Model, o.TPU, o.Slices, o.Top = c.model, c.tpu, c.slices, 1
		r, err := ParseRequest(o)
		if err != nil {
			t.Fatal(err)
		}
		if c.seq > 0 {
			r.Seq = c.seq
		}
		_, errFull := Search(r)
		var none *NoPlanError
		if !errors.As(errFull, &none) {
			t.Fatalf("%s on %d x %s: error %v, want a NoPlanError", c.model, c.slices, c.tpu, errFull)
		}
		if len(none.Fixes) > 0 {
			withFixes++
		}
		r.BestOnly = true
		if _, errLean := Search(r); errString(errLean) != errString(errFull) || !reflect.DeepEqual(errLean, errFull) {
			t.Errorf("%s on %d x %s: lean error %v, want %v", c.model, c.slices, c.tpu, errLean, errFull)
		}
	}
	if withFixes < 2 {
		t.Errorf("%d jobs with fixes, want at least 2", withFixes)
	}
}

// testWorker is a worker, with an estimator of its own, for the default
// request of model on slices slices of tpu, its defaults filled in as a
// search fills them, and the request.
func testWorker(t *testing.T, model, tpu string, slices int) (*worker, Request) {
	t.Helper()
	o := DefaultOptions()
	o.Model, o.TPU, o.Slices = model, tpu, slices
	r, err := ParseRequest(o)
	if err == nil {
		err = r.defaults()
	}
	if err != nil {
		t.Fatal(err)
	}
	job := r.job()
	return &worker{req: r, job: job, cur: job, est: cost.NewEstimator()}, r
}
