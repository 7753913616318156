package plan

import (
	"strings"
	"testing"
)

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

// TestPyTorchRepeatsKV: a request for the pytorch framework costs the
// keys and values its attention repeats to the query's heads
// (cost.Settings.RepeatKV; export's xla_flash_attention and Hugging
// Face's eager attention both repeat them), whichever precision and
// attention it runs; one for MaxText, or for any framework, does not
// (MaxText's kernels read the KV heads as they are). The plan's framework
// note says so for a grouped-query model: Llama 3 8B, 8 KV heads to 32.
func TestPyTorchRepeatsKV(t *testing.T) {
	for _, c := range []struct {
		framework, precision, attention string
		want                            bool
	}{
		{string(FrameworkPyTorch), "", "", true},
		{string(FrameworkPyTorch), "bf16", "dot_product", true},
		{string(FrameworkMaxText), "", "", false},
		{"", "bf16", "", false},
	} {
		o := DefaultOptions()
		o.Model, o.TPU, o.Framework, o.Mesh = "llama3-8b", "v5p-8", c.framework, "fsdp=4"
		if c.precision != "" {
			o.Precision = c.precision
		}
		if c.attention != "" {
			o.Attention = c.attention
		}
		r, err := ParseRequest(o)
		if err != nil {
			t.Fatal(err)
		}
		if r.RepeatKV != c.want {
			t.Errorf("framework %q, precision %q, attention %q: RepeatKV %v, want %v", c.framework, c.precision, c.attention, r.RepeatKV, c.want)
		}
		if c.framework != string(FrameworkPyTorch) {
			continue
		}
		p, err := Search(r)
		if err != nil {
			t.Fatal(err)
		}
		if n := findNote(p.Reasons, "its attention repeats the 8 key and value heads to the query's 32"); n == "" || !p.Best.Estimate.Job.RepeatKV {
			t.Errorf("framework pytorch: the plan's job repeats K and V %v, its reasons %v; want them costed and said", p.Best.Estimate.Job.RepeatKV, p.Reasons)
		}
	}
}

// findNote is the first of notes whose text holds s, "" for none.
func findNote(notes []Note, s string) string {
	for _, n := range notes {
		if strings.Contains(n.Text, s) {
			return n.Text
		}
	}
	return ""
}
