package kernel

import "sync"

// GEMM is the float32 matrix multiply the emulator trains with:
// C (m×n, row-major, leading dimension ldc) = op(A)·op(B), added to C when
// acc is set. op transposes when the flag is set; A is m×k after op, B is
// k×n after op. Go returns the default one; package emu/kernel/openblas
// has OpenBLAS's (build tag openblas), which a caller passes in.
type GEMM interface {
	Sgemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, acc bool, c []float32, ldc int)
	Name() string
}

// pureGo is the default kernel, built with the Go toolchain alone (no
// cgo): packed panels and an mr×nr micro-kernel chosen at run time — 8×32
// AVX-512 assembly, 4×16 AVX2 assembly, or 4×16 plain Go (elsewhere or
// with the purego build tag). The assembly kernels give the same bits, so
// a run's results do not depend on which of them the CPU has.
type pureGo struct{ mk microKernel }

// microKernel adds the mr×nr block of a packed A strip (kc×mr, k-major)
// times a packed B strip (kc×nr) into c's rows, ldc floats apart. A
// kernel with strided also reads strips in place, step p at a[p·lda:]
// and b[p·ldb:], so a transposed A or an untransposed B need no packing
// for a full tile; one with rows reads an untransposed A's rows in place
// (step p at a[ii·lda+p]).
type microKernel struct {
	name    string
	mr, nr  int
	add     func(a, b []float32, kc int, c []float32, ldc int)
	strided func(a []float32, lda int, b []float32, ldb, kc int, c []float32, ldc int)
	rows    func(a []float32, lda int, b []float32, ldb, kc int, c []float32, ldc int)
}

var (
	microAVX512 = microKernel{"AVX-512 8x32 assembly", 8, 32, func(a, b []float32, kc int, c []float32, ldc int) { Add8x32(a, b, kc, c, ldc) },
		func(a []float32, lda int, b []float32, ldb, kc int, c []float32, ldc int) {
			Add8x32Strided(a, lda, b, ldb, kc, c, ldc)
		},
		func(a []float32, lda int, b []float32, ldb, kc int, c []float32, ldc int) {
			Add8x32Rows(a, lda, b, ldb, kc, c, ldc)
		}}
	microAVX2 = microKernel{"AVX2+FMA 4x16 assembly", 4, 16, func(a, b []float32, kc int, c []float32, ldc int) { Add4x16(a, b, kc, c, ldc) }, nil, nil}
	microGo   = microKernel{"plain Go 4x16", 4, 16, add4x16Go, nil, nil}
)

// bestMicro is the fastest micro-kernel this CPU and build run.
func bestMicro() microKernel {
	switch {
	case Supported512():
		return microAVX512
	case Supported():
		return microAVX2
	}
	return microGo
}

// Name says which kernel this is.
func (g pureGo) Name() string { return "Go toolchain (packed, " + g.mk.name + ")" }

// goKernel is the kernel Go returns, chosen once for this CPU (a pointer,
// so that returning it as a GEMM allocates nothing).
var goKernel = &pureGo{bestMicro()}

// Go returns the Go toolchain's kernel with the fastest micro-kernel this
// CPU and build run (pureGo).
func Go() GEMM { return goKernel }

const (
	// kcBlock fixes the order of the sums (each k block is summed from zero
	// and then added to C): every kernel uses it, so results stay the same.
	kcBlock = 256
	ncBlock = 512
)

// packing is a GEMM's scratch: the packed A and B panels and a tile for
// the edges. A multiply takes one from packings and gives it back, so
// after the first calls a multiply allocates nothing.
type packing struct {
	a, b []float32
	tile []float32
}

// packings holds the scratch of the multiplies not running: as many as
// ever ran at once, one per device that multiplies concurrently. Unlike a
// sync.Pool, which the garbage collector empties, it keeps them, so a
// training step allocates no scratch however often the collector runs.
var packings struct {
	mu   sync.Mutex
	free []*packing
}

// getPacking takes a free scratch, or a new one when every one is in use.
func getPacking() *packing {
	packings.mu.Lock()
	defer packings.mu.Unlock()
	if n := len(packings.free); n > 0 {
		ws := packings.free[n-1]
		packings.free = packings.free[:n-1]
		return ws
	}
	return new(packing)
}

// putPacking gives ws back.
func putPacking(ws *packing) {
	packings.mu.Lock()
	packings.free = append(packings.free, ws)
	packings.mu.Unlock()
}

// grow returns buf with length n, reusing its storage when it is big enough.
func grow(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	return buf[:n]
}

// Sgemm implements GEMM: for each kcBlock of k, op(A)'s strips are packed
// (where a kernel cannot read them in place), then each ncBlock panel of
// op(B) is multiplied into C.
func (g pureGo) Sgemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, acc bool, c []float32, ldc int) {
	if !acc {
		for i := range m {
			clear(c[i*ldc : i*ldc+n])
		}
	}
	if m == 0 || n == 0 || k == 0 {
		return
	}
	mr, nr := g.mk.mr, g.mk.nr
	ws := getPacking()
	defer putPacking(ws)
	mPad := (m + mr - 1) / mr * mr
	ws.a = grow(ws.a, mPad*min(k, kcBlock))
	ws.b = grow(ws.b, (min(n, ncBlock)+nr-1)/nr*nr*min(k, kcBlock))
	ws.tile = grow(ws.tile, mr*nr)
	x := gemmCall{g: g, transB: transB, m: m, n: n, a: a, lda: lda, b: b, ldb: ldb, c: c, ldc: ldc,
		mPad: mPad, ap: ws.a, bp: ws.b, tile: ws.tile}
	// full strips a strided kernel reads in place: op(A)'s rows i0… of a
	// transposed A are k-major already (stride lda), as are op(B)'s
	// columns j… of an untransposed B (stride ldb); a rows kernel reads an
	// untransposed A's rows in place
	x.inA, x.inB = g.mk.strided != nil && transA, g.mk.strided != nil && !transB
	x.rowsA = g.mk.rows != nil && !transA
	for p0 := 0; p0 < k; p0 += kcBlock {
		kc := min(kcBlock, k-p0)
		for i0 := 0; i0 < mPad; i0 += mr {
			if !(x.inA || x.rowsA) || i0+mr > m {
				packA(x.ap[i0*kc:(i0+mr)*kc], transA, a, lda, i0, min(mr, m-i0), mr, p0, kc)
			}
		}
		for j0 := 0; j0 < n; j0 += ncBlock {
			x.panel(p0, kc, j0, min(ncBlock, n-j0))
		}
	}
}

// gemmCall is one Sgemm's operands, where its kernels read them in place
// (inA, inB, rowsA), and its packed strips.
type gemmCall struct {
	g               pureGo
	transB          bool
	m, n            int
	a               []float32
	lda             int
	b               []float32
	ldb             int
	c               []float32
	ldc             int
	inA, inB, rowsA bool
	mPad            int
	ap, bp, tile    []float32
}

// panel multiplies op(A)'s packed kcBlock from p0 (kc deep) by the panel
// of op(B)'s nc columns from j0, into C: full tiles straight into C, edge
// tiles through a zeroed tile.
func (x *gemmCall) panel(p0, kc, j0, nc int) {
	g, mr, nr := x.g, x.g.mk.mr, x.g.mk.nr
	a, b, c, lda, ldb, ldc := x.a, x.b, x.c, x.lda, x.ldb, x.ldc
	ap, bp, tile := x.ap, x.bp, x.tile
	ncPad := (nc + nr - 1) / nr * nr
	for jj0 := 0; jj0 < ncPad; jj0 += nr {
		if !x.inB || j0+jj0+nr > x.n {
			packB(bp[jj0*kc:(jj0+nr)*kc], x.transB, b, ldb, j0+jj0, min(nr, nc-jj0), nr, p0, kc)
		}
	}
	for i0 := 0; i0 < x.mPad; i0 += mr {
		rows := min(mr, x.m-i0)
		as, sa, byRows := ap[i0*kc:(i0+mr)*kc], mr, false
		switch {
		case x.rowsA && rows == mr:
			as, sa, byRows = a[i0*lda+p0:], lda, true
		case x.inA && rows == mr:
			as, sa = a[p0*lda+i0:], lda
		}
		for jj0 := 0; jj0 < ncPad; jj0 += nr {
			j := j0 + jj0
			cols := min(nr, x.n-j)
			bs, sb := bp[jj0*kc:(jj0+nr)*kc], nr
			if x.inB && cols == nr {
				bs, sb = b[p0*ldb+j:], ldb
			}
			if rows == mr && cols == nr { // a full tile: straight into C
				g.kernel(as, sa, byRows, bs, sb, kc, c[i0*ldc+j:], ldc)
				continue
			}
			// an edge: sum into a zeroed tile (0+s is s exactly), then
			// add the part that is inside C
			clear(tile)
			g.kernel(as, sa, byRows, bs, sb, kc, tile, nr)
			for ii := range rows {
				addScalar(c[(i0+ii)*ldc+j:(i0+ii)*ldc+j+cols], tile[ii*nr:ii*nr+cols])
			}
		}
	}
}

// kernel runs the micro-kernel on strips with strides sa and sb: A's
// rows in place through rows (byRows), packed (mr and nr) through add,
// else in place through strided.
func (g pureGo) kernel(a []float32, sa int, byRows bool, b []float32, sb, kc int, c []float32, ldc int) {
	if byRows {
		g.mk.rows(a, sa, b, sb, kc, c, ldc)
		return
	}
	if sa == g.mk.mr && sb == g.mk.nr {
		g.mk.add(a, b, kc, c, ldc)
		return
	}
	g.mk.strided(a, sa, b, sb, kc, c, ldc)
}

// packA packs rows i0..i0+rows of op(A), columns p0..p0+kc, into strip
// (kc×mr, k-major), padding missing rows with zeros.
func packA(strip []float32, trans bool, a []float32, lda, i0, rows, mr, p0, kc int) {
	strip = strip[:kc*mr]
	if rows < mr {
		clear(strip)
	}
	if trans { // op(A)[i][p] = a[p][i]: each k is rows contiguous floats
		for p := range kc {
			copy(strip[p*mr:p*mr+rows], a[(p0+p)*lda+i0:])
		}
		return
	}
	if rows == 8 && mr == 8 { // a full strip: written in order, eight rows at a time
		at := func(ii int) []float32 { return a[(i0+ii)*lda+p0 : (i0+ii)*lda+p0+kc] }
		r0, r1, r2, r3, r4, r5, r6, r7 := at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7)
		for p := range kc {
			s := strip[p*8 : p*8+8 : p*8+8]
			s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7] = r0[p], r1[p], r2[p], r3[p], r4[p], r5[p], r6[p], r7[p]
		}
		return
	}
	for ii := range rows {
		row := a[(i0+ii)*lda+p0 : (i0+ii)*lda+p0+kc]
		for p, v := range row {
			strip[p*mr+ii] = v
		}
	}
}

// packB packs columns j0..j0+cols of op(B), rows p0..p0+kc, into strip
// (kc×nr), padding missing columns with zeros.
func packB(strip []float32, trans bool, b []float32, ldb, j0, cols, nr, p0, kc int) {
	strip = strip[:kc*nr]
	if cols < nr {
		clear(strip)
	}
	if !trans { // each k is cols contiguous floats of B's row
		for p := range kc {
			copy(strip[p*nr:p*nr+cols], b[(p0+p)*ldb+j0:])
		}
		return
	}
	jj := 0
	for ; jj+8 <= cols; jj += 8 { // eight columns at a time, each k's eight written in order
		at := func(q int) []float32 { return b[(j0+jj+q)*ldb+p0 : (j0+jj+q)*ldb+p0+kc] }
		c0, c1, c2, c3, c4, c5, c6, c7 := at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7)
		for p := range kc {
			s := strip[p*nr+jj : p*nr+jj+8 : p*nr+jj+8]
			s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7] = c0[p], c1[p], c2[p], c3[p], c4[p], c5[p], c6[p], c7[p]
		}
	}
	for ; jj < cols; jj++ {
		col := b[(j0+jj)*ldb+p0 : (j0+jj)*ldb+p0+kc]
		for p, v := range col {
			strip[p*nr+jj] = v
		}
	}
}

// add4x16Go is the plain-Go micro-kernel: the 4×16 block as four 4×4
// register blocks, each summed from zero and then added into c.
func add4x16Go(a, b []float32, kc int, c []float32, ldc int) {
	var out [64]float32
	micro4x16Go(a, b, kc, &out)
	for ii := range 4 {
		addScalar(c[ii*ldc:ii*ldc+16], out[ii*16:ii*16+16])
	}
}

// micro4x16Go computes the 4×16 block of a packed A strip (kc×4) times a
// packed B strip (kc×16) as four 4×4 register blocks.
func micro4x16Go(a, b []float32, kc int, out *[64]float32) {
	for q := range 4 {
		var blk [16]float32
		micro4x4(a, b, q*4, kc, &blk)
		for ii := range 4 {
			copy(out[ii*16+q*4:ii*16+q*4+4], blk[ii*4:ii*4+4])
		}
	}
}

// micro4x4 accumulates a 4×4 block of C over kc from columns off..off+3
// of the 16-wide B strip: 16 multiply-adds per 8 loads, all in registers.
func micro4x4(a, b []float32, off, kc int, out *[16]float32) {
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 float32
	a = a[:kc*4]
	b = b[:kc*16]
	for p, q := 0, off; p < kc*4; p, q = p+4, q+16 {
		a0, a1, a2, a3 := a[p], a[p+1], a[p+2], a[p+3]
		b0, b1, b2, b3 := b[q], b[q+1], b[q+2], b[q+3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	*out = [16]float32{c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33}
}

// addScalar sets dst[i] += x[i], one element at a time.
func addScalar(dst, x []float32) {
	for i := range dst {
		dst[i] += x[i]
	}
}
