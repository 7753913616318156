package infeed

import "time"

// Bound is what sets a run's steady-state step: the MXU's own work, or
// the stage it waits on most.
type Bound string

// The bounds, by the JSON names the CLI prints.
const (
	// MXUBound: the MXU waits less than 1 % of its work a step; the chips
	// are busy and input keeps up.
	MXUBound Bound = "mxu"
	// HostBound: the MXU waits most on an empty infeed: the host's vCPUs
	// do not preprocess a batch a step.
	HostBound Bound = "host"
	// CopyBound: the MXU waits most on the batch's copy over PCIe into HBM.
	CopyBound Bound = "hbm_copy"
	// OutfeedBound: the MXU waits most on a full outfeed: the host drains
	// results too slowly.
	OutfeedBound Bound = "outfeed"
)

// Bound reads what sets the steady-state step. The MXU, the HBM copy and
// the outfeed drain each take a fixed time a batch (periods); the host's
// production is the one stage whose rate emerges from the simulation (its
// vCPUs, their placement, the examples' jitter). In the steady state every
// stage passes a batch a step, so the step is the longest of the stages'
// periods: a step within 1 % of the MXU's own work is the MXU's (its
// waits, StepStalls, are then within 1 % of its work, whatever stage is
// slightly slower), else a step within 1 % of the longest fixed period is
// that stage's, and a longer one is the host's. A run too short to fill
// the buffers before a slower fixed stage (an outfeed of 8 results
// drained at twice the MXU's period fills in about 16 steps) measures a
// step shorter than that stage's period, which no steady state has
// (Steady): the stage bounds the step once they fill, and Bound says so.
// (A slower host binds from the first step: its queues start empty.)
func (r Result) Bound() Bound {
	mxu := r.Config.ParamLoad + r.Config.Compute
	b, longest := r.Config.Slowest()
	step := max(r.StepTime, longest)
	if step <= mxu+mxu/100 {
		return MXUBound
	}
	if step <= longest+longest/100 {
		return b
	}
	return HostBound
}

// Slowest is the fixed stage with the longest period a batch, and that
// period: the MXU's work, the copy into HBM or the outfeed drain.
func (c Config) Slowest() (Bound, time.Duration) {
	b, longest := MXUBound, c.ParamLoad+c.Compute
	for _, p := range c.periods() {
		if p.period > longest {
			b, longest = p.bound, p.period
		}
	}
	return b, longest
}

// Steady reports whether the step measured over the run's second half is
// a steady state's: no shorter (by 1 %) than the slowest fixed stage's
// period, which every steady step is at least. A run too short for a
// slower outfeed's queue to fill measures a shorter step (Bound).
func (r Result) Steady() bool {
	_, longest := r.Config.Slowest()
	return r.StepTime > 0 && r.StepTime >= longest-longest/100
}

// periods are the fixed stages' times a batch after the MXU's: the copy
// into HBM, which with one HBM buffer cannot overlap the MXU's work on
// the batch before, and the outfeed drain.
func (c Config) periods() []struct {
	bound  Bound
	period time.Duration
} {
	copyPeriod := c.copyTime()
	if c.HBMBuffers == 1 {
		copyPeriod += c.ParamLoad + c.Compute
	}
	return []struct {
		bound  Bound
		period time.Duration
	}{{CopyBound, copyPeriod}, {OutfeedBound, c.Drain}}
}

// Verdict says what the bound means for the chips, in a line.
func (b Bound) Verdict() string {
	switch b {
	case MXUBound:
		return "the MXU is the bottleneck: input keeps up"
	case HostBound:
		return "input-bound: the host does not keep the infeed full and the ready MXU waits"
	case CopyBound:
		return "input-bound: the copy over PCIe into HBM is slower than the MXU and the ready MXU waits"
	}
	return "the outfeed fills: the host drains results too slowly and the ready MXU waits"
}

// Busy reports whether the run kept its chips busy: the MXU bounds the
// steady-state step.
func (r Result) Busy() bool { return r.Bound() == MXUBound }

// InputBound reports whether the MXU waits on input: the host or the HBM
// copy bounds the steady-state step.
func (r Result) InputBound() bool { b := r.Bound(); return b == HostBound || b == CopyBound }
