package validate

import (
	"math"
	"strings"
	"testing"

	"shardlab/cost"
	"shardlab/hw"
)

// TestFitJSONHoldsFitsConstants: each constant of the fit report's JSON
// is what Fit finds, unrounded and in SI units (the DCN latency in
// seconds, as value_s), and only the attention factor, cost.Calibrated's,
// is not fitted; its runs are the rows' and an error is absent just where
// there are no runs.
func TestFitJSONHoldsFitsConstants(t *testing.T) {
	runs, err := Runs()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := FitReport(runs)
	if err != nil {
		t.Fatal(err)
	}
	cal, err := Fit(runs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"contention": cal.Contention, "quantized": cal.Quantized, "dropless moe": cal.Dropless,
		"slice jitter": cal.SliceJitter, "attention": cost.Calibrated().Attention}
	js := rows.JSON()
	if len(js.Constants) != len(rows) {
		t.Fatalf("JSON has %d constants, the report %d", len(js.Constants), len(rows))
	}
	for i, c := range js.Constants {
		r := rows[i]
		var got *float64
		switch g, eff := strings.CutPrefix(c.Constant, "efficiency "); {
		case c.Constant == "dcn latency":
			got, want[c.Constant] = c.ValueS, cal.DCNLatency.Seconds()
			if c.Value != nil {
				t.Errorf("dcn latency: value %g beside value_s", *c.Value)
			}
		case eff:
			got, want[c.Constant] = c.Value, cal.Efficiency[hw.Generation(g)]
		default:
			got = c.Value
		}
		if w, ok := want[c.Constant]; !ok || got == nil || *got != w {
			t.Errorf("%s: JSON value %v, Fit gives %g (known %v)", c.Constant, got, w, ok)
		}
		if c.Fit != (c.Constant != "attention") {
			t.Errorf("%s: fitted %v", c.Constant, c.Fit)
		}
		if strings.Join(c.FittedRuns, ",") != strings.Join(r.Fitted, ",") || strings.Join(c.HeldOutRuns, ",") != strings.Join(r.HeldOut, ",") {
			t.Errorf("%s: JSON runs %v / %v, report %v / %v", c.Constant, c.FittedRuns, c.HeldOutRuns, r.Fitted, r.HeldOut)
		}
		for _, e := range []struct {
			got  *float64
			want float64
			n    int
		}{{c.FittedError, r.FittedError, len(r.Fitted)}, {c.HeldOutError, r.HeldOutError, len(r.HeldOut)}} {
			if (e.got == nil) != (e.n == 0) || e.got != nil && (*e.got != e.want || math.IsNaN(*e.got)) {
				t.Errorf("%s: JSON error %v over %d runs, report %g", c.Constant, e.got, e.n, e.want)
			}
		}
	}
}
