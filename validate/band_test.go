package validate

import (
	"math"
	"reflect"
	"testing"

	"shardlab/cost"
)

// TestInterpolated holds the percentile to numpy's default (linear, type
// 7): numpy.percentile([4, 1, 3, 2], [10, 50, 90]) = [1.3, 2.5, 3.7].
func TestInterpolated(t *testing.T) {
	xs := []float64{4, 1, 3, 2}
	for _, c := range []struct{ q, want float64 }{{0.1, 1.3}, {0.5, 2.5}, {0.9, 3.7}, {0, 1}, {1, 4}} {
		if got := interpolated(xs, c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("interpolated(%v, %v) = %v, want %v", xs, c.q, got, c.want)
		}
	}
	if got := interpolated([]float64{0.2}, 0.9); got != 0.2 {
		t.Errorf("interpolated([0.2], 0.9) = %v, want 0.2", got)
	}
}

// builtInReport costs the built-in table with cost.Calibrated().
func builtInReport(t *testing.T) Report {
	t.Helper()
	runs, err := Runs()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Evaluate(runs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestStepBands holds the step-time error band plan prints and decides by
// (cost.StepBands) to what the held-out rows of the built-in table give,
// cell by cell, as TestMemoryErrorBands holds the memory bands.
func TestStepBands(t *testing.T) {
	want := StepBands(builtInReport(t))
	if !reflect.DeepEqual(cost.StepBands, want) {
		t.Errorf("cost.StepBands differs from what the held-out rows give:")
		for _, b := range cost.StepBands {
			t.Logf("  cost:     %+v", b)
		}
		for _, b := range want {
			t.Logf("  validate: %+v", b)
		}
	}
}

// TestStepBandCoverage counts the held-out rows whose MFU error lies in
// the band cost.Job.Band gives them (their generation and class, or the
// cell it pools into): about 80 % of them, the band's nominal share
// (cost.BandHigh − cost.BandLow). On the built-in table that is 37 of the
// 47 held-out rows (79 %); the band is measured on the same rows, so this
// is its in-sample coverage.
func TestStepBandCoverage(t *testing.T) {
	rep := builtInReport(t)
	in, n := 0, 0
	for _, r := range rep.Results {
		if r.Run.Calibration || r.Run.Prospective {
			continue
		}
		n++
		b := r.Estimate.Job.Band(r.Estimate.Mesh.Multislice.Slice.Chip.Generation)
		if b.Rows < cost.BandMinRows {
			t.Errorf("%s: band %+v has fewer than %d rows", r.Run.ID, b, cost.BandMinRows)
		}
		if r.Error >= b.Low && r.Error <= b.High {
			in++
		}
	}
	if got, want := [2]int{in, n}, [2]int{37, 47}; got != want {
		t.Errorf("held-out rows inside their band = %d of %d, want %d of %d", in, n, want[0], want[1])
	}
	if share := float64(in) / float64(n); math.Abs(share-(cost.BandHigh-cost.BandLow)) > 0.05 {
		t.Errorf("band covers %.0f%% of held-out rows, want about %.0f%%", 100*share, 100*(cost.BandHigh-cost.BandLow))
	}
}
