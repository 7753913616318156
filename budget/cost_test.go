package budget

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBudgetWeighsTheBill is review 178's finding 3 by hand: `budget
// --model llama3-70b --tokens 2T --generations v6e --slices 1 --modes
// cud-1y,on-demand,cud-3y --budget 2M` kept the cud-3y row, whose job's
// chip-hours are $798k, ranked it first and put it on the Pareto front,
// though a commitment bills its whole term, used or not (the Compute
// Engine page termBill cites). By hand, from the built-in prices
// (prices.csv: v6e $2.70 on demand, $1.89 cud-1y, $1.22 cud-3y a
// chip-hour): the job takes under a year on one v6e-256 (its on-demand
// dollars, below $2M, over 256 chips × $2.70 are under 8760 h), so each
// commitment bills one term: 256 × 26,280 h × $1.22 = $8,207,769.60 for 3
// years and 256 × 8760 h × $1.89 = $4,238,438.40 for 1, both over the
// $2M budget. Only the on-demand row is left.
func TestBudgetWeighsTheBill(t *testing.T) {
	o := DefaultOptions()
	o.Model, o.Tokens, o.Generations, o.SliceCounts = "llama3-70b", "2T", "v6e", "1"
	o.Modes, o.Budget = "cud-1y,on-demand,cud-3y", "2M"
	r, err := ParseOptions(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Sweep(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(res.Rows); !slices.Equal(got, []string{"1 × v6e-256 on-demand"}) {
		t.Fatalf("rows %v, want only the on-demand row", got)
	}
	od := res.Rows[0]
	if !(od.USD < 2e6 && od.USD/(256*2.70) < 8760) || !od.Pareto {
		t.Errorf("on-demand: $%.2f, %.0f h, Pareto %v; want under $2M and a year, on the front", od.USD, od.USD/(256*2.70), od.Pareto)
	}
	for _, want := range []string{
		"1 × v6e-256 cud-3y: bills $8.21M for a 3-year term, over the $2.00M budget",
		"1 × v6e-256 cud-1y: bills $4.24M for a 1-year term, over the $2.00M budget",
	} {
		if !slices.ContainsFunc(res.Dropped, func(d Dropped) bool { return d.What+": "+d.Why == want }) {
			t.Errorf("dropped %+v, want %q", res.Dropped, want)
		}
	}
	// the bills themselves, to the cent, with no budget
	r.Budget = 0
	all, err := Sweep(r)
	if err != nil {
		t.Fatal(err)
	}
	bills := map[Mode]float64{CUD3y: 8207769.60, CUD1y: 4238438.40}
	for _, row := range all.Rows {
		if want, ok := bills[row.Mode]; ok && (math.Abs(row.CommitmentUSD-want) > 0.01 || row.Cost() != row.CommitmentUSD) {
			t.Errorf("%s: bill $%.2f, cost $%.2f; want $%.2f both", row.name(), row.CommitmentUSD, row.Cost(), want)
		}
	}
	// ranked by what each bills: on demand ($1.77M) before the 1-year
	// term ($4.24M) before the 3-year one ($8.21M), though the 3-year
	// row's chip-hours are the cheapest; on-demand is alone on the front
	if got, want := names(all.Rows), []string{"1 × v6e-256 on-demand", "1 × v6e-256 cud-1y", "1 × v6e-256 cud-3y"}; !slices.Equal(got, want) {
		t.Errorf("ranked %v, want %v", got, want)
	}
	for _, row := range all.Rows {
		if row.Pareto != (row.Mode == OnDemand) {
			t.Errorf("%s: Pareto %v; want only on-demand on the front (the same time, billed least)", row.name(), row.Pareto)
		}
	}
}

// billByHand is what a row bills, computed apart from termBill and
// Row.Cost: a commitment, its chips × the term's hours × its price for
// every whole term its time to train takes (at least one); else its
// chip-hour dollars.
func billByHand(row Row) float64 {
	var years float64
	switch row.Mode {
	case CUD1y:
		years = 1
	case CUD3y:
		years = 3
	default:
		return row.USD
	}
	termS := years * 365 * 86400
	return max(1, math.Ceil(row.TimeToTrainS/termS)) * float64(row.Chips) * years * 8760 * row.Price.USDPerChipHour
}

// TestNoKeptRowBillsOverTheBudget: for random rows (every mode, times
// from hours to past one 3-year term) and random budgets, no row the
// budget keeps bills more than the budget (billByHand), and every row
// it drops does, with the bill in its reason.
func TestNoKeptRowBillsOverTheBudget(t *testing.T) {
	rng := rand.New(rand.NewPCG(178, 3))
	modes := []Mode{OnDemand, Spot, CUD1y, CUD3y}
	for n := range 300 {
		var rows []Row
		for i := range 1 + rng.IntN(8) {
			row := Row{AcceleratorType: "v6e-16", Slices: 1 + i, Chips: 16 * (1 + rng.IntN(4)), Mode: modes[rng.IntN(len(modes))],
				TimeToTrainS: math.Exp(rng.Float64()*math.Log(2e8/3600)) * 3600, Price: Price{USDPerChipHour: 0.5 + 3*rng.Float64()}}
			row.ChipHours = float64(row.Chips) * row.TimeToTrainS / 3600
			row.USD = row.ChipHours * row.Price.USDPerChipHour
			termBill(&row, row.Mode.term())
			rows = append(rows, row)
		}
		budget := math.Exp(rng.Float64() * math.Log(1e8))
		r := Request{Budget: budget}
		var res Result
		kept := r.limit(rows, &res)
		for _, row := range kept {
			if b := billByHand(row); b > budget*(1+1e-12) {
				t.Fatalf("case %d: kept %s billing $%.2f (dollars $%.2f) over the $%.2f budget", n, row.name(), b, row.USD, budget)
			}
		}
		if len(kept)+len(res.Dropped) != len(rows) {
			t.Fatalf("case %d: %d rows kept, %d dropped, of %d", n, len(kept), len(res.Dropped), len(rows))
		}
		for _, d := range res.Dropped {
			if !strings.Contains(d.Why, ", over the "+dollars(budget)+" budget") {
				t.Errorf("case %d: %s dropped %q, want over the budget", n, d.What, d.Why)
			}
		}
		for _, row := range rows {
			if b := billByHand(row); b > budget*(1+1e-12) && slices.ContainsFunc(kept, func(k Row) bool { return k.name() == row.name() }) {
				t.Errorf("case %d: %s bills $%.2f over $%.2f, kept", n, row.name(), b, budget)
			}
		}
	}
}

// TestNearestWeighsTheBill: the nearest row, when nothing meets the
// limits, is weighed by its bill too. Over a 1-day deadline, 4 ×
// v6e-256 takes 14.7 days in every mode; on demand costs $978k, where
// the 3-year commitment's chip-hours are $442k but it bills its term,
// $32.8M, so the nearest is on demand. Over a budget alone, a 1-year
// commitment billing 3× the budget is nearer than on demand at 5×, and
// the nearest says its bill.
func TestNearestWeighsTheBill(t *testing.T) {
	day := 86400.0
	row := func(mode Mode, days, usd, bill float64) Row {
		return Row{Slices: 4, AcceleratorType: "v6e-256", Mode: mode, TimeToTrainS: days * day, USD: usd, CommitmentUSD: bill, CommitmentTerms: 1}
	}
	for _, tt := range []struct {
		name     string
		deadline time.Duration
		budget   float64
		rows     []Row
		want     string
	}{
		{"deadline", 24 * time.Hour, 0, []Row{row(OnDemand, 14.7, 978e3, 0), row(CUD3y, 14.7, 442e3, 32.8e6)}, "4 × v6e-256 on-demand: 14.7d, $978k"},
		{"budget", 0, 1e5, []Row{row(OnDemand, 10, 5e5, 0), row(CUD1y, 10, 2e5, 3e5)}, "4 × v6e-256 cud-1y: 10d, $200k, bills $300k for a 1-year term"},
	} {
		r := Request{Deadline: tt.deadline, Budget: tt.budget}
		var res Result
		if kept := r.limit(tt.rows, &res); len(kept) != 0 {
			t.Fatalf("%s: kept %v", tt.name, names(kept))
		}
		if res.Nearest != tt.want {
			t.Errorf("%s: nearest %q, want %q", tt.name, res.Nearest, tt.want)
		}
	}
}
