package plan

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"shardlab/cost"
	"shardlab/hw"
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
	head := ""
	if piped {
		head = "schedule\tchunks\t"
	}
	fmt.Fprintf(tw, "  #\tlayout\ttier\tremat\t%smicro\tbatch\tstep\tMFU %s\t", head, hw.BF16)
	for _, f := range formats {
		fmt.Fprintf(tw, "MFU %s\t", f)
	}
	fmt.Fprintln(tw, "tokens/s/chip\tHBM\t")
	for i, c := range cs {
		e := c.Estimate
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s%d\t%d\t%s\t%.1f%%\t", i+1, e.Mesh, c.Name(), e.Job.Remat, sched(e), e.Job.MicroBatches,
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
