package capacity

import (
	"math"
	"testing"

	"shardlab/plan"
)

// TestJobOf: a checkpoint of llama3-8b at MaxText's default precision (fp32
// weights, fp32 Adam moments: 4 + 8 bytes per parameter; gradients are not
// saved) holds 12 bytes per parameter; the throughput is the plan's per-chip
// rate times its chips.
func TestJobOf(t *testing.T) {
	o := plan.DefaultOptions()
	o.Model, o.TPU, o.Top = "llama3-8b", "tpu7x-8", 1
	req, err := plan.ParseRequest(o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Search(req)
	if err != nil {
		t.Fatal(err)
	}
	j := JobOf(p)
	params := p.Best.Estimate.Job.Model.ParamCount().Total()
	if want := 12 * params; int64(j.Checkpoint) != want {
		t.Errorf("checkpoint %d bytes, want 12 x %d = %d", int64(j.Checkpoint), params, want)
	}
	if want := p.Best.Estimate.TokensPerSecondPerChip * 4; j.TokensPerSecond != want {
		t.Errorf("tokens/s %g, want 4 chips x %g", j.TokensPerSecond, p.Best.Estimate.TokensPerSecondPerChip)
	}
	if e := p.Best.Estimate.Job; j.BatchTokens != float64(e.GlobalBatch*e.Seq) {
		t.Errorf("batch %g tokens, want %d sequences x %d tokens", j.BatchTokens, e.GlobalBatch, e.Seq)
	}
}

// TestJobSteps: a job trains whole steps, the last partial batch a whole
// one (defects100 #11: capacity and plan --goodput timed 1 token as 1 ÷
// tokens/s, 0 s, where budget timed one step). Worked by hand for a step
// of 4096 tokens at 1000 tokens/s, 4.096 s, at goodput 1/2.
func TestJobSteps(t *testing.T) {
	j := Job{TokensPerSecond: 1000, BatchTokens: 4096}
	for _, tc := range []struct {
		tokens, steps, seconds float64
	}{
		{0, 0, 0},
		{1, 1, 8.192},     // one step, 4.096 s, over half the time
		{4096, 1, 8.192},  // one full batch
		{4097, 2, 16.384}, // a full batch and one token
		{1e6, 245, 2007.04},
	} {
		if got := j.Steps(tc.tokens); got != tc.steps {
			t.Errorf("Steps(%g) = %g, want %g", tc.tokens, got, tc.steps)
		}
		if got := float64(j.TimeToTrain(tc.tokens, 0.5)); math.Abs(got-tc.seconds) > 1e-9 {
			t.Errorf("TimeToTrain(%g, 0.5) = %v s, want %v s", tc.tokens, got, tc.seconds)
		}
		e := Expect(j, 8, 2, tc.tokens)
		if want := tc.steps * 4.096 / e.Goodput; math.Abs(float64(e.TimeToTrain)-want) > 1e-9 || e.Tokens != tc.tokens {
			t.Errorf("Expect(%g tokens): %v s for %g tokens, want %g steps of 4.096 s / goodput %v = %v s", tc.tokens, e.TimeToTrain, e.Tokens, tc.steps, e.Goodput, want)
		}
	}
	// with no batch the tokens are timed as they are
	if got := (Job{TokensPerSecond: 1000}).TimeToTrain(1, 0.5); float64(got) != 0.002 {
		t.Errorf("no batch: TimeToTrain(1, 0.5) = %v s, want 1 / (1000 x 0.5) = 0.002 s", got)
	}
}
