package chart

import (
	"errors"
	"fmt"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"shardlab/hw"
	"shardlab/internal/errtext"
	"shardlab/mesh"
	"shardlab/plan"
	"shardlab/schedule"
	"shardlab/unit"
)

// MaxLayouts is the most layouts the memory and step charts compare: the
// chosen one, then the runners-up of its tier, then the best of each other
// tier.
const MaxLayouts = 6

// Layouts are the layouts the memory and step charts compare, chosen
// first, with their labels: "#4 data=2,fsdp=32 save_dot_ex… b64" and so
// on, the rank the plan's top table gives ("chosen", and "alt" for
// another tier's best), the mesh, the remat policy and the global batch,
// which differs between layouts (review 152 #4: two layouts whose mesh
// and policy were cut alike read the same).
func Layouts(p plan.Plan) ([]plan.Candidate, []string) {
	name := func(c plan.Candidate) string {
		return short(c.Estimate.Mesh.String(), 24) + " " + short(string(c.Estimate.Job.Remat), 12) + fmt.Sprintf(" b%d", c.Estimate.Job.GlobalBatch)
	}
	cs := []plan.Candidate{p.Best}
	labels := []string{"chosen " + name(p.Best)}
	same := func(a, b plan.Candidate) bool {
		return a.Estimate.Mesh.String() == b.Estimate.Mesh.String() && a.Estimate.Job.Remat == b.Estimate.Job.Remat &&
			a.Estimate.Job.MicroBatches == b.Estimate.Job.MicroBatches && a.Estimate.Job.GlobalBatch == b.Estimate.Job.GlobalBatch
	}
	for i, c := range p.Top {
		if len(cs) < MaxLayouts && !same(c, p.Best) {
			cs, labels = append(cs, c), append(labels, fmt.Sprintf("#%d %s", i+1, name(c)))
		}
	}
	for _, c := range p.Alternatives {
		if len(cs) < MaxLayouts {
			cs, labels = append(cs, c), append(labels, "alt "+name(c))
		}
	}
	return cs, labels
}

// stacked adds a stacked bar chart to p: one bar per label, one segment
// per series, in order from the bottom.
func stacked(p *plot.Plot, labels, series []string, values [][]float64) error {
	var below *plotter.BarChart
	for i, name := range series {
		vs := make(plotter.Values, len(labels))
		for j := range labels {
			vs[j] = values[j][i]
		}
		bc, err := plotter.NewBarChart(vs, vg.Points(min(40, 260/float64(len(labels)))))
		if err != nil {
			return fmt.Errorf("chart: %s: %w", name, err)
		}
		bc.Color = colour(i)
		bc.LineStyle.Width = 0
		if below != nil {
			bc.StackOn(below)
		}
		p.Add(bc)
		p.Legend.Add(name, bc)
		below = bc
	}
	p.NominalX(labels...)
	// the bars' centres are 0 to n-1: half a slot each side keeps the
	// first and last bars inside the plot, and a line across it (the
	// usable HBM) across them (review 152: it stopped at the last bar's
	// middle, and the first bar crossed the y axis)
	p.X.Min, p.X.Max = -0.5, float64(len(labels))-0.5
	p.X.Tick.Label.Rotation = 0.35
	p.X.Tick.Label.XAlign = text.XRight
	p.X.Tick.Label.YAlign = text.YCenter
	p.X.Tick.Label.Font.Size = 7
	return nil
}

const gib = 1 << 30

// Memory is HBM per chip by component (weights, gradients, optimizer
// state, activations, transient buffers) for each of Layouts, against the
// usable HBM.
func Memory(p plan.Plan) (Chart, error) {
	cs, labels := Layouts(p)
	values := make([][]float64, len(cs))
	for i, c := range cs {
		m := c.Estimate.Memory
		values[i] = []float64{float64(m.Weights) / gib, float64(m.Gradients) / gib, float64(m.Optimizer) / gib,
			float64(m.Activations) / gib, float64(m.Transient) / gib}
	}
	usable := p.Best.Estimate.Memory.Usable
	pl := newPlot(fmt.Sprintf("HBM per chip (usable %v of %v)", usable, p.Best.Estimate.Memory.HBM), "", "GiB")
	if err := stacked(pl, labels, []string{"weights", "gradients", "optimizer", "activations", "transient"}, values); err != nil {
		return Chart{}, err
	}
	hline(pl, float64(usable)/gib, "usable HBM", 7)
	top := float64(usable) / gib
	for _, v := range values {
		top = max(top, v[0]+v[1]+v[2]+v[3]+v[4])
	}
	pl.Y.Min, pl.Y.Max = 0, niceMax(top*1.45) // room for the legend
	return newChart("memory", "HBM per chip by component", pl), nil
}

// StepParts names the parts of a step, bottom first, as Step and the web
// page's bars stack them.
var StepParts = []string{"compute", "exposed ICI", "exposed DCN", "slice sync", "pipeline bubble"}

// PerSequence is c's step time per sequence of its global batch, in
// seconds, split as StepParts, and their sum: the step and each part ÷
// the global batch. The layouts a plan compares run different global
// batches (review 152 #4: 25.7 s for 128 sequences against 13.2 s for
// 64, which read as twice as fast and is slower per token). On the
// plan's chips at its sequence length, time per sequence is seq ÷ (chips
// × tokens/s per chip), the rate the plan's tables give, so the bars
// compare as those rates do.
func PerSequence(c plan.Candidate) (parts []float64, total float64) {
	t, b := c.Estimate.Time, float64(max(c.Estimate.Job.GlobalBatch, 1))
	parts = []float64{t.Compute.Seconds() / b, t.ICI.Seconds() / b, t.DCN.Seconds() / b, t.Sync.Seconds() / b, t.Bubble.Seconds() / b}
	return parts, t.Step.Seconds() / b
}

// Step is the step time per sequence of each of Layouts' global batches
// (PerSequence), split into compute, exposed ICI, exposed DCN, slice
// sync and pipeline bubble.
func Step(p plan.Plan) (Chart, error) {
	cs, labels := Layouts(p)
	_, best := PerSequence(p.Best)
	scale, unitName := 1.0, "s"
	if best < 1 {
		scale, unitName = 1e3, "ms"
	}
	values := make([][]float64, len(cs))
	top := 0.0
	for i, c := range cs {
		parts, total := PerSequence(c)
		values[i] = make([]float64, len(parts))
		for j, v := range parts {
			values[i][j] = v * scale
		}
		top = max(top, total*scale)
	}
	e := p.Best.Estimate
	pl := newPlot(fmt.Sprintf("Step time per sequence (chosen: %v for a batch of %d)", unit.Seconds(e.Time.Step.Seconds()), e.Job.GlobalBatch), "", unitName+" per sequence")
	if err := stacked(pl, labels, StepParts, values); err != nil {
		return Chart{}, err
	}
	pl.Y.Min, pl.Y.Max = 0, niceMax(top*1.45)
	return newChart("step", "Step time per sequence of each layout's global batch, by what the chip waits on", pl), nil
}

// point is one search of a scaling chart.
type point struct {
	x, mfu, tokens float64
}

// scalingPlots is MFU and tokens/s per chip against x.
func scalingPlots(pts []point, title, xLabel string) (*plot.Plot, *plot.Plot, error) {
	mfu := newPlot("MFU "+title, xLabel, "MFU, % of the "+string(hw.BF16)+" peak")
	tok := newPlot("Tokens/s per chip "+title, xLabel, "tokens/s per chip")
	m, t := make(plotter.XYs, len(pts)), make(plotter.XYs, len(pts))
	for i, p := range pts {
		m[i] = plotter.XY{X: p.x, Y: 100 * p.mfu}
		t[i] = plotter.XY{X: p.x, Y: p.tokens}
	}
	for i, pair := range []struct {
		p   *plot.Plot
		xys plotter.XYs
	}{{mfu, m}, {tok, t}} {
		l, s, err := plotter.NewLinePoints(pair.xys)
		if err != nil {
			return nil, nil, fmt.Errorf("chart: %w", err)
		}
		l.Color, s.Color = colour(i), colour(i)
		s.Shape = draw.CircleGlyph{}
		pair.p.Add(l, s)
		pair.p.Y.Min = 0
		top := 0.0
		for _, xy := range pair.xys {
			top = max(top, xy.Y)
		}
		pair.p.Y.Max = niceMax(top * 1.3)
		pair.p.Y.Tick.Marker = shortTicks
	}
	return mfu, tok, nil
}

// sweepPlots is p's sweep of kind (sweep) and its MFU and tokens/s per
// chip plots, the x axis log-scaled by powers of two where there is more
// than one point.
func sweepPlots(p plan.Plan, kind plan.SweepKind, title string) (plan.Sweep, *plot.Plot, *plot.Plot, error) {
	s, err := sweep(p, kind)
	if err != nil {
		return s, nil, nil, err
	}
	pts := make([]point, len(s.Points))
	for i, pt := range s.Points {
		pts[i] = point{pt.X, pt.MFU, pt.TokensPerSecondPerChip}
	}
	mfu, tok, err := scalingPlots(pts, title, s.XLabel)
	if err != nil {
		return s, nil, nil, err
	}
	if len(pts) > 1 {
		for _, pl := range []*plot.Plot{mfu, tok} {
			pl.X.Scale, pl.X.Tick.Marker = plot.LogScale{}, log2Ticks
		}
	}
	return s, mfu, tok, nil
}

// Slices is MFU and tokens/s per chip against the slice count
// (plan.SweepOf, plan.SweepSlices). A plan asked for one mesh does not
// scale: the error wraps ErrNotApplicable.
func Slices(p plan.Plan) (Chart, error) {
	_, mfu, tok, err := sweepPlots(p, plan.SweepSlices, "against slices")
	if err != nil {
		return Chart{}, err
	}
	return newChart("slices", "Scaling with the slice count", mfu, tok), nil
}

// Batch is MFU and tokens/s per chip against the global batch
// (plan.SweepOf, plan.SweepBatch), with the Multislice minimum batch and
// the max global batch marked.
func Batch(p plan.Plan) (Chart, error) {
	s, mfu, tok, err := sweepPlots(p, plan.SweepBatch, "against global batch")
	if err != nil {
		return Chart{}, err
	}
	for _, pl := range []*plot.Plot{mfu, tok} {
		if s.MinBatch > 0 {
			newVLine(pl, s.MinBatch, fmt.Sprintf("Multislice minimum %.0f", s.MinBatch), 4)
		}
		newVLine(pl, float64(s.MaxBatch), fmt.Sprintf("max global batch %d", s.MaxBatch), 7)
	}
	return newChart("batch", "Scaling with the global batch", mfu, tok), nil
}

// sweep is plan.SweepOf with a sweep that does not apply wrapping
// ErrNotApplicable.
func sweep(p plan.Plan, kind plan.SweepKind) (plan.Sweep, error) {
	s, err := plan.SweepOf(p, kind)
	if errors.Is(err, plan.ErrNoSweep) {
		return s, fmt.Errorf("chart: %w: %w", err, ErrNotApplicable)
	}
	if err != nil {
		return s, fmt.Errorf("chart: %w", err)
	}
	return s, nil
}

// MaxPipelineOps bounds the ops the pipeline chart draws.
const MaxPipelineOps = 4096

// Pipeline is the chosen layout's pipeline schedule as a timeline: each
// stage's forward and backward passes of each micro-batch, simulated by
// package schedule with a backward twice as long as a forward. A plan
// without a pipeline, or with more than MaxPipelineOps passes, has none:
// the error wraps ErrNotApplicable.
func Pipeline(p plan.Plan) (Chart, error) {
	e := p.Best.Estimate
	stages := e.Mesh.Size(mesh.Pipeline)
	if stages < 2 {
		return Chart{}, fmt.Errorf("chart: pipeline: the layout has no pipeline: %w", ErrNotApplicable)
	}
	v := max(e.Job.Chunks, 1)
	if ops := 2 * stages * e.Job.MicroBatches * v; ops > MaxPipelineOps {
		return Chart{}, fmt.Errorf("chart: pipeline: %d passes, more than the %d drawn: %w", ops, MaxPipelineOps, ErrNotApplicable)
	}
	kind := e.Job.Schedule
	if kind == "" {
		kind = schedule.OneFOneB
	}
	s, err := schedule.NewChunked(kind, stages, e.Job.MicroBatches, v)
	if err != nil {
		return Chart{}, fmt.Errorf("chart: pipeline: %w", err)
	}
	tl := s.Simulate(1, 2, 0)
	chunks := ""
	if kind.Chunked() {
		chunks = ", " + unit.Plural(v, "chunk") + " per stage"
	}
	pl := newPlot(fmt.Sprintf("Pipeline: %s, %d stages%s, %s, bubble %.1f%%", kind, stages, chunks,
		unit.Plural(e.Job.MicroBatches, "micro-batch"), 100*tl.Bubble()), "time (forward passes of a stage)", "stage")
	pl.Add(&timeline{tl: tl, stages: stages})
	pl.Legend.Add("forward", &swatch{colour(0)})
	pl.Legend.Add("backward", &swatch{colour(1)})
	var ticks plot.ConstantTicks
	for d := range stages {
		if stages <= 16 || d%(stages/8) == 0 {
			ticks = append(ticks, plot.Tick{Value: float64(stages-1-d) + 0.5, Label: strconv.Itoa(d)})
		}
	}
	pl.Y.Tick.Marker = ticks
	pl.Y.Min, pl.Y.Max = 0, float64(stages)*1.25 // room for the legend
	pl.X.Min, pl.X.Max = 0, tl.Makespan
	c := newChart("pipeline", "Pipeline schedule", pl)
	c.Width = 2 * plotWidth
	return c, nil
}

// timeline draws a simulated schedule: stage d is the row stages-1-d.
type timeline struct {
	tl     schedule.Timeline
	stages int
}

func (t *timeline) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	for d, spans := range t.tl.Spans {
		y := float64(t.stages - 1 - d)
		for _, s := range spans {
			col := colour(0)
			if s.Op.Pass == schedule.Backward {
				col = colour(1)
			}
			r := vg.Rectangle{Min: vg.Point{X: tx(s.Start), Y: ty(y + 0.1)}, Max: vg.Point{X: tx(s.End), Y: ty(y + 0.9)}}
			c.SetColor(col)
			c.Fill(r.Path())
			c.SetColor(colour(7))
			c.SetLineWidth(vg.Points(0.3))
			c.Stroke(r.Path())
		}
	}
}

func (t *timeline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return 0, t.tl.Makespan, 0, float64(t.stages)
}

// swatch is a legend entry of one colour.
type swatch struct {
	c interface{ RGBA() (r, g, b, a uint32) }
}

func (s *swatch) Thumbnail(c *draw.Canvas) {
	c.SetColor(s.c)
	c.Fill(c.Rectangle.Path())
}

// All draws every chart that applies to the plan, in the order memory,
// step, slices, batch, pipeline; skipped says why the others do not apply
// ("pipeline: the layout has no pipeline").
func All(p plan.Plan) (charts []Chart, skipped []string, err error) {
	return Draw(p, Memory, Step, Slices, Batch, Pipeline)
}

// Draw draws the charts of the plan that apply, in the order given, as
// All does for every chart: skipped says why the others do not apply; any
// other error stops it.
func Draw(p plan.Plan, draws ...func(plan.Plan) (Chart, error)) (charts []Chart, skipped []string, err error) {
	for _, f := range draws {
		c, err := f(p)
		switch {
		case errors.Is(err, ErrNotApplicable):
			skipped = append(skipped, errtext.Detail(err))
		case err != nil:
			return nil, nil, err
		default:
			charts = append(charts, c)
		}
	}
	return charts, skipped, nil
}
