package main

import (
	"math"
	"strings"
	"testing"

	"shardlab/validate"
)

// TestInferencePublishedClients: the tpu-recipes Llama 3.3 70B benchmark
// (validate/serving.yaml row recipes-v6e8-llama3.3-70b-c64, from
// AI-Hypercomputer/tpu-recipes inference/trillium/vLLM/Llama3.x/README.md
// @c8cfe2f689081d36701a101cd73a70965d80926b: server --max-num-seqs 256,
// client MAX_CONCURRENCY=64) is accepted as published, both flags given
// (review171 #4); the vllm serve line keeps --max-num-seqs 256, and the
// simulated throughput is what validate computes for the row, which
// models the same run its own way (64 sequences, max_num_seqs 256 in the
// simulation only).
func TestInferencePublishedClients(t *testing.T) {
	const id = "recipes-v6e8-llama3.3-70b-c64"
	rows, err := validate.ServingRows()
	if err != nil {
		t.Fatal(err)
	}
	var row validate.ServingRow
	for _, r := range rows {
		if r.ID == id {
			row = r
		}
	}
	w := row.Workload
	if row.MaxNumSeqs != 256 || w.Concurrency != 64 || row.TP != 8 || row.MaxModelLen != 2048 || w.InputLen != 1000 || w.OutputLen != 1000 || w.NumPrompts != 3000 {
		t.Fatalf("row %s: %+v, want the recipe's server and client below", id, row)
	}
	rep, err := validate.EvaluateServing([]validate.ServingRow{row})
	if err != nil {
		t.Fatal(err)
	}
	want := rep.Results[0].Sim.TokensPerSecond
	v := decodeJSON(t, "inference", "--json", "--model", "llama3-70b", "--tpu", "v6e-8", "--tensor-parallel-size", "8",
		"--max-model-len", "2048", "--max-num-seqs", "256", "--max-num-batched-tokens", "512", "--gpu-memory-utilization", "0.98",
		"--concurrency", "64", "--prompt-len", "1000", "--output-len", "1000", "--num-requests", "3000").(map[string]any)
	if cmd := v["vllm_serve_command"].(string); !strings.Contains(cmd, " --max-num-seqs 256 ") {
		t.Errorf("vllm serve line %q, want --max-num-seqs 256 as given", cmd)
	}
	sim := v["simulation"].(map[string]any)
	if got := sim["output_tokens_per_s"].(float64); math.Abs(got/want-1) > 1e-9 || sim["preemptions"].(float64) != 0 {
		t.Errorf("simulated %.6g output tokens/s (%v preemptions), validate's row %s %.6g", got, sim["preemptions"], id, want)
	}
}
