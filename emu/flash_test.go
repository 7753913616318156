package emu

import (
	"math"
	"math/rand/v2"
	"testing"

	"shardlab/schedule"
)

// attentionCase is random attention inputs for context chunk ci of c: 2
// sequences of 2·flashBlock+7 local queries (so queries and keys span
// several blocks), 2 query heads and 1 key/value head of width hd, keys
// and values for all c chunks, and an output gradient; entries normal
// with standard deviation sd, drawn in the order q, K, V, dO.
func attentionCase[T Float](rng *rand.Rand, hd, ci, c int, sd float64) (mb micro, q, kAll, vAll, dout Mat[T]) {
	const s, b = 2*flashBlock + 7, 2
	rnd := func(r, cols int) Mat[T] {
		m := newMat[T](r, cols)
		for i := range m.D {
			m.D[i] = T(sd * rng.NormFloat64())
		}
		return m
	}
	n := b * s
	return micro{b: b, s: s, ci: ci, c: c}, rnd(n, 2*hd), rnd(n*c, hd), rnd(n*c, hd), rnd(n, 2*hd)
}

// TestFlashAttentionMatchesDot holds the flash attention and the
// GEMM-blocked one to v1's row-by-row attention, in float64: outputs (and
// P where kept) and the gradients of Q, K and V, for queries whose keys
// span several blocks and context chunks.
func TestFlashAttentionMatchesDot(t *testing.T) {
	c := Config{Heads: 4, KVHeads: 2}
	const hd = 3
	rng := rand.New(rand.NewPCG(6, 6))
	for _, ctx := range []struct{ ci, c int }{{0, 1}, {1, 2}} {
		mb, q, kAll, vAll, dout := attentionCase[float64](rng, hd, ctx.ci, ctx.c, 2)
		want, p := attention(c, q, kAll, vAll, mb, hd)
		got, lse := attentionFlash(c, q, kAll, vAll, mb, hd)
		near := func(what string, got, want []float64) {
			t.Helper()
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
					t.Fatalf("context chunk %d of %d: %s[%d] = %.15g, with P kept %.15g", ctx.ci, ctx.c, what, i, got[i], want[i])
				}
			}
		}
		near("output", got.D, want.D)
		dq, dk, dv := attentionBack(c, q, kAll, vAll, p, dout, mb, hd)
		fq, fk, fv := attentionFlashBack(c, q, kAll, vAll, got, lse, dout, mb, hd)
		near("dQ", fq.D, dq.D)
		near("dK", fk.D, dk.D)
		near("dV", fv.D, dv.D)
		// the GEMM-blocked attention, which keeps P too
		bo, bp := attentionBlocks(c, q, kAll, vAll, mb, hd)
		near("blocked output", bo.D, want.D)
		near("blocked P", bp.D, p.D)
		bq, bk, bv := attentionBlocksBack(c, q, kAll, vAll, bp, dout, mb, hd)
		near("blocked dQ", bq.D, dq.D)
		near("blocked dK", bk.D, dk.D)
		near("blocked dV", bv.D, dv.D)
	}
}

// TestFlashAttentionShortKeys: with fewer key rows after a tile's first
// than a head's width, the float64 GEMM must read only the transposed
// operand's own layout (it read the untransposed index first and ran off
// the slice).
func TestFlashAttentionShortKeys(t *testing.T) {
	c := Config{Heads: 2, KVHeads: 1}
	const hd, s = 8, 4
	rng := rand.New(rand.NewPCG(8, 8))
	mb := micro{b: 1, s: s, c: 1}
	m := func(r, cols int) Mat[float64] {
		x := newMat[float64](r, cols)
		for i := range x.D {
			x.D[i] = rng.NormFloat64()
		}
		return x
	}
	q, kAll, vAll, dout := m(s, 2*hd), m(s, hd), m(s, hd), m(s, 2*hd)
	want, p := attention(c, q, kAll, vAll, mb, hd)
	got, lse := attentionFlash(c, q, kAll, vAll, mb, hd)
	dq, dk, dv := attentionBack(c, q, kAll, vAll, p, dout, mb, hd)
	fq, fk, fv := attentionFlashBack(c, q, kAll, vAll, got, lse, dout, mb, hd)
	for _, x := range []struct {
		what      string
		got, want []float64
	}{{"output", got.D, want.D}, {"dQ", fq.D, dq.D}, {"dK", fk.D, dk.D}, {"dV", fv.D, dv.D}} {
		for i := range x.want {
			if math.Abs(x.got[i]-x.want[i]) > 1e-12*(1+math.Abs(x.want[i])) {
				t.Fatalf("%s[%d] = %.15g, with P kept %.15g", x.what, i, x.got[i], x.want[i])
			}
		}
	}
}

// TestFlashAttentionFloat32 holds the flash attention in float32, whose
// tiles go through the GEMM kernel in use (strided, partial tiles), to the
// GEMM-blocked attention that keeps P, for queries and keys spanning
// several tiles and context chunks.
func TestFlashAttentionFloat32(t *testing.T) {
	c := Config{Heads: 4, KVHeads: 2}
	const hd = 16
	rng := rand.New(rand.NewPCG(7, 7))
	for _, ctx := range []struct{ ci, c int }{{0, 1}, {1, 2}} {
		mb, q, kAll, vAll, dout := attentionCase[float32](rng, hd, ctx.ci, ctx.c, 1)
		want, p := attentionBlocks(c, q, kAll, vAll, mb, hd)
		got, lse := attentionFlash(c, q, kAll, vAll, mb, hd)
		dq, dk, dv := attentionBlocksBack(c, q, kAll, vAll, p, dout, mb, hd)
		fq, fk, fv := attentionFlashBack(c, q, kAll, vAll, got, lse, dout, mb, hd)
		for _, m := range []struct {
			what      string
			got, want []float32
		}{{"output", got.D, want.D}, {"dQ", fq.D, dq.D}, {"dK", fk.D, dk.D}, {"dV", fv.D, dv.D}} {
			for i := range m.want {
				if d := math.Abs(float64(m.got[i] - m.want[i])); d > 1e-4*(1+math.Abs(float64(m.want[i]))) {
					t.Fatalf("context chunk %d of %d: %s[%d] = %g, with P kept %g", ctx.ci, ctx.c, m.what, i, m.got[i], m.want[i])
				}
			}
		}
	}
}

// TestFlashGradientsMatchFiniteDifferences is TestGradientsMatchFiniteDifferences
// with FlashAttention.
func TestFlashGradientsMatchFiniteDifferences(t *testing.T) {
	c := tinyConfig(false)
	c.FlashAttention = true
	p := newParams[float64](c, 3)
	rng := rand.New(rand.NewPCG(9, 9))
	mb := randomMicro(rng, c, 2)
	checkGradients(t, c, p, mb, 1e-5)
}

// TestFlashAttentionParity trains with FlashAttention on layouts that split
// attention (heads over tensor, keys over context) and holds them to one
// device as TestParityWithOneDevice does; a second run gives the same bits,
// and the losses stay near those of the attention that keeps P.
func TestFlashAttentionParity(t *testing.T) {
	run := func(accel, layout string, micro int, sched schedule.Kind, flash bool) *Result {
		c := parityModel
		c.FlashAttention = flash
		r, err := Train(TrainConfig{Model: c, Mesh: testMesh(t, accel, 1, layout), GlobalBatch: 8, MicroBatches: micro, Schedule: sched,
			Steps: 3, Seed: 5, LR: 1e-2, Data: &Synthetic{V: c.Vocab, Seed: 11}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	one := run("v5litepod-1", "", 1, schedule.OneFOneB, true)
	dot := run("v5litepod-1", "", 1, schedule.OneFOneB, false)
	for i := range one.Losses {
		if !close(one.Losses[i], dot.Losses[i]) {
			t.Errorf("step %d: loss %.8f, keeping P %.8f", i+1, one.Losses[i], dot.Losses[i])
		}
	}
	again := run("v5litepod-1", "", 1, schedule.OneFOneB, true)
	for ti, x := range one.Final.Tensors() {
		for i, v := range x {
			if math.Float32bits(v) != math.Float32bits(again.Final.Tensors()[ti][i]) {
				t.Fatalf("tensor %d element %d differs between two runs of the same seed", ti, i)
			}
		}
	}
	for _, tt := range []struct {
		layout string
		micro  int
		sched  schedule.Kind
	}{
		{"tensor=2,data=4", 1, schedule.OneFOneB},
		{"context=4,data=2", 1, schedule.OneFOneB},
		{"fsdp=2,context=2,tensor=2", 1, schedule.OneFOneB},
		{"pipeline=2,context=2,data=2", 2, schedule.GPipe},
	} {
		r := run("v5litepod-8", tt.layout, tt.micro, tt.sched, true)
		for i := range one.Losses {
			if !close(r.Losses[i], one.Losses[i]) {
				t.Errorf("%s step %d: loss %.8f, one device %.8f", tt.layout, i+1, r.Losses[i], one.Losses[i])
			}
		}
		got, want := r.Final.Tensors(), one.Final.Tensors()
		for ti := range want {
			for i := range want[ti] {
				if a, b := float64(got[ti][i]), float64(want[ti][i]); !close(a, b) {
					t.Fatalf("%s: tensor %d element %d = %.8g, one device %.8g", tt.layout, ti, i, a, b)
				}
			}
		}
	}
}

// TestFlashAttentionMemory holds EstimateMemory to the meter with
// FlashAttention, as TestEstimateMemoryMatchesMeter does without, and
// checks that the layers' activations shrink by the scores.
func TestFlashAttentionMemory(t *testing.T) {
	model := Config{Layers: 4, DModel: 32, Heads: 4, KVHeads: 2, DFF: 64, Vocab: 64, Seq: 64}
	for _, layout := range []string{"context=2,fsdp=2", "tensor=2,data=2"} {
		acts := map[bool]int64{}
		for _, flash := range []bool{false, true} {
			model.FlashAttention = flash
			tc := TrainConfig{Model: model, Mesh: testMesh(t, "v5litepod-4", 1, layout), GlobalBatch: 16, Steps: 1, Seed: 1, LR: 1e-3,
				Data: &Synthetic{V: model.Vocab, Seed: 1}}
			est, err := EstimateMemory(tc)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Train(tc)
			if err != nil {
				t.Fatal(err)
			}
			for i, d := range res.Devices {
				got, e := d.Memory, est.Devices[i]
				if e.Total() < got.Total() || float64(e.Total()) > 1.3*float64(got.Total()) {
					t.Errorf("%s flash=%v device %d: peak estimated %d bytes, measured %d (want 1 to 1.3 times)", layout, flash, i, e.Total(), got.Total())
				}
			}
			acts[flash] = res.Devices[0].Memory.Activations
		}
		if acts[true] >= acts[false] {
			t.Errorf("%s: activations %d bytes with FlashAttention, %d keeping P; want fewer", layout, acts[true], acts[false])
		}
	}
}
