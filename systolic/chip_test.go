package systolic

import (
	"errors"
	"math"
	"strings"
	"testing"

	"shardlab/hw"
)

func preset(t *testing.T, gen string) Preset {
	t.Helper()
	c, err := hw.Lookup(gen)
	if err != nil {
		t.Fatal(err)
	}
	return PresetFor(c)
}

func TestPresets(t *testing.T) {
	tests := []struct {
		gen        string
		mxus, side int
		clockMHz   float64 // 0: not checked
	}{
		{"v3", 4, 128, 940},  // [gcp-v3] 2 per TensorCore; clock: Jouppi et al. CACM 2020, 940 MHz
		{"v4", 8, 128, 1050}, // [gcp-v4] 4 per TensorCore; clock: Jouppi et al. ISCA 2023, 1050 MHz
		{"v5p", 8, 128, 0},   // [gcp-v5p] 4 per TensorCore
		{"v6e", 2, 256, 0},   // [gcp-v6e] 256x256
		{"tpu7x", 2, 256, 0}, // 256x256 [jax-info]; count not published
	}
	for _, tt := range tests {
		p := preset(t, tt.gen)
		if p.MXUs != tt.mxus || p.Rows != tt.side || p.Cols != tt.side {
			t.Errorf("%s: %d MXUs of %dx%d, want %d of %d", tt.gen, p.MXUs, p.Rows, p.Cols, tt.mxus, tt.side)
		}
		// The clock the peak implies must match the published clock: a check
		// that peak, MXU count and size in the catalog agree.
		if tt.clockMHz > 0 && math.Abs(p.ClockHz/1e6-tt.clockMHz)/tt.clockMHz > 0.01 {
			t.Errorf("%s: implied clock %.0f MHz, published %.0f", tt.gen, p.ClockHz/1e6, tt.clockMHz)
		}
	}
	if !preset(t, "tpu7x").Assumed {
		t.Error("tpu7x MXU count should be marked assumed")
	}
}

func TestEfficiency(t *testing.T) {
	p := preset(t, "v5p")
	// 4096³: 1024 double-buffered folds over 8 MXUs, 128 each:
	// (128 + 1024·(128 + 128 + 4096 − 2))/8 cycles per MXU.
	got, err := p.Efficiency(GEMM{M: 4096, K: 4096, N: 4096})
	if err != nil {
		t.Fatal(err)
	}
	want := math.Pow(4096, 3) / (8 * 128 * 128 * (128 + 1024*4350) / 8.0)
	if math.Abs(got-want) > 1e-12 {
		t.Errorf("Efficiency(4096³) = %v, want %v", got, want)
	}
	// Padding: K = 4096+64 needs a 33rd row tile that is half empty.
	padded, _ := p.Efficiency(GEMM{M: 4096, K: 4160, N: 4096})
	if padded >= got || MappingEfficiency(WeightStationary, GEMM{M: 4096, K: 4160, N: 4096}, 128, 128) != 4160.0/4224 {
		t.Errorf("padded efficiency %v not below %v", padded, got)
	}
	// Too few folds to fill 8 MXUs: one 128x128 fold uses one of them.
	small, _ := p.Efficiency(GEMM{M: 4096, K: 128, N: 128})
	if small > 1.0/8 {
		t.Errorf("one-fold efficiency %v, want at most 1/8", small)
	}
}

func TestCompareOrdersCPUGPUTPU(t *testing.T) {
	// The seed's point: accesses per MAC fall from CPU to GPU to the
	// systolic array, and so does time.
	rows, err := Compare(GEMM{M: 4096, K: 4096, N: 4096}, Machines{CPUClockHz: 3e9, GPUALUs: 5000, GPUClockHz: 1.5e9, GPUTile: 16, TPU: preset(t, "v5p")})
	if err != nil {
		t.Fatal(err)
	}
	cpu, gpu, tpu := rows[0], rows[1], rows[2]
	if !(cpu.AccessesPerMAC > gpu.AccessesPerMAC && gpu.AccessesPerMAC > tpu.AccessesPerMAC) {
		t.Errorf("accesses per MAC: CPU %v, GPU %v, TPU %v", cpu.AccessesPerMAC, gpu.AccessesPerMAC, tpu.AccessesPerMAC)
	}
	if !(cpu.Seconds > gpu.Seconds && gpu.Seconds > tpu.Seconds) {
		t.Errorf("seconds: CPU %v, GPU %v, TPU %v", cpu.Seconds, gpu.Seconds, tpu.Seconds)
	}
	if cpu.AccessesPerMAC != 4 || gpu.AccessesPerMAC != 3+2.0/16 {
		t.Errorf("CPU %v and GPU %v accesses per MAC, want 4 and 3.125 by their loop bodies", cpu.AccessesPerMAC, gpu.AccessesPerMAC)
	}
}

// TestCompareTPUTimeIsTheClosedForm: compare's TPU time is the closed
// form's cycles over the chip's MXUs, below the cycle-level simulation's
// with its stalls, and its How says so (review171: compare gave 318 µs,
// mxu's simulation 324 µs, and compare did not say which count it used).
func TestCompareTPUTimeIsTheClosedForm(t *testing.T) {
	g, p := GEMM{M: 4096, K: 4096, N: 4096}, preset(t, "v5p")
	rows, err := Compare(g, Machines{CPUClockHz: 3e9, GPUALUs: 5000, GPUClockHz: 1.5e9, GPUTile: 16, TPU: p})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := ClosedForm(p.Array(), g)
	if err != nil {
		t.Fatal(err)
	}
	want := float64(cf.Cycles) * float64(ceilDiv(cf.Folds, p.MXUs)) / float64(cf.Folds) / p.ClockHz
	if tpu := rows[2]; tpu.Seconds != want || !strings.Contains(tpu.How, "closed form") {
		t.Errorf("TPU row: %v s, how %q; want %v s, the closed form's, and a how that says so", tpu.Seconds, tpu.How, want)
	}
	a := p.Array()
	a.HBMBytesPerCycle = p.HBMBytesPerCycle() // as shardlab mxu simulates the chip's MXU
	sim, err := Simulate(a, g)
	if err != nil {
		t.Fatal(err)
	}
	if sim.Cycles <= cf.Cycles {
		t.Errorf("simulated %d cycles, closed form %d: the How's stalls are not there", sim.Cycles, cf.Cycles)
	}
}

func TestCompareRefusesNonFiniteClocks(t *testing.T) {
	for _, hz := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		ok := Machines{CPUClockHz: 3e9, GPUALUs: 5000, GPUClockHz: 1.5e9, GPUTile: 16, TPU: preset(t, "v5p")}
		cpu, gpu := ok, ok
		cpu.CPUClockHz, gpu.GPUClockHz = hz, hz
		for _, m := range []Machines{cpu, gpu} {
			if _, err := Compare(GEMM{M: 64, K: 64, N: 64}, m); !errors.Is(err, ErrInvalid) {
				t.Errorf("Compare with CPU clock %v Hz, GPU clock %v Hz: error %v, want ErrInvalid", m.CPUClockHz, m.GPUClockHz, err)
			}
		}
	}
}
