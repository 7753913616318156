package plan

import (
	"fmt"
	"strings"
	"testing"

	"shardlab/maxtext"
)

// TestInChipDP: review 163 #2. On TPU7x (two JAX devices a chip) the
// layout the rules call pure DP is what export writes, data=4,fsdp=2 in
// devices (MaxText's in-chip rule, maxtext.InChipAxis, asked here
// independently): the tier and the reason say so, the reason holds each
// device's half of the replica against a device's HBM (half the chip's),
// and a warning says the in-chip collectives are not costed. On v5p (one
// device a chip) nothing changes.
func TestInChipDP(t *testing.T) {
	p := searchOptions(t, func(o *Options) { o.Model, o.TPU = "llama3-8b", "tpu7x-8" })
	e := p.Best.Estimate
	if p.Best.Tier != TierDP {
		t.Fatalf("tier %v, want the pure DP rung (the review's case)", p.Best.Tier)
	}
	if a := maxtext.InChipAxis(e.MicroBatchSize, e.Job.Seq, 1, 2); a.String() != "fsdp" {
		t.Fatalf("MaxText's in-chip axis %v, want fsdp", a)
	}
	j := p.JSON(nil)
	if want := "pure DP across chips, FSDP over each chip's 2 JAX devices"; j.Tier != want {
		t.Errorf("tier %q, want %q", j.Tier, want)
	}
	if j.Layout.DeviceSpec != "data=4,fsdp=2" {
		t.Errorf("device spec %q, want data=4,fsdp=2 (what export writes)", j.Layout.DeviceSpec)
	}
	half, device := e.Memory.State()/2, e.Memory.Usable/2
	reason := fmt.Sprintf("a share of it, %v, fits each of a chip's 2 devices in %v of usable HBM a device", half, device)
	if !strings.Contains(strings.Join(j.Reasons, "\n"), reason) || half > device {
		t.Errorf("reasons %q, want one saying %q (and the half to fit)", j.Reasons, reason)
	}
	if !strings.Contains(strings.Join(j.Reasons, "\n"), "fit no JAX device") || e.Memory.State() <= device {
		t.Errorf("reasons %q, want the whole replica (%v) to fit no device (%v)", j.Reasons, e.Memory.State(), device)
	}
	if !strings.Contains(strings.Join(j.Warnings, "\n"), "in-chip collectives not costed") {
		t.Errorf("warnings %q, want the in-chip collectives' caveat", j.Warnings)
	}
	v := searchOptions(t, func(o *Options) { o.Model, o.TPU = "llama3-8b", "v5p-8" })
	jv := v.JSON(nil)
	if v.Best.Tier == TierDP && jv.Tier != "pure DP" {
		t.Errorf("v5p tier %q, want pure DP", jv.Tier)
	}
	if strings.Contains(strings.Join(jv.Warnings, "\n"), "in-chip") {
		t.Errorf("v5p warnings %q, want no in-chip caveat (one device a chip)", jv.Warnings)
	}
}

// TestRowsApart: review 163 #4. deepseek3-671b on tpu7x-256 ranked two
// fsdp=32,expert=4 rows that looked alike (they differ in the expert
// dispatch); every row of top and alternatives is told apart by what it
// prints, in JSON and in the text table.
func TestRowsApart(t *testing.T) {
	for _, c := range []struct{ model, tpu string }{{"deepseek3-671b", "tpu7x-256"}, {"llama3-8b", "tpu7x-8"}} {
		p := searchOptions(t, func(o *Options) { o.Model, o.TPU = c.model, c.tpu })
		j := p.JSON(nil)
		for _, rows := range [][]RankJSON{j.Top, j.Alternatives} {
			seen := map[string]int{}
			for i, r := range rows {
				key := fmt.Sprintf("%s|%s|%s|%s|%s|%d|%s|%d|%d", r.Tier, r.Layout, r.DeviceSpec, r.Dispatch, r.Remat, r.MicroBatches, r.Schedule, r.Chunks, r.GlobalBatch)
				if k, ok := seen[key]; ok {
					t.Errorf("%s on %s: rows %d and %d print alike: %s", c.model, c.tpu, k+1, i+1, key)
				}
				seen[key] = i
				if r.DeviceSpec == "" {
					t.Errorf("%s on %s: row %d (%s) has no device spec, want the layout in JAX devices", c.model, c.tpu, i+1, r.Layout)
				}
			}
		}
		var text strings.Builder
		if err := p.WriteText(&text, nil); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), "JAX devices") {
			t.Errorf("%s on %s: the table has no JAX devices column", c.model, c.tpu)
		}
	}
}

// TestDispatchWithoutExpertAxis: review 166 #7. An MoE row without an
// expert axis runs no dispatch collective (the estimate's expert
// all-to-all bytes are 0): its dispatch is DispatchNone in the rows and in
// experts, and the experts line calls no 0 B exchange "on the critical
// path"; rows over an expert axis keep their collective's name.
func TestDispatchWithoutExpertAxis(t *testing.T) {
	p := searchOptions(t, func(o *Options) { o.Model, o.TPU = "deepseek3-671b", "tpu7x-256" })
	j := p.JSON(nil)
	for _, r := range append(append([]RankJSON{}, j.Top...), j.Alternatives...) {
		if none := !strings.Contains(r.Layout, "expert="); none != (r.Dispatch == DispatchNone) {
			t.Errorf("row %s dispatch %q: want %q exactly where the layout has no expert axis", r.Layout, r.Dispatch, DispatchNone)
		}
	}
	f := searchOptions(t, func(o *Options) {
		o.Model, o.TPU, o.Mesh, o.Remat, o.GlobalBatch = "deepseek3-671b", "tpu7x-256", "fsdp=256", "full", "1024"
	})
	x := f.JSON(nil).Experts
	if x == nil || x.Degree != 1 || x.AllToAllBytes != 0 || x.Dispatch != DispatchNone {
		t.Fatalf("fsdp=256 experts %+v, want expert 1, 0 B exchanged, dispatch %q", x, DispatchNone)
	}
	var text strings.Builder
	if err := f.WriteText(&text, nil); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(text.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "experts:") && (strings.Contains(line, "critical path") || !strings.Contains(line, "no dispatch collective")) {
			t.Errorf("experts line %q: want no dispatch collective and nothing on the critical path", line)
		}
	}
	// The layout was the user's: the reason says so, not that the
	// experts, batch or HBM allowed no expert axis.
	if s := text.String(); !strings.Contains(s, "has no expert axis, so the experts are not split; no layout with one was costed") || strings.Contains(s, "allow none") {
		t.Errorf("a fixed layout without an expert axis: want its reason to name the given layout, got:\n%s", s)
	}
}
