package inference

import (
	"strings"
	"testing"
)

// TestClassOf: a request is prompt-heavy from a mean prompt PromptHeavy
// times its mean output up.
func TestClassOf(t *testing.T) {
	for _, c := range []struct {
		prompt, output float64
		want           LengthClass
	}{
		{8192, 1024, ClassPromptHeavy}, // the 8k/1k rows of validate's serving table
		{4096, 1024, ClassPromptHeavy}, // the boundary: 4×
		{4095, 1024, ClassOther},
		{1024, 1024, ClassOther},
		{1024, 8192, ClassOther},
	} {
		if got := ClassOf(c.prompt, c.output); got != c.want {
			t.Errorf("ClassOf(%g, %g) = %q, want %q", c.prompt, c.output, got, c.want)
		}
	}
}

// TestSpreadAround: published = predicted / (1 + error), so a figure
// over-predicted by 100 % was published at half, one under-predicted by
// 50 % at twice.
func TestSpreadAround(t *testing.T) {
	lo, hi := ErrorSpread{Rows: 2, Low: -0.5, High: 1}.Around(100)
	if lo != 50 || hi != 200 {
		t.Errorf("ErrorSpread{-0.5, 1}.Around(100) = %g, %g, want 50, 200", lo, hi)
	}
}

// TestBandOfEveryClass: each class has held-out rows, and BandOf gives
// a mix the band of its class; the rows of a band are of its class.
func TestBandOfEveryClass(t *testing.T) {
	for _, m := range []LengthMix{FixedMix(8192, 1024), FixedMix(1024, 1024)} {
		b, ok := BandOf(m)
		if want := ClassOf(m.Means()); !ok || b.Class != want {
			t.Errorf("BandOf(%v) = %q, %v, want %q", m, b.Class, ok, want)
		}
	}
	for _, b := range ServingBands {
		for _, r := range b.Rows {
			if c := ClassOf(r.Prompt, r.Output); c != b.Class {
				t.Errorf("%s (%g/%g) is %q, in the %q band", r.ID, r.Prompt, r.Output, c, b.Class)
			}
		}
	}
}

// TestBandWarnings: a prompt-heavy plan is warned of, citing every row
// of its band with its error, while every row of the class
// over-predicts; a plan of balanced lengths is not.
func TestBandWarnings(t *testing.T) {
	for _, c := range []struct {
		prompt, output int
		warn           bool
	}{{6144, 1024, true}, {4096, 1024, true}, {4095, 1024, false}, {1024, 4096, false}} {
		r := servingRequest(t, "llama3-8b", "v6e-8", 16)
		r.MaxModelLen, r.PromptLen, r.OutputLen = 8192, c.prompt, c.output
		r, err := NewRequest(r)
		if err != nil {
			t.Fatal(err)
		}
		p := Plan{Request: r}
		w := p.BandWarnings()
		b, _ := BandOf(r.Lengths())
		if got, want := len(w) == 1, c.warn && b.Over(); got != want {
			t.Errorf("%d/%d: %d warnings %q, want a warning %v", c.prompt, c.output, len(w), w, want)
			continue
		}
		if len(w) == 0 {
			continue
		}
		for _, row := range b.Rows {
			if !strings.Contains(w[0], row.ID) || row.Throughput <= 0 {
				t.Errorf("%d/%d: warning does not cite %s (error %+.4f): %s", c.prompt, c.output, row.ID, row.Throughput, w[0])
			}
		}
	}
}
