package inference

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// LengthMix is the prompt and output lengths of a simulation's
// requests: fixed, uniform over a range, or drawn from a histogram. The
// zero value is not a mix; build one with FixedMix, ParseLengthMix or
// ParseHistogram.
type LengthMix struct {
	bins  []Bin     // fixed: one bin; histogram: its bins
	cum   []float64 // running sums of the bins' weights
	lo    int       // uniform: the prompts' range
	hi    int
	olo   int // uniform: the outputs' range
	ohi   int
	label string
}

// Bin is one line of a length histogram: requests of PromptLen prompt
// tokens and OutputLen output tokens, drawn with probability Weight over
// the sum of the weights.
type Bin struct {
	PromptLen, OutputLen int
	Weight               float64
}

// FixedMix is every request with prompt prompt tokens and output output
// tokens. Both must be at least 1 (NewRequest's lengths are).
func FixedMix(prompt, output int) LengthMix {
	return LengthMix{bins: []Bin{{prompt, output, 1}}, cum: []float64{1}, label: fmt.Sprintf("fixed %d+%d", prompt, output)}
}

// ErrBadMix is wrapped by every error about a length mix.
var ErrBadMix = errors.New("bad length mix")

// MixError is a length mix that cannot be read: the line of a histogram
// (0 for a mix given inline), the field, its value and what is accepted.
type MixError struct {
	Line  int
	Field string
	Value string
	Want  string
}

func (e *MixError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("inference: length mix %s %s, want %s", e.Field, e.Value, e.Want)
	}
	return fmt.Sprintf("inference: length histogram line %d: %s %s, want %s", e.Line, e.Field, e.Value, e.Want)
}

func (e *MixError) Unwrap() error { return ErrBadMix }

// ParseLengthMix reads an inline mix: "uniform:A-B", each request's
// prompt and output lengths drawn independently and uniformly from the
// whole numbers A to B (1 ≤ A ≤ B ≤ MaxTokens). A fixed mix is FixedMix,
// a histogram ParseHistogram.
func ParseLengthMix(s string) (LengthMix, error) {
	rest, ok := strings.CutPrefix(s, "uniform:")
	if !ok {
		return LengthMix{}, &MixError{Field: "kind", Value: strconv.Quote(s), Want: "uniform:A-B (or fixed, or a histogram file)"}
	}
	a, b, ok := strings.Cut(rest, "-")
	lo, err1 := strconv.Atoi(a)
	hi, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || lo < 1 || hi < lo || hi > MaxTokens {
		return LengthMix{}, &MixError{Field: "uniform range", Value: strconv.Quote(rest), Want: fmt.Sprintf("A-B, whole numbers with 1 <= A <= B <= %d", MaxTokens)}
	}
	return LengthMix{lo: lo, hi: hi, olo: lo, ohi: hi, label: fmt.Sprintf("uniform %d-%d", lo, hi)}, nil
}

// UniformMix is each request's prompt length drawn uniformly from the
// whole numbers promptLo to promptHi and its output length, independently,
// from outputLo to outputHi (each 1 ≤ lo ≤ hi ≤ MaxTokens): the random
// dataset of a benchmark client given a range ratio r draws from
// [⌊L·r⌋, L] (SemiAnalysisAI/InferenceX
// utils/bench_serving/benchmark_serving.py sample_random_requests,
// sample_uniform @d39a07fd).
func UniformMix(promptLo, promptHi, outputLo, outputHi int) (LengthMix, error) {
	for _, r := range []struct {
		name   string
		lo, hi int
	}{{"prompt range", promptLo, promptHi}, {"output range", outputLo, outputHi}} {
		if r.lo < 1 || r.hi < r.lo || r.hi > MaxTokens {
			return LengthMix{}, &MixError{Field: r.name, Value: fmt.Sprintf("%d-%d", r.lo, r.hi), Want: fmt.Sprintf("A-B, whole numbers with 1 <= A <= B <= %d", MaxTokens)}
		}
	}
	label := fmt.Sprintf("uniform prompt %d-%d, output %d-%d", promptLo, promptHi, outputLo, outputHi)
	if promptLo == outputLo && promptHi == outputHi {
		label = fmt.Sprintf("uniform %d-%d", promptLo, promptHi)
	}
	return LengthMix{lo: promptLo, hi: promptHi, olo: outputLo, ohi: outputHi, label: label}, nil
}

// HistogramHeader is the first line of a length histogram.
const HistogramHeader = "prompt_len,output_len,weight"

// HistogramLayout says how a length histogram is laid out (ParseHistogram),
// as help and errors describe it: the header line is required.
const HistogramLayout = "a first line " + HistogramHeader + ", then a bin a line: prompt tokens, output tokens, weight"

// MaxBins bounds a histogram's lines.
const MaxBins = 1 << 16

// ParseHistogram reads a length histogram: comma-separated text whose
// first line (after blank lines and lines starting with #) is
// HistogramHeader, then one bin a line: prompt tokens and output tokens
// (whole numbers, 1 to MaxTokens) and a weight (a finite number above
// 0). A ShareGPT-like mix is its length pairs counted into bins. Errors
// are *MixError naming the line and field.
func ParseHistogram(data []byte) (LengthMix, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	m := LengthMix{label: "histogram"}
	line, header := 0, false
	total := 0.0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if !header {
			if strings.ReplaceAll(text, " ", "") != HistogramHeader {
				return LengthMix{}, &MixError{Line: line, Field: "header", Value: strconv.Quote(text), Want: strconv.Quote(HistogramHeader)}
			}
			header = true
			continue
		}
		f := strings.Split(text, ",")
		if len(f) != 3 {
			return LengthMix{}, &MixError{Line: line, Field: "fields", Value: strconv.Itoa(len(f)), Want: "3 (" + HistogramHeader + ")"}
		}
		var b Bin
		for i, p := range []*int{&b.PromptLen, &b.OutputLen} {
			name := []string{"prompt_len", "output_len"}[i]
			v, err := strconv.Atoi(strings.TrimSpace(f[i]))
			if err != nil || v < 1 || v > MaxTokens {
				return LengthMix{}, &MixError{Line: line, Field: name, Value: strconv.Quote(strings.TrimSpace(f[i])), Want: fmt.Sprintf("a whole number of tokens, 1 to %d", MaxTokens)}
			}
			*p = v
		}
		w, err := strconv.ParseFloat(strings.TrimSpace(f[2]), 64)
		if err != nil || !(w > 0) || math.IsInf(w, 0) || math.IsInf(total+w, 0) {
			return LengthMix{}, &MixError{Line: line, Field: "weight", Value: strconv.Quote(strings.TrimSpace(f[2])), Want: "a finite number above 0 (the weights' sum finite too)"}
		}
		if len(m.bins) == MaxBins {
			return LengthMix{}, &MixError{Line: line, Field: "bins", Value: strconv.Itoa(MaxBins + 1), Want: fmt.Sprintf("at most %d", MaxBins)}
		}
		b.Weight = w
		total += w
		m.bins = append(m.bins, b)
		m.cum = append(m.cum, total)
	}
	if err := sc.Err(); err != nil {
		return LengthMix{}, &MixError{Line: line + 1, Field: "line", Value: "longer than 1 MiB", Want: "a line of a prompt length, an output length and a weight"}
	}
	if len(m.bins) == 0 {
		what := "no header"
		if header {
			what = "no bins"
		}
		return LengthMix{}, &MixError{Line: max(line, 1), Field: "histogram", Value: what, Want: "the header " + HistogramHeader + " and at least one bin"}
	}
	return m, nil
}

// String names the mix.
func (m LengthMix) String() string { return m.label }

// Bins is a histogram's or a fixed mix's bins (nil for a uniform mix).
func (m LengthMix) Bins() []Bin { return append([]Bin(nil), m.bins...) }

// Longest is the most tokens, prompt and output, a request of the mix
// can have.
func (m LengthMix) Longest() int {
	if m.bins == nil {
		return m.hi + m.ohi
	}
	n := 0
	for _, b := range m.bins {
		n = max(n, b.PromptLen+b.OutputLen)
	}
	return n
}

// longestOutput is the most output tokens a request of the mix can
// have.
func (m LengthMix) longestOutput() int {
	if m.bins == nil {
		return m.ohi
	}
	n := 0
	for _, b := range m.bins {
		n = max(n, b.OutputLen)
	}
	return n
}

// meanOutput is the mean output length of the mix.
func (m LengthMix) meanOutput() float64 {
	_, out := m.Means()
	return out
}

// Means is the mean prompt and output lengths of the mix.
func (m LengthMix) Means() (prompt, output float64) {
	if m.bins == nil {
		return float64(m.lo+m.hi) / 2, float64(m.olo+m.ohi) / 2
	}
	prev := 0.0
	for i, b := range m.bins {
		w := m.cum[i] - prev
		prompt, output, prev = prompt+float64(b.PromptLen)*w, output+float64(b.OutputLen)*w, m.cum[i]
	}
	total := m.cum[len(m.cum)-1]
	return prompt / total, output / total
}

// zero reports whether m is the zero value, no mix.
func (m LengthMix) zero() bool { return m.bins == nil && m.hi == 0 }

// MeanContext is the mean context of a decoding sequence of the mix, a
// request's prompt plus half its output, each request weighted by its
// output tokens, the steps it decodes in: E[o·(p + o/2)] / E[o]. A
// long output stays in the batch longer, so a decode step finds more
// long requests than the arrivals bring. Of a uniform mix, whose prompt
// and output are independent, E[p] + E[o²]/(2·E[o]), E[o²] the
// variance of the whole numbers olo to ohi, ((ohi−olo+1)² − 1)/12, plus
// the mean's square.
func (m LengthMix) MeanContext() float64 {
	if m.bins == nil {
		p, o := m.Means()
		n := float64(m.ohi - m.olo + 1)
		return p + ((n*n-1)/12+o*o)/(2*o)
	}
	num, den, prev := 0.0, 0.0, 0.0
	for i, b := range m.bins {
		w := (m.cum[i] - prev) * float64(b.OutputLen)
		num, den, prev = num+w*(float64(b.PromptLen)+float64(b.OutputLen)/2), den+w, m.cum[i]
	}
	return num / den
}

// Sample draws one request's prompt and output lengths.
func (m LengthMix) Sample(rng *rand.Rand) (prompt, output int) {
	if m.bins == nil {
		return m.lo + rng.IntN(m.hi-m.lo+1), m.olo + rng.IntN(m.ohi-m.olo+1)
	}
	if len(m.bins) == 1 {
		return m.bins[0].PromptLen, m.bins[0].OutputLen
	}
	x := rng.Float64() * m.cum[len(m.cum)-1]
	i := min(sort.Search(len(m.cum), func(i int) bool { return m.cum[i] > x }), len(m.cum)-1)
	return m.bins[i].PromptLen, m.bins[i].OutputLen
}
