package systolic

import (
	"fmt"
	"io"

	"shardlab/trace"
)

// MaxTraceCycles bounds WriteTrace: a per-cycle trace of a larger GEMM
// would be too big to open.
const MaxTraceCycles = 200_000

// WriteTrace simulates g on a and writes its per-cycle activity as a
// Chrome/Perfetto trace: one span per fold phase (wait, load, stream,
// drain) on the MXU track, and a counter of MACs done each cycle. One
// microsecond on the trace's timeline is one cycle.
func WriteTrace(w io.Writer, a Array, g GEMM) (Result, error) {
	cf, err := ClosedForm(a, g)
	if err != nil {
		return Result{}, err
	}
	if cf.Cycles > MaxTraceCycles {
		return Result{}, fmt.Errorf("systolic: trace of %d cycles is too long (at most %d): %w; try a smaller GEMM", cf.Cycles, MaxTraceCycles, ErrInvalid)
	}
	s, err := NewSim(a, g)
	if err != nil {
		return Result{}, err
	}
	tw := trace.NewWriter(w)
	tw.Process(1, fmt.Sprintf("%dx%d %s array, GEMM %dx%dx%d", a.Rows, a.Cols, a.Dataflow, g.M, g.K, g.N))
	tw.Track(1, 1, "MXU phases")
	var (
		spanFold  = -1
		spanPhase string
		spanStart int64
		lastMACs  = -1
	)
	flush := func(end int64) {
		if spanFold >= 0 {
			tw.Span(1, 1, spanPhase, fmt.Sprintf("fold %d", spanFold), float64(spanStart), float64(end-spanStart),
				map[string]any{"fold": spanFold})
		}
	}
	s.Observe = func(cycle int64, fold int, ph string, macs int) {
		if fold != spanFold || ph != spanPhase {
			flush(cycle)
			spanFold, spanPhase, spanStart = fold, ph, cycle
		}
		if macs != lastMACs {
			tw.Counter(1, "MACs per cycle", float64(cycle), map[string]any{"macs": macs})
			lastMACs = macs
		}
	}
	for s.Step() {
	}
	flush(s.Cycle())
	tw.Counter(1, "MACs per cycle", float64(s.Cycle()), map[string]any{"macs": 0})
	return s.Result(), tw.Close()
}
