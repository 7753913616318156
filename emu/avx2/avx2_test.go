package avx2

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestMicro4x16(t *testing.T) {
	if !Supported() {
		t.Skip("no AVX2+FMA on this CPU or build; package emu's tests cover the plain-Go kernel")
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, kc := range []int{1, 2, 7, 256} {
		a := make([]float32, kc*4)
		b := make([]float32, kc*16)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range b {
			b[i] = float32(rng.NormFloat64())
		}
		var c [64]float32
		if !Micro4x16(a, b, kc, &c) {
			t.Fatal("Micro4x16 refused though Supported")
		}
		for i := range 4 {
			for j := range 16 {
				var want float64
				for p := range kc {
					want += float64(a[p*4+i]) * float64(b[p*16+j])
				}
				if d := math.Abs(float64(c[i*16+j]) - want); d > 1e-4*math.Sqrt(float64(kc)) {
					t.Fatalf("kc=%d c[%d][%d] = %v, want %v", kc, i, j, c[i*16+j], want)
				}
			}
		}
	}
}
