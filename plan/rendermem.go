package plan

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/unit"
)

// writeMemory writes HBM per chip by component, what is left, the most
// sequences per chip per micro-batch that fit, with what stops one more
// (limit: HBM, host memory, or the batch limit), and, where XLA keeps
// more than the job needs while HBM allows, what its memory report should
// read (writeXLAReport).
func writeMemory(b *strings.Builder, m cost.Memory, chip hw.Chip, most int, limit cost.Reason) {
	fits := fmt.Sprintf("fits, %v left", m.Usable-m.Total())
	if !m.Fits() {
		fits = "DOES NOT FIT: " + m.Shortfall()
	}
	fmt.Fprintf(b, "HBM per chip: %v of %v usable (%v HBM), %s\n", m.Total(), m.Usable, m.HBM, fits)
	if most > 0 {
		_, stop := bound(limit)
		fmt.Fprintf(b, "  at most %s per chip per micro-batch fit this layout (%s stops one more); the largest phase is the %s\n", unit.Plural(most, "sequence"), stop, m.Peak)
	}
	writeXLAReport(b, m, chip)
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

// writeXLAReport says, for a job that fits whose laid-out peak
// (cost.Memory.Nominal) is above what it needs, what XLA's memory report
// of it should read, per JAX device of chip, compiled against the chip's
// compiler HBM: what `shardlab check --compile-log` holds a compile log
// to.
func writeXLAReport(b *strings.Builder, m cost.Memory, chip hw.Chip) {
	extra := m.Nominal() - m.Total()
	if extra <= 0 || !m.Fits() {
		return
	}
	var names []string
	for _, p := range m.Phases {
		for _, r := range p.Recomputable {
			names = appendNew(names, r.Name)
		}
	}
	what := strings.Join(names, " and ")
	per := max(chip.JAXDevicesPerChip, 1)
	report, squeezed := m.Compiled(chip.UsableHBM(0))
	device := report / unit.Bytes(per)
	if squeezed {
		fmt.Fprintf(b, "  XLA's memory report (train_compile) should read at most %v a JAX device, its limit: as laid out the step would also keep %s, %v a chip, which XLA recomputes to fit\n", device, what, extra)
		return
	}
	fmt.Fprintf(b, "  XLA's memory report (train_compile) should read about %v a JAX device: as laid out the step also keeps %s, %v a chip, while HBM allows\n", device, what, extra)
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
