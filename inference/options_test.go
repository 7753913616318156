package inference

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestParseOptionsDefaults: the default options are DefaultRequest on one
// TPU7x VM with the catalog model's repository for vllm serve.
func TestParseOptionsDefaults(t *testing.T) {
	q, err := ParseOptions(DefaultOptions())
	r, id := q.Request, q.ModelID
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultRequest()
	if r.Concurrency != d.Concurrency || r.PromptLen != d.PromptLen || r.MemoryUtilization != d.MemoryUtilization || r.KVCacheDtype != "auto" {
		t.Errorf("ParseOptions(DefaultOptions()) = %+v, want DefaultRequest's values", r)
	}
	if r.Slice.AcceleratorType() != "tpu7x-8" || r.Model.Name != DefaultModel || id != "meta-llama/Meta-Llama-3-70B" {
		t.Errorf("ParseOptions(DefaultOptions()) = %s %s %q, want tpu7x-8 %s meta-llama/Meta-Llama-3-70B", r.Slice.AcceleratorType(), r.Model.Name, id, DefaultModel)
	}
}

// TestParseOptionsBad: each option at fault is a FieldError naming its
// JSON key (the key a front end flags).
func TestParseOptionsBad(t *testing.T) {
	for _, c := range []struct {
		edit  func(*Options)
		field string
		want  string
	}{
		{func(o *Options) { o.Model = "llama9" }, "model", "catalog model"},
		{func(o *Options) { o.Model, o.ModelSpec = "x.yaml", []byte("layers: [1") }, "model", "spec"},
		{func(o *Options) { o.TPU = "v9-8" }, "tpu", "accelerator type"},
		{func(o *Options) { o.TPU = "v4-8" }, "tpu", "v5e, v6e or tpu7x (the generations tpu-inference recommends) or v5p"},
		{func(o *Options) { o.Concurrency, o.RequestRate = 8, 2 }, "concurrency", "request_rate"},
		{func(o *Options) { o.MaxNumSeqs, o.RequestRate = 8, 2 }, "max_num_seqs", "request_rate"},
		{func(o *Options) { o.Weights = "fp4" }, "weights", "bf16, fp8 or int8"},
		{func(o *Options) { o.KVCacheDtype = "int8" }, "kv_cache_dtype", "fp8"},
		{func(o *Options) { o.Objective = "cost" }, "objective", "throughput or latency"},
		{func(o *Options) { o.PromptLen = -1 }, "prompt_len", "1 to"},
		{func(o *Options) { o.LengthMix, o.PromptLen = "uniform:10-20", 500 }, "prompt_len", "500, want it unset beside length_mix (uniform 10-20)"},
		{func(o *Options) { o.LengthMix, o.OutputLen = "uniform:10-20", 1024 }, "output_len", "1024, want it unset beside length_mix"},
		{func(o *Options) { o.MemoryUtilization = 1.5 }, "gpu_memory_utilization", "(0, 1]"},
		{func(o *Options) { o.TTFTSLO = -time.Second }, "ttft_slo", ""},
		{func(o *Options) { o.Model = "gpt3-175b"; o.MaxModelLen = 2048 }, "hf_model", "Hugging Face"},
		{func(o *Options) { o.LengthMix = "zipf" }, "length_mix", "uniform:A-B"},
		{func(o *Options) { o.MaxModelLen, o.LengthMix = 8192, "uniform:100-5000" }, "length_mix", "at most max_model_len 8192 tokens; it has requests of 10000"},
		{func(o *Options) {
			o.LengthMix, o.Histogram = "h.csv", []byte("prompt_len,output_len,weight\n10,10,x\n")
		}, "length_mix", "line 2"},
		{func(o *Options) { o.NumRequests = 0 }, "num_requests", "1 to"},
		{func(o *Options) { o.Seed = 1 << 63 }, "seed", "0 to 9223372036854775807"},
	} {
		o := DefaultOptions()
		c.edit(&o)
		_, err := ParseOptions(o)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseOptions(%+v) = %v, want a FieldError on %s saying %q", o, err, c.field, c.want)
		}
	}
}

// TestParseOptionsGeneration: a generation alone serves on one VM of it
// (tpu7x-8: 4 chips; v6e-4: 4 chips, a v6e host as package hw holds it,
// what the CLI took before ParseOptions).
func TestParseOptionsGeneration(t *testing.T) {
	for _, c := range []struct{ tpu, want string }{{"tpu7x", "tpu7x-8"}, {"v6e", "v6e-4"}} {
		o := DefaultOptions()
		o.TPU = c.tpu
		q, err := ParseOptions(o)
		r := q.Request
		if err != nil || r.Slice.AcceleratorType() != c.want {
			t.Errorf("ParseOptions(tpu %s) = %s, %v; want %s", c.tpu, r.Slice.AcceleratorType(), err, c.want)
		}
	}
}

// FuzzParseOptions: any model, TPU and dtype text is a request or an
// error, never a panic.
func FuzzParseOptions(f *testing.F) {
	f.Add("llama3-8b", "tpu7x-8", "bf16", "auto", "throughput", "fixed", 1024, 0)
	f.Add("x", "v6e", "int8", "fp8", "latency", "uniform:1-9", 0, 3)
	f.Fuzz(func(t *testing.T, m, tpu, w, kv, obj, mix string, prompt, conc int) {
		o := DefaultOptions()
		o.Model, o.TPU, o.Weights, o.KVCacheDtype, o.Objective, o.LengthMix, o.PromptLen, o.Concurrency = m, tpu, w, kv, obj, mix, prompt, conc
		q, err := ParseOptions(o)
		r, id := q.Request, q.ModelID
		if err == nil && (id == "" || r.Slice.Chips() < 1 || q.Mix.Longest() > r.MaxModelLen) {
			t.Errorf("ParseOptions(%+v) = %+v, %q: a request without chips or model id", o, r, id)
		}
	})
}

// TestSweepConcurrency: each curve's points are Estimate at rising
// concurrency, all held by the pages without preemption, the layout's own
// concurrency among them, and the next power of two past the last no
// longer held; output tokens/s
// never falls as the batch grows (decode reads the weights once a step).
func TestSweepConcurrency(t *testing.T) {
	q, err := ParseOptions(DefaultOptions())
	r := q.Request
	if err != nil {
		t.Fatal(err)
	}
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range SweepConcurrency(r, p.Layouts[:min(3, len(p.Layouts))]) {
		if len(c.Points) < 2 {
			t.Fatalf("TP %d DP %d: %d points, want several", c.TP, c.DP, len(c.Points))
		}
		own := false
		for i, l := range c.Points {
			if !l.Fits || l.Preempts {
				t.Errorf("TP %d DP %d: point %d (concurrency %d): fits %v, preempts %v; want held", c.TP, c.DP, i, l.Concurrency, l.Fits, l.Preempts)
			}
			own = own || l.Concurrency == r.Concurrency
			if i > 0 && (l.Concurrency <= c.Points[i-1].Concurrency || l.TokensPerSecond < c.Points[i-1].TokensPerSecond) {
				t.Errorf("TP %d DP %d: point %d: concurrency %d at %.0f tokens/s after %d at %.0f",
					c.TP, c.DP, i, l.Concurrency, l.TokensPerSecond, c.Points[i-1].Concurrency, c.Points[i-1].TokensPerSecond)
			}
		}
		last := c.Points[len(c.Points)-1].Concurrency
		next := 1
		for next <= last {
			next *= 2
		}
		rr := r
		rr.Concurrency = next
		if l := Estimate(rr, c.TP, c.DP); next <= MaxConcurrency && l.Fits && !l.Preempts {
			t.Errorf("TP %d DP %d: stops at %d, but %d is held", c.TP, c.DP, last, next)
		}
		if l := Estimate(r, c.TP, c.DP); (l.Fits && !l.Preempts) != own {
			t.Errorf("TP %d DP %d: own concurrency %d among the points = %v, want %v (whether it is held)", c.TP, c.DP, r.Concurrency, own, !own)
		}
	}
}

// TestParseTPUGeneration: a generation alone serves on one of its usual
// VMs (hw.Chip.HostSlice): v5e's ct5lp-hightpu-4t, v5litepod-4 (not its
// 1-chip ct5lp-hightpu-1t, whose 16 GiB of HBM hold no 8B model in bf16:
// review 119 #1), v6e's ct6e-standard-4t, TPU7x's and v5p's 4-chip VMs.
func TestParseTPUGeneration(t *testing.T) {
	for _, c := range []struct{ in, want string }{{"v5e", "v5litepod-4"}, {"v6e", "v6e-4"}, {"tpu7x", "tpu7x-8"}, {"v5p", "v5p-8"}} {
		s, err := ParseTPU(c.in)
		if err != nil || s.AcceleratorType() != c.want {
			t.Errorf("ParseTPU(%q) = %s (%v), want %s", c.in, s.AcceleratorType(), err, c.want)
		}
	}
}
