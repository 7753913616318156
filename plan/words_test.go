package plan

import (
	"testing"

	"shardlab/cost"
	"shardlab/unit"
)

// TestCountWords: each kind of rejection reason reads as a sentence about
// the layouts, counted with thousands separators (hand-written wants).
func TestCountWords(t *testing.T) {
	for _, tc := range []struct {
		n      int
		reason string
		want   string
	}{
		{3672, string(cost.ReasonHBM), "3,672 layouts do not fit in HBM"},
		{1, string(cost.ReasonHBM), "1 layout does not fit in HBM"},
		{4, string(cost.ReasonHost), "4 layouts do not fit in host RAM (offloaded buffers)"},
		{216, "needs a global batch above Batch limit", "216 layouts need a global batch above Batch limit"},
		{5, string(cost.ReasonLayers), "5 layouts where pipeline does not divide the layers"},
		{2, string(cost.ReasonInvalidMesh), "2 layouts where axes do not multiply to the chips"},
		{495, string(cost.ReasonTensorDCN), "495 layouts with tensor parallelism over DCN"},
		{1234567, string(cost.ReasonHBM), "1,234,567 layouts do not fit in HBM"},
	} {
		if got := countWords(tc.n, tc.reason); got != tc.want {
			t.Errorf("countWords(%d, %q) = %q, want %q", tc.n, tc.reason, got, tc.want)
		}
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 12458: "12,458", -4096: "-4,096"} {
		if got := unit.Count(n); got != want {
			t.Errorf("unit.Count(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestRejectedWords: most common first, ties in the reasons' order, and
// the rejection map of a NoPlanError reads the same way.
func TestRejectedWords(t *testing.T) {
	rs := []RejectedJSON{{Reason: string(cost.ReasonLayers), Count: 12}, {Reason: string(cost.ReasonHBM), Count: 3672}, {Reason: string(cost.ReasonTensorDCN), Count: 12}}
	want := "3,672 layouts do not fit in HBM, 12 layouts where pipeline does not divide the layers, 12 layouts with tensor parallelism over DCN"
	if got := RejectedWords(rs); got != want {
		t.Errorf("RejectedWords = %q, want %q", got, want)
	}
	if got := RejectedWords(nil); got != "no layout was tried" {
		t.Errorf("RejectedWords(nil) = %q", got)
	}
	e := &NoPlanError{On: "v5litepod-4", Rejected: map[cost.Reason]int{cost.ReasonHBM: 3672, cost.ReasonLayers: 1}}
	if got, want := e.Phrase(nil), "no layout can run this job on v5litepod-4: 3,672 layouts do not fit in HBM, 1 layout where pipeline does not divide the layers"; got != want {
		t.Errorf("NoPlanError.Phrase = %q, want %q", got, want)
	}
}
