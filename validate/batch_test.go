package validate

import (
	"strings"
	"testing"
)

// TestNoPublishedBatchRefused: every published run fits at its published
// batch at the usable-HBM rule validate checks fit at (ratio at least 1):
// what really ran must fit.
func TestNoPublishedBatchRefused(t *testing.T) {
	runs, err := Runs()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := EvaluateBatches(runs, 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Fits) != len(runs) {
		t.Fatalf("%d runs costed, want %d", len(rep.Fits), len(runs))
	}
	for _, f := range rep.Fits {
		if f.MostThatFits < f.Published {
			t.Errorf("%s: published %d sequences per chip per micro-batch, cost says at most %d fit", f.ID, f.Published, f.MostThatFits)
		}
	}
}

// TestBatchReportCounts holds the summary line to hand-made ratios.
func TestBatchReportCounts(t *testing.T) {
	rep := BatchReport{Fits: []BatchFit{
		{ID: "a", Published: 4, MostThatFits: 3, Ratio: 0.75},
		{ID: "b", Published: 4, MostThatFits: 4, Ratio: 1},
		{ID: "c", Published: 2, MostThatFits: 3, Ratio: 1.5},
		{ID: "d", Published: 2, MostThatFits: 5, Ratio: 2.5},
	}}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "refused at their published batch (ratio below 1): 1/4; within 1.0-1.5x: 2/4; above 1.5x: 1/4\n"
	if !strings.HasSuffix(b.String(), want) {
		t.Errorf("report ends\n%s\nwant\n%s", b.String(), want)
	}
	if i, k := strings.Index(b.String(), "\na "), strings.Index(b.String(), "\nd "); i < 0 || k < i {
		t.Errorf("rows not by ratio:\n%s", b.String())
	}
}
