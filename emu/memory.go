package emu

import (
	"math"

	"shardlab/mesh"
	"shardlab/schedule"
)

// Footprint is a run's memory in this process, estimated from its tensor
// shapes before anything is allocated (EstimateMemory). It is the
// emulator's own count, kept apart from package cost's model of a TPU:
// the emulator holds things a TPU does not (the full initial model, the
// shard templates, float32 copies where a TPU would hold bfloat16).
// Byte counts saturate at math.MaxInt64.
type Footprint struct {
	// Devices is each local device's peak, in the components the run's own
	// meter counts (DeviceStats.Memory), so the two can be compared.
	Devices []Memory
	// Static is what stays allocated from the start to the end: the full
	// initial model, every local device's shard template, parameters,
	// gradients and Adam moments, a step's batch, the per-step results and
	// the trace.
	Static int64
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
	c, m := tc.Model, tc.Mesh
	f64 := func(x int) float64 { return float64(x) }
	dp, fs, t, p, cp := f64(m.Size(mesh.Data)), m.Size(mesh.FSDP), f64(m.Size(mesh.Tensor)), m.Size(mesh.Pipeline), f64(m.Size(mesh.Context))
	d, v, seq, hd := f64(c.DModel), f64(c.Vocab), f64(c.Seq), f64(c.headDim())
	qd, kvd, ft := f64(c.Heads/int(t))*hd, f64(c.KVHeads/int(t))*hd, f64(c.DFF/int(t))
	qh := f64(c.Heads / int(t))
	layer := 2*d + d*qd + 2*d*kvd + qd*d + 2*d*ft + ft*d // one block on one tensor rank
	perStage := f64(c.Layers / p)
	padded := func(n float64) float64 { return math.Ceil(n/f64(fs)) * f64(fs) }
	// tokens of one micro-batch on one device
	b := f64(tc.GlobalBatch) / (dp * f64(fs)) / f64(tc.MicroBatches)
	s := seq / cp
	ntok := b * s
	acts := 4 * (2*ntok*d + ntok*qd + 2*ntok*kvd + b*qh*s*seq + ntok*qd + 2*ntok*d + 3*ntok*ft + 2*ntok)
	headActs := 4 * (2*ntok*d + ntok + 2*ntok*v)
	sched, err := schedule.NewChunked(tc.Schedule, p, tc.MicroBatches, tc.Chunks)
	if err != nil {
		return Footprint{}, err
	}

	var fp Footprint
	var static, step, snap, remote float64
	for id := range m.Chips() {
		local := tc.Remote == nil || tc.Remote.RankOf(id) == tc.Remote.Rank()
		si := m.Coord(id)[mesh.Pipeline]
		first, last := si == 0, si == p-1
		ends := 0.0
		if first || last && c.Tied {
			ends += v*d + seq*d
		}
		if last {
			ends += d
			if !c.Tied {
				ends += d * v
			}
		}
		fullEnds, fullLayer := padded(ends), padded(layer)
		n := (fullEnds + perStage*fullLayer) / f64(fs) // this device's shard of its stage
		tmpl := ends + perStage*layer
		// the device's own state: template, parameters, gradients, moments,
		// and the message buffers its queues keep for reuse (the gradient
		// all-reduce's, a layer's and the ends' gathers and reductions)
		state := 4*tmpl + 16*n + 4*(2*n+fullLayer+fullEnds)
		if !local {
			if tc.Remote != nil && tc.Remote.Rank() == 0 {
				// process 0 rebuilds it at the end around its shipped shards
				remote += state + 2*4*n
			}
			continue
		}
		// in-flight micro-batch chunks: forwards run whose backward has
		// not, and of them those through the head
		inFlight, most := 0, 0
		heads, mostHeads := 0, 0
		for _, op := range sched.Ops[si] {
			step := 1
			if op.Pass == schedule.Backward {
				step = -1
			}
			inFlight += step
			most = max(most, inFlight)
			if op.Chunk == tc.Chunks-1 {
				heads += step
				mostHeads = max(mostHeads, heads)
			}
		}
		// the meter's components, each at its largest
		var mem Memory
		w := 4 * n
		if tc.BF16Compute {
			w += 2 * n
		}
		mem.Weights, mem.Gradients, mem.Optimizer = sat(w), sat(4*n), sat(8*n)
		activations := f64(most) * perStage / f64(tc.Chunks) * acts
		mem.Activations = sat(activations)
		trans := 0.0
		if fs > 1 {
			trans = 4 * (2*fullEnds + 2*fullLayer) // gathered weights and full-size gradient buffers
		}
		if last {
			trans += f64(mostHeads) * headActs
		}
		mem.Transient = sat(trans)
		fp.Devices = append(fp.Devices, mem)
		// beyond the meter: a layer's pass temporaries, the attention and
		// head backward buffers, context-gathered K and V, the GEMM
		// packing, float32 working copies of the bf16 weights, the
		// gradients concatenated for the all-reduce and the collectives'
		// message copies
		kc := min(max(d, ft, qd, ntok, v), 256) // GEMM packing: 4-row strips of A, 512-column panels of B
		pack := (max(ntok, d, ft)+4)*kc + min(max(d, ft, qd, v), 512)*kc
		temps := 4 * (8*ntok*d + 3*ntok*ft + 3*ntok*qd + 8*cp*ntok*kvd + 2*ntok*v + s*cp + pack)
		if tc.BF16Compute {
			temps += 4 * (fullEnds + fullLayer)
		}
		temps += 4 * (2*n + fullEnds + fullLayer)
		static += state
		step += activations + trans + temps
		snap += 12 * n
	}
	full := v*d + seq*d + d + f64(c.Layers)*(2*d+d*f64(c.Heads)*hd+2*d*f64(c.KVHeads)*hd+f64(c.Heads)*hd*d+3*d*f64(c.DFF))
	if !c.Tied {
		full += d * v
	}
	steps := f64(tc.Steps)
	static += 4*full + 8*f64(tc.GlobalBatch)*(seq+1) + 48*steps
	if tc.Trace {
		// spans per device and step: compute and collectives for each
		// layer and micro-batch, the head, pipeline sends, the reduction
		static += 80 * steps * f64(len(fp.Devices)) * (f64(tc.MicroBatches)*(15*perStage+8*f64(tc.Chunks)) + 4)
	}
	ckpt := 0.0
	if tc.CheckpointEvery > 0 && tc.Hooks.Checkpoint != nil {
		ckpt = snap // a snapshot, streamed out tensor by tensor
	}
	if tc.Resume != nil || tc.LoadCheckpoint != nil {
		ckpt = max(ckpt, 3*snap) // the file read whole, as it grows, and decoded
	}
	end := snap
	if tc.Remote == nil || tc.Remote.Rank() == 0 {
		end += 2*4*full + remote // the reassembled model and its pieces
	}
	fp.Static, fp.Step, fp.Checkpoint, fp.End = sat(static), sat(step), sat(ckpt), sat(end)
	fp.Process = sat(static + max(step, ckpt, end))
	return fp, nil
}
