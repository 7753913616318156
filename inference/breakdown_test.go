package inference

import (
	"strings"
	"testing"
	"time"

	"shardlab/model"
)

// TestBreakdownAddsUp: the TTFT and ITL a plan prints are the sums of
// the parts it prints beside them, for a dense model, a mixture of
// experts whose prefill chunk is bound by reading its experts' weights
// (the review's qwen3-coder-480b-a35b at 4096 tokens, fp8: the TTFT line
// said prefill 8.01 ms, the MXU time, of a 16.3 ms weights read), a
// hybrid model with linear attention (qwen3.5-397b-a17b, whose ITL
// parts fell 1.7 ms short: its recurrent states had no term) and a
// prompt prefilled in several chunks. Each part is rounded to the
// nanosecond on its own, so the sums may differ by a few.
func TestBreakdownAddsUp(t *testing.T) {
	for _, c := range []struct {
		model, tpu      string
		weights, kv     Dtype
		prompt, budget  int
		dpAttention     bool
		linear, experts bool // the terms only such models have
	}{
		{"llama3-8b", "v6e-8", BF16, BF16, 1024, 4096, false, false, false},
		{"llama3-70b", "tpu7x-8", BF16, BF16, 6000, 2048, false, false, false},
		{"qwen3-coder-480b-a35b", "tpu7x-8", FP8, FP8, 1024, 4096, false, false, true},
		{"qwen3.5-397b-a17b", "tpu7x-16", FP8, FP8, 1024, 4096, true, true, true},
	} {
		m, ok := model.Lookup(c.model)
		if !ok {
			t.Fatalf("%s missing from the catalog", c.model)
		}
		r, err := NewRequest(Request{Model: m, Slice: slice(t, c.tpu), MaxModelLen: 8192, Concurrency: 64, PromptLen: c.prompt, OutputLen: 1024,
			Weights: c.weights, KVCache: c.kv, MemoryUtilization: 0.92, MaxNumBatchedTokens: c.budget, DPAttention: c.dpAttention})
		if err != nil {
			t.Fatalf("%s: %v", c.model, err)
		}
		_, p := searched(t, r)
		b := p.Best
		ttft := b.PrefillRoofline + b.PrefillAllReduce + time.Duration(b.PrefillSteps)*b.DecodeOverhead
		itl := max(b.DecodeMemory-b.DecodeKV, b.DecodeCompute) + max(b.DecodeKV, b.DecodeAttention) + b.DecodeLinear + b.DecodeDispatch +
			b.DecodeSampling + b.DecodeAllReduce + b.DecodeOverhead
		if d := (ttft - b.TTFT).Abs(); d > 4*time.Nanosecond {
			t.Errorf("%s: TTFT %v, its parts add to %v", c.model, b.TTFT, ttft)
		}
		if d := (itl - b.ITL).Abs(); d > 8*time.Nanosecond {
			t.Errorf("%s: ITL %v, its parts add to %v", c.model, b.ITL, itl)
		}
		if b.PrefillRoofline < max(b.PrefillCompute, b.PrefillWeights) || b.PrefillRoofline > b.PrefillCompute+b.PrefillWeights {
			t.Errorf("%s: prefill roofline %v outside [max, sum] of MXU %v and weights HBM %v", c.model, b.PrefillRoofline, b.PrefillCompute, b.PrefillWeights)
		}
		if c.model == "qwen3-coder-480b-a35b" && b.PrefillWeights <= b.PrefillCompute {
			t.Errorf("%s: prefill MXU %v, weights HBM %v: not the weights-bound case the review found", c.model, b.PrefillCompute, b.PrefillWeights)
		}
		if (b.DecodeLinear > 0) != c.linear || (b.DecodeDispatch > 0) != c.experts {
			t.Errorf("%s: linear attention %v, MoE dispatch %v; want them nonzero: %v, %v", c.model, b.DecodeLinear, b.DecodeDispatch, c.linear, c.experts)
		}
		var text strings.Builder
		if err := p.WriteText(&text, "vllm serve m"); err != nil {
			t.Fatal(err)
		}
		want := []string{"weights HBM " + secs(b.PrefillWeights).String(), "MXU " + secs(b.PrefillCompute).String()}
		if c.linear {
			want = append(want, "linear-attention recurrent states "+secs(b.DecodeLinear).String())
		}
		if c.experts {
			want = append(want, "MoE dispatch of the routed rows "+secs(b.DecodeDispatch).String())
		}
		for _, s := range want {
			if !strings.Contains(text.String(), s) {
				t.Errorf("%s: the text does not print %q", c.model, s)
			}
		}
	}
}
