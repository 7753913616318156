package export

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"

	"shardlab/hw"
	"shardlab/inference"
	"shardlab/model"
)

// TestServingNoFitIsNull checks that a layout whose load does not fit its
// pages has null TTFT, ITL and tokens/s in JSON (it cannot run at the
// load, so those numbers cannot happen; the text and the web page print
// n/a), and that a layout that fits carries the numbers it was costed at.
// llama3-70b on tpu7x-8 at 64 sequences: TP 1 × DP 8 holds all the
// weights in one device and does not fit (README's inference example).
func TestServingNoFitIsNull(t *testing.T) {
	p := servingPlan(t, "llama3-70b", "tpu7x-8", inference.Request{
		MaxModelLen: 8192, Concurrency: 64, PromptLen: 1024, OutputLen: 1024,
		MemoryUtilization: 0.9, MaxNumBatchedTokens: 4096,
	})
	b, err := json.Marshal(Serving(p, []string{"vllm", "serve"}))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Layouts []map[string]any `json:"layouts"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	keys := []string{"ttft_s", "inter_token_latency_s", "output_tokens_per_s", "output_tokens_per_s_per_chip"}
	fit, nofit := 0, 0
	for i, l := range got.Layouts {
		want := []float64{p.Layouts[i].TTFT.Seconds(), p.Layouts[i].ITL.Seconds(), p.Layouts[i].TokensPerSecond, p.Layouts[i].PerChip}
		for k, key := range keys {
			v, ok := l[key]
			switch {
			case !ok:
				t.Errorf("layout %d (fits %v): no %s, want the key (null when it does not fit)", i, l["fits"], key)
			case l["fits"] == false && v != nil:
				t.Errorf("layout %d (TP %v, does not fit): %s = %v, want null", i, l["tensor_parallel_size"], key, v)
			case l["fits"] == true && v != want[k]:
				t.Errorf("layout %d (TP %v, fits): %s = %v, want %v", i, l["tensor_parallel_size"], key, v, want[k])
			}
		}
		if l["fits"] == true {
			fit++
		} else {
			nofit++
		}
	}
	if fit == 0 || nofit == 0 {
		t.Errorf("%d layouts fit and %d do not, want some of each to test", fit, nofit)
	}
}

// TestServingAtRateCap: at 2 requests/s of 1024+1024 tokens, the plan's
// vllm serve line sizes --max-num-seqs for Poisson arrivals, not for
// their mean: the least c with P(N ≤ c−1) ≥ 0.99 for N Poisson with the
// mean the JSON reports (M/G/∞), computed here by the recurrence
// P(N = k+1) = P(N = k)·mean/(k+1) from e^−mean, and the JSON's
// full_on_arrival_fraction is P(N ≥ c).
func TestServingAtRateCap(t *testing.T) {
	p := servingPlan(t, "llama3-70b", "tpu7x-8", inference.Request{
		MaxModelLen: 8192, RequestRate: 2, PromptLen: 1024, OutputLen: 1024,
		MemoryUtilization: 0.92, MaxNumBatchedTokens: 4096,
	})
	cmd := VLLMServe(p, "meta-llama/Meta-Llama-3-70B")
	got := -1
	for i, a := range cmd[:len(cmd)-1] {
		if a == "--max-num-seqs" {
			got, _ = strconv.Atoi(cmd[i+1])
		}
	}
	j := Serving(p, cmd)
	if j.Layout.MeanSeqs == nil || j.Layout.FullOnArrival == nil {
		t.Fatalf("at 2 requests/s the layout has no mean_sequences_per_replica or full_on_arrival_fraction")
	}
	mean := *j.Layout.MeanSeqs
	c, term, cdf := 0, math.Exp(-mean), 0.0 // cdf: P(N ≤ c−1)
	for cdf < 0.99 {
		cdf += term
		c++
		term *= mean / float64(c)
	}
	if got != c || got <= j.Concurrency {
		t.Errorf("--max-num-seqs %d at 2 requests/s (mean %.2f, concurrency %d), want the 99%% cap %d, above the mean", got, mean, j.Concurrency, c)
	}
	if full := *j.Layout.FullOnArrival; math.Abs(full-(1-cdf)) > 1e-12 {
		t.Errorf("full_on_arrival_fraction %g, want P(N ≥ %d) = %g", full, c, 1-cdf)
	}
	// Little's law with the JSON's own mean step and TTFT at the load:
	// 2/s × (TTFT + 1024 × step)
	if j.Layout.MeanStep == nil || j.Layout.TTFTUnderLoad == nil {
		t.Fatalf("at 2 requests/s the layout has no mean_step_s or ttft_under_load_s")
	}
	ttft := j.Layout.TTFTUnderLoad.Mean
	if want := 2 * (ttft + 1024**j.Layout.MeanStep); math.Abs(mean-want) > 1e-6*want {
		t.Errorf("mean_sequences_per_replica %g, want 2/s × (ttft_under_load_s.mean %g + 1024 × mean_step_s %g) = %g", mean, ttft, *j.Layout.MeanStep, want)
	}
	if ttft <= *j.Layout.TTFT {
		t.Errorf("ttft_under_load_s.mean %g, want above the idle replica's ttft_s %g", ttft, *j.Layout.TTFT)
	}
	if j.Layout.SeqsPerReplica != got {
		t.Errorf("sequences_per_replica %d, want the --max-num-seqs %d", j.Layout.SeqsPerReplica, got)
	}
}

// TestServingPreempts: a layout whose pages do not hold its sequences at
// their full length says so in JSON (preempts), as the plan's warning
// does; one that holds them leaves the key out. The tpu-recipes v6e-8
// Llama 3.3 70B server (256 sequences, 2048 tokens) preempts at TP 8.
func TestServingPreempts(t *testing.T) {
	p := servingPlan(t, "llama3-70b", "v6e-8", inference.Request{
		MaxModelLen: 2048, MaxNumSeqs: 256, PromptLen: 1000, OutputLen: 1000,
		MemoryUtilization: 0.98, MaxNumBatchedTokens: 512,
	})
	out := Serving(p, []string{"vllm", "serve"})
	preempts := 0
	for i, l := range out.Layouts {
		if l.Preempts != p.Layouts[i].Preempts {
			t.Errorf("layout %d: preempts %v, the plan's %v", i, l.Preempts, p.Layouts[i].Preempts)
		}
		if l.Preempts {
			preempts++
		}
	}
	if preempts == 0 || !p.Best.Preempts {
		t.Errorf("%d layouts preempt, best preempts %v: want the recipe's to", preempts, p.Best.Preempts)
	}
}

// servingPlan is inference's plan of r (its Model and Slice set from
// modelName and tpu), checked by NewRequest.
func servingPlan(t *testing.T, modelName, tpu string, r inference.Request) inference.Plan {
	t.Helper()
	r.Model, _ = model.Lookup(modelName)
	s, err := hw.ParseAcceleratorType(tpu)
	if err != nil {
		t.Fatal(err)
	}
	r.Slice = s
	if r, err = inference.NewRequest(r); err != nil {
		t.Fatal(err)
	}
	p, err := inference.Search(r)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServingCheckpoint: the JSON states the checkpoint format the plan
// assumed and whether the caller stated it. llama3-70b's catalog format
// is bf16 (its repository's config.json torch_dtype), taken unless
// stated; a stated fp8 checkpoint is served in fp8 (weights default to
// the checkpoint's) and says it was given.
func TestServingCheckpoint(t *testing.T) {
	base := inference.Request{MaxModelLen: 8192, Concurrency: 16, PromptLen: 1024, OutputLen: 1024, MemoryUtilization: 0.9, MaxNumBatchedTokens: 4096}
	stated := base
	stated.Checkpoint, stated.CheckpointGiven = inference.FP8, true
	for _, c := range []struct {
		r                   inference.Request
		checkpoint, weights string
		given               bool
	}{{base, "bf16", "bf16", false}, {stated, "fp8", "fp8", true}} {
		j := Serving(servingPlan(t, "llama3-70b", "tpu7x-8", c.r), nil)
		if j.Checkpoint != c.checkpoint || j.CheckpointGiven != c.given || j.Weights != c.weights {
			t.Errorf("checkpoint %q given %v: JSON checkpoint_dtype %q given %v weights_dtype %q, want %q %v %q",
				c.r.Checkpoint, c.r.CheckpointGiven, j.Checkpoint, j.CheckpointGiven, j.Weights, c.checkpoint, c.given, c.weights)
		}
	}
}
