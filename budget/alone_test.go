package budget

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"shardlab/hw"
	"shardlab/plan"
)

// sampleConfigs is n configurations of the whole sweep (wholeRequest)
// drawn with a fixed seed, in the sweep's order.
func sampleConfigs(t *testing.T, r Request, n int, seed uint64) []config {
	t.Helper()
	var all []config
	for _, g := range r.Generations {
		c, err := hw.Lookup(string(g))
		if err != nil {
			t.Fatal(err)
		}
		cfgs, _ := r.configs(c)
		all = append(all, cfgs...)
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	var out []config
	for _, i := range rng.Perm(len(all))[:n] {
		out = append(out, all[i])
	}
	return out
}

// spell is a plan as `shardlab plan` prints it, text then JSON, or its
// error.
func spell(t *testing.T, p *plan.Plan, err error) string {
	t.Helper()
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	if err := p.WriteText(&b, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteJSON(&b, nil); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestPlansAsAlone holds every configuration a sweep plans to the plan a
// search of that configuration alone gives (no shared cache, the
// default workers, a full search), over a sample of the whole sweep: the
// sweep's lean plan (plan.Request.BestOnly) has its Best, Rule and Band,
// the row's FullPlan (what --show prints) is it, text and JSON byte for
// byte, and where nothing runs the errors are, byte for byte.
func TestPlansAsAlone(t *testing.T) {
	r, _ := wholeRequest(t)
	n := 12
	if testing.Short() {
		n = 4
	}
	tasks := sampleConfigs(t, r, n, 31)
	// and two no layout runs, whose errors name the fixes
	for _, name := range []string{"v5p-8", "v6e-16"} {
		s, err := hw.ParseAcceleratorType(name)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := hw.NewMultislice(s, 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, config{ms: ms})
	}
	got := r.planAll(tasks)
	nones := 0
	for i, cf := range tasks {
		pr := r.Plan
		pr.Multislice = cf.ms
		p, err := plan.Search(pr)
		var none *plan.NoPlanError
		if err != nil && !errors.As(err, &none) {
			t.Fatalf("%s: %v", cf.ms, err)
		}
		if none != nil {
			nones++
		}
		if err != nil || got[i].err != nil {
			if g, w := spell(t, got[i].p, got[i].err), spell(t, &p, err); g != w {
				t.Errorf("%s: the sweep's plan differs from a search alone:\n%s\nwant\n%s", cf.ms, g, w)
			}
			continue
		}
		lean := got[i].p
		if !reflect.DeepEqual(lean.Best, p.Best) || !reflect.DeepEqual(lean.Rule, p.Rule) || lean.Band != p.Band {
			t.Errorf("%s: the sweep's best layout is %s, a search alone's %s", cf.ms, lean.Best.Estimate.Mesh, p.Best.Estimate.Mesh)
		}
		full, ferr := Row{Plan: lean}.FullPlan()
		if g, w := spell(t, &full, ferr), spell(t, &p, err); g != w {
			t.Errorf("%s: the row's full plan differs from a search alone:\n%s\nwant\n%s", cf.ms, g, w)
		}
	}
	if nones < 2 {
		t.Errorf("%d configurations ran no layout, want at least 2 (2 × v5p-8, 2 × v6e-16)", nones)
	}
}
