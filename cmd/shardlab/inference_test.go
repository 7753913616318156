package main

import (
	"strconv"
	"strings"
	"testing"
)

// TestInferenceJSON: --json carries the layout, memory, concurrency,
// latency and the vllm serve command, and they agree with each other.
func TestInferenceJSON(t *testing.T) {
	v := decodeJSON(t, "inference", "--model", "llama3-70b", "--tpu", "tpu7x-8", "--max-model-len", "8192", "--json").(map[string]any)
	l := v["layout"].(map[string]any)
	mem := l["memory_per_device"].(map[string]any)
	tp := l["tensor_parallel_size"].(float64)
	if tp < 1 || mem["max_seqs_at_max_model_len"].(float64) < v["concurrency_sequences"].(float64) || l["inter_token_latency_s"].(float64) <= 0 || l["ttft_s"].(float64) <= 0 {
		t.Errorf("layout %v", l)
	}
	cmd := v["vllm_serve_command"].(string)
	for _, want := range []string{"vllm serve llama3-70b", "--max-model-len 8192", "--tensor-parallel-size " + strconv.Itoa(int(tp))} {
		if !strings.Contains(cmd, want) {
			t.Errorf("vllm_serve_command %q lacks %q", cmd, want)
		}
	}
	// the used parts stay inside the budget
	if mem["weights_bytes"].(float64)+mem["activations_bytes"].(float64)+mem["kv_cache_bytes"].(float64) > mem["budget_bytes"].(float64) {
		t.Errorf("memory %v exceeds its budget", mem)
	}
}

// TestInferenceBadInput: each is refused in one line naming the flag, the
// value and what is accepted, with exit 2.
func TestInferenceBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--tensor-parallel-size", "16", "--tpu", "tpu7x-16"}, []string{"--tensor-parallel-size 16", "1, 2, 4, 8", "KV heads"}},
		{[]string{"--tensor-parallel-size", "3"}, []string{"--tensor-parallel-size 3"}},
		{[]string{"--max-model-len", "16384"}, []string{"--max-model-len 16384", "2 to 8192"}},
		{[]string{"--concurrency", "0"}, []string{"--concurrency", `"0"`, "from 1 to"}},
		{[]string{"--request-rate", "NaN"}, []string{"--request-rate", `"NaN"`, "requests/s"}},
		{[]string{"--request-rate", "-1"}, []string{"--request-rate", `"-1"`}},
		{[]string{"--request-rate", "2", "--concurrency", "8"}, []string{"--concurrency and --request-rate"}},
		{[]string{"--gpu-memory-utilization", "NaN"}, []string{"--gpu-memory-utilization", `"NaN"`, "(0, 1]"}},
		{[]string{"--gpu-memory-utilization", "Inf"}, []string{"--gpu-memory-utilization", `"Inf"`}},
		{[]string{"--kv-cache-dtype", "int8"}, []string{"--kv-cache-dtype", `"int8"`, "bf16 or fp8"}},
		{[]string{"--tpu", "v5p-8"}, []string{"--tpu v5p", "tpu7x"}},
		{[]string{"--prompt-len", "8000", "--output-len", "500", "--max-model-len", "8192"}, []string{"--output-len 500", "1 to 192"}},
	} {
		fail(t, append([]string{"inference"}, c.args...), c.want...)
	}
	// a question with no answer is exit 1, not a usage error
	if _, errOut, code := runCmd("inference", "--concurrency", "60000"); code != 1 || !strings.Contains(errOut, "no layout fits") {
		t.Errorf("60000 sequences: exit %d, %q; want 1 and no layout fits", code, errOut)
	}
}

// TestInferenceLatencyTarget: README says --max-itl 9ms moves the 70B
// plan on tpu7x-8 from TP 4 on two chips to TP 8 on all four.
func TestInferenceLatencyTarget(t *testing.T) {
	for _, c := range []struct {
		args      []string
		tp, chips float64
	}{
		{nil, 4, 2},
		{[]string{"--max-itl", "9ms"}, 8, 4},
		{[]string{"--request-rate", "2", "--max-itl", "9ms"}, 8, 4},
	} {
		args := append([]string{"inference", "--model", "llama3-70b", "--tpu", "tpu7x-8", "--max-model-len", "8192", "--json"}, c.args...)
		l := decodeJSON(t, args...).(map[string]any)["layout"].(map[string]any)
		if l["tensor_parallel_size"] != c.tp || l["chips"] != c.chips {
			t.Errorf("shardlab %s: TP %v on %v chips, want TP %v on %v", strings.Join(args, " "), l["tensor_parallel_size"], l["chips"], c.tp, c.chips)
		}
	}
}
