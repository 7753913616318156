package chart

import (
	"errors"
	"strings"
	"testing"

	"shardlab/budget"
	"shardlab/hw"
	"shardlab/internal/golden"
)

// constructedBudget is a budget of four rows on two generations, two of
// them on the Pareto front, with bands.
func constructedBudget() budget.Result {
	row := func(g string, days, usd float64, pareto bool) budget.Row {
		s := days * 86400
		return budget.Row{Generation: hw.Generation(g), AcceleratorType: g + "-16", Slices: 1, Chips: 16, Mode: budget.OnDemand,
			TimeToTrainS: s, USD: usd, Pareto: pareto,
			Band: &budget.RowBand{TimeLow: s * 0.95, TimeHigh: s * 1.1, USDLow: usd * 0.95, USDHigh: usd * 1.1}}
	}
	return budget.Result{Model: "constructed", Tokens: 1e11, Region: "us-central1", Rows: []budget.Row{
		row("v6e", 10, 5000, true), row("v6e", 5, 6000, true), row("v5p", 6, 9000, false), row("v5p", 12, 7000, false)}}
}

func TestBudget(t *testing.T) {
	c, err := Budget(constructedBudget())
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{">v6e<", ">v5p<", ">Pareto front<", ">time to train, days<", ">dollars<"} {
		if !strings.Contains(string(b), w) {
			t.Errorf("budget chart lacks %q", w)
		}
	}
	golden.Compare(t, "budget_constructed.svg", b)
	if _, err := Budget(budget.Result{}); !errors.Is(err, ErrNotApplicable) {
		t.Errorf("Budget(no rows) = %v, want ErrNotApplicable", err)
	}
}
