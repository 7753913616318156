package plan

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/mesh"
)

// table writes candidates a row each, with MFU against the bf16 peak and,
// for quantized candidates, against their format's peak in a column of
// its own. Where any row pipelines, the schedule and its chunks per
// device have columns ("-" on a row without a pipeline), as JSON's rows
// have them (RankJSON).
func table(b *strings.Builder, cs []Candidate) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	var formats []hw.Format
	piped := false
	for _, c := range cs {
		if q := c.Estimate.Job.Quantization; q != cost.QuantNone && !slices.Contains(formats, q.Format()) {
			formats = append(formats, q.Format())
		}
		piped = piped || pipelineSchedule(c.Estimate) != ""
	}
	sched := func(e cost.Estimate) string {
		if !piped {
			return ""
		}
		if s := pipelineSchedule(e); s != "" {
			return fmt.Sprintf("%s\t%d\t", s, max(e.Job.Chunks, 1))
		}
		return "-\t-\t"
	}
	devs, disp := columns(cs)
	head := ""
	if piped {
		head = "schedule\tchunks\t"
	}
	fmt.Fprintf(tw, "  #\tlayout\t%stier\tremat\t%s%smicro\tbatch\tstep\tMFU %s\t", devs(nil), disp(nil), head, hw.BF16)
	for _, f := range formats {
		fmt.Fprintf(tw, "MFU %s\t", f)
	}
	fmt.Fprintln(tw, "tokens/s/chip\tHBM\t")
	for i, c := range cs {
		e := c.Estimate
		fmt.Fprintf(tw, "  %d\t%s\t%s%s\t%s\t%s%s%d\t%d\t%s\t%.1f%%\t", i+1, e.Mesh, devs(&e), c.Name(), e.Job.Remat, disp(&e), sched(e), e.Job.MicroBatches,
			e.Job.GlobalBatch, dur(e.Time.Step), 100*e.MFU)
		for _, f := range formats {
			if e.Job.Quantization.Format() == f {
				fmt.Fprintf(tw, "%.1f%%\t", 100*e.QuantizedMFU)
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintf(tw, "%s\t%v\t\n", count(e.TokensPerSecondPerChip), e.Memory.Total())
	}
	tw.Flush()
}

// columns are the table's optional cells, each "" where no row needs it,
// a heading for nil: the layout in JAX devices where a row's differs from
// its chip layout (deviceSpec, "-" on a row where they agree), and the
// expert dispatch where the rows hold more than one, so that rows that
// differ only in them can be told apart (RankJSON's device_spec and
// dispatch).
func columns(cs []Candidate) (devs, disp func(*cost.Estimate) string) {
	anyDevs, dispatches := false, map[string]bool{}
	for _, c := range cs {
		anyDevs = anyDevs || deviceSpec(c.Estimate) != ""
		dispatches[dispatch(c.Estimate)] = true
	}
	cell := func(show bool, heading string, value func(cost.Estimate) string) func(*cost.Estimate) string {
		return func(e *cost.Estimate) string {
			switch {
			case !show:
				return ""
			case e == nil:
				return heading + "\t"
			}
			if v := value(*e); v != "" {
				return v + "\t"
			}
			return "-\t"
		}
	}
	return cell(anyDevs, "JAX devices", deviceSpec), cell(len(dispatches) > 1, "dispatch", dispatch)
}

// RankJSON summarises a ranked layout.
type RankJSON struct {
	Tier         string `json:"tier"`
	Layout       string `json:"layout"`
	Remat        string `json:"remat"`
	MicroBatches int    `json:"micro_batches"`
	// Schedule and Chunks are the layout's pipeline schedule and its
	// chunks of layers per device, as JSON's: schedule absent without a
	// pipeline, so that rows that differ only in them can be told apart
	// and run again (--schedule, --chunks).
	Schedule string `json:"schedule,omitempty"`
	Chunks   int    `json:"chunks_per_device"`
	// DeviceSpec is the layout in JAX devices, where it differs from
	// Layout (as JSON's layout.device_spec, which the {mesh} option
	// takes on such a chip); Dispatch is an MoE row's expert dispatch (as
	// experts.dispatch): rows that differ only in them can be told apart.
	DeviceSpec  string  `json:"device_spec,omitempty"`
	Dispatch    string  `json:"dispatch,omitempty"`
	GlobalBatch int     `json:"global_batch_sequences"`
	StepSeconds float64 `json:"step_time_s"`
	// MFU is against the bf16 peak, QuantizedMFU against the quantized
	// format's, as in JSON.
	MFU          float64 `json:"mfu_fraction"`
	QuantizedMFU float64 `json:"quantized_mfu_fraction,omitempty"`
	TokensChip   float64 `json:"tokens_per_s_per_chip"`
	HBMBytes     int64   `json:"hbm_used_bytes"`
}

func rank(c Candidate) RankJSON {
	e := c.Estimate
	return RankJSON{Tier: c.Name(), Layout: e.Mesh.String(), Remat: string(e.Job.Remat), MicroBatches: e.Job.MicroBatches,
		Schedule: pipelineSchedule(e), Chunks: max(e.Job.Chunks, 1), DeviceSpec: deviceSpec(e), Dispatch: dispatch(e), GlobalBatch: e.Job.GlobalBatch, StepSeconds: e.Time.Step.Seconds(), MFU: e.MFU, QuantizedMFU: e.QuantizedMFU, TokensChip: e.TokensPerSecondPerChip,
		HBMBytes: int64(e.Memory.Total())}
}

// DispatchNone is the dispatch of an MoE layout without an expert axis
// (expert 1): every device routes its own tokens to experts it holds or
// gathers as it does the other weights, and no dispatch collective runs.
const DispatchNone = "none"

// dispatch is how an MoE estimate dispatches its tokens to the experts,
// "all-to-all" or "ring of experts" (MaxText's use_ring_of_experts) over
// the expert axis, DispatchNone without one; "" for a dense model.
func dispatch(e cost.Estimate) string {
	switch {
	case !e.Job.Model.MoE():
		return ""
	case e.Mesh.Size(mesh.Expert) <= 1:
		return DispatchNone
	case e.Job.RingOfExperts:
		return "ring of experts"
	}
	return "all-to-all"
}
