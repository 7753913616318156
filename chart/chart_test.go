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

func TestSliceCounts(t *testing.T) {
	for _, tc := range []struct {
		dcn  bool
		n    int
		want string
	}{
		{true, 1, "[1 2 4]"}, // at least 4 on a chip with Multislice
		{true, 2, "[1 2 4]"},
		{true, 6, "[1 2 4 6]"},
		{true, 64, "[1 2 4 8 16 32 64]"},
		{true, 4096, "[1 2 4 8 16 32 64 128 4096]"}, // MaxScalingPoints
		{false, 1, "[1]"},
	} {
		o := plan.DefaultOptions()
		if !tc.dcn {
			o.TPU = "v5p-8"
		}
		r, err := plan.ParseRequest(o)
		if err != nil {
			t.Fatal(err)
		}
		c := r.Multislice.Slice.Chip
		if !tc.dcn {
			c.DCNPerChip = 0
		}
		if got := fmt.Sprint(SliceCounts(c, tc.n)); got != tc.want {
			t.Errorf("SliceCounts(dcn %v, %d) = %s, want %s", tc.dcn, tc.n, got, tc.want)
		}
	}
}

func TestBatches(t *testing.T) {
	for _, tc := range []struct {
		max      int
		minBatch float64
		want     string
	}{
		{512, 0, "[2 4 8 16 32 64 128 256 512]"}, // MaxScalingPoints powers of two
		{500, 0, "[2 4 8 16 32 64 128 256 500]"},
		{1, 0, "[1]"},
		{512, 10, "[2 4 8 16 32 64 128 256 512]"},
		{64, 3, "[1 2 4 8 16 32 64]"},
		{64, 0.5, "[1 2 4 8 16 32 64]"},
		{4096, 3, "[16 32 64 128 256 512 1024 2048 4096]"}, // MaxScalingPoints wins over the minimum
		{65536, 1000, "[256 512 1024 2048 4096 8192 16384 32768 65536]"},
		{65536, 100, "[256 512 1024 2048 4096 8192 16384 32768 65536]"},
		{3000, 300, "[16 32 64 128 256 512 1024 2048 3000]"},
		{3000, 5, "[16 32 64 128 256 512 1024 2048 3000]"},
	} {
		if got := fmt.Sprint(Batches(tc.max, tc.minBatch)); got != tc.want {
			t.Errorf("Batches(%d, %g) = %s, want %s", tc.max, tc.minBatch, got, tc.want)
		}
	}
}

// TestMinBatch checks MinBatch against the Multislice rule's note, which
// states the break-even tokens per slice the plan used.
func TestMinBatch(t *testing.T) {
	p := search(t, func(o *plan.Options) { o.Model = "llama3-70b"; o.TPU = "tpu7x-128"; o.Slices = 2 })
	got := MinBatch(p.Request.Multislice, p.Request.Seq)
	tokens := got * float64(p.Request.Seq) / 2
	var rule string
	for _, n := range p.Reasons {
		if strings.Contains(n.String(), "Multislice batch rule") {
			rule = n.String()
		}
	}
	if rule == "" {
		t.Fatalf("no Multislice batch rule among the reasons %q", p.Reasons)
	}
	m := regexp.MustCompile(`so ([0-9.]+)([kMG]?) tokens per slice break even`).FindStringSubmatch(rule)
	if m == nil {
		t.Fatalf("rule %q states no break-even tokens per slice", rule)
	}
	want, _ := strconv.ParseFloat(m[1], 64)
	want *= map[string]float64{"": 1, "k": 1e3, "M": 1e6, "G": 1e9}[m[2]]
	if math.Abs(tokens-want) > 0.005*want { // the note rounds to 3 digits
		t.Errorf("MinBatch = %g sequences, %g tokens per slice; the rule says %s%s (%q)", got, tokens, m[1], m[2], rule)
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
