package emu

import (
	"fmt"

	"shardlab/emu/fabric"
	"shardlab/mesh"
	"shardlab/schedule"
)

// A device runs its op list from package schedule: each op is a forward or
// backward pass of one micro-batch through one of its chunks of layers.
// Chunk k of pipeline stage s is virtual stage k·p + s; a pass through
// virtual stage vs takes its input from vs−1 (forward) or vs+1 (backward),
// which live on the neighbouring stages, round the ring when the device
// holds several chunks.

// inbox is the pipeline messages from one peer. The fabric keeps one FIFO
// per pair of devices, and with two stages and several chunks a pair
// carries activations one way and gradients the other way interleaved, so
// the order a device needs them in need not be the order they were sent:
// pos numbers the peer's sends to this device in its op order, and stash
// keeps those that arrived before the one an op waits for.
type inbox struct {
	pos   map[schedule.Op]int
	got   int
	stash map[int]fabric.Message
}

// inboxes numbers, for the device at pipeline stage si, every peer's sends
// to it in the peer's op order, keyed by the sending op.
func inboxes(s schedule.Schedule, si int, pipe []int) map[int]*inbox {
	out := map[int]*inbox{}
	for from, ops := range s.Ops {
		if from == si {
			continue
		}
		in := &inbox{pos: map[schedule.Op]int{}, stash: map[int]fabric.Message{}}
		for _, op := range ops {
			if to, ok := sendTo(s, from, op); ok && to == si {
				in.pos[op] = len(in.pos)
			}
		}
		if len(in.pos) > 0 {
			out[pipe[from]] = in
		}
	}
	return out
}

// sendTo is the pipeline stage that op, run by stage si, sends its output
// to, if any: the next virtual stage's after a forward, the previous one's
// after a backward.
func sendTo(s schedule.Schedule, si int, op schedule.Op) (int, bool) {
	vs, last := op.Chunk*s.Stages+si, s.Stages*s.Chunks-1
	switch {
	case op.Pass == schedule.Forward && vs < last:
		return (vs + 1) % s.Stages, true
	case op.Pass == schedule.Backward && vs > 0:
		return (vs - 1) % s.Stages, true
	}
	return 0, false
}

// virtualStage is the virtual stage op runs on this device.
func (d *device) virtualStage(op schedule.Op) int {
	return op.Chunk*len(d.pipe) + d.coord[mesh.Pipeline]
}

// pipeNext is the device of the next pipeline stage, round the ring when
// the devices hold several chunks each, or -1.
func (d *device) pipeNext() int {
	p, si := len(d.pipe), d.coord[mesh.Pipeline]
	switch {
	case p == 1:
		return -1
	case si < p-1:
		return d.pipe[si+1]
	case d.tc.Chunks > 1:
		return d.pipe[0]
	}
	return -1
}

// send hands op's output to the virtual stage that takes it.
func (d *device) send(op schedule.Op, x []float32) {
	to, _ := sendTo(d.tc.sched, d.coord[mesh.Pipeline], op)
	d.ep.Send(d.pipe[to], x)
}

// recv waits for op's input: the output of the same micro-batch's pass
// through the previous virtual stage (forward) or the next one (backward).
func (d *device) recv(op schedule.Op) []float32 {
	p := len(d.pipe)
	from := d.virtualStage(op) - 1
	if op.Pass == schedule.Backward {
		from += 2
	}
	peer := d.pipe[from%p]
	in := d.inbox[peer]
	i, ok := in.pos[schedule.Op{Pass: op.Pass, MicroBatch: op.MicroBatch, Chunk: from / p}]
	if !ok {
		panic(fmt.Sprintf("emu: device %d waits for %v from device %d, which never sends it", d.id, op, peer)) // schedule bug
	}
	for in.got <= i {
		in.stash[in.got] = d.ep.Take(peer)
		in.got++
	}
	m := in.stash[i]
	delete(in.stash, i)
	return d.ep.Arrive(peer, m)
}

// recvMat is op's input (recv) as the matrix a stage passes on: micro-batch
// mb's tokens by d_model, activations forward and their gradients backward.
func (d *device) recvMat(op schedule.Op, mb micro) Mat[float32] {
	return Mat[float32]{R: mb.n(), C: d.c.DModel, D: d.recv(op)}
}

// stepState is what a device keeps between the passes of one step.
type stepState struct {
	micros []micro
	saved  [][][]*acts[float32] // per micro-batch, chunk and layer of the chunk
	heads  []*headActs[float32]
	// outs and douts are, with the head after the pipeline (headAfter),
	// each micro-batch's output of the last virtual stage and its
	// gradient, on the last stage
	outs, douts []Mat[float32]
	rate        float64
}

// step runs one training step on this device: its op list's forward and
// backward passes over the micro-batches, the gradient all-reduce over
// data, and Adam on its shard.
func (d *device) step(batch [][]int, rate float64) {
	mbs := d.tc.MicroBatches
	st := &stepState{micros: d.micros(batch), saved: make([][][]*acts[float32], mbs), heads: make([]*headActs[float32], mbs),
		outs: make([]Mat[float32], mbs), douts: make([]Mat[float32], mbs), rate: rate}
	for i := range st.saved {
		st.saved[i] = make([][]*acts[float32], d.tc.Chunks)
	}
	for _, in := range d.inbox {
		in.got = 0
	}
	d.loss = 0
	head := d.tc.headAfter()
	for _, op := range d.tc.sched.Ops[d.coord[mesh.Pipeline]] {
		if op.Pass == schedule.Forward {
			d.forward(st, op)
			continue
		}
		if head {
			// every forward has run (GPipe and circular run them all
			// first): the output layer and loss, on every stage
			d.headPhase(st)
			head = false
		}
		d.backward(st, op)
	}
	d.update()
}

// micros cuts this device's share of the global batch into its
// micro-batches: its data × fsdp row block, its context slice of the
// sequence.
func (d *device) micros(batch [][]int) []micro {
	m, c := d.tc.Mesh, d.c
	mbs := d.tc.MicroBatches
	// the batch splits over data, fsdp and expert (MaxText's activation
	// batch rule lists all three)
	shardIdx := (d.coord[mesh.Data]*m.Size(mesh.FSDP)+d.coord[mesh.FSDP])*m.Size(mesh.Expert) + d.coord[mesh.Expert]
	per := d.tc.GlobalBatch / (m.Size(mesh.Data) * m.Size(mesh.FSDP) * m.Size(mesh.Expert))
	b := per / mbs
	cpn := m.Size(mesh.Context)
	s := c.Seq / cpn
	scale := 1 / float64(d.tc.GlobalBatch*c.Seq)
	out := make([]micro, mbs)
	for k := range mbs {
		mb := micro{b: b, s: s, ci: d.coord[mesh.Context], c: cpn, scale: scale}
		for i := range b {
			row := batch[shardIdx*per+k*b+i]
			lo := mb.ci * s
			mb.tokens = append(mb.tokens, row[lo:lo+s]...)
			mb.targets = append(mb.targets, row[lo+1:lo+s+1]...)
		}
		out[k] = mb
	}
	return out
}

// stageEnds tells whether op runs on the first virtual stage, which holds
// the embedding, and on the last, which holds the head.
func (d *device) stageEnds(op schedule.Op) (first, last bool) {
	vs := d.virtualStage(op)
	return vs == 0, vs == d.tc.sched.Stages*d.tc.Chunks-1
}

// chunkLayers is the range of this device's layers (indices into its
// template) that chunk k holds.
func (d *device) chunkLayers(k int) (lo, hi int) {
	per := len(d.tmpl.Layers) / d.tc.Chunks
	return k * per, (k + 1) * per
}

// forward runs op's forward pass: the embedding on virtual stage 0, else
// the previous stage's activations; the chunk's layers; then the head on
// the last virtual stage (or, with the head after the pipeline, headAfter,
// the output kept for it), else a send to the next.
func (d *device) forward(st *stepState, op schedule.Op) {
	mb := st.micros[op.MicroBatch]
	first, last := d.stageEnds(op)
	var x Mat[float32]
	// a single stage keeps its gathered ends from the embedding to the
	// head: one gather per pass, as FSDP does
	var ends []float32
	if first {
		ends = d.gather(0)
		x = embed(d.bindEnds(ends), mb)
		if !last {
			d.release(0, ends)
		}
	} else {
		x = d.recvMat(op, mb)
	}
	lo, hi := d.chunkLayers(op.Chunk)
	saved := make([]*acts[float32], hi-lo)
	for li := lo; li < hi; li++ {
		buf, experts := d.layerGroups(li, d.gather)
		l := bindLayer(d.tmpl.Layers[li], buf, experts)
		var a *acts[float32]
		x, a = layerForward(d.c, &l, x, mb, colls[float32](d))
		d.doneGroups(li, buf, experts, d.release)
		if d.tc.Remat == RematFull {
			// keep the layer's input alone: the backward pass reruns the
			// layer from it (jax.checkpoint, MaxText's remat_policy full)
			recycleActs(a, colls[float32](d))
			d.dropActs(a)
			a = &acts[float32]{x: a.x}
		}
		d.holdActs(a, classActivations)
		saved[li-lo] = a
		d.compute(fmt.Sprintf("F%d layer %d", op.MicroBatch, d.layers[li]), d.layerFLOPs(&l, mb), st.rate)
	}
	st.saved[op.MicroBatch][op.Chunk] = saved
	if !last {
		d.send(op, x.D)
		d.mem.drop(x.D) // sent: a copy went
		return
	}
	if d.tc.headAfter() {
		// the pipeline's output, kept for the head after the pipeline
		st.outs[op.MicroBatch] = x
		d.mem.hold(classOutput, d.elem, x.D)
		return
	}
	if !first {
		ends = d.gather(0)
	}
	loss, ha := headForward(d.gemm(), d.c, d.bindEnds(ends), x, mb)
	d.release(0, ends)
	d.loss += loss
	st.heads[op.MicroBatch] = ha
	d.holdHead(ha)
	if !d.tc.BlocksOnlyClock {
		d.compute(fmt.Sprintf("F%d head", op.MicroBatch), 2*float64(mb.n())*float64(d.c.DModel*d.c.Vocab), st.rate)
	}
}

// backward runs op's backward pass: the head's on the last virtual stage
// (or, with the head after the pipeline, the gradient headPhase left),
// else the next stage's gradients; the chunk's layers in reverse; then the
// embedding's on virtual stage 0, else a send to the previous.
func (d *device) backward(st *stepState, op schedule.Op) {
	mb := st.micros[op.MicroBatch]
	first, last := d.stageEnds(op)
	var dx Mat[float32]
	var endsGrad []float32
	after := d.tc.headAfter()
	if first || last && !after {
		endsGrad = d.gradBuf(0)
	}
	d.mode = classOutput
	switch {
	case last && after:
		// the gradient of the pipeline's output, from the head after
		// the pipeline (headPhase)
		dx, st.douts[op.MicroBatch] = st.douts[op.MicroBatch], Mat[float32]{}
	case last:
		ends := d.gatherHead()
		ha := st.heads[op.MicroBatch]
		dx = headBack(d.c, d.bindEnds(ends), d.bindEnds(endsGrad), ha, mb, colls[float32](d))
		d.release(0, ends)
		d.mem.drop(ha.x.D, ha.h.D, ha.rstd, ha.logits.D, ha.probs.D)
		st.heads[op.MicroBatch] = nil
		if !d.tc.BlocksOnlyClock {
			d.compute(fmt.Sprintf("B%d head", op.MicroBatch), 4*float64(mb.n())*float64(d.c.DModel*d.c.Vocab), st.rate)
		}
	default:
		dx = d.recvMat(op, mb)
	}
	d.mode = classActGrads
	d.mem.hold(classActGrads, d.elem, dx.D)
	dx = d.layersBackward(st, op, dx)
	d.mode = classOther
	d.mem.drop(dx.D)
	if first {
		embedBack(d.bindEnds(endsGrad), mb, dx)
	} else {
		d.send(op, dx.D)
	}
	if first || last && !after {
		d.scatterGrad(0, endsGrad)
	}
}

// layersBackward runs the backward pass of op's chunk's layers, last to
// first, from dx, the gradient of the chunk's output, and returns the
// gradient of its input; each layer's activations and gathered weights
// are let go as it finishes, and its gradients reduce-scattered.
func (d *device) layersBackward(st *stepState, op schedule.Op, dx Mat[float32]) Mat[float32] {
	mb := st.micros[op.MicroBatch]
	lo, hi := d.chunkLayers(op.Chunk)
	saved := st.saved[op.MicroBatch][op.Chunk]
	for li := hi - 1; li >= lo; li-- {
		buf, experts := d.layerGroups(li, d.gather)
		l := bindLayer(d.tmpl.Layers[li], buf, experts)
		gbuf, gexperts := d.layerGroups(li, d.gradBuf)
		gl := bindLayer(d.tmpl.Layers[li], gbuf, gexperts)
		a := saved[li-lo]
		if d.tc.Remat == RematFull {
			a = d.rerun(&l, a.x, mb, op, li, st.rate)
		}
		// the layer's gradient takes dx's buffer
		dx = layerBackward(d.c, &l, &gl, a, dx, mb, colls[float32](d))
		// the layer's activations are done with; its input x is the
		// previous layer's output but for the chunk's first layer (the
		// embedding's, or what the previous stage sent)
		recycleActs(a, colls[float32](d))
		d.dropActs(a)
		if li > lo {
			d.recycle(a.x)
		} else {
			d.mem.drop(a.x.D)
		}
		d.doneGroups(li, buf, experts, d.release)
		d.doneGroups(li, gbuf, gexperts, d.scatterGrad)
		saved[li-lo] = nil
		d.compute(fmt.Sprintf("B%d layer %d", op.MicroBatch, d.layers[li]), 2*d.layerFLOPs(&l, mb), st.rate)
	}
	return dx
}

// rerun is remat full's recompute of layer l from its input x before its
// backward pass: the layer's forward again, what it keeps metered as
// recomputed activations (its output is dropped at once).
func (d *device) rerun(l *Layer[float32], x Mat[float32], mb micro, op schedule.Op, li int, rate float64) *acts[float32] {
	d.mode = classRecomputed
	y, a := layerForward(d.c, l, x, mb, colls[float32](d))
	a.rerun = true
	d.recycle(y)
	d.holdActs(a, classRecomputed)
	d.mode = classActGrads
	d.compute(fmt.Sprintf("R%d layer %d", op.MicroBatch, d.layers[li]), d.layerFLOPs(l, mb), rate)
	return a
}

// holdHead meters what the output layer keeps for its backward pass: the
// final norm's input and output in the compute dtype, its scales, and
// the logits and their softmax in fp32 (MaxText's cast_logits_to_fp32;
// its cross-entropy keeps the logits and exp_shifted for the backward,
// utils/max_utils.py cross_entropy_with_logits).
func (d *device) holdHead(ha *headActs[float32]) {
	d.mem.hold(classOutput, d.elem, ha.x.D, ha.h.D)
	d.mem.hold(classOutput, 4, ha.rstd, ha.logits.D, ha.probs.D)
}

// layerGroups applies take to layer li's param groups: the layer's, and
// an MoE layer's routed experts' (nil for a dense layer). With gather it
// gathers the weights; with gradBuf it gives the gradient buffers.
func (d *device) layerGroups(li int, take func(gi int) []float32) (buf, experts []float32) {
	buf = take(1 + li)
	if eg := d.moeGroup[li]; eg >= 0 {
		experts = take(eg)
	}
	return buf, experts
}

// doneGroups hands layerGroups' buffers back to done: release for the
// weights, scatterGrad for the gradients.
func (d *device) doneGroups(li int, buf, experts []float32, done func(gi int, buf []float32)) {
	done(1+li, buf)
	if eg := d.moeGroup[li]; eg >= 0 {
		done(eg, experts)
	}
}

// update sums the gradients over the replicas (data; context shards the
// weights as fsdp does, and its reduce-scatter sums them there), and
// the ends' over the stages when every stage holds them (reduceEnds),
// then takes an Adam step on this device's shard.
func (d *device) update() {
	if d.tc.headAfter() {
		d.reduceEnds()
	}
	// the step's spare buffers go with it, so what stays allocated
	// between steps is what EstimateMemory's Static counts
	d.spare = nil
	n := 0
	for _, g := range d.grad {
		n += len(g)
	}
	if len(d.gradAll) != n { // kept from step to step, in shared memory when the transport has it
		d.gradAll = d.ep.Alloc(n)
	}
	all, off := d.gradAll, 0
	for _, g := range d.grad {
		off += copy(all[off:], g)
	}
	d.ep.AllReduce(d.gradG, all)
	d.adamT++
	off = 0
	for gi := range d.flat {
		n := len(d.flat[gi])
		adam(d.flat[gi], all[off:off+n], d.m[gi], d.v[gi], d.tc.LR, d.adamT)
		clear(d.grad[gi])
		off += n
	}
}
