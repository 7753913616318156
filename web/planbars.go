package web

import (
	"fmt"
	"strings"

	"shardlab/chart"
	"shardlab/cost"
	"shardlab/hw"
	"shardlab/plan"
)

// The page's bar charts of a plan: HBM per chip by component, HBM per
// chip by phase of the step (what is live at the peak), the step time by
// what the chip waits on, and MFU; the layouts they compare are
// chart.Layouts', each named in full.

const gib = 1 << 30

// layoutLabels are chart.Layouts' layouts, each named in full: its place
// (chosen, #rank in the chosen tier, alt: another tier's best), its mesh,
// remat policy, global batch and micro-batches.
func layoutLabels(p plan.Plan) ([]plan.Candidate, []string) {
	cs, short := chart.Layouts(p)
	labels := make([]string, len(cs))
	for i, c := range cs {
		place, _, _ := strings.Cut(short[i], " ")
		j := c.Estimate.Job
		s := fmt.Sprintf("%s: %s, remat %s, global batch %d", place, c.Estimate.Mesh, j.Remat, j.GlobalBatch)
		if j.MicroBatches > 1 {
			s += fmt.Sprintf(", %d micro-batches", j.MicroBatches)
		}
		if place == "alt" {
			s += " (" + c.Name() + ")"
		}
		labels[i] = s
	}
	return cs, labels
}

// bandLabel names the plan's error band in a legend.
func bandLabel(b cost.StepBand) string {
	return fmt.Sprintf("the model's error band (validate's held-out %.0f–%.0fth percentiles, %s)", 100*cost.BandLow, 100*cost.BandHigh, b.Runs())
}

// memoryBars is HBM per chip by component for each layout, against the
// usable HBM.
func memoryBars(p plan.Plan) hchart {
	cs, labels := layoutLabels(p)
	mem := p.Best.Estimate.Memory
	c := hchart{Name: "memory", Title: fmt.Sprintf("HBM per chip by component (usable %v of %v)", mem.Usable, mem.HBM),
		Unit: "GiB", Axis: "HBM per chip, GiB", Series: []string{"weights", "gradients", "optimizer state", "held activations", "transient (peak phase)"},
		Line: float64(mem.Usable) / gib, LineLabel: "usable HBM"}
	for i, cd := range cs {
		m := cd.Estimate.Memory
		c.Bars = append(c.Bars, hbar{Label: labels[i], Bold: i == 0, Values: []float64{
			float64(m.Weights) / gib, float64(m.Gradients) / gib, float64(m.Optimizer) / gib, float64(m.Activations) / gib, float64(m.Transient) / gib}})
	}
	return c
}

// phaseBars is the chosen layout's HBM per chip in each phase of the
// step: the model state and the held activations, live throughout, and
// the phase's own buffers; the largest phase is the peak.
func phaseBars(p plan.Plan) hchart {
	mem := p.Best.Estimate.Memory
	c := hchart{Name: "phases", Title: fmt.Sprintf("HBM per chip by phase of the step, chosen layout (%s)", p.Best.Estimate.Mesh),
		Unit: "GiB", Axis: "HBM per chip, GiB", Series: []string{"model state", "held activations"},
		Line: float64(mem.Usable) / gib, LineLabel: "usable HBM"}
	at := map[string]int{}
	for _, ph := range mem.Phases {
		for _, b := range ph.Buffers {
			if _, ok := at[b.Name]; !ok {
				at[b.Name] = len(c.Series)
				c.Series = append(c.Series, b.Name)
			}
		}
	}
	for _, ph := range mem.Phases {
		v := make([]float64, len(c.Series))
		v[0], v[1] = float64(mem.State())/gib, float64(mem.Activations)/gib
		for _, b := range ph.Buffers {
			v[at[b.Name]] += float64(b.Bytes) / gib
		}
		label := ph.Name
		if ph.Name == mem.Peak {
			label += " (the peak)"
		}
		c.Bars = append(c.Bars, hbar{Label: label, Values: v, Bold: ph.Name == mem.Peak})
	}
	return c
}

// stepBars is the step time per sequence of each layout's global batch
// (chart.PerSequence: the layouts run different batches), by what the
// chip waits on, with the error band on each.
func stepBars(p plan.Plan) hchart {
	cs, labels := layoutLabels(p)
	_, best := chart.PerSequence(p.Best)
	scale, u := 1.0, "s"
	if best < 1 {
		scale, u = 1e3, "ms"
	}
	e := p.Best.Estimate
	c := hchart{Name: "step", Title: fmt.Sprintf("Step time per sequence of each layout's global batch, by what the chip waits on (chosen: %s %s a sequence, a step of %s s for %d)",
		number(best*scale), u, number(e.Time.Step.Seconds()), e.Job.GlobalBatch),
		Unit: u, Axis: "step time per sequence, " + map[string]string{"s": "seconds", "ms": "milliseconds"}[u],
		Series: chart.StepParts}
	band, banded := p.PredictionBand()
	if banded {
		c.BandLabel = bandLabel(band)
	}
	for i, cd := range cs {
		parts, total := chart.PerSequence(cd)
		b := hbar{Label: labels[i], Bold: i == 0, Values: make([]float64, len(parts))}
		for j, v := range parts {
			b.Values[j] = v * scale
		}
		if banded {
			b.Low, b.High = band.Step(total * scale)
		}
		c.Bars = append(c.Bars, b)
	}
	return c
}

// mfuBars is each layout's MFU against the bf16 peak, with the error band.
func mfuBars(p plan.Plan) hchart {
	cs, labels := layoutLabels(p)
	c := hchart{Name: "mfu", Title: "MFU, % of the " + string(hw.BF16) + " peak", Unit: "%",
		Axis: "MFU, % of the chip's " + string(hw.BF16) + " peak", Series: []string{"MFU"}}
	band, banded := p.PredictionBand()
	if banded {
		c.BandLabel = bandLabel(band)
	}
	for i, cd := range cs {
		b := hbar{Label: labels[i], Bold: i == 0, Values: []float64{100 * cd.Estimate.MFU}}
		if banded {
			lo, hi := band.Rate(cd.Estimate.MFU)
			b.Low, b.High = 100*lo, 100*hi
		}
		c.Bars = append(c.Bars, b)
	}
	return c
}

// planBars are the page's bar charts of p.
func planBars(p plan.Plan) []hchart {
	cs := []hchart{memoryBars(p)}
	if len(p.Best.Estimate.Memory.Phases) > 0 {
		cs = append(cs, phaseBars(p))
	}
	return append(cs, stepBars(p), mfuBars(p))
}

// scalingCharts are package chart's charts that search the plan again
// (slices, batch) and the pipeline's timeline, which apply to the plan;
// skipped says why the others do not (chart.Draw).
func scalingCharts(p plan.Plan) (charts []chart.Chart, skipped []string, err error) {
	return chart.Draw(p, chart.Slices, chart.Batch, chart.Pipeline)
}

// drawnHere are the names of package chart's charts the page draws itself.
var drawnHere = map[string]bool{"memory": true, "step": true}
