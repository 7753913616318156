package budget

import (
	"strings"
	"testing"
	"time"
)

// TestNearestBreaksTiesByTheOtherMeasure: with nothing within the limits,
// the nearest row is the least over them; a tie over a deadline goes to
// the cheaper row, one over a budget to the faster, and with both limits
// to the row less over the other. The review's case: 4 × v6e-256 takes
// 14.7 days in every mode against a 1-day deadline, and the nearest was
// the on-demand row ($978k), not the 3-year commitment ($442k). These
// rows carry no term bill (Row.Cost is their dollars); with its bill,
// the commitment is weighed by it (TestNearestWeighsTheBill).
func TestNearestBreaksTiesByTheOtherMeasure(t *testing.T) {
	day := 86400.0
	row := func(mode Mode, days, usd float64) Row {
		return Row{Slices: 4, AcceleratorType: "v6e-256", Mode: mode, TimeToTrainS: days * day, USD: usd}
	}
	for _, tt := range []struct {
		name     string
		deadline time.Duration
		budget   float64
		rows     []Row
		want     string
	}{
		{"deadline, a tie in time", 24 * time.Hour, 0,
			[]Row{row(OnDemand, 14.7, 978e3), row(CUD1y, 14.7, 685e3), row(CUD3y, 14.7, 442e3), row(Spot, 20, 100e3)}, "4 × v6e-256 cud-3y"},
		{"budget, a tie in dollars", 0, 1e5,
			[]Row{row(OnDemand, 20, 2e5), row(CUD1y, 10, 2e5), row(CUD3y, 5, 3e5)}, "4 × v6e-256 cud-1y"},
		// both: 2× the deadline is the worst of each; then 1.2× the
		// budget beats 1.5×, though it is not the cheaper
		{"both, a tie in the worst", 24 * time.Hour, 1e5,
			[]Row{row(OnDemand, 2, 1.5e5), row(CUD1y, 2, 1.2e5), row(CUD3y, 3, 0.5e5)}, "4 × v6e-256 cud-1y"},
	} {
		r := Request{Deadline: tt.deadline, Budget: tt.budget}
		var res Result
		if kept := r.limit(tt.rows, &res); len(kept) != 0 {
			t.Fatalf("%s: kept %v", tt.name, names(kept))
		}
		if res.NearestRow == nil || res.NearestRow.name() != tt.want || !strings.HasPrefix(res.Nearest, tt.want+": ") {
			t.Errorf("%s: nearest %q (%+v), want %s", tt.name, res.Nearest, res.NearestRow, tt.want)
		}
	}
}
