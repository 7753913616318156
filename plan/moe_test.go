package plan

import (
	"errors"
	"testing"

	"shardlab/mesh"
)

func TestMoEOptionsRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*Options)
		opt  Option
	}{
		{"negative capacity factor", func(o *Options) { o.CapacityFactor = -1 }, OptionCapacityFactor},
		{"capacity factor too large", func(o *Options) { o.CapacityFactor = 65 }, OptionCapacityFactor},
		{"load imbalance below 1", func(o *Options) { o.LoadImbalance = 0.5 }, OptionLoadImbalance},
	} {
		o := DefaultOptions()
		o.Model, o.TPU = "mixtral-8x7b", "v5p-128"
		c.set(&o)
		_, err := ParseRequest(o)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != c.opt {
			t.Errorf("%s: error %v, want an OptionError naming %s", c.name, err, c.opt)
		}
	}
	o := DefaultOptions()
	o.Model, o.TPU, o.CapacityFactor, o.LoadImbalance = "mixtral-8x7b", "v5p-128", 1.25, 1.5
	r, err := ParseRequest(o)
	if err != nil {
		t.Fatalf("mixtral with capacity factor 1.25: %v", err)
	}
	if j := r.job(); j.CapacityFactor != 1.25 || j.LoadImbalance != 1.5 {
		t.Errorf("job capacity factor %g, load imbalance %g, want 1.25 and 1.5", j.CapacityFactor, j.LoadImbalance)
	}
}

// Expert parallelism crosses DCN only once it fills a slice: on two
// v5p-128 slices Mixtral's 8 experts fit in a slice, so every expert
// split over DCN is rejected, and counted.
func TestExpertOverDCNOnlyOnceItFillsASlice(t *testing.T) {
	r := request(t, "mixtral-8x7b", "v5p-128", 2, 1024)
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	if p.Rejected[ReasonExpertDCNFirst] == 0 {
		t.Errorf("no layout rejected for %q", ReasonExpertDCNFirst)
	}
	for _, c := range append(p.Top, p.Alternatives...) {
		if c.Estimate.Mesh.Degree(mesh.Expert).DCN > 1 {
			t.Errorf("plan proposes %s", c.Estimate.Mesh)
		}
	}
	if !searchAxes(&r)[mesh.Expert] {
		t.Error("searchAxes holds expert at 1 for a mixture of experts")
	}
	if dense := request(t, "llama3-8b", "v5p-8", 1, 64); searchAxes(&dense)[mesh.Expert] {
		t.Error("searchAxes splits expert for a dense model")
	}
}
