package model

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestGemma4ByHand holds Gemma 4 31B's count to a hand count from
// MaxText's gemma4-31b.yml @e591f30c. A local layer: queries 5376 × 32·256
// = 44,040,192, keys and values 2 × 5376 × 16·256 = 2 × 22,020,096, output
// 44,040,192: 132,120,576. A global layer: queries 5376 × 32·512 = 88,080,384, keys
// (which are the values) 5376 × 4·512 = 11,010,048, output 88,080,384:
// 187,170,816. The GeGLU MLP 3 × 5376 × 21504 = 346,816,512, four norms
// 4 × 5376. 50 local and 10 global layers; the tied embedding 262144 ×
// 5376 = 1,409,286,144 and a final norm of 5376.
func TestGemma4ByHand(t *testing.T) {
	s := catalogSpec(t, "gemma4-31b")
	p := s.ParamCount()
	if s.LocalLayers() != 50 || s.GlobalLayers() != 10 || p.GlobalLayers != 10 {
		t.Errorf("layers: %d local, %d global, want 50 and 10", s.LocalLayers(), s.GlobalLayers())
	}
	if p.Attention != 132_120_576 || p.GlobalAttention != 187_170_816 {
		t.Errorf("attention per layer: local %d, global %d, want 132120576 and 187170816", p.Attention, p.GlobalAttention)
	}
	const layer = 346_816_512 + 4*5376
	want := int64(50*(132_120_576+layer) + 10*(187_170_816+layer) + 1_409_286_144 + 5376)
	if got := p.Total(); got != want {
		t.Errorf("ParamCount().Total() = %d, want %d", got, want)
	}
	// matmuls: the blocks' projections and the (tied) output projection
	wantMatmul := int64(50*(132_120_576+346_816_512) + 10*(187_170_816+346_816_512) + 1_409_286_144)
	if got := s.MatmulParams(); got != wantMatmul {
		t.Errorf("MatmulParams() = %d, want %d", got, wantMatmul)
	}
	for i, want := range []bool{false, false, false, false, false, true, false, false, false, false, false, true} {
		if got := s.IsGlobalLayer(i); got != want {
			t.Errorf("IsGlobalLayer(%d) = %v, want %v (five local, then one global)", i, got, want)
		}
	}
}

// TestGemma4MoEByHand: Gemma 4 26B-A4B's MoE layer from MaxText's
// gemma4-26b.yml @e591f30c: 128 experts of 3 × 2816 × 704 = 5,947,392,
// a router of 2816 × 128 = 360,448, and one shared MLP of width 2112,
// 3 × 2816 × 2112 = 17,842,176 (three experts' worth, but one matrix);
// a token runs 8 experts and the shared MLP.
func TestGemma4MoEByHand(t *testing.T) {
	s, _ := Lookup("gemma4-26b-a4b")
	p := s.ParamCount()
	if p.Expert != 5_947_392 || p.Shared != 17_842_176 || p.Router != 360_448 {
		t.Errorf("expert %d, shared %d, router %d, want 5947392, 17842176 and 360448", p.Expert, p.Shared, p.Router)
	}
	if got, want := p.ActivePerMoELayer()-p.Attention-p.Norms, int64(8*5_947_392+17_842_176+360_448); got != want {
		t.Errorf("active MLP parameters of a layer = %d, want %d", got, want)
	}
	if got, want := s.LargestMatrix(), int64(2816*16*512); got != want {
		t.Errorf("LargestMatrix() = %d, want %d (a global layer's queries)", got, want)
	}
}

// TestAttendedPairs: the pairs of a window, summed by hand.
func TestAttendedPairs(t *testing.T) {
	for _, c := range []struct {
		c, n, window int
		want         float64
	}{
		{0, 5, 0, 15},           // 1+2+3+4+5
		{0, 5, 3, 12},           // 1+2+3+3+3
		{2, 3, 3, 9},            // 3+3+3
		{1, 3, 3, 8},            // 2+3+3
		{0, 3, 3, 6},            // the window holds the sequence: 1+2+3
		{10, 1, 4, 4},           // a decode query sees the window
		{10, 1, 0, 11},          // or the whole context
		{1000, 24, 1024, 24300}, // positions 1000…1023 attend p+1 each: 1001+…+1024
		{1000, 48, 1024, 24300 + 24*1024},
	} {
		if got := AttendedPairs(c.c, c.n, c.window); got != c.want {
			t.Errorf("AttendedPairs(%d, %d, %d) = %v, want %v", c.c, c.n, c.window, got, c.want)
		}
		sum := 0
		for p := c.c; p < c.c+c.n; p++ {
			sum += AttendedKeys(p, c.window)
		}
		if float64(sum) != c.want {
			t.Errorf("sum of AttendedKeys over %d…%d (window %d) = %d, want %v", c.c, c.c+c.n-1, c.window, sum, c.want)
		}
	}
}

// TestWindowFLOPs: a sequence no longer than the window attends as if the
// local layers were global (their attention widths as they are); a longer
// one attends at most the window in the local layers.
func TestWindowFLOPs(t *testing.T) {
	s, _ := Lookup("gemma4-31b")
	g := s.Global()
	local := 4 * 32 * 256.0 // 4·H·Q of a local layer, a key
	global := 4 * 32 * 512.0
	for _, seq := range []int{1, 512, 1024, 4096, 131072} {
		keys := float64(min(seq, 1024))
		want := 50*local*keys + 10*global*float64(seq)
		if got := s.AttentionFLOPsPerToken(seq); got != want {
			t.Errorf("AttentionFLOPsPerToken(%d) = %v, want %v", seq, got, want)
		}
		if seq <= 1024 {
			full := s
			full.SlidingWindow = 1 << 24 // a window past the sequence: the full formula
			if a, b := full.FLOPsPerToken(seq, true), s.FLOPsPerToken(seq, true); a != b {
				t.Errorf("FLOPsPerToken(%d, causal): window past the sequence %v, window 1024 %v", seq, a, b)
			}
		}
	}
	if gk, lk := s.KeyFLOPs(); gk != 10*global || lk != 50*local {
		t.Errorf("KeyFLOPs() = %v, %v, want %v, %v", gk, lk, 10*global, 50*local)
	}
	if g.Head() != 512 || g.KV() != 4 || g.Windowed() {
		t.Errorf("Global() = head %d, %d KV heads, windowed %v; want 512, 4, false", g.Head(), g.KV(), g.Windowed())
	}
}

// TestValidateWindow: the sliding-window fields are all or nothing, and
// errors name the field.
func TestValidateWindow(t *testing.T) {
	base, _ := Lookup("gemma4-31b")
	for _, c := range []struct {
		name  string
		edit  func(*Spec)
		field string
	}{
		{"pattern without window", func(s *Spec) { s.SlidingWindow = 0 }, "global_attention_every"},
		{"global dims without window", func(s *Spec) { s.SlidingWindow, s.GlobalAttentionEvery = 0, 0 }, "global_kv_heads"},
		{"key as value without window", func(s *Spec) {
			s.SlidingWindow, s.GlobalAttentionEvery, s.GlobalKVHeads, s.GlobalHeadDim = 0, 0, 0, 0
		}, "global_key_as_value"},
		{"no pattern", func(s *Spec) { s.GlobalAttentionEvery = 0 }, "global_attention_every"},
		{"pattern of one", func(s *Spec) { s.GlobalAttentionEvery = 1 }, "global_attention_every"},
		{"pattern past layers", func(s *Spec) { s.GlobalAttentionEvery = 61 }, "global_attention_every"},
		{"negative window", func(s *Spec) { s.SlidingWindow = -1 }, "sliding_window"},
		{"global kv not a divisor", func(s *Spec) { s.GlobalKVHeads = 5 }, "global_kv_heads"},
		{"negative global head", func(s *Spec) { s.GlobalHeadDim = -1 }, "global_head_dim"},
		{"with linear attention", func(s *Spec) {
			s.FullAttentionEvery, s.LinearKeyHeads, s.LinearKeyHeadDim, s.LinearValueHeads, s.LinearValueHeadDim, s.LinearConvKernel = 4, 1, 1, 1, 1, 1
		}, "sliding_window"},
		{"shared width without shared experts", func(s *Spec) { s.Experts, s.ExpertsPerToken, s.SharedExpertDFF = 8, 2, 100 }, "shared_expert_d_ff"},
	} {
		s := base
		c.edit(&s)
		err := s.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Validate() = %v, want a FieldError on %s", c.name, err, c.field)
		}
	}
	spec := "name: w\nlayers: 6\nd_model: 64\nheads: 4\nd_ff: 128\nvocab: 100\nseq_len: 4096\nsliding_window: 512\nglobal_attention_every: 3\nglobal_head_dim: 32\n"
	s, err := Parse([]byte(spec))
	if err != nil || s.LocalLayers() != 4 || s.GlobalLayers() != 2 || s.Global().Head() != 32 {
		t.Errorf("Parse(a windowed spec) = %d local, %d global, global head %d, %v; want 4, 2, 32, nil", s.LocalLayers(), s.GlobalLayers(), s.Global().Head(), err)
	}
	if _, err := Parse([]byte(strings.Replace(spec, "sliding_window: 512", "sliding_window: 1.5", 1))); err == nil || !strings.Contains(err.Error(), "sliding_window") {
		t.Errorf("Parse(sliding_window 1.5) = %v, want an error naming sliding_window", err)
	}
}

// TestCausalWindowFLOPsByHand: four layers, every second global, a window
// of 3 over 8 positions, 2 heads of 4 (H·Q = 8). Causal pairs by hand: a
// global layer S²/2 = 32 (as MaxText halves S²); a local layer
// S·W − W²/2 = 24 − 4.5 = 19.5 (MaxText's formula), the keys
// 1, 2, 3, 3, 3, 3, 3, 3 = 21 its queries see less W/2 = 1.5. Per token
// and forward, 4·H·Q·pairs/S summed: 4·8·(2·32 + 2·19.5)/8 = 412; a
// training token 3 times that, 1236, beside 6 per matmul parameter.
func TestCausalWindowFLOPsByHand(t *testing.T) {
	s := Spec{Name: "tiny-window", Layers: 4, DModel: 8, Heads: 2, KVHeads: 2, HeadDim: 4, DFF: 16, Vocab: 32, SeqLen: 8,
		SlidingWindow: 3, GlobalAttentionEvery: 2}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := s.CausalAttentionFLOPsPerToken(8); got != 412 {
		t.Errorf("CausalAttentionFLOPsPerToken(8) = %v, want 412", got)
	}
	if got := s.FLOPsPerToken(8, true) - 6*float64(s.MatmulParams()); got != 1236 {
		t.Errorf("FLOPsPerToken(8, causal) less 6·matmul params = %v, want 1236", got)
	}
	// not causal: a local query sees the window, 3 keys; a global one 8
	if got := s.AttentionFLOPsPerToken(8); got != 4*8*(2*8+2*3) {
		t.Errorf("AttentionFLOPsPerToken(8) = %v, want %v", got, 4*8*(2*8+2*3))
	}
	full := s
	full.SlidingWindow, full.GlobalAttentionEvery = 0, 0
	if a, b := full.CausalAttentionFLOPsPerToken(8), full.AttentionFLOPsPerToken(8)/2; a != b || a != 4*8*4*4 {
		t.Errorf("without a window CausalAttentionFLOPsPerToken(8) = %v, want half of %v = %v", a, 2*b, 4*8*4*4)
	}
}

// TestGemma2FLOPsMaxText: gemma2-9b's and gemma2-27b's attention FLOPs
// per training token as MaxText's calculate_gemma2_tflops_training_per_device
// (utils/maxtext_utils.py @e591f30c) writes them, one decoder layer of its
// per [local, global] pair: (2·S²·H·D + 4·(S·W − W²/2)·H·D) · layers/2 · 3
// per sequence, W = min(sliding_window_size, S); divided by the S tokens.
func TestGemma2FLOPsMaxText(t *testing.T) {
	for _, name := range []string{"gemma2-9b", "gemma2-27b"} {
		s, _ := Lookup(name)
		if !s.Windowed() {
			t.Fatalf("%s has no sliding window", name)
		}
		S, W, H, D := 8192.0, 4096.0, float64(s.Heads), float64(s.HeadDim)
		global := 2 * S * S * H * D
		local := 4 * (S*W - 0.5*W*W) * H * D
		want := (global + local) * float64(s.Layers/2) * 3 / S
		got := s.FLOPsPerToken(8192, true) - 6*float64(s.MatmulParams())
		if math.Abs(got-want) > 1e-12*want {
			t.Errorf("%s: attention FLOPs per causal training token = %v, want MaxText's %v", name, got, want)
		}
	}
}
