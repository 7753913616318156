package inference

import (
	"fmt"
	"io"
	"strings"

	"shardlab/unit"
)

// The serving model's measured error. validate --serving runs the
// serving model at the configuration of each published serving figure
// of its table (validate/serving.yaml) and measures its error, (predicted
// − published) / published; the rows it did not fit the step overhead on
// (held-out rows) are the error a new request can expect. ServingBands
// records those rows for the engine shardlab inference plans for, vLLM;
// validate's TestServingBands recomputes it from the table, so that the
// two cannot differ, as cost.StepBands is to training's band.

// PromptHeavy is the ratio of the mean prompt to the mean output at and
// above which a request is prompt-heavy. The error depends on it: the
// held-out vLLM rows' prompts are 1/8, 1 and 8 times their outputs, and
// the two at 8 (8192/1024) over-predict the published throughput by
// +39 % and +46 %, the four at 1 and 1/8 by −8 % to +14 % (validate
// --serving); any ratio between 1 and 8 splits them alike, and 4 is
// review171's finding 5's.
const PromptHeavy = 4

// LengthClass is a class of requests by their lengths, the rows of whose
// class stand for a request in its band.
type LengthClass string

// The length classes.
const (
	ClassPromptHeavy LengthClass = "prompt-heavy"
	ClassOther       LengthClass = "not prompt-heavy"
)

// ClassOf is the class of requests of mean prompt and output lengths.
func ClassOf(prompt, output float64) LengthClass {
	if prompt >= PromptHeavy*output {
		return ClassPromptHeavy
	}
	return ClassOther
}

// Describe says which requests c holds: "whose mean prompt is at least 4×
// the mean output".
func (c LengthClass) Describe() string {
	if c == ClassPromptHeavy {
		return fmt.Sprintf("whose mean prompt is at least %d× the mean output", PromptHeavy)
	}
	return fmt.Sprintf("whose mean prompt is under %d× the mean output", PromptHeavy)
}

// BandRow is one held-out row of validate's serving table: its ID, its
// mean lengths and the serving model's error on it, each (predicted −
// published) / published, rounded to 0.0001: of the simulation's output
// tokens/s (Throughput) and of the plan's roofline at the row's
// concurrency (Roofline, Layout.TokensPerSecond), and, where the row
// publishes them (Latency), of the simulation's mean TTFT and ITL.
type BandRow struct {
	ID         string  `json:"row"`
	Prompt     float64 `json:"mean_prompt_len_tokens"`
	Output     float64 `json:"mean_output_len_tokens"`
	Throughput float64 `json:"relative_error"`
	Roofline   float64 `json:"roofline_relative_error"`
	Latency    bool    `json:"latency_published"`
	TTFT       float64 `json:"ttft_relative_error"`
	ITL        float64 `json:"itl_relative_error"`
}

// ServingBand is the held-out vLLM rows of one length class.
type ServingBand struct {
	Class LengthClass `json:"length_class"`
	Rows  []BandRow   `json:"rows"`
}

// ServingBands is the held-out vLLM rows of validate's serving table by
// length class, as validate.ServingBands measures them (TestServingBands
// holds the two equal). Its rows ran a closed loop of clients at a fixed
// concurrency, each request the same lengths.
var ServingBands = []ServingBand{
	{Class: ClassOther, Rows: []BandRow{
		{ID: "recipes-v6e8-llama3.3-70b-c128", Prompt: 1000, Output: 1000, Throughput: 0.1269, Roofline: 0.29, Latency: true, TTFT: -0.1389, ITL: -0.1147},
		{ID: "recipes-tpu7x8-qwen3-coder-480b-1k1k", Prompt: 921.5, Output: 921.5, Throughput: 0.1409, Roofline: 0.2417},
		{ID: "recipes-tpu7x8-qwen3-coder-480b-1k8k", Prompt: 921.5, Output: 7372.5, Throughput: 0.0783, Roofline: 0.1094},
		{ID: "recipes-tpu7x8-qwen3.5-397b-1k8k", Prompt: 921.5, Output: 7372.5, Throughput: -0.0794, Roofline: -0.0059},
	}},
	{Class: ClassPromptHeavy, Rows: []BandRow{
		{ID: "recipes-tpu7x8-qwen3-coder-480b-8k1k", Prompt: 7372.5, Output: 921.5, Throughput: 0.464, Roofline: 1.0415},
		{ID: "recipes-tpu7x8-qwen3.5-397b-8k1k", Prompt: 7372.5, Output: 921.5, Throughput: 0.3927, Roofline: 1.2194},
	}},
}

// BandOf is the band of requests of lengths m served by vLLM: the
// held-out rows of m's class; false where the class has none.
func BandOf(m LengthMix) (ServingBand, bool) {
	c := ClassOf(m.Means())
	for _, b := range ServingBands {
		if b.Class == c && len(b.Rows) > 0 {
			return b, true
		}
	}
	return ServingBand{}, false
}

// ErrorSpread is the least and the most error of a band's rows that measure
// one figure, and how many do; Rows 0 where none does.
type ErrorSpread struct {
	Rows      int
	Low, High float64
}

// spread is the spread of f over the rows for which has is true.
func (b ServingBand) spread(has func(BandRow) bool, f func(BandRow) float64) ErrorSpread {
	var s ErrorSpread
	for _, r := range b.Rows {
		if !has(r) {
			continue
		}
		x := f(r)
		if s.Rows == 0 {
			s.Low, s.High = x, x
		}
		s.Rows++
		s.Low, s.High = min(s.Low, x), max(s.High, x)
	}
	return s
}

func all(BandRow) bool         { return true }
func published(r BandRow) bool { return r.Latency }

// Throughput is the spread of the simulation's output tokens/s error.
func (b ServingBand) Throughput() ErrorSpread {
	return b.spread(all, func(r BandRow) float64 { return r.Throughput })
}

// Roofline is the spread of the roofline's output tokens/s error.
func (b ServingBand) Roofline() ErrorSpread {
	return b.spread(all, func(r BandRow) float64 { return r.Roofline })
}

// TTFT is the spread of the simulation's mean TTFT error, over the rows
// that publish it.
func (b ServingBand) TTFT() ErrorSpread {
	return b.spread(published, func(r BandRow) float64 { return r.TTFT })
}

// ITL is the spread of the simulation's mean ITL error, over the rows
// that publish it.
func (b ServingBand) ITL() ErrorSpread {
	return b.spread(published, func(r BandRow) float64 { return r.ITL })
}

// Around is what a figure predicted as x would have been published as
// at the ends of s: published = predicted / (1 + error), so the most
// over-predicting row gives the least, x / (1 + High), and the most
// under-predicting the most, x / (1 + Low).
func (s ErrorSpread) Around(x float64) (lo, hi float64) {
	return x / (1 + s.High), x / (1 + s.Low)
}

// String is s as the band's text gives it: "-7.9 % to +14.1 %", or the
// one error of a single row.
func (s ErrorSpread) String() string {
	if s.Rows == 1 || s.Low == s.High {
		return fmt.Sprintf("%+.1f %%", 100*s.Low)
	}
	return fmt.Sprintf("%+.1f %% to %+.1f %%", 100*s.Low, 100*s.High)
}

// IDs lists the band's rows.
func (b ServingBand) IDs() []string {
	out := make([]string, len(b.Rows))
	for i, r := range b.Rows {
		out[i] = r.ID
	}
	return out
}

// Over says that every row of b over-predicts the published throughput,
// simulated and roofline alike.
func (b ServingBand) Over() bool {
	s, r := b.Throughput(), b.Roofline()
	return s.Rows > 0 && s.Low > 0 && r.Low > 0
}

// BandWarnings warns where p's requests are prompt-heavy and every
// held-out row of that class over-predicts: p's throughput, the plan's
// and its simulation's, is then likely above what vLLM serves, citing
// the rows and their errors.
func (p Plan) BandWarnings() []string {
	m := p.Request.Lengths()
	b, ok := BandOf(m)
	if !ok || b.Class != ClassPromptHeavy || !b.Over() {
		return nil
	}
	prompt, output := m.Means()
	rows := make([]string, len(b.Rows))
	for i, r := range b.Rows {
		rows[i] = fmt.Sprintf("%s, means %.0f/%.0f tokens: simulation %+.1f %%, roofline %+.1f %%", r.ID, r.Prompt, r.Output, 100*r.Throughput, 100*r.Roofline)
	}
	return []string{fmt.Sprintf("prompt-heavy requests: the mean prompt (%.0f tokens) is %.1f× the mean output (%.0f), and on each of the %s of %s %s the serving model over-predicts the published output tokens/s (%s): expect the throughput above, and the simulation's, to be higher than vLLM serves; see the held-out bands",
		prompt, prompt/output, output, unitRows(len(b.Rows)), source, b.Class.Describe(), strings.Join(rows, "; "))}
}

// source is where a band's errors are measured, as its text names it.
const source = "validate's serving table"

// rooflineBand is the line under the plan's throughput: the chosen
// layout's roofline output tokens/s at the ends of the roofline's error
// on the held-out rows of the requests' class, or that no row measures
// it.
func (p Plan) rooflineBand() string {
	b, ok := BandOf(p.Request.Lengths())
	if !ok {
		return fmt.Sprintf("  no held-out row of %s measures this throughput's error\n", source)
	}
	s := b.Roofline()
	lo, hi := s.Around(p.Best.TokensPerSecond)
	clo, chi := s.Around(p.Best.PerChip)
	return fmt.Sprintf("  in the held-out band: %.0f-%.0f output tokens/s, %.0f-%.0f per chip (this roofline's error on the %s of %s %s: %v)\n",
		lo, hi, clo, chi, unitRows(s.Rows), source, b.Class.Describe(), s)
}

// WriteBand writes the band of s, a simulation of requests of lengths m,
// under its WriteText: its throughput and its mean TTFT and ITL at the
// ends of the simulation's error on the held-out rows of m's class
// (BandOf). Only vLLM's simulation has one.
func (s SimResult) WriteBand(w io.Writer, m LengthMix) error {
	if s.Engine != VLLM {
		return nil
	}
	b, ok := BandOf(m)
	if !ok {
		_, err := fmt.Fprintf(w, "  no held-out row of %s measures this simulation's error\n", source)
		return err
	}
	t := b.Throughput()
	lo, hi := t.Around(s.TokensPerSecond)
	line := fmt.Sprintf("  in the held-out band: %.0f-%.0f output tokens/s (the simulation's error on the %s of %s %s: %v)", lo, hi, unitRows(t.Rows), source, b.Class.Describe(), t)
	if f, i := b.TTFT(), b.ITL(); f.Rows == 0 || i.Rows == 0 {
		line += "; none of them publishes TTFT or ITL"
	} else {
		flo, fhi := f.Around(s.TTFT.Mean.Seconds())
		ilo, ihi := i.Around(s.ITL.Mean.Seconds())
		line += fmt.Sprintf("; TTFT mean %s, ITL mean %s (the error on the %s of them with published latencies: TTFT %v, ITL %v)",
			spanSecs(flo, fhi), spanSecs(ilo, ihi), unitRows(f.Rows), f, i)
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// unitRows is "1 held-out vLLM row" or "4 held-out vLLM rows".
func unitRows(n int) string { return unit.Plural(n, "held-out vLLM row") }

// spanSecs is lo to hi seconds as a report prints durations, one figure
// where they are equal.
func spanSecs(lo, hi float64) string {
	a, b := unit.Seconds(lo).String(), unit.Seconds(hi).String()
	if a == b {
		return a
	}
	return a + "-" + b
}
