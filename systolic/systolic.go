// Package systolic models the matrix unit (MXU) of a TPU as an R×C systolic
// array of multiply-accumulators running one GEMM (M×K times K×N) in one of
// the three classic dataflows — weight stationary (the TPU's), output
// stationary and input stationary. It has two independent implementations
// that tests hold equal: a cycle-level simulator (Sim, a state machine
// stepped one clock at a time, which counts MACs, buffer and HBM traffic and
// stalls, each cycle in O(1)) and the closed-form fold formulas of the
// SCALE-Sim paper (ClosedForm). A third, register-level implementation (Run)
// moves real numbers through the array for small GEMMs and checks the
// product and the cycle count. SCALESim reproduces the cycle counts of the
// SCALE-Sim v2 tool itself, which differ (it charges the whole array for
// every fold, counts one cycle less, and gives output stationary no drain
// phase).
// Efficiency turns the closed form into the MXU efficiency of a GEMM shape
// on a chip, which package cost uses.
package systolic

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Dataflow says which operand stays in the array.
type Dataflow string

// The dataflows.
const (
	// WeightStationary keeps a K×N tile of the weights in the array and
	// streams the M rows of the input through it (the TPU MXU).
	WeightStationary Dataflow = "ws"
	// OutputStationary keeps an M×N tile of the outputs in the array,
	// streams the inputs from the left and the weights from the top over
	// the K steps, then drains the outputs.
	OutputStationary Dataflow = "os"
	// InputStationary keeps a K×M tile of the (transposed) input in the
	// array and streams the N columns of the weights through it.
	InputStationary Dataflow = "is"
)

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid systolic input")

// ParseDataflow reads ws, os or is (or their long names).
func ParseDataflow(s string) (Dataflow, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "ws", "weight-stationary", "weight_stationary":
		return WeightStationary, nil
	case "os", "output-stationary", "output_stationary":
		return OutputStationary, nil
	case "is", "input-stationary", "input_stationary":
		return InputStationary, nil
	}
	return "", fmt.Errorf("systolic: dataflow %q: %w; want ws, os or is", s, ErrInvalid)
}

// GEMM is C[M×N] = A[M×K] · B[K×N].
type GEMM struct{ M, K, N int }

// MACs is the number of multiply-accumulates the GEMM needs.
func (g GEMM) MACs() int64 { return int64(g.M) * int64(g.K) * int64(g.N) }

// MaxDim bounds each GEMM dimension and array side, so that counts stay
// well inside int64.
const MaxDim = 1 << 20

// Validate checks the dimensions.
func (g GEMM) Validate() error {
	for _, d := range []struct {
		name string
		v    int
	}{{"m", g.M}, {"k", g.K}, {"n", g.N}} {
		if d.v <= 0 || d.v > MaxDim {
			return fmt.Errorf("systolic: gemm %s = %d: %w; want 1 to %d", d.name, d.v, ErrInvalid, MaxDim)
		}
	}
	return nil
}

// Array is a systolic array and the memory around it.
type Array struct {
	Rows, Cols int
	Dataflow   Dataflow
	// DoubleBuffer loads the next fold's stationary operand (WS, IS) into
	// shadow registers while the current fold streams, as the TPU MXU does
	// with its weights.
	DoubleBuffer bool
	// ElementBytes is the size of one operand or result element (2: bf16).
	ElementBytes int
	// HBMBytesPerCycle is the HBM bandwidth available to this array; 0
	// means unlimited (no stalls).
	HBMBytesPerCycle float64
	// BufferBytes is the on-chip buffer (VMEM) for operands; an operand
	// that does not fit in a third of it is fetched from HBM again for
	// every fold that uses it. 0 means unlimited.
	BufferBytes int64
}

// Validate checks the array.
func (a Array) Validate() error {
	if a.Rows <= 0 || a.Cols <= 0 || a.Rows > 4096 || a.Cols > 4096 {
		return fmt.Errorf("systolic: array %dx%d: %w; want 1x1 up to 4096x4096", a.Rows, a.Cols, ErrInvalid)
	}
	if _, err := ParseDataflow(string(a.Dataflow)); err != nil {
		return err
	}
	if a.ElementBytes < 0 || a.ElementBytes > 16 {
		return fmt.Errorf("systolic: element bytes %d: %w; want 1 to 16", a.ElementBytes, ErrInvalid)
	}
	if a.HBMBytesPerCycle < 0 || a.BufferBytes < 0 {
		return fmt.Errorf("systolic: negative HBM bandwidth or buffer: %w", ErrInvalid)
	}
	if math.IsNaN(a.HBMBytesPerCycle) || math.IsInf(a.HBMBytesPerCycle, 0) {
		return fmt.Errorf("systolic: HBM bandwidth %v bytes per cycle: %w; want a finite number, 0 for unlimited", a.HBMBytesPerCycle, ErrInvalid)
	}
	return nil
}

func (a Array) elem() int64 {
	if a.ElementBytes == 0 {
		return 2
	}
	return int64(a.ElementBytes)
}

// ParseArray reads "RxC", e.g. "128x128".
func ParseArray(s string) (rows, cols int, err error) {
	r, c, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	bad := fmt.Errorf("systolic: array %q: %w; want ROWSxCOLS with each 1 to 4096, e.g. 128x128", s, ErrInvalid)
	if !ok {
		return 0, 0, bad
	}
	rows, err1 := strconv.Atoi(r)
	cols, err2 := strconv.Atoi(c)
	if err1 != nil || err2 != nil || rows < 1 || cols < 1 || rows > 4096 || cols > 4096 {
		return 0, 0, bad
	}
	return rows, cols, nil
}

// Mapping is how a GEMM lands on the array for a dataflow, in SCALE-Sim's
// terms: Sr of one dimension go down the rows, Sc of another across the
// columns, and T elements stream through in time.
//
//	WS: Sr = K, Sc = N, T = M
//	OS: Sr = M, Sc = N, T = K
//	IS: Sr = K, Sc = M, T = N
type Mapping struct{ Sr, Sc, T int }

// MapGEMM returns the mapping of g for dataflow d.
func MapGEMM(d Dataflow, g GEMM) Mapping {
	switch d {
	case OutputStationary:
		return Mapping{Sr: g.M, Sc: g.N, T: g.K}
	case InputStationary:
		return Mapping{Sr: g.K, Sc: g.M, T: g.N}
	}
	return Mapping{Sr: g.K, Sc: g.N, T: g.M}
}

// fold is one tile of the mapping placed on the array.
type fold struct {
	row, col int // fold indices
	sr, sc   int // rows and columns in use
}

// folds lists the folds in execution order: for each column tile, every
// row tile (WS: for each N tile, accumulate over the K tiles).
func folds(m Mapping, rows, cols int) []fold {
	fr, fc := ceilDiv(m.Sr, rows), ceilDiv(m.Sc, cols)
	out := make([]fold, 0, fr*fc)
	for j := range fc {
		for i := range fr {
			out = append(out, fold{row: i, col: j, sr: min(rows, m.Sr-i*rows), sc: min(cols, m.Sc-j*cols)})
		}
	}
	return out
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
