package chart

import (
	"errors"
	"strings"
	"testing"
	"time"

	"shardlab/inference"
)

// TestServing: the latency and throughput charts of a serving plan name
// each layout and the SLO lines, and a sweep without two points is not
// applicable.
func TestServing(t *testing.T) {
	o := inference.DefaultOptions()
	o.ITLSLO = 40 * time.Millisecond
	q, err := inference.ParseOptions(o)
	r := q.Request
	if err != nil {
		t.Fatal(err)
	}
	p, err := inference.Search(r)
	if err != nil {
		t.Fatal(err)
	}
	curves := inference.SweepConcurrency(r, p.Layouts[:2])
	labels := []string{CurveLabel(curves[0]), CurveLabel(curves[1])}
	charts, err := Serving(p, curves, labels)
	if err != nil {
		t.Fatal(err)
	}
	if len(charts) != 2 || charts[0].Name != "latency" || charts[1].Name != "throughput" {
		t.Fatalf("Serving = %d charts, want latency and throughput", len(charts))
	}
	b, err := charts[0].SVG()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range append(labels, "ITL SLO 40ms", "TTFT, ms", "concurrent sequences") {
		if !strings.Contains(string(b), want) {
			t.Errorf("latency chart lacks %q", want)
		}
	}
	if _, err := Serving(p, nil, nil); !errors.Is(err, ErrNotApplicable) {
		t.Errorf("Serving(no curves) = %v, want ErrNotApplicable", err)
	}
}
