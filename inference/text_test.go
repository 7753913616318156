package inference

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"
)

// goDuration is a duration as time.Duration prints it: digits run into
// their unit ("44.05ms", "9m10.70925s", "1h2m0s").
var goDuration = regexp.MustCompile(`[0-9](ns|µs|us|ms|s|m|h)\b|[0-9][hm][0-9]`)

// reportDuration is a duration as unit.Seconds prints it: a number, a
// space, its unit.
var reportDuration = regexp.MustCompile(`([0-9]+(?:\.[0-9]+)?) (s|ms|µs|ns)\b`)

// TestTextDurations: every duration the plan's and the simulation's text
// print keeps README's rule, three significant digits in s, ms, µs or ns
// (unit.Seconds), never time.Duration's "44.05ms" or "9m10.70925s". The
// plan has SLOs it misses and the latency objective, whose reasons,
// warnings and table name durations; the simulation runs prompts of 8000
// tokens in a budget of 64, whose TTFTs and run last minutes.
func TestTextDurations(t *testing.T) {
	r := request(t)
	r.Objective, r.TTFTSLO, r.ITLSLO = Latency, 40*time.Millisecond, 9*time.Millisecond
	r.PromptLen, r.OutputLen, r.MaxNumBatchedTokens = 8000, 100, 64
	r, p := searched(t, r)
	var b strings.Builder
	if err := p.WriteText(&b, "vllm serve m"); err != nil {
		t.Fatal(err)
	}
	load := Load{Mix: FixedMix(r.PromptLen, r.OutputLen), Concurrency: 64, Requests: 64}
	sim, err := Simulate(r, p.Best, SimOptions{Engine: VLLM, Load: load}, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if sim.Duration < time.Minute {
		t.Fatalf("simulation of %v: want one of minutes, to print durations time.Duration would write in minutes", sim.Duration)
	}
	if err := sim.WriteText(&b, "fixed lengths"); err != nil {
		t.Fatal(err)
	}
	if err := sim.WriteBand(&b, load.Mix); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if m := goDuration.FindAllString(out, -1); len(m) > 0 {
		t.Errorf("text prints durations as time.Duration does: %q\n%s", m, out)
	}
	found := reportDuration.FindAllStringSubmatch(out, -1)
	if len(found) < 20 {
		t.Errorf("text prints %d durations, want the plan's and the simulation's (20 or more)\n%s", len(found), out)
	}
	for _, f := range found {
		digits := strings.TrimLeft(strings.ReplaceAll(f[1], ".", ""), "0")
		if len(digits) > 3 && !(f[2] == "s" && !strings.Contains(f[1], ".") && len(f[1]) >= 4) {
			t.Errorf("duration %q has %d significant digits, want at most 3 (or whole seconds from 1000 s)", f[0], len(digits))
		}
	}
}
