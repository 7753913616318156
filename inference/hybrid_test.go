package inference

import (
	"errors"
	"slices"
	"testing"

	"shardlab/hw"
	"shardlab/unit"
)

// qwen35Request is the tpu-recipes Qwen3.5-397B server on tpu7x-8 (TP 8,
// fp8 weights and KV, max_model_len 9216, max_num_seqs 64, a budget of
// 1024 tokens, enable_dp_attention).
func qwen35Request(t *testing.T, dp bool) Request {
	t.Helper()
	tp := 8
	if !dp {
		tp = 2 // tensor parallelism splits the 2 KV heads 2 ways at most
	}
	s, err := hw.ParseAcceleratorType("tpu7x-8")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRequest(Request{Model: lookup(t, "qwen3.5-397b-a17b"), Slice: s, MaxModelLen: 9216, Concurrency: 64, MaxNumSeqs: 64,
		PromptLen: 1024, OutputLen: 8192, Weights: FP8, KVCache: FP8, MemoryUtilization: 0.9, MaxNumBatchedTokens: 1024, TP: tp, DPAttention: dp})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestHybridMemory, by hand [ti-gdn]: only the 15 softmax layers cache
// keys and values, a token's 2 fp8 KV heads of 256 in one 4-element
// word row, 15·4·256 = 15,360 bytes whether a device holds one head (TP
// 8) or both (attention data parallel). A sequence's linear-attention
// state per device at TP 8: 45 layers × (1536 channels × 3 taps × 2
// bytes + 8 heads × 128 × 128 × 4 bytes) = 24,007,680; whole (TP 1):
// 45 × (12,288 × 3 × 2 + 64 × 16,384 × 4) = 192,061,440. With
// enable_dp_attention each of the 8 ranks' schedulers runs max_num_seqs
// 64, so the runner's max_num_reqs is 8 × 64 = 512 and each layer's
// state array 512 + 1 slots, rounded up to a multiple of the 8 devices
// it is sharded over (tpu_inference/runner/tpu_runner.py:1048-1050,
// runner/kv_cache_manager.py:386-401 @b8692ff0): 520, 65 whole states a
// device.
func TestHybridMemory(t *testing.T) {
	m := lookup(t, "qwen3.5-397b-a17b")
	if got := KVBytesPerToken(m, 8, FP8); got != 15_360 {
		t.Errorf("KVBytesPerToken(TP 8) = %d, want 15360", got)
	}
	if got := kvBytesPerToken(m, 8, FP8, true); got != 15_360 {
		t.Errorf("kvBytesPerToken(attention DP) = %d, want 15360", got)
	}
	if got := RecurrentStateBytes(m, 8); got != 24_007_680 {
		t.Errorf("RecurrentStateBytes(TP 8) = %d, want 24007680", got)
	}
	if got := RecurrentStateBytes(m, 1); got != 192_061_440 {
		t.Errorf("RecurrentStateBytes(TP 1) = %d, want 192061440", got)
	}
	if got := RecurrentStateBytes(lookup(t, "llama3-70b"), 8); got != 0 {
		t.Errorf("RecurrentStateBytes(llama3-70b) = %d, want 0", got)
	}
	l := Estimate(qwen35Request(t, true), 8, 1)
	if want := unit.Bytes(65 * 192_061_440); l.Memory.Recurrent != want {
		t.Errorf("Memory.Recurrent = %d, want %d", l.Memory.Recurrent, want)
	}
	if l.Memory.KVCache != l.Memory.Budget-l.Memory.Weights-l.Memory.Activations-l.Memory.Recurrent {
		t.Errorf("KV cache %d is not what the weights, activations and states leave", l.Memory.KVCache)
	}
	if !l.Fits || l.AttentionDP != 8 {
		t.Errorf("fits %v, attention DP %d, want true and 8", l.Fits, l.AttentionDP)
	}
	// attention DP holds the attention whole: the difference from TP 8 is
	// 7/8 of the softmax layers' projections but their K and V (one head
	// each at TP 8) and 7/8 of the linear layers', one byte a weight
	p := m.ParamCount()
	kv := int64(2 * 4096 * 2 * 256) // K and V of both heads
	tpAttn := (p.Attention-kv)/8 + kv/2
	want := 15*(p.Attention-tpAttn) + 45*(p.LinearAttention-p.LinearAttention/8)
	if got := int64(weightBytes(m, 8, FP8, true) - weightBytes(m, 8, FP8, false)); got != want {
		t.Errorf("attention DP holds %d more weight bytes than TP 8, want %d", got, want)
	}
}

// TestDPAttentionRequest: enable_dp_attention is accepted where
// tpu-inference makes the whole replica attention-parallel (2·KV heads
// within one KV word, [ti-dpattn]); else it names the field. Without it
// Qwen3.5's 2 KV heads take TP 1 and 2 and, replicated, the multiples 4
// and 8 that divide its 32 heads and 16 linear key heads [ti-shard].
func TestDPAttentionRequest(t *testing.T) {
	if sizes := tpSizes(lookup(t, "qwen3.5-397b-a17b"), qwen35Request(t, true).Slice, false); !slices.Equal(sizes, []int{1, 2, 4, 8}) {
		t.Errorf("without attention DP Qwen3.5's 2 KV heads allow TP %v on tpu7x-8, want 1, 2, 4, 8", sizes)
	}
	r := qwen35Request(t, true)
	if !r.AttentionDP() {
		t.Error("AttentionDP() = false with enable_dp_attention")
	}
	s, _ := hw.ParseAcceleratorType("v6e-8")
	_, err := NewRequest(Request{Model: lookup(t, "llama3-70b"), Slice: s, MaxModelLen: 2048, Concurrency: 64, PromptLen: 1000, OutputLen: 1000,
		Weights: BF16, KVCache: BF16, MemoryUtilization: 0.9, MaxNumBatchedTokens: 512, TP: 8, DPAttention: true})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "enable_dp_attention" {
		t.Errorf("llama3-70b (8 bf16 KV heads) with enable_dp_attention: %v, want an error on enable_dp_attention", err)
	}
}

// TestHybridStep: a decode step's linear-attention op reads and writes
// each sequence's state: at TP 2, 64 sequences × 2 × RecurrentStateBytes(TP 2) bytes
// over the device's HBM bandwidth, longer than the recurrences' FLOPs.
func TestHybridStep(t *testing.T) {
	r := qwen35Request(t, false)
	rc := newReplicaCost(r, 2)
	b := Batch{Seqs: 64, Tokens: 64}
	want := 2 * 64 * float64(RecurrentStateBytes(r.Model, 2)) / rc.bw
	if got := rc.linearAttention(b); got != want {
		t.Errorf("linearAttention = %v s, want %v s", got, want)
	}
	if flops := 64 * r.Model.LinearAttentionFLOPsPerToken() / 2 / rc.peak; flops >= want {
		t.Errorf("the recurrences' FLOPs take %v s, not under the state traffic's %v s", flops, want)
	}
	if got := newReplicaCost(DefaultRequestFor(t, "llama3-70b"), 8).linearAttention(b); got != 0 {
		t.Errorf("a model without linear attention: %v s, want 0", got)
	}
}

// DefaultRequestFor is DefaultRequest for model name on tpu7x-8.
func DefaultRequestFor(t *testing.T, name string) Request {
	t.Helper()
	s, _ := hw.ParseAcceleratorType("tpu7x-8")
	r := DefaultRequest()
	r.Model, r.Slice, r.MaxModelLen = lookup(t, name), s, 8192
	r, err := NewRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
