package plan

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shardlab/hw"
	"shardlab/internal/cputime"
)

// wholeSweep is the configurations of issue 31's whole sweep, as budget's
// BenchmarkSweepWhole plans them (budget.Request.configs): Llama 3 70B at
// the planner's defaults, its best plan only, on every slice size any of
// v4, v5e, v5p, v6e and TPU7x has, 1 to 4 slices, where the generation
// has a training slice of that size and, for more than one, DCN.
func wholeSweep(tb testing.TB) []Request {
	tb.Helper()
	o := DefaultOptions()
	o.Model, o.Top = "llama3-70b", 1
	base, err := ParseRequest(o)
	if err != nil {
		tb.Fatal(err)
	}
	gens := []hw.Generation{hw.V4, hw.V5e, hw.V5p, hw.V6e, hw.TPU7x}
	sizes, err := hw.SliceSizes(gens...)
	if err != nil {
		tb.Fatal(err)
	}
	var out []Request
	for _, g := range gens {
		c, _ := hw.Lookup(string(g))
		for _, chips := range sizes {
			s, err := hw.ParseAcceleratorType(c.AcceleratorType(chips))
			if err != nil || chips > c.MaxSliceChips || chips < c.Host.Chips {
				continue
			}
			for n := 1; n <= 4; n++ {
				ms, err := hw.NewMultislice(s, n, 0)
				if err != nil || n > 1 && c.DCNPerChip == 0 {
					continue
				}
				r := base
				r.Multislice, r.Workers = ms, 1
				out = append(out, r)
			}
		}
	}
	return out
}

// planSweep plans every request with plan (each search on one worker, as
// budget's sweep plans them), the requests side by side on GOMAXPROCS
// goroutines sharing one Cache, and returns how many layouts they
// evaluated.
func planSweep(tb testing.TB, rs []Request, plan func(Request) (Plan, error)) int {
	cache := new(Cache)
	var next, evaluated atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(rs)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(rs); i = int(next.Add(1) - 1) {
				r := rs[i]
				r.Cache = cache
				p, _ := plan(r) // a configuration nothing runs on is a row budget drops
				evaluated.Add(int64(p.Evaluated))
			}
		})
	}
	wg.Wait()
	return int(evaluated.Load())
}

// BenchmarkSweepWholeConfigs plans the configurations of issue 31's
// whole sweep (wholeSweep) in each iteration twice under the same load:
// with the search, and with the search as it was before it rejected in
// one step what has no batch within the limit (searcher.bulk unset), each
// configuration's search without the fixes Search looks for when nothing
// runs. It reports the search's configurations per second and seconds
// per sweep, the reference's, and how many times faster the search is, in
// wall time and, where the process's CPU time is read, in CPU time.
func BenchmarkSweepWholeConfigs(b *testing.B) {
	rs := wholeSweep(b)
	unbulked := func(r Request) (Plan, error) {
		if err := r.defaults(); err != nil {
			return Plan{}, err
		}
		return searchWith(r, (*worker).layout, false)
	}
	var t, tRef, cpu, cpuRef time.Duration
	for b.Loop() {
		t0, c0 := time.Now(), cputime.Self()
		n := planSweep(b, rs, search)
		t1, c1 := time.Now(), cputime.Self()
		if nRef := planSweep(b, rs, unbulked); nRef != n {
			b.Fatalf("the search evaluated %d layouts, the reference %d", n, nRef)
		}
		t, tRef = t+t1.Sub(t0), tRef+time.Since(t1)
		cpu, cpuRef = cpu+c1-c0, cpuRef+cputime.Self()-c1
	}
	reportAgainst(b, len(rs), "ref", "reference", t, tRef, cpu, cpuRef)
}

// reportAgainst reports configs configurations per iteration planned in
// wall time t and CPU time cpu against a reference's tRef and cpuRef:
// configurations per second and seconds per sweep of each (the
// reference's prefixed ref), and how many times faster the search is
// (x-than), in CPU time too where the process's CPU time is read.
func reportAgainst(b *testing.B, configs int, ref, than string, t, tRef, cpu, cpuRef time.Duration) {
	b.ReportMetric(float64(configs*b.N)/t.Seconds(), "configs/s")
	b.ReportMetric(t.Seconds()/float64(b.N), "s/sweep")
	b.ReportMetric(tRef.Seconds()/float64(b.N), ref+"-s/sweep")
	b.ReportMetric(tRef.Seconds()/t.Seconds(), "x-"+than)
	if cpu > 0 {
		b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/sweep")
		b.ReportMetric(cpuRef.Seconds()/float64(b.N), ref+"-cpu-s/sweep")
		b.ReportMetric(cpuRef.Seconds()/cpu.Seconds(), "x-"+than+"-cpu")
	}
}

// BenchmarkSweepWholeLean plans the configurations of issue 31's whole
// sweep (wholeSweep) in each iteration twice under the same load: with
// the lean search budget plans them with (Request.BestOnly), and with the
// full search. It reports the lean search's configurations per second and
// seconds per sweep, the full search's, and how many times faster the
// lean search is, in wall time and, where the process's CPU time is read,
// in CPU time.
func BenchmarkSweepWholeLean(b *testing.B) {
	rs := wholeSweep(b)
	lean := func(r Request) (Plan, error) {
		r.BestOnly = true
		return Search(r)
	}
	var t, tRef, cpu, cpuRef time.Duration
	for b.Loop() {
		t0, c0 := time.Now(), cputime.Self()
		planSweep(b, rs, lean)
		t1, c1 := time.Now(), cputime.Self()
		planSweep(b, rs, Search)
		t, tRef = t+t1.Sub(t0), tRef+time.Since(t1)
		cpu, cpuRef = cpu+c1-c0, cpuRef+cputime.Self()-c1
	}
	reportAgainst(b, len(rs), "full", "full", t, tRef, cpu, cpuRef)
}
