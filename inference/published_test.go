package inference

import (
	"testing"

	"shardlab/hw"
	"shardlab/model"
)

// qwen3_32B is Qwen/Qwen3-32B as its config.json gives it: hidden_size
// 5120, intermediate_size 25600, num_hidden_layers 64,
// num_attention_heads 64, num_key_value_heads 8, head_dim 128, vocab_size
// 151936, max_position_embeddings 40960, untied embeddings, SwiGLU.
var qwen3_32B = model.Spec{Name: "qwen3-32b", Layers: 64, DModel: 5120, Heads: 64, KVHeads: 8, HeadDim: 128,
	DFF: 25600, Vocab: 151936, SeqLen: 40960, GatedMLP: true}

// TestDecodeRooflineAgainstPublished holds the decode roofline and the KV
// capacity to a published tpu-inference run:
//
//	vllm-project/tpu-inference PR #1961 ("initial experimental batched_rpa
//	commit"): vllm serve Qwen/Qwen3-32B --max-model-len=9216
//	--max-num-seqs=135 --tensor-parallel-size 2 --max-num-batched-tokens 4096
//	(qwix fp8 weights and activations) --kv-cache-dtype=fp8
//	--gpu-memory-utilization=0.98 --block-size=256; random dataset, 1024
//	in, 8192 out, range ratio 0.8, 320 prompts at concurrency 320:
//	320 requests, 294,336 input and 2,373,916 generated tokens,
//	output token throughput 4054.90 tok/s.
//
// The PR does not name the TPU; the same server arguments are
// AI-Hypercomputer/tpu-recipes inference/ironwood/vLLM/Qwen3-32B/qwen3_32b-server.yaml
// @5d34c176, which runs them on one TPU7x chip (topology 1x1x1,
// google.com/tpu: 1) for the same 1k/8k workload, so the run is taken to
// be one TPU7x chip: TP 2 over its two devices.
//
// The mean request is 920 prompt and 7418 output tokens (the totals over
// 320), and at most 135 sequences run at once.
//
// Tolerance. A roofline is an upper bound, so the modelled decode rate
// must not fall below the measured one. The rooflines are the plan's step
// without vLLM's fixed step time (StepOverhead), which is fitted, not a
// roofline. The measured figure averages the
// whole run. The last of three waves of 135 holds only 50 sequences, and
// that lowers the roofline's average by about 7 %: 2·15.5 ms + 8.6 ms a
// step for 320 sequences, against 135 per 15.5 ms. The rest of the gap,
// about half, is what the run loses to HBM peak, interleaved prefills and
// scheduling, which the roofline does not model. The lower bound of 40 %
// was set knowing the ratio is 0.47. It guards against a model that drifts
// further from the measurement, and it is not a fit. Since the decode
// attention's MXU passes, the padding of the step and sampling are costed
// (issue 33) the ratio is 0.78.
//
// The capacity is held to the server's own choice. tpu-inference ran 135
// sequences of up to 9216 tokens, so they must fit. They must fit with
// less than 15 % to spare, or the KV layout would be too generous.
func TestDecodeRooflineAgainstPublished(t *testing.T) {
	const measured = 4054.90 // output tok/s
	chip, err := hw.Lookup("tpu7x")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRequest(Request{
		Model: qwen3_32B, Slice: hw.Slice{Chip: chip, Topology: hw.Topology{1, 1, 1}},
		MaxModelLen: 9216, Concurrency: 135, PromptLen: 294336 / 320, OutputLen: 2373916 / 320,
		Weights: FP8, KVCache: FP8, MemoryUtilization: 0.98, MaxNumBatchedTokens: 4096, TP: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	l := Estimate(r, 2, 1)
	if l.Chips != 1 || l.DecodeAllReduce != 0 {
		t.Fatalf("TP 2 on TPU7x: %d chips, all-reduce %v; want one chip, nothing over ICI", l.Chips, l.DecodeAllReduce)
	}
	roof := float64(l.SeqsEach) / (l.ITL - l.DecodeOverhead).Seconds()
	t.Logf("decode roofline %.0f tok/s (ITL %v without the step time %v: HBM %v, MXU %v), measured %.0f, ratio %.2f; capacity %d sequences",
		roof, l.ITL-l.DecodeOverhead, l.DecodeOverhead, l.DecodeMemory, l.DecodeCompute, measured, measured/roof, l.Memory.MaxSeqs)
	if roof < measured || measured < 0.4*roof {
		t.Errorf("decode roofline %.0f tok/s against measured %.0f: want roofline >= measured >= 0.4 × roofline", roof, measured)
	}
	if m := l.Memory.MaxSeqs; m < 135 || float64(m) > 1.15*135 {
		t.Errorf("KV capacity %d sequences of 9216 tokens; tpu-inference ran 135, want 135 to %d", m, 155)
	}
}
