package validate

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/mesh"
	"shardlab/schema"
)

// Generations lists the generations in the report, in catalog order.
func (rep Report) Generations() []hw.Generation {
	seen := map[hw.Generation]bool{}
	var out []hw.Generation
	for _, r := range rep.Results {
		g := r.Estimate.Mesh.Multislice.Slice.Chip.Generation
		if !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	order := map[hw.Generation]int{}
	for i, c := range hw.Chips() {
		order[c.Generation] = i
	}
	sort.Slice(out, func(a, b int) bool { return order[out[a]] < order[out[b]] })
	return out
}

// OfGeneration keeps the held-out rows of one generation.
func OfGeneration(g hw.Generation) func(Result) bool {
	return func(r Result) bool { return HeldOut(r) && r.Estimate.Mesh.Multislice.Slice.Chip.Generation == g }
}

// Series is a run measured at several slice counts: the ratio of MFU at
// the most slices to MFU at one, published and predicted.
type Series struct {
	Key       string  `json:"key"`
	Slices    int     `json:"slices"`
	Published float64 `json:"published_ratio"`
	Predicted float64 `json:"predicted_ratio"`
}

// MultisliceSeries finds every group of rows that differ only in their
// DCN data factor (same model, accelerator type, per-device batch and
// remat) and that includes one slice, and gives the ratio at its largest
// slice count.
func (rep Report) MultisliceSeries() []Series {
	groups := map[string][]Result{}
	var keys []string
	for _, r := range rep.Results {
		run := r.Run
		k := fmt.Sprintf("%s on %s, %g per device, %s", run.Model.Name, run.AcceleratorType, run.PerDeviceBatchSize, run.RematPolicy)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	var out []Series
	for _, k := range keys {
		g := groups[k]
		var one, most *Result
		for i := range g {
			switch s := max(g[i].Run.Slices, 1); {
			case s == 1:
				one = &g[i]
			case most == nil || s > most.Run.Slices:
				most = &g[i]
			}
		}
		if one == nil || most == nil {
			continue
		}
		out = append(out, Series{Key: k, Slices: most.Run.Slices,
			Published: most.Run.Published.MFU / one.Run.Published.MFU, Predicted: most.Predicted / one.Predicted})
	}
	return out
}

// JSON is the machine-readable report (shardlab validate --json).
type JSON struct {
	Rows         []RowJSON          `json:"rows"`
	Overall      Stats              `json:"held_out"`
	Calibration  Stats              `json:"calibration"`
	MoE          Stats              `json:"mixture_of_experts"`
	Prospective  Stats              `json:"prospective"`
	ByGeneration map[string]Stats   `json:"held_out_by_generation"`
	Efficiency   map[string]float64 `json:"residual_efficiency_by_generation"`
	Multislice   []Series           `json:"multislice_series"`
}

// RowJSON is one costed run.
type RowJSON struct {
	ID          string `json:"id"`
	Generation  string `json:"generation"`
	Accelerator string `json:"accelerator_type"`
	Slices      int    `json:"slices"`
	Model       string `json:"model"`
	Layout      string `json:"layout"`
	// CustomMesh is MaxText's custom_mesh the run's layout was placed on
	// (layout.custom_mesh in runs.yaml), absent for create_device_mesh's.
	CustomMesh string `json:"custom_mesh,omitempty"`
	Remat      string `json:"remat"`
	// Published and Predicted are MFU against the chip's bf16 peak.
	Published float64 `json:"published_mfu_fraction"`
	Predicted float64 `json:"predicted_mfu_fraction"`
	MFUPeak   string  `json:"mfu_peak"`
	// A quantized run's MFU against its format's peak besides.
	PublishedQuantized float64 `json:"published_quantized_mfu_fraction,omitempty"`
	PredictedQuantized float64 `json:"predicted_quantized_mfu_fraction,omitempty"`
	QuantizedMFUPeak   string  `json:"quantized_mfu_peak,omitempty"`
	Error              float64 `json:"relative_error"`
	Fits               bool    `json:"fits"`
	// HostRAMUnchecked: the run offloads to a VM whose RAM is not
	// published, so Fits held it to HBM alone (cost.Memory.HostUnchecked).
	HostRAMUnchecked bool   `json:"host_ram_unchecked,omitempty"`
	HBMUsed          int64  `json:"hbm_used_bytes"`
	HBMUsable        int64  `json:"hbm_usable_capacity_bytes"`
	Calibration      bool   `json:"calibration"`
	Source           Source `json:"source"`
}

// layoutCell is a row's layout in the text table: the mesh, and the
// custom_mesh MaxText placed it on where it is not create_device_mesh's.
func layoutCell(m mesh.Mesh) string {
	if c := m.Custom(); c != mesh.Standard {
		return m.String() + " on " + c.String()
	}
	return m.String()
}

// JSON returns the report's machine-readable form.
func (rep Report) JSON() JSON {
	out := JSON{Rows: []RowJSON{}, Overall: rep.Summary(HeldOut), Calibration: rep.Summary(Calibration),
		MoE: rep.Summary(MoE), Prospective: rep.Summary(Prospective), ByGeneration: map[string]Stats{}, Efficiency: map[string]float64{}, Multislice: rep.MultisliceSeries()}
	for _, r := range rep.Results {
		e := r.Estimate
		out.Rows = append(out.Rows, RowJSON{ID: r.Run.ID, Generation: string(e.Mesh.Multislice.Slice.Chip.Generation),
			Accelerator: r.Run.AcceleratorType, Slices: max(r.Run.Slices, 1), Model: r.Run.Model.Name, Layout: e.Mesh.String(),
			CustomMesh: e.Mesh.Custom().String(), Remat: string(e.Job.Remat), Published: r.Run.Published.MFU, Predicted: r.Predicted, Error: r.Error,
			Fits: e.Memory.Fits(), HostRAMUnchecked: e.Memory.HostUnchecked(), HBMUsed: int64(e.Memory.Total()), HBMUsable: int64(e.Memory.Usable), Calibration: r.Run.Calibration,
			MFUPeak: string(hw.BF16), Source: r.Run.Source})
		if f, ratio := r.quantizedPeak(); ratio > 0 {
			row := &out.Rows[len(out.Rows)-1]
			row.PublishedQuantized, row.PredictedQuantized, row.QuantizedMFUPeak = r.Run.Published.MFU*ratio, r.Predicted*ratio, string(f)
		}
	}
	for _, g := range rep.Generations() {
		out.ByGeneration[string(g)] = rep.Summary(OfGeneration(g))
		if len(rep.Results) > 0 {
			out.Efficiency[string(g)] = effOf(rep, g)
		}
	}
	if out.Multislice == nil {
		out.Multislice = []Series{}
	}
	return out
}

func effOf(rep Report, g hw.Generation) float64 {
	for _, r := range rep.Results {
		if c := r.Estimate.Mesh.Multislice.Slice.Chip; c.Generation == g {
			return r.Estimate.Job.EfficiencyFor(c)
		}
	}
	return 0
}

// WriteJSON writes the report as indented JSON.
func (rep Report) WriteJSON(w io.Writer) error {
	return schema.Write(w, rep.JSON())
}

// quantizedPeak is the format a quantized run's matmuls run in and the
// ratio of the chip's bf16 peak to that format's peak (MFU against the
// bf16 peak times it is MFU against the format's), or 0 for a bf16 run.
func (r Result) quantizedPeak() (hw.Format, float64) {
	j := r.Estimate.Job
	if j.Quantization == cost.QuantNone {
		return "", 0
	}
	chip := r.Estimate.Mesh.Multislice.Slice.Chip
	f := j.Quantization.Format()
	bf16, _ := chip.Peak(hw.BF16)
	q, ok := chip.Peak(f)
	if !ok {
		return "", 0
	}
	return f, float64(bf16) / float64(q)
}

// fitsCell is a row's HBM column: what it uses of the usable HBM, and
// whether it does not fit or fits with its host RAM unchecked.
func fitsCell(m cost.Memory) string {
	fits := fmt.Sprintf("%v of %v", m.Total(), m.Usable)
	switch {
	case !m.Fits():
		fits += " DOES NOT FIT"
	case m.HostUnchecked():
		fits += ", host RAM unchecked"
	}
	return fits
}

// writeLine writes the summary line of a set of runs named name: its
// errors and how many fit, and how many have their host RAM unchecked,
// where any do.
func (s Stats) writeLine(b *strings.Builder, name string) {
	unchecked := ""
	if s.HostUnchecked > 0 {
		unchecked = fmt.Sprintf(", host RAM unchecked %d", s.HostUnchecked)
	}
	fmt.Fprintf(b, "  %-22s %3d runs  median |error| %5.1f%%  90th percentile %5.1f%%  max %5.1f%%  fit (HBM, host RAM) %d/%d%s\n",
		name, s.N, 100*s.Median, 100*s.P90, 100*s.Max, s.Fit, s.N, unchecked)
}

// WriteText writes the report for people: a row per run, then the error
// over the held-out rows, overall and per generation, and the multislice
// series.
func (rep Report) WriteText(w io.Writer) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(&b, "MFU against the chip's %s peak (a quantized run's also against its format's peak, after the slash):\n", hw.BF16)
	fmt.Fprintln(tw, "run\tlayout\tremat\tpublished\tpredicted\terror\tHBM\t")
	for _, r := range rep.Results {
		e := r.Estimate
		fits := fitsCell(e.Memory)
		mark := ""
		if r.Run.Calibration {
			mark = " (cal)"
		}
		if r.Run.Prospective {
			mark = " (new)"
		}
		published, predicted := fmt.Sprintf("%.1f%%", 100*r.Run.Published.MFU), fmt.Sprintf("%.1f%%", 100*r.Predicted)
		if f, ratio := r.quantizedPeak(); ratio > 0 {
			published += fmt.Sprintf(" / %.1f%% %s", 100*r.Run.Published.MFU*ratio, f)
			predicted += fmt.Sprintf(" / %.1f%% %s", 100*r.Predicted*ratio, f)
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%+.1f%%\t%s\t\n", r.Run.ID, mark, layoutCell(e.Mesh), e.Job.Remat,
			published, predicted, 100*r.Error, fits)
	}
	tw.Flush()
	stat := func(name string, s Stats) { s.writeLine(&b, name) }
	fmt.Fprintf(&b, "\nMFU error, (predicted − published) / published:\n")
	stat("held out (dense)", rep.Summary(HeldOut))
	stat("calibration rows", rep.Summary(Calibration))
	if st := rep.Summary(MoE); st.N > 0 {
		stat("mixture of experts", st)
	}
	if st := rep.Summary(Prospective); st.N > 0 {
		stat("prospective", st)
	}
	for _, g := range rep.Generations() {
		stat(string(g)+" (held out)", rep.Summary(OfGeneration(g)))
	}
	fmt.Fprintf(&b, "\nResidual efficiency by generation (fitted on the calibration rows):")
	for _, g := range rep.Generations() {
		fmt.Fprintf(&b, " %s %.3f", g, effOf(rep, g))
	}
	fmt.Fprintln(&b)
	if ss := rep.MultisliceSeries(); len(ss) > 0 {
		fmt.Fprintf(&b, "\nMultislice scaling, MFU at N slices / MFU at 1:\n")
		for _, s := range ss {
			fmt.Fprintf(&b, "  %-48s N=%-3d published %.3f  predicted %.3f  (%+.3f)\n", s.Key, s.Slices, s.Published, s.Predicted, s.Predicted-s.Published)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
