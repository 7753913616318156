package inference

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"shardlab/unit"
)

// TestTPSizesAboveKVHeads: tpu-inference runs tensor parallelism above
// the KV heads when it is a multiple of them, padding them to the TP size
// (tpu_inference/utils.py 240-246 get_padded_num_heads @b8692ff0), and
// refuses a size that is neither a divisor nor a multiple. Llama 3 70B
// (64 heads, 8 KV heads) on tpu7x-16's 16 devices: 1, 2, 4, 8 and 16.
// Mixtral 8x22B (48 heads, 8 KV heads) on tpu7x-384's 384 devices: the
// divisors of 48 that fit whole chips of 192 (every one) and are a divisor
// or a multiple of 8: 1, 2, 4, 8, 16, 24, 48, not 3, 6 or 12.
func TestTPSizesAboveKVHeads(t *testing.T) {
	for _, c := range []struct {
		model, tpu string
		want       []int
	}{
		{"llama3-70b", "tpu7x-16", []int{1, 2, 4, 8, 16}},
		{"llama3-70b", "v5litepod-16", []int{1, 2, 4, 8, 16}},
		{"mixtral-8x22b", "tpu7x-384", []int{1, 2, 4, 8, 16, 24, 48}},
		{"qwen3-235b-a22b", "tpu7x-8", []int{1, 2, 4, 8}},
	} {
		if got := TPSizes(lookup(t, c.model), slice(t, c.tpu)); !slices.Equal(got, c.want) {
			t.Errorf("TPSizes(%s, %s) = %v, want %v", c.model, c.tpu, got, c.want)
		}
	}
}

// TestKVBytesPerTokenReplicated: above the KV heads each device holds one
// of them (tpu-inference pads the 8 KV heads to TP and shards them TP
// ways: runner/kv_cache_manager.py 531-533 and runner/kv_cache.py 91-100
// @b8692ff0, get_kv_cache_shape of padded/TP = 1 head), so a device's KV
// no longer shrinks with TP. By hand, one head's row is cdiv(2·1, p)·p
// elements of 128 lanes: bf16 (p 2) 2·128·2 B = 512 B a layer, fp8 (p 4)
// 4·128·1 B = 512 B. Llama 3 70B, 80 layers: 40,960 B a token at TP 16
// as at TP 8; Qwen3-235B, 94 layers of 4 KV heads: 48,128 B at TP 8.
func TestKVBytesPerTokenReplicated(t *testing.T) {
	for _, c := range []struct {
		model string
		tp    int
		kv    Dtype
		want  unit.Bytes
	}{
		{"llama3-70b", 16, BF16, 80 * 512},
		{"llama3-70b", 16, FP8, 80 * 512},
		{"llama3-70b", 8, BF16, 80 * 512},
		{"qwen3-235b-a22b", 8, BF16, 94 * 512},
		{"qwen3-235b-a22b", 4, BF16, 94 * 512},
	} {
		if got := KVBytesPerToken(lookup(t, c.model), c.tp, c.kv); got != c.want {
			t.Errorf("KVBytesPerToken(%s, TP %d, %s) = %d, want %d", c.model, c.tp, c.kv, got, c.want)
		}
	}
}

// TestReplicatedKVWeightsAndFLOPs: above the KV heads each device holds
// and computes one KV head's K and V projections (tpu-inference's
// layers/vllm/custom_ops/linear.py 73-115 @b8692ff0 tiles the loaded K
// and V weights TP/KV times). Llama 3 70B at TP 16: the K and V
// projections are 80·2·8192·8·128 = 1,342,177,280 parameters, of which a
// device holds an eighth (one head), not a sixteenth; the rest is split
// 16 ways but the 80·2·8192 + 8192 norms, held whole. A device's K and V
// FLOPs a token are 80·2·(2·8192·128) = 335,544,320, where a sixteenth of
// them would be half that: 167,772,160 more.
func TestReplicatedKVWeightsAndFLOPs(t *testing.T) {
	m := llama70B(t)
	total, norms, kv := m.ParamCount().Total(), int64(80*2*8192+8192), int64(80*2*8192*8*128)
	want := unit.Bytes(((total-norms-kv)/16 + norms + kv/8) * 2)
	if got := WeightBytes(m, 16, BF16); got != want {
		t.Errorf("WeightBytes(llama3-70b, TP 16, bf16) = %d, want %d", got, want)
	}
	if got := replicatedKVFLOPs(m, 16); got != 167_772_160 {
		t.Errorf("replicatedKVFLOPs(llama3-70b, 16) = %v, want 167,772,160", got)
	}
	if got := replicatedKVFLOPs(m, 8); got != 0 {
		t.Errorf("replicatedKVFLOPs(llama3-70b, 8) = %v, want 0 (one head a device, none replicated)", got)
	}
}

// TestReviewLayoutsPlan: the layouts review 128 #1 found refused now
// plan, and say that the KV heads are replicated: Llama 3 70B in bf16 on
// v5litepod-16 (TP 8 leaves no room: 16.4 GiB of weights a device on a
// 14.1 GiB budget) serves at TP 16; Qwen3-235B in fp8 on tpu7x-8 at TP 8,
// the layout of tpu-inference's own example
// (examples/offload/gke/benchmarks/single-host/deploy-baseline.yaml 38).
func TestReviewLayoutsPlan(t *testing.T) {
	for _, c := range []struct {
		model, tpu string
		weights    Dtype
		tp, want   int
		replicas   string
	}{
		{"llama3-70b", "v5litepod-16", BF16, 0, 16, "the 8 KV heads replicated ×2"},
		{"qwen3-235b-a22b", "tpu7x-8", FP8, 8, 8, "the 4 KV heads replicated ×2"},
	} {
		m := lookup(t, c.model)
		r, err := NewRequest(Request{Model: m, Slice: slice(t, c.tpu), MaxModelLen: 4096, Concurrency: 64, PromptLen: 1024, OutputLen: 1024,
			Weights: c.weights, MemoryUtilization: 0.92, MaxNumBatchedTokens: 4096, TP: c.tp})
		if err != nil {
			t.Fatalf("%s on %s at TP %d: %v", c.model, c.tpu, c.tp, err)
		}
		p, err := Search(r)
		if errors.Is(err, ErrNoFit) || !p.Best.Fits || p.Best.TP != c.want {
			t.Errorf("%s on %s: %v, best TP %d fits %v; want TP %d that fits", c.model, c.tpu, err, p.Best.TP, p.Best.Fits, c.want)
		}
		if !strings.Contains(strings.Join(p.Reasons, "\n"), c.replicas) {
			t.Errorf("%s on %s: reasons %q do not say %q", c.model, c.tpu, p.Reasons, c.replicas)
		}
		if got, want := p.Best.Memory.KVPerToken, KVBytesPerToken(m, c.want, BF16); got != want {
			t.Errorf("%s on %s: KV %d a token a device, want %d", c.model, c.tpu, got, want)
		}
	}
}

// TestActivationBytesAboveKVHeads: above the KV heads a device holds one
// KV head (replicated), so a step's keys and values are one head wide,
// not a fraction of one. Llama 3 70B (d_model 8192, 64 heads and 8 KV
// heads of 128, d_ff 28672 gated, vocab 128256), one token and one
// sequence, by hand (2 bytes an activation, 4 a logit):
//
//	TP 8:  2·(3·8192 + 2·28672/8 + (64/8 + 2·1)·128) + 4·128256/8, one
//	       KV head a device as its share of 8;
//	TP 16: 2·(3·8192 + 2·28672/16 + (64/16 + 2·1)·128) + 4·128256/16,
//	       one KV head a device where a share, 8/16, would count half of
//	       one: (64 + 2·8)·128/16 = 640 elements a token, not 768.
func TestActivationBytesAboveKVHeads(t *testing.T) {
	m := lookup(t, "llama3-70b")
	for _, c := range []struct {
		tp   int
		want unit.Bytes
	}{
		{8, 2*(3*8192+2*28672/8+(64/8+2)*128) + 4*128256/8},
		{16, 2*(3*8192+2*28672/16+(64/16+2)*128) + 4*128256/16},
	} {
		if got := ActivationBytes(m, c.tp, 1, 1); got != c.want {
			t.Errorf("TP %d: %d bytes, want %d", c.tp, got, c.want)
		}
	}
}
