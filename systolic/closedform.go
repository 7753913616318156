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
	if a.DoubleBuffer && a.Dataflow != OutputStationary {
		r.Cycles, r.LoadStalls = doubleBufferedCycles(srs, scs, m.T)
		r.StallCycles = r.LoadStalls
	} else {
		r.Cycles = singleBufferedCycles(srs, scs, m.T)
	}
	r.Buffer = bufferAccesses(a.Dataflow, g, fr, fc)
	r.HBMReadBytes, r.HBMWriteBytes = hbmBytes(a, g, r.Buffer)
	return r, nil
}

// singleBufferedCycles is Σ (2·sr + sc + T − 2) over the folds, every row
// tile srs against every column tile scs.
func singleBufferedCycles(srs, scs []int, T int) int64 {
	var sumSr, sumSc int64
	for _, v := range srs {
		sumSr += int64(v)
	}
	for _, v := range scs {
		sumSc += int64(v)
	}
	fr, fc := int64(len(srs)), int64(len(scs))
	return 2*fc*sumSr + fr*sumSc + fr*fc*(int64(T)-2)
}

// doubleBufferedCycles is sr_0 + Σ_f max(stream_f, sr_{f+1}) with
// sr_F = 0, in fold order (for each column tile, every row tile), and the
// cycles of it spent waiting for the next tile to load. Column tiles of
// the same width cost the same, so each distinct width is summed once.
func doubleBufferedCycles(srs, scs []int, T int) (cycles, stalls int64) {
	column := func(sc, wrap int) (cycles, stalls int64) {
		for i, sr := range srs {
			stream := streamCycles(sr, sc, T)
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
	cycles = int64(srs[0])
	full, fullStalls := column(scs[0], srs[0]) // every column but the last wraps to the next
	cycles += int64(len(scs)-1) * full
	stalls += int64(len(scs)-1) * fullStalls
	last, lastStalls := column(scs[len(scs)-1], 0)
	return cycles + last, stalls + lastStalls
}

// bufferAccesses counts the on-chip buffer reads and writes of g under
// dataflow d with fr row folds and fc column folds: the stationary operand
// read once, the streamed one once per fold across it, and the outputs
// written once per row fold (read back between) unless they stay in place.
func bufferAccesses(d Dataflow, g GEMM, fr, fc int) Accesses {
	mk, kn, mn := int64(g.M)*int64(g.K), int64(g.K)*int64(g.N), int64(g.M)*int64(g.N)
	switch d {
	case WeightStationary:
		return Accesses{BReads: kn, AReads: mk * int64(fc), CWrites: mn * int64(fr), CReads: mn * int64(fr-1)}
	case InputStationary:
		return Accesses{AReads: mk, BReads: kn * int64(fc), CWrites: mn * int64(fr), CReads: mn * int64(fr-1)}
	case OutputStationary:
		return Accesses{AReads: mk * int64(fc), BReads: kn * int64(fr), CWrites: mn}
	}
	return Accesses{}
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
