package plan

import "testing"

// TestMaxMicroBatchRunsOnTheChip: where a chip's two devices must split
// its sequences (TPU7x under the pytorch framework, or MaxText's ring rule
// for a model with sliding-window layers), the most sequences a chip fits
// that the plan prints is a count that runs, a multiple of 2, and at least
// the chosen layout's (review 137: "at most 7" where only even counts run).
func TestMaxMicroBatchRunsOnTheChip(t *testing.T) {
	for _, c := range []struct {
		model, tpu string
		framework  Framework
	}{{"gemma2-27b", "tpu7x-8", FrameworkMaxText}, {"llama3-70b", "tpu7x-64", FrameworkPyTorch}, {"llama3-8b", "tpu7x-8", FrameworkPyTorch}} {
		o := DefaultOptions()
		o.Model, o.TPU, o.Framework = c.model, c.tpu, string(c.framework)
		r, err := ParseRequest(o)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Search(r)
		if err != nil {
			t.Fatal(err)
		}
		if mb := p.Best.Estimate.MicroBatchSize; p.MaxMicroBatch%2 != 0 || p.MaxMicroBatch < mb || mb%2 != 0 {
			t.Errorf("%s under %s on %s: %d a chip chosen, at most %d printed, want even counts", c.model, c.framework, c.tpu, mb, p.MaxMicroBatch)
		}
	}
}
