package emu

import (
	"math"
	"testing"

	"shardlab/emu/kernel"
)

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

// V1Layers makes packedV1 a v1Layers kernel: training with it computes
// attention row by row and exp one element at a time, as v1 did.
func (packedV1) V1Layers() {}

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

// TestV1PathOnlyByKernel holds the v1 path to the kernel that asks for it:
// packedV1 selects v1's layers, the Go kernel does not, and a training on
// v1's path (row-by-row attention, element-wise exp: a second
// implementation) gives the current path's losses to float32 rounding.
func TestV1PathOnlyByKernel(t *testing.T) {
	if !onV1Path(packedV1{}) || onV1Path(kernel.Go()) {
		t.Fatalf("onV1Path(packedV1) = %v, onV1Path(Go) = %v; want true, false", onV1Path(packedV1{}), onV1Path(kernel.Go()))
	}
	m := testMesh(t, "v5litepod-4", 1, "fsdp=2,tensor=2")
	c := Config{Layers: 2, DModel: 32, Heads: 4, KVHeads: 2, DFF: 64, Vocab: 64, Seq: 16}
	tc := TrainConfig{Model: c, Mesh: m, GlobalBatch: 4, MicroBatches: 1, Steps: 3, Seed: 1, LR: 3e-3, Data: &Synthetic{V: 64, Seed: 1}}
	now, err := Train(tc)
	if err != nil {
		t.Fatal(err)
	}
	tc.GEMM = packedV1{}
	v1, err := Train(tc)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range now.Losses {
		if d := math.Abs(l - v1.Losses[i]); d > 1e-4*math.Abs(l) {
			t.Errorf("step %d: loss %.7f on the current path, %.7f on v1's", i, l, v1.Losses[i])
		}
	}
}
