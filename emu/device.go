package emu

import (
	"fmt"
	"math"

	"shardlab/collective"
	"shardlab/mesh"
	"shardlab/schedule"
)

// Memory is a device's bytes by component at its peak.
type Memory struct {
	Weights     int64 `json:"weights"`
	Gradients   int64 `json:"gradients"`
	Optimizer   int64 `json:"optimizer"`
	Activations int64 `json:"activations"`
	Transient   int64 `json:"transient"`
}

// Total is the sum.
func (m Memory) Total() int64 {
	return m.Weights + m.Gradients + m.Optimizer + m.Activations + m.Transient
}

// meter tracks current use and the breakdown at the peak.
type meter struct {
	cur, peak Memory
}

func (m *meter) change(f func(*Memory)) {
	f(&m.cur)
	if m.cur.Total() > m.peak.Total() {
		m.peak = m.cur
	}
}

// Span is a stretch of simulated time on one device's track.
type Span struct {
	Device int
	Name   string
	Start  float64 // seconds
	End    float64
}

// device is one virtual chip.
type device struct {
	tc    *TrainConfig
	c     Config
	id    int
	coord mesh.Coord
	ep    *Endpoint
	first bool
	last  bool
	prev  int
	next  int

	tensorG, contextG, fsdpG, gradG collective.Group

	tmpl    *Params[float32] // shapes of this stage's tensor-parallel params
	flat    [][]float32      // param groups (0: ends, 1+: layers): full, or this device's FSDP shard
	realLen []int
	fullLen []int // padded to a multiple of fsdp
	grad    [][]float32
	m, v    [][]float32
	adamT   int

	mem   meter
	busy  float64
	loss  float64
	trace []Span
}

func newDevice(tc *TrainConfig, id int, ep *Endpoint, full *Params[float32]) *device {
	m := tc.Mesh
	d := &device{tc: tc, c: tc.Model, id: id, coord: m.Coord(id), ep: ep}
	p, t, f := m.Size(mesh.Pipeline), m.Size(mesh.Tensor), m.Size(mesh.FSDP)
	si := d.coord[mesh.Pipeline]
	d.prev, d.next = neighbour(m, id, mesh.Pipeline, -1), neighbour(m, id, mesh.Pipeline, +1)
	d.first, d.last = d.prev < 0, d.next < 0
	d.tensorG = group(m, id, mesh.Tensor)
	d.contextG = group(m, id, mesh.Context)
	d.fsdpG = group(m, id, mesh.FSDP)
	d.gradG = group(m, id, mesh.Data, mesh.Context)
	sh := Shard(full, tc.Model, d.coord[mesh.Tensor], t, si, p)
	d.tmpl = sh
	fi := d.coord[mesh.FSDP]
	for _, tensors := range d.groupsOf(sh) {
		var buf []float32
		for _, x := range tensors {
			buf = append(buf, x...)
		}
		n := len(buf)
		padded := (n + f - 1) / f * f
		buf = append(buf, make([]float32, padded-n)...)
		d.realLen = append(d.realLen, n)
		d.fullLen = append(d.fullLen, padded)
		lo, hi := fi*padded/f, (fi+1)*padded/f
		d.flat = append(d.flat, append([]float32(nil), buf[lo:hi]...))
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
	w := 4 * n
	if tc.BF16Compute {
		w += 2 * n // the bf16 working copy beside the fp32 master
	}
	d.mem.change(func(m *Memory) { m.Weights, m.Gradients, m.Optimizer = w, 4*n, 8*n })
	return d
}

// groupsOf splits params into the FSDP groups: the ends, then each layer.
func (d *device) groupsOf(p *Params[float32]) [][][]float32 {
	var ends [][]float32
	for _, t := range [][]float32{p.Emb.D, p.Pos.D, p.NF, p.Out.D} {
		if len(t) > 0 {
			ends = append(ends, t)
		}
	}
	out := [][][]float32{ends}
	for i := range p.Layers {
		out = append(out, p.Layers[i].Tensors())
	}
	return out
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
			out.Layers = append(out.Layers, bindLayer(l, groups[1+i]))
		}
	}
	return out
}

func bindLayer(l Layer[float32], buf []float32) Layer[float32] {
	take := func(n int) []float32 {
		x := buf[:n:n]
		buf = buf[n:]
		return x
	}
	mat := func(m Mat[float32]) Mat[float32] { return Mat[float32]{R: m.R, C: m.C, D: take(len(m.D))} }
	return Layer[float32]{N1: take(len(l.N1)), Wq: mat(l.Wq), Wk: mat(l.Wk), Wv: mat(l.Wv), Wo: mat(l.Wo),
		N2: take(len(l.N2)), Wg: mat(l.Wg), Wu: mat(l.Wu), Wd: mat(l.Wd)}
}

// colls for the model code
func (d *device) tensorAllReduce(x []float32)            { d.ep.AllReduce(d.tensorG, x) }
func (d *device) contextAllGather(x []float32) []float32 { return d.ep.AllGather(d.contextG, x) }
func (d *device) contextReduceScatter(x []float32) []float32 {
	return d.ep.ReduceScatter(d.contextG, x)
}

// gather returns group gi's full buffer: an FSDP all-gather, or the
// stored buffer itself without FSDP.
//
// With BF16Compute the result is a working copy rounded to bfloat16: the
// passes compute with it while Adam updates the fp32 master weights.
func (d *device) gather(gi int) []float32 {
	if d.fsdpG.Size() == 1 {
		if !d.tc.BF16Compute {
			return d.flat[gi]
		}
		return roundBF16(append([]float32(nil), d.flat[gi]...))
	}
	full := d.ep.AllGather(d.fsdpG, d.flat[gi])
	d.mem.change(func(m *Memory) { m.Transient += 4 * int64(len(full)) })
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

func (d *device) release(buf []float32) {
	if d.fsdpG.Size() > 1 {
		d.mem.change(func(m *Memory) { m.Transient -= 4 * int64(len(buf)) })
	}
}

// gradBuf is where group gi's gradients accumulate during a micro-batch:
// the accumulator itself without FSDP, else a full-size scratch buffer
// that is reduce-scattered afterwards.
func (d *device) gradBuf(gi int) []float32 {
	if d.fsdpG.Size() == 1 {
		return d.grad[gi]
	}
	d.mem.change(func(m *Memory) { m.Transient += 4 * int64(d.fullLen[gi]) })
	return make([]float32, d.fullLen[gi])
}

func (d *device) scatterGrad(gi int, buf []float32) {
	if d.fsdpG.Size() == 1 {
		return
	}
	shard := d.ep.ReduceScatter(d.fsdpG, buf)
	add(d.grad[gi], shard)
	d.mem.change(func(m *Memory) { m.Transient -= 4 * int64(len(buf)) })
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
		d.trace = append(d.trace, Span{Device: d.id, Name: name, Start: start, End: start + s})
	}
}

// layerFLOPs is one block's forward matmul FLOPs for n local tokens
// attending over seq keys (backward is twice this).
func (d *device) layerFLOPs(l *Layer[float32], n int) float64 {
	w := l.Wq.R*l.Wq.C + l.Wk.R*l.Wk.C + l.Wv.R*l.Wv.C + l.Wo.R*l.Wo.C + l.Wg.R*l.Wg.C + l.Wu.R*l.Wu.C + l.Wd.R*l.Wd.C
	return 2*float64(n)*float64(w) + 4*float64(n)*float64(l.Wq.C)*float64(d.c.Seq)
}

// step runs one training step on this device: the schedule's forward and
// backward passes over its micro-batches, the gradient all-reduce over
// data and context, and Adam on its shard.
func (d *device) step(step int, batch [][]int, rate float64) {
	tc := d.tc
	m := tc.Mesh
	p := m.Size(mesh.Pipeline)
	mbs := tc.MicroBatches
	sched, err := schedule.New(tc.Schedule, p, mbs)
	if err != nil {
		panic(err) // validated
	}
	ops := sched.Ops[d.coord[mesh.Pipeline]]
	df := m.Size(mesh.Data) * m.Size(mesh.FSDP)
	shardIdx := d.coord[mesh.Data]*m.Size(mesh.FSDP) + d.coord[mesh.FSDP]
	per := tc.GlobalBatch / df
	b := per / mbs
	cpn := m.Size(mesh.Context)
	s := d.c.Seq / cpn
	scale := 1 / float64(tc.GlobalBatch*d.c.Seq)
	micros := make([]micro, mbs)
	for k := range mbs {
		mb := micro{b: b, s: s, ci: d.coord[mesh.Context], c: cpn, scale: scale}
		for i := range b {
			row := batch[shardIdx*per+k*b+i]
			lo := mb.ci * s
			mb.tokens = append(mb.tokens, row[lo:lo+s]...)
			mb.targets = append(mb.targets, row[lo+1:lo+s+1]...)
		}
		micros[k] = mb
	}
	layers := len(d.tmpl.Layers)
	saved := make([][]*acts[float32], mbs)
	heads := make([]*headActs[float32], mbs)
	d.loss = 0
	clockRate := rate
	for _, op := range ops {
		mb := micros[op.MicroBatch]
		n := mb.n()
		if op.Pass == schedule.Forward {
			var x Mat[float32]
			// a single stage keeps its gathered ends from the embedding to
			// the head: one gather per pass, as FSDP does
			var ends []float32
			if d.first {
				ends = d.gather(0)
				x = embed(d.bindEnds(ends), mb)
				if !d.last {
					d.release(ends)
				}
			} else {
				x = Mat[float32]{R: n, C: d.c.DModel, D: d.ep.Recv(d.prev)}
			}
			saved[op.MicroBatch] = make([]*acts[float32], layers)
			for li := range layers {
				buf := d.gather(1 + li)
				l := bindLayer(d.tmpl.Layers[li], buf)
				var a *acts[float32]
				x, a = layerForward(d.c, &l, x, mb, colls[float32](d))
				d.release(buf)
				saved[op.MicroBatch][li] = a
				d.mem.change(func(m *Memory) { m.Activations += a.bytes(4) })
				d.compute(fmt.Sprintf("F%d layer %d", op.MicroBatch, li), d.layerFLOPs(&l, n), clockRate)
			}
			if d.last {
				if !d.first {
					ends = d.gather(0)
				}
				loss, ha := headForward(d.c, d.bindEnds(ends), x, mb)
				d.release(ends)
				d.loss += loss
				heads[op.MicroBatch] = ha
				d.mem.change(func(m *Memory) { m.Transient += ha.bytes(4) })
				if !tc.BlocksOnlyClock {
					d.compute(fmt.Sprintf("F%d head", op.MicroBatch), 2*float64(n)*float64(d.c.DModel*d.c.Vocab), clockRate)
				}
			} else {
				d.ep.Send(d.next, x.D)
			}
			continue
		}
		// backward
		var dx Mat[float32]
		var endsGrad []float32
		if d.first || d.last {
			endsGrad = d.gradBuf(0)
		}
		if d.last {
			ends := d.gather(0)
			pp := d.bindEnds(ends)
			gp := d.bindEnds(endsGrad)
			ha := heads[op.MicroBatch]
			dx = headBack(d.c, pp, gp, ha, mb)
			d.release(ends)
			d.mem.change(func(m *Memory) { m.Transient -= ha.bytes(4) })
			heads[op.MicroBatch] = nil
			if !tc.BlocksOnlyClock {
				d.compute(fmt.Sprintf("B%d head", op.MicroBatch), 4*float64(n)*float64(d.c.DModel*d.c.Vocab), clockRate)
			}
		} else {
			dx = Mat[float32]{R: n, C: d.c.DModel, D: d.ep.Recv(d.next)}
		}
		for li := layers - 1; li >= 0; li-- {
			buf := d.gather(1 + li)
			l := bindLayer(d.tmpl.Layers[li], buf)
			gbuf := d.gradBuf(1 + li)
			gl := bindLayer(d.tmpl.Layers[li], gbuf)
			a := saved[op.MicroBatch][li]
			dx = layerBackward(d.c, &l, &gl, a, dx, mb, colls[float32](d))
			d.release(buf)
			d.scatterGrad(1+li, gbuf)
			d.mem.change(func(m *Memory) { m.Activations -= a.bytes(4) })
			saved[op.MicroBatch][li] = nil
			d.compute(fmt.Sprintf("B%d layer %d", op.MicroBatch, li), 2*d.layerFLOPs(&l, n), clockRate)
		}
		if d.first {
			gp := d.bindEnds(endsGrad)
			embedBack(gp, mb, dx)
		} else {
			d.ep.Send(d.prev, dx.D)
		}
		if d.first || d.last {
			d.scatterGrad(0, endsGrad)
		}
	}
	// gradients summed over the replicas (data and context), then Adam
	n := 0
	for _, g := range d.grad {
		n += len(g)
	}
	all := make([]float32, 0, n)
	for _, g := range d.grad {
		all = append(all, g...)
	}
	d.ep.AllReduce(d.gradG, all)
	d.adamT++
	off := 0
	for gi := range d.flat {
		n := len(d.flat[gi])
		adam(d.flat[gi], all[off:off+n], d.m[gi], d.v[gi], d.tc.LR, d.adamT)
		clear(d.grad[gi])
		off += n
	}
}

// bindEnds binds the ends group (embeddings, final norm, output) alone.
func (d *device) bindEnds(ends []float32) *Params[float32] { return d.bind([][]float32{ends}) }
