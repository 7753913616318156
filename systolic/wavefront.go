package systolic

// The skewed wavefront in closed form. In streaming cycle τ of a fold with
// sr rows and sc columns in use and T elements streamed, PE (i, j) works on
// element τ−i−j, row i reads element τ−i at the left edge, column j reads
// element τ−j at the top edge (OS), and column j's sum for element
// τ−(sr−1)−j leaves at the bottom (WS, IS). Each count is the length of an
// interval of indices (span) or the size of a band of a rectangle (band, a
// difference of triangular numbers), and the sum of a count over a run of
// cycles is a difference one order up (tri, tet). Both cost O(1)
// whatever the array's size; waveLoops is the loop over rows and
// columns they replace, kept as the reference the tests and the benchmark
// hold them to.

// tri is Σ_{j ≤ k} max(j, 0) = k(k+1)/2 for k > 0, else 0.
func tri(k int64) int64 {
	if k <= 0 {
		return 0
	}
	return k * (k + 1) / 2
}

// tet is Σ_{j ≤ k} tri(j) = k(k+1)(k+2)/6 for k > 0, else 0. With k below
// MaxDim + 2·4096 the product stays under 2⁶¹.
func tet(k int64) int64 {
	if k <= 0 {
		return 0
	}
	return k * (k + 1) * (k + 2) / 6
}

// upToSum is Σ_{y ≤ x} #{i ∈ [0, n) : i ≤ y}, where the count is
// max(y+1, 0) − max(y+1−n, 0).
func upToSum(x, n int64) int64 { return tri(x+1) - tri(x+1-n) }

// band is #{(i, j) ∈ [0, a)×[0, b) : i + j ≤ s}, by inclusion–exclusion
// over the quarter plane i, j ≥ 0.
func band(s, a, b int64) int64 {
	return tri(s+1) - tri(s+1-a) - tri(s+1-b) + tri(s+1-a-b)
}

// bandSum is Σ_{y ≤ s} band(y, a, b).
func bandSum(s, a, b int64) int64 {
	return tet(s+1) - tet(s+1-a) - tet(s+1-b) + tet(s+1-a-b)
}

// wave is what one streaming cycle (or a run of them) does at the array's
// edges and inside it.
type wave struct {
	macs     int64 // PEs that multiply
	edgeRows int64 // rows that read a streamed element at the left edge
	edgeCols int64 // columns that read one at the top edge (used by OS)
	outs     int64 // columns whose sum leaves at the bottom (used by WS, IS)
}

// span is #{i ∈ [0, n) : x − t < i ≤ x}, the length of an interval.
func span(x, n, t int64) int64 { return max(0, min(n-1, x)-max(0, x-t+1)+1) }

// waveAt is cycle τ of the stream of a fold of sr×sc with T elements.
func waveAt(tau, sr, sc, t int64) wave {
	return wave{
		macs:     band(tau, sr, sc) - band(tau-t, sr, sc),
		edgeRows: span(tau, sr, t),
		edgeCols: span(tau, sc, t),
		outs:     span(tau-sr+1, sc, t),
	}
}

// waveUpTo is the sum of waveAt over the cycles τ' ≤ τ.
func waveUpTo(tau, sr, sc, t int64) wave {
	return wave{
		macs:     bandSum(tau, sr, sc) - bandSum(tau-t, sr, sc),
		edgeRows: upToSum(tau, sr) - upToSum(tau-t, sr),
		edgeCols: upToSum(tau, sc) - upToSum(tau-t, sc),
		outs:     upToSum(tau-sr+1, sc) - upToSum(tau-sr+1-t, sc),
	}
}

// waveOver is the sum of waveAt over the cycles τ ∈ [lo, hi).
func waveOver(lo, hi, sr, sc, t int64) wave {
	a, b := waveUpTo(hi-1, sr, sc, t), waveUpTo(lo-1, sr, sc, t)
	return wave{macs: a.macs - b.macs, edgeRows: a.edgeRows - b.edgeRows, edgeCols: a.edgeCols - b.edgeCols, outs: a.outs - b.outs}
}

// waveLoops is waveAt by walking the fold's rows and columns: O(sr + sc)
// per cycle, the simulator's original way of counting, kept as the
// reference for tests and the benchmark.
func waveLoops(tau, sr, sc, t int) wave {
	var w wave
	for i := 0; i < sr; i++ {
		lo := max(0, tau-i-t+1)
		hi := min(sc-1, tau-i)
		if hi >= lo {
			w.macs += int64(hi - lo + 1)
		}
		if x := tau - i; x >= 0 && x < t {
			w.edgeRows++
		}
	}
	for j := 0; j < sc; j++ {
		if x := tau - j; x >= 0 && x < t {
			w.edgeCols++
		}
		if x := tau - (sr - 1) - j; x >= 0 && x < t {
			w.outs++
		}
	}
	return w
}
