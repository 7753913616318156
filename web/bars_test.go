package web

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"shardlab/plan"
)

// TestWrap: lines stay within the width and keep every character.
func TestWrap(t *testing.T) {
	for _, s := range []string{
		"chosen: data=2(dcn),fsdp=64,tensor=4,pipeline=2, remat save_dot_except_mlp, 8 micro-batches (FSDP inside, FSDP across slices)",
		"layer backward (MLP down-projection)", "x", strings.Repeat("a", 80), "",
	} {
		lines := wrap(s, labelWidth-16)
		for _, l := range lines {
			if textWidth(l) > labelWidth-16 {
				t.Errorf("wrap(%q): line %q wider than %v px", s, l, labelWidth-16)
			}
		}
		if got, want := strings.ReplaceAll(strings.Join(lines, ""), " ", ""), strings.ReplaceAll(s, " ", ""); got != want {
			t.Errorf("wrap(%q) = %q, lost characters", s, lines)
		}
	}
}

func TestNiceStep(t *testing.T) {
	// hand-worked: span/5 rounded up to 1, 2 or 5 × 10^k
	for span, want := range map[float64]float64{100: 20, 85.5: 20, 27.2: 10, 7: 2, 0.3: 0.1, 1: 0.2, 61.9: 20} {
		if got := niceStep(span); math.Abs(got-want) > 1e-12 {
			t.Errorf("niceStep(%g) = %g, want %g", span, got, want)
		}
	}
}

// searched plans o.
func searched(t *testing.T, o plan.Options) plan.Plan {
	t.Helper()
	r, err := plan.ParseRequest(o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Search(r)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPlanBars holds the page's bars to the plan's own figures: each
// memory bar sums to cost's Memory.Total, the peak phase's bar to the
// same total (cost sums components; the phases list buffers: two
// computations), the MFU bars and their whiskers to the plan's MFU and
// band (plan JSON's band for the chosen); TestStepBarsPerSequence the
// step bars.
func TestPlanBars(t *testing.T) {
	o := plan.DefaultOptions()
	o.Model, o.TPU, o.Slices = "llama3-70b", "v5p-128", 2
	p := searched(t, o)
	cs, labels := layoutLabels(p)
	sum := func(vs []float64) float64 {
		s := 0.0
		for _, v := range vs {
			s += v
		}
		return s
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	mem := memoryBars(p)
	for i, b := range mem.Bars {
		if want := float64(cs[i].Estimate.Memory.Total()) / gib; !near(sum(b.Values), want) {
			t.Errorf("memory bar %q sums to %g GiB, want %g", b.Label, sum(b.Values), want)
		}
		if b.Label != labels[i] || !strings.Contains(b.Label, cs[i].Estimate.Mesh.String()) {
			t.Errorf("memory bar %d labelled %q, want the full mesh %s", i, b.Label, cs[i].Estimate.Mesh)
		}
	}
	if want := float64(p.Best.Estimate.Memory.Usable) / gib; mem.Line != want || mem.LineLabel == "" {
		t.Errorf("usable line at %g (%q), want %g labelled", mem.Line, mem.LineLabel, want)
	}
	ph := phaseBars(p)
	peak := 0
	for _, b := range ph.Bars {
		if b.Bold {
			peak++
			if want := float64(p.Best.Estimate.Memory.Total()) / gib; !near(sum(b.Values), want) {
				t.Errorf("peak phase %q sums to %g GiB, want the chosen layout's total %g", b.Label, sum(b.Values), want)
			}
		}
	}
	if peak != 1 || len(ph.Bars) != len(p.Best.Estimate.Memory.Phases) {
		t.Errorf("%d peak phases of %d bars, want 1 of %d", peak, len(ph.Bars), len(p.Best.Estimate.Memory.Phases))
	}
	j := p.JSON(label)
	mf := mfuBars(p)
	if j.Band == nil || !near(mf.Bars[0].Values[0], 100*j.MFU) || !near(mf.Bars[0].Low, 100*j.Band.MFULow) || !near(mf.Bars[0].High, 100*j.Band.MFUHigh) {
		t.Errorf("chosen MFU bar %v [%g, %g], want %g in [%g, %g] as plan JSON says", mf.Bars[0].Values, mf.Bars[0].Low, mf.Bars[0].High, 100*j.MFU, 100*j.Band.MFULow, 100*j.Band.MFUHigh)
	}
	// each chart is well-formed SVG that writes every label line in full
	for _, c := range planBars(p) {
		svg := string(c.SVG())
		dec := xml.NewDecoder(strings.NewReader(svg))
		for {
			if _, err := dec.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: not well-formed SVG: %v", c.Name, err)
			}
		}
		for _, b := range c.Bars {
			for _, l := range wrap(b.Label, labelWidth-16) {
				if !strings.Contains(svg, ">"+xmlText(l)+"<") {
					t.Errorf("%s: label line %q not drawn", c.Name, l)
				}
			}
		}
		if !strings.Contains(svg, xmlText(c.Axis)) {
			t.Errorf("%s: no axis title %q", c.Name, c.Axis)
		}
	}
}

func xmlText(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return strings.ReplaceAll(b.String(), "&#39;", "&#39;")
}

// TestBarsTable: each bar chart's table has a row per bar with its total
// and band, as the picture draws them.
func TestBarsTable(t *testing.T) {
	o := plan.DefaultOptions()
	p := searched(t, o)
	for _, c := range planBars(p) {
		tab := string(c.Table())
		if n := strings.Count(tab, `<th scope="row">`); n != len(c.Bars) {
			t.Errorf("%s: %d rows, want %d", c.Name, n, len(c.Bars))
		}
		for _, b := range c.Bars {
			total := 0.0
			for _, v := range b.Values {
				total += v
			}
			row := `<th scope="row">` + xmlText(b.Label) + `</th>`
			i := strings.Index(tab, row)
			if i < 0 {
				t.Errorf("%s: no row %q", c.Name, b.Label)
				continue
			}
			line, _, _ := strings.Cut(tab[i:], "</tr>")
			if !strings.Contains(line, "<td>"+number(total)+"</td>") {
				t.Errorf("%s: row %q lacks its total %s: %s", c.Name, b.Label, number(total), line)
			}
			if c.BandLabel != "" && !strings.Contains(line, number(b.Low)+" to "+number(b.High)) {
				t.Errorf("%s: row %q lacks its band", c.Name, b.Label)
			}
		}
	}
}

// TestStepBarsPerSequence: each step bar is the layout's step per
// sequence of its own global batch (review 152 #4: the layouts' batches
// differ, and 13.2 s for 64 read as twice as fast as 25.7 s for 128), by
// hand from the step, its batch in its label, and its band holds it.
func TestStepBarsPerSequence(t *testing.T) {
	o := plan.DefaultOptions()
	o.Model, o.TPU = "llama3-70b", "v5p-128"
	p := searched(t, o)
	cs, _ := layoutLabels(p)
	sum := func(vs []float64) float64 {
		s := 0.0
		for _, v := range vs {
			s += v
		}
		return s
	}
	st := stepBars(p)
	for i, b := range st.Bars {
		e := cs[i].Estimate
		step := e.Time.Step.Seconds() / float64(e.Job.GlobalBatch)
		if st.Unit == "ms" {
			step *= 1e3
		}
		if math.Abs(sum(b.Values)-step) > 1e-6*step || !strings.Contains(b.Label, fmt.Sprintf("global batch %d", e.Job.GlobalBatch)) {
			t.Errorf("step bar %q sums to %g %s, want the step per sequence %g, its batch named", b.Label, sum(b.Values), st.Unit, step)
		}
		if !(b.Low < step && step < b.High) {
			t.Errorf("step bar %q: band %g to %g does not hold the step %g", b.Label, b.Low, b.High, step)
		}
	}
}
