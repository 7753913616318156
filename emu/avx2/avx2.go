// Package avx2 is the emulator's GEMM micro-kernel in Go assembly (AVX2
// with fused multiply-add), kept apart from package emu because a package
// cannot mix Go assembly with the cgo of emu's optional OpenBLAS path.
package avx2

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

// Supported reports whether Micro4x16 runs on this CPU and build.
func Supported() bool { return supported }
