package export

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"shardlab/plan"
	"shardlab/schedule"
)

// TestMaxTextHeld: the plan an export to MaxText holds is the plan shown
// where MaxText runs it, with no second search; where MaxText refuses it
// (a 1F1B pipeline, maxtext issue 752), the one search over what MaxText
// runs (MaxTextOptions) finds MaxText's best, whose config carries the
// note under its title; where the plan shown is already limited to what
// MaxText runs, its refusal is the answer, with no search.
func TestMaxTextHeld(t *testing.T) {
	for _, c := range []struct {
		name     string
		edit     func(*plan.Options)
		searches int
		held     bool
		err      error
	}{
		{"no pipeline", func(o *plan.Options) { o.Model, o.TPU = "llama3-8b", "v5p-8" }, 0, false, nil},
		{"1f1b shown", func(o *plan.Options) { o.Model, o.TPU, o.GlobalBatch = "llama3-70b", "v5p-32", "2Mitok" }, 1, true, nil},
		{"zero precision, maxtext's", func(o *plan.Options) {
			o.Model, o.TPU, o.Precision, o.Framework = "llama3-8b", "v5p-8", "zero", "maxtext"
		}, 0, true, ErrUnsupported},
	} {
		o := plan.DefaultOptions()
		c.edit(&o)
		p := search(t, func(x *plan.Options) { *x = o })
		var asked []plan.Options
		h, err := MaxTextHeld(o, p, func(mo plan.Options) (plan.Plan, error) {
			asked = append(asked, mo)
			return search(t, func(x *plan.Options) { *x = mo }), nil
		})
		switch {
		case len(asked) != c.searches || (h != nil) != c.held || !errors.Is(err, c.err):
			t.Errorf("%s: %d searches, held %v, error %v; want %d, %v, %v", c.name, len(asked), h != nil, err, c.searches, c.held, c.err)
		case c.searches == 1 && asked[0].Framework != string(plan.FrameworkMaxText):
			t.Errorf("%s: searched framework %q, want maxtext", c.name, asked[0].Framework)
		case h != nil && err == nil:
			heldConfig(t, c.name, h)
		}
	}
}

// heldConfig checks a Held of a 1F1B plan: the plan held is not 1F1B and
// MaxText runs it, and its config is MaxText's of that plan with Note
// under the title.
func heldConfig(t *testing.T, name string, h *Held) {
	t.Helper()
	if k := h.Shown.Best.Estimate.Job.Schedule; k != schedule.OneFOneB || !errors.Is(h.Refused, ErrUnsupported) {
		t.Errorf("%s: shown schedule %s, refused %v; want 1f1b, refused", name, k, h.Refused)
	}
	want, err := MaxText(h.Plan)
	if err != nil {
		t.Fatalf("%s: MaxText refuses the plan held: %v", name, err)
	}
	got, err := h.MaxText()
	if err != nil || len(got.Comments) != len(want.Comments)+1 || got.Comments[1] != h.Note() ||
		!slices.Equal(slices.Delete(slices.Clone(got.Comments), 1, 2), want.Comments) || !slices.Equal(got.Settings, want.Settings) {
		t.Errorf("%s: held config %v, %q; want MaxText's of the plan held with the note %q second", name, err, got.Comments, h.Note())
	}
	var b strings.Builder
	if err := h.XPK(&b, XPKOptions{Cluster: "c", Workload: "w", BaseDockerImage: "img"}); err != nil || !strings.Contains(b.String(), "\n# "+h.Note()+"\n") {
		t.Errorf("%s: xpk %v, its header lacks the note %q:\n%.600s", name, err, h.Note(), b.String())
	}
}
