package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

func TestMicro4x16(t *testing.T) {
	if !Supported() {
		t.Skip("no AVX2+FMA on this CPU or build; the plain-Go kernel's tests cover it")
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

// TestAddKernels checks Add4x16 and Add8x32 against a float64 sum, and
// that the AVX-512 kernel gives the AVX2 kernel's bits (one FMA chain per
// element, k in order, in both).
func TestAddKernels(t *testing.T) {
	if !Supported() {
		t.Skip("no AVX2+FMA on this CPU or build; the plain-Go kernel's tests cover it")
	}
	rng := rand.New(rand.NewPCG(2, 2))
	for _, kc := range []int{1, 3, 64, 256} {
		a := make([]float32, kc*8)
		b := make([]float32, kc*32)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range b {
			b[i] = float32(rng.NormFloat64())
		}
		const ldc = 40
		c4 := make([]float32, 8*ldc)
		for i := range c4 {
			c4[i] = 1
		}
		c8 := append([]float32(nil), c4...)
		// the 8×32 block as four 4×16 blocks, from repacked strips
		for i0 := 0; i0 < 8; i0 += 4 {
			for j0 := 0; j0 < 32; j0 += 16 {
				as := make([]float32, kc*4)
				bs := make([]float32, kc*16)
				for p := range kc {
					copy(as[p*4:p*4+4], a[p*8+i0:p*8+i0+4])
					copy(bs[p*16:p*16+16], b[p*32+j0:p*32+j0+16])
				}
				if !Add4x16(as, bs, kc, c4[i0*ldc+j0:], ldc) {
					t.Fatal("Add4x16 refused though Supported")
				}
			}
		}
		for i := range 8 {
			for j := range 32 {
				var want float64
				for p := range kc {
					want += float64(a[p*8+i]) * float64(b[p*32+j])
				}
				if d := math.Abs(float64(c4[i*ldc+j]) - 1 - want); d > 1e-4*math.Sqrt(float64(kc)) {
					t.Fatalf("Add4x16 kc=%d c[%d][%d] = %v, want %v", kc, i, j, c4[i*ldc+j]-1, want)
				}
			}
			for j := 32; j < ldc; j++ {
				if c4[i*ldc+j] != 1 {
					t.Fatalf("Add4x16 kc=%d wrote c[%d][%d] outside the block", kc, i, j)
				}
			}
		}
		if !Supported512() {
			continue
		}
		if !Add8x32(a, b, kc, c8, ldc) {
			t.Fatal("Add8x32 refused though Supported512")
		}
		for i := range c8 {
			if math.Float32bits(c8[i]) != math.Float32bits(c4[i]) {
				t.Fatalf("kc=%d element %d: Add8x32 = %v, Add4x16 = %v, want the same bits", kc, i, c8[i], c4[i])
			}
		}
	}
}

// TestAdd checks Add and SumBoth against the plain loop, bit for bit, at lengths
// around the vector widths.
func TestAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int{0, 1, 31, 32, 33, 63, 64, 65, 127, 1000, 4099} {
		dst := make([]float32, n)
		x := make([]float32, n+3)
		for i := range dst {
			dst[i] = float32(rng.NormFloat64())
		}
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		want := append([]float32(nil), dst...)
		for i := range want {
			want[i] += x[i]
		}
		other := append([]float32(nil), dst...)
		y := append([]float32(nil), x...)
		Add(dst, x)
		SumBoth(other, y)
		for i := range dst {
			if math.Float32bits(dst[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: element %d = %v, want %v", n, i, dst[i], want[i])
			}
			if math.Float32bits(other[i]) != math.Float32bits(want[i]) || math.Float32bits(y[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: SumBoth element %d = %v and %v, want %v in both", n, i, other[i], y[i], want[i])
			}
		}
		if len(y) > n && y[n] != x[n] {
			t.Fatalf("n=%d: SumBoth wrote past a's length", n)
		}
	}
}

// TestExpSub holds ExpSub to math.Exp within 3 float32 ulps over the range
// softmax and SiLU use, and checks the edges: overflow to +Inf, underflow
// to 0, NaN.
func TestExpSub(t *testing.T) {
	if !Supported512() {
		t.Skip("no AVX-512 on this CPU or build")
	}
	var src []float32
	for x := -87.0; x <= 88.5; x += 0.0137 {
		src = append(src, float32(x))
	}
	src = append(src, 0, -0.0, 1e-30, -1e-30)
	const shift = 0.25
	dst := make([]float32, len(src))
	if !ExpSub(dst, src, shift) {
		t.Fatal("ExpSub refused though Supported512")
	}
	for i, x := range src {
		want := math.Exp(float64(x - shift)) // the subtraction rounds to float32, as the callers' does
		ulp := float64(math.Nextafter32(float32(want), float32(math.Inf(1)))) - float64(float32(want))
		if d := math.Abs(float64(dst[i]) - want); d > 3*ulp {
			t.Fatalf("exp(%v − %v) = %v, want %v (%.1f ulps off)", x, shift, dst[i], want, d/ulp)
		}
	}
	edge := []float32{100, 1e30, -200, -1e30, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	out := make([]float32, len(edge))
	ExpSub(out, edge, 0)
	if !math.IsInf(float64(out[0]), 1) || !math.IsInf(float64(out[1]), 1) || out[2] != 0 || out[3] != 0 ||
		!math.IsNaN(float64(out[4])) || !math.IsInf(float64(out[5]), 1) || out[6] != 0 {
		t.Errorf("exp of %v = %v, want +Inf +Inf 0 0 NaN +Inf 0", edge, out)
	}
}

// TestReduceFan holds ReduceFan to the plain loop, bit for bit: sums left
// to right over every input, written to every output, with outputs that
// are inputs themselves (the direct all-reduce's case) and apart, at
// lengths around the vector widths.
func TestReduceFan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 31, 32, 63, 64, 65, 1000, 4099} {
		for _, nin := range []int{1, 2, 3, 8, maxFan + 1, 3 * maxFan} {
			for _, aliased := range []bool{false, true} {
				ins := make([][]float32, nin)
				for k := range ins {
					ins[k] = make([]float32, n)
					for i := range ins[k] {
						ins[k][i] = float32(rng.NormFloat64())
					}
				}
				want := make([]float32, n)
				for i := range want {
					s := ins[0][i]
					for _, x := range ins[1:] {
						s += x[i]
					}
					want[i] = s
				}
				outs := [][]float32{make([]float32, n), make([]float32, n)}
				if aliased {
					outs = ins // every input is an output too
				}
				if m := n &^ 31; Supported() && m > 0 && !aliased && nin <= maxFan {
					// the AVX2 kernel too, which ReduceFan passes over for
					// AVX-512 where the CPU has it
					var ip, op [maxFan]unsafe.Pointer
					for k := range ins {
						ip[k] = unsafe.Pointer(&ins[k][0])
					}
					for k := range outs {
						op[k] = unsafe.Pointer(&outs[k][0])
					}
					reduceFan32(&ip[0], len(ins), &op[0], len(outs), m)
					for i := range m {
						if math.Float32bits(outs[1][i]) != math.Float32bits(want[i]) {
							t.Fatalf("AVX2, n %d, %d inputs: element %d = %v, want %v", n, nin, i, outs[1][i], want[i])
						}
					}
					clear(outs[1])
				}
				ReduceFan(outs, ins)
				for k, y := range outs {
					for i := range y {
						if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
							t.Fatalf("n %d, %d inputs, aliased %v: output %d element %d = %v, want %v", n, nin, aliased, k, i, y[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestAdd8x32Rows: reading an untransposed A in place by rows gives the
// packed kernel's bits.
func TestAdd8x32Rows(t *testing.T) {
	if !Supported512() {
		t.Skip("no AVX-512 on this CPU or build")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, kc := range []int{1, 3, 64, 256} {
		const lda, ldb, ldc = 300, 40, 36
		a := make([]float32, 8*lda)
		b := make([]float32, kc*ldb)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range b {
			b[i] = float32(rng.NormFloat64())
		}
		packed := make([]float32, kc*8)
		for p := range kc {
			for ii := range 8 {
				packed[p*8+ii] = a[ii*lda+p]
			}
		}
		want := make([]float32, 8*ldc)
		got := make([]float32, 8*ldc)
		for i := range want {
			want[i] = float32(i)
			got[i] = float32(i)
		}
		Add8x32Strided(packed, 8, b, ldb, kc, want, ldc)
		Add8x32Rows(a, lda, b, ldb, kc, got, ldc)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("kc %d: element %d = %v, packed %v", kc, i, got[i], want[i])
			}
		}
	}
}
