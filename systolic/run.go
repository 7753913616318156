package systolic

import (
	"fmt"
	"io"
	"strings"
)

// cell is a register of a PE: a value, whether it holds data, and which
// streamed element it belongs to.
type cell struct {
	v     float64
	ok    bool
	t     int
	k     int // OS: the reduction index the operand carries
	label string
}

// Run moves real numbers through the array register by register: the
// ground truth the wavefront simulator and the closed form are checked
// against on small GEMMs. A is M×K, B is K×N; it returns C = A·B, the
// cycles and MACs it took. With w non-nil it writes a transcript that
// explains every cycle. Run ignores HBM and double buffering.
func Run(a Array, A, B [][]float64, w io.Writer) (C [][]float64, cycles, macs int64, err error) {
	g := GEMM{M: len(A), K: len(B)}
	if len(B) > 0 {
		g.N = len(B[0])
	}
	if err := g.Validate(); err != nil {
		return nil, 0, 0, err
	}
	for _, row := range A {
		if len(row) != g.K {
			return nil, 0, 0, fmt.Errorf("systolic: A has a row of %d, want %d: %w", len(row), g.K, ErrInvalid)
		}
	}
	for _, row := range B {
		if len(row) != g.N {
			return nil, 0, 0, fmt.Errorf("systolic: B has a row of %d, want %d: %w", len(row), g.N, ErrInvalid)
		}
	}
	if err := a.Validate(); err != nil {
		return nil, 0, 0, err
	}
	if g.M*g.N*g.K > 1<<24 {
		return nil, 0, 0, fmt.Errorf("systolic: Run moves every value; %d MACs is too many (at most %d): %w", g.MACs(), 1<<24, ErrInvalid)
	}
	C = make([][]float64, g.M)
	for i := range C {
		C[i] = make([]float64, g.N)
	}
	say := func(format string, args ...any) {
		if w != nil {
			fmt.Fprintf(w, format, args...)
		}
	}
	m := MapGEMM(a.Dataflow, g)
	say("%s dataflow, %dx%d array, C[%dx%d] = A[%dx%d]·B[%dx%d]; Sr=%d Sc=%d T=%d\n",
		a.Dataflow, a.Rows, a.Cols, g.M, g.N, g.M, g.K, g.K, g.N, m.Sr, m.Sc, m.T)
	for fi, fd := range folds(m, a.Rows, a.Cols) {
		r0, c0 := fd.row*a.Rows, fd.col*a.Cols
		say("fold %d: rows %d..%d, columns %d..%d; closed form 2·%d + %d + %d − 2 = %d cycles\n",
			fi, r0, r0+fd.sr-1, c0, c0+fd.sc-1, fd.sr, fd.sc, m.T, FoldCycles(fd.sr, fd.sc, m.T))
		var n, k int64
		if a.Dataflow == OutputStationary {
			n, k = runOS(g, fd, r0, c0, A, B, C, cycles, say)
		} else {
			n, k = runStationary(a.Dataflow, g, fd, r0, c0, m.T, A, B, C, cycles, say)
		}
		cycles += n
		macs += k
	}
	say("done: %d cycles, %d MACs\n", cycles, macs)
	return C, cycles, macs, nil
}

// stationaryFold is one WS or IS fold in flight: the tile the PEs hold and
// the operand streamed past them.
type stationaryFold struct {
	d      Dataflow
	sr, sc int
	r0, c0 int
	T      int
	A, B   [][]float64
	w      [][]float64 // the stationary tile, PE (i, j)'s value
}

// runStationary runs one WS or IS fold. WS: PE (i, j) holds B[r0+i][c0+j];
// row i streams A[t][r0+i]; column j's bottom emits C[t][c0+j]. IS: PE
// (i, j) holds A[c0+j][r0+i]; row i streams B[r0+i][t]; column j emits
// C[c0+j][t].
func runStationary(d Dataflow, g GEMM, fd fold, r0, c0, T int, A, B, C [][]float64, start int64, say func(string, ...any)) (cycles, macs int64) {
	f := stationaryFold{d: d, sr: fd.sr, sc: fd.sc, r0: r0, c0: c0, T: T, A: A, B: B}
	f.w = f.tile()
	name := map[Dataflow]string{WeightStationary: "B", InputStationary: "Aᵀ"}[d]
	// Fill: the tile shifts in from the top, one row per cycle; after sr
	// cycles row i holds its values.
	for c := range f.sr {
		say("  cycle %d [load %d/%d]: row %d of the %s tile enters at the top; rows below shift down\n", start+int64(c), c+1, f.sr, f.sr-1-c, name)
	}
	cycles = int64(f.sr)
	a := grid(f.sr, f.sc)
	p := grid(f.sr, f.sc)
	emitted := 0
	for tau := 0; emitted < T*f.sc; tau++ {
		na, np, n, events := f.step(a, p, tau)
		macs += n
		var e int
		e, events = f.emit(np, C, events)
		emitted += e
		say("  cycle %d [stream τ=%d]: %d MACs on the wavefront t=τ−i−j; %s\n", start+cycles, tau, countOK(np), strings.Join(events, "; "))
		a, p = na, np
		cycles++
	}
	return cycles, macs
}

// tile is the stationary operand's fold: B's for WS, Aᵀ's for IS.
func (f stationaryFold) tile() [][]float64 {
	w := make([][]float64, f.sr)
	for i := range f.sr {
		w[i] = make([]float64, f.sc)
		for j := range f.sc {
			if f.d == WeightStationary {
				w[i][j] = f.B[f.r0+i][f.c0+j]
			} else {
				w[i][j] = f.A[f.c0+j][f.r0+i]
			}
		}
	}
	return w
}

// enter is the streamed operand that enters row i from the left at τ:
// element t = τ−i of A's column (WS) or B's row (IS), if there is one.
func (f stationaryFold) enter(i, tau int) (cell, bool) {
	t := tau - i
	if t < 0 || t >= f.T {
		return cell{}, false
	}
	if f.d == WeightStationary {
		return cell{v: f.A[t][f.r0+i], ok: true, t: t, label: fmt.Sprintf("A[%d][%d]", t, f.r0+i)}, true
	}
	return cell{v: f.B[f.r0+i][t], ok: true, t: t, label: fmt.Sprintf("B[%d][%d]", f.r0+i, t)}, true
}

// step moves the operands a and partial sums p one cycle at τ: operands
// shift right, partial sums down, and every PE holding an operand does one
// MAC. It returns the new registers, the MACs and what entered.
func (f stationaryFold) step(a, p [][]cell, tau int) (na, np [][]cell, macs int64, events []string) {
	na, np = grid(f.sr, f.sc), grid(f.sr, f.sc)
	for i := range f.sr {
		for j := range f.sc {
			var in cell
			if j == 0 {
				var ok bool
				if in, ok = f.enter(i, tau); ok {
					events = append(events, fmt.Sprintf("%s enters row %d", in.label, i))
				}
			} else {
				in = a[i][j-1]
			}
			if !in.ok {
				continue
			}
			sum := 0.0
			if i > 0 {
				up := p[i-1][j]
				if !up.ok || up.t != in.t {
					panic("systolic: partial sum and operand out of step") // wavefront invariant
				}
				sum = up.v
			}
			na[i][j] = in
			np[i][j] = cell{v: sum + in.v*f.w[i][j], ok: true, t: in.t}
			macs++
		}
	}
	return na, np, macs, events
}

// emit adds the finished sums leaving the bottom row of np to C and says
// so; it returns how many left.
func (f stationaryFold) emit(np [][]cell, C [][]float64, events []string) (int, []string) {
	emitted := 0
	for j := range f.sc {
		if out := np[f.sr-1][j]; out.ok {
			if f.d == WeightStationary {
				C[out.t][f.c0+j] += out.v
				events = append(events, fmt.Sprintf("C[%d][%d] += %g leaves column %d", out.t, f.c0+j, out.v, j))
			} else {
				C[f.c0+j][out.t] += out.v
				events = append(events, fmt.Sprintf("C[%d][%d] += %g leaves column %d", f.c0+j, out.t, out.v, j))
			}
			emitted++
		}
	}
	return emitted, events
}

// runOS runs one OS fold: PE (i, j) accumulates C[r0+i][c0+j]; row i
// streams A[r0+i][k] from the left at τ = k+i, column j streams
// B[k][c0+j] from the top at τ = k+j; they meet at PE (i, j) at τ = k+i+j.
func runOS(g GEMM, fd fold, r0, c0 int, A, B, C [][]float64, start int64, say func(string, ...any)) (cycles, macs int64) {
	f := osFold{sr: fd.sr, sc: fd.sc, r0: r0, c0: c0, T: g.K, A: A, B: B}
	acc := make([][]float64, f.sr)
	for i := range acc {
		acc[i] = make([]float64, f.sc)
	}
	a := grid(f.sr, f.sc)
	b := grid(f.sr, f.sc)
	want := int64(f.sr) * int64(f.sc) * int64(f.T)
	for tau := 0; macs < want; tau++ {
		na, nb, n, events := f.step(a, b, acc, tau)
		macs += n
		say("  cycle %d [stream τ=%d]: %d MACs accumulate in place; %s\n", start+cycles, tau, n, strings.Join(events, "; "))
		a, b = na, nb
		cycles++
	}
	return cycles + f.drain(acc, C, start+cycles, say), macs
}

// osFold is one OS fold in flight: A streams from the left, B from the top.
type osFold struct {
	sr, sc int
	r0, c0 int
	T      int
	A, B   [][]float64
}

// step moves A's operands a right and B's operands b down one cycle at τ,
// feeding the edges, and accumulates every PE where the two meet into acc.
// It returns the new registers, the MACs and what entered.
func (f osFold) step(a, b [][]cell, acc [][]float64, tau int) (na, nb [][]cell, macs int64, events []string) {
	na, nb = grid(f.sr, f.sc), grid(f.sr, f.sc)
	for i := range f.sr {
		for j := range f.sc {
			var x, y cell
			if j == 0 {
				if k := tau - i; k >= 0 && k < f.T {
					x = cell{v: f.A[f.r0+i][k], ok: true, k: k}
					events = append(events, fmt.Sprintf("A[%d][%d] enters row %d", f.r0+i, k, i))
				}
			} else {
				x = a[i][j-1]
			}
			if i == 0 {
				if k := tau - j; k >= 0 && k < f.T {
					y = cell{v: f.B[k][f.c0+j], ok: true, k: k}
					events = append(events, fmt.Sprintf("B[%d][%d] enters column %d", k, f.c0+j, j))
				}
			} else {
				y = b[i-1][j]
			}
			na[i][j], nb[i][j] = x, y
			if x.ok != y.ok || (x.ok && x.k != y.k) {
				panic("systolic: operands out of step") // wavefront invariant
			}
			if x.ok {
				acc[i][j] += x.v * y.v
				macs++
			}
		}
	}
	return na, nb, macs, events
}

// drain shifts the accumulated outputs out at the bottom, one row per
// cycle from start, into C; it returns the cycles it took.
func (f osFold) drain(acc, C [][]float64, start int64, say func(string, ...any)) int64 {
	for r := range f.sr {
		// the bottom row leaves first; rows shift down one per cycle
		row := f.sr - 1 - r
		vals := make([]string, f.sc)
		for j := range f.sc {
			C[f.r0+row][f.c0+j] = acc[row][j]
			vals[j] = fmt.Sprint(acc[row][j])
		}
		say("  cycle %d [drain %d/%d]: outputs of row %d leave at the bottom: C[%d][%d..%d] = %s\n",
			start+int64(r), r+1, f.sr, row, f.r0+row, f.c0, f.c0+f.sc-1, strings.Join(vals, " "))
	}
	return int64(f.sr)
}

func grid(r, c int) [][]cell {
	g := make([][]cell, r)
	cells := make([]cell, r*c)
	for i := range g {
		g[i] = cells[i*c : (i+1)*c]
	}
	return g
}

func countOK(g [][]cell) int {
	n := 0
	for _, row := range g {
		for _, c := range row {
			if c.ok {
				n++
			}
		}
	}
	return n
}
