package systolic

import (
	"math/rand/v2"
	"testing"
)

func TestWaveClosedFormEqualsLoops(t *testing.T) {
	// Every cycle of every stream of small folds, and every run of cycles:
	// the interval-length formulas equal the loops over rows and columns.
	for sr := 1; sr <= 9; sr++ {
		for sc := 1; sc <= 9; sc++ {
			for T := 1; T <= 12; T++ {
				n := sr + sc + T - 2
				var sum wave
				for tau := -2; tau < n+2; tau++ {
					got := waveAt(int64(tau), int64(sr), int64(sc), int64(T))
					want := waveLoops(tau, sr, sc, T)
					if got != want {
						t.Fatalf("waveAt(τ=%d, sr=%d, sc=%d, T=%d) = %+v, want %+v", tau, sr, sc, T, got, want)
					}
					if tau >= 0 {
						sum = wave{sum.macs + want.macs, sum.edgeRows + want.edgeRows, sum.edgeCols + want.edgeCols, sum.outs + want.outs}
					}
					if tau >= 0 && tau < n {
						if got := waveOver(0, int64(tau)+1, int64(sr), int64(sc), int64(T)); got != sum {
							t.Fatalf("waveOver(0, %d, sr=%d, sc=%d, T=%d) = %+v, want %+v", tau+1, sr, sc, T, got, sum)
						}
					}
				}
				// a whole stream does every MAC and moves every element once
				all := waveOver(0, int64(n), int64(sr), int64(sc), int64(T))
				if want := (wave{int64(sr * sc * T), int64(sr * T), int64(sc * T), int64(sc * T)}); all != want {
					t.Fatalf("stream of sr=%d sc=%d T=%d: %+v, want %+v", sr, sc, T, all, want)
				}
			}
		}
	}
}

func TestWaveOverRandomRuns(t *testing.T) {
	// Runs [lo, hi) inside large folds, summed by the loops cycle by cycle.
	rng := rand.New(rand.NewPCG(5, 6))
	for range 300 {
		sr, sc, T := 1+rng.IntN(300), 1+rng.IntN(300), 1+rng.IntN(700)
		n := sr + sc + T - 2
		lo := rng.IntN(n)
		hi := lo + rng.IntN(n-lo+1)
		var want wave
		for tau := lo; tau < hi; tau++ {
			w := waveLoops(tau, sr, sc, T)
			want = wave{want.macs + w.macs, want.edgeRows + w.edgeRows, want.edgeCols + w.edgeCols, want.outs + w.outs}
		}
		if got := waveOver(int64(lo), int64(hi), int64(sr), int64(sc), int64(T)); got != want {
			t.Fatalf("waveOver(%d, %d, sr=%d, sc=%d, T=%d) = %+v, want %+v", lo, hi, sr, sc, T, got, want)
		}
	}
}

func TestWaveLargest(t *testing.T) {
	// The largest fold and stream the inputs allow stay inside int64: a
	// whole stream still counts sr·sc·T MACs.
	sr, sc, T := int64(4096), int64(4096), int64(MaxDim)
	if got, want := waveOver(0, sr+sc+T-2, sr, sc, T).macs, sr*sc*T; got != want {
		t.Errorf("MACs of a 4096x4096 fold streaming %d = %d, want %d", T, got, want)
	}
}

// stepAll steps s to the end one cycle at a time, recording each cycle's
// MACs.
func stepAll(s *Sim) []int {
	var macs []int
	s.Observe = func(_ int64, _ int, _ string, n int) { macs = append(macs, n) }
	for s.Step() {
	}
	return macs
}

func TestSimulatorEqualsReference(t *testing.T) {
	// The simulator three ways on random arrays, GEMMs, buffers and HBM
	// bandwidths (so with stalls): the reference (loops per cycle, one
	// cycle per Step), Step with closed-form counts (one cycle per Step),
	// and Simulate (which skips runs of cycles). Results are equal field by
	// field, and the per-cycle MACs of the first two equal cycle by cycle.
	rng := rand.New(rand.NewPCG(7, 8))
	for n := range 400 {
		a := Array{
			Rows: 1 + rng.IntN(24), Cols: 1 + rng.IntN(24), Dataflow: dataflows[rng.IntN(3)],
			DoubleBuffer: rng.IntN(2) == 0, ElementBytes: 1 + rng.IntN(4),
		}
		if rng.IntN(3) == 0 {
			a.BufferBytes = int64(rng.IntN(20000))
		}
		if rng.IntN(2) == 0 {
			a.HBMBytesPerCycle = 0.25 + rng.Float64()*float64(rng.IntN(300))
		}
		g := GEMM{M: 1 + rng.IntN(150), K: 1 + rng.IntN(150), N: 1 + rng.IntN(150)}
		ref, err := NewSim(a, g)
		if err != nil {
			t.Fatal(err)
		}
		ref.reference = true
		refMACs := stepAll(ref)
		step, _ := NewSim(a, g)
		stepMACs := stepAll(step)
		fast, err := Simulate(a, g)
		if err != nil {
			t.Fatal(err)
		}
		if ref.Result() != step.Result() || ref.Result() != fast {
			t.Fatalf("case %d %+v %+v:\nreference %+v\nstep      %+v\nsimulate  %+v", n, a, g, ref.Result(), step.Result(), fast)
		}
		if len(refMACs) != len(stepMACs) {
			t.Fatalf("case %d: %d observed cycles, reference %d", n, len(stepMACs), len(refMACs))
		}
		for c := range refMACs {
			if refMACs[c] != stepMACs[c] {
				t.Fatalf("case %d cycle %d: %d MACs, reference %d", n, c, stepMACs[c], refMACs[c])
			}
		}
	}
}

// BenchmarkSimulate128 runs a 1024³ GEMM on a 128x128 weight-stationary
// array (about 82k cycles) three ways in the same run: the reference
// simulator (loops over the fold's rows and columns every cycle, one cycle
// per Step), Step with closed-form counts (one cycle per Step, as traces
// use it), and Simulate (which skips the runs of cycles that only add to
// counters). step and simulate report how many times faster than the
// reference measured just before them they are (x-reference).
func BenchmarkSimulate128(b *testing.B) {
	a := Array{Rows: 128, Cols: 128, Dataflow: WeightStationary, DoubleBuffer: true, ElementBytes: 2}
	g := GEMM{M: 1024, K: 1024, N: 1024}
	stepped := func(reference bool) Result {
		s, err := NewSim(a, g)
		if err != nil {
			b.Fatal(err)
		}
		s.reference = reference
		for s.Step() {
		}
		return s.Result()
	}
	ways := []struct {
		name string
		run  func() Result
	}{
		{"reference", func() Result { return stepped(true) }},
		{"step", func() Result { return stepped(false) }},
		{"simulate", func() Result {
			r, err := Simulate(a, g)
			if err != nil {
				b.Fatal(err)
			}
			return r
		}},
	}
	var refNsPerOp float64
	for _, w := range ways {
		b.Run(w.name, func(b *testing.B) {
			var r Result
			for b.Loop() {
				r = w.run()
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(ns/float64(r.Cycles), "ns/cycle")
			b.ReportMetric(float64(r.Cycles)/ns*1e9, "simulated-cycles/s")
			if w.name == "reference" {
				refNsPerOp = ns
			} else if refNsPerOp > 0 {
				b.ReportMetric(refNsPerOp/ns, "x-reference")
			}
		})
	}
}

func TestSimulateSkipsLikeTheReference128(t *testing.T) {
	// A few GEMMs on the TPU's 128x128 array with partial folds, a tight
	// buffer and HBM stalls: Simulate, skipping, equals the reference.
	for _, c := range []struct {
		a Array
		g GEMM
	}{
		{Array{Rows: 128, Cols: 128, Dataflow: WeightStationary, DoubleBuffer: true, ElementBytes: 2, HBMBytesPerCycle: 197.4}, GEMM{M: 1000, K: 300, N: 200}},
		{Array{Rows: 128, Cols: 128, Dataflow: InputStationary, DoubleBuffer: true, ElementBytes: 2, HBMBytesPerCycle: 40, BufferBytes: 1 << 16}, GEMM{M: 333, K: 257, N: 129}},
		{Array{Rows: 128, Cols: 128, Dataflow: OutputStationary, ElementBytes: 2, HBMBytesPerCycle: 64}, GEMM{M: 300, K: 500, N: 140}},
		{Array{Rows: 128, Cols: 96, Dataflow: WeightStationary, ElementBytes: 1}, GEMM{M: 17, K: 1000, N: 97}},
	} {
		ref, err := NewSim(c.a, c.g)
		if err != nil {
			t.Fatal(err)
		}
		ref.reference = true
		ref.finish()
		got, _ := Simulate(c.a, c.g)
		if got != ref.Result() {
			t.Errorf("%+v %+v:\nSimulate  %+v\nreference %+v", c.a, c.g, got, ref.Result())
		}
	}
}
