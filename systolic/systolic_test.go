package systolic

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"shardlab/internal/golden"
)

var dataflows = []Dataflow{WeightStationary, OutputStationary, InputStationary}

func TestSimulatorEqualsClosedForm(t *testing.T) {
	// Property test: the cycle-level simulator and SCALE-Sim's closed form
	// agree on cycles, MACs, buffer accesses and HBM bytes for hundreds of
	// random shapes, arrays, dataflows and buffer sizes.
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 400 {
		a := Array{
			Rows: 1 + rng.IntN(24), Cols: 1 + rng.IntN(24), Dataflow: dataflows[rng.IntN(3)],
			DoubleBuffer: rng.IntN(2) == 0, ElementBytes: 1 + rng.IntN(4),
		}
		if rng.IntN(3) == 0 {
			a.BufferBytes = int64(rng.IntN(20000))
		}
		g := GEMM{M: 1 + rng.IntN(150), K: 1 + rng.IntN(150), N: 1 + rng.IntN(150)}
		sim, err := Simulate(a, g)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := ClosedForm(a, g)
		if err != nil {
			t.Fatal(err)
		}
		if sim.Cycles != cf.Cycles || sim.MACs != cf.MACs || sim.MACs != g.MACs() || sim.Buffer != cf.Buffer ||
			sim.HBMReadBytes != cf.HBMReadBytes || sim.HBMWriteBytes != cf.HBMWriteBytes || sim.LoadStalls != cf.LoadStalls || sim.Folds != cf.Folds {
			t.Fatalf("case %d %+v %+v:\nsim    %+v\nclosed %+v", n, a, g, sim, cf)
		}
	}
}

func TestRunIsTheGroundTruth(t *testing.T) {
	// Register by register, the array computes A·B exactly (small integers
	// keep float sums exact) in the closed form's cycles.
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 150 {
		a := Array{Rows: 1 + rng.IntN(5), Cols: 1 + rng.IntN(5), Dataflow: dataflows[rng.IntN(3)]}
		g := GEMM{M: 1 + rng.IntN(9), K: 1 + rng.IntN(9), N: 1 + rng.IntN(9)}
		A, B := randMatrix(rng, g.M, g.K), randMatrix(rng, g.K, g.N)
		C, cycles, macs, err := Run(a, A, B, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := matmul(A, B)
		for i := range want {
			for j := range want[i] {
				if C[i][j] != want[i][j] {
					t.Fatalf("case %d %+v %+v: C[%d][%d] = %v, want %v", n, a, g, i, j, C[i][j], want[i][j])
				}
			}
		}
		cf, _ := ClosedForm(a, g)
		if cycles != cf.Cycles || macs != g.MACs() {
			t.Fatalf("case %d %+v %+v: Run took %d cycles and %d MACs, closed form %d cycles", n, a, g, cycles, macs, cf.Cycles)
		}
	}
}

func randMatrix(rng *rand.Rand, r, c int) [][]float64 {
	m := make([][]float64, r)
	for i := range m {
		m[i] = make([]float64, c)
		for j := range m[i] {
			m[i][j] = float64(rng.IntN(19) - 9)
		}
	}
	return m
}

func matmul(A, B [][]float64) [][]float64 {
	C := make([][]float64, len(A))
	for i := range A {
		C[i] = make([]float64, len(B[0]))
		for j := range B[0] {
			for k := range B {
				C[i][j] += A[i][k] * B[k][j]
			}
		}
	}
	return C
}

func TestHandWorked4x4(t *testing.T) {
	// Every cycle of a 4x4 array, written out and kept as golden files. The
	// weight-stationary run: M=5, K=4, N=4 is one fold of 2·4 + 4 + 5 − 2 =
	// 15 cycles: 4 to load B, then row i of A enters at τ = t + i, column
	// j's sums leave at τ = t + 3 + j, the last at τ = 4 + 3 + 3 = 10.
	A := [][]float64{{1, 2, 3, 4}, {0, 1, 0, 1}, {2, 0, 2, 0}, {1, 1, 1, 1}, {3, 0, 0, 1}}
	B := [][]float64{{1, 0, 0, 1}, {0, 1, 0, 1}, {0, 0, 1, 1}, {1, 1, 1, 0}}
	for _, d := range dataflows {
		var w bytes.Buffer
		C, cycles, _, err := Run(Array{Rows: 4, Cols: 4, Dataflow: d}, A, B, &w)
		if err != nil {
			t.Fatal(err)
		}
		// WS is the one fold above; OS (Sr = M = 5) and IS (Sc = M = 5) need a
		// second fold for the fifth row of A: 14 + 8 and 14 + 11 cycles.
		if want := map[Dataflow]int64{WeightStationary: 15, OutputStationary: 22, InputStationary: 25}[d]; cycles != want {
			t.Errorf("%s: %d cycles, want %d", d, cycles, want)
		}
		if fmt.Sprint(C) != fmt.Sprint(matmul(A, B)) {
			t.Errorf("%s: C = %v", d, C)
		}
		golden.Compare(t, "run_4x4_"+string(d), w.Bytes())
	}
	// Two folds: K = 6 on 4 rows is a fold of 4 and one of 2.
	A2 := [][]float64{{1, 2, 3, 4, 5, 6}, {6, 5, 4, 3, 2, 1}}
	B2 := [][]float64{{1, 0}, {0, 1}, {1, 1}, {2, 0}, {0, 2}, {1, 0}}
	var w bytes.Buffer
	if _, _, _, err := Run(Array{Rows: 4, Cols: 4, Dataflow: WeightStationary}, A2, B2, &w); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "run_4x4_ws_two_folds", w.Bytes())
}

func TestWeightStationaryReadsWeightsOnce(t *testing.T) {
	// Weight stationary loads every weight from the buffer once and reads
	// none while the data streams; output and input stationary stream the
	// weights in over and over.
	g := GEMM{M: 300, K: 256, N: 256}
	for _, db := range []bool{false, true} {
		ws, _ := Simulate(Array{Rows: 128, Cols: 128, Dataflow: WeightStationary, DoubleBuffer: db}, g)
		if ws.WeightReadsWhileStreaming != 0 || ws.Buffer.BReads != int64(g.K*g.N) {
			t.Errorf("WS double-buffer=%v: %d weight reads while streaming, %d in all; want 0 and %d", db, ws.WeightReadsWhileStreaming, ws.Buffer.BReads, g.K*g.N)
		}
	}
	os, _ := Simulate(Array{Rows: 128, Cols: 128, Dataflow: OutputStationary}, g)
	if os.WeightReadsWhileStreaming != int64(g.K*g.N)*3 { // 3 row folds of M
		t.Errorf("OS reads %d weights while streaming, want %d", os.WeightReadsWhileStreaming, g.K*g.N*3)
	}
}

func TestUtilization4096(t *testing.T) {
	// By hand: 4096³ on 128x128 WS is 32·32 folds of 2·128 + 128 + 4096 − 2
	// = 4478 cycles, each doing 128·128·4096 MACs: utilization 4096/4478.
	r, err := ClosedForm(Array{Rows: 128, Cols: 128, Dataflow: WeightStationary}, GEMM{M: 4096, K: 4096, N: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if r.Cycles != 1024*4478 || math.Abs(r.Utilization()-4096.0/4478) > 1e-12 {
		t.Errorf("cycles %d utilization %v", r.Cycles, r.Utilization())
	}
	// Double buffering hides every load but the first: 128 + 1024·(128 + 128 + 4096 − 2).
	r, _ = ClosedForm(Array{Rows: 128, Cols: 128, Dataflow: WeightStationary, DoubleBuffer: true}, GEMM{M: 4096, K: 4096, N: 4096})
	if r.Cycles != 128+1024*4350 {
		t.Errorf("double-buffered cycles %d, want %d", r.Cycles, 128+1024*4350)
	}
}

func TestMappingEfficiency(t *testing.T) {
	// K = 200 on 128 rows needs two row folds, 200 of 256 rows used.
	if got := MappingEfficiency(WeightStationary, GEMM{M: 64, K: 200, N: 128}, 128, 128); got != 200.0/256 {
		t.Errorf("mapping efficiency %v, want %v", got, 200.0/256)
	}
}

func TestHBMStall(t *testing.T) {
	// One WS fold (K = N = 4 on 4x4, M = 100) with 2-byte elements needs
	// (4·4 + 100·4)·2 = 832 bytes before it can start; at 8 bytes per cycle
	// that is 104 stalled cycles, then the closed form's 2·4 + 4 + 100 − 2.
	a := Array{Rows: 4, Cols: 4, Dataflow: WeightStationary, ElementBytes: 2, HBMBytesPerCycle: 8}
	r, err := Simulate(a, GEMM{M: 100, K: 4, N: 4})
	if err != nil {
		t.Fatal(err)
	}
	if r.HBMStalls != 104 || r.Cycles != 104+110 {
		t.Errorf("HBM stalls %d, cycles %d; want 104 and 214", r.HBMStalls, r.Cycles)
	}
	// Enough bandwidth for the next fold to arrive during this one: only the
	// first fold waits.
	a.HBMBytesPerCycle = 1000
	a.DoubleBuffer = true
	r, _ = Simulate(a, GEMM{M: 100, K: 4, N: 8})
	if r.HBMStalls != 1 {
		t.Errorf("double-buffered HBM stalls %d, want 1 (the first fold's data)", r.HBMStalls)
	}
}

func TestDeterministic(t *testing.T) {
	a := Array{Rows: 16, Cols: 8, Dataflow: InputStationary, DoubleBuffer: true, HBMBytesPerCycle: 3.5, BufferBytes: 4096}
	g := GEMM{M: 100, K: 70, N: 33}
	x, _ := Simulate(a, g)
	y, _ := Simulate(a, g)
	if x != y {
		t.Errorf("two runs differ: %+v vs %+v", x, y)
	}
}

func TestErrors(t *testing.T) {
	if _, err := Simulate(Array{Rows: 0, Cols: 128, Dataflow: WeightStationary}, GEMM{1, 1, 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("0x128 array: %v", err)
	}
	if _, err := Simulate(Array{Rows: 4, Cols: 4, Dataflow: WeightStationary}, GEMM{-1, 1, 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative M: %v", err)
	}
	for _, bw := range []float64{math.NaN(), math.Inf(1)} {
		if _, err := Simulate(Array{Rows: 4, Cols: 4, Dataflow: WeightStationary, HBMBytesPerCycle: bw}, GEMM{1, 1, 1}); !errors.Is(err, ErrInvalid) {
			t.Errorf("HBM bandwidth %v: %v", bw, err)
		}
	}
	if _, err := ParseDataflow("rs"); !errors.Is(err, ErrInvalid) {
		t.Errorf("row stationary: %v", err)
	}
	for _, s := range []string{"0x128", "128", "x", "128x", "-1x4", "5000x5000", "axb"} {
		if _, _, err := ParseArray(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseArray(%q) = %v", s, err)
		}
	}
}

func FuzzParseArray(f *testing.F) {
	for _, s := range []string{"128x128", "256X256", "4x4", "0x1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, c, err := ParseArray(s)
		if err == nil && (r < 1 || c < 1 || r > 4096 || c > 4096) {
			t.Fatalf("ParseArray(%q) = %d, %d", s, r, c)
		}
	})
}

// BenchmarkSimulate4096 runs a 4096³ GEMM on a 128x128 weight-stationary
// array (about 4.5M cycles) and, in each iteration and so under the same
// load, the same GEMM one cycle per Step (closed-form counts, as traces
// use it) and by the closed form. It reports Simulate's simulated MACs/s,
// how many times faster than stepping it is (x-step), and how many times
// the closed form's time it takes (closed-form-time-ratio).
func BenchmarkSimulate4096(b *testing.B) {
	a := Array{Rows: 128, Cols: 128, Dataflow: WeightStationary}
	g := GEMM{M: 4096, K: 4096, N: 4096}
	var tSim, tStep, tClosed time.Duration
	for b.Loop() {
		t0 := time.Now()
		r, err := Simulate(a, g)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		s, err := NewSim(a, g)
		if err != nil {
			b.Fatal(err)
		}
		for s.Step() {
		}
		t2 := time.Now()
		c, err := ClosedForm(a, g)
		if err != nil {
			b.Fatal(err)
		}
		tSim, tStep, tClosed = tSim+t1.Sub(t0), tStep+t2.Sub(t1), tClosed+time.Since(t2)
		if s.Result().Cycles != r.Cycles || c.Cycles != r.Cycles {
			b.Fatalf("cycles: simulate %d, step %d, closed form %d", r.Cycles, s.Result().Cycles, c.Cycles)
		}
	}
	b.ReportMetric(float64(g.MACs())*float64(b.N)/tSim.Seconds(), "simulated-MACs/s")
	b.ReportMetric(tStep.Seconds()/tSim.Seconds(), "x-step")
	b.ReportMetric(tSim.Seconds()/tClosed.Seconds(), "closed-form-time-ratio")
}

func ExampleSimulate() {
	r, _ := Simulate(Array{Rows: 128, Cols: 128, Dataflow: WeightStationary}, GEMM{M: 1024, K: 256, N: 384})
	fmt.Println(r)
	// Output:
	// ws 1024x256x384 on 128x128: 6 folds, 8436 cycles (0 stalled), utilization 72.8%
}

func TestWriteTrace(t *testing.T) {
	var b bytes.Buffer
	r, err := WriteTrace(&b, Array{Rows: 4, Cols: 4, Dataflow: WeightStationary}, GEMM{M: 5, K: 6, N: 4})
	if err != nil {
		t.Fatal(err)
	}
	if r.Cycles != 15+11 { // folds of 4 and 2 rows: 2·4+4+5−2 and 2·2+4+5−2
		t.Errorf("cycles %d, want 26", r.Cycles)
	}
	golden.Compare(t, "trace_ws_5x6x4", b.Bytes())
	if _, err := WriteTrace(&b, Array{Rows: 128, Cols: 128, Dataflow: WeightStationary}, GEMM{M: 4096, K: 4096, N: 4096}); !errors.Is(err, ErrInvalid) {
		t.Errorf("huge trace: %v", err)
	}
}

func FuzzParseDataflow(f *testing.F) {
	for _, s := range []string{"ws", "OS", "input-stationary", "rs", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDataflow(s)
		if err != nil {
			return
		}
		again, err := ParseDataflow(string(d))
		if err != nil || again != d {
			t.Fatalf("round trip %q -> %q", s, d)
		}
	})
}
