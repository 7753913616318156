package emu

import "shardlab/emu/kernel"

import "math"

// embed looks up token and position embeddings for the micro-batch.
func embed[T Float](p *Params[T], mb micro) Mat[T] {
	x := newMat[T](mb.n(), p.Emb.C)
	for r, tok := range mb.tokens {
		row := x.Row(r)
		copy(row, p.Emb.Row(tok))
		add(row, p.Pos.Row(mb.pos(r)))
	}
	return x
}

func embedBack[T Float](g *Params[T], mb micro, dx Mat[T]) {
	for r, tok := range mb.tokens {
		add(g.Emb.Row(tok), dx.Row(r))
		add(g.Pos.Row(mb.pos(r)), dx.Row(r))
	}
}

// headActs is what the output layer keeps: the final norm's input and
// output, and the logits and their softmax (MaxText's cross-entropy keeps
// the fp32 logits and exp_shifted).
type headActs[T Float] struct {
	x, h          Mat[T]
	rstd          []T
	logits, probs Mat[T]
}

// outWeight is the output projection: Out, or Embᵀ when tied.
func headForward[T Float](gemm kernel.GEMM, c Config, p *Params[T], x Mat[T], mb micro) (float64, *headActs[T]) {
	a := &headActs[T]{x: x}
	a.h, a.rstd = rmsnorm(x, p.NF)
	a.logits = newMat[T](x.R, c.Vocab)
	if c.Tied {
		matMulTB(gemm, a.logits, a.h, p.Emb, false)
	} else {
		matMul(gemm, a.logits, a.h, p.Out, false)
	}
	a.probs = newMat[T](x.R, c.Vocab)
	var loss float64
	for r := 0; r < x.R; r++ {
		lr, pr := a.logits.Row(r), a.probs.Row(r)
		mx := lr[0]
		for _, v := range lr {
			mx = max(mx, v)
		}
		expSub(gemm, pr, lr, mx)
		var sum T
		for _, e := range pr {
			sum += e
		}
		for j := range pr {
			pr[j] /= sum
		}
		loss -= math.Log(float64(pr[mb.targets[r]])) * mb.scale
	}
	return loss, a
}

func headBack[T Float](c Config, p, g *Params[T], a *headActs[T], mb micro, co colls[T]) Mat[T] {
	dl := co.mat32(a.probs.R, a.probs.C) // fp32, as the logits (MaxText's cross_entropy_with_logits)
	s := T(mb.scale)
	for r := 0; r < dl.R; r++ {
		pr, dr := a.probs.Row(r), dl.Row(r)
		for j, v := range pr {
			dr[j] = v * s
		}
		dr[mb.targets[r]] -= s
	}
	dh := co.mat(a.h.R, a.h.C)
	if c.Tied {
		matMulTA(co.gemm(), g.Emb, dl, a.h, true)
		matMul(co.gemm(), dh, dl, p.Emb, false)
	} else {
		matMulTA(co.gemm(), g.Out, a.h, dl, true)
		matMulTB(co.gemm(), dh, dl, p.Out, false)
	}
	co.recycle(dl)
	dx := co.mat(a.x.R, a.x.C)
	rmsnormBack(a.x, p.NF, a.rstd, dh, dx, g.NF)
	co.recycle(dh)
	return dx
}

// lossAndGrad runs one micro-batch forward and backward through the whole
// model on one device, adding the gradients to g.
func lossAndGrad[T Float](c Config, p, g *Params[T], mb micro) float64 {
	x := embed(p, mb)
	var saved []*acts[T]
	for i := range p.Layers {
		var a *acts[T]
		x, a = layerForward(c, &p.Layers[i], x, mb, solo[T]{})
		saved = append(saved, a)
	}
	loss, ha := headForward(kernel.Go(), c, p, x, mb)
	dx := headBack(c, p, g, ha, mb, solo[T]{})
	for i := len(p.Layers) - 1; i >= 0; i-- {
		dx = layerBackward(c, &p.Layers[i], &g.Layers[i], saved[i], dx, mb, solo[T]{})
	}
	embedBack(g, mb, dx)
	return loss
}

// lossOnly runs the forward pass.
func lossOnly[T Float](c Config, p *Params[T], mb micro) float64 {
	x := embed(p, mb)
	for i := range p.Layers {
		x, _ = layerForward(c, &p.Layers[i], x, mb, solo[T]{})
	}
	loss, _ := headForward(kernel.Go(), c, p, x, mb)
	return loss
}
