package emu

import (
	"shardlab/emu/kernel"
	"shardlab/mesh"
	"shardlab/schedule"
)

// MaxText's pipelines (GPipe and circular) run the output layer and the
// loss after the pipeline, on the whole batch, on every stage: the
// decoder applies pipeline_module to the whole batch and then
// apply_output_head to its output (layers/decoders.py Decoder.__call__,
// @e591f30c), whose logits are sharded over data, stage and fsdp
// (configs/base.yml activation_embed_and_logits_batch), and loss_fn takes
// the cross-entropy of the whole batch's logits (trainers/pre_train/
// train.py). The emulator does the same: the last virtual stage keeps
// each micro-batch's output (outs); between the last forward and the
// first backward every stage of the pipeline runs the head on its share
// of the device's batch (headShare) with its own copy of the final norm
// and output layer (every stage holds the ends, as MaxText's stages do;
// reduceEnds sums their gradients over the stages before the update),
// and the gradient of the pipeline's output goes back to the last stage,
// where each micro-batch's backward starts from it. 1F1B and
// interleaved (Megatron's schedules) run the head inside the schedule, a
// micro-batch at a time on the last stage.

// headAfter reports whether the pipeline runs the output layer and loss
// after the pipeline on every stage (GPipe and circular with stages).
func (tc *TrainConfig) headAfter() bool {
	return tc.Mesh.Size(mesh.Pipeline) > 1 && (tc.Schedule == schedule.GPipe || tc.Schedule == schedule.Circular)
}

// headShare is the sequences [lo, hi) of a device's batch (its micro-
// batches end to end) whose head pipeline stage si of p runs: the batch
// split over the stages, each taking as many as the first (rounded up,
// as XLA pads an uneven shard), the last ones fewer or none.
func headShare(seqs, si, p int) (lo, hi int) {
	per := (seqs + p - 1) / p
	return min(si*per, seqs), min((si+1)*per, seqs)
}

// shareMicro is the micro-batch of sequences [lo, hi) of mbs end to end.
func shareMicro(mbs []micro, lo, hi int) micro {
	out, b := mbs[0], mbs[0].b
	out.b, out.tokens, out.targets = hi-lo, nil, nil
	for q := lo; q < hi; q++ {
		mb, i := mbs[q/b], q%b
		out.tokens = append(out.tokens, mb.tokens[i*mb.s:(i+1)*mb.s]...)
		out.targets = append(out.targets, mb.targets[i*mb.s:(i+1)*mb.s]...)
	}
	return out
}

// headPhase runs the output layer and loss for this stage's share of the
// batch (headAfter), between the forward and the backward passes.
func (d *device) headPhase(st *stepState) {
	p, si := len(d.pipe), d.coord[mesh.Pipeline]
	seqs := len(st.micros) * st.micros[0].b
	if si < p-1 {
		if lo, hi := headShare(seqs, si, p); lo < hi {
			d.stageHead(st, shareMicro(st.micros, lo, hi))
		}
		return
	}
	d.lastHead(st, seqs)
}

// stageHead is headPhase on a stage before the last: it takes its share
// of the pipeline's output from the last stage, runs the head on it with
// its own copy of the final norm and output layer (every stage holds the
// ends, shard), and sends the share's gradient back; the output layer's
// gradient stays in its own accumulator until reduceEnds.
func (d *device) stageHead(st *stepState, mb micro) {
	last := d.pipe[len(d.pipe)-1]
	d.mode = classOutput
	x := Mat[float32]{R: mb.n(), C: d.c.DModel, D: d.ep.Recv(last)}
	d.mem.hold(classOutput, d.elem, x.D)
	ends := d.gatherHead()
	endsGrad := d.gradBuf(0)
	dx := d.runHead(st, d.bindEnds(ends), d.bindEnds(endsGrad), x, mb)
	d.release(0, ends)
	d.scatterGrad(0, endsGrad)
	d.ep.SendHead(last, dx.D)
	d.recycle(dx)
}

// runHead runs the head forward and backward over x, the output of the
// pipeline for mb, with weights p, adding its gradients to g; it returns
// the gradient of x and lets x and the head's activations go.
func (d *device) runHead(st *stepState, p, g *Params[float32], x Mat[float32], mb micro) Mat[float32] {
	loss, ha := headForward(d.gemm(), d.c, p, x, mb)
	d.loss += loss
	d.holdHead(ha)
	if !d.tc.BlocksOnlyClock {
		d.compute("F head", 2*float64(mb.n())*float64(d.c.DModel*d.c.Vocab), st.rate)
	}
	dx := headBack(d.c, p, g, ha, mb, colls[float32](d))
	d.mem.drop(ha.x.D, ha.h.D, ha.rstd, ha.logits.D, ha.probs.D)
	if !d.tc.BlocksOnlyClock {
		d.compute("B head", 4*float64(mb.n())*float64(d.c.DModel*d.c.Vocab), st.rate)
	}
	d.mode = classOther
	return dx
}

// lastHead is headPhase on the last stage: it hands each stage its share
// of the pipeline's output (st.outs), runs the head on its own share, and
// cuts the gradient of the pipeline's output, the stages' shares', into
// the micro-batches' (st.douts) for their backward passes.
func (d *device) lastHead(st *stepState, seqs int) {
	p := len(d.pipe)
	ends := d.gatherHead()
	d.mode = classOutput
	for si := range p - 1 {
		if lo, hi := headShare(seqs, si, p); lo < hi {
			x := d.outRows(st, lo, hi)
			d.ep.SendHead(d.pipe[si], x.D)
			d.recycle(x)
		}
	}
	// its own share, and the pipeline's output is let go
	lo, hi := headShare(seqs, p-1, p)
	var x Mat[float32]
	if lo < hi {
		x = d.outRows(st, lo, hi)
	}
	for k, out := range st.outs {
		d.recycle(out)
		st.outs[k] = Mat[float32]{}
	}
	endsGrad := d.gradBuf(0)
	dxs := make([]Mat[float32], p)
	if lo < hi {
		dxs[p-1] = d.runHead(st, d.bindEnds(ends), d.bindEnds(endsGrad), x, shareMicro(st.micros, lo, hi))
	}
	d.release(0, ends)
	d.scatterGrad(0, endsGrad)
	for si := range p - 1 {
		if lo, hi := headShare(seqs, si, p); lo < hi {
			dxs[si] = Mat[float32]{R: (hi - lo) * st.micros[0].s, C: d.c.DModel, D: d.ep.Recv(d.pipe[si])}
			d.mem.hold(classActGrads, d.elem, dxs[si].D)
		}
	}
	d.cutGrads(st, dxs)
}

// outRows copies sequences [lo, hi) of the pipeline's output (st.outs,
// the micro-batches end to end) into a new matrix.
func (d *device) outRows(st *stepState, lo, hi int) Mat[float32] {
	b, s, dm := st.micros[0].b, st.micros[0].s, d.c.DModel
	x := d.mat((hi-lo)*s, dm)
	for q := lo; q < hi; q++ {
		src := st.outs[q/b].D[(q%b)*s*dm : (q%b+1)*s*dm]
		copy(x.D[(q-lo)*s*dm:], src)
	}
	return x
}

// cutGrads cuts the gradient of the pipeline's output, by stage share
// (dxs), into the micro-batches' (st.douts), metered as activation
// gradients until their backward passes.
func (d *device) cutGrads(st *stepState, dxs []Mat[float32]) {
	b, s, dm := st.micros[0].b, st.micros[0].s, d.c.DModel
	d.mode = classActGrads
	for k := range st.douts {
		st.douts[k] = d.mat(b*s, dm)
	}
	q := 0
	for _, dx := range dxs {
		for r := 0; r < dx.R; r += s {
			copy(st.douts[q/b].D[(q%b)*s*dm:(q%b+1)*s*dm], dx.D[r*dm:(r+s)*dm])
			q++
		}
		d.recycle(dx)
	}
	d.mode = classOther
}

// reduceEnds sums the gradients of the ends (this device's shard of group
// 0) over the pipeline's stages, each of which holds the ends with the
// head after the pipeline: MaxText's all-reduce over the stage axis of
// the gradients of the parameters it does not shard over it (the
// embedding, final norm and output layer, configs/base.yml
// logical_axis_rules @e591f30c). The emulator runs it as a ring over the
// pipeline's links, point to point, so it is counted with the passes'
// sends ("pipeline send/recv"): a reduce-scatter, after which stage si
// holds part si+1 summed, then an all-gather, each stage sending p−1 of
// the p parts each way. Every stage ends with the same sums, bit for bit
// (each part is summed once and copied), so the stages' copies stay
// equal.
func (d *device) reduceEnds() {
	p, si := len(d.pipe), d.coord[mesh.Pipeline]
	g := d.grad[0]
	next, prev := d.pipe[(si+1)%p], d.pipe[(si+p-1)%p]
	part := func(k int) []float32 {
		k = (k%p + p) % p
		return g[k*len(g)/p : (k+1)*len(g)/p]
	}
	for r := range p - 1 {
		d.ep.Send(next, part(si-r))
		kernel.Add(part(si-r-1), d.ep.Recv(prev))
	}
	for r := range p - 1 {
		d.ep.Send(next, part(si+1-r))
		copy(part(si-r), d.ep.Recv(prev))
	}
}
