package inference

import (
	"errors"
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
// has 8 KV heads, so TP stops at 8 devices, the 4 chips of tpu7x-8; its
// ~405e9 bf16 parameters are ~756 GiB, ~94.5 GiB a device at TP 8, above
// 94.74 GiB × 0.92 = 87.2 GiB. In fp8 half of it fits; a larger slice only
// adds replicas of TP 8, so none is suggested. Llama 3 8B in bf16 (~15
// GiB) does not fit one v5e chip (15.x GiB × 0.92) but fits fp8, or TP 4
// on v5litepod-4.
func TestNoFitWeights(t *testing.T) {
	for _, c := range []struct {
		model, tpu string
		tp         int
		want, not  []string
	}{
		{"llama3-405b", "tpu7x-8", 8, []string{"weights bf16", "weights fp8"}, []string{"tpu7x-16", "concurrent sequences"}},
		{"llama3-8b", "v5litepod-1", 1, []string{"weights bf16", "weights fp8", "v5litepod-4"}, []string{"concurrent sequences"}},
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
		// what it suggests fits
		f := r
		f.Weights = FP8
		if _, err := Search(f); err != nil {
			t.Errorf("%s on %s in fp8: %v, the error suggests it fits", c.model, c.tpu, err)
		}
		if l.Memory.Weights < l.Memory.Budget-l.Memory.Activations || l.Memory.Weights < unit.GiB {
			t.Errorf("%s on %s: weights %v a device within %v: not a weights case", c.model, c.tpu, l.Memory.Weights, l.Memory.Budget)
		}
	}
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
