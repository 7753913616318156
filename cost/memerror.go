package cost

import (
	"shardlab/model"
	"shardlab/unit"
)

// ErrorBand is how far the memory model's HBM estimate of what a job needs
// (Memory.Total, which the fit answer weighs) has been from what XLA
// reported: the median |error| over the cases of validate's memory table
// (validate/memory.yaml, set A: runs that compiled or ran, and runs that
// ran out of memory, against the bytes XLA printed), and how many cases
// that is. XLA's reports of programs that fit also hold what it keeps
// while HBM allows and recomputes when it does not (Memory.Nominal), so
// the band is wider than the error of the report itself
// (Memory.Compiled): a plan at the edge is warned as before.
type ErrorBand struct {
	Median float64
	Cases  int
}

// The memory model's measured error, by model class. They are what
// `shardlab validate --memory` measures, not fitted: validate's
// TestMemoryErrorBands recomputes them from the table, so they change only
// with the table or the model, and in the same commit.
var (
	MemoryErrorDense = ErrorBand{Median: 0.1971, Cases: 2}
	MemoryErrorMoE   = ErrorBand{Median: 0.1273, Cases: 14}
)

// MemoryError is the measured error of j's memory estimate: its model
// class's band.
func (j Job) MemoryError() ErrorBand { return MemoryErrorOf(j.Model) }

// MemoryErrorOf is the measured error of the memory estimate of a job of
// model m: MemoryErrorMoE for a mixture of experts, else
// MemoryErrorDense.
func MemoryErrorOf(m model.Spec) ErrorBand {
	if m.MoE() {
		return MemoryErrorMoE
	}
	return MemoryErrorDense
}

// AtEdge reports whether a job estimated at used bytes of HBM fits usable
// but leaves less free than the band's median error of its estimate: the
// estimate's own measured error could take it over. Plans warn "HBM at
// the edge" at it.
func (b ErrorBand) AtEdge(used, usable unit.Bytes) bool {
	return used <= usable && float64(usable-used) < b.Median*float64(used)
}
