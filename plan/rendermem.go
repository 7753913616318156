package plan

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"shardlab/cost"
	"shardlab/unit"
)

// mostText is the most sequences per batch shard per micro-batch, most, in
// words: per chip, with the batch shard's where a chip takes fewer.
func mostText(cb ChipBatch, most int) string {
	if cb.PerChip == 0 {
		return unit.Plural(most, "sequence") + " per batch shard per micro-batch"
	}
	if !cb.Shared() {
		return sequences(cb.perChip(most)) + " per chip per micro-batch"
	}
	return fmt.Sprintf("%s per batch shard per micro-batch (%s per chip)", unit.Plural(most, "sequence"), decimal(cb.perChip(most)))
}

// writeMemory writes HBM per chip by component, what is left, the most
// sequences per micro-batch that fit, with what stops one more
// (limit: HBM, host memory, or the batch limit), and, where XLA keeps
// more than the job needs while HBM allows, what its memory report should
// read (writeXLAReport).
func writeMemory(b *strings.Builder, p Plan) {
	m, most, limit := p.Best.Estimate.Memory, p.MaxMicroBatch, p.MaxMicroBatchBound
	fits := fmt.Sprintf("fits, %v left", m.Usable-m.Total())
	if !m.Fits() {
		fits = "DOES NOT FIT: " + m.Shortfall()
	}
	fmt.Fprintf(b, "HBM per chip: %v of %v usable (%v HBM), %s\n", m.Total(), m.Usable, m.HBM, fits)
	if most > 0 {
		_, stop := bound(limit)
		fmt.Fprintf(b, "  at most %s fit this layout (%s stops one more); the largest phase is the %s\n", mostText(p.ChipBatch(), most), stop, m.Peak)
	}
	if p.Request.Framework != FrameworkPyTorch {
		// what MaxText's compile reports; a PyTorch script is another program
		report, squeezed := p.XLAReport()
		writeXLAReport(b, m, report, squeezed)
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, c := range []struct {
		name string
		v    unit.Bytes
	}{{"weights", m.Weights}, {"gradients", m.Gradients}, {"optimizer", m.Optimizer},
		{"activations", m.Activations}, {"transient", m.Transient}} {
		fmt.Fprintf(tw, "  %s\t%v\n", c.name, c.v)
	}
	switch {
	case m.Host > 0 && m.HostUsable > 0:
		fmt.Fprintf(tw, "  host memory\t%v\t(offloaded, per chip, of %v: the chip's share of its VM's RAM)\n", m.Host, m.HostUsable)
	case m.Host > 0:
		fmt.Fprintf(tw, "  host memory\t%v\t(offloaded, per chip; the VM's RAM is not published: not checked)\n", m.Host)
	}
	tw.Flush()
}

// XLAReport is what the plan's train_compile should report per JAX device
// (cost.Memory.Report, over the chip's devices: XLA prints it per device),
// and whether XLA recomputes to get there.
func (p Plan) XLAReport() (perDevice unit.Bytes, squeezed bool) {
	report, squeezed := p.Best.Estimate.Memory.Report()
	return report / unit.Bytes(max(p.Request.Multislice.Slice.Chip.JAXDevicesPerChip, 1)), squeezed
}

// writeXLAReport says, for a job that fits whose laid-out peak
// (cost.Memory.Nominal) is above what it needs, what XLA's memory report
// of it should read (report, per JAX device; squeezed where XLA
// recomputes to fit): what `shardlab check --compile-log` holds a compile
// log to. Where another pipeline stage lays out the larger peak
// (cost.Memory.LaidOut), it names that stage, what it needs and what it
// keeps.
func writeXLAReport(b *strings.Builder, m cost.Memory, report unit.Bytes, squeezed bool) {
	raise := m.Nominal() - m.Total()
	if raise <= 0 || !m.Fits() {
		return
	}
	names, kept := recomputable(m.Phases)
	subject := "as laid out the step"
	what := fmt.Sprintf("%s, %v a chip, which raise its peak by %v", strings.Join(names, " and "), kept, raise)
	if l := m.LaidOut; l != nil {
		names, kept = recomputable(l.Phases)
		subject = fmt.Sprintf("the same program runs on every pipeline stage, and as laid out the %s stage, which needs %v (its largest phase the %s),", l.Stage, l.Total(), l.Peak)
		what = fmt.Sprintf("%s, %v a chip, which raise the peak above this stage's %v by %v", strings.Join(names, " and "), kept, m.Total(), raise)
	}
	if squeezed {
		fmt.Fprintf(b, "  XLA's memory report (train_compile) should read at most %v a JAX device, its limit: %s would also keep %s, and XLA recomputes them to fit\n", report, subject, what)
		return
	}
	fmt.Fprintf(b, "  XLA's memory report (train_compile) should read about %v a JAX device: %s also keeps %s, while HBM allows\n", report, subject, what)
}

// recomputable is the names of the recomputable buffers of phases, each
// once, and their bytes together.
func recomputable(phases []cost.Phase) (names []string, kept unit.Bytes) {
	for _, p := range phases {
		for _, r := range p.Recomputable {
			names = appendNew(names, r.Name)
			kept += r.Bytes
		}
	}
	return names, kept
}

// LaidOutJSON is, for a pipeline, the stage whose laid-out peak XLA's
// report shows where it is not the most loaded one (cost.Memory.LaidOut):
// which stage, what it needs (total_bytes, its largest phase
// transient_bytes) and its phases with their recomputable buffers, from
// which the report is total − transient + the largest phase with its
// recomputable buffers, over the chip's JAX devices.
type LaidOutJSON struct {
	Stage     string       `json:"stage"`
	Total     int64        `json:"total_bytes"`
	Transient int64        `json:"transient_bytes"`
	Peak      string       `json:"peak_phase"`
	Phases    []cost.Phase `json:"phases"`
}

// laidOutJSON is m's LaidOut for MemoryJSON, nil where there is none.
func laidOutJSON(m cost.Memory) *LaidOutJSON {
	l := m.LaidOut
	if l == nil {
		return nil
	}
	return &LaidOutJSON{Stage: l.Stage, Total: int64(l.Total()), Transient: int64(l.Transient), Peak: l.Peak, Phases: l.Phases}
}

// appendNew is names with n appended, unless it is among them.
func appendNew(names []string, n string) []string {
	for _, have := range names {
		if have == n {
			return names
		}
	}
	return append(names, n)
}
