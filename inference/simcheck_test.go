package inference

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSimMisses: a plan whose requests are not its simulation's is
// caught. The review's case: 2 requests/s planned at 1024+1024 tokens
// (what --length-mix reached before: only the simulation) while the
// simulation drew uniform:2000-4000, whose queue grew without bound
// (TTFT mean 72.9 s, 2413 of some 6000 output tokens/s offered): both
// the throughput and the TTFT are flagged. The same mix planned at it,
// at 1/s, which tpu7x-8 keeps up with, is borne out by its simulation.
func TestSimMisses(t *testing.T) {
	mix, err := ParseLengthMix("uniform:2000-4000")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rate   float64
		plan   LengthMix // the zero mix: fixed 1024+1024
		misses []string
	}{
		{2, LengthMix{}, []string{"the simulation serves", "mean TTFT"}},
		{1, mix, nil},
	} {
		o := DefaultOptions()
		o.RequestRate, o.MaxModelLen = c.rate, 8192
		q, err := ParseOptions(o)
		if err != nil {
			t.Fatal(err)
		}
		r := q.Request
		if r.Mix = c.plan; !c.plan.zero() {
			r.PromptLen, r.OutputLen = 0, 0 // the mix's mean request
			if r, err = NewRequest(r); err != nil {
				t.Fatal(err)
			}
		}
		p, err := Search(r)
		if err != nil {
			t.Fatalf("%g/s planned at %s: %v", c.rate, r.Lengths(), err)
		}
		load := Load{Mix: mix, RequestRate: c.rate, Requests: 300}
		sim, err := Simulate(r, p.Best, SimOptions{Engine: VLLM, Load: load}, rand.New(rand.NewPCG(1, 0)))
		if err != nil {
			t.Fatal(err)
		}
		got := p.SimMisses(sim)
		if len(got) != len(c.misses) {
			t.Fatalf("%g/s planned at %s: misses %q, want %d (%q); simulated %.0f tokens/s, TTFT mean %v", c.rate, r.Lengths(), got, len(c.misses), c.misses, sim.TokensPerSecond, sim.TTFT.Mean)
		}
		for i, s := range c.misses {
			if !strings.Contains(got[i], s) {
				t.Errorf("%g/s: miss %q does not say %q", c.rate, got[i], s)
			}
		}
	}
}
