package plan

import (
	"fmt"
	"strings"
	"testing"

	"shardlab/unit"
)

// ringWarnings are p's warnings that say MaxText cannot run its layout.
func ringWarnings(p Plan) []string {
	var out []string
	for _, w := range phrases(p.Warnings, nil) {
		if strings.Contains(w, "so MaxText cannot run this layout") {
			out = append(out, w)
		}
	}
	return out
}

// TestRingWarningNamesMaxTextsBest is review 140's finding 2: over every
// framework (the default) plan chose layouts MaxText's ring attention
// refuses and said nothing. Llama 3 405B on v5e (2 × v5litepod-256):
// tensor 16 under a context axis, with 8 K/V heads; Gemma 2 27B on
// tpu7x-8: a context of 2 JAX devices for a model with sliding-window
// layers. Each plan now warns (text and JSON), naming the ring's refusal
// and the best of the same request under the MaxText framework, searched
// here on its own, with its MFU against the plan's. A plan MaxText runs
// (Llama 3 8B on v5p-8) and a plan under the MaxText framework do not
// warn; a fixed layout MaxText refuses says to give another.
func TestRingWarningNamesMaxTextsBest(t *testing.T) {
	for _, c := range []struct{ model, tpu, refuses string }{
		{"llama3-405b", "v5e", "its ring refuses ici_tensor_parallelism 16 (it needs it to divide the 8 key/value heads)"},
		{"gemma2-27b", "tpu7x-8", "its ring refuses decoder_block gemma2"},
	} {
		p := searchOptions(t, func(o *Options) { o.Model, o.TPU = c.model, c.tpu })
		mt := searchOptions(t, func(o *Options) { o.Model, o.TPU, o.Framework = c.model, c.tpu, "maxtext" })
		e := mt.Best.Estimate
		spec := e.Mesh.String()
		if d, err := mt.Devices(); err == nil && d.Devices != d.Chips {
			spec = d.String() + " in JAX devices"
		}
		if spec == p.Best.Estimate.Mesh.String() && e.Job.GlobalBatch == p.Best.Estimate.Job.GlobalBatch {
			t.Fatalf("%s on %s: MaxText's best is the plan's own, %s: the case no longer exercises the rule", c.model, c.tpu, spec)
		}
		want := fmt.Sprintf("so MaxText cannot run this layout; its best, planned with framework maxtext, is %s, batch %d (MFU %s, step %v, against %.1f%%)",
			spec, e.Job.GlobalBatch, e.MFUPeaks(), unit.Seconds(e.Time.Step.Seconds()), 100*p.Best.Estimate.MFU)
		w := ringWarnings(p)
		if len(w) != 1 || !strings.Contains(w[0], c.refuses) || !strings.Contains(w[0], want) {
			t.Errorf("%s on %s: ring warnings %q, want one saying %q and %q", c.model, c.tpu, w, c.refuses, want)
		}
		if !strings.Contains(strings.Join(p.JSON(nil).Warnings, "\n"), want) {
			t.Errorf("%s on %s: JSON warnings do not say %q", c.model, c.tpu, want)
		}
		if w := ringWarnings(mt); len(w) != 0 {
			t.Errorf("%s on %s, framework maxtext: %q, want no ring warning", c.model, c.tpu, w)
		}
	}
	if w := ringWarnings(searchOptions(t, func(o *Options) { o.TPU = "v5p-8" })); len(w) != 0 {
		t.Errorf("llama3-8b on v5p-8: %q, want no ring warning", w)
	}
	fixed := searchOptions(t, func(o *Options) {
		o.Model, o.TPU, o.Slices, o.Mesh = "llama3-405b", "v5litepod-256", 2, "fsdp=2(dcn),tensor=16,context=16"
	})
	if w := ringWarnings(fixed); len(w) != 1 || !strings.Contains(w[0], "give mesh another layout") {
		t.Errorf("fixed layout: %q, want one warning saying to give another layout", w)
	}
}
