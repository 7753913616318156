package web

import (
	"testing"

	"shardlab/plan"
)

// TestPyTorchPageShowsNoBand is review 140's finding 3 on the page: the
// charts' whiskers and the goodput's days come from the band the plan
// gives (plan.Plan.PredictionBand), which a PyTorch plan does not (its
// efficiency and band are MaxText's); the MaxText plan of the same
// request has them.
func TestPyTorchPageShowsNoBand(t *testing.T) {
	for _, f := range []plan.Framework{plan.FrameworkMaxText, plan.FrameworkPyTorch} {
		o := plan.DefaultOptions()
		o.Model, o.TPU, o.Framework = "llama3-8b", "v5p-64", string(f)
		r, err := plan.ParseRequest(o)
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.Search(r)
		if err != nil {
			t.Fatal(err)
		}
		want := f == plan.FrameworkMaxText
		for _, c := range []hchart{stepBars(p), mfuBars(p)} {
			if got := c.BandLabel != "" && c.Bars[0].High > 0; got != want {
				t.Errorf("%s: %s chart has a band %v (%q, %v-%v), want %v", f, c.Name, got, c.BandLabel, c.Bars[0].Low, c.Bars[0].High, want)
			}
		}
		if got := goodputOf(p).DaysHigh > 0; got != want {
			t.Errorf("%s: goodput's days in the band %v, want %v", f, got, want)
		}
		if got := p.JSON(nil).Band != nil; got != want {
			t.Errorf("%s: the page's JSON has a prediction_band %v, want %v", f, got, want)
		}
	}
}
