package chart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"shardlab/internal/golden"
	"shardlab/plan"
)

// search plans o over plan.DefaultOptions.
func search(t *testing.T, edit func(*plan.Options)) plan.Plan {
	t.Helper()
	o := plan.DefaultOptions()
	edit(&o)
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

// wellFormed fails unless b is one well-formed XML document with an svg root.
func wellFormed(t *testing.T, name string, b []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: not well-formed XML: %v", name, err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("%s: root element %q, want svg", name, root)
	}
}

func TestAllDefault(t *testing.T) {
	p := search(t, func(o *plan.Options) {})
	charts, skipped, err := All(p)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range charts {
		names = append(names, c.Name)
		b, err := c.SVG()
		if err != nil {
			t.Fatal(err)
		}
		wellFormed(t, c.Name, b)
		if os.Getenv("CHART_OUT") != "" {
			os.WriteFile(os.Getenv("CHART_OUT")+"/"+c.Name+".svg", b, 0o644)
		}
	}
	if got, want := strings.Join(names, " "), "memory step slices batch"; got != want {
		t.Errorf("charts of the default plan = %q, want %q (skipped %q)", got, want, skipped)
	}
	if len(skipped) != 1 || skipped[0] != "pipeline: the layout has no pipeline" {
		t.Errorf("skipped = %q, want the pipeline only", skipped)
	}
	var b bytes.Buffer
	if err := WritePNG(&b, charts...); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("CHART_OUT") != "" {
		var out bytes.Buffer
		WritePNG(&out, charts...)
		os.WriteFile(os.Getenv("CHART_OUT")+"/all.png", out.Bytes(), 0o644)
	}
	w, h := size(charts)
	if got, want := img.Bounds().Dx(), int(w.Dots(96)+0.5); got != want {
		t.Errorf("PNG width %d px, want %d", got, want)
	}
	if got, want := img.Bounds().Dy(), int(h.Dots(96)+0.5); got != want {
		t.Errorf("PNG height %d px, want %d", got, want)
	}
}

func TestPipeline(t *testing.T) {
	p := search(t, func(o *plan.Options) { o.Mesh = "pipeline=4,context=2"; o.Schedule = "1f1b"; o.GlobalBatch = "8" })
	charts, skipped, err := All(p)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range charts {
		names = append(names, c.Name)
	}
	if got, want := strings.Join(names, " "), "memory step pipeline"; got != want {
		t.Errorf("charts of a --mesh pipeline=4 plan = %q, want %q (skipped %q)", got, want, skipped)
	}
	c := charts[len(charts)-1]
	b, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, c.Name, b)
	// every pass is one filled rectangle: 4 stages × m micro-batches × 2
	m := p.Best.Estimate.Job.MicroBatches
	for _, pass := range []struct{ name, fill string }{{"forward", `fill:#0072B2"`}, {"backward", `fill:#E69F00"`}} {
		if got, want := strings.Count(string(b), pass.fill), 4*m+1; got != want {
			t.Errorf("pipeline SVG: %d %s-coloured fills, want %d (4 stages × %d micro-batches, and the legend)", got, pass.name, want, m)
		}
	}
}

func TestNotApplicable(t *testing.T) {
	p := search(t, func(o *plan.Options) { o.Mesh = "data=4,fsdp=2" })
	for _, f := range []func(plan.Plan) (Chart, error){Slices, Batch, Pipeline} {
		if _, err := f(p); !errors.Is(err, ErrNotApplicable) {
			t.Errorf("chart of a --mesh data=4 plan: err = %v, want ErrNotApplicable", err)
		}
	}
}

// TestDeterministic draws the same plan twice and wants the same bytes.
func TestDeterministic(t *testing.T) {
	var out [2][]byte
	for i := range out {
		p := search(t, func(o *plan.Options) {})
		charts, _, err := All(p)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteSVG(&b, charts...); err != nil {
			t.Fatal(err)
		}
		out[i] = b.Bytes()
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Error("two drawings of the same plan differ")
	}
}

// TestGolden keeps a drawing of each kind of chart that needs no search
// (gonum/plot measures text with its own fonts, so the SVG is the same on
// every machine): go test ./chart -update rewrites them.
func TestGolden(t *testing.T) {
	p := search(t, func(o *plan.Options) { o.Mesh = "pipeline=4,context=2"; o.Schedule = "1f1b"; o.GlobalBatch = "8" })
	for _, f := range []func(plan.Plan) (Chart, error){Memory, Step, Pipeline} {
		c, err := f(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.SVG()
		if err != nil {
			t.Fatal(err)
		}
		golden.Compare(t, "mesh_pipeline4_"+c.Name+".svg", b)
	}
}

// TestUsableLineSpansTheBars: the memory chart's dashed usable-HBM line
// runs across every bar (review 152: the plot's x range was the bars'
// centres, so the line ran from the first bar's middle to the last's,
// and the end bars stood half outside the plot). Read from the SVG: the longest dashed path
// against the weights' segments (the first series' colour).
func TestUsableLineSpansTheBars(t *testing.T) {
	p := search(t, func(o *plan.Options) { o.Mesh = "pipeline=4,context=2"; o.Schedule = "1f1b"; o.GlobalBatch = "8" })
	c, err := Memory(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	xs := func(d string) (lo, hi float64) {
		lo, hi = math.Inf(1), math.Inf(-1)
		for _, m := range regexp.MustCompile(`[ML]([0-9.]+),`).FindAllStringSubmatch(d, -1) {
			x, _ := strconv.ParseFloat(m[1], 64)
			lo, hi = min(lo, x), max(hi, x)
		}
		return lo, hi
	}
	lineLo, lineHi := math.Inf(1), math.Inf(-1)
	barLo, barHi := math.Inf(1), math.Inf(-1)
	bars := 0
	for _, m := range regexp.MustCompile(`<path d="([^"]+)" style="([^"]+)"`).FindAllStringSubmatch(string(b), -1) {
		lo, hi := xs(m[1])
		switch {
		case strings.Contains(m[2], "stroke-dasharray") && hi-lo > lineHi-lineLo:
			lineLo, lineHi = lo, hi
		case m[2] == "fill:"+hexColour(colour(0)):
			barLo, barHi, bars = min(barLo, lo), max(barHi, hi), bars+1
		}
	}
	if bars < 2 || !(lineLo <= barLo && lineHi >= barHi) {
		t.Errorf("usable line spans x %g to %g, %d bars %g to %g: want it across them all", lineLo, lineHi, bars, barLo, barHi)
	}
}

// hexColour spells c as the SVG does (#0072B2).
func hexColour(c interface{ RGBA() (r, g, b, a uint32) }) string {
	r, g, bl, _ := c.RGBA()
	return fmt.Sprintf("#%02X%02X%02X", r>>8, g>>8, bl>>8)
}

// TestPerSequenceIsTheRate: the step chart's bar of a layout is its step
// per sequence, which on the plan's chips at its sequence length is seq
// ÷ (chips × tokens/s per chip), the rate cost.Estimate carries (a second
// computation); its parts sum to it. Review 152 #4: the bars were the
// steps at each layout's own global batch.
func TestPerSequenceIsTheRate(t *testing.T) {
	p := search(t, func(o *plan.Options) { o.Model = "llama3-70b"; o.TPU = "v5p-128" })
	cs, labels := Layouts(p)
	batches := map[int]bool{}
	for i, c := range cs {
		e := c.Estimate
		batches[e.Job.GlobalBatch] = true
		parts, total := PerSequence(c)
		want := float64(e.Job.Seq) / (float64(e.Mesh.Chips()) * e.TokensPerSecondPerChip)
		sum := 0.0
		for _, v := range parts {
			sum += v
		}
		if math.Abs(total-want) > 1e-9*want || math.Abs(sum-total) > 1e-3*total {
			t.Errorf("%s: %g s a sequence, parts sum to %g; want seq / (chips × tokens/s per chip) = %g", labels[i], total, sum, want)
		}
		if b := fmt.Sprintf(" b%d", e.Job.GlobalBatch); !strings.HasSuffix(labels[i], b) {
			t.Errorf("label %q lacks its global batch %q", labels[i], b)
		}
	}
	if len(batches) < 2 {
		t.Errorf("layouts at batches %v: want the review's case, layouts at different global batches", batches)
	}
}
