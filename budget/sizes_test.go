package budget

import (
	"strings"
	"testing"

	"shardlab/hw"
)

// TestTrainingSliceWholeVMs: a slice size trains where the slice is whole
// VMs (hw.Slice.WholeHosts): v5e's 1-chip slice is one ct5lp-hightpu-1t
// (cloud.google.com/tpu/docs/v5e VM types: 1, 4 or 8 chips), so
// v5litepod-1 is searched, while v6e's 1-chip slice is a quarter of the
// catalog's ct6e-standard-4t and is not; the sizes v6e has are listed.
func TestTrainingSliceWholeVMs(t *testing.T) {
	if bad, want, ok := unknownSize([]hw.Generation{hw.V5e}, []int{1, 4, 8}); !ok {
		t.Errorf("v5e sizes 1, 4, 8: %d refused (%s), want all of them", bad, want)
	}
	bad, want, ok := unknownSize([]hw.Generation{hw.V6e}, []int{1})
	if ok || bad != 1 || !strings.Contains(want, "v6e 4, 8, 16, 32") {
		t.Errorf("v6e size 1: bad %d ok %v %q, want 1 refused and v6e's sizes from 4 listed", bad, ok, want)
	}
	for _, c := range []struct {
		gen  hw.Generation
		want string
	}{{hw.V5e, "v5litepod-1"}, {hw.V6e, ""}} {
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
