package cost

import (
	"math"
	"testing"
	"time"

	"shardlab/model"
)

// TestFlashSkipsBlocksOutsideTheChunk: Llama 4 Maverick at 32768 tokens,
// whose 36 RoPE layers of 48 attend causally within chunks of 8192
// (MaxText's CHUNK layers, splash's ChunkedCausalMask): a chunked
// layer's query sees 4096 keys on average (MaxText's c/2; exactly
// (c+1)/2), a global one's 16384, so flash attention's work, and its time
// at the same GEMM shapes, is (12·16384 + 36·4096)/(48·16384) = 7/16 of
// every layer global; the step's hardware FLOPs fall by 3 passes ×
// 4·H·D × 36 layers × 12288 keys a token (H·D = 40·128). dot_product
// scores every key whatever the mask, so it does not change. Matmuls
// and memory do not change.
func TestFlashSkipsBlocksOutsideTheChunk(t *testing.T) {
	chunked := lookup(t, "llama4-maverick")
	whole := chunked
	whole.AttentionChunk = 0
	m := layout(t, "v5p-512", 1, "fsdp=2,expert=128")
	est := func(s model.Spec, a AttentionKind) Estimate {
		j := NewJob(s, 32768, 256)
		j.Remat, j.Attention = RematNone, a
		e, err := EstimateStep(j, m)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	c, w := est(chunked, AttentionFlash), est(whole, AttentionFlash)
	want := time.Duration(math.Round(float64(w.Time.Attention) * 7 / 16))
	if d := c.Time.Attention - want; d < -2 || d > 2 {
		t.Errorf("flash attention time chunked %v, every layer global %v: want 7/16 of it, %v", c.Time.Attention, w.Time.Attention, want)
	}
	tokens := 256 * 32768.0
	drop := 3 * 4 * 40 * 128 * 36 * 12288 * tokens
	if got := float64(w.HardwareFLOPs - c.HardwareFLOPs); math.Abs(got-drop) > 1e-9*drop {
		t.Errorf("hardware FLOPs fall by %v with the chunk, want %v", got, drop)
	}
	if c.Time.MXU != w.Time.MXU || c.Memory.Total() != w.Memory.Total() {
		t.Errorf("matmuls %v vs %v, memory %v vs %v: want the chunk to change neither", c.Time.MXU, w.Time.MXU, c.Memory.Total(), w.Memory.Total())
	}
	cd, wd := est(chunked, AttentionDot), est(whole, AttentionDot)
	if cd.Time.Attention != wd.Time.Attention || cd.HardwareFLOPs != wd.HardwareFLOPs {
		t.Errorf("dot_product chunked: attention %v, FLOPs %v; every layer global %v, %v; want the same", cd.Time.Attention, cd.HardwareFLOPs, wd.Time.Attention, wd.HardwareFLOPs)
	}
}
