package cost

import (
	"shardlab/mesh"
	"shardlab/unit"
)

// Buffer is one short-lived buffer of a phase of a step, per chip.
type Buffer struct {
	Name  string     `json:"name"`
	Bytes unit.Bytes `json:"bytes"`
}

// Phase is a part of a step whose short-lived buffers are live at the same
// time, on top of the model state and the activations held for the
// backward pass. The step's peak is the state, the held activations and
// its largest phase.
//
// Recomputable is what XLA keeps live in the phase too when HBM allows,
// and recomputes from what the phase holds anyway when it does not: not
// part of the peak a job needs (Memory.Total), part of the one XLA's
// memory report shows for a program that fits as written
// (Memory.Nominal).
type Phase struct {
	Name         string   `json:"name"`
	Buffers      []Buffer `json:"buffers"`
	Recomputable []Buffer `json:"recomputable,omitempty"`
}

// Bytes is the phase's buffers together.
func (p Phase) Bytes() unit.Bytes {
	var n unit.Bytes
	for _, b := range p.Buffers {
		n += b.Bytes
	}
	return n
}

// BufferActivationGradients names the layer backward's activation
// gradients (the emulator's meter does not count them yet).
const BufferActivationGradients = "activation gradients"

// The phases. A layer backward's name carries, in parentheses, the step
// of it at which its buffers peak.
const (
	PhaseLayerBackward = "layer backward"
	PhaseOutput        = "output layer and loss"
)

// phases lists the short-lived buffers of the two phases of a step that
// do not overlap, per chip.
//
// The backward pass of a layer: the recomputed activations and the
// activation gradients at the step of it where they peak (layerBackward).
// Where MaxText scans and rematerialises a block of layers as one unit
// (model.Spec.ScanBlock: Llama 4's four) and the policy chains them
// (blockChained), its backward recomputes the whole block first and then
// walks its layers from the last, so at the last layer's walk the
// earlier layers' recomputed activations are all still to be read
// (backwardSteps.earlier), and every MoE layer of the block holds its
// dispatch buffers.
// Then the weights: with FSDP (fsdp, context or expert shards, as
// MaxText shards the weights: weightShards), the whole layer (a chained
// block's layers together: layerInUse) gathered in the compute
// dtype (each weight is gathered once for the recompute and kept to its
// last use in the backward, and at the first backward step every weight
// of the layer is still to be used: layerInUse) and the unreduced
// gradient of its largest weight on the way to the reduce-scatter. The
// next layer's gathers, which the scheduler may start ahead of their use,
// are not counted. Without FSDP but with fp32 weights: the bf16 copy of
// the layer in use. An MoE
// layer adds its dispatch buffers (expertBuffers) and the ring of experts
// its gathered tokens (ringBuffers).
//
// A chip of several JAX devices (TPU7x: one a TensorCore, each with its
// half of the HBM) holds a gathered buffer once on each device: an
// all-gather leaves the whole result on every device it gathers to, and
// the weight gradient's dot makes its full-size partial sum on each.
// MaxText shards the weights' embed axis over fsdp and context (base.yml
// logical_axis_rules: embed -> fsdp, fsdp_transpose, context, expert,
// @e591f30c), and the chip's devices always sit on one of those two
// (package maxtext: Devices), so on such a chip every layer is gathered
// per device even where the chip layout has no fsdp.
//
// The output layer and loss, on a stage that runs them (out, setInFlight):
// the logits of the sequences it works on at once (outputSeqs: one
// micro-batch's, or a pipeline's whole batch's share) and their
// gradients in the compute dtype, split over the vocabulary tiles
// (MaxText num_vocab_tiling), and with fsdp or context (weightShards;
// or several devices a chip)
// the output layer's gathered weights and unreduced gradients, per
// device; with multi-token prediction, each module's logits and the
// residuals of its decoder layer, which no remat covers (mtp.go).
//
// The output phase's recomputable buffer is the loss's fp32 exponentials
// of the same logits (lossExponentials).
//
// It writes them to ps, whose earlier phases it drops.
func (j *Job) phases(ps *stagePhases, sh *shape, out outputSpan) {
	e := float64(j.Precision.Activation)
	ps.n, ps.phase[0].n, ps.phase[1].n = 0, 0, 0
	ps.phase[0].rec, ps.phase[1].rec = Buffer{}, Buffer{}
	walk := j.layerBackward(&sh.walk, sh.b, sh.s)
	ps.step = walk.step
	back := &ps.phase[0]
	back.add("recomputed activations still live", walk.residuals)
	back.add(BufferActivationGradients, walk.gradients)
	back.add("recomputed activations of the block's earlier layers", sh.walk.earlier*e*float64(sh.b)*float64(sh.s))
	back.add("MoE dispatch", float64(j.blockMoELayers())*j.dispatchBuffers(&sh.layer, sh.b, sh.s))
	back.add("ring of experts", j.ringBuffers(sh.e, sh.b*sh.s))
	layer, matrix := sh.inUse, sh.inUseMatrix
	// a gathered buffer is whole on each of the chip's JAX devices
	dev := float64(sh.dev)
	switch {
	case sh.weightShards()*sh.e > 1 || sh.dev > 1:
		back.add("gathered weights (FSDP)", dev*layer*e)
		back.add("unreduced weight gradient (FSDP)", dev*matrix*e)
	case j.Precision.Weight > j.Precision.Activation || j.ParameterOffload:
		back.add("compute-dtype copy of the layer's weights", layer*e)
	}
	ps.n = 1
	if out != outputNone {
		j.outputPhase(&ps.phase[1], sh, outputSeqs(sh, out))
		ps.n = 2
	}
}

// outputPhase writes the output layer and loss phase (phases) for seqs
// sequences per chip to op.
func (j *Job) outputPhase(op *phaseBuffers, sh *shape, seqs float64) {
	e := float64(j.Precision.Activation)
	tiles := float64(max(j.VocabTiles, 1))
	row := seqs * float64(sh.s) * float64(j.Model.Vocab) * e / float64(sh.t) / tiles
	op.add("logits", row)
	op.add("logits gradient", row)
	op.rec = Buffer{BufferLossExponentials, unit.Bytes(j.lossExponentials(row))}
	if n := float64(j.Model.MTPLayers); n > 0 {
		// at the first of the losses' gradients every module's logits
		// and residuals are still to be read; mtp.py calls
		// apply_output_head, not the vocabulary-tiled loss, so its
		// logits are whole; mtpHeld is a micro-batch's
		op.add("MTP logits", n*row*tiles)
		op.add("MTP layers' residuals (no remat)", seqs/float64(sh.b)*n*j.mtpHeld(sh))
	}
	if sh.weightShards() > 1 || sh.dev > 1 {
		op.add("gathered output layer and its unreduced gradient (FSDP)", float64(sh.dev)*2*float64(j.Model.Vocab)*float64(j.Model.DModel)/float64(sh.t)*e)
	}
}

// stagePhases is a stage's phases in arrays: the planner sums them for
// every batch it tries, and only Memory's answer spells them out (list).
// The first is the layer backward, the second, when n is 2, the output
// layer and loss.
type stagePhases struct {
	n     int
	step  stepName // where the layer backward peaks
	phase [2]phaseBuffers
}

// phaseBuffers is one phase's buffers, and its recomputable one (rec,
// none when its Bytes are 0).
type phaseBuffers struct {
	n   int
	buf [7]Buffer
	rec Buffer
}

// add appends a buffer of bytes, when there are any.
func (pb *phaseBuffers) add(name string, bytes float64) {
	if bytes > 0 {
		pb.buf[pb.n] = Buffer{Name: name, Bytes: unit.Bytes(bytes)}
		pb.n++
	}
}

// bytes is the phase's buffers together (Phase.Bytes).
func (pb *phaseBuffers) bytes() unit.Bytes {
	var n unit.Bytes
	for _, b := range pb.buf[:pb.n] {
		n += b.Bytes
	}
	return n
}

// name is phase i's name.
func (ps *stagePhases) name(i int) string {
	if i == 0 {
		return PhaseLayerBackward + " (" + ps.step.String() + ")"
	}
	return PhaseOutput
}

// list spells the phases out.
func (ps *stagePhases) list() []Phase {
	// one allocation for the phases' buffers and one for the phases
	bufs := make([]Buffer, 0, ps.phase[0].n+ps.phase[1].n)
	out := make([]Phase, ps.n)
	for i := range out {
		pb := &ps.phase[i]
		start := len(bufs)
		bufs = append(bufs, pb.buf[:pb.n]...)
		out[i] = Phase{Name: ps.name(i), Buffers: bufs[start:len(bufs):len(bufs)]}
		if pb.rec.Bytes > 0 {
			out[i].Recomputable = []Buffer{pb.rec}
		}
	}
	return out
}

// layerInUse is the parameters of the largest layer a chip works on at
// once, as it computes with them (gathered over fsdp and, for the weights
// that are not routed experts, over expert), and of the largest single
// weight tensor among them, whose gradient leaves the layer's backward
// first.
//
// The whole layer: MaxText wraps each decoder layer in jax.checkpoint
// (layers/decoders.py get_remat_policy) and scans the layers with
// prevent_cse off, so the recomputed forward and the backward read the
// same gathered weight value, one all-gather per weight that lives from
// the recompute to the weight's last use in the backward; at the first
// backward step every weight of the layer is still to be used. An MoE
// layer computes with every expert its expert shard holds, gathered over
// fsdp: MaxText's sparse_matmul passes the expert kernels to its
// shard_map as ("exp", None, "mlp_no_fsdp") with fsdp removed
// (layers/moe.py, get_routed_moe_shardings @e591f30c), so a chip gathers
// experts/expert × d_model × d_ff/tensor of each projection, and the
// stacked projection is the largest tensor.
//
// A scanned block (model.Spec.ScanBlock) is one jax.checkpoint too, its
// layers unrolled inside it (Llama4ScannableBlock's loop, model/block.go);
// where the policy chains its layers (blockChained) the unit gathered is
// the block: its dense and MoE layers together (blockUnit), every weight
// of which is still to be used at its last layer's first backward step.
// Maverick's block is two dense and two MoE layers; with one layer a
// unit, it is the model's largest layer.
//
// The gradient: a weight's gradient is a dot over the batch, which fsdp
// shards, so GSPMD's dot partitioning reduces the partial products
// (reduce-scatter toward the weight's sharding) at the dot's output, in
// the compute dtype; the cast back to an fp32 weight's dtype comes after,
// on the shard. The largest tensor's unreduced gradient is the most of it
// alive at once: each one's reduce-scatter starts when its dot ends.
func (j *Job) layerInUse(sh *shape) (layer, matrix float64) {
	pc := j.Model.ParamCount()
	t := float64(sh.t)
	var dense, moe float64 // a dense and an MoE layer's
	if pc.DenseLayers() > 0 {
		dense = float64(pc.PerLayer()) / t
		matrix = float64(j.Model.LargestMatrix()) / t
	}
	if j.Model.MoE() {
		routed := float64(pc.Experts) * float64(pc.Expert) / float64(sh.e) / t
		moe = j.moeLayerParams(sh) + routed
		proj := float64(j.Model.MLPInputs() + 1) // gate, up and down projections
		matrix = max(matrix, float64(j.Model.LargestMatrix())/t, routed/proj)
	}
	n, nMoE := j.blockUnit(), j.blockMoELayers()
	if n == 1 {
		return max(dense, moe), matrix
	}
	return float64(n-nMoE)*dense + float64(nMoE)*moe, matrix
}

// backwardWalk is where a layer's backward pass peaks: the step, and the
// recomputed activations and the activation gradients live there, per
// chip.
type backwardWalk struct {
	step                 stepName
	residuals, gradients float64
}

// stepName is a step of a layer's backward walk (backwardTable), a small
// number so that a layer's walk holds no pointers: the planner copies it
// with every layout's shape.
type stepName uint8

const (
	stepRecompute stepName = iota
	stepMoECombine
	stepMLPDown
	stepMLPActivation
	stepMLPUp
	stepMidNorm
	stepOutProj
	stepAttentionCore
	stepQKV
)

// stepNames spells the steps, by stepName.
var stepNames = [...]string{
	stepRecompute:     "forward recompute",
	stepMoECombine:    "MoE combine backward",
	stepMLPDown:       "MLP down-projection",
	stepMLPActivation: "MLP activation",
	stepMLPUp:         "MLP up-projections",
	stepMidNorm:       "mid-layer norm",
	stepOutProj:       "attention out-projection",
	stepAttentionCore: "attention core",
	stepQKV:           "QKV projections",
}

func (n stepName) String() string { return stepNames[n] }

// backwardSteps walks the backward pass of one decoder layer v (tensor
// parallelism v.t), for s local tokens attending over seq keys, op by op;
// layerBackward finds the step at which its short-lived activations peak
// for a batch.
//
// jax.checkpoint (MaxText wraps each decoder layer in it, layers/decoders.py
// get_remat_policy) reruns the layer's forward before its backward, so
// what the policy does not keep is recomputed into HBM at once
// (recomputed). The backward then consumes them in reverse order, each
// step holding the gradients it reads and writes (backwardTable). What the
// policy keeps stays in the held activations and is not counted here;
// without remat nothing is recomputed, and the gradients alone make the
// phase.
func (j *Job) backwardSteps(v layerView, s, seq int) backwardSteps {
	bw := j.backwardWidths(&v, s, seq)
	rec := j.recomputed(&v, &bw)
	live := 0.0
	for _, v := range rec {
		live += v
	}
	steps, n, combine := j.backwardTable(&bw)
	out := backwardSteps{n: n, combine: combine, d: bw.d, full: bw.full, earlier: j.blockEarlier(&v, live)}
	for i, st := range steps[:n] {
		out.step[i] = backwardStep{name: st.name, live: live + st.extra, grads: st.grads}
		for _, x := range st.frees {
			if x >= 0 {
				live -= rec[x]
				rec[x] = 0
			}
		}
	}
	return out
}

// The recomputed residuals of a layer's backward walk, by index: the
// tagged tensors by their Tensor index, then the untagged ones.
const (
	resNorms      = int(NumTensors) + iota
	resMidNorm    // the mid-layer norm's output, last read by the MLP's weight gradients
	resAct        // the MLP's activation product
	resProbs      // dot_product attention's exponentiated scores
	resStats      // layerStats, as elements of the activation dtype
	resGatherAttn // the attention's input gathered over tensor, last read by the QKV weight gradients
	resGatherMLP  // the MLP's, last read by its up-projections' weight gradients
	resRoutedWi1  // the routed wi_1 output a policy saving mlpwi_1 leaves to recompute
	numResiduals
)

// backwardWidths is what the steps of a layer's backward pass read and
// write, in elements per local token.
type backwardWidths struct {
	d, f  float64 // the layer's input and the MLP's wi_0 on a chip
	heads float64 // one [heads, seq] row of dot_product attention's scores; 0 otherwise
	// full is d_model, the width of a projection's input gathered over
	// tensor when tp.
	full float64
	tp   bool
	dn   float64 // the gradient of a column-parallel projection's input
	dOut float64 // a down- or out-projection's output gradient, gathered over tensor
	dwi  float64 // d(wi_0), and d(wi_1) when gated
	dqkv float64 // dQ, dK and dV
	// context is the attention's output before its out-projection;
	// attnCore what the attention core reads (K and V gathered over the
	// context axis); gathered what of it is recomputed for that step
	// alone, and regather the input gathered again for its weight
	// gradient without remat.
	context, attnCore, gathered, regather float64
}

// backwardWidths is the widths of layer v's backward steps for s local
// tokens attending over seq keys.
//
// With tensor parallelism MaxText shards the residual stream and the
// norms' outputs over tensor on the embedding axis (base.yml
// logical_axis_rules: activation_embed -> tensor, @e591f30c and since
// 2023), while the projections' kernels are sharded on heads or mlp.
// GSPMD therefore gathers a projection's input over tensor to the full
// d_model before the dot (the column-parallel matmul of sequence
// parallelism), and the backward of the same dot makes the input's
// gradient as full-width partial sums that a reduce-scatter shards
// again; a down- or out-projection's backward reads its output's
// gradient gathered to full width. Under remat the recomputed forward
// and the backward's weight gradient read one gathered input (the
// layer is one jax.checkpoint with prevent_cse off), so it lives from
// the recompute to that weight gradient; without remat the backward
// gathers it again at the weight gradient's step. With tensor 1 the
// gathered input is the norm's output itself, and nothing is added.
//
// With a context axis the attention core reads K and V gathered over
// it and makes their full-length gradients, reduce-scattered after it
// (MaxText's all-gather context parallelism; the transpose of an
// all-gather is a reduce-scatter); under remat the gather is redone
// for the backward pass, a recomputed activation of that step alone.
func (j *Job) backwardWidths(v *layerView, s, seq int) backwardWidths {
	spec := j.Model
	w := &v.widths
	bw := backwardWidths{d: w[LayerInput], f: w[MLPWi0], full: float64(spec.DModel), tp: v.t > 1, context: w[Context]}
	if j.Attention == AttentionDot {
		bw.heads = float64(spec.Heads) * float64(seq) / float64(v.t) // per token: one [heads, seq] row
	}
	bw.dn = bw.d
	if bw.tp {
		bw.dn, bw.dOut = bw.full, bw.full
	}
	if bw.tp && j.Remat == RematNone {
		bw.regather = bw.full
	}
	bw.dwi = float64(spec.MLPInputs()) * bw.f
	// the projections' backward reads dK and dV at the KV heads: where
	// the job repeats K and V (RepeatKV), the core writes them at the
	// query's (attnCore) and the repeat's backward sums them back
	dk, dv := j.kvWidths(v.t)
	bw.dqkv = w[Query] + dk + dv
	c := float64(seq / s)
	bw.attnCore = w[Query] + c*(w[Key]+w[Value]) + bw.heads
	if c > 1 && j.Remat != RematNone {
		bw.gathered = c * (w[Key] + w[Value])
	}
	return bw
}

// recomputed is what the recomputed forward of layer v puts in HBM, in
// elements per token, by residual index: the tagged tensors the policy
// places on neither device nor host, and the untagged ones the backward
// reads (the norms' outputs and the MLP's activation product, and with
// dot_product attention the exponentiated scores, a [b, heads, s, seq]
// array of the activation dtype: layers/attention_op.py
// compute_local_attention @e591f30c), and with tensor parallelism the
// projections' inputs gathered over it (backwardWidths). Without remat it
// is nothing.
func (j *Job) recomputed(v *layerView, bw *backwardWidths) [numResiduals]float64 {
	var rec [numResiduals]float64
	if j.Remat == RematNone {
		return rec
	}
	spec := j.Model
	d := bw.d
	for x := Query; x < NumTensors; x++ {
		// an MoE layer's recomputed mlpwo is the dispatch's returned
		// rows, which the layer phase counts (dispatchBuffers)
		if v.places[x] == Recompute && j.needed(x) && x != MLPWo {
			rec[x] = v.widths[x]
		}
	}
	rec[resNorms] = float64(spec.Norms()) * d
	if !spec.ParallelBlock && spec.Norms() > 1 {
		rec[resNorms], rec[resMidNorm] = rec[resNorms]-d, d
	}
	rec[resRoutedWi1] = j.redoneWi1(v) / float64(v.t)
	rec[resAct] = bw.f
	rec[resProbs] = bw.heads
	rec[resStats] = j.layerStats(v.t) / float64(j.Precision.Activation)
	if bw.tp {
		rec[resGatherAttn] = bw.full
		if !spec.ParallelBlock && spec.Norms() > 1 {
			rec[resGatherMLP] = bw.full
		}
	}
	return rec
}

// tableStep is a line of a layer's backward table: the gradients live at
// the step, the residuals that die at it (up to four by residual index, -1
// for none) and what is recomputed for it alone.
type tableStep struct {
	name  stepName
	grads float64
	frees [4]int
	extra float64
}

// backwardTable is the steps of a layer's backward pass in order, n of
// them, and the MoE combine's index (-1 for none): the gradients each step
// reads and writes, and the recomputed residuals that die at it. The steps
// live in an array (no slices: the planner walks layers millions of
// times, and this keeps the walk off the heap).
//
//	MLP down-projection   d(out), d(act)              frees act
//	MLP activation        d(out), d(wi_0), d(wi_1)    frees wi_0, wi_1
//	MLP up-projections    d(out), d(wi_0), d(wi_1), d(normed)  frees the mid-layer norm's output
//	mid-layer norm        d(out), d(normed), d(h)     frees h (out_proj)
//	attention out-proj    d(h), d(context)            frees context
//	attention core        d(h), d(context), dQ, dK, dV frees Q, K, V, probabilities
//	                      (dot_product: and one [b, heads, s, seq] gradient;
//	                      with a context axis: K and V gathered over it
//	                      and their full-length gradients)
//	QKV projections       d(h), dQ, dK, dV, d(normed)
//
// An elementwise op writes its output into the buffer of an operand of
// the same shape that dies at it (XLA buffer assignment,
// HloDataflowAnalysis::CanShareOperandBufferWithUser, for elementwise
// loop fusions): the exponentials take the scores' buffer in the forward,
// d(wi_0) takes d(act)'s at the gated activation's backward, and the
// scores' gradient the probabilities' gradient's. A parallel block
// (attention and MLP read one norm) has no mid-layer norm, and its MLP's
// d(normed) stays live through the attention's steps, where it is summed.
func (j *Job) backwardTable(bw *backwardWidths) (steps [9]tableStep, n, combine int) {
	d, f, dn, dOut, dwi, ctx := bw.d, bw.f, bw.dn, bw.dOut, bw.dwi, bw.context
	none := [4]int{-1, -1, -1, -1}
	one := func(x int) [4]int { return [4]int{x, -1, -1, -1} }
	qkvp := [4]int{int(Query), int(Key), int(Value), resProbs}
	n = copy(steps[:], []tableStep{
		{stepRecompute, 0, none, 0},
	})
	combine = -1
	if j.Model.MoE() {
		// An MoE layer's backward opens with its combine: the gradient of
		// the experts' outputs, one d_model row per routed row (its rows
		// depend on the batch: layerBackward adds them).
		combine = n
		n += copy(steps[n:], []tableStep{{stepMoECombine, d, none, 0}})
	}
	n += copy(steps[n:], []tableStep{
		{stepMLPDown, d + f + dOut, one(resAct), 0},
		{stepMLPActivation, d + dwi, [4]int{int(MLPWi0), int(MLPWi1), resRoutedWi1, -1}, 0},
		{stepMLPUp, d + dwi + dn, [4]int{resMidNorm, resGatherMLP, -1, -1}, bw.regather},
	})
	if j.Model.ParallelBlock {
		// d(out) and the MLP's d(normed) stay live through the attention.
		n += copy(steps[n:], []tableStep{
			{stepOutProj, 2*d + ctx + dOut, one(int(Context)), 0},
			{stepAttentionCore, 2*d + ctx + bw.attnCore, qkvp, bw.gathered},
			{stepQKV, 2*d + bw.dqkv + dn, one(resGatherAttn), bw.regather},
		})
	} else {
		n += copy(steps[n:], []tableStep{
			{stepMidNorm, 3 * d, one(int(OutProj)), 0},
			{stepOutProj, d + ctx + dOut, one(int(Context)), 0},
			{stepAttentionCore, d + ctx + bw.attnCore, qkvp, bw.gathered},
			{stepQKV, d + bw.dqkv + dn, one(resGatherAttn), bw.regather},
		})
	}
	return steps, n, combine
}

// blockEarlier is what, in elements per local token, the earlier layers
// of a chained block (blockUnit) hold while its last layer's backward
// walks, given rec, the recomputed activations of one layer's walk: the
// last layer's backward needs the block's forward recomputed first
// (blockChained), and the backward reads each layer's residuals only at
// that layer's own steps, from the last layer to the first, so at the
// last layer's walk the blockUnit−1 layers before it hold all of theirs
// (the layers' average, as the walk is). The inputs of the block's
// layers but the first (the scan carry, held), blockUnit−1 of them, are
// recomputed too, and each is read by its layer's first norm's backward,
// the last one's at the end of its walk. 0 for a unit of one layer.
func (j *Job) blockEarlier(v *layerView, rec float64) float64 {
	n := float64(j.blockUnit() - 1)
	return n * (rec + v.widths[LayerInput])
}

// backwardSteps is a layer's backward walk (backwardSteps) whatever the
// batch: at each step, the recomputed activations live and the gradients,
// in elements per local token.
type backwardSteps struct {
	n    int
	step [9]backwardStep
	// combine is the MoE combine's step, -1 for none, whose gradient
	// rows layerBackward adds to d, the layer input's width; the routed
	// experts' steps follow it (moeStep).
	combine int
	d       float64
	// full is d_model, the width of the routed rows (moeStep).
	full float64
	// earlier is what the earlier layers of a scanned block hold through
	// its last layer's walk (blockEarlier).
	earlier float64
}

type backwardStep struct {
	name        stepName
	live, grads float64
}

// layerBackward is the peak of the walk ws for b sequences of s local
// tokens.
func (j *Job) layerBackward(ws *backwardSteps, b, s int) backwardWalk {
	spec := j.Model
	e := float64(j.Precision.Activation)
	tok := float64(b) * float64(s)
	var best backwardWalk
	for i, st := range ws.step[:ws.n] {
		if ws.combine >= 0 {
			st = j.moeStep(ws, i, st, float64(ExpertRows(j.CapacityFactor, b, s, spec.ExpertsPerToken, spec.Experts))/tok)
		}
		if i == 0 || (st.live+st.grads)*e*tok > best.residuals+best.gradients {
			best = backwardWalk{step: st.name, residuals: st.live * e * tok, gradients: st.grads * e * tok}
		}
	}
	return best
}

// MaxMicroBatch is the most sequences per batch shard per micro-batch
// with which j still fits on m (Memory.Fits: HBM, and host memory for what
// it offloads), its layout, micro-batches and settings unchanged (the
// global batch the only thing that grows); 0 when even one does not fit.
// Both grow with the batch, so it doubles, then bisects; it looks no
// further than limit sequences.
func (e *Estimator) MaxMicroBatch(j Job, m mesh.Mesh, limit int) (int, error) {
	n, _, err := e.MaxMicroBatchBound(j, m, limit)
	return n, err
}

// MaxMicroBatchBound is MaxMicroBatch and what stops one more sequence
// per batch shard per micro-batch: ReasonHBM or ReasonHost (BatchMemory.Check),
// or "" where the limit does.
func (e *Estimator) MaxMicroBatchBound(j Job, m mesh.Mesh, limit int) (int, Reason, error) {
	if err := e.validate(&j); err != nil {
		return 0, "", err
	}
	bm, err := e.BatchMemory(j, m)
	if err != nil {
		return 0, "", err
	}
	n, err := bm.most(limit)
	if err != nil || n >= limit {
		return n, "", err
	}
	why, err := bm.Check((n + 1) * bm.shards)
	return n, why, err
}

// most is the most sequences per batch shard per micro-batch, up to
// limit, that fit (MaxMicroBatch's search): 0 when one does not.
func (bm *BatchMemory) most(limit int) (int, error) {
	fits := func(b int) (bool, error) { return bm.Fits(b * bm.shards) }
	if ok, err := fits(1); err != nil || !ok {
		return 0, err
	}
	lo, hi := 1, 2 // lo fits; hi is to be tried
	for hi <= limit {
		ok, err := fits(hi)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		lo, hi = hi, 2*hi
	}
	hi = min(hi, limit+1) // hi does not fit, or is past the limit
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := fits(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// The bounds of a memory calibration's factor: a compile that reports a
// quarter or eight times cost's temporaries says the job or the log is not
// the one costed.
const (
	MinTempScale = 0.25
	MaxTempScale = 8.0
)
