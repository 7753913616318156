package chart

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"

	"shardlab/inference"
)

// CurveLabel names a serving layout in a chart's legend: its
// tensor-parallel size, replicas and chips.
func CurveLabel(c inference.Curve) string {
	if len(c.Points) == 0 {
		return fmt.Sprintf("TP %d × DP %d", c.TP, c.DP)
	}
	return fmt.Sprintf("TP %d × DP %d (%d chips)", c.TP, c.DP, c.Points[0].Chips)
}

// Serving is the serving plan's layouts (the curves of
// inference.SweepConcurrency, the chosen layout first) against
// concurrency, on a log₂ axis: the latency chart (time to first token and
// inter-token latency, in milliseconds, with the request's SLOs as dashed
// lines) and the throughput chart (output tokens/s in all and per chip).
// labels name the curves, one each. No curve with two points wraps
// ErrNotApplicable.
func Serving(p inference.Plan, curves []inference.Curve, labels []string) ([]Chart, error) {
	if len(labels) != len(curves) {
		return nil, fmt.Errorf("chart: serving: %d labels for %d curves", len(labels), len(curves))
	}
	n := 0
	for _, c := range curves {
		if len(c.Points) >= 2 {
			n++
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("chart: serving: no layout fits two concurrencies: %w", ErrNotApplicable)
	}
	const x = "concurrent sequences (log₂)"
	ttft := newPlot("Time to first token", x, "TTFT, ms")
	itl := newPlot("Inter-token latency", x, "ITL, ms")
	tok := newPlot("Output tokens/s", x, "output tokens/s")
	chip := newPlot("Output tokens/s per chip", x, "output tokens/s per chip")
	series := []struct {
		p *plot.Plot
		y func(inference.Layout) float64
	}{
		{ttft, func(l inference.Layout) float64 { return float64(l.TTFT.Microseconds()) / 1000 }},
		{itl, func(l inference.Layout) float64 { return float64(l.ITL.Microseconds()) / 1000 }},
		{tok, func(l inference.Layout) float64 { return l.TokensPerSecond }},
		{chip, func(l inference.Layout) float64 { return l.PerChip }},
	}
	for _, s := range series {
		if err := plotCurves(s.p, curves, labels, s.y); err != nil {
			return nil, err
		}
	}
	r := p.Request
	if r.TTFTSLO > 0 {
		hline(ttft, float64(r.TTFTSLO.Microseconds())/1000, "TTFT SLO "+r.TTFTSLO.String(), len(curves))
		ttft.Y.Max = max(ttft.Y.Max, niceMax(1.2*float64(r.TTFTSLO.Microseconds())/1000))
	}
	if r.ITLSLO > 0 {
		hline(itl, float64(r.ITLSLO.Microseconds())/1000, "ITL SLO "+r.ITLSLO.String(), len(curves))
		itl.Y.Max = max(itl.Y.Max, niceMax(1.2*float64(r.ITLSLO.Microseconds())/1000))
	}
	what := fmt.Sprintf("%s on %s", r.Model.Name, r.Slice.AcceleratorType())
	return []Chart{
		newChart("latency", "Latency against concurrency: "+what, ttft, itl),
		newChart("throughput", "Throughput against concurrency: "+what, tok, chip),
	}, nil
}

// plotCurves draws y of every curve with at least two points against
// concurrency on p, labelled, on a log₂ x axis and a y axis from 0 with
// room above the highest point.
func plotCurves(p *plot.Plot, curves []inference.Curve, labels []string, y func(inference.Layout) float64) error {
	top := 0.0
	for i, c := range curves {
		if len(c.Points) < 2 {
			continue
		}
		xys := make(plotter.XYs, len(c.Points))
		for j, l := range c.Points {
			xys[j] = plotter.XY{X: float64(l.Concurrency), Y: y(l)}
			top = max(top, xys[j].Y)
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("chart: serving: %s: %w", labels[i], err)
		}
		l.Color, pts.Color, pts.Shape = colour(i), colour(i), draw.CircleGlyph{}
		p.Add(l, pts)
		p.Legend.Add(labels[i], l, pts)
	}
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, log2Ticks
	p.Y.Min, p.Y.Max, p.Y.Tick.Marker = 0, niceMax(top*1.4), shortTicks
	return nil
}
