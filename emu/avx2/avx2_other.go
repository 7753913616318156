//go:build !amd64 || purego

package avx2

const supported = false

func micro4x16(a, b *float32, kc int, c *float32) { panic("avx2: not built for this platform") }
