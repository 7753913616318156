//go:build amd64 && !purego

package kernel

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// the CPU can differ from one machine to the next: checked at run time
// (x/sys/cpu also checks that the OS saves the wider registers)
var (
	supported    = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	supported512 = supported && cpu.X86.HasAVX512F
)

//go:noescape
func micro4x16(a, b *float32, kc int, c *float32)

//go:noescape
func add4x16(a, b *float32, kc int, c *float32, ldc int)

//go:noescape
func add8x32(a, b *float32, kc, lda, ldb int, c *float32, ldc int)

//go:noescape
func add8x32rows(a, b *float32, kc, lda, ldb int, c *float32, ldc int)

func peakAVX2(n int)

func peakAVX512(n int)

//go:noescape
func add32(a, b *float32, n int)

//go:noescape
func add64(a, b *float32, n int)

//go:noescape
func expSub16(dst, src *float32, n int, shift float32)

//go:noescape
func sumBoth64(a, b *float32, n int)

//go:noescape
func sumBoth32(a, b *float32, n int)

//go:noescape
func reduceFan64(ins *unsafe.Pointer, nin int, outs *unsafe.Pointer, nout int, n int)

//go:noescape
func reduceFan32(ins *unsafe.Pointer, nin int, outs *unsafe.Pointer, nout int, n int)
