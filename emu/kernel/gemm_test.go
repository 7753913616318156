package kernel

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

func naive(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int) []float64 {
	c := make([]float64, m*n)
	for i := range m {
		for j := range n {
			for p := range k {
				var av, bv float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				c[i*n+j] += float64(av) * float64(bv)
			}
		}
	}
	return c
}

// kernels lists every GEMM to check: each micro-kernel this CPU runs
// inside the packed driver, the v1 baseline, Go's, and OpenBLAS's under
// the openblas tag (openblas_test.go).
func kernels() []GEMM {
	ks := []GEMM{pureGo{microGo}, packedV1{}}
	if Supported() {
		ks = append(ks, pureGo{microAVX2})
	}
	if Supported512() {
		ks = append(ks, pureGo{microAVX512})
	}
	return append(append(ks, Go()), tagged...)
}

// tagged are the kernels of the build's tags (openblas_test.go adds
// OpenBLAS's).
var tagged []GEMM

// inUse is the kernel a build with these tags trains with: OpenBLAS's
// under the openblas tag, else Go's.
func inUse() GEMM {
	if len(tagged) > 0 {
		return tagged[0]
	}
	return Go()
}

// TestKernelMatchesNaive checks every kernel against a float64 triple loop,
// for every transpose and awkward sizes.
func TestKernelMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, kern := range kernels() {
		for n := range 60 {
			m, nn, k := 1+rng.IntN(40), 1+rng.IntN(40), 1+rng.IntN(300)
			if n%10 == 0 {
				m, nn, k = 1+rng.IntN(3), 600, 700 // crosses the k and n blocks
			}
			if n%10 == 5 {
				m, nn, k = 64, 96, 300 // full tiles for every micro-kernel
			}
			ta, tb := rng.IntN(2) == 0, rng.IntN(2) == 0
			if n%10 == 5 { // every transposition on full tiles (read in place where they can be)
				ta, tb = n/10&1 == 1, n/10&2 == 2
			}
			lda, ldb := k, nn
			if ta {
				lda = m
			}
			if tb {
				ldb = k
			}
			a := make([]float32, m*k)
			b := make([]float32, k*nn)
			for i := range a {
				a[i] = float32(rng.NormFloat64())
			}
			for i := range b {
				b[i] = float32(rng.NormFloat64())
			}
			c := make([]float32, m*nn)
			for i := range c {
				c[i] = 1
			}
			kern.Sgemm(ta, tb, m, nn, k, a, lda, b, ldb, true, c, nn)
			want := naive(ta, tb, m, nn, k, a, lda, b, ldb)
			for i := range c {
				if d := math.Abs(float64(c[i]) - 1 - want[i]); d > 1e-4*math.Sqrt(float64(k))+1e-5*math.Abs(want[i]) {
					t.Fatalf("%s %dx%dx%d ta=%v tb=%v: element %d = %v, want %v", kern.Name(), m, nn, k, ta, tb, i, c[i]-1, want[i])
				}
			}
		}
	}
}

// TestAssemblyKernelsAgree holds the assembly kernels to the v1 baseline's
// bits: the same k blocks, each summed as one FMA chain from zero, so that
// speed changes no result and a run gives the same bytes on AVX2 and
// AVX-512 machines.
func TestAssemblyKernelsAgree(t *testing.T) {
	if !Supported() {
		t.Skip("no AVX2+FMA on this CPU or build: only the plain-Go kernel runs")
	}
	rng := rand.New(rand.NewPCG(5, 5))
	ks := []GEMM{pureGo{microAVX2}}
	if Supported512() {
		ks = append(ks, pureGo{microAVX512})
	}
	for range 40 {
		m, n, k := 1+rng.IntN(70), 1+rng.IntN(600), 1+rng.IntN(600)
		ta, tb := rng.IntN(2) == 0, rng.IntN(2) == 0
		a := make([]float32, m*k)
		b := make([]float32, k*n)
		c0 := make([]float32, m*n)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range b {
			b[i] = float32(rng.NormFloat64())
		}
		for i := range c0 {
			c0[i] = float32(rng.NormFloat64())
		}
		lda, ldb := k, n
		if ta {
			lda = m
		}
		if tb {
			ldb = k
		}
		want := append([]float32(nil), c0...)
		packedV1{}.Sgemm(ta, tb, m, n, k, a, lda, b, ldb, true, want, n)
		for _, kern := range ks {
			got := append([]float32(nil), c0...)
			kern.Sgemm(ta, tb, m, n, k, a, lda, b, ldb, true, got, n)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s %dx%dx%d ta=%v tb=%v: element %d = %v, v1 gives %v; want the same bits", kern.Name(), m, n, k, ta, tb, i, got[i], want[i])
				}
			}
		}
	}
}

type kernelFunc struct {
	name string
	f    func(ta, tb bool, m, n, k int, a []float32, lda int, b []float32, ldb int, acc bool, c []float32, ldc int)
}

func (k kernelFunc) Name() string { return k.name }
func (k kernelFunc) Sgemm(ta, tb bool, m, n, kk int, a []float32, lda int, b []float32, ldb int, acc bool, c []float32, ldc int) {
	k.f(ta, tb, m, n, kk, a, lda, b, ldb, acc, c, ldc)
}

// gemmShape is one multiply the benchmarks time.
type gemmShape struct {
	name           string
	transA, transB bool
	m, n, k        int
}

// gemmShapes are 512³ and the shapes the emulator runs: the default
// `shardlab run` (256 tokens a device, d_model 64 split over tensor=2) and
// BenchmarkTrain100M's FSDP layer (128 tokens, d_model 768, d_ff 3072),
// forward (NN) and backward (TA: weight gradients, TB: input gradients).
var gemmShapes = []gemmShape{
	{"512x512x512", false, false, 512, 512, 512},
	{"run-qkv", false, false, 256, 32, 64},
	{"run-mlp-up", false, false, 256, 88, 64},
	{"run-mlp-down", false, false, 256, 64, 88},
	{"run-dW", true, false, 64, 88, 256},
	{"run-dX", false, true, 256, 64, 88},
	{"100M-mlp-up", false, false, 128, 3072, 768},
	{"100M-mlp-down", false, false, 128, 768, 3072},
	{"100M-dW", true, false, 768, 3072, 128},
	{"100M-dX", false, true, 128, 768, 3072},
}

// BenchmarkGEMM times, in each iteration and so under the same load, the
// kernel in use, the v1 baseline and an FMA loop (the core's fp32 peak
// with the widest vectors it has) doing the same FLOPs. An iteration
// repeats a small shape's GEMM until it does about 10⁸ FLOPs (0.5 ms
// here), so that a timer tick or a stolen slice of a few microseconds is a
// small part of what it times, not most of a 5 µs run-qkv call. It
// reports the kernel's GFLOP/s and its ratios to both (and, when the
// kernel is the AVX-512 one, to the AVX2 micro-kernel in the same
// driver); allocs/op is the kernel's allocations over an iteration's calls
// (the baseline's are not counted: it runs outside the count). The
// OpenBLAS kernel is the one timed under -tags openblas (run it with
// OPENBLAS_CORETYPE set for this CPU and OPENBLAS_NUM_THREADS=1).
func BenchmarkGEMM(b *testing.B) {
	for _, s := range gemmShapes {
		b.Run(s.name, func(b *testing.B) {
			a := make([]float32, s.m*s.k)
			x := make([]float32, s.k*s.n)
			c := make([]float32, s.m*s.n)
			for i := range a {
				a[i] = float32(i%7) - 3
			}
			for i := range x {
				x[i] = float32(i%5) - 2
			}
			lda, ldb := s.k, s.n
			if s.transA {
				lda = s.m
			}
			if s.transB {
				ldb = s.k
			}
			flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
			reps := max(1, int(1e8/flops))
			gemm := func(k GEMM) time.Duration {
				t0 := time.Now()
				for range reps {
					k.Sgemm(s.transA, s.transB, s.m, s.n, s.k, a, lda, x, ldb, false, c, s.n)
				}
				return time.Since(t0)
			}
			kern, base := inUse(), GEMM(packedV1{})
			// with AVX-512 in use, the AVX2 micro-kernel in the same driver too
			var narrow GEMM
			if k, ok := kern.(*pureGo); ok && k.mk.nr == microAVX512.nr {
				narrow = pureGo{microAVX2}
			}
			var tKern, tBase, tNarrow, tPeak time.Duration
			var peakFLOPs float64
			kern.Sgemm(s.transA, s.transB, s.m, s.n, s.k, a, lda, x, ldb, false, c, s.n) // warm the packing pool
			b.ReportAllocs()
			for b.Loop() {
				tKern += gemm(kern)
				b.StopTimer()
				tBase += gemm(base)
				if narrow != nil {
					tNarrow += gemm(narrow)
				}
				t0 := time.Now()
				peakFLOPs += fmaPeak(flops * float64(reps))
				tPeak += time.Since(t0)
				b.StartTimer()
			}
			n := float64(b.N * reps)
			gf := flops * n / tKern.Seconds() / 1e9
			b.ReportMetric(gf, "GFLOP/s")
			b.ReportMetric(tBase.Seconds()/tKern.Seconds(), "x-v1")
			if narrow != nil {
				b.ReportMetric(tNarrow.Seconds()/tKern.Seconds(), "x-avx2")
			}
			if peakFLOPs > 0 {
				peak := peakFLOPs / tPeak.Seconds() / 1e9
				b.ReportMetric(peak, "peak-GFLOP/s")
				b.ReportMetric(100*gf/peak, "%-peak")
			}
		})
	}
}

// fmaPeak runs an FMA loop of about flops FLOPs with the widest vectors the
// CPU has and returns the FLOPs done (0 without AVX2 and FMA).
func fmaPeak(flops float64) float64 {
	if Supported512() {
		return PeakAVX512(int(flops/512) + 1)
	}
	return PeakAVX2(int(flops/192) + 1)
}

// TestGEMMAllocatesNothing: once a shape has run, a multiply allocates
// nothing, even after the garbage collector has run (a sync.Pool would
// have been emptied by it).
func TestGEMMAllocatesNothing(t *testing.T) {
	k := inUse()
	if _, ok := k.(*pureGo); !ok {
		t.Skipf("kernel %s is not the Go toolchain's", k.Name())
	}
	a, b, c := make([]float32, 256*64), make([]float32, 64*88), make([]float32, 256*88)
	mul := func() { k.Sgemm(false, false, 256, 88, 64, a, 64, b, 88, false, c, 88) }
	mul()
	afterGC := func() {
		runtime.GC()
		runtime.GC()
		mul()
	}
	if n := testing.AllocsPerRun(5, afterGC); n != 0 {
		t.Errorf("a multiply after the collector ran allocated %v times, want 0", n)
	}
}
