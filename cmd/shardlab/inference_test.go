package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"shardlab/export"
	"shardlab/inference"
	"shardlab/unit"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
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
	for _, want := range []string{"vllm serve meta-llama/Meta-Llama-3-70B", "--max-model-len 8192", "--tensor-parallel-size " + strconv.Itoa(int(tp))} {
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
	badMix := filepath.Join(t.TempDir(), "mix.csv")
	if err := os.WriteFile(badMix, []byte("prompt_len,output_len,weight\n100,300,1\n100,3x00,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		// 12 divides mixtral-8x22b's 48 heads but is neither a divisor nor a multiple of its 8 KV heads
		{[]string{"--model", "mixtral-8x22b", "--max-model-len", "4096", "--tensor-parallel-size", "12", "--tpu", "tpu7x-384"},
			[]string{"--tensor-parallel-size 12", "one of 1, 2, 4, 8, 16, 24, 48", "divisor or a multiple of the 8 KV heads"}},
		{[]string{"--tensor-parallel-size", "3"}, []string{"--tensor-parallel-size 3"}},
		{[]string{"--max-model-len", "16384"}, []string{"--max-model-len 16384", "2 to 8192"}},
		{[]string{"--concurrency", "0"}, []string{"--concurrency", `"0"`, "from 1 to"}},
		{[]string{"--request-rate", "NaN"}, []string{"--request-rate", `"NaN"`, "requests/s"}},
		{[]string{"--request-rate", "-1"}, []string{"--request-rate", `"-1"`}},
		{[]string{"--request-rate", "2", "--concurrency", "8"}, []string{"--concurrency 8, want no --request-rate beside it: give one of the two"}},
		{[]string{"--gpu-memory-utilization", "NaN"}, []string{"--gpu-memory-utilization", `"NaN"`, "(0, 1]"}},
		{[]string{"--gpu-memory-utilization", "Inf"}, []string{"--gpu-memory-utilization", `"Inf"`}},
		{[]string{"--kv-cache-dtype", "int8"}, []string{"--kv-cache-dtype", `"int8"`, "auto, bfloat16, fp8, fp8_e4m3 or fp8_e5m2"}},
		{[]string{"--kv-cache-dtype", "bf16"}, []string{"--kv-cache-dtype", `"bf16"`, "bfloat16"}},
		{[]string{"--max-num-seqs", "0"}, []string{"--max-num-seqs", `"0"`, "from 1 to"}},
		{[]string{"--max-num-seqs", "2.5"}, []string{"--max-num-seqs", `"2.5"`}},
		{[]string{"--max-num-batched-tokens", "1"}, []string{"--max-num-batched-tokens 1", "64 to 2097152", "below max_num_seqs"}},
		{[]string{"--max-num-seqs", "256", "--max-num-batched-tokens", "255", "--model", "llama3-8b"}, []string{"--max-num-batched-tokens 255", "256 to 2097152"}},
		// review 145 #4: "(the default)" only where the flag was left out
		{[]string{"--max-num-seqs", "8192", "--max-num-batched-tokens", "4096", "--model", "llama3-8b", "--tpu", "v6e-8"}, []string{"--max-num-batched-tokens 4096, want 8192 to"}},
		{[]string{"--max-num-seqs", "8192", "--model", "llama3-8b", "--tpu", "v6e-8"}, []string{"--max-num-batched-tokens 4096 (the default), want 8192 to"}},
		{[]string{"--max-num-seqs", "8", "--request-rate", "2"}, []string{"--max-num-seqs 8, want no --request-rate beside it: give one of the two (a rate sets max_num_seqs)"}},
		{[]string{"--model", "gpt3-175b", "--max-model-len", "2048"}, []string{"model gpt3-175b", "no Hugging Face repository", "--hf-model"}},
		{[]string{"--tpu", "v4-8"}, []string{"--tpu v4", "tpu7x (the generations tpu-inference recommends) or v5p"}},
		{[]string{"--prompt-len", "8192", "--max-model-len", "8192"}, []string{"--prompt-len 8192, want 1 to 8191 (--max-model-len less one output token)"}},
		{[]string{"--prompt-len", "8000", "--output-len", "500", "--max-model-len", "8192"}, []string{"--output-len 500, want 1 to 192 (--max-model-len 8192 less --prompt-len 8000)"}},
		{[]string{"--length-mix", "uniform:9-3"}, []string{`--length-mix "uniform:9-3"`, "uniform range", "1 <= A <= B"}},
		{[]string{"--length-mix", "zipf"}, []string{`--length-mix "zipf": no such file, want fixed, uniform:A-B or a histogram file (a first line prompt_len,output_len,weight, then a bin a line: prompt tokens, output tokens, weight)`}},
		{[]string{"--length-mix", "uniform:100-5000"}, []string{`--length-mix "uniform:100-5000"`, "requests of 10000", "max_model_len 8192"}},
		{[]string{"--length-mix", badMix}, []string{"--length-mix", "line 3", "output_len", `"3x00"`}},
		{[]string{"--length-mix", "uniform:10-20", "--output-len", "500"}, []string{"inference: --output-len 500, want it unset beside --length-mix (uniform 10-20)", "mean request"}},
		{[]string{"--prompt-len", "1024", "--length-mix", "uniform:10-20"}, []string{"inference: --prompt-len 1024, want it unset beside --length-mix (uniform 10-20)", "mean request"}},
		{[]string{"--num-requests", "0"}, []string{"--num-requests", `"0"`}},
		{[]string{"--seed", "-1"}, []string{"--seed", `"-1"`}},
		{[]string{"--objective", "fast"}, []string{"--objective", `"fast"`, "throughput or latency"}},
		{[]string{"--itl-slo", "-1ms"}, []string{"--itl-slo", `"-1ms"`, "0s to 1h0m0s"}},
		{[]string{"--ttft-slo", "soon"}, []string{"--ttft-slo", `"soon"`}},
		{[]string{"--max-itl", "9ms"}, []string{"-max-itl"}},
		{[]string{"--data-parallel-size", "3", "--tensor-parallel-size", "4"}, []string{"--data-parallel-size 3", "1 to 2 replicas"}},
		{[]string{"--data-parallel-size", "-1"}, []string{"--data-parallel-size", `"-1"`}},
		{[]string{"--model", "deepseek3-671b", "--tensor-parallel-size", "3"}, []string{"--tensor-parallel-size 3", "latent attention", "256 experts"}},
		{[]string{"--model", "gemma4-31b", "--tensor-parallel-size", "32", "--tpu", "tpu7x-16"}, []string{"--tensor-parallel-size 32", "KV heads"}},
		{[]string{"--model", "deepseek3-671b", "--tpu", "tpu7x-64", "--enable-dp-attention=false"}, []string{"--enable-dp-attention false", "want true or unset for deepseek3-671b", "latent attention", "refuses"}},
		{[]string{"--model", "gemma4-31b", "--max-model-len", "300000"}, []string{"--max-model-len 300000", "262144"}},
	} {
		fail(t, append([]string{"inference"}, c.args...), c.want...)
	}
	// --enable-dp-attention=false is what a model without latent attention
	// runs anyway: accepted
	if _, errOut, code := runCmd("inference", "--enable-dp-attention=false", "--num-requests", "10"); code != 0 {
		t.Errorf("llama3-70b --enable-dp-attention=false: exit %d, %s; want 0", code, errOut)
	}
	// one sequence's pages do not fit: the error says so and names the
	// flag of the length that would fit (inference's TestNoFitPages costs it)
	if _, errOut, code := runCmd("inference", "--model", "gemma4-31b", "--tpu", "v6e-4", "--concurrency", "1", "--max-model-len", "262144"); code != 1 ||
		!strings.Contains(errOut, "one sequence's KV pages of --max-model-len 262144 tokens") || !strings.Contains(errOut, "it fits with --max-model-len ") ||
		strings.Contains(errOut, "1 concurrent sequences") {
		t.Errorf("gemma4-31b at 262144 tokens on v6e-4: exit %d, %q; want 1, one sequence's pages and --max-model-len", code, errOut)
	}
	// a question with no answer is exit 1, not a usage error
	if _, errOut, code := runCmd("inference", "--model", "llama3-405b", "--tpu", "tpu7x-8"); code != 1 || !strings.Contains(errOut, "no layout fits") {
		t.Errorf("llama3-405b on tpu7x-8: exit %d, %q; want 1 and no layout fits", code, errOut)
	}
}

// TestInferenceWholeVM: the 70B plan on tpu7x-8 uses all 4 chips (TP 8,
// the most tokens/s per chip of the layouts over all 8 devices), and every
// layout it lists uses them all; only a fixed --tensor-parallel-size and
// --data-parallel-size leave chips idle, and the output says so.
func TestInferenceWholeVM(t *testing.T) {
	args := []string{"inference", "--model", "llama3-70b", "--tpu", "tpu7x-8", "--max-model-len", "8192", "--json"}
	v := decodeJSON(t, args...).(map[string]any)
	l := v["layout"].(map[string]any)
	if l["tensor_parallel_size"] != 8.0 || l["chips"] != 4.0 {
		t.Errorf("llama3-70b on tpu7x-8: TP %v on %v chips, want 8 on 4", l["tensor_parallel_size"], l["chips"])
	}
	for _, x := range v["layouts"].([]any) {
		x := x.(map[string]any)
		if x["tensor_parallel_size"].(float64)*x["data_parallel_size"].(float64) != 8 {
			t.Errorf("layout %v × %v does not use the 8 devices", x["tensor_parallel_size"], x["data_parallel_size"])
		}
	}
	if !strings.Contains(v["vllm_serve_command"].(string), "vllm serve meta-llama/Meta-Llama-3-70B --tensor-parallel-size 8 --data-parallel-size 1") {
		t.Errorf("command %q", v["vllm_serve_command"])
	}
	out, errOut, code := runCmd("inference", "--model", "llama3-70b", "--tpu", "tpu7x-8", "--tensor-parallel-size", "4", "--data-parallel-size", "1", "--num-requests", "20")
	if code != 0 || !strings.Contains(out, "uses 2 of tpu7x-8's 4 chips, as the request fixes") || !strings.Contains(out, "the other 2 chips idle") {
		t.Errorf("TP 4 × DP 1: exit %d %s\n%s", code, errOut, out)
	}
}

// TestInferenceObjective: llama3-8b on tpu7x-8 at --max-num-seqs 64 a
// replica: throughput picks TP 1 × DP 8 (ITL 7.88 ms beyond vLLM's fixed
// step time h, which every layout's TTFT and ITL carry); --itl-slo h+5ms
// moves it to TP 2 × DP 4, as does --ttft-slo h+7ms; --objective latency
// picks TP 8; an SLO no layout meets prints the best effort, marked (text
// and JSON on stdout), and exits 1 with a line on stderr naming the miss,
// as plan and budget do when nothing can run.
func TestInferenceObjective(t *testing.T) {
	h := inference.StepOverhead(inference.VLLM)
	for _, c := range []struct {
		args   []string
		tp     float64
		effort bool
	}{
		{nil, 1, false},
		{[]string{"--itl-slo", (h + 5*time.Millisecond).String()}, 2, false},
		{[]string{"--ttft-slo", (h + 7*time.Millisecond).String()}, 2, false},
		{[]string{"--objective", "latency"}, 8, false},
		{[]string{"--objective", "LATENCY", "--itl-slo", (h + 2*time.Millisecond).String()}, 8, false},
		{[]string{"--itl-slo", (h + time.Millisecond).String()}, 1, true},
	} {
		args := append([]string{"inference", "--model", "llama3-8b", "--tpu", "tpu7x-8", "--max-num-seqs", "64", "--num-requests", "20", "--json"}, c.args...)
		out, errOut, code := runCmd(args...)
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("shardlab %s: exit %d, %v: %s", strings.Join(args, " "), code, err, errOut)
		}
		if want := map[bool]int{false: 0, true: 1}[c.effort]; code != want || c.effort != strings.Contains(errOut, "no layout meets") {
			t.Errorf("shardlab %s: exit %d, stderr %q; want exit %d", strings.Join(args, " "), code, errOut, want)
		}
		l := v["layout"].(map[string]any)
		if l["tensor_parallel_size"] != c.tp || l["chips"] != 4.0 || v["best_effort"] != c.effort || l["meets_slo"] == c.effort {
			t.Errorf("shardlab %s: TP %v on %v chips, best effort %v, meets %v; want TP %v on 4, %v", strings.Join(args, " "), l["tensor_parallel_size"], l["chips"], v["best_effort"], l["meets_slo"], c.tp, c.effort)
		}
	}
	slo := h + time.Millisecond
	out, _, code := runCmd("inference", "--model", "llama3-8b", "--tpu", "tpu7x-8", "--max-num-seqs", "64", "--num-requests", "20", "--itl-slo", slo.String())
	itl := unit.Seconds((h + 7880*time.Microsecond).Seconds()) // 15.58 ms: three digits, 15.6 ms
	if code != 1 || !strings.Contains(out, "simulated (") || !strings.Contains(out, "NO LAYOUT MEETS THE SLOs") || !strings.Contains(out, fmt.Sprintf("misses ITL %v > %v", itl, unit.Seconds(slo.Seconds()))) {
		t.Errorf("--itl-slo 1ms: exit %d\n%s", code, out)
	}
}

// TestInferenceMoE: mixture-of-experts models get serving plans with
// --enable-expert-parallel (a flag vLLM takes without a value); DeepSeek-V3
// fits a tpu7x-16 in fp8 and its command carries enable_dp_attention and
// no --block-size (tpu-inference sets its MLA page, 1024 tokens, only
// when the flag is absent: platforms/tpu_platform.py 367-373 @b8692ff0). Qwen3-235B in fp8 on tpu7x-8 runs TP 8 (EP 8), its 4 KV heads
// replicated ×2, as tpu-inference's deploy-baseline.yaml example serves it.
func TestInferenceMoE(t *testing.T) {
	for _, c := range []struct {
		args []string
		ep   float64
		mla  bool
	}{
		{[]string{"--model", "mixtral-8x7b", "--tpu", "tpu7x-8"}, 8, false},
		{[]string{"--model", "qwen3-235b-a22b", "--tpu", "tpu7x-8", "--weights", "fp8"}, 8, false},
		{[]string{"--model", "deepseek3-671b", "--tpu", "tpu7x-16", "--weights", "fp8", "--kv-cache-dtype", "fp8"}, 16, true},
	} {
		v := decodeJSON(t, append([]string{"inference", "--json", "--num-requests", "20"}, c.args...)...).(map[string]any)
		l := v["layout"].(map[string]any)
		var cmd []string
		for _, a := range v["vllm_serve_args"].([]any) {
			cmd = append(cmd, a.(string))
		}
		seen, err := export.CheckVLLMServe(cmd)
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		if l["expert_parallel_size"] != c.ep || seen["--enable-expert-parallel"] != "true" || l["active_experts_per_moe_layer"].(float64) <= 0 {
			t.Errorf("%v: EP %v, --enable-expert-parallel %q, active experts %v; want EP %v and the flag", c.args, l["expert_parallel_size"], seen["--enable-expert-parallel"], l["active_experts_per_moe_layer"], c.ep)
		}
		_, block := seen["--block-size"]
		if c.mla != strings.Contains(seen["--additional-config"], `"enable_dp_attention":true`) || c.mla == block {
			t.Errorf("%v: --additional-config %q, --block-size %v", c.args, seen["--additional-config"], seen["--block-size"])
		}
	}
}

// TestInferenceVLLMFlags: the vllm serve line inference prints names the
// model by its Hugging Face id, carries only options vLLM's engine args
// define, with values they accept, and agrees with the plan: vLLM's own
// --kv-cache-dtype values are accepted, and --max-num-seqs is accepted and
// printed as given, each replica's share of the plan's concurrency.
func TestInferenceVLLMFlags(t *testing.T) {
	for _, c := range []struct {
		args    []string
		id      string
		kv      string // the --kv-cache-dtype printed
		seqs    int    // the --max-num-seqs printed (0: the plan's)
		element float64
	}{
		{nil, "meta-llama/Meta-Llama-3-70B", "auto", 0, 2},
		{[]string{"--kv-cache-dtype", "auto"}, "meta-llama/Meta-Llama-3-70B", "auto", 0, 2},
		{[]string{"--kv-cache-dtype", "fp8"}, "meta-llama/Meta-Llama-3-70B", "fp8", 0, 1},
		{[]string{"--kv-cache-dtype", "bfloat16"}, "meta-llama/Meta-Llama-3-70B", "bfloat16", 0, 2},
		{[]string{"--kv-cache-dtype", "fp8_e4m3"}, "meta-llama/Meta-Llama-3-70B", "fp8_e4m3", 0, 1},
		{[]string{"--kv-cache-dtype", "fp8_e5m2"}, "meta-llama/Meta-Llama-3-70B", "fp8_e5m2", 0, 1}, // not fp8 (e4m3): another format
		{[]string{"--max-num-seqs", "24"}, "meta-llama/Meta-Llama-3-70B", "auto", 24, 2},
		{[]string{"--max-num-seqs", "16", "--tensor-parallel-size", "2"}, "meta-llama/Meta-Llama-3-70B", "auto", 16, 2},
		{[]string{"--model", "llama3-8b"}, "meta-llama/Meta-Llama-3-8B", "auto", 0, 2},
		{[]string{"--model", "gpt3-175b", "--max-model-len", "2048", "--concurrency", "16", "--hf-model", "/models/gpt3"}, "/models/gpt3", "auto", 0, 2},
	} {
		args := append([]string{"inference", "--json"}, c.args...)
		v := decodeJSON(t, args...).(map[string]any)
		var cmd []string
		for _, a := range v["vllm_serve_args"].([]any) {
			cmd = append(cmd, a.(string))
		}
		if len(cmd) < 3 || !slices.Equal(cmd[:3], []string{"vllm", "serve", c.id}) {
			t.Errorf("%v: command starts %q, want vllm serve %s", c.args, cmd[:min(3, len(cmd))], c.id)
			continue
		}
		l := v["layout"].(map[string]any)
		mem := l["memory_per_device"].(map[string]any)
		seen, err := export.CheckVLLMServe(cmd)
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		if c.kv != "" && seen["--kv-cache-dtype"] != c.kv {
			t.Errorf("%v: --kv-cache-dtype %s printed, want %s", c.args, seen["--kv-cache-dtype"], c.kv)
		}
		// KV bytes a token per device at the plan's TP: layers · 2·(KV heads/TP) · 128 · element,
		// llama3-70b's 80 layers and 8 KV heads of 128 (below the useful split at these TPs)
		if c.id == "meta-llama/Meta-Llama-3-70B" {
			tp := l["tensor_parallel_size"].(float64)
			if tp <= 4 {
				want := 80 * 2 * (8 / tp) * 128 * c.element
				if got := mem["kv_per_token_bytes"].(float64); got != want {
					t.Errorf("%v: KV %v bytes a token at TP %v, want %v", c.args, got, tp, want)
				}
			}
		}
		seqs := l["sequences_per_replica"].(float64)
		if seen["--max-num-seqs"] != strconv.Itoa(int(seqs)) || (c.seqs > 0 && seqs != float64(c.seqs)) {
			t.Errorf("%v: --max-num-seqs %s printed, plan runs %v a replica; want both %d", c.args, seen["--max-num-seqs"], seqs, c.seqs)
		}
		if c.seqs > 0 && v["concurrency_sequences"].(float64) != float64(c.seqs)*l["data_parallel_size"].(float64) {
			t.Errorf("%v: concurrency %v, want %d a replica × %v replicas", c.args, v["concurrency_sequences"], c.seqs, l["data_parallel_size"])
		}
	}
}

// TestInferenceSimulation: the simulation section follows the flags: a
// histogram file's lengths, Poisson arrivals at --request-rate, and the
// same --seed prints the same bytes while another seed does not. The rate,
// 10 requests/s, is one the plan's 1024 + 1024 tokens fit on v6e-8 with
// vLLM's fixed step time in each token's latency.
func TestInferenceSimulation(t *testing.T) {
	mix := filepath.Join(t.TempDir(), "mix.csv")
	if err := os.WriteFile(mix, []byte("# two bins\nprompt_len,output_len,weight\n100,300,3\n1000,200,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(seed string) string {
		out, errOut, code := runCmd("inference", "--model", "llama3-8b", "--tpu", "v6e-8", "--request-rate", "10", "--length-mix", mix, "--seed", seed, "--num-requests", "200")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		return out
	}
	a, b, c := run("3"), run("3"), run("4")
	if a != b {
		t.Error("--seed 3 twice prints different output")
	}
	if a == c {
		t.Error("--seed 3 and 4 print the same output")
	}
	for _, want := range []string{"simulated (vllm scheduler, histogram lengths, Poisson arrivals at 10 requests/s, seed 3)", "TTFT mean", "p99", "ITL  mean"} {
		if !strings.Contains(a, want) {
			t.Errorf("output lacks %q:\n%s", want, a)
		}
	}
}

// TestInferenceDPAttentionFlag: --enable-dp-attention serves Qwen3.5 as its
// tpu-recipes recipe does (TP 8 on a tpu7x-8, attention data parallel, fp8
// weights and KV cache), and the vllm serve line asks for it; without the
// flag the same TP 8 is tensor parallelism, Qwen3.5's 2 KV heads replicated
// ×4 (tpu-inference's get_padded_num_heads), and the line does not ask for it.
func TestInferenceDPAttentionFlag(t *testing.T) {
	args := []string{"inference", "--json", "--num-requests", "20", "--model", "qwen3.5-397b-a17b", "--tpu", "tpu7x-8",
		"--weights", "fp8", "--kv-cache-dtype", "fp8", "--tensor-parallel-size", "8", "--max-num-seqs", "64", "--max-model-len", "9216"}
	v := decodeJSON(t, append(args, "--enable-dp-attention")...).(map[string]any)
	var cmd []string
	for _, a := range v["vllm_serve_args"].([]any) {
		cmd = append(cmd, a.(string))
	}
	seen, err := export.CheckVLLMServe(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(seen["--additional-config"], `"enable_dp_attention":true`) {
		t.Errorf("--additional-config %q lacks enable_dp_attention", seen["--additional-config"])
	}
	v = decodeJSON(t, args...).(map[string]any)
	l := v["layout"].(map[string]any)
	cmd = cmd[:0]
	for _, a := range v["vllm_serve_args"].([]any) {
		cmd = append(cmd, a.(string))
	}
	if seen, err = export.CheckVLLMServe(cmd); err != nil || strings.Contains(seen["--additional-config"], "enable_dp_attention") ||
		l["attention_data_parallel_size"] != 1.0 || l["tensor_parallel_size"] != 8.0 || !strings.Contains(fmt.Sprint(v["reasons"]), "2 KV heads replicated ×4") {
		t.Errorf("without --enable-dp-attention: %v, layout %v, --additional-config %q, reasons %v; want TP 8 without attention DP, its 2 KV heads replicated ×4",
			err, l, seen["--additional-config"], v["reasons"])
	}
}

// TestGemma4TrainingRefused: Gemma 4 is served (inference) but its
// sliding-window layers are not costed for training: plan refuses it as
// a usage error that names the model and the field.
func TestGemma4TrainingRefused(t *testing.T) {
	fail(t, []string{"plan", "--model", "gemma4-31b", "--tpu", "v6e-8"}, "gemma4-31b (sliding_window 1024)", "not modelled")
	if out, errOut, code := runCmd("inference", "--model", "gemma4-31b", "--tpu", "v6e-8", "--max-model-len", "4096", "--concurrency", "16", "--num-requests", "50"); code != 0 ||
		!strings.Contains(out, "sliding window of 1024 tokens in 50 of 60 layers") {
		t.Errorf("inference gemma4-31b on v6e-8: exit %d, %q; want 0 and the window's reason", code, errOut)
	}
}

// TestInferencePrefillSteps: a prompt longer than --max-num-batched-tokens
// is prefilled in ⌈prompt / budget⌉ steps, and the plan's TTFT says so,
// each step paying vLLM's fixed step time.
func TestInferencePrefillSteps(t *testing.T) {
	out, errOut, code := runCmd("inference", "--model", "llama3-8b", "--tpu", "v6e-8", "--prompt-len", "2500", "--max-num-batched-tokens", "1024", "--num-requests", "20")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "prefill in 3 steps of at most 1024 tokens") || !strings.Contains(out, "step overhead 3 × ") {
		t.Errorf("a 2500-token prompt in a budget of 1024: output lacks its 3 prefill steps:\n%s", out)
	}
}

// TestInferenceJSONBreakdown: --json's latency parts add up to ttft_s
// and inter_token_latency_s, for a dense model, a mixture of experts
// whose prefill is bound by its weights' read, and a hybrid model with
// linear attention (its JSON had no key for the prefill's weights read
// nor for the recurrent states, so neither total could be rebuilt).
func TestInferenceJSONBreakdown(t *testing.T) {
	for _, args := range [][]string{
		{"--model", "llama3-8b", "--tpu", "v6e-8", "--prompt-len", "6000", "--output-len", "100", "--max-num-batched-tokens", "2048"},
		{"--model", "qwen3-coder-480b-a35b", "--max-model-len", "4096", "--weights", "fp8", "--kv-cache-dtype", "fp8"},
		{"--model", "qwen3.5-397b-a17b", "--tpu", "tpu7x-16", "--enable-dp-attention", "--weights", "fp8", "--kv-cache-dtype", "fp8"},
	} {
		v := decodeJSON(t, append([]string{"inference", "--num-requests", "10", "--json"}, args...)...).(map[string]any)
		l := v["layout"].(map[string]any)
		f := func(k string) float64 {
			x, ok := l[k].(float64)
			if !ok {
				t.Fatalf("%v: layout has no number %s", args, k)
			}
			return x
		}
		ttft := f("prefill_roofline_s") + f("prefill_all_reduce_s") + f("prefill_steps")*f("step_overhead_s")
		itl := max(f("decode_hbm_s")-f("decode_kv_hbm_s"), f("decode_compute_s")) + max(f("decode_kv_hbm_s"), f("decode_attention_mxu_s")) +
			f("decode_linear_attention_s") + f("decode_moe_dispatch_s") + f("decode_sampling_s") + f("decode_all_reduce_s") + f("step_overhead_s")
		if math.Abs(ttft-f("ttft_s")) > 1e-8 || math.Abs(itl-f("inter_token_latency_s")) > 1e-8 {
			t.Errorf("%v: ttft_s %g, its parts %g; inter_token_latency_s %g, its parts %g", args, f("ttft_s"), ttft, f("inter_token_latency_s"), itl)
		}
		if f("prefill_roofline_s") < max(f("prefill_compute_s"), f("prefill_weights_hbm_s")) {
			t.Errorf("%v: prefill_roofline_s %g below its MXU %g or weights %g", args, f("prefill_roofline_s"), f("prefill_compute_s"), f("prefill_weights_hbm_s"))
		}
	}
}

// TestInferenceSimulationBearsOut: where the plan's own simulation serves
// far less than it says, the plan warns and the exit status is 1, as for
// a missed SLO, in text and JSON. A mix of 5% long outputs (100+4000
// tokens) among short ones at 5/s on v6e-8: the plan admits 99% of
// arrivals at once at its mean, 25 ms to the first token; the
// simulation's long requests hold their slots, a tail of arrivals waits
// (p99 1.7 s) and the mean TTFT is over three times the plan's.
func TestInferenceSimulationBearsOut(t *testing.T) {
	h := filepath.Join(t.TempDir(), "mix.csv")
	if err := os.WriteFile(h, []byte("prompt_len,output_len,weight\n100,4000,0.05\n100,10,0.95\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"inference", "--model", "llama3-8b", "--tpu", "v6e-8", "--request-rate", "5", "--length-mix", h}
	out, errOut, code := runCmd(args...)
	if code != 1 || !strings.Contains(out, "warning: the simulation's mean TTFT is") || !strings.Contains(errOut, "the simulation does not bear the plan out") {
		t.Errorf("exit %d, stderr %q, want 1, a warning in the plan and the error", code, errOut)
	}
	jout, _, code := runCmd(append(args, "--json")...)
	var v struct{ Warnings []string }
	if err := json.Unmarshal([]byte(jout), &v); err != nil || code != 1 || !strings.Contains(strings.Join(v.Warnings, "\n"), "the simulation's mean TTFT") {
		t.Errorf("--json: exit %d, %v, warnings %q; want 1 and the simulation's warning", code, err, v.Warnings)
	}
	// the review's mix at a rate the plan at it keeps up with: exit 0
	if _, errOut, code := runCmd("inference", "--request-rate", "1", "--length-mix", "uniform:2000-4000", "--num-requests", "300"); code != 0 {
		t.Errorf("uniform:2000-4000 at 1/s: exit %d, %s; want 0", code, errOut)
	}
	// at 2/s it is planned at its lengths, which no layout of tpu7x-8 keeps up with
	if _, errOut, code := runCmd("inference", "--request-rate", "2", "--length-mix", "uniform:2000-4000", "--num-requests", "300"); code != 1 ||
		!strings.Contains(errOut, "2 requests/s of uniform 2000-4000 lengths (mean 3000+3000 tokens, up to 8000) saturate tpu7x-8") {
		t.Errorf("uniform:2000-4000 at 2/s: exit %d, %q; want 1, saturated at the mix's lengths", code, errOut)
	}
}
