// Package kernel holds the emulator's float32 arithmetic: the GEMM
// interface and the Go toolchain's GEMM (gemm.go), its micro-kernels in Go
// assembly (AVX2 with fused multiply-add, and AVX-512 where the CPU has
// it), and the vector sums the emulator's collectives and softmax run
// (Add, SumBoth, ReduceFan, ExpSub). OpenBLAS's GEMM is package
// emu/kernel/openblas, apart because a package cannot mix Go assembly with
// cgo. Every assembly kernel sums each element of C as one FMA chain from
// zero with k in order, so the AVX2 and AVX-512 kernels give the same
// bits.
package kernel

import "unsafe"

// Micro4x16 computes the 4×16 block a·b over kc into c (64 floats,
// overwritten): a is a packed kc×4 strip (k-major), b a packed kc×16
// strip. It reports false, doing nothing, where the CPU or build lacks
// AVX2 and FMA; callers then use their own code.
func Micro4x16(a, b []float32, kc int, c *[64]float32) bool {
	if !supported || kc == 0 {
		return false
	}
	_ = a[kc*4-1]
	_ = b[kc*16-1]
	micro4x16(&a[0], &b[0], kc, &c[0])
	return true
}

// Add4x16 adds the 4×16 block a·b over kc (a a packed kc×4 strip, b a
// packed kc×16 strip) into c's first 4 rows of 16, ldc floats apart. It
// reports false, doing nothing, where the CPU or build lacks AVX2 and FMA.
func Add4x16(a, b []float32, kc int, c []float32, ldc int) bool {
	if !supported || kc == 0 {
		return false
	}
	_ = a[kc*4-1]
	_ = b[kc*16-1]
	_ = c[3*ldc+15]
	add4x16(&a[0], &b[0], kc, &c[0], ldc)
	return true
}

// Add8x32 is Add4x16 for an 8×32 block (a packed kc×8, b packed kc×32)
// with AVX-512; it reports false where the CPU or build lacks AVX-512F.
func Add8x32(a, b []float32, kc int, c []float32, ldc int) bool {
	return Add8x32Strided(a, 8, b, 32, kc, c, ldc)
}

// Add8x32Strided is Add8x32 on strips read in place: step p takes a's
// eight floats at a[p·lda:] and b's thirty-two at b[p·ldb:] (a packed
// strip has lda 8 and ldb 32), summed in the same order.
func Add8x32Strided(a []float32, lda int, b []float32, ldb, kc int, c []float32, ldc int) bool {
	if !supported512 || kc == 0 {
		return false
	}
	_ = a[(kc-1)*lda+7]
	_ = b[(kc-1)*ldb+31]
	_ = c[7*ldc+31]
	add8x32(&a[0], &b[0], kc, lda, ldb, &c[0], ldc)
	return true
}

// Add8x32Rows is Add8x32Strided with A read in place by rows: step p
// takes the eight floats a[ii·lda+p], ii < 8 (an untransposed A), and b's
// thirty-two at b[p·ldb:], summed in the same order.
func Add8x32Rows(a []float32, lda int, b []float32, ldb, kc int, c []float32, ldc int) bool {
	if !supported512 || kc == 0 {
		return false
	}
	_ = a[7*lda+kc-1]
	_ = b[(kc-1)*ldb+31]
	_ = c[7*ldc+31]
	add8x32rows(&a[0], &b[0], kc, lda, ldb, &c[0], ldc)
	return true
}

// Supported reports whether the AVX2 kernels run on this CPU and build.
func Supported() bool { return supported }

// Supported512 reports whether Add8x32 runs on this CPU and build.
func Supported512() bool { return supported512 }

// PeakAVX2 runs n rounds of 12 independent 8-wide FMAs and returns the
// FLOPs done (0 without AVX2 and FMA): an FMA loop that measures one
// core's fp32 peak with 256-bit vectors.
func PeakAVX2(n int) float64 {
	if !supported || n <= 0 {
		return 0
	}
	peakAVX2(n)
	return float64(n) * 12 * 8 * 2
}

// PeakAVX512 is PeakAVX2 with 16 independent 16-wide FMAs a round (0
// without AVX-512F).
func PeakAVX512(n int) float64 {
	if !supported512 || n <= 0 {
		return 0
	}
	peakAVX512(n)
	return float64(n) * 16 * 16 * 2
}

// vectorPart runs the widest vector kernel the CPU has on the longest
// prefix of n elements that kernel takes (a multiple of 64 floats with
// AVX-512, of 32 with AVX2) and returns the prefix's length, 0 when
// neither runs; the caller's plain loop does the rest.
func vectorPart(n int, avx512, avx2 func(m int)) int {
	switch {
	case supported512 && n >= 64:
		avx512(n &^ 63)
		return n &^ 63
	case supported && n >= 32:
		avx2(n &^ 31)
		return n &^ 31
	}
	return 0
}

// Add sets dst[i] += x[i] for every i of dst (x is at least as long),
// with the widest vectors the CPU has: each element is one float32
// addition, so the result is the plain loop's, bit for bit.
func Add(dst, x []float32) {
	x = x[:len(dst)]
	i := vectorPart(len(dst), func(m int) { add64(&dst[0], &x[0], m) }, func(m int) { add32(&dst[0], &x[0], m) })
	for ; i < len(dst); i++ {
		dst[i] += x[i]
	}
}

// ExpSub sets dst[i] = exp(src[i] − shift) for every i of dst (src is at
// least as long; dst may be src) with AVX-512, 16 at a time, the last
// partial group through a padded copy so that every element goes through
// the same instructions; the relative error is about 2 float32 ulps. It
// reports false, doing nothing, where the CPU or build lacks AVX-512F.
func ExpSub(dst, src []float32, shift float32) bool {
	if !supported512 {
		return false
	}
	src = src[:len(dst)]
	n := len(dst) &^ 15
	if n > 0 {
		expSub16(&dst[0], &src[0], n, shift)
	}
	if n < len(dst) {
		var tail [16]float32
		copy(tail[:], src[n:])
		expSub16(&tail[0], &tail[0], 16, shift)
		copy(dst[n:], tail[:])
	}
	return true
}

// ReduceFan sums ins element by element, left to right (((ins[0] +
// ins[1]) + ins[2]) + …, each a float32 addition, so the bits are the
// plain loop's), and writes the sum into every one of outs: a reduction
// and its fan-out in one pass over memory. Every slice has the length of
// outs[0]; an output may be one of the inputs (each element's inputs are
// read before it is written) but must not overlap one otherwise.
func ReduceFan(outs, ins [][]float32) {
	if len(outs) == 0 || len(ins) == 0 {
		return
	}
	n := len(outs[0])
	if len(ins) > maxFan { // fold maxFan at a time into a partial sum
		part := make([]float32, n)
		ReduceFan([][]float32{part}, ins[:maxFan])
		rest := ins[maxFan:]
		for len(rest) > maxFan-1 {
			ReduceFan([][]float32{part}, append([][]float32{part}, rest[:maxFan-1]...))
			rest = rest[maxFan-1:]
		}
		ReduceFan(outs, append([][]float32{part}, rest...))
		return
	}
	if len(outs) > maxFan {
		ReduceFan(outs[:1], ins)
		for _, y := range outs[1:] {
			copy(y[:n], outs[0])
		}
		return
	}
	var ip, op [maxFan]unsafe.Pointer
	for k, x := range ins {
		x = x[:n]
		if n > 0 {
			ip[k] = unsafe.Pointer(&x[0])
		}
	}
	for k, x := range outs {
		x = x[:n]
		if n > 0 {
			op[k] = unsafe.Pointer(&x[0])
		}
	}
	i := vectorPart(n, func(m int) { reduceFan64(&ip[0], len(ins), &op[0], len(outs), m) },
		func(m int) { reduceFan32(&ip[0], len(ins), &op[0], len(outs), m) })
	for ; i < n; i++ {
		s := ins[0][i]
		for _, x := range ins[1:] {
			s += x[i]
		}
		for _, y := range outs {
			y[i] = s
		}
	}
}

// maxFan bounds ReduceFan's inputs and outputs (its pointer tables live
// on the stack).
const maxFan = 64

// SumBoth sets a[i] and b[i] to a[i] + b[i] for every i of a (b is at
// least as long): Add that also writes the sums back into b, reading each
// input once. The sums are the plain loop's, bit for bit.
func SumBoth(a, b []float32) {
	b = b[:len(a)]
	i := vectorPart(len(a), func(m int) { sumBoth64(&a[0], &b[0], m) }, func(m int) { sumBoth32(&a[0], &b[0], m) })
	for ; i < len(a); i++ {
		s := a[i] + b[i]
		a[i], b[i] = s, s
	}
}
