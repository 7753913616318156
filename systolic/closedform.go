package systolic

// FoldCycles is SCALE-Sim's closed form for one fold (Samajdar et al.,
// "A Systematic Methodology for Characterizing Scalability of DNN
// Accelerators using SCALE-Sim", ISPASS 2020): with Sr rows and Sc columns
// of the array in use and T elements streamed, 2·Sr + Sc + T − 2 cycles —
// Sr to fill the stationary operand (or drain the outputs for OS), and
// Sr + Sc + T − 2 for the last streamed element to cross the skewed array.
func FoldCycles(sr, sc, t int) int64 { return int64(2*sr + sc + t - 2) }

// streamCycles is the streaming part of a fold: Sr + Sc + T − 2.
func streamCycles(sr, sc, t int) int64 { return int64(sr + sc + t - 2) }

// ClosedForm computes the cycles, MACs and traffic of g on a without
// simulating: the sum of FoldCycles over the folds, or with double
// buffering (WS, IS) the first fill plus each fold's streaming, where a
// fold waits only if the next stationary tile takes longer to load than the
// current one takes to stream. It assumes unlimited HBM bandwidth (no
// stalls); HBM bytes are counted all the same.
func ClosedForm(a Array, g GEMM) (Result, error) {
	if err := a.Validate(); err != nil {
		return Result{}, err
	}
	if err := g.Validate(); err != nil {
		return Result{}, err
	}
	m := MapGEMM(a.Dataflow, g)
	fr, fc := ceilDiv(m.Sr, a.Rows), ceilDiv(m.Sc, a.Cols)
	r := Result{GEMM: g, Dataflow: a.Dataflow, Rows: a.Rows, Cols: a.Cols, Folds: fr * fc, MACs: g.MACs()}

	// Row tiles differ only in the last one, column tiles likewise, so sums
	// over folds factor into sums over row tiles times column tiles.
	srs := tiles(m.Sr, a.Rows)
	scs := tiles(m.Sc, a.Cols)
	var sumSr, sumSc int64
	for _, v := range srs {
		sumSr += int64(v)
	}
	for _, v := range scs {
		sumSc += int64(v)
	}
	F := int64(fr * fc)
	t := int64(m.T)
	switch {
	case a.DoubleBuffer && a.Dataflow != OutputStationary:
		// sr_0 + Σ_f max(stream_f, sr_{f+1}) with sr_F = 0, in fold order
		// (for each column tile, every row tile). Column tiles of the same
		// width cost the same, so each distinct width is summed once.
		column := func(sc, wrap int) (cycles, stalls int64) {
			for i, sr := range srs {
				stream := streamCycles(sr, sc, m.T)
				next := wrap
				if i+1 < len(srs) {
					next = srs[i+1]
				}
				if int64(next) > stream {
					stalls += int64(next) - stream
					stream = int64(next)
				}
				cycles += stream
			}
			return cycles, stalls
		}
		r.Cycles = int64(srs[0])
		full, fullStalls := column(scs[0], srs[0]) // every column but the last wraps to the next
		r.Cycles += int64(len(scs)-1) * full
		r.LoadStalls += int64(len(scs)-1) * fullStalls
		last, lastStalls := column(scs[len(scs)-1], 0)
		r.Cycles += last
		r.LoadStalls += lastStalls
		r.StallCycles = r.LoadStalls
	default:
		// Σ (2·sr + sc + T − 2)
		r.Cycles = 2*int64(fc)*sumSr + int64(fr)*sumSc + F*(t-2)
	}

	switch a.Dataflow {
	case WeightStationary:
		r.Buffer = Accesses{BReads: int64(g.K) * int64(g.N), AReads: int64(g.M) * int64(g.K) * int64(fc),
			CWrites: int64(g.M) * int64(g.N) * int64(fr), CReads: int64(g.M) * int64(g.N) * int64(fr-1)}
	case InputStationary:
		r.Buffer = Accesses{AReads: int64(g.K) * int64(g.M), BReads: int64(g.K) * int64(g.N) * int64(fc),
			CWrites: int64(g.M) * int64(g.N) * int64(fr), CReads: int64(g.M) * int64(g.N) * int64(fr-1)}
	case OutputStationary:
		r.Buffer = Accesses{AReads: int64(g.M) * int64(g.K) * int64(fc), BReads: int64(g.K) * int64(g.N) * int64(fr),
			CWrites: int64(g.M) * int64(g.N)}
	}
	r.HBMReadBytes, r.HBMWriteBytes = hbmBytes(a, g, r.Buffer)
	return r, nil
}

// tiles splits n into array-sized tiles: all full but perhaps the last.
func tiles(n, side int) []int {
	out := make([]int, 0, ceilDiv(n, side))
	for n > 0 {
		out = append(out, min(n, side))
		n -= side
	}
	return out
}

// hbmBytes is the HBM traffic: each operand once when it fits in a third of
// the buffer, else as often as the array reads it; the output once when it
// fits, else every partial write and read-back.
func hbmBytes(a Array, g GEMM, acc Accesses) (read, write int64) {
	e := a.elem()
	fits := func(elems int64) bool { return a.BufferBytes == 0 || elems*e <= a.BufferBytes/3 }
	mk, kn, mn := int64(g.M)*int64(g.K), int64(g.K)*int64(g.N), int64(g.M)*int64(g.N)
	ra, rb := acc.AReads, acc.BReads
	if fits(mk) {
		ra = mk
	}
	if fits(kn) {
		rb = kn
	}
	read = (ra + rb) * e
	write = mn * e
	if !fits(mn) {
		read += acc.CReads * e
		write = acc.CWrites * e
	}
	return read, write
}
