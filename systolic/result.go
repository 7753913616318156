package systolic

import "fmt"

// Accesses counts on-chip buffer traffic at the array's edges, in elements.
// PEs themselves never touch memory: operands and partial sums move between
// neighbouring registers.
type Accesses struct {
	AReads  int64 // input (M×K) elements read into the array
	BReads  int64 // weight (K×N) elements read into the array
	CWrites int64 // output (or partial-sum) elements written out
	CReads  int64 // partial sums read back to accumulate across K folds
}

// Total is all buffer accesses.
func (a Accesses) Total() int64 { return a.AReads + a.BReads + a.CWrites + a.CReads }

func (a *Accesses) add(b Accesses) {
	a.AReads += b.AReads
	a.BReads += b.BReads
	a.CWrites += b.CWrites
	a.CReads += b.CReads
}

// Result is what running one GEMM on one array costs.
type Result struct {
	GEMM     GEMM
	Dataflow Dataflow
	Rows     int
	Cols     int
	Folds    int
	Cycles   int64
	// StallCycles are cycles the array waited: for HBM data, or for a
	// double-buffered load that had not finished.
	StallCycles   int64
	HBMStalls     int64
	LoadStalls    int64
	MACs          int64
	Buffer        Accesses
	HBMReadBytes  int64
	HBMWriteBytes int64
	// WeightReadsWhileStreaming counts weight (B) elements read from the
	// buffer while the array multiplies. Weight stationary reads none: each
	// weight is loaded once, before its fold streams (the shadow load of
	// the next fold under double buffering is a load, counted in BReads
	// only). Output and input stationary stream the weights in.
	WeightReadsWhileStreaming int64
}

// Utilization is useful MACs over the array's capacity for the run.
func (r Result) Utilization() float64 {
	if r.Cycles == 0 {
		return 0
	}
	return float64(r.MACs) / (float64(r.Rows*r.Cols) * float64(r.Cycles))
}

// MappingEfficiency is the share of PEs a fold maps work onto, averaged over
// folds: below 1 when a dimension is not a multiple of the array side (the
// padding loss).
func MappingEfficiency(d Dataflow, g GEMM, rows, cols int) float64 {
	m := MapGEMM(d, g)
	fr, fc := ceilDiv(m.Sr, rows), ceilDiv(m.Sc, cols)
	return float64(m.Sr) * float64(m.Sc) / (float64(fr*rows) * float64(fc*cols))
}

// AccessesPerMAC is buffer accesses per useful MAC.
func (r Result) AccessesPerMAC() float64 { return float64(r.Buffer.Total()) / float64(r.MACs) }

func (r Result) String() string {
	return fmt.Sprintf("%s %dx%dx%d on %dx%d: %d folds, %d cycles (%d stalled), utilization %.1f%%",
		r.Dataflow, r.GEMM.M, r.GEMM.K, r.GEMM.N, r.Rows, r.Cols, r.Folds, r.Cycles, r.StallCycles, 100*r.Utilization())
}
