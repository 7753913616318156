package systolic

import (
	"fmt"
	"strings"
)

// Compat says whose cycle counts a run reproduces.
type Compat string

// The compatibility modes.
const (
	// CompatShardlab is this package's own model (Simulate, ClosedForm): a fold
	// costs what the rows and columns it occupies need, and the count runs
	// to the cycle after the last one used.
	CompatShardlab Compat = "shardlab"
	// CompatSCALESim reproduces SCALE-Sim v2's cycle counts, quirks
	// included (see SCALESim).
	CompatSCALESim Compat = "scalesim"
)

// ParseCompat reads shardlab or scalesim (also scale-sim, scale-sim-v2).
func ParseCompat(s string) (Compat, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "shardlab":
		return CompatShardlab, nil
	case "scalesim", "scale-sim", "scale-sim-v2", "scalesim-v2":
		return CompatSCALESim, nil
	}
	return "", fmt.Errorf("systolic: compat %q: %w; want shardlab or scalesim", s, ErrInvalid)
}

// SCALESimFoldCycles is the cycles one fold adds in SCALE-Sim v2 on an
// array of rows×cols streaming t elements. SCALE-Sim builds, for each
// fold, a demand matrix per operand with one line per cycle and pads every
// fold to the whole array, so the count depends on the array's sides, not
// on the rows and columns the fold occupies. Read from
// github.com/scalesim-project/scale-sim-v2 at commit
// 22f88b17f1dd3160e18bff5df165035bf8146e83:
//
//   - WS (scalesim/compute/systolic_compute_ws.py): the input demand of a
//     fold is rows lines of weight load, t lines of input and cols−1 lines
//     of drain, skewed over rows columns: rows + t + cols − 1 + rows − 1 =
//     2·rows + cols + t − 2 lines (the filter and output demands have as
//     many, which the file asserts).
//   - IS (systolic_compute_is.py): the same shape with the roles of the
//     operands swapped: 2·rows + cols + t − 2.
//   - OS (systolic_compute_os.py): no load and no separate drain — the
//     output demand is t−1 lines of prefix then rows lines of outputs,
//     skewed over cols columns: t − 1 + rows + cols − 1 = rows + cols + t − 2.
func SCALESimFoldCycles(d Dataflow, rows, cols, t int) int64 {
	if d == OutputStationary {
		return int64(rows) + int64(cols) + int64(t) - 2
	}
	return 2*int64(rows) + int64(cols) + int64(t) - 2
}

// SCALESim is g on a as SCALE-Sim v2 counts it. Its Cycles are SCALE-Sim's
// total cycles with no memory stalls: the folds' demand lines
// (SCALESimFoldCycles) minus one, because SCALE-Sim's memory system
// (scalesim/memory/double_buffered_scratchpad_mem.py,
// service_memory_requests, same commit) reports the cycle at which the last
// output line is served, counting from cycle 0. SCALE-Sim overlaps nothing
// across folds, so a.DoubleBuffer is ignored, and HBM stalls are not
// modelled (a.HBMBytesPerCycle is ignored). Every other field — MACs,
// buffer accesses, HBM bytes — is this package's own count (ClosedForm's),
// not SCALE-Sim's.
//
// Where the default mode differs, for 64³ on a 128x128 weight-stationary
// array: SCALE-Sim charges the fill and skew of the whole array, 2·128 +
// 128 + 64 − 2 = 446 lines, and reports 445 cycles; ClosedForm charges the
// 64 rows and columns the fold occupies, 2·64 + 64 + 64 − 2 = 254.
func SCALESim(a Array, g GEMM) (Result, error) {
	r, err := ClosedForm(Array{Rows: a.Rows, Cols: a.Cols, Dataflow: a.Dataflow, ElementBytes: a.ElementBytes, BufferBytes: a.BufferBytes}, g)
	if err != nil {
		return Result{}, err
	}
	m := MapGEMM(a.Dataflow, g)
	r.Cycles = int64(r.Folds)*SCALESimFoldCycles(a.Dataflow, a.Rows, a.Cols, m.T) - 1
	r.StallCycles, r.HBMStalls, r.LoadStalls = 0, 0, 0
	return r, nil
}
