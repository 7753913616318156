package model

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestPublishedParamCounts(t *testing.T) {
	// Each catalog row cites its published count (Spec.Source); the count we
	// derive from the shape must be within 0.5 % of it.
	want := map[string]bool{
		"gpt3-175b": true, "llama2-7b": true, "llama2-13b": true, "llama2-70b": true,
		"llama3-8b": true, "llama3-70b": true, "llama3-405b": true, "gemma2-9b": true, "gemma2-27b": true,
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
	}
	for name := range want {
		t.Errorf("catalog lacks %s", name)
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
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", "empty spec"},
		{"layers: [", "malformed spec"},
		{"name: x\nlayer: 2\n", "field layer not found"},
		{"name: x\nlayers: -1\nd_model: 64\nheads: 4\nd_ff: 1\nvocab: 1\nseq_len: 1\n", "field layers = -1, want a positive integer"},
		{"name: x\nlayers: 1\nd_model: 64\nheads: 4\nkv_heads: 3\nd_ff: 1\nvocab: 1\nseq_len: 1\n", "field kv_heads = 3, want 0 (= heads) or a divisor of heads (4)"},
		{"name: x\nlayers: 1\nd_model: 65\nheads: 4\nd_ff: 1\nvocab: 1\nseq_len: 1\n", "field head_dim = 0"},
		{"name: x\nlayers: two\n", "malformed spec"},
		{"a: 1\n---\nb: 2\n", "field a not found"},
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

func FuzzParse(f *testing.F) {
	f.Add([]byte("name: tiny\nlayers: 2\nd_model: 64\nheads: 4\nd_ff: 256\nvocab: 256\nseq_len: 128\n"))
	f.Add([]byte(`{"layers": 1e9}`))
	f.Add([]byte("&a [*a]"))
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
		if got := sum.EmbeddingParams + sum.OutputParams + int64(s.Layers)*sum.ParamsPerLayer + p.FinalNorm; got != sum.Params {
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
