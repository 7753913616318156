package inference

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"shardlab/model"
	"shardlab/unit"
)

// noFitRequest is m on tpu at one sequence of max model len 8192.
func noFitRequest(t *testing.T, name, tpu string) Request {
	t.Helper()
	m, ok := model.Lookup(name)
	if !ok {
		t.Fatalf("%s missing from the catalog", name)
	}
	r, err := NewRequest(Request{Model: m, Slice: slice(t, tpu), MaxModelLen: 8192, Concurrency: 1, PromptLen: 1024, OutputLen: 1024,
		MemoryUtilization: 0.92, MaxNumBatchedTokens: 4096})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestNoFitWeights: when the weights leave no room, the error names them,
// their size a device at the widest tensor parallelism and the HBM a
// device may hold, and suggests only what does fit. By hand: Llama 3 405B
// on tpu7x-8 splits at most 8 ways, its 8 devices; its ~405e9 bf16
// parameters are ~756 GiB, ~94.5 GiB a device at TP 8, above 94.74 GiB ×
// 0.92 = 87.2 GiB. In fp8 half of it fits, and so does TP 16 on tpu7x-16
// (its 8 KV heads replicated ×2 [ti-shard]), about 47.7 GiB a device. Llama 3 8B in bf16 (~15
// GiB) does not fit one v5e chip (15.x GiB × 0.92) but fits fp8, or TP 4
// on v5litepod-4.
func TestNoFitWeights(t *testing.T) {
	for _, c := range []struct {
		model, tpu string
		tp         int
		want, not  []string
		fits       []string // field=value of each Fit
	}{
		{"llama3-405b", "tpu7x-8", 8, []string{"weights bf16", "weights fp8", "tpu7x-16 (TP 16 × DP 1)"}, []string{"concurrent sequences"}, []string{"weights=fp8", "weights=int8", "tpu=tpu7x-16"}},
		{"llama3-8b", "v5litepod-1", 1, []string{"weights bf16", "weights fp8", "v5litepod-4"}, []string{"concurrent sequences"}, []string{"weights=fp8", "weights=int8", "tpu=v5litepod-4"}},
	} {
		r := noFitRequest(t, c.model, c.tpu)
		_, err := Search(r)
		if !errors.Is(err, ErrNoFit) {
			t.Fatalf("%s on %s: %v, want ErrNoFit", c.model, c.tpu, err)
		}
		l := Estimate(r, c.tp, 1)
		want := append([]string{l.Memory.Weights.String(), l.Memory.Budget.String(), WeightBytes(r.Model, 1, BF16).String()}, c.want...)
		for _, s := range want {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s on %s: %q does not say %q", c.model, c.tpu, err, s)
			}
		}
		for _, s := range c.not {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s on %s: %q says %q", c.model, c.tpu, err, s)
			}
		}
		// what it suggests fits, as a Fit a front end can spell
		checkFits(t, err, c.model+" on "+c.tpu, r, c.fits)
		if l.Memory.Weights < l.Memory.Budget-l.Memory.Activations || l.Memory.Weights < unit.GiB {
			t.Errorf("%s on %s: weights %v a device within %v: not a weights case", c.model, c.tpu, l.Memory.Weights, l.Memory.Budget)
		}
	}
}

// TestNoFitFixedTP: a tensor-parallel size the request fixes is named as
// given, not as the widest split, and the fix is the least wider size
// that fits. By hand: Llama 3 70B's 70.55e9 bf16 parameters are 131 GiB
// at TP 1, above 94.74 GiB × 0.92 = 87.2 GiB a device on tpu7x-8; at TP 2
// 65.7 GiB, which fits (TP 8 is the widest on the VM's 8 devices). A
// larger slice is no fix at a fixed TP (each device holds as much).
func TestNoFitFixedTP(t *testing.T) {
	r := noFitRequest(t, "llama3-70b", "tpu7x-8")
	r.TP = 1
	_, err := Search(r)
	if !errors.Is(err, ErrNoFit) {
		t.Fatalf("TP 1: %v, want ErrNoFit", err)
	}
	for _, s := range []string{"at TP 1, the tensor_parallel_size given (the widest on tpu7x-8 is 8)", "131 GiB"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("TP 1: %q does not say %q", err, s)
		}
	}
	if strings.Contains(err.Error(), "widest split") {
		t.Errorf("TP 1: %q calls the size given the widest split", err)
	}
	checkFits(t, err, "llama3-70b TP 1 on tpu7x-8", r, []string{"tensor_parallel_size=2", "weights=fp8", "weights=int8"})
}

// TestLayoutsNotApplicable: a layout that does not fit prints no TTFT,
// ITL or tokens/s in the table, numbers that cannot happen.
func TestLayoutsNotApplicable(t *testing.T) {
	r := request(t)
	r.MemoryUtilization = 0.92
	_, p := searched(t, r)
	var b strings.Builder
	if err := p.WriteText(&b, "vllm serve m"); err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, line := range strings.Split(b.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || f[4] != "false" {
			continue
		}
		seen = true
		if got := strings.Join(f[6:], " "); got != "n/a n/a n/a" {
			t.Errorf("row %q: TTFT, ITL and tok/s/chip %q, want n/a n/a n/a", line, got)
		}
	}
	if !seen {
		t.Errorf("no layout that does not fit in\n%s", b.String())
	}
}

// TestNoFitPages: when every layout has HBM left for the KV cache but not
// for one sequence's pages of max_model_len tokens, the error says so (the
// pages one sequence needs and what is left, on the layout with the most
// room for them) instead of "1 concurrent sequences ... (at most 0 do)",
// and names the longest max_model_len that does fit, checked by costing:
// it fits and one token more does not. Gemma 4 31B on v6e-4 at its whole
// 262,144-token context: ~57 GiB of bf16 weights leave each of the four
// chips a few GiB, short of one sequence's 262,144 tokens.
func TestNoFitPages(t *testing.T) {
	r := noFitRequest(t, "gemma4-31b", "v6e-4")
	r.MaxModelLen = 262144
	_, err := Search(r)
	var ne *NoFitError
	if !errors.Is(err, ErrNoFit) || !errors.As(err, &ne) {
		t.Fatalf("gemma4-31b on v6e-4 at 262144 tokens: %v, want a *NoFitError (ErrNoFit)", err)
	}
	// the layout with the most room for one sequence's pages, by hand
	var best Layout
	var need, left unit.Bytes
	for _, l := range costed(r) {
		m := l.Memory
		if m.MaxSeqs > 0 {
			t.Fatalf("TP %d × DP %d holds %d sequences: not a no-fit case", l.TP, l.DP, m.MaxSeqs)
		}
		n := unit.Bytes((r.MaxModelLen+m.BlockSize-1)/m.BlockSize*m.BlockSize) * m.KVPerToken
		if best.TP == 0 || float64(m.KVCache)/float64(n) > float64(left)/float64(need) {
			best, need, left = l, n, m.KVCache
		}
	}
	if left == 0 {
		t.Fatal("no layout has HBM left for the KV cache: a weights case, not a pages case")
	}
	msg := err.Error()
	for _, s := range []string{"one sequence's KV pages", "max_model_len 262144", need.String(), left.String(), "max_model_len "} {
		if !strings.Contains(msg, s) {
			t.Errorf("%q does not say %q", msg, s)
		}
	}
	for _, s := range []string{"concurrent sequences", "at most 0", "--"} {
		if strings.Contains(msg, s) {
			t.Errorf("%q says %q", msg, s)
		}
	}
	if len(ne.Fits) != 1 || ne.Fits[0].Field != "max_model_len" {
		t.Fatalf("fits %+v, want one: max_model_len", ne.Fits)
	}
	n, err := strconv.Atoi(ne.Fits[0].Value)
	if err != nil || n >= r.MaxModelLen {
		t.Fatalf("suggested max_model_len %q, want a whole number below %d", ne.Fits[0].Value, r.MaxModelLen)
	}
	q := r
	q.MaxModelLen = n
	if p, err := Search(q); err != nil || p.Best.TP != ne.Fits[0].TP || p.Best.DP != ne.Fits[0].DP {
		t.Errorf("max_model_len %d: %v (TP %d × DP %d), the error says it fits with TP %d × DP %d", n, err, p.Best.TP, p.Best.DP, ne.Fits[0].TP, ne.Fits[0].DP)
	}
	q.MaxModelLen = n + 1
	if _, err := Search(q); !errors.Is(err, ErrNoFit) {
		t.Errorf("max_model_len %d: %v, want no fit (%d is the longest that fits)", n+1, err, n)
	}
	if want := "max_model_len " + ne.Fits[0].Value; !strings.Contains(msg, want) {
		t.Errorf("%q does not suggest %q", msg, want)
	}
	// a front end spells the field its own way
	if got := ne.Phrase(func(f string) string { return "--" + strings.ReplaceAll(f, "_", "-") }); !strings.Contains(got, "--max-model-len "+ne.Fits[0].Value) {
		t.Errorf("Phrase with flags = %q, want --max-model-len %s", got, ne.Fits[0].Value)
	}
}

// checkFits: a weights error carries its fixes as Fits (field=value
// each, in order), each of which fits with the layout it names, and
// Phrase spells every field it names, in the reason and in the fixes.
func checkFits(t *testing.T, err error, what string, r Request, want []string) {
	t.Helper()
	var ne *NoFitError
	if !errors.As(err, &ne) {
		t.Fatalf("%s: %v, want a *NoFitError", what, err)
	}
	var got []string
	for _, f := range ne.Fits {
		got = append(got, f.Field+"="+f.Value)
		q := r
		switch f.Field {
		case "weights":
			q.Weights = Dtype(f.Value)
		case "tensor_parallel_size":
			q.TP, _ = strconv.Atoi(f.Value)
		case "tpu":
			s, err := ParseTPU(f.Value)
			if err != nil {
				t.Fatal(err)
			}
			q.Slice = s
		}
		if p, err := Search(q); err != nil || p.Best.TP != f.TP || p.Best.DP != f.DP {
			t.Errorf("%s with %s %s: %v (TP %d × DP %d), the error says it fits with TP %d × DP %d", what, f.Field, f.Value, err, p.Best.TP, p.Best.DP, f.TP, f.DP)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s: fits %v, want %v", what, got, want)
	}
	flags := ne.Phrase(func(f string) string { return "--" + strings.ReplaceAll(f, "_", "-") })
	for _, s := range []string{"--weights " + string(r.Weights) + ":", "--gpu-memory-utilization 0.92", "--weights fp8 (TP"} {
		if !strings.Contains(flags, s) {
			t.Errorf("%s: Phrase with flags = %q, want %q", what, flags, s)
		}
	}
	if strings.Contains(flags, "{") || strings.Contains(ne.Error(), "{") {
		t.Errorf("%s: a field mark left in %q", what, flags)
	}
}

// TestSaturatedRateFits: a request rate no layout keeps up with names
// what would serve it, each checked here by planning again: the highest
// rate the slice keeps up with (to three figures, rounded down; 2 %
// above it saturates the slice again, so it is the edge, not a guess)
// and a larger slice of the generation. The review's case: 2 requests/s
// of uniform 2000-4000 tokens saturate tpu7x-8, and the error named no
// fix.
func TestSaturatedRateFits(t *testing.T) {
	o := DefaultOptions()
	o.RequestRate, o.LengthMix, o.MaxModelLen = 2, "uniform:2000-4000", 8192
	q, err := ParseOptions(o)
	if err != nil {
		t.Fatal(err)
	}
	r := q.Request
	_, err = Search(r)
	var ne *NoFitError
	if !errors.As(err, &ne) || len(ne.Fits) != 2 || ne.Fits[0].Field != "request_rate" || ne.Fits[1].Field != "tpu" {
		t.Fatalf("Search at 2/s: %v, want no fit with a rate and a slice that serve it", err)
	}
	rate, err := strconv.ParseFloat(ne.Fits[0].Value, 64)
	if err != nil || rate >= r.RequestRate || rate <= 0 {
		t.Fatalf("the rate fix %q, want a rate below %g", ne.Fits[0].Value, r.RequestRate)
	}
	at := func(rate float64, tpu string) error {
		q := r
		q.RequestRate, q.Slice = rate, slice(t, tpu)
		_, err := Search(q)
		return err
	}
	if err := at(rate, "tpu7x-8"); err != nil {
		t.Errorf("at the fix's %g requests/s: %v", rate, err)
	}
	if err := at(1.02*rate, "tpu7x-8"); !errors.Is(err, ErrNoFit) {
		t.Errorf("at %g requests/s, 2 %% above the fix: %v, want it saturated (the fix is the edge)", 1.02*rate, err)
	}
	if err := at(r.RequestRate, ne.Fits[1].Value); err != nil {
		t.Errorf("on the fix's %s: %v", ne.Fits[1].Value, err)
	}
}
