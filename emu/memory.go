package emu

import (
	"math"

	"shardlab/mesh"
	"shardlab/schedule"
)

// Footprint is a run's memory in this process, estimated from its tensor
// shapes before anything is allocated (EstimateMemory). It is the
// emulator's own count, kept apart from package cost's model of a TPU:
// the emulator holds things a TPU does not (the full initial model and
// the shard templates while it builds the devices, float32 copies where a
// TPU would hold bfloat16). Byte counts saturate at math.MaxInt64.
type Footprint struct {
	// Devices is each local device's peak, in the components the run's own
	// meter counts (DeviceStats.Memory), so the two can be compared.
	Devices []Memory
	// Static is what stays allocated from the start to the end: every
	// local device's parameters, gradients and Adam moments, a step's
	// batch, the per-step results and the trace.
	Static int64
	// Start is what building the devices adds: the full initial model and
	// the shard templates the devices copy their shards from (afterwards
	// only their shapes are kept).
	Start int64
	// Step is what a training step adds at its peak, every local device
	// at once: activations, gathered weights, gradient buffers, the
	// temporaries the passes and collectives allocate.
	Step int64
	// Checkpoint is what writing a checkpoint (or, when resuming, reading
	// one) adds; End is what the end of the run adds: the final snapshot,
	// the reassembled model, and on process 0 of several the other
	// processes' shards.
	Checkpoint, End int64
	// Process is Static plus the largest of the others: the estimated peak.
	Process int64
}

// sat converts a float64 byte count to int64, saturating.
func sat(x float64) int64 {
	if x >= math.MaxInt64 || math.IsNaN(x) {
		return math.MaxInt64
	}
	return int64(x)
}

// EstimateMemory estimates the memory Train(tc) will use in this process
// (its local devices when tc.Remote is set) without allocating it, so a
// caller can refuse a run that will not fit. The arithmetic is in float64,
// so absurd shapes give huge numbers, not overflows.
func EstimateMemory(tc TrainConfig) (Footprint, error) {
	tc.setDefaults()
	if err := tc.validate(); err != nil {
		return Footprint{}, err
	}
	sched, err := schedule.NewChunked(tc.Schedule, tc.Mesh.Size(mesh.Pipeline), tc.MicroBatches, tc.Chunks)
	if err != nil {
		return Footprint{}, err
	}
	sh := shapesOf(&tc)
	var fp Footprint
	var static, start, step, snap, rebuilt float64
	// the devices of one pipeline stage, tensor rank and expert rank
	// share their template (templates), here and when process 0 rebuilds
	// every device at the end
	localPieces, rebuiltPieces := map[[3]int]bool{}, map[[3]int]bool{}
	piece := func(seen map[[3]int]bool, c mesh.Coord, dm deviceMemory) float64 {
		key := [3]int{c[mesh.Pipeline], c[mesh.Tensor], c[mesh.Expert]}
		if seen[key] {
			return 0
		}
		seen[key] = true
		return 4 * dm.tmpl
	}
	for id := range tc.Mesh.Chips() {
		coord := tc.Mesh.Coord(id)
		si := coord[mesh.Pipeline]
		dm := sh.device(&tc, si)
		if tc.Remote != nil && tc.Remote.Rank() == 0 {
			// process 0 rebuilds every device at the end, its own too,
			// around the shards the processes ship it (gatherDevices)
			rebuilt += dm.state + piece(rebuiltPieces, coord, dm) + 2*4*dm.n
		}
		if local := tc.Remote == nil || tc.Remote.RankOf(id) == tc.Remote.Rank(); !local {
			continue
		}
		mem, activations, trans := sh.meter(&tc, dm, sched.Ops[si])
		fp.Devices = append(fp.Devices, mem)
		static += dm.state
		start += piece(localPieces, coord, dm)
		step += activations + trans + sh.temps(&tc, dm)
		snap += 12 * dm.n
	}
	static = sh.runStatic(&tc, static, len(fp.Devices))
	ckpt := 0.0
	if tc.CheckpointEvery > 0 && tc.Hooks.Checkpoint != nil {
		ckpt = snap // a snapshot, streamed out tensor by tensor
	}
	if tc.Resume != nil || tc.LoadCheckpoint != nil {
		ckpt = max(ckpt, snap) // decoded as it is read, tensor by tensor (ReadCheckpointOf)
	}
	end := snap
	if tc.Remote == nil || tc.Remote.Rank() == 0 {
		end += 2*4*sh.full + rebuilt // the reassembled model and its pieces
	}
	start += 4 * sh.full
	fp.Static, fp.Start, fp.Step, fp.Checkpoint, fp.End = sat(static), sat(start), sat(step), sat(ckpt), sat(end)
	fp.Process = sat(static + max(start, step, ckpt, end))
	return fp, nil
}

// shapes are a run's sizes, as float64 element counts: the model's
// widths on one tensor rank, a device's share of the layers, the tokens
// of one micro-batch on one device and what a layer's and the head's
// forward keep for the backward.
type shapes struct {
	d, v, seq, hd, qd, kvd, ft, qh float64
	fs, cp                         float64 // the routed experts' shards, fsdp × context; context
	fd                             float64 // shards of everything but the routed experts: fsdp × context × expert
	layer                          float64 // one dense block on one tensor rank
	perStage                       float64 // layers per pipeline device
	b, s, ntok                     float64
	acts, headActs                 float64 // bytes
	full                           float64 // the whole model
	// a mixture-of-experts block: its group but the routed experts (with
	// the router), its routed experts' group (this rank's experts), the
	// bytes its forward keeps, and the elements of one dispatch buffer
	moeLayer, experts, moeActs, buf, ecf float64
}

func shapesOf(tc *TrainConfig) shapes {
	c, m := tc.Model, tc.Mesh
	f64 := func(x int) float64 { return float64(x) }
	t, ep := m.Size(mesh.Tensor), m.Size(mesh.Expert)
	sh := shapes{d: f64(c.DModel), v: f64(c.Vocab), seq: f64(c.Seq), hd: f64(c.headDim()), cp: f64(m.Size(mesh.Context))}
	// every weight's embed dimension is sharded over fsdp and context, and
	// but the routed experts' over expert (newDevice's groups)
	sh.fs = f64(m.Size(mesh.FSDP)) * sh.cp
	sh.fd = sh.fs * f64(ep)
	d, v, hd := sh.d, sh.v, sh.hd
	sh.qd, sh.kvd, sh.ft = f64(c.Heads/t)*hd, f64(c.KVHeads/t)*hd, f64(c.DFF/t)
	sh.qh = f64(c.Heads / t)
	attn := 2*d + d*sh.qd + 2*d*sh.kvd + sh.qd*d
	sh.layer = attn + 2*d*sh.ft + sh.ft*d
	sh.perStage = f64(c.Layers / m.Size(mesh.Pipeline))
	sh.b = f64(tc.GlobalBatch) / (f64(m.Size(mesh.Data)) * f64(m.Size(mesh.FSDP)) * f64(ep)) / f64(tc.MicroBatches)
	sh.s = sh.seq / sh.cp
	ntok := sh.b * sh.s
	sh.ntok = ntok
	scores := sh.b * sh.qh * sh.s * sh.seq // P
	if c.FlashAttention {
		scores = sh.b * sh.qh * sh.s // the log-sum-exp
	}
	common := 2*ntok*d + ntok*sh.qd + 2*ntok*sh.kvd + scores + ntok*sh.qd + 2*ntok*d + 2*ntok
	sh.acts = 4 * (common + 3*ntok*sh.ft)
	sh.headActs = 4 * (2*ntok*d + ntok + 2*ntok*v)
	mlp := 3 * d * f64(c.DFF)
	if c.Experts > 0 {
		e, k, fe := f64(c.Experts), f64(c.ExpertsPerToken), f64(c.expertFF())
		rows := e * sh.b * f64(c.capacity(int(sh.s)))
		sh.ecf = rows * fe / f64(t)
		sh.buf = rows * d
		sh.moeLayer = attn + d*e
		sh.experts = e / f64(ep) * 3 * d * fe / f64(t)
		// router scores, gates, indices and slots; the dispatched rows, the
		// SwiGLU's g, u and a; the returned outputs
		sh.moeActs = 4 * (common + ntok*e + 3*ntok*k + 2*sh.buf + 3*sh.ecf)
		mlp = d*e + e*3*d*fe
	}
	sh.full = v*d + sh.seq*d + d
	for li := range c.Layers {
		sh.full += attn*f64(t) - 2*d*(f64(t)-1) + 3*d*f64(c.DFF) // the whole block, unsplit
		if c.moeLayer(li) {
			sh.full += mlp - 3*d*f64(c.DFF)
		}
	}
	if !c.Tied {
		sh.full += d * v
	}
	return sh
}

// deviceMemory is one pipeline stage's device: what it holds of the ends
// and the largest layer's groups padded for their shards (as gathered:
// counted only where the group is sharded), its shard n, its own state's
// bytes, and the activations of its largest chunk of layers.
type deviceMemory struct {
	last                       bool
	fullEnds, fullLayer        float64
	gathered                   float64
	n, state, actsChunk, moeOn float64
	tmpl                       float64 // elements of its template, which devices share
}

func (sh shapes) device(tc *TrainConfig, si int) deviceMemory {
	c := tc.Model
	d, v := sh.d, sh.v
	padded := func(n, f float64) float64 { return math.Ceil(n/f) * f }
	last := si == tc.Mesh.Size(mesh.Pipeline)-1
	// the stages that hold the embeddings and the output layer: every one
	// with the head after the pipeline (shard)
	first, head := si == 0 || tc.headAfter(), last || tc.headAfter()
	ends := 0.0
	if first || head && c.Tied {
		ends += v*d + sh.seq*d
	}
	if head {
		ends += d
		if !c.Tied {
			ends += d * v
		}
	}
	dm := deviceMemory{last: last, fullEnds: padded(ends, sh.fd)}
	shards := dm.fullEnds / sh.fd
	tmpl := ends
	p := tc.Mesh.Size(mesh.Pipeline)
	layers := stageLayers(c.Layers, si, p, tc.Chunks)
	per := len(layers) / tc.Chunks
	chunk := 0.0
	for i, li := range layers {
		group, experts, acts := sh.layer, 0.0, sh.acts
		if c.moeLayer(li) {
			group, experts, acts = sh.moeLayer, sh.experts, sh.moeActs
			dm.moeOn = 1
		}
		full, fullExperts := padded(group, sh.fd), padded(experts, sh.fs)
		shards += full/sh.fd + fullExperts/sh.fs
		tmpl += group + experts
		dm.fullLayer = max(dm.fullLayer, full+fullExperts)
		g := 0.0
		if sh.fd > 1 {
			g += full
		}
		if sh.fs > 1 {
			g += fullExperts
		}
		dm.gathered = max(dm.gathered, g)
		chunk += acts
		if (i+1)%per == 0 {
			dm.actsChunk = max(dm.actsChunk, chunk)
			chunk = 0
		}
	}
	dm.n = shards // this device's shard of its stage
	dm.tmpl = tmpl
	// the device's own state: parameters, gradients, moments, and the
	// message buffers its queues keep for reuse (the gradient
	// all-reduce's, a layer's and the ends' gathers and reductions, the
	// experts' all-to-alls)
	dm.state = 16*dm.n + 4*(2*dm.n+dm.fullLayer+dm.fullEnds+dm.moeOn*sh.buf)
	return dm
}

// meter is the device's peak in the run's meter's components, each at its
// largest and at the dtype a TPU holds it in (as the meter counts), with
// the activations' and transients' bytes as the emulator stores them
// (float32).
func (sh shapes) meter(tc *TrainConfig, dm deviceMemory, ops []schedule.Op) (mem Memory, activations, trans float64) {
	most, mostHeads := inFlight(ops, tc.Chunks)
	e := 4.0 // the compute dtype's bytes
	if tc.BF16Compute {
		e = 2
	}
	mem.Weights, mem.Gradients, mem.Optimizer = sat(4*dm.n), sat(4*dm.n), sat(8*dm.n)
	layers := sh.perStage / float64(tc.Chunks) // in a chunk
	// the fp32 statistics of a layer: two norms' scales, FlashAttention's
	// log-sum-exp
	stats := 2 * sh.ntok
	if tc.Model.FlashAttention {
		stats += sh.b * sh.qh * sh.s
	}
	// a layer's kept tensors at the TPU's dtypes, from their float32 bytes
	atE := func(b float64) float64 { return b/4*e + (4-e)*stats }
	held, heldE := dm.actsChunk, atE(dm.actsChunk/layers)*layers
	rerun, rerunE := 0.0, 0.0
	if tc.Remat == RematFull {
		held, heldE = 4*layers*sh.ntok*sh.d, e*layers*sh.ntok*sh.d
		rerun, rerunE = dm.actsChunk/layers, atE(dm.actsChunk/layers)
	}
	activations = float64(most) * held
	mem.Activations = sat(float64(most) * heldE)
	// weights in use: gathered weights and their unreduced gradients, or
	// compute-dtype copies
	gathered := 2 * dm.gathered
	if sh.fd > 1 {
		gathered += 2 * dm.fullEnds
	}
	trans = 4*gathered + rerun
	inUse := e * gathered
	if tc.BF16Compute && sh.fd == 1 {
		inUse += 2 * (dm.fullLayer + dm.fullEnds)
	}
	// a layer's backward: its gradients (at most the output's, two of the
	// MLP's and the input's, or the attention core's: the query's, the
	// gathered keys' and values' and the scores'), with its recomputed
	// tensors and the keys and values gathered over context
	scores := 0.0
	if !tc.Model.FlashAttention {
		scores = sh.b * sh.qh * sh.s * sh.seq
	}
	kv := 2 * sh.cp * sh.ntok * sh.kvd
	grads := e * max(sh.ntok*(2*sh.d+2*sh.ft), sh.ntok*(sh.d+2*sh.qd)+kv+scores)
	if sh.cp > 1 {
		grads += e * kv
	}
	back := grads + rerunE
	headTrans, head, outs := sh.head(tc, dm, mostHeads, e)
	mem.Transient = sat(inUse + max(back, head) + outs)
	return mem, activations, trans + headTrans
}

// head is the output layer's part of a device's peak (meter): what it
// adds to the transients as the emulator stores them, its metered bytes,
// and what the last stage holds of the pipeline's output or its gradient
// across the layers' passes when the head runs after the pipeline
// (headAfter). The metered bytes are the final norm's input, output and
// scales, the logits and their softmax, their gradient (fp32) and the
// final norm's output gradient, for mostHeads micro-batches' tokens
// held (one's gradient) on the last stage, or for the device's share of
// its whole batch on every stage with the head after the pipeline
// (headShare), each stage with its own output layer (deviceMemory's
// ends).
func (sh shapes) head(tc *TrainConfig, dm deviceMemory, mostHeads int, e float64) (trans, head, outs float64) {
	if !tc.headAfter() {
		if !dm.last {
			return 0, 0, 0
		}
		n := float64(mostHeads)
		head = n*(e*2*sh.ntok*sh.d+4*sh.ntok+8*sh.ntok*sh.v) + 4*sh.ntok*sh.v + e*sh.ntok*sh.d
		return n * sh.headActs, head, 0
	}
	p, m := float64(tc.Mesh.Size(mesh.Pipeline)), float64(tc.MicroBatches)
	tok := math.Ceil(m*sh.b/p) * sh.s
	head = e*2*tok*sh.d + 4*tok + 8*tok*sh.v + 4*tok*sh.v + e*tok*sh.d
	trans = 4 * (3*tok*sh.d + tok + 3*tok*sh.v)
	if !dm.last {
		return trans, head, 0
	}
	return trans + 4*m*sh.ntok*sh.d, head, e * m * sh.ntok * sh.d
}

// inFlight is the most micro-batch chunks whose forward a device's ops
// have run and whose backward they have not, and the most of those
// through the head (the last chunk).
func inFlight(ops []schedule.Op, chunks int) (most, mostHeads int) {
	n, heads := 0, 0
	for _, op := range ops {
		step := 1
		if op.Pass == schedule.Backward {
			step = -1
		}
		n += step
		most = max(most, n)
		if op.Chunk == chunks-1 {
			heads += step
			mostHeads = max(mostHeads, heads)
		}
	}
	return most, mostHeads
}

// temps is beyond the meter: a layer's pass temporaries, the attention
// and head backward buffers, context-gathered K and V, the GEMM packing,
// float32 working copies of the bf16 weights, the gradients concatenated
// for the all-reduce and the collectives' message copies.
func (sh shapes) temps(tc *TrainConfig, dm deviceMemory) float64 {
	d, v, ntok, ft, qd := sh.d, sh.v, sh.ntok, sh.ft, sh.qd
	// GEMM packing as the 4×16 kernel packs (4-row strips of A, 512-column
	// panels of B); the 8×32 AVX-512 one pads up to 4 rows and 16 columns more
	kc := min(max(d, ft, qd, ntok, v), 256)
	pack := (max(ntok, d, ft)+4)*kc + min(max(d, ft, qd, v), 512)*kc
	temps := 4 * (8*ntok*d + 3*ntok*ft + 3*ntok*qd + 8*sh.cp*ntok*sh.kvd + 2*ntok*v + sh.s*sh.cp + pack)
	if !tc.Model.FlashAttention {
		temps += 4 * sh.b * sh.qh * sh.s * sh.seq // the scores' gradient, all at once
	}
	// an MoE layer's dispatch and return buffers and their gradients, the
	// reordered copies, the experts' SwiGLU gradients, the router's
	temps += 4 * dm.moeOn * (8*sh.buf + 3*sh.ecf + 2*ntok*float64(tc.Model.Experts))
	if tc.BF16Compute {
		temps += 4 * (dm.fullEnds + dm.fullLayer)
	}
	return temps + 4*(2*dm.n+dm.fullEnds+dm.fullLayer)
}

// runStatic adds to the devices' static memory what the run holds besides
// them from start to end: a step's batch, the per-step results and, when
// tracing, the spans of its local devices.
func (sh shapes) runStatic(tc *TrainConfig, static float64, devices int) float64 {
	steps := float64(tc.Steps)
	static += 8*float64(tc.GlobalBatch)*(sh.seq+1) + 48*steps
	if tc.Trace {
		// spans per device and step: compute and collectives for each
		// layer and micro-batch, the head, pipeline sends, the reduction
		static += 80 * steps * float64(devices) * (float64(tc.MicroBatches)*(15*sh.perStage+8*float64(tc.Chunks)) + 4)
	}
	return static
}
