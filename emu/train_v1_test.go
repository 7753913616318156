package emu

import "shardlab/emu/kernel"

// packedV1 is the kernel the emulator trained with before the speed work
// (issue 15), kept as the baseline BenchmarkTrain measures against in the
// same run: it packs with a closure per element into fresh buffers on every
// call and handles every tile as a partial one. It is a copy of package
// kernel's (its gemm_v1_test.go, which BenchmarkGEMM runs), since test
// files cannot be shared between packages; only its plain-Go fallback is
// written out here, as the plain loop.
type packedV1 struct{}

// Name says which kernel this is.
func (packedV1) Name() string { return "packed 4x16 v1 (baseline)" }

// v1 packs 4-row A strips and 16-column B strips, in k blocks of
// kcBlock and n blocks of ncBlock (package kernel's blocking).
const (
	mr, nr           = 4, 16
	kcBlock, ncBlock = 256, 512
)

// v1Micro is v1's micro-kernel: AVX2 assembly into a temporary block, or
// plain Go.
func v1Micro(a, b []float32, kc int, out *[64]float32) {
	if kernel.Micro4x16(a, b, kc, out) {
		return
	}
	*out = [64]float32{}
	for p := range kc {
		for i := range 4 {
			for j := range 16 {
				out[i*16+j] += a[p*4+i] * b[p*16+j]
			}
		}
	}
}

// Sgemm implements kernel.GEMM.
func (packedV1) Sgemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, acc bool, c []float32, ldc int) {
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
					v1Micro(as, bs, kc, &acc)
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
