package budget

import (
	"math"
	"testing"

	"shardlab/plan"
)

// TestBandCoversTheRow checks every row's band against the plan it came
// from: the time to train at each end is the steps times the plan's own
// step time at that end of its prediction_band (plan.Plan.JSON, computed
// there from cost.StepBand), over the row's goodput; the dollars are that
// time times chips times the price; and the band holds the row.
func TestBandCoversTheRow(t *testing.T) {
	res, err := Sweep(smallRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) == 0 {
		t.Fatal("no rows")
	}
	for _, row := range res.Rows {
		b := row.Band
		pj := row.Plan.JSON(func(o plan.Option) string { return string(o) }).Band
		if b == nil || pj == nil {
			t.Fatalf("%s: band %v, plan's band %v; want both (v6e dense has held-out rows)", row.name(), b, pj)
		}
		if b.Runs != pj.Runs || b.Rows != pj.Rows || b.LowError != pj.LowError || b.HighError != pj.HighError {
			t.Errorf("%s: band %s (%d rows, %v..%v), plan's %s (%d rows, %v..%v): want the plan's one band",
				row.name(), b.Runs, b.Rows, b.LowError, b.HighError, pj.Runs, pj.Rows, pj.LowError, pj.HighError)
		}
		for _, c := range []struct {
			end        string
			step, time float64
			usd        float64
		}{{"low", pj.StepLow, b.TimeLow, b.USDLow}, {"high", pj.StepHigh, b.TimeHigh, b.USDHigh}} {
			want := row.Steps * c.step / row.Goodput
			if math.Abs(c.time-want)/want > 1e-9 {
				t.Errorf("%s: %s time %.0fs, want %.4g steps × %.3fs / %.4f = %.0fs", row.name(), c.end, c.time, row.Steps, c.step, row.Goodput, want)
			}
			usd := float64(row.Chips) * want / 3600 * row.Price.USDPerChipHour
			if math.Abs(c.usd-usd)/usd > 1e-9 {
				t.Errorf("%s: %s dollars %.2f, want %.2f", row.name(), c.end, c.usd, usd)
			}
		}
		if !(b.TimeLow <= row.TimeToTrainS && row.TimeToTrainS <= b.TimeHigh && b.USDLow <= row.USD && row.USD <= b.USDHigh) {
			t.Errorf("%s: %.0fs, $%.0f outside its band %.0f..%.0fs, $%.0f..%.0f", row.name(), row.TimeToTrainS, row.USD, b.TimeLow, b.TimeHigh, b.USDLow, b.USDHigh)
		}
	}
}
