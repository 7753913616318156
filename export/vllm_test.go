package export

import (
	"slices"
	"testing"

	"shardlab/hw"
	"shardlab/inference"
	"shardlab/model"
)

func servePlan(t *testing.T, kv inference.Dtype) inference.Plan {
	m, _ := model.Lookup("llama3-70b")
	s, err := hw.ParseAcceleratorType("tpu7x-8")
	if err != nil {
		t.Fatal(err)
	}
	r, err := inference.NewRequest(inference.Request{Model: m, Slice: s, MaxModelLen: 8192, Concurrency: 64,
		PromptLen: 1024, OutputLen: 1024, KVCache: kv, MemoryUtilization: 0.9, MaxNumBatchedTokens: 4096})
	if err != nil {
		t.Fatal(err)
	}
	p, err := inference.Search(r)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestVLLMServeOptions: every option the command line carries is one vLLM
// defines, with a value it accepts, and every setting the plan fixes is
// there.
func TestVLLMServeOptions(t *testing.T) {
	for _, kv := range []inference.Dtype{inference.BF16, inference.FP8} {
		args := VLLMServe(servePlan(t, kv), "meta-llama/Meta-Llama-3-70B")
		if !slices.Equal(args[:3], []string{"vllm", "serve", "meta-llama/Meta-Llama-3-70B"}) {
			t.Errorf("command starts %q", args[:3])
		}
		seen, err := CheckVLLMServe(args)
		if err != nil {
			t.Errorf("kv %s: %v", kv, err)
			continue
		}
		for _, want := range []string{"--tensor-parallel-size", "--data-parallel-size", "--max-model-len", "--max-num-seqs",
			"--max-num-batched-tokens", "--kv-cache-dtype", "--block-size", "--gpu-memory-utilization"} {
			if _, ok := seen[want]; !ok {
				t.Errorf("kv %s: command lacks %s: %q", kv, want, args)
			}
		}
		if kv == inference.FP8 && seen["--kv-cache-dtype"] != "fp8" {
			t.Errorf("fp8 KV: --kv-cache-dtype %s", seen["--kv-cache-dtype"])
		}
	}
}

func TestShellQuote(t *testing.T) {
	if got, want := ShellQuote([]string{"vllm", "serve", "it's here", "--x", "0.9"}), `vllm serve 'it'\''s here' --x 0.9`; got != want {
		t.Errorf("ShellQuote = %s, want %s", got, want)
	}
}

// TestCheckVLLMServeRefuses: CheckVLLMServe refuses an option vLLM does not
// define, a value it does not accept, and an option without a value.
func TestCheckVLLMServeRefuses(t *testing.T) {
	for _, args := range [][]string{
		{"vllm", "serve", "m", "--tensor-parallel", "4"},
		{"vllm", "serve", "m", "--kv-cache-dtype", "bf16"},
		{"vllm", "serve", "m", "--max-model-len"},
		{"vllm", "run", "m"},
	} {
		if _, err := CheckVLLMServe(args); err == nil {
			t.Errorf("CheckVLLMServe(%q) accepted", args)
		}
	}
}
