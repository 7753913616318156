package export

import (
	"strings"
	"testing"

	"shardlab/plan"
)

// TestPlanWarnsOfWhatTheExportHolds: review 140's finding 2, held against
// the export's own answer. Where plan, over every framework, chooses a
// layout MaxText's ring refuses, its warning names the layout and MFU
// that MaxTextHeld, which reads MaxText's refusal from the config it
// would write (MaxText), holds in its place; where MaxTextHeld holds
// the plan's own (Llama 3 8B on v5p-8), plan does not warn.
func TestPlanWarnsOfWhatTheExportHolds(t *testing.T) {
	for _, c := range []struct{ model, tpu string }{{"llama3-405b", "v5e"}, {"gemma2-27b", "tpu7x-8"}, {"llama3-8b", "v5p-8"}} {
		name := c.model + " on " + c.tpu
		o := plan.DefaultOptions()
		o.Model, o.TPU = c.model, c.tpu
		p := search(t, func(x *plan.Options) { *x = o })
		h, err := MaxTextHeld(o, p, func(mo plan.Options) (plan.Plan, error) { return search(t, func(x *plan.Options) { *x = mo }), nil })
		if err != nil {
			t.Fatalf("%s: MaxTextHeld: %v", name, err)
		}
		var warned []string
		for _, w := range p.JSON(nil).Warnings {
			if strings.Contains(w, "MaxText cannot run this layout") {
				warned = append(warned, w)
			}
		}
		if h == nil {
			if len(warned) != 0 {
				t.Errorf("%s: the export holds the plan's own layout, but plan warns %q", name, warned)
			}
			continue
		}
		e := h.Plan.Best.Estimate
		spec := e.Mesh.String()
		if d, err := h.Plan.Devices(); err == nil && d.Devices != d.Chips {
			spec = d.String() + " in JAX devices"
		}
		if len(warned) != 1 || !strings.Contains(warned[0], "is "+spec+", batch ") || !strings.Contains(warned[0], "(MFU "+e.MFUPeaks()+", step ") {
			t.Errorf("%s: plan warns %q; want the layout the export holds, %s, MFU %s (%s)", name, warned, spec, e.MFUPeaks(), h.Note())
		}
	}
}
