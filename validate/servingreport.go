package validate

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"shardlab/inference"
	"shardlab/schema"
)

func pct(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", 100*x)
}

// finite is x for a JSON field that is absent when x is not known (NaN).
func finite(x float64) *float64 {
	if math.IsNaN(x) {
		return nil
	}
	return &x
}

// servingPreamble is what the serving report's columns mean; its verbs
// take the engines' fitted step times, vLLM's then JetStream's.
const servingPreamble = `Serving: published TPU serving figures (validate/serving.yaml) against shardlab's serving model at each row's configuration.
predicted = inference.Simulate of the row's run: its engine's scheduler (vLLM: continuous batching, chunked prefill in the token
budget, paged KV cache, preemption, tpu-inference's padding; JetStream: one prompt a prefill into a free slot, generate steps over
all slots attending the whole cache) at the row's TP, concurrency (a closed loop of clients), prompts and mean lengths; each step
costs its matmul roofline, then the attention's KV read and decode queries' MXU passes, the TP all-reduces and the engine's
fixed step time (fitted on the calibration rows only: vllm %v, jetstream %v). An int8 KV cache is costed as one byte.
error = (predicted - published) / published output tokens/s; a row is refused when its KV cache does not hold one sequence of its max_model_len (vLLM's start-up check).

`

// WriteText writes the serving report for people: a row per published
// figure with the prediction and its error, the latencies where
// published, the rows not modelled, and each set's summary.
func (rep ServingReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, servingPreamble, inference.StepOverhead(inference.VLLM), inference.StepOverhead(inference.JetStream))
	rep.writeRows(&b)
	rep.writeLatency(&b)
	rep.writeNotModelled(&b)
	for _, s := range rep.sets() {
		rep.writeSet(&b, s)
	}
	writeBands(&b, ServingBands(rep))
	_, err := io.WriteString(w, b.String())
	return err
}

// writeRows writes a row per modelled published figure: its
// configuration, the published and predicted output tokens/s, the error
// and whether the sequences fit.
func (rep ServingReport) writeRows(b *strings.Builder) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "row\tset\tfit\tengine\tmodel\ttpu\tTPxDP\tw/kv\tconc\tin/out\tpublished\tpredicted\terror\tfits")
	for _, r := range rep.Results {
		if !r.Modelled {
			continue
		}
		c, l := r.Row, r.Layout
		fits := "yes"
		if r.Refused() {
			fits = fmt.Sprintf("REFUSED: %d fit", l.DP*l.Memory.MaxSeqs)
		}
		role := "held-out"
		if c.Calibration {
			role = "calib"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%dx%d\t%s/%s\t%d\t%d/%d\t%.0f\t%.0f\t%s\t%s\n", c.ID, c.Set, role, c.Engine, c.Model, c.AcceleratorType,
			c.TP, c.DP, c.Weights, c.KVCache, c.Workload.Concurrency, c.Workload.InputLen, c.Workload.OutputLen,
			c.Published.OutputTokensPerS, r.Sim.TokensPerSecond, pct(r.Error), fits)
	}
	tw.Flush()
}

// writeNotModelled lists the rows not modelled and why.
func (rep ServingReport) writeNotModelled(b *strings.Builder) {
	n := 0
	for _, r := range rep.Results {
		if r.Modelled {
			continue
		}
		if n == 0 {
			fmt.Fprintln(b, "\nnot modelled:")
		}
		n++
		fmt.Fprintf(b, "  %s (%s, %s, %.0f tok/s): %s\n", r.Row.ID, r.Row.PublishedModel, r.Row.AcceleratorType, r.Row.Published.OutputTokensPerS, r.Row.NotModelled)
	}
}

// writeSet writes the summary of set s: its rows, the throughput error
// over all, the calibration and the held-out rows, and each engine's.
func (rep ServingReport) writeSet(b *strings.Builder, s string) {
	st := rep.Summary(s, "")
	when := "collected 2026-12-04, before any row was compared"
	if s == SetB {
		when = "added later, after the serving model and its fit: never fitted on"
	}
	fmt.Fprintf(b, "\nSet %s (%s): %d rows, %d not modelled, %d refused (the KV cache holds fewer sequences than ran)\n", s, when, st.N, st.NotModelled, st.Refused)
	if st.Compared == 0 {
		fmt.Fprintln(b, "  no row compared")
		return
	}
	fmt.Fprintf(b, "  throughput over %d rows compared: median |error| %.1f%%, error from %s to %s\n", st.Compared, 100*st.Median, pct(st.Min), pct(st.Max))
	for _, k := range []string{RowsCalibration, RowsHeldOut} {
		if ks := rep.SummaryOf(s, "", k); ks.Compared > 0 {
			fmt.Fprintf(b, "  %s rows: %d compared, median |error| %.1f%%, error from %s to %s\n", k, ks.Compared, 100*ks.Median, pct(ks.Min), pct(ks.Max))
		}
	}
	for _, e := range rep.engines() {
		es := rep.Summary(s, e)
		if es.N == 0 {
			continue
		}
		fmt.Fprintf(b, "  %s: %d rows compared, median |error| %.1f%%, %d refused, %d not modelled\n", e, es.Compared, 100*es.Median, es.Refused, es.NotModelled)
	}
}

// writeLatency writes the rows whose sources publish mean TTFT or ITL
// beside the serving model's.
func (rep ServingReport) writeLatency(b *strings.Builder) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	n := 0
	for _, r := range rep.Results {
		p := r.Row.Published
		if !r.Modelled || p.MeanTTFTms == 0 && p.MeanITLms == 0 {
			continue
		}
		if n == 0 {
			fmt.Fprintln(b, "\nlatency where published (means; the simulation's TTFT includes its queueing):")
			fmt.Fprintln(tw, "row\tTTFT ms\tpredicted\terror\tITL ms\tpredicted\terror")
		}
		n++
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%s\t%.2f\t%.2f\t%s\n", r.Row.ID, p.MeanTTFTms, ms(r.Sim.TTFT.Mean), pct(r.TTFTError), p.MeanITLms, ms(r.Sim.ITL.Mean), pct(r.ITLError))
	}
	tw.Flush()
}

// ServingJSON is the machine-readable serving report (shardlab validate
// --serving --json).
type ServingJSON struct {
	Rows    []ServingRowJSON `json:"rows"`
	Summary []ServingStats   `json:"summary"`
	// HeldOutBands are the held-out bands the serving plans print
	// (ServingBands); a row's TTFT and ITL errors are 0 where it
	// publishes no latency (latency_published false).
	HeldOutBands []inference.ServingBand `json:"held_out_bands"`
}

// ServingRowJSON is one row with its prediction; the prediction's fields
// are absent for a row not modelled.
type ServingRowJSON struct {
	ServingRow
	Modelled          bool     `json:"modelled"`
	PredictedTokensPS *float64 `json:"predicted_output_tokens_per_s,omitempty"`
	PredictedTTFTms   *float64 `json:"predicted_ttft_ms,omitempty"`
	PredictedITLms    *float64 `json:"predicted_itl_ms,omitempty"`
	Error             *float64 `json:"relative_error,omitempty"`
	TTFTError         *float64 `json:"ttft_relative_error,omitempty"`
	ITLError          *float64 `json:"itl_relative_error,omitempty"`
	Fits              *bool    `json:"fits,omitempty"`
	MaxSeqs           *int     `json:"max_seqs_at_max_model_len,omitempty"`
}

// JSON returns the serving report's machine-readable form: the summary
// of each set, then of each set's engines.
func (rep ServingReport) JSON() ServingJSON {
	out := ServingJSON{Rows: []ServingRowJSON{}, Summary: []ServingStats{}, HeldOutBands: ServingBands(rep)}
	for _, r := range rep.Results {
		out.Rows = append(out.Rows, r.JSON())
	}
	for _, s := range rep.sets() {
		out.Summary = append(out.Summary, rep.Summary(s, ""))
		for _, k := range []string{RowsCalibration, RowsHeldOut} {
			if st := rep.SummaryOf(s, "", k); st.N > 0 {
				out.Summary = append(out.Summary, st)
			}
		}
		for _, e := range rep.engines() {
			if st := rep.Summary(s, e); st.N > 0 {
				out.Summary = append(out.Summary, st)
			}
		}
	}
	return out
}

// JSON returns one row's machine-readable form.
func (r ServingResult) JSON() ServingRowJSON {
	row := ServingRowJSON{ServingRow: r.Row, Modelled: r.Modelled}
	if !r.Modelled {
		return row
	}
	l := r.Layout
	tps, ttft, itl := r.Sim.TokensPerSecond, ms(r.Sim.TTFT.Mean), ms(r.Sim.ITL.Mean)
	fits, seqs := l.Fits, l.DP*l.Memory.MaxSeqs
	row.PredictedTokensPS, row.PredictedTTFTms, row.PredictedITLms = &tps, &ttft, &itl
	row.Error, row.TTFTError, row.ITLError = finite(r.Error), finite(r.TTFTError), finite(r.ITLError)
	row.Fits, row.MaxSeqs = &fits, &seqs
	return row
}

// WriteJSON writes the serving report as indented JSON.
func (rep ServingReport) WriteJSON(w io.Writer) error {
	return schema.Write(w, rep.JSON())
}
