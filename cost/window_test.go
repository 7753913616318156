package cost

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"shardlab/model"
)

// gemma2Windows is gemma2-27b with and without Gemma 2's local layers: a
// 4096-token window in every second layer (Gemma 2 paper, Table 1; HF
// config sliding_window 4096; MaxText configs/models/gemma2-27b.yml
// sliding_window_size 4096), the global layers of the same heads.
func gemma2Windows(t *testing.T) (windowed, global model.Spec) {
	windowed = lookup(t, "gemma2-27b")
	windowed.SlidingWindow, windowed.GlobalAttentionEvery = 4096, 2
	global = windowed
	global.SlidingWindow, global.GlobalAttentionEvery = 0, 0
	if err := CheckTrainable(windowed); err != nil {
		t.Fatalf("CheckTrainable(gemma2-27b, window 4096) = %v, want nil", err)
	}
	return windowed, global
}

// TestFlashSkipsBlocksBehindTheWindow: at S = 8192 and W = 4096 a causal
// global layer's query sees S/2 = 4096 keys on average, a local one's
// (S·W − W²/2)/S = 4096 − 1024 = 3072, so with 23 local and 23 global
// layers of the same heads flash attention's work, and its time at the
// same GEMM shapes, is (4096 + 3072)/(2·4096) = 7/8 of every layer
// global; the step's hardware FLOPs fall by 3 passes × 4·H·Q × 23 layers
// × 1024 keys a token. Memory and the matmuls do not change.
func TestFlashSkipsBlocksBehindTheWindow(t *testing.T) {
	windowed, global := gemma2Windows(t)
	m := layout(t, "v5p-128", 1, "fsdp=64")
	est := func(s model.Spec) Estimate {
		j := NewJob(s, 8192, 64)
		j.Remat = RematNone
		e, err := EstimateStep(j, m)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	w, g := est(windowed), est(global)
	want := time.Duration(math.Round(float64(g.Time.Attention) * 7 / 8))
	if d := w.Time.Attention - want; d < -2 || d > 2 {
		t.Errorf("flash attention time with the window %v, every layer global %v: want 7/8 of it, %v", w.Time.Attention, g.Time.Attention, want)
	}
	tokens := 64 * 8192.0
	drop := 3 * 4 * 32 * 128 * 23 * 1024 * tokens
	if got := float64(g.HardwareFLOPs - w.HardwareFLOPs); math.Abs(got-drop) > 1e-9*drop {
		t.Errorf("hardware FLOPs fall by %v with the window, want %v", got, drop)
	}
	if w.Time.MXU != g.Time.MXU || w.Memory.Total() != g.Memory.Total() {
		t.Errorf("matmuls %v vs %v, memory %v vs %v: want the window to change neither", w.Time.MXU, g.Time.MXU, w.Memory.Total(), g.Memory.Total())
	}
}

// TestDotProductScoresEveryKey: MaxText's dot_product computes a local
// layer's whole [seq, seq] scores and masks them afterwards
// (layers/attention_op.py apply_attention_dot @e591f30c), so the window
// changes neither its time nor its memory (the score matrix).
func TestDotProductScoresEveryKey(t *testing.T) {
	windowed, global := gemma2Windows(t)
	m := layout(t, "v5p-128", 1, "fsdp=64")
	var got [2]Estimate
	for i, s := range []model.Spec{windowed, global} {
		j := NewJob(s, 8192, 64)
		j.Attention = AttentionDot
		e, err := EstimateStep(j, m)
		if err != nil {
			t.Fatal(err)
		}
		got[i] = e
	}
	if got[0].Time.Attention != got[1].Time.Attention || got[0].Memory.Total() != got[1].Memory.Total() || got[0].HardwareFLOPs != got[1].HardwareFLOPs {
		t.Errorf("dot_product with the window: attention %v, memory %v, FLOPs %v; every layer global %v, %v, %v; want the same",
			got[0].Time.Attention, got[0].Memory.Total(), got[0].HardwareFLOPs, got[1].Time.Attention, got[1].Memory.Total(), got[1].HardwareFLOPs)
	}
}

// TestCheckTrainableWindowShapes: a window is trainable while the global
// layers keep the local layers' KV heads and head width; other global
// heads (Gemma 4's) keep the refusal.
func TestCheckTrainableWindowShapes(t *testing.T) {
	windowed, _ := gemma2Windows(t)
	for _, c := range []struct {
		what   string
		change func(*model.Spec)
	}{
		{"global_kv_heads 4", func(s *model.Spec) { s.GlobalKVHeads = 4 }},
		{"global_head_dim 256", func(s *model.Spec) { s.GlobalHeadDim = 256 }},
		{"global_key_as_value", func(s *model.Spec) { s.GlobalKeyAsValue = true }},
	} {
		s := windowed
		c.change(&s)
		if err := CheckTrainable(s); !errors.Is(err, ErrJob) || !strings.Contains(err.Error(), "gemma2-27b (sliding_window 4096)") {
			t.Errorf("CheckTrainable(gemma2-27b with %s) = %v, want an ErrJob naming sliding_window", c.what, err)
		}
	}
	s := windowed
	s.GlobalKVHeads, s.GlobalHeadDim = 16, 128 // set, but the local layers' own
	if err := CheckTrainable(s); err != nil {
		t.Errorf("CheckTrainable(gemma2-27b, global heads as the local ones) = %v, want nil", err)
	}
}
