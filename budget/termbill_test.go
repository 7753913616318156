package budget

import (
	"math"
	"strings"
	"testing"

	"shardlab/hw"
)

// TestTermBillByHand: review 171's finding 2, `budget --tokens 100T
// --generations v6e --slices 1`, whose rows take 51,339,332 s (594.2
// days) on 256 v6e chips. By hand: a 1-year term is 365 × 24 = 8760 h,
// 31,536,000 s; 51,339,332 / 31,536,000 = 1.63, so the job runs into a
// second term: 2 × 256 chips × 8760 h × $1.89 = $8,476,876.80, above the
// job's own 256 × 51,339,332 s / 3600 × $1.89 = $6,900,006.24 (the review
// read $4,238,438.40, one term). A 3-year term, 94,608,000 s, holds it:
// 1 × 256 × 26,280 h × $1.22 = $8,207,769.60.
func TestTermBillByHand(t *testing.T) {
	const secs = 51339332.128443606 // the review's time_to_train_s
	for _, c := range []struct {
		mode       Mode
		price      float64
		terms      float64
		bill, usd  float64
		warnsTerms bool
	}{
		{CUD1y, 1.89, 2, 8476876.80, 6900006.24, true},
		{CUD3y, 1.22, 1, 8207769.60, 4453972.28, false},
	} {
		row := Row{AcceleratorType: "v6e-256", Slices: 1, Chips: 256, Mode: c.mode, TimeToTrainS: secs,
			Price: Price{Generation: hw.V6e, Mode: c.mode, USDPerChipHour: c.price}}
		row.ChipHours = float64(row.Chips) * secs / 3600
		row.USD = row.ChipHours * c.price
		termBill(&row, c.mode.term())
		if row.CommitmentTerms != c.terms || math.Abs(row.CommitmentUSD-c.bill) > 0.01 {
			t.Errorf("%s: %g terms, $%.2f; want %g, $%.2f", c.mode, row.CommitmentTerms, row.CommitmentUSD, c.terms, c.bill)
		}
		if math.Abs(row.USD-c.usd) > 0.01 {
			t.Errorf("%s: the job's dollars $%.2f, want $%.2f by hand", c.mode, row.USD, c.usd)
		}
		if row.CommitmentUSD < row.USD {
			t.Errorf("%s: bill $%.2f below the job's $%.2f", c.mode, row.CommitmentUSD, row.USD)
		}
		want := "1 × v6e-256 cud-1y: takes 594d, past one 1-year term: the commitment bills 2 whole terms, $8.48M, where the job's chip-hours are $6.90M"
		got := strings.Join(row.Warnings, "\n")
		if c.warnsTerms != strings.Contains(got, want) || !c.warnsTerms && got != "" {
			t.Errorf("%s: warnings %q; want %q: %v", c.mode, row.Warnings, want, c.warnsTerms)
		}
	}
}

// TestTermBillBandWarning: a job inside one 1-year term whose band's high
// end runs past it is warned of the second term it may take.
func TestTermBillBandWarning(t *testing.T) {
	const year = 365 * 24 * 3600.0
	row := Row{AcceleratorType: "v6e-16", Slices: 1, Chips: 16, Mode: CUD1y, TimeToTrainS: 0.95 * year,
		Price: Price{USDPerChipHour: 2}, Band: &RowBand{TimeLow: 0.9 * year, TimeHigh: 1.05 * year}}
	termBill(&row, CUD1y.term())
	// by hand: one term of 16 chips × 8760 h × $2 = $280,320; two $560,640
	if row.CommitmentTerms != 1 || math.Abs(row.CommitmentUSD-280320) > 1e-6 {
		t.Errorf("%g terms, $%.2f; want 1, $280320", row.CommitmentTerms, row.CommitmentUSD)
	}
	want := []string{"1 × v6e-16 cud-1y: the band's high end, 383d, runs into a 2nd 1-year term: it would bill 2 whole terms, $561k"}
	if strings.Join(row.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings %q, want %q", row.Warnings, want)
	}
}

// TestTermBillNotBelowDollars: on every row of sweeps of a small request
// (Llama 3 8B on one or two v6e-16, from a few days to past a year), a
// commitment's bill is its whole terms, at least one, never below the
// job's dollars, and more than one term exactly where the job takes
// longer than one; the other modes bill no term.
func TestTermBillNotBelowDollars(t *testing.T) {
	r := smallRequest(t)
	r.Generations, r.Modes = []hw.Generation{hw.V6e}, []Mode{OnDemand, CUD1y, CUD3y}
	ps, err := ParsePrices(strings.NewReader(header+
		"v6e,on-demand,us-central1,2,test table,2026-12-04,\n"+
		"v6e,cud-1y,us-central1,1.5,test table,2026-12-04,\n"+
		"v6e,cud-3y,us-central1,1,test table,2026-12-04,\n"), testToday)
	if err != nil {
		t.Fatal(err)
	}
	r.Prices = ps
	var one, many int
	for _, tokens := range []float64{1e10, 1e12, 1e13} {
		r.Tokens = tokens
		res, err := Sweep(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range res.Rows {
			term := row.Mode.term()
			if term == 0 {
				if row.CommitmentTerms != 0 || row.CommitmentUSD != 0 {
					t.Errorf("%.3g tokens, %s: %g terms, $%.2f; want none", tokens, row.name(), row.CommitmentTerms, row.CommitmentUSD)
				}
				continue
			}
			if !(row.CommitmentUSD >= row.USD) {
				t.Errorf("%.3g tokens, %s: bill $%.2f below the job's $%.2f", tokens, row.name(), row.CommitmentUSD, row.USD)
			}
			n := row.CommitmentTerms
			if n < 1 || n != math.Ceil(n) || (n-1)*term.Seconds() >= row.TimeToTrainS || n*term.Seconds() < row.TimeToTrainS {
				t.Errorf("%.3g tokens, %s: %g terms of %v for %.0f s, want the fewest whole terms that hold it", tokens, row.name(), n, term, row.TimeToTrainS)
			}
			if want := n * float64(row.Chips) * term.Hours() * row.Price.USDPerChipHour; math.Abs(row.CommitmentUSD-want) > 1e-6*want {
				t.Errorf("%.3g tokens, %s: bill $%.2f, want %g × %d chips × %g h × $%g = $%.2f", tokens, row.name(), row.CommitmentUSD, n, row.Chips, term.Hours(), row.Price.USDPerChipHour, want)
			}
			warned := strings.Contains(strings.Join(row.Warnings, "\n"), "term: the commitment bills ")
			if warned != (n > 1) {
				t.Errorf("%.3g tokens, %s: %g terms, warned %v; want a warning exactly past one term: %q", tokens, row.name(), n, warned, row.Warnings)
			}
			if n > 1 {
				many++
			} else {
				one++
			}
		}
	}
	if one == 0 || many == 0 {
		t.Errorf("%d rows in one term, %d in more: want both, for the test to tell", one, many)
	}
}
