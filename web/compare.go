package web

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/url"
	"time"

	"shardlab/hw"
	"shardlab/plan"
)

// Compare: the page pins up to MaxPins plans (the form's query of each,
// in the URL's pin parameters) and shows them side by side: a table of
// their figures and the bar charts with one row per pinned plan.

// MaxPins is the most plans the page compares.
const MaxPins = 4

// optionPin is the query parameter of a pinned plan: the form's query
// that asks it.
const optionPin = "pin"

// pinView is one pinned plan, or the error that stops it.
type pinView struct {
	Index int          // from 1
	Query template.URL // the form's query that asks it
	Label string
	J     plan.JSON
	Error string
}

// compareView is the pinned plans side by side.
type compareView struct {
	Pins   []pinView
	Charts []chartView
}

// compare plans each pinned query (at most MaxPins; more is an error),
// all within one request's Timeout, and draws their bars together.
func (h *Handler) compare(ctx context.Context, pins []string) (*compareView, error) {
	if len(pins) == 0 {
		return nil, nil
	}
	if len(pins) > MaxPins {
		return nil, plain("%d plans pinned, want at most %d: unpin some", len(pins), MaxPins)
	}
	// the pins share one request's deadline: a page with four pins costs
	// at most what one search may
	client := ctx
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	v := &compareView{}
	var plans []plan.Plan
	var labels []string
	for i, pin := range pins {
		q, _ := url.ParseQuery(pin) // a malformed pin is refused below
		pv := pinView{Index: i + 1, Query: queryURL(q)}
		o, _, bad := planForm.options(pin, h.cfg, nil)
		out, err := h.run(ctx, o, bad, false)
		if err == nil {
			pv.J = out.plan.JSON(label)
			pv.Label = pinLabel(i+1, out.plan)
			plans, labels = append(plans, out.plan), append(labels, pv.Label)
		}
		if errors.Is(err, errGone) && client.Err() == nil {
			err = errTimeout // the pins' deadline, not the client, ended it
		}
		if err != nil {
			_, fes := h.status(err)
			pv.Label, pv.Error = fmt.Sprintf("#%d", i+1), fes.Phrase(label)
		}
		v.Pins = append(v.Pins, pv)
	}
	if len(plans) > 0 {
		for _, c := range compareBars(plans, labels) {
			v.Charts = append(v.Charts, chartView{Name: "compare-" + c.Name, Title: c.Title, SVG: c.SVG(), Table: c.Table()})
		}
	}
	return v, nil
}

// pinLabel names a pinned plan in full: its number, model, slices and
// accelerator type, and chosen layout.
func pinLabel(i int, p plan.Plan) string {
	e := p.Best.Estimate
	ms := e.Mesh.Multislice
	return fmt.Sprintf("#%d %s on %d × %s: %s, remat %s", i, p.Request.Model.Name, ms.Slices, ms.Slice.AcceleratorType(), e.Mesh, e.Job.Remat)
}

// compareBars are the bar charts of the pinned plans' chosen layouts, a
// row each: HBM by component (the usable HBM in each row's name when the
// plans' differ, else the line), step time and MFU with their bands.
func compareBars(plans []plan.Plan, labels []string) []hchart {
	mem := hchart{Name: "memory", Title: "HBM per chip by component, pinned plans", Unit: "GiB", Axis: "HBM per chip, GiB",
		Series: []string{"weights", "gradients", "optimizer state", "held activations", "transient (peak phase)"}}
	same := true
	for _, p := range plans {
		same = same && p.Best.Estimate.Memory.Usable == plans[0].Best.Estimate.Memory.Usable
	}
	if same {
		mem.Line, mem.LineLabel = float64(plans[0].Best.Estimate.Memory.Usable)/gib, "usable HBM"
	}
	slow := time.Duration(0)
	for _, p := range plans {
		slow = max(slow, p.Best.Estimate.Time.Step)
	}
	scale, u := 1.0, "s"
	if slow < time.Second {
		scale, u = 1e3, "ms"
	}
	step := hchart{Name: "step", Title: "Step time by what the chip waits on, pinned plans", Unit: u,
		Axis:   "step time, " + map[string]string{"s": "seconds", "ms": "milliseconds"}[u],
		Series: []string{"compute", "exposed ICI", "exposed DCN", "slice sync", "pipeline bubble"}}
	mfu := hchart{Name: "mfu", Title: "MFU, % of the " + string(hw.BF16) + " peak, pinned plans", Unit: "%",
		Axis: "MFU, % of the chip's " + string(hw.BF16) + " peak", Series: []string{"MFU"}}
	for i, p := range plans {
		e := p.Best.Estimate
		m, t := e.Memory, e.Time
		name := labels[i]
		if !same {
			name += fmt.Sprintf(" (usable HBM %v)", m.Usable)
		}
		mem.Bars = append(mem.Bars, hbar{Label: name, Values: []float64{float64(m.Weights) / gib, float64(m.Gradients) / gib,
			float64(m.Optimizer) / gib, float64(m.Activations) / gib, float64(m.Transient) / gib}})
		sb := hbar{Label: labels[i], Values: []float64{t.Compute.Seconds() * scale, t.ICI.Seconds() * scale,
			t.DCN.Seconds() * scale, t.Sync.Seconds() * scale, t.Bubble.Seconds() * scale}}
		mb := hbar{Label: labels[i], Values: []float64{100 * e.MFU}}
		if band, ok := p.PredictionBand(); ok {
			sb.Low, sb.High = band.Step(t.Step.Seconds() * scale)
			lo, hi := band.Rate(e.MFU)
			mb.Low, mb.High = 100*lo, 100*hi
			step.BandLabel = "each plan's error band (validate's held-out 10–90th percentiles)"
			mfu.BandLabel = step.BandLabel
		}
		step.Bars, mfu.Bars = append(step.Bars, sb), append(mfu.Bars, mb)
	}
	return []hchart{mem, step, mfu}
}
