package inference

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"shardlab/hw"
	"shardlab/model"
	"shardlab/unit"
)

// TestV5pExperimental: tpu-inference lists v5p as experimental (README.md
// @b8692ff0, lines 62-64), and shardlab plans it with a warning that says
// so. Llama 3 8B (8.03B parameters, 32 layers, 8 KV heads of 128) at TP 4
// on v5p-8 (four chips, one JAX device each: megacore) by hand:
// weights 8.03e9 × 2 B / 4 = 3.74 GiB a device, read in 4.015e9 B /
// 2765e9 B/s = 1.452 ms a decode step; KV 32 layers × K and V × 2 heads ×
// 128 × 2 B = 32 KiB a token a device; the usable HBM 0.92 × 95.74 GiB
// (hw/xla_hbm.csv's v5p bytes_limit).
func TestV5pExperimental(t *testing.T) {
	m, ok := model.Lookup("llama3-8b")
	if !ok {
		t.Fatal("llama3-8b missing from the catalog")
	}
	r, err := NewRequest(Request{Model: m, Slice: slice(t, "v5p-8"), MaxModelLen: 8192, Concurrency: 64,
		PromptLen: 1024, OutputLen: 1024, MemoryUtilization: 0.92, MaxNumBatchedTokens: 4096, TP: 4})
	if err != nil {
		t.Fatalf("NewRequest(v5p-8) = %v, want a request", err)
	}
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	b := p.Best
	weights := float64(m.ParamCount().Total()) * 2 / 4
	if got := float64(b.Memory.Weights); math.Abs(got-weights) > weights*1e-3 {
		t.Errorf("weights a device = %v, want %v (8.03e9 × 2 B / 4)", b.Memory.Weights, unit.Bytes(weights))
	}
	if got, want := b.Memory.KVPerToken, unit.Bytes(32*2*2*128*2); got != want {
		t.Errorf("KV a token a device = %v, want %v", got, want)
	}
	if got, want := b.Memory.Capacity, 95.74*float64(unit.GiB); math.Abs(float64(got)-want) > float64(unit.MiB) {
		t.Errorf("capacity a device = %v, want 95.74 GiB", got)
	}
	if got, want := b.DecodeMemory-b.DecodeKV, time.Duration(weights/2765e9*1e9); (got - want).Abs() > time.Microsecond {
		t.Errorf("decode weights HBM = %v, want %v", got, want)
	}
	var warned bool
	for _, w := range p.Warnings {
		warned = warned || strings.Contains(w, "tpu-inference lists v5p as experimental")
	}
	if !warned {
		t.Errorf("v5p plan warnings %q, want one that tpu-inference lists v5p as experimental", p.Warnings)
	}
	tp, _ := NewRequest(request(t))
	if q, _ := Search(tp); len(q.Warnings) > 0 && strings.Contains(strings.Join(q.Warnings, "\n"), "experimental") {
		t.Errorf("tpu7x plan warns %q, want no experimental warning (tpu-inference recommends v7x)", q.Warnings)
	}
}

// TestGenerationsServed: the generations NewRequest takes are those
// tpu-inference recommends and v5p; v4 and v3, experimental there too,
// are refused, because its attention kernel has no default block sizes
// for them (get_default_block_sizes @b8692ff0), and the refusal says
// which are recommended.
func TestGenerationsServed(t *testing.T) {
	m, _ := model.Lookup("llama3-8b")
	for _, c := range []struct {
		tpu  string
		want bool
	}{{"v5litepod-8", true}, {"v5p-8", true}, {"v6e-8", true}, {"tpu7x-8", true}, {"v4-8", false}, {"v3-8", false}} {
		s := slice(t, c.tpu)
		_, err := NewRequest(Request{Model: m, Slice: s, Concurrency: 8, PromptLen: 128, OutputLen: 128, MemoryUtilization: 0.9, MaxNumBatchedTokens: 4096})
		if (err == nil) != c.want {
			t.Errorf("NewRequest(%s) = %v, want accepted %v", c.tpu, err, c.want)
		}
		if err != nil && !strings.Contains(err.Error(), "recommends") {
			t.Errorf("NewRequest(%s) = %v, want the generations tpu-inference recommends named", c.tpu, err)
		}
		if got, want := Experimental(s.Chip.Generation), s.Chip.Generation == hw.V5p || s.Chip.Generation == hw.V4 || s.Chip.Generation == hw.V3; got != want {
			t.Errorf("Experimental(%s) = %v, want %v (README.md 62-64)", s.Chip.Generation, got, want)
		}
	}
}

// TestSchedulerBudgetCause: a token budget below max_num_seqs is
// answered with the budget marked as the default when it is (4096,
// DefaultRequest's, not given) and with the max_num_seqs given named as
// the cause, so that a user who typed only max_num_seqs sees why a budget
// he never gave is refused. A budget given, even at 4096, is not called
// the default (review 145 #4).
func TestSchedulerBudgetCause(t *testing.T) {
	m, _ := model.Lookup("llama3-8b")
	for _, c := range []struct {
		budget int
		given  bool
		value  string
	}{{4096, false, "4096 (the default)"}, {4096, true, "4096"}, {1000, true, "1000"}} {
		r := DefaultRequest()
		r.Model, r.Slice, r.Concurrency, r.MaxNumSeqs, r.MaxNumBatchedTokens = m, slice(t, "tpu7x-8"), 0, 65536, c.budget
		r.MaxNumBatchedTokensGiven = c.given
		r, err := NewRequest(r)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Search(r)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "max_num_batched_tokens" || fe.Value != c.value {
			t.Fatalf("budget %d (given %v) under max_num_seqs 65536: %v, want a max_num_batched_tokens error of value %q", c.budget, c.given, err, c.value)
		}
		if !strings.Contains(fe.Want, "65536 to") || !strings.Contains(fe.Want, "from the {max_num_seqs} 65536 given") {
			t.Errorf("budget %d: want %q, want it to accept 65536 up and name max_num_seqs 65536 as the cause", c.budget, fe.Want)
		}
	}
	// ParseOptions: 0 (unset) takes the default and is not given; a value
	// set, even the default's, is given.
	for _, c := range []struct {
		set   int
		want  int
		given bool
	}{{0, 4096, false}, {4096, 4096, true}, {8192, 8192, true}} {
		o := DefaultOptions()
		o.Model, o.TPU, o.MaxNumBatchedTokens = "llama3-8b", "v6e-8", c.set
		q, err := ParseOptions(o)
		if err != nil || q.Request.MaxNumBatchedTokens != c.want || q.Request.MaxNumBatchedTokensGiven != c.given {
			t.Errorf("ParseOptions(max_num_batched_tokens %d) = %d, given %v, %v; want %d, given %v", c.set, q.Request.MaxNumBatchedTokens, q.Request.MaxNumBatchedTokensGiven, err, c.want, c.given)
		}
	}
}

// TestMaverickContext: Llama 4 Maverick serves up to its config.json's
// max_position_embeddings, 1048576 (model catalog), no longer the 8192 of
// its seq_len; its default max_model_len stays 8192; and a plan beyond
// its 8192-token attention chunks warns that the chunks are not modelled.
func TestMaverickContext(t *testing.T) {
	m, _ := model.Lookup("llama4-maverick")
	base := Request{Model: m, Slice: slice(t, "tpu7x-32"), Weights: FP8, Concurrency: 1, PromptLen: 1024, OutputLen: 1024, MemoryUtilization: 0.92, MaxNumBatchedTokens: 4096}
	r, err := NewRequest(base)
	if err != nil || r.MaxModelLen != 8192 {
		t.Fatalf("default max_model_len = %d, %v; want 8192 (seq_len)", r.MaxModelLen, err)
	}
	base.MaxModelLen = 1 << 20
	if _, err := NewRequest(base); err != nil {
		t.Errorf("max_model_len 1048576: %v, want accepted (max_position_embeddings)", err)
	}
	base.MaxModelLen = 1<<20 + 1
	if _, err := NewRequest(base); err == nil || !strings.Contains(err.Error(), "2 to 1048576 (llama4-maverick's max_position_embeddings)") {
		t.Errorf("max_model_len 1048577: %v, want refused up to 1048576", err)
	}
	for _, c := range []struct {
		len  int
		warn bool
	}{{8192, false}, {16384, true}} {
		base.MaxModelLen = c.len
		r, err := NewRequest(base)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Search(r)
		if err != nil {
			t.Fatalf("max_model_len %d: %v", c.len, err)
		}
		if got := strings.Contains(strings.Join(p.Warnings, "\n"), "chunked attention"); got != c.warn {
			t.Errorf("max_model_len %d: chunked-attention warning %v, want %v (%q)", c.len, got, c.warn, p.Warnings)
		}
	}
}

// TestOneSequenceSingular: Llama 4 Maverick at max_model_len 2^20 on
// tpu7x-16 holds one such sequence a replica: the pages line and the
// shard reason say "1 sequence", not "1 sequences" (unit.Plural; review
// 145).
func TestOneSequenceSingular(t *testing.T) {
	m, _ := model.Lookup("llama4-maverick")
	r, err := NewRequest(Request{Model: m, Slice: slice(t, "tpu7x-16"), Weights: FP8, Concurrency: 64, PromptLen: 1024, OutputLen: 1024, MemoryUtilization: 0.92, MaxNumBatchedTokens: 4096, MaxModelLen: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	if p.Best.Memory.MaxSeqs != 1 {
		t.Fatalf("%d sequences of 2^20 tokens a replica, want 1 for this test", p.Best.Memory.MaxSeqs)
	}
	var b strings.Builder
	if err := p.WriteText(&b, "shardlab inference"); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, " 1 sequence of 1048576 tokens per replica") || strings.Contains(out, " 1 sequences") {
		t.Errorf("want '1 sequence of 1048576 tokens per replica' and no '1 sequences':\n%s", out)
	}
}
