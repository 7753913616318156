package validate

import (
	"reflect"
	"slices"
	"sync"
	"testing"

	"shardlab/inference"
)

// builtInServing evaluates the built-in serving table once for the
// band's tests (about a second).
var builtInServing = sync.OnceValues(BuiltInServingReport)

// TestServingBands holds inference.ServingBands, which serving plans
// print, to what validate measures on the table now.
func TestServingBands(t *testing.T) {
	rep, err := builtInServing()
	if err != nil {
		t.Fatal(err)
	}
	want := ServingBands(rep)
	if !reflect.DeepEqual(inference.ServingBands, want) {
		t.Errorf("inference.ServingBands differs from what the held-out serving rows give:")
		for _, b := range inference.ServingBands {
			t.Logf("  inference: %+v", b)
		}
		for _, b := range want {
			t.Logf("  validate:  %+v", b)
		}
	}
}

// TestServingBandCovers walks the report's rows, not the bands: every
// held-out vLLM row the serving model fits lies in the band a request of
// its lengths is given (inference.BandOf of its simulation's mix), by
// ID and by each error it measures, and every row a band claims is such
// a row of the report. Calibration, JetStream, refused and not-modelled
// rows are in no band.
func TestServingBandCovers(t *testing.T) {
	rep, err := builtInServing()
	if err != nil {
		t.Fatal(err)
	}
	in := func(x float64, s inference.ErrorSpread) bool {
		return s.Rows > 0 && s.Low-5e-5 <= x && x <= s.High+5e-5
	}
	claimed := map[string]bool{}
	for _, b := range inference.ServingBands {
		for _, id := range b.IDs() {
			claimed[id] = true
		}
	}
	for _, r := range rep.Results {
		heldOut := r.Modelled && !r.Refused() && !r.Row.Calibration && r.Row.ServingEngine() == inference.VLLM
		if !heldOut {
			if claimed[r.Row.ID] {
				t.Errorf("%s: in a band, but not a held-out vLLM row the model fits (calibration %v, engine %s, modelled %v)", r.Row.ID, r.Row.Calibration, r.Row.Engine, r.Modelled)
			}
			continue
		}
		delete(claimed, r.Row.ID)
		b, ok := inference.BandOf(r.Row.SimOptions().Load.Mix)
		switch {
		case !ok:
			t.Errorf("%s: no band for its lengths", r.Row.ID)
			continue
		case !slices.Contains(b.IDs(), r.Row.ID):
			t.Errorf("%s: not among the rows of the %s band its lengths get: %v", r.Row.ID, b.Class, b.IDs())
		}
		if !in(r.Error, b.Throughput()) || !in(r.RooflineError, b.Roofline()) {
			t.Errorf("%s: throughput error %+.4f (roofline %+.4f) outside the %s band's %v (roofline %v)", r.Row.ID, r.Error, r.RooflineError, b.Class, b.Throughput(), b.Roofline())
		}
		if r.Row.Published.MeanTTFTms > 0 && (!in(r.TTFTError, b.TTFT()) || !in(r.ITLError, b.ITL())) {
			t.Errorf("%s: TTFT error %+.4f, ITL %+.4f outside the %s band's %v, %v", r.Row.ID, r.TTFTError, r.ITLError, b.Class, b.TTFT(), b.ITL())
		}
	}
	for id := range claimed {
		t.Errorf("%s: a band's row, but not a row of the serving table", id)
	}
}
