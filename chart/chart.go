// Package chart draws a plan as pictures with gonum/plot: HBM per chip by
// component against the usable HBM, the step time by what the chip waits
// on, MFU and tokens/s per chip against the slice count and the global
// batch (each point a full plan.Search), and the pipeline schedule as a
// timeline; and a budget's time to train against dollars by generation,
// its Pareto front ringed. It computes no cost of its own: every number comes from plan,
// cost, collective, schedule and budget. Charts render as SVG or PNG to an
// io.Writer; the CLI (plan --svg, --png, --html) and the web handler use
// the same charts.
package chart

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart is one figure: one or more plots side by side, with a name that
// identifies it (memory, step, slices, batch, pipeline) and a title.
type Chart struct {
	Name  string
	Title string
	// Width and Height are the figure's size.
	Width, Height vg.Length
	plots         []*plot.Plot
}

// The size of a figure of one plot; a figure of two is twice as wide.
const (
	plotWidth  = 5.5 * vg.Inch
	plotHeight = 3.4 * vg.Inch
)

// newChart is a figure of the plots side by side.
func newChart(name, title string, plots ...*plot.Plot) Chart {
	return Chart{Name: name, Title: title, Width: plotWidth * vg.Length(len(plots)), Height: plotHeight, plots: plots}
}

// draw draws the chart's plots side by side on dc.
func (c Chart) draw(dc draw.Canvas) {
	tiles := draw.Tiles{Rows: 1, Cols: len(c.plots), PadX: vg.Millimeter * 4, PadTop: vg.Millimeter * 2,
		PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	cs := plot.Align([][]*plot.Plot{c.plots}, tiles, dc)
	for i, p := range c.plots {
		p.Draw(cs[0][i])
	}
}

// WriteSVG writes the chart as an SVG document. Its fonts are named, not
// embedded: a browser draws the text in its own fonts.
func (c Chart) WriteSVG(w io.Writer) error { return WriteSVG(w, c) }

// WritePNG writes the chart as a PNG image.
func (c Chart) WritePNG(w io.Writer) error { return WritePNG(w, c) }

// SVG is the chart as an SVG document.
func (c Chart) SVG() ([]byte, error) {
	var b bytes.Buffer
	err := c.WriteSVG(&b)
	return b.Bytes(), err
}

// sheet draws the charts one under the other on a canvas of their size.
func sheet(cv vg.CanvasSizer, charts []Chart) {
	dc := draw.New(cv)
	_, h := cv.Size()
	top := h
	for _, c := range charts {
		r := dc
		r.Rectangle = vg.Rectangle{Min: vg.Point{X: 0, Y: top - c.Height}, Max: vg.Point{X: c.Width, Y: top}}
		c.draw(r)
		top -= c.Height
	}
}

// size is the size of the charts one under the other.
func size(charts []Chart) (w, h vg.Length) {
	for _, c := range charts {
		w, h = max(w, c.Width), h+c.Height
	}
	return w, h
}

// WriteSVG writes the charts one under the other as one SVG document.
func WriteSVG(w io.Writer, charts ...Chart) error {
	if len(charts) == 0 {
		return fmt.Errorf("chart: no charts to write")
	}
	cv := vgsvg.New(size(charts))
	sheet(cv, charts)
	_, err := cv.WriteTo(w)
	return err
}

// WritePNG writes the charts one under the other as one PNG image, at 96
// dots per inch on a white background.
func WritePNG(w io.Writer, charts ...Chart) error {
	if len(charts) == 0 {
		return fmt.Errorf("chart: no charts to write")
	}
	cw, ch := size(charts)
	cv := vgimg.NewWith(vgimg.UseWH(cw, ch), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))
	sheet(cv, charts)
	_, err := vgimg.PngCanvas{Canvas: cv}.WriteTo(w)
	return err
}

// palette is the charts' colours, one per series, in order; colour-blind
// safe (Okabe and Ito).
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{0, 158, 115, 255},   // green
	color.RGBA{204, 121, 167, 255}, // purple
	color.RGBA{213, 94, 0, 255},    // vermilion
	color.RGBA{86, 180, 233, 255},  // sky blue
	color.RGBA{240, 228, 66, 255},  // yellow
	color.RGBA{0, 0, 0, 255},       // black
}

func colour(i int) color.Color { return palette[i%len(palette)] }

// ErrNotApplicable is wrapped by the errors of a chart that does not apply
// to a plan (scaling for a fixed mesh, the pipeline of a plan without
// one).
var ErrNotApplicable = errors.New("chart does not apply")

// newPlot is a plot with the charts' fonts and a title.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = 11
	p.X.Label.Text, p.Y.Label.Text = x, y
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = 9
		a.Tick.Label.Font.Size = 8
	}
	p.Legend.TextStyle.Font.Size = 8
	p.Legend.Top = true
	return p
}

// short shortens a label to n runes, with an ellipsis.
func short(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// niceMax is a round number at or above v, for an axis's top.
func niceMax(v float64) float64 {
	if !(v > 0) {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

// hline is a dashed horizontal line at y across the plot, in the legend
// as name.
func hline(p *plot.Plot, y float64, name string, i int) {
	f := plotter.NewFunction(func(float64) float64 { return y })
	f.Color = colour(i)
	f.Width = vg.Points(1.2)
	f.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(f)
	p.Legend.Add(name, f)
}

// vline is a dashed vertical line at x across the plot's y range, in the
// legend as name.
type vline struct {
	x    float64
	name string
	draw.LineStyle
}

func newVLine(p *plot.Plot, x float64, name string, i int) {
	l := &vline{x: x, name: name, LineStyle: draw.LineStyle{Color: colour(i), Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}}
	p.Add(l)
	p.Legend.Add(name, l)
}

func (l *vline) Plot(c draw.Canvas, p *plot.Plot) {
	tx, _ := p.Transforms(&c)
	x := tx(l.x)
	c.StrokeLine2(l.LineStyle, x, c.Min.Y, x, c.Max.Y)
}

func (l *vline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return l.x, l.x, math.Inf(1), math.Inf(-1)
}

func (l *vline) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(l.LineStyle, c.Min.X, y, c.Max.X, y)
}

// shortTicks are gonum's default ticks labelled without trailing zeros
// (2500, not 2500.00).
var shortTicks = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', -1, 64)
		}
	}
	return ts
})

// log2Ticks marks the powers of two of a log-scaled axis.
var log2Ticks = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for v := math.Exp2(math.Floor(math.Log2(lo))); v <= hi*1.0001; v *= 2 {
		if v >= lo*0.9999 {
			ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
		}
	}
	return ts
})
