package model

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestPublishedParamCounts(t *testing.T) {
	// Each catalog row cites its published count (Spec.Source); the count we
	// derive from the shape must be within 0.5 % of it.
	want := map[string]bool{
		"gpt3-175b": true, "llama2-7b": true, "llama2-13b": true, "llama2-70b": true,
		"llama3-8b": true, "llama3-70b": true, "llama3-405b": true, "gemma2-9b": true, "gemma2-27b": true,
		"mixtral-8x7b": true, "mixtral-8x22b": true, "deepseek3-671b": true, "qwen3-235b-a22b": true,
		"llama4-maverick": true, "gemma4-31b": true, "gemma4-26b-a4b": true,
	}
	for _, s := range Catalog() {
		delete(want, s.Name)
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		got := s.ParamCount().Total()
		rel := math.Abs(float64(got-s.Published)) / float64(s.Published)
		if rel > 0.005 {
			t.Errorf("%s: ParamCount = %d, published %d (%s): off by %.2f%%", s.Name, got, s.Published, s.Source, 100*rel)
		}
		if s.MoE() != (s.PublishedActive > 0) {
			t.Errorf("%s: MoE %v but published active count %d", s.Name, s.MoE(), s.PublishedActive)
		}
		if s.PublishedActive > 0 {
			got := s.ParamCount().Active()
			if _, ok := activeWithoutInputEmbedding[s.Name]; ok {
				got -= s.ParamCount().Embedding
			}
			// Active counts are published rounded ("37B"): the count must
			// round to the published figure at its stated precision, or be
			// within 0.5 % of it when that is looser.
			tol := max(0.005*float64(s.PublishedActive), float64(statedPrecision(s.PublishedActive))/2)
			if math.Abs(float64(got-s.PublishedActive)) > tol {
				t.Errorf("%s: active params = %d, published %d (%s): off by %.2f%%", s.Name, got, s.PublishedActive, s.Source,
					100*float64(got-s.PublishedActive)/float64(s.PublishedActive))
			}
		}
	}
	for name := range want {
		t.Errorf("catalog lacks %s", name)
	}
}

// activeWithoutInputEmbedding names the catalog models whose published
// active count leaves out the input embedding, a table lookup rather than a
// matmul, and why we say so. shardlab's Params.Active counts it (as
// Mistral's 12.9B for Mixtral 8x7B does).
var activeWithoutInputEmbedding = map[string]string{
	// The technical report does not say which convention it uses: counting
	// the input embedding gives 37.55B, which rounds to 38B, not the
	// published 37B; without it, 36.63B.
	"deepseek3-671b": "inferred: only the count without the input embedding rounds to 37B",
}

// statedPrecision is the unit of the last digit a published count states,
// read from its trailing zeros (37e9 states billions, 12.9e9 hundreds of
// millions), at most a billion.
func statedPrecision(n int64) int64 {
	p := int64(1)
	for p < 1e9 && n%(p*10) == 0 {
		p *= 10
	}
	return p
}

func TestStatedPrecision(t *testing.T) {
	for n, want := range map[int64]int64{37e9: 1e9, 12_900_000_000: 1e8, 400e9: 1e9, 8_030_261_248: 1, 5_130_000_000: 1e7} {
		if got := statedPrecision(n); got != want {
			t.Errorf("statedPrecision(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestMoEFLOPsPerTokenMatchMaxTextLogs(t *testing.T) {
	// MaxText logs TFLOP/s per device from its own model-FLOPs formula
	// (calculate_tflops_training_per_device, src/maxtext/utils/maxtext_utils.py),
	// active experts only; FLOPs per token = TFLOP/s x step time x devices /
	// tokens per step. Causal attention is halved in logs after MaxText's
	// July 2025 change and whole before it.
	for _, c := range []struct {
		model       string
		seq         int
		causal      bool
		tflops, sec float64
		devices     float64
		tokens      float64
		source      string
	}{
		// tpu-recipes training/trillium/Mixtral-8x22B-MaxText/README.md @c8cfe2f6 (log of Feb 2025):
		// v6e-256, 2048 x 4096 tokens, 24.706 s/step, 332.463 TFLOP/s/device.
		{"mixtral-8x22b", 4096, false, 332.463, 24.706, 256, 2048 * 4096, "tpu-recipes Mixtral-8x22B v6e-256"},
		// tpu-recipes training/v5p/DeepSeek3-671B-MaxText/README.md @c8cfe2f6 (Oct 2025):
		// v5p-1024 (512 chips), total_weights 25,165,824, 90.668 s/step, 152.415 TFLOP/s/device.
		{"deepseek3-671b", 8192, true, 152.415, 90.668, 512, 25_165_824, "tpu-recipes DeepSeek3-671B v5p-1024"},
		// tpu-recipes training/ironwood/README.md @c8cfe2f6: Qwen3-235B-A22B on tpu7x-4x8x8
		// (256 chips), 8192 x 4096 tokens, 30.87 s/step, 629.79 TFLOP/s per chip.
		{"qwen3-235b-a22b", 4096, true, 629.79, 30.87, 256, 8192 * 4096, "tpu-recipes Ironwood Qwen3-235B-A22B"},
	} {
		s, ok := Lookup(c.model)
		if !ok {
			t.Fatalf("catalog lacks %s", c.model)
		}
		want := c.tflops * 1e12 * c.sec * c.devices / c.tokens
		got := s.FLOPsPerToken(c.seq, c.causal)
		if rel := (got - want) / want; math.Abs(rel) > 0.005 {
			t.Errorf("%s: FLOPs per token %.4g, MaxText's log (%s) %.4g: off by %+.1f%%", c.model, got, c.source, want, 100*rel)
		} else {
			t.Logf("%s: FLOPs per token %.4g vs %.4g from %s (%+.2f%%)", c.model, got, want, c.source, 100*rel)
		}
	}
}

func TestParamBreakdownByHand(t *testing.T) {
	// Llama 3 8B by hand: per layer Q 4096², K and V 4096·1024 each, O 4096²,
	// MLP 3·4096·14336, two RMSNorms of 4096; embeddings 128256·4096, untied.
	s, _ := Lookup("llama3-8b")
	p := s.ParamCount()
	if p.Attention != 2*4096*4096+2*4096*1024 || p.MLP != 3*4096*14336 || p.Norms != 2*4096 ||
		p.Embedding != 128256*4096 || p.Output != 128256*4096 || p.FinalNorm != 4096 {
		t.Errorf("llama3-8b breakdown = %+v", p)
	}
}

func TestFLOPsPerTokenMatchesKorthikanti(t *testing.T) {
	// Korthikanti et al. 2022 (arXiv 2205.05198) §6: model FLOPs per
	// iteration 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)) for GPT models, i.e. per
	// token 72·l·h² + 12·l·h·s + 6·h·V. A second, independent formula.
	s, _ := Lookup("gpt3-175b")
	l, h, v, seq := 96.0, 12288.0, 50257.0, 2048.0
	want := 72 * seq * l * h * h * (1 + seq/(6*h) + v/(12*l*h)) / seq
	got := s.FLOPsPerToken(2048, false)
	if math.Abs(got-want)/want > 1e-12 {
		t.Errorf("FLOPsPerToken(gpt3) = %g, want %g", got, want)
	}
	// Causal halving removes half the attention term (MaxText PR 2031).
	if d := got - s.FLOPsPerToken(2048, true); math.Abs(d-6*l*h*seq) > 1 {
		t.Errorf("causal saving = %g, want %g", d, 6*l*h*seq)
	}
}

func TestFLOPsPerTokenPaLM(t *testing.T) {
	// PaLM App. B: 6N + 12·L·H·Q·T, with N the parameters used in matmuls.
	// For Llama 3 70B at T = 8192 by hand: N_matmul = 80·(2·8192·8192 +
	// 2·8192·1024 + 3·8192·28672) + 128256·8192.
	s, _ := Lookup("llama3-70b")
	n := 80.0*(2*8192*8192+2*8192*1024+3*8192*28672) + 128256*8192
	want := 6*n + 12*80*64*128*8192
	if got := s.FLOPsPerToken(8192, false); got != want {
		t.Errorf("FLOPsPerToken(llama3-70b) = %g, want %g", got, want)
	}
}

func TestLookup(t *testing.T) {
	for _, name := range []string{"llama3-8b", "Llama-3-8B", "LLAMA3_8B", "llama 3 8b"} {
		if s, ok := Lookup(name); !ok || s.Name != "llama3-8b" {
			t.Errorf("Lookup(%q) = %q, %v", name, s.Name, ok)
		}
	}
	if _, ok := Lookup("llama4"); ok {
		t.Error("Lookup(llama4) found something")
	}
}

func TestParse(t *testing.T) {
	yml := "name: tiny\nlayers: 2\nd_model: 64\nheads: 4\nkv_heads: 2\nd_ff: 256\nvocab: 256\nseq_len: 128\ngated_mlp: true\n"
	s, err := Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	js := `{"name":"tiny","layers":2,"d_model":64,"heads":4,"kv_heads":2,"d_ff":256,"vocab":256,"seq_len":128,"gated_mlp":true}`
	s2, err := Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if s != s2 || s.KV() != 2 || s.Head() != 16 {
		t.Errorf("YAML %+v, JSON %+v", s, s2)
	}
	// MaxText's 2023 decoder layer, as the validate table writes it
	p, err := Parse([]byte(yml + "norms_per_layer: 1\nparallel_block: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	seq := s
	seq.NormsPerLayer = 1
	if !p.ParallelBlock || p.Norms() != 1 || p.ParamCount() != seq.ParamCount() {
		t.Errorf("parallel_block: %+v, want ParallelBlock with one norm and the sequential layer's other parameters", p)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", "empty spec"},
		{"layers: [", "malformed spec"},
		{"name: x\nlayer: 2\n", `model: x: line 2: field "layer" is not a spec field, want one of name, layers, d_model,`},
		{"name: x\nlayers: -1\nd_model: 64\nheads: 4\nd_ff: 1\nvocab: 1\nseq_len: 1\n", "field layers = -1, want a positive integer"},
		{"name: x\nlayers: 1\nd_model: 64\nheads: 4\nkv_heads: 3\nd_ff: 1\nvocab: 1\nseq_len: 1\n", "field kv_heads = 3, want 0 (= heads) or a divisor of heads (4)"},
		{"name: x\nlayers: 1\nd_model: 65\nheads: 4\nd_ff: 1\nvocab: 1\nseq_len: 1\n", "field head_dim = 0"},
		{"name: x\nlayers: two\n", `model: x: field layers = "two", want a whole number in decimal digits`},
		{"a: 1\n---\nb: 2\n", `field "a" is not a spec field`},
		// issue 26: counts as written, not truncated or read in another base
		{`{"name":"x","layers":1.5,"d_model":64,"heads":4,"d_ff":1,"vocab":1,"seq_len":1}`, `model: x: field layers = "1.5", want a whole number in decimal digits`},
		{"name: x\nlayers: 2\nd_model: 64.0\nheads: 4\nd_ff: 1\nvocab: 1\nseq_len: 1\n", `field d_model = "64.0", want a whole number`},
		{"name: x\nlayers: 2\nd_model: 64\nheads: 4\nd_ff: 1\nvocab: 1e3\nseq_len: 1\n", `field vocab = "1e3", want a whole number`},
		{"name: x\nlayers: 0x10\nd_model: 64\nheads: 4\nd_ff: 1\nvocab: 1\nseq_len: 1\n", `field layers = "0x10"`},
		{"name: x\nlayers: 010\nd_model: 64\nheads: 4\nd_ff: 1\nvocab: 1\nseq_len: 1\n", `field layers = "010"`},
		{"name: x\nlayers: 2\nd_model: 64\nheads: 4\nd_ff: 1\nvocab: 1\nseq_len: 1_024\n", `field seq_len = "1_024"`},
		{"name: x\nlayers: 2\nd_model: 64\nheads: 4\nd_ff: 1\nvocab: 1\nseq_len: 1\npublished_params: 7.5e9\n", `field published_params = "7.5e9"`},
		{"base: &b {layers: 1.5}\n", `field "base" is not a spec field`},
		// counts the decoder cannot hold in an int are named by their field too
		{"name: x\nlayers: 1e30\nd_model: 64\n", `model: x: field layers = "1e30", want a whole number in decimal digits`},
		{"name: x\nlayers: .nan\n", `field layers = ".nan", want a whole number in decimal digits`},
		{"name: x\nd_model: 99999999999999999999\n", `field d_model = "99999999999999999999", want a whole number in the field's range`},
		{"name: x\nlayers: [1]\nd_model: [2]\n", "model: malformed spec: unmarshal errors: line 2: cannot unmarshal !!seq into int; line 3:"},
		{"<<: &b {layers: 2.5}\nname: x\nd_model: 64\nheads: 4\nd_ff: 1\nvocab: 1\nseq_len: 1\n", `field layers = "2.5"`},
		// fields each in range whose products are not (a 1.4e22-parameter
		// spec was planned with a negative HBM and "fits")
		{"name: x\nlayers: 16777216\nd_model: 65536\nheads: 512\nhead_dim: 128\nd_ff: 262144\nvocab: 128256\nseq_len: 8192\n", "field layers = 16777216, want a model of at most 2^50 (1.13e+15) parameters; with these widths it has about"},
		{"name: x\nlayers: 2\nd_model: 64\nheads: 65536\nhead_dim: 65536\nd_ff: 1\nvocab: 1\nseq_len: 1\n", "field head_dim = 65536, want heads (65536) x head_dim at most 16777216"},
		{"name: x\nlayers: 2048\nd_model: 1024\nheads: 8\nd_ff: 1\nvocab: 1\nseq_len: 16777216\n", "field seq_len = 16777216, want at most 8388608 tokens with 2048 layers of width 1024"},
		// and names are text (issue 26: NUL and U+202E printed raw)
		{`{"name":"x\u0000y","layers":2,"d_model":64,"heads":4,"d_ff":1,"vocab":1,"seq_len":1}`, `model: "x\x00y": field name = "x\x00y", want printable text: U+0000 at byte 1 is a control character`},
		{`{"name":"gpt\u202e4","layers":2,"d_model":64,"heads":4,"d_ff":1,"vocab":1,"seq_len":1}`, `field name = "gpt\u202e4", want printable text: U+202E at byte 3 is a format character`},
		{"name: \"a\\x1b[31mred\"\nlayers: 2\n", `field name = "a\x1b[31mred", want printable text: U+001B at byte 1 is a control character`},
		{"name: \"a\\u200bb\"\n", "U+200B at byte 1 is a format character"},
		{"name: \"a\\u2028b\"\n", "U+2028 at byte 1 is a line or paragraph separator"},
		{"name: ok\nsource: \"x\\ty\"\n", `model: ok: field source = "x\ty", want printable text: U+0009 at byte 1 is a control character`},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) error = %v, want one containing %q", tt.in, err, tt.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q) error spans lines: %q", tt.in, err)
		}
	}
}

// TestValidateText: a spec built in code is held to the same text rule
// as a parsed one; catalog names pass it.
func TestValidateText(t *testing.T) {
	s, _ := Lookup("llama3-8b")
	for _, tt := range []struct{ name, source, want string }{
		{"a\xffb", "", `field name = "a\xffb", want printable text: byte 1 (0xff) is not UTF-8`},
		{"a\u202eb", "", "U+202E at byte 1 is a format character"},
		{"llama3-8b", "see\x00", `model: llama3-8b: field source = "see\x00"`},
		{"Llama 3 \u2014 8B \ufffd", "", ""}, // printable, if odd
	} {
		c := s
		c.Name, c.Source = tt.name, tt.source
		err := c.Validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid)) {
			t.Errorf("Spec{Name: %q, Source: %q}.Validate() = %v, want %q", tt.name, tt.source, err, tt.want)
		}
	}
	for _, c := range Catalog() {
		if err := c.Validate(); err != nil {
			t.Errorf("catalog %s: %v", c.Name, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("name: tiny\nlayers: 2\nd_model: 64\nheads: 4\nd_ff: 256\nvocab: 256\nseq_len: 128\n"))
	f.Add([]byte(`{"layers": 1e9}`))
	f.Add([]byte("&a [*a]"))
	f.Add([]byte("<<: &a {<<: *a}\n"))
	f.Add([]byte("{\"name\":\"a\\u202e\",\"layers\":1.5}"))
	f.Add([]byte("name: w\nlayers: 6\nd_model: 64\nheads: 4\nd_ff: 128\nvocab: 100\nseq_len: 4096\nsliding_window: 512\nglobal_attention_every: 3\nglobal_kv_heads: 2\nglobal_head_dim: 32\nglobal_key_as_value: true\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("Parse accepted an invalid spec: %v", err)
		}
		if p := s.ParamCount().Total(); p <= 0 {
			t.Fatalf("accepted spec has %d params", p)
		}
	})
}

func ExampleSpec_ParamCount() {
	s, _ := Lookup("llama3-70b")
	fmt.Printf("%.2fB parameters, %.3g training FLOPs per token at 8k\n",
		float64(s.ParamCount().Total())/1e9, s.FLOPsPerToken(8192, false))
	// Output:
	// 70.55B parameters, 4.81e+11 training FLOPs per token at 8k
}

func TestSummarize(t *testing.T) {
	// The summary carries the computed counts, which must add up, and the
	// FLOPs of FLOPsPerToken in both conventions.
	for _, s := range Catalog() {
		sum := s.Summarize()
		p := s.ParamCount()
		if got := sum.EmbeddingParams + sum.OutputParams + int64(p.DenseLayers())*sum.ParamsPerLayer + int64(p.MoELayers)*sum.ParamsPerMoELayer + p.FinalNorm +
			int64(sum.LinearLayers)*(sum.LinearAttentionPerLayer-sum.AttentionPerLayer) +
			int64(sum.GlobalLayers)*(sum.GlobalAttentionPerLayer-sum.AttentionPerLayer); got != sum.Params {
			t.Errorf("%s: embedding + output + layers + final norm = %d, want %d", s.Name, got, sum.Params)
		}
		if sum.ParamsPerLayer != sum.AttentionPerLayer+sum.MLPPerLayer+sum.NormsPerLayerP {
			t.Errorf("%s: per-layer parts do not add up", s.Name)
		}
		if sum.FLOPsPerTokenCaus >= sum.FLOPsPerToken {
			t.Errorf("%s: causal FLOPs %g not below %g", s.Name, sum.FLOPsPerTokenCaus, sum.FLOPsPerToken)
		}
		if s.Published > 0 && (sum.PublishedError == nil || math.Abs(*sum.PublishedError) > 0.005) {
			t.Errorf("%s: published error %v, want within 0.5%%", s.Name, sum.PublishedError)
		}
	}
}

func TestLargestMatrix(t *testing.T) {
	// By hand from the published shapes: GPT-3's MLP is 12288×49152
	// (Brown et al. 2020, Table 2.1: d_ff = 4·d_model); Llama 3 70B's is
	// 8192×28672 (Meta's params.json: ffn 28672); a block whose attention
	// is wider than its MLP has Q or O as its largest.
	for _, tt := range []struct {
		spec Spec
		want int64
	}{
		{Spec{DModel: 12288, Heads: 96, DFF: 49152}, 12288 * 49152},
		{Spec{DModel: 8192, Heads: 64, KVHeads: 8, DFF: 28672, GatedMLP: true}, 8192 * 28672},
		{Spec{DModel: 1024, Heads: 32, HeadDim: 128, DFF: 2048}, 1024 * 32 * 128},
	} {
		if got := tt.spec.LargestMatrix(); got != tt.want {
			t.Errorf("%+v: LargestMatrix = %d, want %d", tt.spec, got, tt.want)
		}
	}
}

func TestMixtralByHand(t *testing.T) {
	// Mixtral 8x7B (Jiang et al. 2024, Table 1) by hand: per layer attention
	// 2·4096² + 2·4096·1024, router 4096·8, 8 SwiGLU experts of 3·4096·14336,
	// two RMSNorms; untied 32000 x 4096 embeddings and a final norm.
	s := catalogSpec(t, "mixtral-8x7b")
	attn, expert := int64(2*4096*4096+2*4096*1024), int64(3*4096*14336)
	layer := attn + 4096*8 + 2*4096
	emb := int64(2*32000*4096 + 4096)
	p := s.ParamCount()
	if total := emb + 32*(layer+8*expert); p.Total() != total {
		t.Errorf("Total = %d, want %d", p.Total(), total)
	}
	if active := emb + 32*(layer+2*expert); p.Active() != active {
		t.Errorf("Active = %d, want %d", p.Active(), active)
	}
	// FLOPs per token count the active matmuls: 6·(32·(attention + router +
	// 2 experts) + the output projection) + 12·L·H·Q·T.
	n := 32*float64(attn+4096*8+2*expert) + 32000*4096
	if got, want := s.FLOPsPerToken(4096, false), 6*n+12*32*32*128*4096; got != want {
		t.Errorf("FLOPsPerToken = %g, want %g", got, want)
	}
	if got := s.LargestMatrix(); got != 4096*14336 {
		t.Errorf("LargestMatrix = %d, want one expert's 4096 x 14336", got)
	}
}

func TestMoELayerPattern(t *testing.T) {
	// Hugging Face's Llama 4 config: moe_layers = range(step-1, layers, step);
	// DeepSeek-V3: the first three layers dense, the rest MoE.
	for _, tt := range []struct {
		first, every, layers int
		want                 string
	}{
		{0, 0, 4, "MMMM"}, {0, 1, 4, "MMMM"}, {0, 2, 6, "DMDMDM"}, {3, 0, 6, "DDDMMM"}, {1, 2, 6, "DDMDMD"}, {0, 3, 7, "DDMDDMD"},
	} {
		s := Spec{Layers: tt.layers, Experts: 4, ExpertsPerToken: 1, FirstDenseLayers: tt.first, MoEEvery: tt.every}
		got, n := "", 0
		for i := range tt.layers {
			if s.IsMoELayer(i) {
				got += "M"
				n++
			} else {
				got += "D"
			}
		}
		if got != tt.want || s.MoELayers() != n {
			t.Errorf("first %d every %d: layers %s (MoELayers %d), want %s", tt.first, tt.every, got, s.MoELayers(), tt.want)
		}
	}
}

func TestLatentAttentionByHand(t *testing.T) {
	// DeepSeek-V3 (DeepSeek-AI 2024, arXiv 2412.19437, §4.2) attention by
	// hand: W_DQ 7168·1536, W_UQ 1536·128·(128+64), W_DKV 7168·(512+64),
	// W_UKV 512·128·(128+128), W_O 128·128·7168, plus the two latent norms.
	s := Spec{Name: "mla", Layers: 1, DModel: 7168, Heads: 128, HeadDim: 128, DFF: 18432, Vocab: 1, SeqLen: 1, GatedMLP: true,
		QLoRARank: 1536, KVLoRARank: 512, QKRopeHeadDim: 64, VHeadDim: 128}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	want := int64(7168*1536+1536*128*192+7168*576+512*128*256+128*128*7168) + 1536 + 512
	if got := s.ParamCount().Attention; got != want {
		t.Errorf("MLA attention = %d, want %d", got, want)
	}
	// attention FLOPs: scores over 192-wide keys, values 128 wide:
	// 2·H·(192+128)·T forward per layer.
	if got, want := s.AttentionFLOPsPerToken(100), 2*128.0*320*100; got != want {
		t.Errorf("AttentionFLOPsPerToken = %g, want %g", got, want)
	}
}

func TestMoEParseErrors(t *testing.T) {
	base := "name: x\nlayers: 4\nd_model: 64\nheads: 4\nd_ff: 128\nvocab: 100\nseq_len: 16\n"
	for _, tt := range []struct{ add, want string }{
		{"experts_per_token: 2\n", "field experts_per_token = 2, want 0 in a dense model"},
		{"experts: 8\n", "field experts_per_token = 0, want 1 to experts (8)"},
		{"experts: 8\nexperts_per_token: 9\n", "field experts_per_token = 9"},
		{"experts: -1\n", "field experts = -1"},
		{"experts: 8\nexperts_per_token: 2\nfirst_dense_layers: 4\n", "field first_dense_layers = 4, want 0 to layers - 1 (3)"},
		{"experts: 8\nexperts_per_token: 2\nmoe_every: 5\n", "field moe_every = 5"},
		{"q_lora_rank: 8\n", "field q_lora_rank = 8, want 0 without latent attention"},
		{"kv_lora_rank: 8\nkv_heads: 2\n", "field kv_heads = 2"},
		{"published_active_params: -5\n", "field published_active_params = -5"},
	} {
		_, err := Parse([]byte(base + tt.add))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(+%q) error = %v, want %q", tt.add, err, tt.want)
		}
	}
	s, err := Parse([]byte(base + "experts: 8\nexperts_per_token: 2\nshared_experts: 1\nexpert_d_ff: 32\nfirst_dense_layers: 1\n"))
	if err != nil || s.MoELayers() != 3 || s.ExpertFF() != 32 {
		t.Errorf("MoE spec: %+v, %v", s, err)
	}
}

// TestCatalogHFModel: every catalog model names the Hugging Face repository
// of its weights as owner/name (vllm serve's model argument), except GPT-3,
// whose weights were never released; and no two entries share one.
func TestCatalogHFModel(t *testing.T) {
	seen := map[string]string{}
	for _, s := range Catalog() {
		if s.Name == "gpt3-175b" {
			if s.HFModel != "" {
				t.Errorf("%s: HFModel %q, want none (no released weights)", s.Name, s.HFModel)
			}
			continue
		}
		owner, name, ok := strings.Cut(s.HFModel, "/")
		if !ok || owner == "" || name == "" || strings.Contains(name, "/") || !hfRepo(s.HFModel) || !hfRepoRE.MatchString(s.HFModel) {
			t.Errorf("%s: HFModel %q, want a Hugging Face id owner/name", s.Name, s.HFModel)
		}
		if other, dup := seen[s.HFModel]; dup {
			t.Errorf("%s and %s both name %s", other, s.Name, s.HFModel)
		}
		seen[s.HFModel] = s.Name
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
}

// TestHFModelField: a spec file may carry its Hugging Face id; one not of
// the form owner/name is refused, naming the field.
func TestHFModelField(t *testing.T) {
	base := "name: m\nlayers: 2\nd_model: 64\nheads: 4\nd_ff: 128\nvocab: 100\nseq_len: 64\n"
	for _, c := range []struct {
		id   string
		want string // "" accepted
	}{
		{"org/my-model_1.5", ""},
		{"my-model", "hf_model"},
		{"org/sub/model", "hf_model"},
		{"org/model--x", "hf_model"},
		{"/model", "hf_model"},
		{"org/-model", "hf_model"},
		{"org/mod el", "hf_model"},
	} {
		s, err := Parse([]byte(base + "hf_model: " + strconv.Quote(c.id) + "\n"))
		switch {
		case c.want == "" && (err != nil || s.HFModel != c.id):
			t.Errorf("hf_model %q: %v, HFModel %q; want accepted", c.id, err, s.HFModel)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrInvalid)):
			t.Errorf("hf_model %q: err %v, want an ErrInvalid naming %s", c.id, err, c.want)
		}
	}
}

// hfRepoRE is huggingface_hub's REPO_ID_REGEX (utils/_validators.py) with
// the owner required and ASCII letters only: a second implementation of
// hfRepo.
var hfRepoRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?/[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?$`)

func TestHFRepoIsTheRegexp(t *testing.T) {
	long := strings.Repeat("a", 96)
	for _, id := range []string{"meta-llama/Llama-3.1-70B", "a/b", "a/b/c", "/b", "a/", "-a/b", "a/b-", "a_b/c.d", "a/" + long, "a/" + long + "a",
		"a/b c", "a/é", "ab", "", "a//b", "A9/9z", "a./b", "a/.b"} {
		if got, want := hfRepo(id), hfRepoRE.MatchString(id); got != want {
			t.Errorf("hfRepo(%q) = %v, the regexp says %v", id, got, want)
		}
	}
}

// TestHybridQwen35 holds Qwen3.5-397B-A17B's count to a hand count and
// to an independent one. By hand (MaxText's qwen3.5-397b-a17b.yml
// @e591f30c): a linear-attention layer projects 4096 to queries and keys
// (2·16·128), values and gate (2·64·128) and rates (2·64), 83,886,080 +
// 524,288, and 64·128 back, 33,554,432; its convolution 4·12,288 =
// 49,152, decays and biases 128, norm 128: 118,014,208. A softmax layer
// with its output gate: 4096·8192·2 + 2·4096·512 + 8192·4096 =
// 104,857,600. 15 softmax and 45 linear layers. Independently, a test of
// Intern-S2-397B (the same decoder, vocabulary 251,392) reads
// 9,824,459,520 non-expert text weights from the safetensors headers
// (found by the code search; it names no repository): less the
// vocabulary difference (3,072·4,096·2) and the shared expert's scalar
// gates and query/key norms the catalog does not count (60·4,096 +
// 15·512 = 253,440), the catalog's non-expert count.
func TestHybridQwen35(t *testing.T) {
	s := catalogSpec(t, "qwen3.5-397b-a17b")
	p := s.ParamCount()
	if s.AttentionLayers() != 15 || s.LinearLayers() != 45 || p.LinearLayers != 45 {
		t.Errorf("layers: %d softmax, %d linear, want 15 and 45", s.AttentionLayers(), s.LinearLayers())
	}
	if p.LinearAttention != 118_014_208 || p.Attention != 104_857_600 {
		t.Errorf("attention per layer: linear %d, softmax %d, want 118014208 and 104857600", p.LinearAttention, p.Attention)
	}
	if p.Total() != 396_346_096_896 || p.Active() != 17_348_787_456 {
		t.Errorf("Total() = %d, Active() = %d, want 396346096896 and 17348787456", p.Total(), p.Active())
	}
	nonExpert := p.Total() - int64(p.MoELayers)*int64(p.Experts)*p.Expert
	if want := int64(9_824_459_520) - 3072*4096*2 - 253_440; nonExpert != want {
		t.Errorf("non-expert parameters %d, want %d", nonExpert, want)
	}
	// only the 15 softmax layers attend over the sequence
	if got, want := s.AttentionFLOPsPerToken(1), 4*15*32*256.0; got != want {
		t.Errorf("AttentionFLOPsPerToken(1) = %v, want %v", got, want)
	}
	// the gated delta rule: 45 layers × (6·64·128·128 + 2·4·12,288)
	if got, want := s.LinearAttentionFLOPsPerToken(), 45*(6*64*128*128+2*4*12288.0); got != want {
		t.Errorf("LinearAttentionFLOPsPerToken() = %v, want %v", got, want)
	}
}

// TestValidateLinear: the linear-attention fields are all or nothing.
func TestValidateLinear(t *testing.T) {
	base, _ := Lookup("qwen3.5-397b-a17b")
	for _, c := range []struct {
		name  string
		edit  func(*Spec)
		field string
	}{
		{"dims without interval", func(s *Spec) { s.FullAttentionEvery = 0 }, "linear_key_heads"},
		{"interval above layers", func(s *Spec) { s.FullAttentionEvery = 61 }, "full_attention_every"},
		{"no key heads", func(s *Spec) { s.LinearKeyHeads = 0 }, "linear_key_heads"},
		{"value heads not a multiple", func(s *Spec) { s.LinearValueHeads = 24 }, "linear_value_heads"},
		{"no conv", func(s *Spec) { s.LinearConvKernel = 0 }, "linear_conv_kernel"},
	} {
		s := base
		c.edit(&s)
		var fe *FieldError
		if err := s.Validate(); !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: Validate() = %v, want an error on %s", c.name, err, c.field)
		}
	}
	if err := base.Validate(); err != nil {
		t.Errorf("the catalog entry: %v", err)
	}
}

// catalogSpec is the catalog's model name, or the test's end.
func catalogSpec(t *testing.T, name string) Spec {
	t.Helper()
	s, ok := Lookup(name)
	if !ok {
		t.Fatalf("%s is not in the catalog", name)
	}
	return s
}

// TestSizeBounds: the largest products validateSize accepts, by hand: 1024
// layers x 1024 wide x 2^24 tokens is exactly 2^44 values, and a model just
// under 2^50 parameters is accepted with a count that is still exact.
func TestSizeBounds(t *testing.T) {
	s := Spec{Name: "x", Layers: 1024, DModel: 1024, Heads: 8, DFF: 1, Vocab: 1, SeqLen: 1 << 24}
	if err := s.Validate(); err != nil {
		t.Errorf("2^44 activation values: %v, want accepted", err)
	}
	// 2^12 layers of an MLP 2^16 wide by 2^16 x 3 (gated): 3 x 2^44
	// parameters in the MLPs alone, above 2^50 / 4 and below 2^50
	b := Spec{Name: "b", Layers: 1 << 12, DModel: 1 << 16, Heads: 512, HeadDim: 128, DFF: 1 << 16, Vocab: 1, SeqLen: 1, GatedMLP: true}
	if err := b.Validate(); err != nil {
		t.Fatalf("a %d-parameter model: %v, want accepted", b.ParamCount().Total(), err)
	}
	if got, min := b.ParamCount().Total(), int64(3)<<44; got < min || got > MaxParams {
		t.Errorf("ParamCount().Total() = %d, want between 3 x 2^44 and 2^50", got)
	}
}

// TestYAMLRoundTrip: every catalog model written by YAML parses back to
// itself, so 'model show NAME --spec' is a file --model takes.
func TestYAMLRoundTrip(t *testing.T) {
	for _, s := range Catalog() {
		b, err := s.YAML()
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		got, err := Parse(b)
		if err != nil {
			t.Errorf("%s: its YAML does not parse: %v\n%s", s.Name, err, b)
			continue
		}
		if !reflect.DeepEqual(got, s) {
			t.Errorf("%s: round trip gives %+v, want %+v", s.Name, got, s)
		}
	}
}
