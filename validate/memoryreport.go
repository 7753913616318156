package validate

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"shardlab/schema"
	"shardlab/unit"
)

// verdict says what the prediction means for the case: for an
// out-of-memory case whether cost refuses it too, for a program that
// compiled whether cost would have let it.
func (r MemoryResult) verdict() string {
	c := r.Case
	switch {
	case c.Kind == KindOOM && r.Refused:
		return "refused"
	case c.Kind == KindOOM && r.Warned:
		return "MISSED: predicted to fit, at the edge (plan warns)"
	case c.Kind == KindOOM:
		return "MISSED: predicted to fit"
	case c.CapacityBytes == 0:
		return "-"
	case r.Predicted > c.CapacityBytes:
		return "over capacity, but it compiled"
	case r.Squeezed:
		return "fits, XLA recomputing to its limit"
	}
	return "fits"
}

// gib spells bytes as the memory table prints them, in GiB whatever
// their size (unit.Bytes.InGiB).
func gib(b int64) string { return unit.Bytes(b).InGiB() }

// memoryPreamble is what the memory report's columns mean.
const memoryPreamble = `HBM per JAX device: what XLA reported (validate/memory.yaml) against cost's estimate.
TPU7x has two JAX devices per chip: its predictions are cost's per-chip bytes / 2; v4 and v5p (megacore) and v6e have one.
scope total = arguments + temporaries; temp = XLA's HLO temporaries only. error = (predicted - reported) / reported.
predicted = what XLA's report shows (cost's Memory.Compiled): the peak as laid out, with what XLA keeps while HBM allows (the
loss's fp32 exponentials), where that fits the capacity; else the capacity, which XLA's rematerialization recomputes down to,
where the peak the job needs fits it; else that needed peak. Fit and refusal weigh the needed peak, as plan does.

`

// WriteText writes the memory report for people: a row per case, the
// argument and temporary split where the source gives it, and each set's
// summary.
func (rep MemoryReport) WriteText(w io.Writer) error {
	var b strings.Builder
	b.WriteString(memoryPreamble)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tset\tkind\tscope\treported\tpredicted\terror\tcapacity\tverdict")
	for _, r := range rep.Results {
		c := r.Case
		id, capacity, reported, errText := c.ID, "-", "not stated", "-"
		if c.Unmodelled != "" {
			id += " *"
		}
		if c.CapacityBytes > 0 {
			capacity = gib(c.CapacityBytes)
		} else if r.Limit > 0 {
			capacity = gib(r.Limit) + " +"
		}
		if c.BytesStated() {
			reported, errText = gib(c.ReportedBytes), pct(r.Error)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", id, c.Set, c.Kind, c.Scope, reported, gib(r.Predicted),
			errText, capacity, r.verdict())
	}
	tw.Flush()
	fmt.Fprintln(&b, "* the run has settings shardlab's configuration cannot state (memory.yaml's unmodelled: QK-norm, grad_dtype, XLA flags).")
	if rep.anyUnstated() {
		fmt.Fprintln(&b, "not stated: the source says the step ran out of memory but not the bytes; such a case is held to refused or not only.")
		fmt.Fprintln(&b, "+ the source states no capacity: the limit is cost's usable HBM per device (hw/xla_hbm.csv, the capacity XLA prints).")
	}
	rep.writeBreakdown(&b)
	for _, s := range rep.sets() {
		rep.Summary(s).writeText(&b)
	}
	if rep.Batches != nil {
		b.WriteString("\n")
		if err := rep.Batches.WriteText(&b); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeText writes one set's summary: when the set was collected, its
// errors, and its out-of-memory cases refused.
func (st MemoryStats) writeText(b *strings.Builder) {
	when := "collected 2026-12-04, before modelling against the table"
	if st.Set == SetB {
		when = "added 2026-12-05, after the model was compared with set A, by the rules in memory.yaml's header"
	}
	fmt.Fprintf(b, "\nSet %s (%s): %d cases, %d with unmodelled settings\n", st.Set, when, st.N, st.Unmodelled)
	fmt.Fprintf(b, "  compiled or ran: %d cases, median |error| %.1f%%, max %.1f%%, within 10%%: %d/%d\n",
		st.Measured, 100*st.Median, 100*st.Max, st.WithinTenth, st.Measured)
	fmt.Fprintf(b, "  OOM cases refused %d/%d (predicted > the HBM XLA had); of the others, %d predicted at the edge (the plan warns)\n", st.OOMRefused, st.OOM, st.OOMWarned)
	if st.OOMUnstated > 0 {
		fmt.Fprintf(b, "  of them, %d state no bytes (refused %d/%d): they are in no median below\n", st.OOMUnstated, st.OOMUnstatedRefused, st.OOMUnstated)
	}
	fmt.Fprintf(b, "  every case, OOM messages included: median |error| %.1f%%\n", 100*st.AllMedian)
	statedMedian := fmt.Sprintf("%.1f%%", 100*st.StatedMedian)
	if st.StatedBytes == 0 {
		statedMedian = "- (none states bytes)"
	}
	fmt.Fprintf(b, "  the %d cases whose settings shardlab states (no *): median |error| %s, OOM cases refused %d/%d, warned at the edge %d\n",
		st.Stated, statedMedian, st.StatedOOMRefused, st.StatedOOM, st.StatedOOMWarned)
}

// writeBreakdown writes the memory_analysis cases' arguments and
// temporaries beside cost's: the arguments are the parameters and the
// optimizer state (the train state MaxText donates, so the outputs alias
// them); the temporaries are the rest, gradients included.
func (rep MemoryReport) writeBreakdown(b *strings.Builder) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	n := 0
	for _, r := range rep.Results {
		bd := r.Case.Breakdown
		if r.Case.Kind != KindMemoryAnalysis || (bd.Argument == 0 && bd.Temp == 0) {
			continue
		}
		if n == 0 {
			fmt.Fprintln(b, "\nmemory_analysis: argument = parameters + optimizer state; temp = gradients, held activations and transients;")
			fmt.Fprintln(b, "host temp = what XLA places in pinned host memory, against cost's offloaded activations.")
			fmt.Fprintln(tw, "case\targument\tpredicted\terror\ttemp\tpredicted\terror\thost temp\tpredicted\terror")
		}
		n++
		arg, argErr, temp, tempErr, host, hostErr := "-", "-", "-", "-", "-", "-"
		if bd.Argument > 0 {
			arg, argErr = gib(bd.Argument), pct(r.ArgumentError)
		}
		if bd.Temp > 0 {
			temp, tempErr = gib(bd.Temp), pct(r.TempError)
		}
		if bd.HostTemp > 0 {
			host, hostErr = gib(bd.HostTemp), pct(r.HostError)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Case.ID, arg, gib(r.Arguments), argErr, temp, gib(r.Temp), tempErr, host, gib(r.Host), hostErr)
	}
	tw.Flush()
}

// MemoryJSON is the machine-readable memory report (shardlab validate
// --memory --json).
type MemoryJSON struct {
	Rows    []MemoryRowJSON `json:"rows"`
	Summary []MemoryStats   `json:"summary"`
	Batches *BatchReport    `json:"published_batches,omitempty"`
}

// MemoryRowJSON is one costed memory case; bytes are per JAX device
// unless the name says chip.
type MemoryRowJSON struct {
	ID                 string    `json:"id,omitempty"`
	Set                string    `json:"set,omitempty"`
	Date               string    `json:"date,omitempty"`
	Kind               string    `json:"kind"`
	Scope              string    `json:"scope"`
	Generation         string    `json:"generation"`
	AcceleratorType    string    `json:"accelerator_type"`
	Slices             int       `json:"slices"`
	Model              string    `json:"model"`
	DevicesPerChip     int       `json:"jax_devices_per_chip"`
	Reported           int64     `json:"reported_bytes,omitempty"`
	Capacity           int64     `json:"xla_capacity_bytes,omitempty"`
	Breakdown          Breakdown `json:"breakdown,omitzero"`
	PredictedChip      int64     `json:"predicted_total_bytes_per_chip"`
	PredictedTotal     int64     `json:"predicted_total_bytes"`
	PredictedArguments int64     `json:"predicted_argument_bytes"`
	PredictedTemp      int64     `json:"predicted_temp_bytes"`
	PredictedHost      int64     `json:"predicted_host_bytes"`
	Predicted          int64     `json:"predicted_bytes"`
	PredictedNeeded    int64     `json:"predicted_needed_bytes"`
	XLARecomputes      bool      `json:"xla_recomputes"`
	Error              *float64  `json:"relative_error,omitempty"`
	NeededError        *float64  `json:"needed_relative_error,omitempty"`
	Refused            *bool     `json:"refused,omitempty"`
	ArgumentError      *float64  `json:"argument_relative_error,omitempty"`
	TempError          *float64  `json:"temp_relative_error,omitempty"`
	HostError          *float64  `json:"host_temp_relative_error,omitempty"`
	PeakPhase          string    `json:"peak_phase"`
	Verdict            string    `json:"verdict"`
	Unmodelled         string    `json:"unmodelled,omitempty"`
	Source             Source    `json:"source,omitzero"`
}

// JSON returns the memory report's machine-readable form.
func (rep MemoryReport) JSON() MemoryJSON {
	out := MemoryJSON{Rows: []MemoryRowJSON{}, Summary: []MemoryStats{}, Batches: rep.Batches}
	for _, r := range rep.Results {
		out.Rows = append(out.Rows, r.JSON())
	}
	for _, s := range rep.sets() {
		out.Summary = append(out.Summary, rep.Summary(s))
	}
	return out
}

// JSON returns one costed case's machine-readable form.
func (r MemoryResult) JSON() MemoryRowJSON {
	c := r.Case
	row := MemoryRowJSON{ID: c.ID, Set: c.Set, Date: c.Date, Kind: c.Kind, Scope: c.Scope, Generation: c.Generation,
		AcceleratorType: c.AcceleratorType, Slices: c.Slices, Model: c.Model.Name, DevicesPerChip: r.DevicesPerChip,
		Reported: c.ReportedBytes, Capacity: c.CapacityBytes, Breakdown: c.Breakdown, PredictedChip: int64(r.Memory.Total()),
		PredictedTotal: r.Total, PredictedArguments: r.Arguments, PredictedTemp: r.Temp, PredictedHost: r.Host, Predicted: r.Predicted, Error: finite(r.Error),
		PredictedNeeded: r.Needed, XLARecomputes: r.Squeezed, NeededError: finite(r.NeededError),
		ArgumentError: finite(r.ArgumentError), TempError: finite(r.TempError), HostError: finite(r.HostError), PeakPhase: r.Memory.Peak, Verdict: r.verdict(),
		Unmodelled: c.Unmodelled, Source: c.Source}
	if c.Kind == KindOOM {
		refused := r.Refused
		row.Refused = &refused
	}
	return row
}

// WriteJSON writes the memory report as indented JSON.
func (rep MemoryReport) WriteJSON(w io.Writer) error {
	return schema.Write(w, rep.JSON())
}
