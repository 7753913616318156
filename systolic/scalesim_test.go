package systolic

import (
	"errors"
	"math/rand/v2"
	"testing"
)

func TestSCALESimHandDerived(t *testing.T) {
	// Counts worked by hand from SCALE-Sim v2's demand matrices
	// (scalesim/compute/systolic_compute_{ws,is,os}.py at 22f88b17): F
	// folds of L lines each, minus one; L = 2R + C + T − 2 for WS and IS,
	// R + C + T − 2 for OS, with R×C the whole array.
	for _, c := range []struct {
		name       string
		d          Dataflow
		rows, cols int
		g          GEMM
		want       int64
	}{
		// the example: one fold using 64 of 128 rows and columns
		{"ws 64³ partial", WeightStationary, 128, 128, GEMM{64, 64, 64}, 1*(256+128+64-2) - 1}, // 445
		// full folds: K = N = 256 is 2·2 folds of 128x128, T = M = 256
		{"ws 256³ full", WeightStationary, 128, 128, GEMM{256, 256, 256}, 4*(256+128+256-2) - 1}, // 2551
		// K = 200 is a full and a partial row fold, N = 50 one partial column fold
		{"ws 100x200x50", WeightStationary, 128, 128, GEMM{100, 200, 50}, 2*(256+128+100-2) - 1}, // 963
		// a 32x16 array: K = 64 is 2 row folds, N = 64 4 column folds
		{"ws 64³ on 32x16", WeightStationary, 32, 16, GEMM{64, 64, 64}, 8*(64+16+64-2) - 1}, // 1135
		// IS: Sr = K, Sc = M, T = N
		{"is 64³ partial", InputStationary, 128, 128, GEMM{64, 64, 64}, 1*(256+128+64-2) - 1}, // 445
		{"is 256³ full", InputStationary, 128, 128, GEMM{256, 256, 256}, 4*(256+128+256-2) - 1},
		// K = 100 on 32 rows: 4 folds; M = 300 on 16 columns: 19; T = N = 20
		{"is 300x100x20 on 32x16", InputStationary, 32, 16, GEMM{300, 100, 20}, 76*(64+16+20-2) - 1}, // 7447
		// OS: Sr = M, Sc = N, T = K; no load and no drain phase
		{"os 64³ partial", OutputStationary, 128, 128, GEMM{64, 64, 64}, 1*(128+128+64-2) - 1},   // 317
		{"os 256³ full", OutputStationary, 128, 128, GEMM{256, 256, 256}, 4*(128+128+256-2) - 1}, // 2039
		// M = 300 on 32 rows: 10 folds; N = 20 on 16 columns: 2; T = K = 100
		{"os 300x100x20 on 32x16", OutputStationary, 32, 16, GEMM{300, 100, 20}, 20*(32+16+100-2) - 1}, // 2919
	} {
		// double buffering and an HBM limit change nothing in SCALE-Sim's count
		for _, a := range []Array{
			{Rows: c.rows, Cols: c.cols, Dataflow: c.d},
			{Rows: c.rows, Cols: c.cols, Dataflow: c.d, DoubleBuffer: true, HBMBytesPerCycle: 1},
		} {
			r, err := SCALESim(a, c.g)
			if err != nil {
				t.Fatal(err)
			}
			if r.Cycles != c.want || r.StallCycles != 0 || r.MACs != c.g.MACs() {
				t.Errorf("%s: SCALESim(%+v) = %d cycles (%d stalled, %d MACs), want %d (0, %d)", c.name, a, r.Cycles, r.StallCycles, r.MACs, c.want, c.g.MACs())
			}
		}
	}
	// and the default mode's count of the example
	r, _ := ClosedForm(Array{Rows: 128, Cols: 128, Dataflow: WeightStationary}, GEMM{64, 64, 64})
	if r.Cycles != 254 {
		t.Errorf("ClosedForm 64³ on 128x128 ws = %d cycles, want 2·64 + 64 + 64 − 2 = 254", r.Cycles)
	}
}

// demandLines builds the length of each operand's demand matrix for one
// fold the way SCALE-Sim v2 assembles it (prefix lines of null requests,
// one line per streamed element, suffix lines, then a skew that adds
// width − 1 lines), and checks that the three agree as SCALE-Sim asserts.
// It is a second derivation of SCALESimFoldCycles, operand by operand.
func demandLines(t *testing.T, d Dataflow, R, C, T int) int {
	skew := func(lines, width int) int { return lines + width - 1 }
	var ifmap, filter, ofmap int
	switch d {
	case WeightStationary:
		ifmap = skew(R+T+(C-1), R)   // load gap, inputs, drain gap; skewed over rows
		filter = R + (R + C + T - 2) // the weights, flipped, then the stream and drain gap; no skew
		ofmap = skew(2*R-1+T, C)     // prefix until the first sums, outputs; skewed over columns
	case InputStationary:
		ifmap = R + (R + C + T - 2) // the stationary inputs, then the gap; no skew
		filter = skew(R+T+(C-1), R) // load gap, weights, drain gap
		ofmap = skew(2*R-1+T, C)    // as WS
	case OutputStationary:
		ifmap = skew(T+(C-1), R)  // inputs, then a gap; skewed over rows
		filter = skew(T+(R-1), C) // weights, then a gap; skewed over columns
		ofmap = skew(T-1+R, C)    // prefix, the rows of outputs; skewed
	}
	if ifmap != filter || filter != ofmap {
		t.Fatalf("%s %dx%d T=%d: demand lines %d, %d, %d out of sync", d, R, C, T, ifmap, filter, ofmap)
	}
	return ofmap
}

func TestSCALESimEqualsDemandLines(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for range 300 {
		a := Array{Rows: 1 + rng.IntN(64), Cols: 1 + rng.IntN(64), Dataflow: dataflows[rng.IntN(3)]}
		g := GEMM{M: 1 + rng.IntN(300), K: 1 + rng.IntN(300), N: 1 + rng.IntN(300)}
		m := MapGEMM(a.Dataflow, g)
		lines := 0
		for range folds(m, a.Rows, a.Cols) { // SCALE-Sim pads every fold to the whole array
			lines += demandLines(t, a.Dataflow, a.Rows, a.Cols, m.T)
		}
		r, err := SCALESim(a, g)
		if err != nil {
			t.Fatal(err)
		}
		if r.Cycles != int64(lines-1) {
			t.Fatalf("%+v %+v: SCALESim %d cycles, demand lines %d − 1", a, g, r.Cycles, lines)
		}
		// With every fold full and no double buffering, WS and IS differ
		// from the default mode only by SCALE-Sim's one cycle.
		if a.Dataflow != OutputStationary && m.Sr%a.Rows == 0 && m.Sc%a.Cols == 0 {
			cf, _ := ClosedForm(a, g)
			if r.Cycles != cf.Cycles-1 {
				t.Fatalf("%+v %+v: full folds: SCALESim %d, ClosedForm %d; want one less", a, g, r.Cycles, cf.Cycles)
			}
		}
	}
}

func TestParseCompat(t *testing.T) {
	for in, want := range map[string]Compat{"": CompatShardlab, "shardlab": CompatShardlab, "ScaleSim": CompatSCALESim, " scale-sim ": CompatSCALESim, "scale-sim-v2": CompatSCALESim} {
		if got, err := ParseCompat(in); err != nil || got != want {
			t.Errorf("ParseCompat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseCompat("timeloop"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseCompat(timeloop) = %v, want ErrInvalid", err)
	}
}

func FuzzParseCompat(f *testing.F) {
	for _, s := range []string{"scalesim", "SHARDLAB", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCompat(s)
		if err != nil {
			return
		}
		again, err := ParseCompat(string(c))
		if err != nil || again != c {
			t.Fatalf("round trip %q -> %q", s, c)
		}
	})
}
