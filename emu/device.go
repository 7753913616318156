package emu

import (
	"math"

	"shardlab/collective"
	"shardlab/emu/fabric"
	"shardlab/emu/kernel"
	"shardlab/mesh"
)

// Memory is a device's bytes by component at its peak, each tensor counted
// at the dtype a TPU run holds it in (the emulator stores float32
// throughout): fp32 weights, gradients and Adam moments (MaxText's
// weight_dtype, grad_dtype and mu_dtype defaults); activations, gathered
// weights, compute copies and unreduced gradients in the compute dtype
// (bf16 with TrainConfig.BF16Compute, MaxText's dtype); the norms'
// scales, FlashAttention's log-sum-exp and the logits in fp32.
type Memory struct {
	Weights     int64 `json:"weights"`
	Gradients   int64 `json:"gradients"`
	Optimizer   int64 `json:"optimizer"`
	Activations int64 `json:"activations"` // held for the backward pass
	// Transient is the short-lived buffers, Transients at the peak
	// together.
	Transient int64 `json:"transient"`
}

// Total is the sum.
func (m Memory) Total() int64 {
	return m.Weights + m.Gradients + m.Optimizer + m.Activations + m.Transient
}

// Transients splits Memory.Transient at the peak by buffer class, as
// package cost names its phases' buffers.
type Transients struct {
	// Recomputed is the activations a remat policy reruns in the backward
	// pass, while the backward still needs them.
	Recomputed int64 `json:"recomputed_activations"`
	// ActivationGradients is the backward pass's gradients of the
	// activations: the layer's output gradient and those it makes.
	ActivationGradients int64 `json:"activation_gradients"`
	// Weights is the weights in use beside their shards: FSDP-gathered
	// weights and their unreduced gradients, or compute-dtype copies.
	Weights int64 `json:"weights_in_use"`
	// Output is the output layer's: the final norm's input and output,
	// the logits and the softmax (fp32, MaxText's cast_logits_to_fp32),
	// and their gradients.
	Output int64 `json:"output"`
	// Other is the rest: a layer's forward temporaries, the keys and
	// values gathered over the context axis.
	Other int64 `json:"other"`
}

// class is a buffer class of the meter.
type class uint8

const (
	classActivations class = iota
	classRecomputed
	classActGrads
	classWeights
	classOutput
	classOther
	numClasses
)

// meter tracks current use and the breakdown at the peak: the model state
// by component, and every other live buffer by its class and its bytes at
// the TPU dtype, keyed by a pointer to its first element.
type meter struct {
	cur, peak Memory
	// curC and peakC are the bytes by class, now and at the peak.
	curC, peakC [numClasses]int64
	live        map[any]metered
}

type metered struct {
	c     class
	bytes int64
}

func (m *meter) change(f func(*Memory)) {
	f(&m.cur)
	m.check()
}

func (m *meter) check() {
	if m.cur.Total() > m.peak.Total() {
		m.peak, m.peakC = m.cur, m.curC
	}
}

// add counts bytes (negative to take them off) in class c: the
// activations held for the backward pass, or a class of the transients.
func (m *meter) add(c class, bytes int64) {
	m.curC[c] += bytes
	if c == classActivations {
		m.cur.Activations += bytes
		return
	}
	m.cur.Transient += bytes
}

// transients is Memory.Transient at the peak by class.
func (m *meter) transients() Transients {
	b := &m.peakC
	return Transients{Recomputed: b[classRecomputed], ActivationGradients: b[classActGrads], Weights: b[classWeights],
		Output: b[classOutput], Other: b[classOther]}
}

// hold meters x, elems of size bytes each, in class c; x already metered
// moves to c.
func (m *meter) hold(c class, size int, xs ...[]float32) {
	for _, x := range xs {
		if len(x) > 0 {
			m.holdKey(&x[0], c, int64(len(x))*int64(size))
		}
	}
	m.check()
}

func (m *meter) holdKey(k any, c class, bytes int64) {
	if m.live == nil {
		m.live = map[any]metered{}
	}
	if old, ok := m.live[k]; ok {
		m.add(old.c, -old.bytes)
	}
	m.live[k] = metered{c, bytes}
	m.add(c, bytes)
}

// drop stops metering x, which is dead.
func (m *meter) drop(xs ...[]float32) {
	for _, x := range xs {
		if len(x) > 0 {
			m.dropKey(&x[0])
		}
	}
}

func (m *meter) dropKey(k any) {
	if old, ok := m.live[k]; ok {
		m.add(old.c, -old.bytes)
		delete(m.live, k)
	}
}

// device is one virtual chip.
type device struct {
	tc    *TrainConfig
	c     Config
	id    int
	coord mesh.Coord
	ep    *fabric.Endpoint
	first bool // holds the embedding: pipeline stage 0
	last  bool // holds the head: the last pipeline stage
	// pipe lists the devices of this one's pipeline, by stage; inbox
	// holds, per pipeline peer, the messages that came ahead of the one
	// an op waits for.
	pipe  []int
	inbox map[int]*inbox

	tensorG, contextG, fsdpG, gradG collective.Group
	// expertG is the expert-parallel group; denseG shards everything but
	// the routed experts (fsdp × context × expert, MaxText's embed rule),
	// fsdpG the routed experts (fsdp × context, embed_moe); gradG sums
	// the gradients over the replicas (data).
	expertG, denseG collective.Group
	// moeGroup is, per layer of tmpl, the param group of its routed
	// experts, or -1 for a dense layer.
	moeGroup []int

	tmpl    *Params[float32] // shapes of this stage's tensor-parallel params
	layers  []int            // the model's index of each of tmpl's layers
	flat    [][]float32      // param groups (0: ends, 1…L: layers, then the MoE layers' experts): full, or this device's FSDP shard
	realLen []int
	fullLen []int // padded to a multiple of the group's shards
	grad    [][]float32
	gradAll []float32 // every group's gradients end to end, for the all-reduce over the replicas
	m, v    [][]float32
	adamT   int
	// spare holds, by length, the full-size buffers not in use during a
	// step: gathered weights between release and the next gather, FSDP
	// gradient buffers between scatterGrad and the next gradBuf, the
	// model code's temporaries and the activations the backward pass is
	// done with (mat, recycle). A layer reuses the previous layer's
	// instead of faulting in fresh pages.
	spare map[int][][]float32

	mem meter
	// mode is the class mat meters the model code's matrices in: a
	// layer's forward temporaries, its rerun for the backward pass, or the
	// backward's activation gradients; elem is the bytes of the compute
	// dtype a TPU holds them in (2 with BF16Compute, else 4).
	mode  class
	elem  int
	busy  float64
	loss  float64
	trace []fabric.Span
}

// templates holds the tensor-parallel pieces of the model the devices
// start from, one per pipeline stage, tensor rank and expert rank: the
// devices that differ only in their data, fsdp or context coordinates
// (the replicas and the FSDP shards of one piece) share it.
type templates struct {
	full   *Params[float32]
	pieces map[[3]int]*Params[float32]
}

func newTemplates(full *Params[float32]) *templates {
	return &templates{full: full, pieces: map[[3]int]*Params[float32]{}}
}

// of returns the piece a device at coord starts from, read only.
func (ts *templates) of(tc *TrainConfig, coord mesh.Coord) *Params[float32] {
	m := tc.Mesh
	key := [3]int{coord[mesh.Pipeline], coord[mesh.Tensor], coord[mesh.Expert]}
	if p, ok := ts.pieces[key]; ok {
		return p
	}
	p := shard(ts.full, tc.Model, key[1], m.Size(mesh.Tensor), key[2], m.Size(mesh.Expert), key[0], m.Size(mesh.Pipeline), tc.Chunks, tc.headAfter())
	ts.pieces[key] = p
	return p
}

// hollow drops a template's values, keeping its shapes: every tensor
// becomes a view of one zeroed buffer as long as the longest. Once the
// devices hold their shards, the shapes are all that is read of the full
// model and of the templates (bind, and shard for the devices process 0
// rebuilds at the end); each is as large as the model, and they stayed
// allocated for the whole run. Nothing writes a template.
func hollow(p *Params[float32]) {
	n := 0
	for _, t := range p.Tensors() {
		n = max(n, len(t))
	}
	zero := make([]float32, n)
	view := func(xs ...*[]float32) {
		for _, x := range xs {
			*x = zero[:len(*x):len(*x)]
		}
	}
	view(&p.Emb.D, &p.Pos.D, &p.NF, &p.Out.D)
	for i := range p.Layers {
		l := &p.Layers[i]
		view(&l.N1, &l.N2, &l.Wq.D, &l.Wk.D, &l.Wv.D, &l.Wo.D, &l.Wg.D, &l.Wu.D, &l.Wd.D, &l.Wr.D)
		for j := range l.Experts {
			e := &l.Experts[j]
			view(&e.Wg.D, &e.Wu.D, &e.Wd.D)
		}
	}
}

func newDevice(tc *TrainConfig, id int, ep *fabric.Endpoint, ts *templates) *device {
	m := tc.Mesh
	d := &device{tc: tc, c: tc.Model, id: id, coord: m.Coord(id), ep: ep}
	p := m.Size(mesh.Pipeline)
	si := d.coord[mesh.Pipeline]
	d.first, d.last = si == 0, si == p-1
	for s := range p {
		c := d.coord
		c[mesh.Pipeline] = s
		peer, _ := m.Device(c)
		d.pipe = append(d.pipe, peer)
	}
	d.inbox = inboxes(tc.sched, si, d.pipe)
	d.tensorG = fabric.Group(m, id, mesh.Tensor)
	d.contextG = fabric.Group(m, id, mesh.Context)
	// MaxText shards every weight's embed dimension over fsdp and
	// context (cost's weightShards), so the context axis holds no
	// replicas to all-reduce over: its chips' gradients are summed by the
	// reduce-scatter
	weights := []mesh.Axis{mesh.FSDP}
	if m.Size(mesh.Context) > 1 {
		weights = append(weights, mesh.Context)
	}
	d.fsdpG = fabric.Group(m, id, weights...)
	d.gradG = fabric.Group(m, id, mesh.Data)
	d.expertG = fabric.Group(m, id, mesh.Expert)
	d.denseG = d.fsdpG
	if d.expertG.Size() > 1 {
		d.denseG = fabric.Group(m, id, append(weights, mesh.Expert)...)
	}
	sh := ts.of(tc, d.coord)
	d.tmpl = sh
	d.layers = stageLayers(tc.Model.Layers, si, p, tc.Chunks)
	d.keepShards(sh)
	d.elem, d.mode = 4, classOther
	if tc.BF16Compute {
		d.elem = 2
	}
	return d
}

// keepShards keeps this device's shard of each FSDP group of sh (the
// group's tensors end to end, zero-padded to a multiple of the shard
// count), with room for its gradient and Adam's two moments, and meters
// them.
func (d *device) keepShards(sh *Params[float32]) {
	for gi, tensors := range d.groupsOf(sh) {
		// the group's tensors end to end, zero-padded to a multiple of
		// the shard count: this device keeps [lo, hi) of it
		n := 0
		for _, x := range tensors {
			n += len(x)
		}
		g := d.shardOf(gi)
		f, fi := g.Size(), g.Index(d.id)
		padded := (n + f - 1) / f * f
		d.realLen = append(d.realLen, n)
		d.fullLen = append(d.fullLen, padded)
		lo, hi := fi*padded/f, (fi+1)*padded/f
		mine, off := make([]float32, hi-lo), 0
		for _, x := range tensors {
			if a, b := max(lo, off), min(hi, off+len(x)); a < b {
				copy(mine[a-lo:], x[a-off:b-off])
			}
			off += len(x)
		}
		d.flat = append(d.flat, mine)
	}
	for _, x := range d.flat {
		d.grad = append(d.grad, make([]float32, len(x)))
		d.m = append(d.m, make([]float32, len(x)))
		d.v = append(d.v, make([]float32, len(x)))
	}
	var n int64
	for _, x := range d.flat {
		n += int64(len(x))
	}
	// fp32 weights (the master copy: MaxText casts a bf16 copy at each
	// use, layers/linears.py, metered where gather makes it), gradients
	// and Adam's two moments
	d.mem.change(func(m *Memory) { m.Weights, m.Gradients, m.Optimizer = 4*n, 4*n, 8*n })
}

// groupsOf splits params into the FSDP groups: the ends, then each layer
// but its routed experts, then each MoE layer's routed experts; it sets
// moeGroup.
func (d *device) groupsOf(p *Params[float32]) [][][]float32 {
	var ends [][]float32
	for _, t := range [][]float32{p.Emb.D, p.Pos.D, p.NF, p.Out.D} {
		if len(t) > 0 {
			ends = append(ends, t)
		}
	}
	out := [][][]float32{ends}
	for i := range p.Layers {
		out = append(out, p.Layers[i].tensors())
	}
	d.moeGroup = make([]int, len(p.Layers))
	for i := range p.Layers {
		d.moeGroup[i] = -1
		if p.Layers[i].moe() {
			d.moeGroup[i] = len(out)
			out = append(out, p.Layers[i].expertTensors())
		}
	}
	return out
}

// shardOf is the group param group gi is sharded over: fsdp × context
// for routed experts, fsdp × context × expert for the rest.
func (d *device) shardOf(gi int) collective.Group {
	if gi > len(d.moeGroup) {
		return d.fsdpG
	}
	return d.denseG
}

// bind builds Params whose tensors are views into full (unsharded) group
// buffers, shaped like the template: the ends from groups[0] and, when
// given, the layers from the rest.
func (d *device) bind(groups [][]float32) *Params[float32] {
	t := d.tmpl
	out := &Params[float32]{}
	take := func(buf *[]float32, n int) []float32 {
		x := (*buf)[:n:n]
		*buf = (*buf)[n:]
		return x
	}
	ends := groups[0]
	if len(t.Emb.D) > 0 {
		out.Emb = Mat[float32]{R: t.Emb.R, C: t.Emb.C, D: take(&ends, len(t.Emb.D))}
		out.Pos = Mat[float32]{R: t.Pos.R, C: t.Pos.C, D: take(&ends, len(t.Pos.D))}
	}
	if len(t.NF) > 0 {
		out.NF = take(&ends, len(t.NF))
	}
	if len(t.Out.D) > 0 {
		out.Out = Mat[float32]{R: t.Out.R, C: t.Out.C, D: take(&ends, len(t.Out.D))}
	}
	if len(groups) > 1 {
		for i, l := range t.Layers {
			var experts []float32
			if gi := d.moeGroup[i]; gi >= 0 {
				experts = groups[gi]
			}
			out.Layers = append(out.Layers, bindLayer(l, groups[1+i], experts))
		}
	}
	return out
}

// bindLayer builds a layer shaped like l whose tensors are views into buf
// (its group) and, for an MoE layer, experts (its routed experts' group).
func bindLayer(l Layer[float32], buf, experts []float32) Layer[float32] {
	take := func(b *[]float32, n int) []float32 {
		x := (*b)[:n:n]
		*b = (*b)[n:]
		return x
	}
	mat := func(b *[]float32, m Mat[float32]) Mat[float32] {
		return Mat[float32]{R: m.R, C: m.C, D: take(b, len(m.D))}
	}
	out := Layer[float32]{N1: take(&buf, len(l.N1)), Wq: mat(&buf, l.Wq), Wk: mat(&buf, l.Wk), Wv: mat(&buf, l.Wv), Wo: mat(&buf, l.Wo),
		N2: take(&buf, len(l.N2))}
	if !l.moe() {
		out.Wg, out.Wu, out.Wd = mat(&buf, l.Wg), mat(&buf, l.Wu), mat(&buf, l.Wd)
		return out
	}
	out.Wr = mat(&buf, l.Wr)
	for _, e := range l.Experts {
		out.Experts = append(out.Experts, Expert[float32]{Wg: mat(&experts, e.Wg), Wu: mat(&experts, e.Wu), Wd: mat(&experts, e.Wd)})
	}
	return out
}

// colls for the model code
func (d *device) gemm() kernel.GEMM                    { return d.tc.gemm() }
func (d *device) tensorAllReduce(x []float32)          { d.ep.AllReduce(d.tensorG, x) }
func (d *device) expertAllToAll(x []float32) []float32 { return d.ep.AllToAll(d.expertG, x) }

// contextAllGather gathers x over the context axis: x itself without one
// (no copy, as a TPU makes none). The gathered keys and values are a
// forward temporary, or in the backward pass a recomputed activation (the
// gather redone for it).
func (d *device) contextAllGather(x []float32) []float32 {
	if d.contextG.Size() == 1 {
		return x
	}
	all := d.ep.AllGather(d.contextG, x)
	c := classOther
	if d.mode == classActGrads {
		c = classRecomputed
	}
	d.mem.hold(c, d.elem, all)
	return all
}

// contextReduceScatter sums x over the context axis and returns this
// rank's part (x itself without one), metered as mat meters.
func (d *device) contextReduceScatter(x []float32) []float32 {
	if d.contextG.Size() == 1 {
		return x
	}
	part := d.ep.ReduceScatter(d.contextG, x)
	d.mem.hold(d.mode, d.elem, part)
	return part
}

// mat lends the model code a zeroed r×c matrix from the step's spare
// buffers, metered in the device's mode (colls).
func (d *device) mat(r, c int) Mat[float32] {
	buf := d.take(r * c)
	clear(buf)
	d.mem.hold(d.mode, d.elem, buf)
	return Mat[float32]{R: r, C: c, D: buf}
}

// mat32 is mat metered at 4 bytes an element (colls).
func (d *device) mat32(r, c int) Mat[float32] {
	m := d.mat(r, c)
	d.mem.hold(d.mode, 4, m.D)
	return m
}

// recycle keeps matrices the model code is done with for mat (colls).
func (d *device) recycle(ms ...Mat[float32]) {
	for _, m := range ms {
		if len(m.D) > 0 {
			d.mem.drop(m.D)
			d.give(m.D)
		}
	}
}

// holdActs meters what layer's forward keeps for the backward pass in
// class c: its matrices in the compute dtype, the norms' scales and
// FlashAttention's log-sum-exp in fp32 (statistics MaxText computes in
// fp32: layers/normalizations.py; the splash kernel's residual); the
// layer's input x only with its other tensors, when c holds activations.
func (d *device) holdActs(a *acts[float32], c class) {
	ms := []Mat[float32]{a.h1, a.q, a.k, a.v, a.p, a.attn, a.x2, a.h2, a.g, a.u, a.a}
	if c == classActivations {
		ms = append(ms, a.x)
	}
	for _, m := range ms {
		d.mem.hold(c, d.elem, m.D)
	}
	d.mem.hold(c, 4, a.rstd1, a.rstd2, a.lse)
	if m := a.moe; m != nil {
		for _, x := range []Mat[float32]{m.logits, m.x, m.g, m.u, m.a, m.back} {
			d.mem.hold(c, d.elem, x.D)
		}
		d.mem.hold(c, d.elem, m.gate)
		for _, x := range [][]int{m.idx, m.pos} { // int32 on a TPU
			if len(x) > 0 {
				d.mem.holdKey(&x[0], c, 4*int64(len(x)))
			}
		}
		d.mem.check()
	}
}

// dropActs stops metering what a layer kept for its backward pass, its
// input x but with its other tensors, once that pass has run.
func (d *device) dropActs(a *acts[float32]) {
	for _, m := range []Mat[float32]{a.h1, a.q, a.k, a.v, a.p, a.attn, a.x2, a.h2, a.g, a.u, a.a} {
		d.mem.drop(m.D)
	}
	d.mem.drop(a.rstd1, a.rstd2, a.lse)
	if m := a.moe; m != nil {
		for _, x := range []Mat[float32]{m.logits, m.x, m.g, m.u, m.a, m.back} {
			d.mem.drop(x.D)
		}
		d.mem.drop(m.gate)
		for _, x := range [][]int{m.idx, m.pos} {
			if len(x) > 0 {
				d.mem.dropKey(&x[0])
			}
		}
	}
}

// gather returns group gi's full buffer: an FSDP all-gather, or the
// stored buffer itself without FSDP.
//
// With BF16Compute the result is a working copy rounded to bfloat16: the
// passes compute with it while Adam updates the fp32 master weights.
func (d *device) gather(gi int) []float32 {
	g := d.shardOf(gi)
	if g.Size() == 1 {
		if !d.tc.BF16Compute {
			return d.flat[gi]
		}
		buf := d.take(len(d.flat[gi]))
		copy(buf, d.flat[gi])
		d.mem.hold(classWeights, 2, buf) // the bf16 copy
		return roundBF16(buf)
	}
	full := d.ep.AllGatherInto(g, d.flat[gi], d.take(d.fullLen[gi]))
	d.mem.hold(classWeights, d.elem, full) // gathered in the compute dtype
	if d.tc.BF16Compute {
		roundBF16(full)
	}
	return full
}

// roundBF16 rounds x in place to the nearest bfloat16 (ties to even),
// keeping float32 storage.
func roundBF16(x []float32) []float32 {
	for i, v := range x {
		b := math.Float32bits(v)
		if b&0x7f800000 == 0x7f800000 { // Inf and NaN stay as they are
			continue
		}
		b += 0x7fff + (b>>16)&1
		x[i] = math.Float32frombits(b &^ 0xffff)
	}
	return x
}

// gatherHead is gather(0) for the output layer's backward. Without FSDP
// the emulator's bf16 copy is of the whole ends group, but the head reads
// only the final norm and the output layer (the embedding too when tied),
// the part a TPU casts to bf16 for it: that part is metered.
func (d *device) gatherHead() []float32 {
	ends := d.gather(0)
	if d.shardOf(0).Size() == 1 && d.tc.BF16Compute {
		d.mem.drop(ends)
		d.mem.hold(classWeights, 2, d.headPart(ends))
	}
	return ends
}

// headPart is the part of the ends group the output layer reads: all of
// it but an untied model's embedding and positions.
func (d *device) headPart(ends []float32) []float32 {
	if t := d.tmpl; !d.c.Tied && len(t.Out.D) > 0 {
		return ends[len(t.Emb.D)+len(t.Pos.D):]
	}
	return ends
}

// release is done with gather's buffer.
func (d *device) release(gi int, buf []float32) {
	switch {
	case d.shardOf(gi).Size() == 1 && !d.tc.BF16Compute:
		return // the shard itself
	}
	d.mem.drop(buf)
	if gi == 0 {
		d.mem.drop(d.headPart(buf))
	}
	d.give(buf)
}

// take returns a spare buffer of n floats, or a new one; its contents
// are whatever its last use left.
func (d *device) take(n int) []float32 {
	if free := d.spare[n]; len(free) > 0 {
		buf := free[len(free)-1]
		d.spare[n] = free[:len(free)-1]
		return buf
	}
	return make([]float32, n)
}

// give keeps buf, which nothing reads or writes any more, for take.
func (d *device) give(buf []float32) {
	if d.spare == nil {
		d.spare = map[int][][]float32{}
	}
	d.spare[len(buf)] = append(d.spare[len(buf)], buf)
}

// gradBuf is where group gi's gradients accumulate during a micro-batch:
// the accumulator itself without FSDP, else a full-size scratch buffer
// that is reduce-scattered afterwards.
func (d *device) gradBuf(gi int) []float32 {
	if d.shardOf(gi).Size() == 1 {
		return d.grad[gi]
	}
	buf := d.take(d.fullLen[gi])
	clear(buf)
	// the gradient of the compute-dtype weights, reduce-scattered in that
	// dtype before it joins the fp32 accumulator
	d.mem.hold(classWeights, d.elem, buf)
	return buf
}

func (d *device) scatterGrad(gi int, buf []float32) {
	g := d.shardOf(gi)
	if g.Size() == 1 {
		return
	}
	shard := d.ep.ReduceScatter(g, buf)
	kernel.Add(d.grad[gi], shard)
	d.mem.drop(buf)
	d.give(buf)
}

// compute advances the simulated clock by flops of work.
func (d *device) compute(name string, flops, rate float64) {
	if rate <= 0 {
		return
	}
	s := flops / rate
	start := d.ep.Clock()
	d.ep.Advance(s)
	d.busy += s
	if d.tc.Trace {
		d.trace = append(d.trace, fabric.Span{Device: d.id, Name: name, Start: start, End: start + s})
	}
}

// layerFLOPs is one block's forward matmul FLOPs for mb's n local tokens
// attending over seq keys (backward is twice this).
func (d *device) layerFLOPs(l *Layer[float32], mb micro) float64 {
	n := mb.n()
	w := l.Wq.R*l.Wq.C + l.Wk.R*l.Wk.C + l.Wv.R*l.Wv.C + l.Wo.R*l.Wo.C + l.Wg.R*l.Wg.C + l.Wu.R*l.Wu.C + l.Wd.R*l.Wd.C
	f := 2*float64(n)*float64(w) + 4*float64(n)*float64(l.Wq.C)*float64(d.c.Seq)
	if l.moe() {
		f += d.c.moeFLOPs(l, n, mb.s, d.expertG.Size())
	}
	return f
}

// bindEnds binds the ends group (embeddings, final norm, output) alone.
func (d *device) bindEnds(ends []float32) *Params[float32] { return d.bind([][]float32{ends}) }
