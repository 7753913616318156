// Package emu really trains a small decoder-only transformer across N
// virtual chips laid out like a planned mesh — data, fsdp, tensor,
// pipeline and context parallelism and their products — with every
// collective going through a collective.Comm that counts its bytes by tier
// (ICI inside a slice, DCN across slices) and advances a simulated clock,
// on devices that package mesh places. Its
// losses and parameters must match one device's, and its byte counts must
// equal package collective's formulas: it is the independent check of the
// planner.
package emu

import (
	"math"

	"shardlab/emu/kernel"
)

// Float is the element type: float32 to train, float64 to check gradients.
type Float interface{ ~float32 | ~float64 }

// Mat is a row-major matrix.
type Mat[T Float] struct {
	R, C int
	D    []T
}

// newMat returns a zero r×c matrix.
func newMat[T Float](r, c int) Mat[T] { return Mat[T]{R: r, C: c, D: make([]T, r*c)} }

// Row returns row i.
func (m Mat[T]) Row(i int) []T { return m.D[i*m.C : (i+1)*m.C] }

// Clone copies m.
func (m Mat[T]) Clone() Mat[T] { return Mat[T]{R: m.R, C: m.C, D: append([]T(nil), m.D...)} }

// matMul sets out = a·b (a r×k, b k×c), or adds to out when acc is true.
// float32 goes through the GEMM gemm; float64 (gradient checks) runs
// gemmAt's plain loops.
func matMul[T Float](gemm kernel.GEMM, out, a, b Mat[T], acc bool) {
	if a.C != b.R || out.R != a.R || out.C != b.C {
		panic("emu: matmul shape mismatch") // a kernel shape bug, not user input
	}
	gemmAt(gemm, false, false, a.R, b.C, a.C, a.D, a.C, b.D, b.C, acc, out.D, out.C)
}

// matMulTA sets out = aᵀ·b (a k×r, b k×c), or adds when acc.
func matMulTA[T Float](gemm kernel.GEMM, out, a, b Mat[T], acc bool) {
	if a.R != b.R || out.R != a.C || out.C != b.C {
		panic("emu: matmulTA shape mismatch")
	}
	gemmAt(gemm, true, false, a.C, b.C, a.R, a.D, a.C, b.D, b.C, acc, out.D, out.C)
}

// matMulTB sets out = a·bᵀ (a r×k, b c×k), or adds when acc.
func matMulTB[T Float](gemm kernel.GEMM, out, a, b Mat[T], acc bool) {
	if a.C != b.C || out.R != a.R || out.C != b.R {
		panic("emu: matmulTB shape mismatch")
	}
	gemmAt(gemm, false, true, a.R, b.R, a.C, a.D, a.C, b.D, b.C, acc, out.D, out.C)
}

// gemmAt sets c = op(a)·op(b), or adds it when acc, on strided views (m×n
// into c with leading dimension ldc; op(a) m×k, op(b) k×n): float32
// through gemm, float64 (gradient checks) by plain loops.
func gemmAt[T Float](gemm kernel.GEMM, ta, tb bool, m, n, k int, a []T, lda int, b []T, ldb int, acc bool, c []T, ldc int) {
	if c32, ok := any(c).([]float32); ok {
		gemm.Sgemm(ta, tb, m, n, k, any(a).([]float32), lda, any(b).([]float32), ldb, acc, c32, ldc)
		return
	}
	for i := range m {
		for j := range n {
			var s T
			for p := range k {
				ai, bi := i*lda+p, p*ldb+j
				if ta {
					ai = p*lda + i
				}
				if tb {
					bi = j*ldb + p
				}
				s += a[ai] * b[bi]
			}
			if acc {
				c[i*ldc+j] += s
			} else {
				c[i*ldc+j] = s
			}
		}
	}
}

func axpy[T Float](dst, x []T, a T) {
	x = x[:len(dst)]
	i := 0
	for ; i+4 <= len(dst); i += 4 {
		dst[i] += a * x[i]
		dst[i+1] += a * x[i+1]
		dst[i+2] += a * x[i+2]
		dst[i+3] += a * x[i+3]
	}
	for ; i < len(dst); i++ {
		dst[i] += a * x[i]
	}
}

func dot[T Float](a, b []T) T {
	b = b[:len(a)]
	var s0, s1, s2, s3 T
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func add[T Float](dst, x []T) {
	for i := range dst {
		dst[i] += x[i]
	}
}

func exp[T Float](x T) T { return T(math.Exp(float64(x))) }

// expSub sets dst[i] = exp(src[i] − shift) (dst may be src): float32 a
// vector at a time with AVX-512 where the CPU has it (kernel.ExpSub, within
// about 2 ulps of math.Exp; the bits then differ from a machine without
// AVX-512, as the plain-Go GEMM's do from the assembly's), else one element
// at a time (also when gemm asks for v1's layers, which computed exp so).
func expSub[T Float](gemm kernel.GEMM, dst, src []T, shift T) {
	if d, ok := any(dst).([]float32); ok && !onV1Path(gemm) && kernel.ExpSub(d, any(src).([]float32), float32(shift)) {
		return
	}
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = exp(src[i] - shift)
	}
}
func sqrt[T Float](x T) T { return T(math.Sqrt(float64(x))) }
func log[T Float](x T) T  { return T(math.Log(float64(x))) }
