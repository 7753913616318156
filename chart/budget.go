package chart

import (
	"cmp"
	"fmt"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"shardlab/budget"
	"shardlab/hw"
)

// bandXY is budget rows as points of time to train (days) against what
// each costs (budget.Row.Cost: a commitment's whole-term bill, else its
// dollars), with the time band as x error bars.
type bandXY []budget.Row

func (b bandXY) Len() int { return len(b) }
func (b bandXY) XY(i int) (float64, float64) {
	return b[i].TimeToTrainS / 86400, b[i].Cost()
}
func (b bandXY) XError(i int) (float64, float64) {
	r := b[i]
	if r.Band == nil {
		return 0, 0
	}
	return (r.TimeToTrainS - r.Band.TimeLow) / 86400, (r.Band.TimeHigh - r.TimeToTrainS) / 86400
}

// Budget is the budget's rows as time to train against cost, one colour
// per generation, each with its band of the planner's measured error as
// a horizontal bar, and the Pareto front drawn through its rows, which
// are ringed. Cost is what the ranking and the front weigh
// (budget.Row.Cost): a commitment's bill for its whole terms, else the
// job's dollars, as the y axis says. A result without rows
// wraps ErrNotApplicable. A stalled row (budget.Row.Stalled: its time
// and dollars grow as e^(λR), past 1e50 days) is left off, as it is off
// the front: on the chart's linear axes it would press every other
// point against the origin; the table and its warning still say it.
func Budget(res budget.Result) (Chart, error) {
	if len(res.Rows) == 0 {
		return Chart{}, fmt.Errorf("chart: budget: no row meets the limits: %w", ErrNotApplicable)
	}
	res.Rows = slices.DeleteFunc(slices.Clone(res.Rows), func(row budget.Row) bool { return row.Stalled })
	if len(res.Rows) == 0 {
		return Chart{}, fmt.Errorf("chart: budget: every row's restarts are interrupted before they keep a step: %w", ErrNotApplicable)
	}
	p := newPlot(fmt.Sprintf("%s on %.3g tokens: time against dollars", res.Model, res.Tokens), "time to train, days", yCost)
	var gens []hw.Generation
	for _, r := range res.Rows {
		if !slices.Contains(gens, r.Generation) {
			gens = append(gens, r.Generation)
		}
	}
	for i, g := range gens {
		var rows bandXY
		for _, r := range res.Rows {
			if r.Generation == g {
				rows = append(rows, r)
			}
		}
		s, err := plotter.NewScatter(rows)
		if err != nil {
			return Chart{}, fmt.Errorf("chart: budget: %s: %w", g, err)
		}
		s.Color, s.Shape, s.Radius = colour(i), draw.CircleGlyph{}, vg.Points(3)
		bars, err := plotter.NewXErrorBars(struct {
			plotter.XYer
			plotter.XErrorer
		}{rows, rows})
		if err != nil {
			return Chart{}, fmt.Errorf("chart: budget: %s band: %w", g, err)
		}
		bars.Color = colour(i)
		p.Add(bars, s)
		p.Legend.Add(string(g), s)
	}
	if err := addFront(p, res.Rows); err != nil {
		return Chart{}, err
	}
	hi := 0.0
	for _, r := range res.Rows {
		hi = max(hi, r.Cost())
	}
	p.Y.Min, p.Y.Max = 0, niceMax(hi*1.15)
	p.X.Min = 0
	p.Y.Tick.Marker = dollarTicks
	return newChart("budget", "Time to train against dollars, by generation", p), nil
}

// yCost labels the budget chart's y axis: what a row costs, as
// budget.Row.Cost weighs it.
const yCost = "cost: a commitment's bill (whole terms), else dollars"

// dollarTicks are gonum's default ticks labelled as budget.Dollars.
var dollarTicks = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = budget.Dollars(ts[i].Value)
		}
	}
	return ts
})

// addFront draws the Pareto front through the rows on it, in order of
// time, each ringed.
func addFront(p *plot.Plot, rows []budget.Row) error {
	var front bandXY
	for _, r := range rows {
		if r.Pareto {
			front = append(front, r)
		}
	}
	slices.SortStableFunc(front, func(a, b budget.Row) int { return cmp.Compare(a.TimeToTrainS, b.TimeToTrainS) })
	if len(front) == 0 {
		return nil
	}
	l, s, err := plotter.NewLinePoints(front)
	if err != nil {
		return fmt.Errorf("chart: budget: Pareto front: %w", err)
	}
	l.Color, l.Dashes = colour(7), []vg.Length{vg.Points(4), vg.Points(3)}
	s.Color, s.Shape, s.Radius = colour(7), draw.RingGlyph{}, vg.Points(6)
	p.Add(l, s)
	p.Legend.Add("Pareto front", l, s)
	return nil
}
