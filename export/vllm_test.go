package export

import (
	"os"
	"slices"
	"strings"
	"testing"

	"shardlab/hw"
	"shardlab/inference"
	"shardlab/model"
)

// vllmOptions reads testdata/vllm_serve_options.txt: each option and, when
// listed, the values it accepts.
func vllmOptions(t *testing.T) map[string][]string {
	data, err := os.ReadFile("testdata/vllm_serve_options.txt")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		out[f[0]] = nil
		if len(f) > 1 {
			out[f[0]] = strings.Split(f[1], ",")
		}
	}
	return out
}

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
	known := vllmOptions(t)
	for _, kv := range []inference.Dtype{inference.BF16, inference.FP8} {
		args := VLLMServe(servePlan(t, kv), "meta-llama/Meta-Llama-3-70B")
		if !slices.Equal(args[:3], []string{"vllm", "serve", "meta-llama/Meta-Llama-3-70B"}) {
			t.Errorf("command starts %q", args[:3])
		}
		seen := map[string]string{}
		for i := 3; i < len(args); i += 2 {
			opt := args[i]
			choices, ok := known[opt]
			if !ok {
				t.Errorf("%s is not a vllm serve option in testdata/vllm_serve_options.txt", opt)
				continue
			}
			if i+1 >= len(args) {
				t.Fatalf("%s has no value", opt)
			}
			if choices != nil && !slices.Contains(choices, args[i+1]) {
				t.Errorf("%s %s, want one of %v", opt, args[i+1], choices)
			}
			seen[opt] = args[i+1]
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
