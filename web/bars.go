package web

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// The page draws its bar charts itself, as SVG: horizontal bars, one row
// per layout, so that a layout's name is written in full on its row
// (wrapped at the commas of its mesh, never cut); the legend above the
// plot, off the data; each bar's value at its end and its segments'
// values inside them where they fit; the axis with its unit; a reference
// line (usable HBM) labelled above the plot; the planner's error band as
// a whisker over each bar. Sizes are estimates of text widths, which
// TestBrowserCharts holds against what the browser lays out.

// hbar is one row of a bar chart.
type hbar struct {
	Label  string    // the row's name, wrapped at commas and spaces
	Values []float64 // the segments, in the chart's units, bottom first
	// Low and High are the ends of the error band on the bar's total;
	// both 0 for none.
	Low, High float64
	// Bold marks the chosen layout's row.
	Bold bool
}

// hchart is a horizontal bar chart.
type hchart struct {
	Name, Title string
	Unit        string   // of the values, after each number: "GiB", "ms", "%"
	Axis        string   // the axis title, with the unit
	Series      []string // the segments' names
	Bars        []hbar
	// Line is a reference value drawn across the rows, LineLabel its name.
	Line      float64
	LineLabel string
	// BandLabel names the whiskers in the legend; "" when no bar has one.
	BandLabel string
}

// palette is Okabe and Ito's colour-blind-safe palette, with whether a
// colour takes dark text.
var palette = []struct {
	fill string
	dark bool
}{{"#0072B2", false}, {"#E69F00", true}, {"#009E73", false}, {"#CC79A7", true}, {"#56B4E9", true},
	{"#D55E00", false}, {"#F0E442", true}, {"#7F7F7F", false}}

// Sizes of the chart, in px: the font's average character width is an
// over-estimate for the page's sans-serif at 12 px.
const (
	barsWidth  = 640.0
	labelWidth = 210.0 // the row names' column
	valueRoom  = 84.0  // right of the plot, for the bars' values
	charWidth  = 7.0   // an over-estimate of one character at 12 px
	lineHeight = 14.0
	fontSize   = 12
)

// textWidth over-estimates the width of s at the chart's font.
func textWidth(s string) float64 { return charWidth * float64(len([]rune(s))) }

// wrap breaks s into lines of at most width px, after commas or at
// spaces; a word wider than a line is broken.
func wrap(s string, width float64) []string {
	var words []string
	cur := ""
	for _, r := range s {
		cur += string(r)
		if r == ',' || r == ' ' {
			words, cur = append(words, cur), ""
		}
	}
	if cur != "" {
		words = append(words, cur)
	}
	max := int(width / charWidth)
	var lines []string
	line := ""
	for _, w := range words {
		for len([]rune(w)) > max { // a word longer than a line
			if line != "" {
				lines, line = append(lines, strings.TrimSpace(line)), ""
			}
			rs := []rune(w)
			lines, w = append(lines, string(rs[:max])), string(rs[max:])
		}
		if len([]rune(line+w)) > max && line != "" {
			lines, line = append(lines, strings.TrimSpace(line)), ""
		}
		line += w
	}
	if strings.TrimSpace(line) != "" {
		lines = append(lines, strings.TrimSpace(line))
	}
	return lines
}

// niceStep is a round tick step (1, 2 or 5 × 10^k) for an axis of span.
func niceStep(span float64) float64 {
	if !(span > 0) {
		return 1
	}
	raw := span / 5
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// number writes v with three significant digits, no exponent.
func number(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// svgWriter collects an SVG's elements.
type svgWriter struct{ b strings.Builder }

func (w *svgWriter) f(format string, a ...any) { fmt.Fprintf(&w.b, format, a...) }

func esc(s string) string { return html.EscapeString(s) }

// SVG draws the chart: the legend above the plot, a row per bar, the
// reference line and the axis below, top to bottom in running
// coordinates.
func (c hchart) SVG() template.HTML {
	x0, x1 := labelWidth, barsWidth-valueRoom
	var legend, rows, axis svgWriter
	y := c.legend(&legend)
	if c.LineLabel != "" {
		y += lineHeight + 2 // the reference line's label, above the plot
	}
	top := y
	hi, step := c.scale()
	px := func(v float64) float64 { return x0 + (x1-x0)*v/hi }
	for _, b := range c.Bars {
		y += c.row(&rows, b, y, px)
	}
	bottom := y
	if c.LineLabel != "" {
		c.refLine(&rows, px(c.Line), top, bottom)
	}
	c.axis(&axis, px, top, bottom, hi, step)
	height := bottom + 44
	var w svgWriter
	w.f(`<svg class="bars" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="%s" font-family="system-ui, sans-serif" font-size="%d">`,
		barsWidth, height, barsWidth, height, esc(c.Title), fontSize)
	w.b.WriteString(axis.b.String()) // grid under the bars
	w.b.WriteString(legend.b.String())
	w.b.WriteString(rows.b.String())
	w.f(`</svg>`)
	return template.HTML(w.b.String())
}

// legend writes the legend, in rows above the plot: a swatch per series
// and the whisker's meaning. It returns the y where the plot starts.
func (c hchart) legend(w *svgWriter) float64 {
	type item struct {
		fill, text string
		whisker    bool
	}
	var items []item
	for i, s := range c.Series {
		items = append(items, item{fill: palette[i%len(palette)].fill, text: s})
	}
	if c.BandLabel != "" {
		items = append(items, item{text: c.BandLabel, whisker: true})
	}
	y := 6.0
	x := 8.0
	for _, it := range items {
		wd := 18 + textWidth(it.text) + 14
		if x+wd > barsWidth-8 && x > 8 {
			x, y = 8, y+lineHeight+4
		}
		if it.whisker {
			w.f(`<path d="M%.1f %.1fh12M%.1f %.1fv8M%.1f %.1fv8" stroke="#222" stroke-width="1.5" fill="none"/>`, x, y+7, x, y+3, x+12, y+3)
		} else {
			w.f(`<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/>`, x, y+1, it.fill)
		}
		w.f(`<text x="%.1f" y="%.1f">%s</text>`, x+18, y+11, esc(it.text))
		x += wd
	}
	return y + lineHeight + 10
}

// scale is the axis's end and tick step: the largest of the bars,
// whiskers and line, rounded up to a tick.
func (c hchart) scale() (hi, step float64) {
	hi = c.Line
	for _, b := range c.Bars {
		t := 0.0
		for _, v := range b.Values {
			t += v
		}
		hi = max(hi, t, b.High)
	}
	step = niceStep(hi)
	return math.Max(step, math.Ceil(hi*1.02/step)*step), step
}

// row writes one bar at y: its wrapped name, its segments with their
// values inside where they fit, its whisker and its total. It returns the
// row's height.
func (c hchart) row(w *svgWriter, b hbar, y float64, px func(float64) float64) float64 {
	lines := wrap(b.Label, labelWidth-16)
	h := math.Max(30, float64(len(lines))*lineHeight+12)
	weight := ""
	if b.Bold {
		weight = ` font-weight="700"`
	}
	ty := y + (h-float64(len(lines))*lineHeight)/2 + 11
	w.f(`<text class="label" x="8" y="%.1f"%s>`, ty, weight)
	for i, l := range lines {
		dy := 0.0
		if i > 0 {
			dy = lineHeight
		}
		w.f(`<tspan x="8" dy="%.1f">%s</tspan>`, dy, esc(l))
	}
	w.f(`</text>`)
	bar := 18.0
	by := y + (h-bar)/2
	total := c.segments(w, b, by, bar, px)
	end := px(total)
	if b.High > 0 {
		lo, hiw := px(b.Low), px(b.High)
		cy := by + bar/2
		w.f(`<path class="band" d="M%.1f %.1fH%.1fM%.1f %.1fv10M%.1f %.1fv10" stroke="#222" stroke-width="1.5" fill="none"><title>%s %s to %s %s</title></path>`,
			lo, cy, hiw, lo, cy-5, hiw, cy-5, esc(c.BandLabel), number(b.Low), number(b.High), esc(c.Unit))
		end = math.Max(end, hiw)
	}
	w.f(`<text class="value" x="%.1f" y="%.1f"%s paint-order="stroke" stroke="#fff" stroke-width="3">%s %s</text>`, end+5, by+13, weight, number(total), esc(c.Unit))
	return h
}

// segments writes a bar's stacked segments at by, bar high, and returns
// their total.
func (c hchart) segments(w *svgWriter, b hbar, by, bar float64, px func(float64) float64) float64 {
	at := 0.0
	for i, v := range b.Values {
		if v <= 0 {
			continue
		}
		p := palette[i%len(palette)]
		wd := px(at+v) - px(at)
		tip := fmt.Sprintf("%s: %s %s", c.Series[i], number(v), c.Unit)
		w.f(`<rect class="seg" x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="%s" data-tip="%s"><title>%s</title></rect>`,
			px(at), by, wd, bar, p.fill, esc(tip), esc(tip))
		if s := number(v); textWidth(s)+6 < wd {
			ink := "#fff"
			if p.dark {
				ink = "#000"
			}
			w.f(`<text class="in" x="%.1f" y="%.1f" text-anchor="middle" fill="%s" pointer-events="none">%s</text>`, px(at)+wd/2, by+13, ink, s)
		}
		at += v
	}
	return at
}

// refLine writes the reference line at x lx from top to bottom, labelled
// above the plot.
func (c hchart) refLine(w *svgWriter, lx, top, bottom float64) {
	w.f(`<path class="ref" d="M%.1f %.1fV%.1f" stroke="#C00" stroke-width="1.5" stroke-dasharray="5 3"/>`, lx, top-4, bottom)
	label := fmt.Sprintf("%s %s %s", c.LineLabel, number(c.Line), c.Unit)
	anchor, tx := "middle", lx
	switch {
	case lx+textWidth(label)/2 > barsWidth-4:
		anchor, tx = "end", lx
	case lx-textWidth(label)/2 < 4:
		anchor, tx = "start", lx
	}
	w.f(`<text class="ref-label" x="%.1f" y="%.1f" text-anchor="%s" fill="#C00" style="fill:#C00">%s</text>`, tx, top-8, anchor, esc(label))
}

// axis writes the axis under the plot: its grid, ticks and their values,
// and its title with the unit.
func (c hchart) axis(w *svgWriter, px func(float64) float64, top, bottom, hi, step float64) {
	x0, x1 := labelWidth, barsWidth-valueRoom
	w.f(`<path d="M%.1f %.1fH%.1f" stroke="#444"/>`, x0, bottom, x1)
	decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	for i := 0; float64(i)*step <= hi*1.0001; i++ {
		v := float64(i) * step
		w.f(`<path d="M%.1f %.1fV%.1f" stroke="#ddd"/><path d="M%.1f %.1fv4" stroke="#444"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`,
			px(v), top, bottom, px(v), bottom, px(v), bottom+16, strconv.FormatFloat(v, 'f', decimals, 64))
	}
	w.f(`<text class="axis-title" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, (x0+x1)/2, bottom+34, esc(c.Axis))
}

// Table is the chart's values as an HTML table, a row per bar: what a
// screen reader reads, and the exact figures behind the picture.
func (c hchart) Table() template.HTML {
	var w svgWriter
	w.f(`<table class="values"><caption>%s, %s</caption><thead><tr><th scope="col">row</th>`, esc(c.Title), esc(c.Unit))
	for _, s := range c.Series {
		w.f(`<th scope="col">%s</th>`, esc(s))
	}
	w.f(`<th scope="col">total</th>`)
	if c.BandLabel != "" {
		w.f(`<th scope="col">error band</th>`)
	}
	w.f(`</tr></thead><tbody>`)
	for _, b := range c.Bars {
		w.f(`<tr><th scope="row">%s</th>`, esc(b.Label))
		total := 0.0
		for _, v := range b.Values {
			w.f(`<td>%s</td>`, number(v))
			total += v
		}
		w.f(`<td>%s</td>`, number(total))
		if c.BandLabel != "" {
			w.f(`<td>%s to %s</td>`, number(b.Low), number(b.High))
		}
		w.f(`</tr>`)
	}
	w.f(`</tbody></table>`)
	return template.HTML(w.b.String())
}
