package inference

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestMaxModelLenCap: max_model_len may reach the model's context, its
// checkpoint's max_position_embeddings as the catalog records it
// (model.Spec.MaxContext: 131072 for Llama 3.1 405B, 40960 for Qwen3-235B,
// 1048576 for Llama 4 Maverick), not only the catalog's sequence length, which stays
// the default; past it, or past the sequence length where the catalog
// records no context (gemma2-9b), the error names the field, the
// most it takes and why (review 128 #7).
func TestMaxModelLenCap(t *testing.T) {
	for _, c := range []struct {
		model, tpu string
		weights    Dtype
		len, most  int
		why        string
	}{
		{"llama3-405b", "tpu7x-16", FP8, 32768, 131072, "llama3-405b's max_position_embeddings"},
		{"qwen3-235b-a22b", "tpu7x-8", FP8, 40960, 40960, "qwen3-235b-a22b's max_position_embeddings"},
		{"mixtral-8x7b", "v6e-8", BF16, 32768, 32768, "mixtral-8x7b's max_position_embeddings"},
		{"deepseek3-671b", "tpu7x-16", FP8, 32768, 163840, "deepseek3-671b's max_position_embeddings"},
		{"llama4-maverick", "tpu7x-16", FP8, 16384, 1048576, "llama4-maverick's max_position_embeddings"},
		{"gemma2-9b", "v6e-8", BF16, 8192, 8192, "records no max_position_embeddings"},
	} {
		m := lookup(t, c.model)
		base := Request{Model: m, Slice: slice(t, c.tpu), Concurrency: 8, PromptLen: 1024, OutputLen: 1024,
			Weights: c.weights, MemoryUtilization: 0.92, MaxNumBatchedTokens: 4096}
		r := base
		r.MaxModelLen = c.len
		if _, err := NewRequest(r); err != nil {
			t.Errorf("%s at max_model_len %d: %v, want accepted", c.model, c.len, err)
		}
		r.MaxModelLen = c.most + 1
		_, err := NewRequest(r)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "max_model_len" || !strings.Contains(fe.Want, fmt.Sprintf("2 to %d ", c.most)) || !strings.Contains(fe.Want, c.why) {
			t.Errorf("%s at max_model_len %d: %v, want a max_model_len error accepting 2 to %d (%s)", c.model, c.most+1, err, c.most, c.why)
		}
		if d, err := NewRequest(base); err != nil || d.MaxModelLen != m.SeqLen {
			t.Errorf("%s: default max_model_len %d (%v), want the sequence length %d", c.model, d.MaxModelLen, err, m.SeqLen)
		}
	}
}

// TestMaxModelLenDefaultWithinPositions: a spec whose
// max_position_embeddings is below its seq_len serves at its positions by
// default; the default was seq_len, refused by the cap with a flag the
// user never gave (review 137 #3).
func TestMaxModelLenDefaultWithinPositions(t *testing.T) {
	m := lookup(t, "llama3-8b")
	m.MaxPositions = 4096
	r, err := NewRequest(Request{Model: m, Slice: slice(t, "v6e-8"), Concurrency: 1, PromptLen: 1024, OutputLen: 1024,
		MemoryUtilization: 0.92, MaxNumBatchedTokens: 4096})
	if err != nil || r.MaxModelLen != 4096 {
		t.Errorf("max_model_len %d, %v; want 4096, the spec's positions", r.MaxModelLen, err)
	}
}
