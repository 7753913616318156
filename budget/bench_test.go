package budget

import (
	"strings"
	"testing"

	"shardlab/hw"
	"shardlab/internal/cputime"
	"shardlab/plan"
)

// benchRequest is the default sweep of `shardlab budget --model
// llama3-70b --tokens 1T`: v5e, v5p, v6e and TPU7x, 256-chip slices, 1, 2
// or 4 of them, every mode, with a test price for every generation and
// mode so that every configuration is planned and priced.
func benchRequest(b *testing.B) Request {
	b.Helper()
	return pricedRequest(b, "llama3-70b", []hw.Generation{hw.V5e, hw.V5p, hw.V6e, hw.TPU7x})
}

// pricedRequest is model at 1T tokens in us-central1 on gens, every mode,
// each generation and mode at a test price of $1 a chip-hour.
func pricedRequest(tb testing.TB, model string, gens []hw.Generation) Request {
	tb.Helper()
	var csv strings.Builder
	csv.WriteString(header)
	for _, g := range gens {
		for _, m := range modes {
			csv.WriteString(string(g) + "," + string(m) + ",*,1,bench,2026-12-05,\n")
		}
	}
	ps, err := ParsePrices(strings.NewReader(csv.String()), testToday)
	if err != nil {
		tb.Fatal(err)
	}
	return Request{Plan: planRequest(tb, model), Tokens: 1e12, Region: "us-central1", Generations: gens, Modes: modes, Prices: ps}
}

// planRequest is the planner's default request for model, its best plan
// only.
func planRequest(tb testing.TB, model string) plan.Request {
	tb.Helper()
	o := plan.DefaultOptions()
	o.Model, o.Top = model, 1
	pr, err := plan.ParseRequest(o)
	if err != nil {
		tb.Fatal(err)
	}
	return pr
}

// BenchmarkSweep times the default sweep (issue 31: well under 2 s on the
// development machine) and reports it as configurations (generation ×
// slice × count) and rows (× mode) per second, seconds per sweep and,
// where the process's CPU time is read, CPU seconds per sweep (steadier
// than wall time on a shared machine). The configurations are planned on
// GOMAXPROCS goroutines (Request.planAll): -cpu 1,2 compares one and two.
func BenchmarkSweep(b *testing.B) {
	r := benchRequest(b)
	var res Result
	c0 := cputime.Self()
	for b.Loop() {
		var err error
		if res, err = Sweep(r); err != nil {
			b.Fatal(err)
		}
	}
	if cpu := cputime.Self() - c0; c0 > 0 {
		b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/sweep")
	}
	configs := len(r.Generations) * len(DefaultSliceChips) * len(DefaultSliceCounts)
	b.ReportMetric(float64(configs*b.N)/b.Elapsed().Seconds(), "configs/s")
	b.ReportMetric(float64(len(res.Rows)*b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/sweep")
}

// wholeRequest is the whole sweep of issue 31: v4, v5e, v5p, v6e and
// TPU7x, every slice size each has (hw.Chip.AcceleratorTypes), 1 to 4
// slices, every mode, priced as benchRequest. It returns the request,
// checked but for MaxConfigs, and how many configurations it plans.
func wholeRequest(tb testing.TB) (Request, int) {
	tb.Helper()
	gens := []hw.Generation{hw.V4, hw.V5e, hw.V5p, hw.V6e, hw.TPU7x}
	r := pricedRequest(tb, "llama3-70b", gens)
	sizes, err := hw.SliceSizes(gens...)
	if err != nil {
		tb.Fatal(err)
	}
	r.SliceChips, r.SliceCounts = sizes, []int{1, 2, 3, 4}
	if r.Limits, err = DefaultLimits(); err != nil {
		tb.Fatal(err)
	}
	configs := 0
	for _, g := range gens {
		c, _ := hw.Lookup(string(g))
		cfgs, _ := r.configs(c)
		configs += len(cfgs)
	}
	return r, configs
}

// BenchmarkSweepWhole times the whole sweep of issue 31 (wholeRequest),
// reported as BenchmarkSweep reports the default one. plan's
// BenchmarkSweepWholeConfigs plans the same configurations with the search
// and, in the same run, with the search trying every combination, and
// reports how many times faster the search is (x-reference). Measured on
// the shared two-core development machine on 2026-12-06, three runs each
// in one session: about 9.5 CPU seconds a sweep (6.3 to 11 s of wall time
// as the other load varied), against 16 (11.7 to 18.2 s) before the
// ceilings exposed the collectives; keeping a layout's shape work
// between its schedules (cost.BatchMemory.Reschedule) then took about 7 %
// off (9.2 to 11.3 CPU seconds against 9.8 to 11.8, three runs each,
// interleaved in a later, busier session). On 2026-12-07, sharing the
// pipeline simulations between estimators and costing the plans' notes
// with the cache's (158 simulations a sweep against 1,270), remembering
// the schedules' stretches, leaving a memory's stage bases until a batch
// is weighed, returning a lean search's error where nothing runs without
// searching again, and costing a sample of the layouts first (1.55 million
// combinations tried against 1.73) took 11 to 15 % off (each set's mean)
// in three sets of three runs each, interleaved with main's, under a load
// average of 13 to 19 on the two cores: 7.6, 7.7 and 8.4 CPU seconds
// against 8.7, 9.5 and 9.7; 9.0, 9.9 and 10.8 against 10.5, 10.8 and 12.0;
// 9.6, 11.1 and 11.4 against 11.9, 12.3 and 13.1 (wall 19 to 47 s for
// both, as the load moved). Later on 2026-12-07, skipping a layout whose
// state alone exceeds the usable HBM before any ceiling
// (cost.BatchMemory.StateExceeds) and weighing the exposure's ceiling
// only where the collectives' floor's does not outclass
// (cost.BatchMemory.RangeCeilingBelow) took 10 to 18 % off (each set's
// mean) in three sets interleaved with main's: 5.96 to 7.37 CPU seconds
// against 6.77 to 7.48, 6.91 to 8.41 against 7.40 to 10.55, 7.41 to 8.78
// against 8.93 to 10.38. Later still on 2026-12-07, keeping a layout's
// least parameters, compute floors and collectives' floors across its
// schedules (cost.BatchMemory.Reschedule) and weighing the compute's
// ceiling before the collectives' (cost.BatchMemory.RangeCeilingBelow)
// took about 2 % off, within the noise: 8.09 CPU seconds against 8.26
// (medians of five runs each, interleaved, benchstat p=0.14, load
// average 0.4 to 3.7). A bound on whole groups of layouts (those sharing
// tensor, context, pipeline and data×fsdp) does not pay, as measured
// with throwaway instrumentation on 2026-12-07: of the 844,120 meshes a
// sweep costs, 674,765 are wholly hopeless (worker.hopeless), but the
// compute's ceiling alone dismisses 34,263 of them even mesh by mesh, and
// with tensor's, context's and the stage sends' collectives at each
// mesh's own links 81,803; the tightest bound of commCeiling's form on a
// group, its members' largest, 237,266; and skipping for free, before
// mesh.New, every group all of whose members are hopeless (485,673
// meshes) gave 5.0 to 5.4 CPU seconds against 7.1 to 8.1, and skipping
// every hopeless mesh 4.8 to 5.1: the rest is the costed layouts, the
// fixes and the enumeration. Knowing each search's final bars from its
// start (seeding the fastest) took 4 % off. Later on 2026-12-07, not
// allocating errors.As's target for every memory a search weighs
// (plan's worker.memory), reusing the searches' batch buffers (plan.Cache)
// and keeping a layout's stage parameters for every layout of its ends in
// one entry, the last one compared before the map's look-up
// (cost.Estimator.setParamsEnds), took 5 to 8 % off: 7.57, 8.52 and
// 7.68 CPU seconds against main's 8.00, 9.23 and 8.30 (medians of five
// runs each, in three sets interleaved with main's, load average 4 to
// 13), and 4.4 million allocations (1.13 GB) a sweep to 2.5 million
// (0.73 GB). Later on 2026-12-07 the work configurations could share
// was measured with throwaway instrumentation. Of the 797,104 meshes a
// sweep's searches cost (fixes aside), 243,536 are distinct in
// generation and size on each axis: 69 % recur, 38 % within one
// multislice search (the layouts that split the same sizes) and the rest
// in another configuration of the same generation and chips. Only what
// reads the sizes alone recurs (the shape, the state, the compute's
// floor, the memory): a mesh's collectives read which of its factors
// cross DCN, and the sizes and the slice count fix the slice, so the
// collectives' floor, on which nearly every dismissal rests, is never the
// same in two configurations. Sharing the compute's floors across the
// searches in one map (by generation, sizes, micro-batches, policy and
// dispatch) cost more than it saved, 8.2 to 8.7 CPU seconds against 6.6
// to 7.8 (four runs each, interleaved): a map that large misses the
// caches. Costing the layouts of the same sizes one after another, the
// first one's memory kept for the next (only the mesh and its
// collectives changed), took 9.9 CPU seconds against 8.6 (medians of
// five): the order the lean search's bars rise in matters more. One
// ceiling over a pipelined layout's every micro-batch count (the least
// stretch of any count, the fewest micro-batches' floors) dismissed
// 374,427 of the 549,229 layouts it was weighed on, but saved nothing
// (8.0 against 7.8): within the batch limit most large pipelined layouts
// have one count. The small configurations nothing runs on spend their
// time in the fixes (41 configurations, 0.49 of 6.8 s: eleven lean
// searches each). Where the time goes, on one goroutine: 648,258 layouts
// dismissed whole by the ceilings, about 4.3 µs each (2.8 s); 134,468 in
// part (1.2 s); the combinations tried, 2.2 s (513,467 rejected for
// memory, 285,688 costed in full). In worker.hopeless the collectives'
// tally (cost.Estimator.commParts) and the compute's floor are a third;
// the memory's machinery around them (Reset, stage, Reschedule, the
// shape at each batch) and mesh.New are the rest, so a way of weighing a
// layout's ceilings without a BatchMemory is where a large saving is
// left. What paid: working a dense model's stage parameters out from its
// parameter count and its dense layer (cost.Estimator.endsParams) in
// place of a map of 21,603 shapes, 7.68 CPU seconds against 8.14
// (medians of six runs, one sweep each, interleaved with main's, load
// average 7 to 8) and 7.33 against 7.65 (five runs of two sweeps). On
// 2026-12-08, counted with throwaway instrumentation: worker.hopeless
// weighs 809,233 layouts (571,000 pipelined), 26,507 of them dropped by
// their state alone, 648,258 whole by the ceilings, 134,468 in part; of
// their 1.44 million micro-batch counts the no-remat ceiling dismisses
// 1.21 million, and 582,000 policies are weighed one by one. Of the 2.61
// million ranges RangeCeilingBelow weighed, the compute's ceiling
// dismissed 252,000, the collectives' floor's 985,000 (494,000 of them
// now by layoutCeiling, below), the exposure's 667,000 and none 706,000;
// main worked out 2.17 million collectives' floors (1.59 million at a
// range's largest batch). What paid, each step a few per cent, and
// together about 11 % on one goroutine (a sweep of v5p and TPU7x slices
// of 64 to 256 chips, one, two or four of them, GOMAXPROCS=1, eight runs
// of three sweeps each, interleaved: minimum and median 0.142 and 0.157
// CPU seconds a sweep against main's 0.161 and 0.176) and about 6 % on
// the whole sweep (ten runs each, interleaved with main's, in two sets
// under a load average of 4 to 9: 6.60, 6.76, 6.81, 7.27, 7.60, 7.78,
// 7.99, 8.09, 8.13 and 8.74 CPU seconds against 6.98, 7.03, 7.12, 7.17,
// 8.03, 8.30, 8.32, 8.51, 8.97 and 9.49; medians 7.69 and 8.17): a fourth
// range ceiling (cost.BatchMemory.layoutCeiling) from the collectives no
// batch, micro-batch count or policy changes (the data-parallel
// all-reduce and FSDP's gathers and reduce-scatters, worked out once a
// layout), weighed before commCeiling's full tally, dismissing 494,000
// of the ranges commCeiling had; StateExceeds weighing the stages' state
// alone (cost.Job.stageState), not every stage's base; a rescheduled
// memory checking its spec by the estimator's count of specs
// (cost.Estimator.specs), not by comparing model.Spec; a layout's layer
// shapes remembered by policy (cost.BatchMemory.layer), not looked up in
// the estimator's map each time; the collectives' floor taking the shape
// at one sequence per shard with its micro-batch set, not setBatch's
// footprint. What did not pay: extending layoutCeiling with the
// tensor-parallel collectives at the range's least batch (their bytes
// grow with the batch, so it is still a floor at every batch; of
// commCeiling's dismissals, the tensor-parallel collectives' share was
// four fifths of the floor) and with exposedCeiling's mixtures over
// those fixed parts dismissed 1.20 million ranges against 494,000, but a
// tensor-parallel collective and nine mixtures on every range cost about
// as much as the full tallies it saved, about half a microsecond each:
// 8.08 to 8.62 CPU seconds against 7.89 to 8.59 without it (three runs
// each, interleaved); and keying the collectives' memo without the policy's
// flags where neither tensor nor context is split (2,166,000 tallies
// against 2,171,000). What is left is per layout and per micro-batch
// count: a layout's Reset (its shape, its layer, its stage parameters)
// and mesh.New, and for each count a Reschedule, a compute floor and,
// for most, a full tally; no step of it is more than a tenth of the
// time. Issue 31 asks for well under 2 s.
func BenchmarkSweepWhole(b *testing.B) {
	r, configs := wholeRequest(b)
	var res Result
	c0 := cputime.Self()
	for b.Loop() {
		var err error
		if res, err = r.sweep(); err != nil {
			b.Fatal(err)
		}
	}
	if cpu := cputime.Self() - c0; c0 > 0 {
		b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/sweep")
	}
	b.ReportMetric(float64(configs*b.N)/b.Elapsed().Seconds(), "configs/s")
	b.ReportMetric(float64(len(res.Rows)*b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/sweep")
}
