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
func singleBufferedCycles(srs, scs tileSpan, T int) int64 {
	fr, fc := int64(srs.n), int64(scs.n)
	return 2*fc*srs.sum() + fr*scs.sum() + fr*fc*(int64(T)-2)
}

// doubleBufferedCycles is sr_0 + Σ_f max(stream_f, sr_{f+1}) with
// sr_F = 0, in fold order (for each column tile, every row tile), and the
// cycles of it spent waiting for the next tile to load. Column tiles of
// the same width cost the same, so each distinct width is summed once, and
// so are the row tiles that differ neither in width nor in the next one's.
func doubleBufferedCycles(srs, scs tileSpan, T int) (cycles, stalls int64) {
	// fold is one row tile of width sr streaming sc columns while the
	// next, of width next, loads
	fold := func(sr, sc, next int) (cycles, stalls int64) {
		stream := streamCycles(sr, sc, T)
		if int64(next) > stream {
			return int64(next), int64(next) - stream
		}
		return stream, 0
	}
	column := func(sc, wrap int) (cycles, stalls int64) {
		var c, st int64
		if srs.n > 1 {
			// full tiles followed by a full one, then the last full one
			// followed by the last tile
			c, st = fold(srs.side, sc, srs.side)
			c, st = c*int64(srs.n-2), st*int64(srs.n-2)
			c2, st2 := fold(srs.side, sc, srs.last)
			c, st = c+c2, st+st2
		}
		c3, st3 := fold(srs.last, sc, wrap)
		return c + c3, st + st3
	}
	cycles = int64(srs.at(0))
	full, fullStalls := column(scs.at(0), srs.at(0)) // every column but the last wraps to the next
	cycles += int64(scs.n-1) * full
	stalls += int64(scs.n-1) * fullStalls
	last, lastStalls := column(scs.last, 0)
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

// tileSpan is n split into array-sized tiles: n of them, all side wide but
// the last, last wide.
type tileSpan struct {
	n, side, last int
}

// tiles splits n into array-sized tiles: all full but perhaps the last.
func tiles(n, side int) tileSpan {
	k := ceilDiv(n, side)
	return tileSpan{n: k, side: side, last: n - (k-1)*side}
}

// at is tile i's width.
func (s tileSpan) at(i int) int {
	if i == s.n-1 {
		return s.last
	}
	return s.side
}

// sum is the tiles' widths together.
func (s tileSpan) sum() int64 { return int64(s.n-1)*int64(s.side) + int64(s.last) }

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
