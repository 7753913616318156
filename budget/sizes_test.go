package budget

import (
	"strings"
	"testing"

	"shardlab/hw"
)

// TestTrainingSliceWholeVMs: a slice size trains where the slice is whole
// VMs (hw.Slice.WholeHosts): v5e's 1-chip slice is one ct5lp-hightpu-1t
// (cloud.google.com/tpu/docs/v5e VM types: 1, 4 or 8 chips), and v6e's
// one ct6e-standard-1t (cloud.google.com/tpu/docs/v6e slice shapes: 1x1,
// "1/8" of a host; the doc: "TPU v6e supports training for up to 256 v6e
// chips"), so v5litepod-1 and v6e-1 are searched, as plan's SearchScope
// plans on them; a size with no slice (2 chips) is refused, with the
// sizes v6e has listed.
func TestTrainingSliceWholeVMs(t *testing.T) {
	for _, g := range []hw.Generation{hw.V5e, hw.V6e} {
		if bad, want, ok := unknownSize([]hw.Generation{g}, []int{1, 4, 8}); !ok {
			t.Errorf("%s sizes 1, 4, 8: %d refused (%s), want all of them", g, bad, want)
		}
	}
	bad, want, ok := unknownSize([]hw.Generation{hw.V6e}, []int{2})
	if ok || bad != 2 || !strings.Contains(want, "v6e 1, 4, 8, 16, 32") {
		t.Errorf("v6e size 2: bad %d ok %v %q, want 2 refused and v6e's sizes from 1 listed", bad, ok, want)
	}
	for _, c := range []struct {
		gen  hw.Generation
		want string
	}{{hw.V5e, "v5litepod-1"}, {hw.V6e, "v6e-1"}} {
		chip, err := hw.Lookup(string(c.gen))
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if s, ok := trainingSlice(chip, 1); ok {
			got = s.AcceleratorType()
		}
		if got != c.want {
			t.Errorf("trainingSlice(%s, 1) = %q, want %q", c.gen, got, c.want)
		}
	}
}
