package emu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"shardlab/schedule"

	"shardlab/emu/kernel"
)

// attentionCase is random attention inputs for context chunk ci of c: b
// sequences of s local queries, 2 query heads and 1 key/value head of
// width hd, keys and values for all c chunks, and an output gradient;
// entries normal with standard deviation sd, drawn in the order q, K, V,
// dO.
func attentionCase[T Float](rng *rand.Rand, b, s, hd, ci, c int, sd float64) (mb micro, q, kAll, vAll, dout Mat[T]) {
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

// near fails t at the first element of got that is off want by more than
// tol·(1+|want|).
func near[T Float](t *testing.T, tol float64, what string, got, want []T) {
	t.Helper()
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if math.Abs(g-w) > tol*(1+math.Abs(w)) {
			t.Fatalf("%s[%d] = %.15g, with P kept %.15g", what, i, g, w)
		}
	}
}

// manyBlocks is the local sequence length the attention tests use so that
// queries and keys span several flash blocks (and a partial one).
const manyBlocks = 2*flashBlock + 7

// TestFlashAttentionMatchesDot holds the flash attention and the
// GEMM-blocked one to v1's row-by-row attention, in float64: outputs (and
// P where kept) and the gradients of Q, K and V, for queries whose keys
// span several blocks and context chunks.
func TestFlashAttentionMatchesDot(t *testing.T) {
	c := Config{Heads: 4, KVHeads: 2}
	const hd = 3
	rng := rand.New(rand.NewPCG(6, 6))
	for _, ctx := range []struct{ ci, c int }{{0, 1}, {1, 2}} {
		mb, q, kAll, vAll, dout := attentionCase[float64](rng, 2, manyBlocks, hd, ctx.ci, ctx.c, 2)
		at := fmt.Sprintf("context chunk %d of %d: ", ctx.ci, ctx.c)
		want, p := attention(c, q, kAll, vAll, mb, hd)
		got, lse := attentionFlash(kernel.Go(), c, q, kAll, vAll, mb, hd)
		near(t, 1e-12, at+"output", got.D, want.D)
		dq, dk, dv := attentionBack(c, q, kAll, vAll, p, dout, mb, hd)
		fq, fk, fv := attentionFlashBack(kernel.Go(), c, q, kAll, vAll, got, lse, dout, mb, hd)
		near(t, 1e-12, at+"dQ", fq.D, dq.D)
		near(t, 1e-12, at+"dK", fk.D, dk.D)
		near(t, 1e-12, at+"dV", fv.D, dv.D)
		// the GEMM-blocked attention, which keeps P too
		bo, bp := attentionBlocks(kernel.Go(), c, q, kAll, vAll, mb, hd)
		near(t, 1e-12, at+"blocked output", bo.D, want.D)
		near(t, 1e-12, at+"blocked P", bp.D, p.D)
		bq, bk, bv := attentionBlocksBack(kernel.Go(), c, q, kAll, vAll, bp, dout, mb, hd)
		near(t, 1e-12, at+"blocked dQ", bq.D, dq.D)
		near(t, 1e-12, at+"blocked dK", bk.D, dk.D)
		near(t, 1e-12, at+"blocked dV", bv.D, dv.D)
	}
}

// TestFlashAttentionShortKeys: with fewer key rows after a tile's first
// than a head's width, the float64 GEMM must read only the transposed
// operand's own layout (it read the untransposed index first and ran off
// the slice).
func TestFlashAttentionShortKeys(t *testing.T) {
	c := Config{Heads: 2, KVHeads: 1}
	const hd = 8
	mb, q, kAll, vAll, dout := attentionCase[float64](rand.New(rand.NewPCG(8, 8)), 1, 4, hd, 0, 1, 1)
	want, p := attention(c, q, kAll, vAll, mb, hd)
	got, lse := attentionFlash(kernel.Go(), c, q, kAll, vAll, mb, hd)
	dq, dk, dv := attentionBack(c, q, kAll, vAll, p, dout, mb, hd)
	fq, fk, fv := attentionFlashBack(kernel.Go(), c, q, kAll, vAll, got, lse, dout, mb, hd)
	near(t, 1e-12, "output", got.D, want.D)
	near(t, 1e-12, "dQ", fq.D, dq.D)
	near(t, 1e-12, "dK", fk.D, dk.D)
	near(t, 1e-12, "dV", fv.D, dv.D)
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
		mb, q, kAll, vAll, dout := attentionCase[float32](rng, 2, manyBlocks, hd, ctx.ci, ctx.c, 1)
		at := fmt.Sprintf("context chunk %d of %d: ", ctx.ci, ctx.c)
		want, p := attentionBlocks(kernel.Go(), c, q, kAll, vAll, mb, hd)
		got, lse := attentionFlash(kernel.Go(), c, q, kAll, vAll, mb, hd)
		dq, dk, dv := attentionBlocksBack(kernel.Go(), c, q, kAll, vAll, p, dout, mb, hd)
		fq, fk, fv := attentionFlashBack(kernel.Go(), c, q, kAll, vAll, got, lse, dout, mb, hd)
		near(t, 1e-4, at+"output", got.D, want.D)
		near(t, 1e-4, at+"dQ", fq.D, dq.D)
		near(t, 1e-4, at+"dK", fk.D, dk.D)
		near(t, 1e-4, at+"dV", fv.D, dv.D)
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
