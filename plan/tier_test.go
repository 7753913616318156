package plan

import (
	"strings"
	"testing"

	"shardlab/hw"
	"shardlab/mesh"
)

// TestAcrossOfNamesTheAxisOnDCN is review 140's finding 8: a layout whose
// only sharded axis across slices is expert was labelled "FSDP across
// slices". The rule order files it with FSDP across (tierOf: expert
// shards weights and the batch as fsdp does), and keeps doing so; the
// label names the axes the layout puts on DCN, read off the mesh by hand.
func TestAcrossOfNamesTheAxisOnDCN(t *testing.T) {
	for _, c := range []struct {
		slices int
		axes   string
		tier   Tier
		across string
	}{
		{2, "expert=2(dcn),fsdp=16,expert=4", Tier{InFSDP, AcrossFSDP}, "expert"},
		{2, "fsdp=2(dcn),fsdp=16,expert=4", Tier{InFSDP, AcrossFSDP}, "FSDP"},
		{4, "fsdp=2(dcn),expert=2(dcn),fsdp=16,expert=4", Tier{InFSDP, AcrossFSDP}, "FSDP and expert"},
		{2, "data=2(dcn),fsdp=16,expert=4", Tier{InFSDP, AcrossDP}, "DP"},
		{2, "expert=2(dcn),fsdp=16,tensor=4", Tier{InModel, AcrossFSDP}, "expert"},
		{2, "pipeline=2(dcn),expert=64", Tier{InFSDP, AcrossPipeline}, "pipeline"},
	} {
		ms, err := hw.NewMultislice(mustSlice(t, "v5p-128"), c.slices, 0)
		if err != nil {
			t.Fatal(err)
		}
		d, err := mesh.ParseAxes(c.axes)
		if err != nil {
			t.Fatal(err)
		}
		m, err := mesh.New(ms, d...)
		if err != nil {
			t.Fatalf("%s: %v", c.axes, err)
		}
		tier := TierOf(m)
		if tier != c.tier {
			t.Errorf("TierOf(%s) = %s, want %s (the rule order's rung, unchanged)", c.axes, tier, c.tier)
		}
		if got := AcrossOf(tier, m); got != c.across {
			t.Errorf("AcrossOf(%s) = %q, want %q", c.axes, got, c.across)
		}
		name := Candidate{Tier: tier}
		name.Estimate.Mesh = m
		if want := c.tier.In.String() + " inside, " + c.across + " across slices"; name.Name() != want {
			t.Errorf("Name of %s = %q, want %q", c.axes, name.Name(), want)
		}
	}
}

// TestExpertAcrossSlicesLabel: the review's plan, Mixtral 8x7B on 2 ×
// v5p-128 with expert 2 across slices, says expert across slices in its
// text and its JSON, and nowhere FSDP across slices.
func TestExpertAcrossSlicesLabel(t *testing.T) {
	r := parsed(t, func(o *Options) {
		o.Model, o.TPU, o.Slices, o.Mesh = "mixtral-8x7b", "v5p-128", 2, "expert=2(dcn),fsdp=16,expert=4"
	})
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := p.WriteText(&b, nil); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.Contains(s, "[FSDP inside, expert across slices]") || strings.Contains(s, "FSDP across slices") {
		t.Errorf("text does not label the layout expert across slices:\n%s", s)
	}
	j := p.JSON(nil)
	if j.Tier != "FSDP inside, expert across slices" || j.AcrossSlices != "expert" || j.InSlice != "FSDP" {
		t.Errorf("JSON tier %q, across_slices %q, in_slice %q, want FSDP inside, expert across slices; expert; FSDP", j.Tier, j.AcrossSlices, j.InSlice)
	}
}
