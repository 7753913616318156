package emu

import "shardlab/emu/avx2"

// gemmKernel is the float32 matrix multiply the emulator trains with:
// C (m×n, row-major, leading dimension ldc) = op(A)·op(B), added to C when
// acc is set. op transposes when the flag is set; A is m×k after op, B is
// k×n after op.
type gemmKernel interface {
	Sgemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, acc bool, c []float32, ldc int)
	Name() string
}

// pureGo is the default kernel, built with the Go toolchain alone (no
// cgo): packed panels and a 4×16 micro-kernel, in AVX2 assembly where the
// CPU has AVX2 and FMA (checked at run time) and in plain Go elsewhere or
// with the purego build tag.
type pureGo struct{}

// Name says which kernel this is.
func (pureGo) Name() string { return "Go toolchain (packed 4x16, " + microName + ")" }

// micro4x16 is the micro-kernel: AVX2 assembly where the CPU and build
// have it, plain Go otherwise.
var micro4x16 = func(a, b []float32, kc int, out *[64]float32) {
	if !avx2.Micro4x16(a, b, kc, out) {
		micro4x16Go(a, b, kc, out)
	}
}

var microName = map[bool]string{true: "AVX2+FMA assembly", false: "plain Go"}[avx2.Supported()]

// kernel is the one float32 matMul uses: pureGo, or OpenBLAS in a build
// with the openblas tag.
var kernel gemmKernel = pureGo{}

// kernelInUse names the GEMM the build trains with.
func kernelInUse() gemmKernel { return kernel }

const (
	kcBlock = 256
	ncBlock = 512
	mr, nr  = 4, 16
)

// Sgemm implements gemmKernel.
func (pureGo) Sgemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, acc bool, c []float32, ldc int) {
	if !acc {
		for i := range m {
			clear(c[i*ldc : i*ldc+n])
		}
	}
	if m == 0 || n == 0 || k == 0 {
		return
	}
	at := func(i, p int) float32 {
		if transA {
			return a[p*lda+i]
		}
		return a[i*lda+p]
	}
	bt := func(p, j int) float32 {
		if transB {
			return b[j*ldb+p]
		}
		return b[p*ldb+j]
	}
	mPad := (m + mr - 1) / mr * mr
	ap := make([]float32, mPad*min(k, kcBlock))
	bp := make([]float32, ((min(n, ncBlock)+nr-1)/nr*nr)*min(k, kcBlock))
	for p0 := 0; p0 < k; p0 += kcBlock {
		kc := min(kcBlock, k-p0)
		// pack A[:, p0:p0+kc] into 4-row strips, k-major inside a strip
		for i0 := 0; i0 < mPad; i0 += mr {
			strip := ap[i0*kc : (i0+mr)*kc]
			for p := range kc {
				for ii := range mr {
					if i := i0 + ii; i < m {
						strip[p*mr+ii] = at(i, p0+p)
					} else {
						strip[p*mr+ii] = 0
					}
				}
			}
		}
		for j0 := 0; j0 < n; j0 += ncBlock {
			nc := min(ncBlock, n-j0)
			ncPad := (nc + nr - 1) / nr * nr
			// pack B[p0:p0+kc, j0:j0+nc] into 4-column strips
			for jj0 := 0; jj0 < ncPad; jj0 += nr {
				strip := bp[jj0*kc : (jj0+nr)*kc]
				for p := range kc {
					for jj := range nr {
						if j := j0 + jj0 + jj; j < n {
							strip[p*nr+jj] = bt(p0+p, j)
						} else {
							strip[p*nr+jj] = 0
						}
					}
				}
			}
			for i0 := 0; i0 < mPad; i0 += mr {
				as := ap[i0*kc : (i0+mr)*kc]
				for jj0 := 0; jj0 < ncPad; jj0 += nr {
					bs := bp[jj0*kc : (jj0+nr)*kc]
					var acc [64]float32
					micro4x16(as, bs, kc, &acc)
					for ii := range mr {
						i := i0 + ii
						if i >= m {
							break
						}
						row := c[i*ldc:]
						for jj := range nr {
							if j := j0 + jj0 + jj; j < n {
								row[j] += acc[ii*nr+jj]
							}
						}
					}
				}
			}
		}
	}
}

// micro4x16Go computes the 4×16 block of a packed A strip (kc×4) times a
// packed B strip (kc×16) as four 4×4 register blocks.
func micro4x16Go(a, b []float32, kc int, out *[64]float32) {
	for q := range 4 {
		var blk [16]float32
		micro4x4(a, b, q*4, kc, &blk)
		for ii := range 4 {
			copy(out[ii*16+q*4:ii*16+q*4+4], blk[ii*4:ii*4+4])
		}
	}
}

// micro4x4 accumulates a 4×4 block of C over kc from columns off..off+3
// of the 16-wide B strip: 16 multiply-adds per 8 loads, all in registers.
func micro4x4(a, b []float32, off, kc int, out *[16]float32) {
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 float32
	a = a[:kc*4]
	b = b[:kc*16]
	for p, q := 0, off; p < kc*4; p, q = p+4, q+16 {
		a0, a1, a2, a3 := a[p], a[p+1], a[p+2], a[p+3]
		b0, b1, b2, b3 := b[q], b[q+1], b[q+2], b[q+3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	*out = [16]float32{c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33}
}
