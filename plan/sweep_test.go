package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"shardlab/mesh"
)

// searchOptions plans the default options changed by edit.
func searchOptions(t *testing.T, edit func(*Options)) Plan {
	t.Helper()
	p, err := Search(parsed(t, edit))
	if err != nil {
		t.Fatal(err)
	}
	return p
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
		{true, 4096, "[1 2 4 8 16 32 64 128 4096]"}, // MaxSweepPoints
		{false, 1, "[1]"},
	} {
		o := DefaultOptions()
		if !tc.dcn {
			o.TPU = "v5p-8"
		}
		r, err := ParseRequest(o)
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
		{512, 0, "[2 4 8 16 32 64 128 256 512]"}, // MaxSweepPoints powers of two
		{500, 0, "[2 4 8 16 32 64 128 256 500]"},
		{1, 0, "[1]"},
		{512, 10, "[2 4 8 16 32 64 128 256 512]"},
		{64, 3, "[1 2 4 8 16 32 64]"},
		{64, 0.5, "[1 2 4 8 16 32 64]"},
		{4096, 3, "[16 32 64 128 256 512 1024 2048 4096]"}, // MaxSweepPoints wins over the minimum
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
	p := searchOptions(t, func(o *Options) { o.Model = "llama3-70b"; o.TPU = "tpu7x-128"; o.Slices = 2 })
	got := p.Request.MinBatch()
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

// TestSweepIsASearchPerPoint: every point of a batch sweep is what Search
// finds with the batch fixed there, the rows render as text and JSON, and
// a plan of one mesh has no sweep.
func TestSweepIsASearchPerPoint(t *testing.T) {
	p := searchOptions(t, func(o *Options) { o.Model, o.TPU, o.MaxGlobalBatch = "llama3-8b", "v5p-16", "64" })
	s, err := SweepOf(p, SweepBatch)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Points) == 0 || s.MaxBatch != 64 {
		t.Fatalf("sweep %+v, want points up to the max global batch 64", s)
	}
	for _, pt := range s.Points {
		r := p.Request
		r.GlobalBatch = int(pt.X)
		q, err := Search(r)
		if err != nil {
			t.Fatal(err)
		}
		if e := q.Best.Estimate; e.Mesh.String() != pt.Layout || e.MFU != pt.MFU || e.TokensPerSecondPerChip != pt.TokensPerSecondPerChip {
			t.Errorf("batch %g: sweep says %s MFU %g, Search says %s MFU %g", pt.X, pt.Layout, pt.MFU, e.Mesh, e.MFU)
		}
	}
	var text, js bytes.Buffer
	if err := s.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(text.String(), "\n"); got != len(s.Points)+2 {
		t.Errorf("text has %d lines, want a title, a header and %d rows:\n%s", got, len(s.Points), text.String())
	}
	if err := s.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Sweep
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Points) != len(s.Points) {
		t.Errorf("JSON %s: %v", js.String(), err)
	}
	q := p
	if q.Request.Axes, err = mesh.ParseAxes("fsdp=8"); err != nil {
		t.Fatal(err)
	}
	if _, err := SweepOf(q, SweepSlices); !errors.Is(err, ErrNoSweep) {
		t.Errorf("a plan of one mesh: sweep error %v, want ErrNoSweep", err)
	}
}
