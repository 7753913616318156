//go:build !amd64 || purego

package kernel

import "unsafe"

const (
	supported    = false
	supported512 = false
)

func micro4x16(a, b *float32, kc int, c *float32) { panic("kernel: not built for this platform") }
func add4x16(a, b *float32, kc int, c *float32, ldc int) {
	panic("kernel: not built for this platform")
}
func add8x32(a, b *float32, kc, lda, ldb int, c *float32, ldc int) {
	panic("kernel: not built for this platform")
}
func add8x32rows(a, b *float32, kc, lda, ldb int, c *float32, ldc int) {
	panic("kernel: not built for this platform")
}
func peakAVX2(n int)   { panic("kernel: not built for this platform") }
func peakAVX512(n int) { panic("kernel: not built for this platform") }

func add32(a, b *float32, n int) { panic("kernel: not built for this platform") }
func add64(a, b *float32, n int) { panic("kernel: not built for this platform") }

func expSub16(dst, src *float32, n int, shift float32) { panic("kernel: not built for this platform") }

func sumBoth64(a, b *float32, n int) { panic("kernel: not built for this platform") }
func sumBoth32(a, b *float32, n int) { panic("kernel: not built for this platform") }

func reduceFan64(ins *unsafe.Pointer, nin int, outs *unsafe.Pointer, nout int, n int) {
	panic("kernel: not built for this platform")
}
func reduceFan32(ins *unsafe.Pointer, nin int, outs *unsafe.Pointer, nout int, n int) {
	panic("kernel: not built for this platform")
}
