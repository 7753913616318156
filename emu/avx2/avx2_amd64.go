//go:build amd64 && !purego

package avx2

import "golang.org/x/sys/cpu"

// the CPU can differ from one machine to the next: checked at run time
var supported = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func micro4x16(a, b *float32, kc int, c *float32)
