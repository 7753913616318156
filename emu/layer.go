package emu

import (
	"errors"

	"shardlab/emu/kernel"
)

// ErrInvalid is wrapped by every configuration error.
var ErrInvalid = errors.New("invalid emulator input")

const normEps = 1e-5

// colls are the collectives the model code needs from the device it runs
// on. One device (solo) needs none of them.
type colls[T Float] interface {
	// tensorAllReduce sums x over the tensor-parallel group, in place.
	tensorAllReduce(x []T)
	// expertAllToAll sends block j of x (one of equal blocks, one per
	// expert rank) to expert rank j and returns the blocks received, by
	// rank.
	expertAllToAll(x []T) []T
	// contextAllGather concatenates x from every context rank, by rank.
	contextAllGather(x []T) []T
	// contextReduceScatter sums x over the context group and returns this
	// rank's 1/c of it.
	contextReduceScatter(x []T) []T
	// mat returns a zeroed r×c matrix, reusing one given to recycle when
	// one of its size is free; recycle takes matrices nothing reads or
	// writes any more. A layer's temporaries and, in the backward pass, the
	// activations it is done with go back this way, so the next layer's
	// reuse them instead of new memory (the run's memory then stays at
	// what its live tensors hold, which is what EstimateMemory counts).
	mat(r, c int) Mat[T]
	recycle(ms ...Mat[T])
	// mat32 is mat for a matrix a TPU holds in fp32 whatever the compute
	// dtype (the logits' gradient).
	mat32(r, c int) Mat[T]
	// gemm is the float32 matrix multiply the device runs.
	gemm() kernel.GEMM
}

type solo[T Float] struct{}

func (solo[T]) tensorAllReduce([]T)            {}
func (solo[T]) expertAllToAll(x []T) []T       { return x }
func (solo[T]) contextAllGather(x []T) []T     { return x }
func (solo[T]) contextReduceScatter(x []T) []T { return x }
func (solo[T]) mat(r, c int) Mat[T]            { return newMat[T](r, c) }
func (solo[T]) recycle(...Mat[T])              {}
func (solo[T]) mat32(r, c int) Mat[T]          { return newMat[T](r, c) }
func (solo[T]) gemm() kernel.GEMM              { return kernel.Go() }

// micro is one micro-batch as a device sees it: b sequences of s local
// tokens, chunk ci of c along the sequence.
type micro struct {
	b, s, ci, c int
	tokens      []int // n = b·s input tokens
	targets     []int // next tokens
	scale       float64
}

func (m micro) n() int { return m.b * m.s }

// pos is the global position of local row r.
func (m micro) pos(r int) int { return m.ci*m.s + r%m.s }

// acts is what one layer keeps for its backward pass: the same tensors
// cost.LayerActivations counts with remat none (norm inputs x and x2;
// attention input h1; Q, K, V; the softmax P; the output-projection
// input; the MLP input h2; g, u and a), with each norm's per-token scale
// and FlashAttention's log-sum-exp; with remat full, x alone until the
// backward pass reruns the layer.
type acts[T Float] struct {
	x, h1, q, k, v, p, attn, x2, h2, g, u, a Mat[T]
	rstd1, rstd2                             []T
	lse                                      []T // with FlashAttention, instead of p
	moe                                      *moeActs[T]
	// rerun says the backward pass recomputed these (remat): then it frees
	// each at its last use. Kept ones stay to the end of the layer's
	// backward: under scan_layers a TPU keeps every layer's residuals in
	// one stacked buffer, which no layer's backward frees a part of.
	rerun bool
}

// done frees a's tensors ms at their last use in the backward pass when
// they were recomputed for it.
func (a *acts[T]) done(co colls[T], ms ...*Mat[T]) {
	if a.rerun {
		free(co, ms...)
	}
}

func rmsnorm[T Float](x Mat[T], w []T) (Mat[T], []T) {
	y := newMat[T](x.R, x.C)
	return y, rmsnormTo(y, x, w)
}

// rmsnormTo is rmsnorm into y (x's shape, every value overwritten); it
// returns the per-row scales.
func rmsnormTo[T Float](y, x Mat[T], w []T) []T {
	rstd := make([]T, x.R)
	for i := 0; i < x.R; i++ {
		row := x.Row(i)
		var ss T
		for _, v := range row {
			ss += v * v
		}
		r := 1 / sqrt(ss/T(x.C)+normEps)
		rstd[i] = r
		out := y.Row(i)
		for j, v := range row {
			out[j] = v * r * w[j]
		}
	}
	return rstd
}

// rmsnormBack adds the input gradient to dx and the weight gradient to dw.
func rmsnormBack[T Float](x Mat[T], w, rstd []T, dy Mat[T], dx Mat[T], dw []T) {
	n := T(x.C)
	for i := 0; i < x.R; i++ {
		xr, dyr, dxr := x.Row(i), dy.Row(i), dx.Row(i)
		r := rstd[i]
		var m T
		for j := range xr {
			m += xr[j] * r * w[j] * dyr[j]
		}
		m /= n
		for j := range xr {
			xh := xr[j] * r
			dw[j] += xh * dyr[j]
			dxr[j] += r * (w[j]*dyr[j] - xh*m)
		}
	}
}

// layerForward runs one block on x (n × d) and returns its output and what
// the backward pass needs.
func layerForward[T Float](c Config, l *Layer[T], x Mat[T], mb micro, co colls[T]) (Mat[T], *acts[T]) {
	n, d := x.R, x.C
	hd := c.headDim()
	qd, kvd := l.Wq.C, l.Wk.C
	a := &acts[T]{x: x, h1: co.mat(n, d)}
	a.rstd1 = rmsnormTo(a.h1, x, l.N1)
	a.q, a.k, a.v = co.mat(n, qd), co.mat(n, kvd), co.mat(n, kvd)
	matMul(co.gemm(), a.q, a.h1, l.Wq, false)
	matMul(co.gemm(), a.k, a.h1, l.Wk, false)
	matMul(co.gemm(), a.v, a.h1, l.Wv, false)
	kAll := Mat[T]{R: n * mb.c, C: kvd, D: co.contextAllGather(a.k.D)}
	vAll := Mat[T]{R: n * mb.c, C: kvd, D: co.contextAllGather(a.v.D)}
	if c.FlashAttention {
		a.attn, a.lse = attentionFlash(co.gemm(), c, a.q, kAll, vAll, mb, hd)
	} else {
		a.attn, a.p = attentionKeepP(co.gemm(), c, a.q, kAll, vAll, mb, hd)
	}
	recycleGathered(co, a, kAll, vAll)
	o := co.mat(n, d)
	matMul(co.gemm(), o, a.attn, l.Wo, false)
	co.tensorAllReduce(o.D)
	a.x2 = co.mat(n, d)
	copy(a.x2.D, x.D)
	add(a.x2.D, o.D)
	co.recycle(o)
	a.h2 = co.mat(n, d)
	a.rstd2 = rmsnormTo(a.h2, a.x2, l.N2)
	var m Mat[T]
	if l.moe() {
		m, a.moe = moeForward(c, l, a.h2, mb.s, co)
	} else {
		f := l.Wg.C
		a.g, a.u, a.a = co.mat(n, f), co.mat(n, f), co.mat(n, f)
		matMul(co.gemm(), a.g, a.h2, l.Wg, false)
		matMul(co.gemm(), a.u, a.h2, l.Wu, false)
		swiglu(co.gemm(), a.a.D, a.g.D, a.u.D)
		m = co.mat(n, d)
		matMul(co.gemm(), m, a.a, l.Wd, false)
		co.tensorAllReduce(m.D)
	}
	y := co.mat(n, d)
	copy(y.D, a.x2.D)
	add(y.D, m.D)
	co.recycle(m)
	return y, a
}

// recycleActs gives back what a layer kept for its backward pass once
// that has run: every tensor but its input x, which the caller owns.
func recycleActs[T Float](a *acts[T], co colls[T]) {
	free(co, &a.h1, &a.q, &a.k, &a.v, &a.p, &a.attn, &a.x2, &a.h2, &a.g, &a.u, &a.a)
}

// free recycles matrices at their last use, as XLA frees a buffer after
// its last reader, and empties them so that nothing recycles them twice.
func free[T Float](co colls[T], ms ...*Mat[T]) {
	for _, m := range ms {
		co.recycle(*m)
		*m = Mat[T]{}
	}
}

// recycleGathered gives back the keys and values gathered over the
// context axis, when there is one (else they are a's own).
func recycleGathered[T Float](co colls[T], a *acts[T], kAll, vAll Mat[T]) {
	if len(kAll.D) > 0 && len(a.k.D) > 0 && &kAll.D[0] != &a.k.D[0] {
		co.recycle(kAll, vAll)
	}
}

// keyRow is the row of the gathered K/V holding sequence bi's key at
// global position p: context rank p/s contributed rows [rank·n, rank·n+n).
func keyRow(mb micro, bi, p int) int { return (p/mb.s)*mb.n() + bi*mb.s + p%mb.s }

// query is one row of causal attention: sequence bi's query at local row
// r of Q and of the output (global position pos), in query head h, which
// reads KV head kh; its probabilities are row p of P.
type query struct{ bi, h, kh, r, pos, p int }

// queries calls f for every local query of causal attention (qh query
// heads on this device), sequence by sequence and head by head, in P's
// row order.
func queries(c Config, qh int, mb micro, f func(query)) {
	group := c.Heads / c.KVHeads
	for bi := range mb.b {
		for h := range qh {
			for qi := range mb.s {
				r := bi*mb.s + qi
				f(query{bi: bi, h: h, kh: h / group, r: r, pos: mb.pos(r), p: (bi*qh+h)*mb.s + qi})
			}
		}
	}
}

// headOf is head h's hd columns of row r of m.
func headOf[T Float](m Mat[T], r, h, hd int) []T { return m.Row(r)[h*hd : (h+1)*hd] }

// attention computes causal softmax(Q·Kᵀ/√hd)·V for every local head and
// sequence. P holds one row per (sequence, head, query) over all seq keys.
func attention[T Float](c Config, q, kAll, vAll Mat[T], mb micro, hd int) (out, p Mat[T]) {
	qh := q.C / hd
	out = newMat[T](q.R, q.C)
	p = newMat[T](mb.b*qh*mb.s, mb.s*mb.c)
	scale := 1 / sqrt(T(hd))
	queries(c, qh, mb, func(x query) {
		qv, prow, ov := headOf(q, x.r, x.h, hd), p.Row(x.p), headOf(out, x.r, x.h, hd)
		mx := T(-1e30)
		for kp := 0; kp <= x.pos; kp++ {
			s := dot(qv, headOf(kAll, keyRow(mb, x.bi, kp), x.kh, hd)) * scale
			prow[kp] = s
			mx = max(mx, s)
		}
		var sum T
		for kp := 0; kp <= x.pos; kp++ {
			e := exp(prow[kp] - mx)
			prow[kp] = e
			sum += e
		}
		for kp := 0; kp <= x.pos; kp++ {
			prow[kp] /= sum
			axpy(ov, headOf(vAll, keyRow(mb, x.bi, kp), x.kh, hd), prow[kp])
		}
	})
	return out, p
}

// layerBackward takes dy, adds the weight gradients to g and returns dx,
// in dy's buffer (the residual's gradient is dy plus the norms', an
// elementwise sum XLA writes into its dying operand). It frees each
// gradient after its last use, and each of a's tensors after its last
// when they were recomputed (acts.done), as XLA's buffer assignment does,
// so that what is live at each step is what package cost's walk of the
// same pass (layerBackward) lists.
func layerBackward[T Float](c Config, l *Layer[T], g *Layer[T], a *acts[T], dy Mat[T], mb micro, co colls[T]) Mat[T] {
	n := dy.R
	hd, kvd := c.headDim(), a.k.C
	dh2 := mlpBackward(c, l, g, a, dy, co)
	dx2 := dy
	rmsnormBack(a.x2, l.N2, a.rstd2, dh2, dx2, g.N2)
	if a.moe == nil {
		co.recycle(dh2)
	}
	a.done(co, &a.x2)
	// attention: x2 = x + attn·Wo
	matMulTA(co.gemm(), g.Wo, a.attn, dx2, true)
	dattn := co.mat(n, l.Wo.R)
	matMulTB(co.gemm(), dattn, dx2, l.Wo, false)
	if !c.FlashAttention {
		a.done(co, &a.attn) // FlashAttention's backward reads the output
	}
	kAll := Mat[T]{R: n * mb.c, C: a.k.C, D: co.contextAllGather(a.k.D)}
	vAll := Mat[T]{R: n * mb.c, C: a.v.C, D: co.contextAllGather(a.v.D)}
	dq, dkAll, dvAll := co.mat(a.q.R, a.q.C), co.mat(kAll.R, kAll.C), co.mat(vAll.R, vAll.C)
	if c.FlashAttention {
		attentionFlashBackInto(co.gemm(), c, a.q, kAll, vAll, a.attn, a.lse, dattn, mb, hd, dq, dkAll, dvAll)
	} else {
		// the scores' gradient, all of it at once as XLA's einsum makes it
		ds := co.mat(len(a.p.D)/(mb.s*mb.c), mb.s*mb.c)
		attentionKeepPBackInto(co.gemm(), c, a.q, kAll, vAll, a.p, dattn, mb, hd, dq, dkAll, dvAll, ds)
		co.recycle(ds)
	}
	co.recycle(dattn)
	recycleGathered(co, a, kAll, vAll)
	a.done(co, &a.k, &a.v, &a.p, &a.attn)
	dk := Mat[T]{R: n, C: kvd, D: co.contextReduceScatter(dkAll.D)}
	dv := Mat[T]{R: n, C: dk.C, D: co.contextReduceScatter(dvAll.D)}
	if len(dk.D) > 0 && &dk.D[0] != &dkAll.D[0] {
		co.recycle(dkAll, dvAll)
	}
	dh1 := inputBack(co, a, &a.h1, proj[T]{l.Wq, g.Wq, dq}, proj[T]{l.Wk, g.Wk, dk}, proj[T]{l.Wv, g.Wv, dv})
	a.done(co, &a.q)
	co.tensorAllReduce(dh1.D)
	// dx is dx2 plus the first norm's input gradient
	rmsnormBack(a.x, l.N1, a.rstd1, dh1, dx2, g.N1)
	co.recycle(dh1)
	return dx2
}

// proj is a projection's weight w, its gradient g and the gradient dy of
// its output.
type proj[T Float] struct{ w, g, dy Mat[T] }

// inputBack is the backward pass of projections y = x·w that read one
// input x (the queries, keys and values of the normed input; an MLP's
// gate and up): it adds xᵀ·dy to each weight gradient g, lets x go
// (acts.done) and returns x's gradient, the sum of dy·wᵀ, recycling each
// dy.
func inputBack[T Float](co colls[T], a *acts[T], x *Mat[T], ps ...proj[T]) Mat[T] {
	n, d := x.R, x.C
	for _, p := range ps {
		matMulTA(co.gemm(), p.g, *x, p.dy, true)
	}
	a.done(co, x)
	dx := co.mat(n, d)
	for i, p := range ps {
		matMulTB(co.gemm(), dx, p.dy, p.w, i > 0)
	}
	for _, p := range ps {
		co.recycle(p.dy)
	}
	return dx
}

// mlpBackward adds the MLP's weight gradients to g and returns the
// gradient of its input h2, summed over tensor.
func mlpBackward[T Float](c Config, l *Layer[T], g *Layer[T], a *acts[T], dy Mat[T], co colls[T]) Mat[T] {
	if a.moe != nil {
		dh2, dRouter := moeBackward(c, l, g, a.moe, a.h2, dy, co)
		co.tensorAllReduce(dh2.D)
		add(dh2.D, dRouter.D) // the router is whole on every tensor rank
		return dh2
	}
	// y = x2 + (silu(h2·Wg) ⊙ h2·Wu)·Wd
	n := dy.R
	matMulTA(co.gemm(), g.Wd, a.a, dy, true)
	da := co.mat(n, l.Wd.R)
	matMulTB(co.gemm(), da, dy, l.Wd, false)
	a.done(co, &a.a)
	// du takes da's buffer, which dies at the activation's backward
	dg, du := co.mat(n, da.C), da
	swigluBack(co.gemm(), dg.D, du.D, da.D, a.g.D, a.u.D)
	a.done(co, &a.g, &a.u)
	dh2 := inputBack(co, a, &a.h2, proj[T]{l.Wg, g.Wg, dg}, proj[T]{l.Wu, g.Wu, du})
	co.tensorAllReduce(dh2.D) // column-parallel: the input's gradient sums over tensor
	return dh2
}

// attentionBack is attention's backward from the probabilities P it
// kept: dV += Pᵀ·dO, dP = dO·Vᵀ, dS = P⊙(dP − ΣP·dP) scaled, dQ += dS·K and
// dK += dSᵀ·Q, row by row.
func attentionBack[T Float](c Config, q, kAll, vAll, p, dout Mat[T], mb micro, hd int) (dq, dk, dv Mat[T]) {
	dq, dk, dv = newMat[T](q.R, q.C), newMat[T](kAll.R, kAll.C), newMat[T](vAll.R, vAll.C)
	scale := 1 / sqrt(T(hd))
	dp := make([]T, mb.s*mb.c)
	queries(c, q.C/hd, mb, func(x query) {
		prow, do := p.Row(x.p), headOf(dout, x.r, x.h, hd)
		var sum T
		for kp := 0; kp <= x.pos; kp++ {
			kr := keyRow(mb, x.bi, kp)
			dp[kp] = dot(do, headOf(vAll, kr, x.kh, hd))
			axpy(headOf(dv, kr, x.kh, hd), do, prow[kp])
			sum += dp[kp] * prow[kp]
		}
		qv, dqv := headOf(q, x.r, x.h, hd), headOf(dq, x.r, x.h, hd)
		for kp := 0; kp <= x.pos; kp++ {
			ds := prow[kp] * (dp[kp] - sum) * scale
			kr := keyRow(mb, x.bi, kp)
			axpy(dqv, headOf(kAll, kr, x.kh, hd), ds)
			axpy(headOf(dk, kr, x.kh, hd), qv, ds)
		}
	})
	return dq, dk, dv
}

// flashBlock is the queries and the keys attentionFlash takes at a time:
// it holds one flashBlock × flashBlock tile of scores.
const flashBlock = 64

// flashTiles walks the score tiles of sequence bi for FlashAttention: the
// local queries in blocks of up to flashBlock (q0, bq), and for each the
// keys up to the block's last query position in blocks of up to
// flashBlock that stay inside one context chunk (k0, bk, the position of
// the first key and its row in the gathered K and V).
func flashTiles(mb micro, bi int, tile func(q0, bq, k0, bk, kr int)) {
	s := mb.s
	for q0 := 0; q0 < s; q0 += flashBlock {
		bq := min(flashBlock, s-q0)
		last := mb.ci*s + q0 + bq - 1
		for k0 := 0; k0 <= last; {
			bk := min(flashBlock, last+1-k0, s-k0%s)
			tile(q0, bq, k0, bk, keyRow(mb, bi, k0))
			k0 += bk
		}
	}
}

// flashRow is row i of a bq × bk tile whose first key is at position k0,
// and how many of its keys the query at qp sees (causal: key ≤ query).
func flashRow[T Float](tile []T, i, bk, k0, qp int) (row []T, seen int) {
	return tile[i*bk : (i+1)*bk], max(0, min(bk, qp-k0+1))
}

// attentionFlash computes attention's output tile by tile with an online
// softmax (FlashAttention-2, Dao 2023, algorithm 1): per sequence and
// head, for each block of queries and each block of the keys they see,
// the scores are one Q·Kᵀ GEMM into a tile; each row's running maximum
// and sum are updated, the running output rescaled when the maximum
// grows, and O += P·V is one GEMM. It holds one tile of scores at a time
// and returns, instead of P, each query's log-sum-exp, one per (sequence,
// head, query), in P's row order.
func attentionFlash[T Float](gemm kernel.GEMM, c Config, q, kAll, vAll Mat[T], mb micro, hd int) (out Mat[T], lse []T) {
	qh := q.C / hd
	group := c.Heads / c.KVHeads
	s := mb.s
	out = newMat[T](q.R, q.C)
	lse = make([]T, mb.b*qh*s)
	scale := 1 / sqrt(T(hd))
	tile := make([]T, flashBlock*flashBlock)
	mx, sum := make([]T, flashBlock), make([]T, flashBlock)
	for bi := range mb.b {
		for h := range qh {
			kh := h / group
			flashTiles(mb, bi, func(q0, bq, k0, bk, kr int) {
				qb, ob := q.D[(bi*s+q0)*q.C+h*hd:], out.D[(bi*s+q0)*out.C+h*hd:]
				if k0 == 0 {
					for i := range bq {
						mx[i], sum[i] = -1e30, 0
					}
				}
				gemmAt(gemm, false, true, bq, bk, hd, qb, q.C, kAll.D[kr*kAll.C+kh*hd:], kAll.C, false, tile, bk)
				for i := range bq {
					row, seen := flashRow(tile, i, bk, k0, mb.ci*s+q0+i)
					if seen > 0 {
						bm := mx[i]
						for k := range seen {
							row[k] *= scale
							bm = max(bm, row[k])
						}
						if bm > mx[i] { // a larger maximum: rescale what is summed so far
							f := exp(mx[i] - bm)
							sum[i] *= f
							scaleRow(ob[i*out.C:i*out.C+hd], f)
							mx[i] = bm
						}
						expSub(gemm, row[:seen], row[:seen], mx[i])
						for _, e := range row[:seen] {
							sum[i] += e
						}
					}
					clear(row[seen:])
				}
				gemmAt(gemm, false, false, bq, hd, bk, tile, bk, vAll.D[kr*vAll.C+kh*hd:], vAll.C, true, ob, out.C)
				if k0+bk == mb.ci*s+q0+bq { // the block's last tile
					for i := range bq {
						scaleRow(ob[i*out.C:i*out.C+hd], 1/sum[i])
						lse[(bi*qh+h)*s+q0+i] = mx[i] + log(sum[i])
					}
				}
			})
		}
	}
	return out, lse
}

// scaleRow multiplies x by f.
func scaleRow[T Float](x []T, f T) {
	for i := range x {
		x[i] *= f
	}
}

// attentionFlashBack is attentionBack from the output and the log-sum-exp
// (FlashAttention-2, Dao 2023, algorithm 2), tile by tile as
// attentionFlash: it recomputes each tile's probabilities P = exp(S − lse),
// takes dO·O for Σ P·dP (FlashAttention's D), and makes every product a
// GEMM: dV += Pᵀ·dO, dP = dO·Vᵀ, dS = P⊙(dP − D) scaled, dQ += dS·K and
// dK += dSᵀ·Q.
func attentionFlashBack[T Float](gemm kernel.GEMM, c Config, q, kAll, vAll, out Mat[T], lse []T, dout Mat[T], mb micro, hd int) (dq, dk, dv Mat[T]) {
	dq, dk, dv = newMat[T](q.R, q.C), newMat[T](kAll.R, kAll.C), newMat[T](vAll.R, vAll.C)
	attentionFlashBackInto(gemm, c, q, kAll, vAll, out, lse, dout, mb, hd, dq, dk, dv)
	return dq, dk, dv
}

// attentionFlashBackInto is attentionFlashBack adding into zeroed dq, dk
// and dv. Its tiles are the kernel's scratch (VMEM on a TPU), not metered.
func attentionFlashBackInto[T Float](gemm kernel.GEMM, c Config, q, kAll, vAll, out Mat[T], lse []T, dout Mat[T], mb micro, hd int, dq, dk, dv Mat[T]) {
	qh := q.C / hd
	group := c.Heads / c.KVHeads
	s := mb.s
	scale := 1 / sqrt(T(hd))
	p, ds := make([]T, flashBlock*flashBlock), make([]T, flashBlock*flashBlock)
	d := make([]T, flashBlock)
	for bi := range mb.b {
		for h := range qh {
			kh := h / group
			flashTiles(mb, bi, func(q0, bq, k0, bk, kr int) {
				r0 := bi*s + q0
				qb, dob := q.D[r0*q.C+h*hd:], dout.D[r0*dout.C+h*hd:]
				if k0 == 0 {
					for i := range bq {
						d[i] = dot(dout.Row(r0 + i)[h*hd:(h+1)*hd], out.Row(r0 + i)[h*hd:(h+1)*hd])
					}
				}
				gemmAt(gemm, false, true, bq, bk, hd, qb, q.C, kAll.D[kr*kAll.C+kh*hd:], kAll.C, false, p, bk)
				gemmAt(gemm, false, true, bq, bk, hd, dob, dout.C, vAll.D[kr*vAll.C+kh*hd:], vAll.C, false, ds, bk)
				for i := range bq {
					qp := mb.ci*s + q0 + i
					prow, seen := flashRow(p, i, bk, k0, qp)
					drow, _ := flashRow(ds, i, bk, k0, qp)
					scaleRow(prow[:seen], scale)
					expSub(gemm, prow[:seen], prow[:seen], lse[(bi*qh+h)*s+q0+i])
					for k := range seen {
						drow[k] = prow[k] * (drow[k] - d[i]) * scale
					}
					clear(prow[seen:])
					clear(drow[seen:])
				}
				gemmAt(gemm, true, false, bk, hd, bq, p, bk, dob, dout.C, true, dv.D[kr*dv.C+kh*hd:], dv.C)
				gemmAt(gemm, false, false, bq, hd, bk, ds, bk, kAll.D[kr*kAll.C+kh*hd:], kAll.C, true, dq.D[r0*dq.C+h*hd:], dq.C)
				gemmAt(gemm, true, false, bk, hd, bq, ds, bk, qb, q.C, true, dk.D[kr*dk.C+kh*hd:], dk.C)
			})
		}
	}
}

// v1Layers is implemented by a GEMM kernel that asks the layers to compute
// as v1 did: the row-by-row attention (dot products and axpys per query
// and key) instead of attentionBlocks, and exp one element at a time.
// Only the benchmarks' v1 kernel (a test file's) implements it, to time
// v1's path beside the current one; nothing global changes.
type v1Layers interface {
	kernel.GEMM
	V1Layers()
}

// onV1Path tells whether gemm asks for v1's layers.
func onV1Path(gemm kernel.GEMM) bool {
	_, ok := gemm.(v1Layers)
	return ok
}

func attentionKeepP[T Float](gemm kernel.GEMM, c Config, q, kAll, vAll Mat[T], mb micro, hd int) (out, p Mat[T]) {
	if onV1Path(gemm) {
		return attention(c, q, kAll, vAll, mb, hd)
	}
	return attentionBlocks(gemm, c, q, kAll, vAll, mb, hd)
}

// attentionKeepPBackInto is the backward of attentionKeepP into zeroed
// dq, dk and dv, with ds (P's shape) for the scores' gradient.
func attentionKeepPBackInto[T Float](gemm kernel.GEMM, c Config, q, kAll, vAll, p, dout Mat[T], mb micro, hd int, dq, dk, dv, ds Mat[T]) {
	if onV1Path(gemm) {
		q1, k1, v1 := attentionBack(c, q, kAll, vAll, p, dout, mb, hd)
		copy(dq.D, q1.D)
		copy(dk.D, k1.D)
		copy(dv.D, v1.D)
		return
	}
	attentionBlocksBackInto(gemm, c, q, kAll, vAll, p, dout, mb, hd, dq, dk, dv, ds)
}

// attentionBlocks is attention with its products as GEMMs: per sequence
// and head, the scores of each context chunk of keys are one Q·Kᵀ, and the
// output sums P·V over the chunks. It keeps P as attention does (rows in
// the same order, zero above the diagonal); the sums run in the GEMM's
// order, so the results differ from attention's in the last bits.
func attentionBlocks[T Float](gemm kernel.GEMM, c Config, q, kAll, vAll Mat[T], mb micro, hd int) (out, p Mat[T]) {
	qh := q.C / hd
	group := c.Heads / c.KVHeads
	s, n, seq := mb.s, mb.n(), mb.s*mb.c
	out = newMat[T](q.R, q.C)
	p = newMat[T](mb.b*qh*s, seq)
	scale := 1 / sqrt(T(hd))
	for bi := range mb.b {
		for h := range qh {
			kh := h / group
			qb := q.D[bi*s*q.C+h*hd:]
			pb := p.D[(bi*qh+h)*s*seq:]
			// keys of chunk j (positions j·s…) are rows j·n+bi·s… of K and V;
			// chunks after this device's own hold only later positions
			for j := 0; j <= mb.ci; j++ {
				gemmAt(gemm, false, true, s, s, hd, qb, q.C, kAll.D[(j*n+bi*s)*kAll.C+kh*hd:], kAll.C, false, pb[j*s:], seq)
			}
			for qi := range s {
				qp := mb.ci*s + qi
				prow := pb[qi*seq : (qi+1)*seq]
				mx := T(-1e30)
				for kp := 0; kp <= qp; kp++ {
					prow[kp] *= scale
					mx = max(mx, prow[kp])
				}
				expSub(gemm, prow[:qp+1], prow[:qp+1], mx)
				var sum T
				for _, e := range prow[:qp+1] {
					sum += e
				}
				inv := 1 / sum
				for kp := 0; kp <= qp; kp++ {
					prow[kp] *= inv
				}
				clear(prow[qp+1:])
			}
			for j := 0; j <= mb.ci; j++ {
				gemmAt(gemm, false, false, s, hd, s, pb[j*s:], seq, vAll.D[(j*n+bi*s)*vAll.C+kh*hd:], vAll.C, j > 0, out.D[bi*s*out.C+h*hd:], out.C)
			}
		}
	}
	return out, p
}

// attentionBlocksBack is attentionBack with its products as GEMMs, per
// sequence, head and context chunk of keys: dP = dO·Vᵀ, dS = P⊙(dP − ΣP·dP)
// scaled, then dV += Pᵀ·dO, dK += dSᵀ·Q and dQ += dS·K.
func attentionBlocksBack[T Float](gemm kernel.GEMM, c Config, q, kAll, vAll, p, dout Mat[T], mb micro, hd int) (dq, dk, dv Mat[T]) {
	dq, dk, dv = newMat[T](q.R, q.C), newMat[T](kAll.R, kAll.C), newMat[T](vAll.R, vAll.C)
	attentionBlocksBackInto(gemm, c, q, kAll, vAll, p, dout, mb, hd, dq, dk, dv, newMat[T](p.R, p.C))
	return dq, dk, dv
}

// attentionBlocksBackInto is attentionBlocksBack adding into zeroed dq,
// dk and dv, with the scores' gradient dS in ds, P's shape: every
// sequence's and head's at once, as XLA's einsum makes it.
func attentionBlocksBackInto[T Float](gemm kernel.GEMM, c Config, q, kAll, vAll, p, dout Mat[T], mb micro, hd int, dq, dk, dv, dsAll Mat[T]) {
	qh := q.C / hd
	group := c.Heads / c.KVHeads
	s, n, seq := mb.s, mb.n(), mb.s*mb.c
	scale := 1 / sqrt(T(hd))
	for bi := range mb.b {
		for h := range qh {
			kh := h / group
			qb, dob := q.D[bi*s*q.C+h*hd:], dout.D[bi*s*dout.C+h*hd:]
			pb := p.D[(bi*qh+h)*s*seq:]
			ds := dsAll.D[(bi*qh+h)*s*seq : (bi*qh+h+1)*s*seq]
			for j := 0; j <= mb.ci; j++ {
				gemmAt(gemm, false, true, s, s, hd, dob, dout.C, vAll.D[(j*n+bi*s)*vAll.C+kh*hd:], vAll.C, false, ds[j*s:], seq)
			}
			for qi := range s {
				qp := mb.ci*s + qi
				prow, drow := pb[qi*seq:(qi+1)*seq], ds[qi*seq:(qi+1)*seq]
				var sum T
				for kp := 0; kp <= qp; kp++ {
					sum += drow[kp] * prow[kp]
				}
				for kp := 0; kp <= qp; kp++ {
					drow[kp] = prow[kp] * (drow[kp] - sum) * scale
				}
				clear(drow[qp+1:])
			}
			for j := 0; j <= mb.ci; j++ {
				kr := (j*n + bi*s)
				gemmAt(gemm, true, false, s, hd, s, pb[j*s:], seq, dob, dout.C, true, dv.D[kr*dv.C+kh*hd:], dv.C)
				gemmAt(gemm, true, false, s, hd, s, ds[j*s:], seq, qb, q.C, true, dk.D[kr*dk.C+kh*hd:], dk.C)
				gemmAt(gemm, false, false, s, hd, s, ds[j*s:], seq, kAll.D[kr*kAll.C+kh*hd:], kAll.C, true, dq.D[bi*s*dq.C+h*hd:], dq.C)
			}
		}
	}
}
