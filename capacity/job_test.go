package capacity

import (
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
}
