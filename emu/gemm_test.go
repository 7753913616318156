package emu

import (
	"math"
	"math/rand/v2"
	"testing"
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

// TestKernelMatchesNaive checks the GEMM kernel in use (pure Go, or
// OpenBLAS under the openblas tag) and the pure-Go one against a float64
// triple loop, for every transpose and awkward sizes.
func TestKernelMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	saved := micro4x16
	defer func() { micro4x16 = saved }()
	plain := kernelFunc{name: "plain Go micro-kernel", f: func(ta, tb bool, m, n, k int, a []float32, lda int, b []float32, ldb int, acc bool, c []float32, ldc int) {
		micro4x16 = micro4x16Go
		pureGo{}.Sgemm(ta, tb, m, n, k, a, lda, b, ldb, acc, c, ldc)
		micro4x16 = saved
	}}
	for _, kern := range []gemmKernel{plain, pureGo{}, kernelInUse()} {
		for n := range 60 {
			m, nn, k := 1+rng.IntN(40), 1+rng.IntN(40), 1+rng.IntN(300)
			if n%10 == 0 {
				m, nn, k = 1+rng.IntN(3), 600, 700 // crosses the k and n blocks
			}
			ta, tb := rng.IntN(2) == 0, rng.IntN(2) == 0
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

type kernelFunc struct {
	name string
	f    func(ta, tb bool, m, n, k int, a []float32, lda int, b []float32, ldb int, acc bool, c []float32, ldc int)
}

func (k kernelFunc) Name() string { return k.name }
func (k kernelFunc) Sgemm(ta, tb bool, m, n, kk int, a []float32, lda int, b []float32, ldb int, acc bool, c []float32, ldc int) {
	k.f(ta, tb, m, n, kk, a, lda, b, ldb, acc, c, ldc)
}

func benchGEMM(b *testing.B, kern gemmKernel, n int) {
	x := make([]float32, n*n)
	y := make([]float32, n*n)
	z := make([]float32, n*n)
	for i := range x {
		x[i], y[i] = float32(i%7), float32(i%5)
	}
	for b.Loop() {
		kern.Sgemm(false, false, n, n, n, x, n, y, n, false, z, n)
	}
	b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkGEMM reports each kernel's GFLOP/s side by side (the OpenBLAS
// rows appear in a build with -tags openblas; run it with
// OPENBLAS_CORETYPE set for this CPU and OPENBLAS_NUM_THREADS=1).
func BenchmarkGEMM(b *testing.B) {
	for _, n := range []int{256, 512} {
		b.Run("pure-go/"+itoa(n), func(b *testing.B) { benchGEMM(b, pureGo{}, n) })
		if _, pure := kernelInUse().(pureGo); !pure {
			b.Run("openblas/"+itoa(n), func(b *testing.B) { benchGEMM(b, kernelInUse(), n) })
		}
	}
}

func itoa(n int) string {
	s := ""
	for n > 0 {
		s = string(rune('0'+n%10)) + s
		n /= 10
	}
	return s
}
