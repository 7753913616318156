package inference

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestParseHistogram: a histogram with comments and blank lines reads
// back its bins; draws follow the weights.
func TestParseHistogram(t *testing.T) {
	m, err := ParseHistogram([]byte("# ShareGPT-like\n\nprompt_len,output_len,weight\n100, 300, 3\n1000,200,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Bin{{100, 300, 3}, {1000, 200, 1}}
	if got := m.Bins(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("bins %v, want %v", got, want)
	}
	if got := m.Longest(); got != 1200 {
		t.Errorf("Longest() = %d, want 1200", got)
	}
	rng := rand.New(rand.NewPCG(1, 0))
	short := 0
	for range 4000 {
		if p, _ := m.Sample(rng); p == 100 {
			short++
		}
	}
	if short < 2800 || short > 3200 { // 3 in 4 of 4000, ± 200 (about 7 standard deviations)
		t.Errorf("%d of 4000 draws from the weight-3 bin, want about 3000", short)
	}
}

// TestParseHistogramErrors: each error names its line and field.
func TestParseHistogramErrors(t *testing.T) {
	tests := []struct {
		in    string
		line  int
		field string
	}{
		{"", 1, "histogram"},
		{"# only a comment\n", 1, "histogram"},
		{"prompt,output,weight\n1,2,3\n", 1, "header"},
		{"prompt_len,output_len,weight\n", 1, "histogram"},
		{"prompt_len,output_len,weight\n1,2\n", 2, "fields"},
		{"prompt_len,output_len,weight\n1,2,3,4\n", 2, "fields"},
		{"prompt_len,output_len,weight\n0,2,3\n", 2, "prompt_len"},
		{"prompt_len,output_len,weight\n1.5,2,3\n", 2, "prompt_len"},
		{"prompt_len,output_len,weight\n1,-2,3\n", 2, "output_len"},
		{"prompt_len,output_len,weight\n1,2,0\n", 2, "weight"},
		{"prompt_len,output_len,weight\n1,2,NaN\n", 2, "weight"},
		{"prompt_len,output_len,weight\n1,2,Inf\n", 2, "weight"},
		{"prompt_len,output_len,weight\n1,2,1e308\n# x\n1,2,1e308\n", 4, "weight"},
		{"prompt_len,output_len,weight\n1,9999999,1\n", 2, "output_len"},
	}
	for _, tt := range tests {
		_, err := ParseHistogram([]byte(tt.in))
		var me *MixError
		if !errors.As(err, &me) || me.Line != tt.line || me.Field != tt.field || !errors.Is(err, ErrBadMix) {
			t.Errorf("ParseHistogram(%q) = %v, want a MixError at line %d, field %s", tt.in, err, tt.line, tt.field)
		}
	}
}

// TestParseLengthMix: uniform:A-B and its errors.
func TestParseLengthMix(t *testing.T) {
	m, err := ParseLengthMix("uniform:10-20")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 0))
	for range 1000 {
		p, o := m.Sample(rng)
		if p < 10 || p > 20 || o < 10 || o > 20 {
			t.Fatalf("Sample() = %d, %d, want both in 10..20", p, o)
		}
	}
	if m.Longest() != 40 || m.String() != "uniform 10-20" {
		t.Errorf("Longest() = %d, String() = %q, want 40, uniform 10-20", m.Longest(), m)
	}
	for _, s := range []string{"uniform:", "uniform:5", "uniform:0-3", "uniform:9-3", "uniform:a-3", "uniform:1-99999999", "fixed", "zipf:1-2"} {
		if _, err := ParseLengthMix(s); !errors.Is(err, ErrBadMix) {
			t.Errorf("ParseLengthMix(%q) = %v, want an error wrapping ErrBadMix", s, err)
		}
	}
}

// TestUniformMix: separate prompt and output ranges, each drawn over
// its whole range (every value seen, none outside, the mean within 1 %
// of the midpoint over 20,000 draws); equal ranges draw exactly as the
// inline "uniform:A-B" mix; bad ranges are errors naming the range.
func TestUniformMix(t *testing.T) {
	m, err := UniformMix(6553, 8192, 819, 1024) // InferenceX 8k/1k at range ratio 0.8: [int(8192·0.8), 8192]
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 0))
	seenP, seenO := map[int]bool{}, map[int]bool{}
	sumP, sumO := 0.0, 0.0
	const n = 20000
	for range n {
		p, o := m.Sample(rng)
		if p < 6553 || p > 8192 || o < 819 || o > 1024 {
			t.Fatalf("Sample() = %d, %d, want 6553..8192 and 819..1024", p, o)
		}
		seenP[p], seenO[o] = true, true
		sumP, sumO = sumP+float64(p), sumO+float64(o)
	}
	if len(seenO) != 1024-819+1 || !seenP[6553] || !seenP[8192] {
		t.Errorf("outputs seen %d of 206, prompt ends seen %v %v, want all", len(seenO), seenP[6553], seenP[8192])
	}
	if mp, mo := sumP/n, sumO/n; math.Abs(mp-7372.5)/7372.5 > 0.01 || math.Abs(mo-921.5)/921.5 > 0.01 {
		t.Errorf("mean prompt %.1f, output %.1f, want 7372.5 and 921.5 within 1 %%", mp, mo)
	}
	if m.Longest() != 8192+1024 || m.meanOutput() != 921.5 || m.String() != "uniform prompt 6553-8192, output 819-1024" {
		t.Errorf("Longest() = %d, meanOutput() = %v, String() = %q", m.Longest(), m.meanOutput(), m)
	}
	same, err := UniformMix(10, 20, 10, 20)
	if err != nil {
		t.Fatal(err)
	}
	inline, _ := ParseLengthMix("uniform:10-20")
	r1, r2 := rand.New(rand.NewPCG(7, 0)), rand.New(rand.NewPCG(7, 0))
	for range 100 {
		p1, o1 := same.Sample(r1)
		p2, o2 := inline.Sample(r2)
		if p1 != p2 || o1 != o2 {
			t.Fatalf("UniformMix(10, 20, 10, 20) drew %d, %d, uniform:10-20 %d, %d", p1, o1, p2, o2)
		}
	}
	if same.String() != inline.String() {
		t.Errorf("String() = %q, want %q", same, inline)
	}
	for _, c := range []struct {
		pl, ph, ol, oh int
		field          string
	}{
		{0, 5, 1, 2, "prompt range"}, {6, 5, 1, 2, "prompt range"}, {1, 2, 3, 2, "output range"}, {1, 2, 1, MaxTokens + 1, "output range"},
	} {
		_, err := UniformMix(c.pl, c.ph, c.ol, c.oh)
		var me *MixError
		if !errors.As(err, &me) || me.Field != c.field {
			t.Errorf("UniformMix(%d, %d, %d, %d) = %v, want a MixError on %s", c.pl, c.ph, c.ol, c.oh, err, c.field)
		}
	}
}

// FuzzParseHistogram: the parser never panics; what it accepts has bins
// within the limits, and samples from them.
func FuzzParseHistogram(f *testing.F) {
	f.Add([]byte("prompt_len,output_len,weight\n100,300,3\n1000,200,1\n"))
	f.Add([]byte("# c\nprompt_len, output_len, weight\n1,1,1e-300\n"))
	f.Add([]byte("prompt_len,output_len,weight\n1,2,3,4\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseHistogram(data)
		if err != nil {
			var me *MixError
			if !errors.As(err, &me) || !strings.HasPrefix(err.Error(), "inference: length histogram") {
				t.Fatalf("error %v is not a MixError naming the histogram", err)
			}
			return
		}
		bins := m.Bins()
		if len(bins) == 0 || len(bins) > MaxBins {
			t.Fatalf("%d bins accepted", len(bins))
		}
		for _, b := range bins {
			if b.PromptLen < 1 || b.PromptLen > MaxTokens || b.OutputLen < 1 || b.OutputLen > MaxTokens || !(b.Weight > 0) {
				t.Fatalf("bin %+v accepted", b)
			}
		}
		p, o := m.Sample(rand.New(rand.NewPCG(1, 0)))
		if p < 1 || o < 1 || p+o > m.Longest() {
			t.Fatalf("Sample() = %d, %d beyond Longest() %d", p, o, m.Longest())
		}
	})
}

// TestLengthsBesideMix: a request with a length mix and lengths of its
// own is refused, naming the length and the mix: the mix would replace
// them with its mean request (the web form and the JSON API did so
// silently; only the CLI refused, review of dcd4fab #3). Unset lengths
// take the mix's mean request, here (10+20)/2 = 15 rounded to 15 each,
// and a request NewRequest returned is accepted again as it is (a
// shorter max_model_len is tried so: shorterFit).
func TestLengthsBesideMix(t *testing.T) {
	mix, err := ParseLengthMix("uniform:10-20")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		prompt, output int
		field          string // "" accepted
	}{{0, 0, ""}, {1024, 0, "prompt_len"}, {0, 7, "output_len"}, {15, 15, "prompt_len"}} {
		r := request(t)
		r.Mix, r.PromptLen, r.OutputLen = mix, c.prompt, c.output
		got, err := NewRequest(r)
		var fe *FieldError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("mix with %d+%d tokens: %v, want accepted", c.prompt, c.output, err)
		case c.field == "" && (got.PromptLen != 15 || got.OutputLen != 15):
			t.Errorf("mix alone: planned at %d+%d tokens, want its mean 15+15", got.PromptLen, got.OutputLen)
		case c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(err.Error(), "unset beside length_mix (uniform 10-20)")):
			t.Errorf("mix with %d+%d tokens: %v, want a FieldError on %s naming length_mix", c.prompt, c.output, err, c.field)
		}
		if c.field != "" {
			continue
		}
		again, err := NewRequest(got)
		if err != nil || again.PromptLen != got.PromptLen || again.OutputLen != got.OutputLen {
			t.Errorf("NewRequest of its own request: %+v, %v; want it accepted as it is", again, err)
		}
	}
}
