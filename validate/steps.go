package validate

import (
	"fmt"
	"io"
	"text/tabwriter"

	"shardlab/plan"
	"shardlab/schema"
)

// StepTimes is each costed run's step time by part, to see where a
// prediction goes wrong (shardlab validate --breakdown).
type StepTimes struct {
	Results []Result
}

// StepTimes returns the report's step times by part.
func (rep Report) StepTimes() StepTimes { return StepTimes{Results: rep.Results} }

// WriteText writes a row per run: the step time, each part's share of
// it, the MXU efficiency and the global batch.
func (s StepTimes) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run	step s	matmul	attention	memory-bound	optimizer	offload	ICI	DCN	slice sync	bubble	MXU eff	batch	")
	for _, r := range s.Results {
		t := r.Estimate.Time
		st := t.Step.Seconds()
		pct := func(d float64) string { return fmt.Sprintf("%.1f%%", 100*d/st) }
		fmt.Fprintf(tw, "%s\t%.3f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.3f\t%d\t\n", r.Run.ID, st, pct(t.MXU.Seconds()), pct(t.Attention.Seconds()),
			pct(t.Vector.Seconds()), pct(t.Optimizer.Seconds()), pct(t.Offload.Seconds()), pct(t.ICI.Seconds()), pct(t.DCN.Seconds()), pct(t.Sync.Seconds()),
			pct(t.Bubble.Seconds()), r.Estimate.MXUEfficiency, r.Estimate.Job.GlobalBatch)
	}
	return tw.Flush()
}

// StepTimesJSON is the machine-readable step times (shardlab validate
// --breakdown --json).
type StepTimesJSON struct {
	Rows []StepRowJSON `json:"rows"`
}

// StepRowJSON is one run's step: its parts in seconds under the keys
// plan --json gives them (plan.StepJSON: total_s is the step time), the
// MXU efficiency and the global batch.
type StepRowJSON struct {
	ID          string        `json:"id"`
	Step        plan.StepJSON `json:"step_time"`
	MXU         float64       `json:"mxu_efficiency_fraction"`
	GlobalBatch int           `json:"global_batch_sequences"`
}

// JSON returns the step times' machine-readable form.
func (s StepTimes) JSON() StepTimesJSON {
	out := StepTimesJSON{Rows: []StepRowJSON{}}
	for _, r := range s.Results {
		out.Rows = append(out.Rows, StepRowJSON{ID: r.Run.ID, Step: plan.StepOf(r.Estimate.Time),
			MXU: r.Estimate.MXUEfficiency, GlobalBatch: r.Estimate.Job.GlobalBatch})
	}
	return out
}

// WriteJSON writes the step times as indented JSON.
func (s StepTimes) WriteJSON(w io.Writer) error {
	return schema.Write(w, s.JSON())
}
