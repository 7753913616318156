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

// TestInferencePublishedDPAttention: tpu-recipes' Qwen3.5-397B benchmark
// (validate/serving.yaml row recipes-tpu7x8-qwen3.5-397b-8k1k, from
// AI-Hypercomputer/tpu-recipes inference/ironwood/vLLM/Qwen3.5-397B
// @c8cfe2f689081d36701a101cd73a70965d80926b: server --tensor-parallel-size=8
// --max-num-seqs=64 with enable_dp_attention, client --max-concurrency=128).
// Under attention data parallelism tpu-inference runs one vLLM scheduler
// a device, each with the command's max_num_seqs (DPScheduler,
// tpu_inference/core/sched/dp_scheduler.py:483-532 @b8692ff0), 8 × 64 =
// 512 a replica: the vllm serve line keeps --max-num-seqs 64, all 128
// clients run at once with no queue, and the simulation is what validate
// computes for the row at the same lengths (fixed here: the CLI's uniform
// mix draws prompt and output from one range) and one request a client.
func TestInferencePublishedDPAttention(t *testing.T) {
	const id = "recipes-tpu7x8-qwen3.5-397b-8k1k"
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
	if row.MaxNumSeqs != 64 || w.Concurrency != 128 || row.TP != 8 || !row.DPAttention || row.MaxModelLen != 9216 || w.InputLen != 8192 || w.OutputLen != 1024 {
		t.Fatalf("row %s: %+v, want the recipe's server and client below", id, row)
	}
	row.Workload.RangeRatio, row.Workload.NumPrompts = 0, 128
	rep, err := validate.EvaluateServing([]validate.ServingRow{row})
	if err != nil {
		t.Fatal(err)
	}
	want := rep.Results[0].Sim.TokensPerSecond
	v := decodeJSON(t, "inference", "--json", "--model", "qwen3.5-397b-a17b", "--tpu", "tpu7x-8", "--tensor-parallel-size", "8",
		"--max-model-len", "9216", "--max-num-seqs", "64", "--max-num-batched-tokens", "1024", "--gpu-memory-utilization", "0.9",
		"--enable-dp-attention", "--weights", "fp8", "--kv-cache-dtype", "fp8",
		"--concurrency", "128", "--prompt-len", "8192", "--output-len", "1024", "--num-requests", "128").(map[string]any)
	if cmd := v["vllm_serve_command"].(string); !strings.Contains(cmd, " --max-num-seqs 64 ") {
		t.Errorf("vllm serve line %q, want --max-num-seqs 64 as given", cmd)
	}
	l := v["layout"].(map[string]any)
	if l["attention_data_parallel_size"] != 8.0 || l["sequences_per_replica"] != 512.0 || l["running_sequences_per_replica"] != 128.0 || l["queue_wait_s"] != nil {
		t.Errorf("layout: attention DP %v, %v sequences a replica, %v running, queue wait %v; want 8, 512, 128, none",
			l["attention_data_parallel_size"], l["sequences_per_replica"], l["running_sequences_per_replica"], l["queue_wait_s"])
	}
	sim := v["simulation"].(map[string]any)
	if got := sim["output_tokens_per_s"].(float64); math.Abs(got/want-1) > 1e-9 || sim["preemptions"].(float64) != 0 {
		t.Errorf("simulated %.6g output tokens/s (%v preemptions), validate's row %s at fixed lengths %.6g", got, sim["preemptions"], id, want)
	}
}
