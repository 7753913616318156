package cost

import (
	"fmt"

	"shardlab/mesh"
	"shardlab/model"
)

// shape is the per-chip view of a job on a layout.
type shape struct {
	d, f, t, p, c int // axis degrees
	e             int // expert degree
	m             int // micro-batches
	b             int // sequences per batch shard per micro-batch
	s             int // tokens per chip per sequence (Seq / context)
	ls            int // layers per stage
	v             int // chunks of layers per device (interleaved, circular)
	dev           int // JAX devices per chip (hw.Chip.JAXDevicesPerChip, at least 1)
	layerShape
	r remat // the layer's footprint at b sequences
	// params is stageParams of the first and the last stage, head the
	// part of each that every stage holds (headParams)
	params [2]float64
	head   float64
	flops  jobFLOPs
}

// jobFLOPs is what a job's FLOPs per token are whatever the layout: the
// matmul parameters a token runs through (Spec.MatmulParams and, with
// multi-token prediction, Spec.MTPMatmulParams), the forward attention
// core's FLOPs per token at the job's sequence of the layers remat may
// recompute and of the MTP modules' layers, which it never does, and the
// model FLOPs per token in the job's attention convention
// (Spec.FLOPsPerToken).
//
// The decoder layers' attention core is counted twice, by the kernel
// that runs it. attention is dot_product's: every key of the sequence in
// every layer, a local layer's too, since MaxText's dot_product computes
// the whole [seq, seq] score matrix and only then masks it
// (layers/attention_op.py apply_attention_dot: qk_product over the whole
// key sequence, then apply_mask_to_logits with generate_attention_mask's
// mask, whose sliding_mask spans all kv_seq_len columns, @e591f30c), and
// a chunked layer's (its CHUNK mask, same_chunk, masks the whole matrix
// likewise).
// attentionSkipping is flash (splash) attention's, which skips the blocks
// its mask leaves empty: the causal pairs (Spec.CausalAttentionFLOPsPerToken),
// a local layer's stopping at the window, since MaxText hands splash
// CausalMask & LocalMask(window_size=(W−1, W)) for a LOCAL_SLIDING layer
// (layers/attention_op.py tpu_flash_attention @e591f30c) and the kernel
// runs only the blocks that mask keeps; a chunked layer's stop at its
// chunk, since a CHUNK layer hands it ChunkedCausalMask.
type jobFLOPs struct {
	matmulParams, attention, attentionSkipping, mtpAttention, model float64
}

// flops is j's jobFLOPs.
func (j *Job) flops() jobFLOPs {
	spec := &j.Model
	fl := jobFLOPs{
		matmulParams:      float64(spec.MatmulParams() + spec.MTPMatmulParams()),
		attention:         spec.AttentionFLOPsPerToken(j.Seq),
		attentionSkipping: spec.CausalAttentionFLOPsPerToken(j.Seq),
		model:             spec.FLOPsPerToken(j.Seq, j.CausalFLOPs),
	}
	if spec.Windowed() || spec.Chunked() {
		global, local := spec.KeyFLOPs()
		fl.attention = (global + local) * float64(j.Seq)
	}
	if n := j.Model.MTPLayers; n > 0 {
		fl.mtpAttention = float64(n) * j.Model.MTPLayer().AttentionFLOPsPerToken(j.Seq)
	}
	return fl
}

// flopsKey is what jobFLOPs depends on besides the model.
type flopsKey struct {
	seq    int
	causal bool
}

// layerShape is a decoder layer on a chip whatever the batch: the layer,
// its backward walk, and layerInUse's layer and matrix.
type layerShape struct {
	layer              layerView
	walk               backwardSteps
	inUse, inUseMatrix float64
}

// layerShape is sh's layer.
func (j *Job) layerShape(sh *shape) layerShape {
	ls := layerShape{layer: j.layerAt(sh.t)}
	ls.walk = j.backwardSteps(ls.layer, sh.s, j.Seq)
	ls.inUse, ls.inUseMatrix = j.layerInUse(sh)
	return ls
}

// layerKey is what a layerShape depends on besides the model.
type layerKey struct {
	remat        Remat
	custom       Places
	capacity     float64
	attention    AttentionKind
	repeatKV     bool
	activation   int
	t, s, seq, e int
}

// layerShape is j.layerShape, kept per layerKey for the estimator's model.
func (e *Estimator) layerShape(j *Job, sh *shape) layerShape {
	k := layerKey{j.Remat, j.Custom, j.CapacityFactor, j.Attention, j.RepeatKV, j.Precision.Activation, sh.t, sh.s, j.Seq, sh.e}
	// a search asks for a layout's policies in turn, once per schedule
	// and micro-batch count: the last few keys are compared before the
	// map's hash is worked out
	r := &e.recentLayers
	for i := range r.n {
		if r.k[i] == k {
			return r.ls[i]
		}
	}
	ls, ok := e.layers[k]
	if !ok {
		ls = j.layerShape(sh)
		e.layers[k] = ls
	}
	r.k[r.next], r.ls[r.next] = k, ls
	r.next, r.n = (r.next+1)%len(r.k), min(r.n+1, len(r.k))
	return ls
}

// recentLayers is the layer shapes the estimator last worked out or
// looked up, by key, for its model.
type recentLayers struct {
	k       [8]layerKey
	ls      [8]layerShape
	n, next int
}

// validShape validates j, then returns the package's shapeOf, its layer
// from the estimator's cache (the job's model is the one validate has
// just passed).
func (e *Estimator) validShape(j *Job, m *mesh.Mesh) (shape, error) {
	if err := e.validate(j); err != nil {
		return shape{}, err
	}
	var sh shape
	err := e.shapeInto(&sh, j, m)
	return sh, err
}

// shapeInto sets *sh to shapeOf's shape, or returns its error.
func (e *Estimator) shapeInto(sh *shape, j *Job, m *mesh.Mesh) error {
	var err error
	if *sh, err = shapeWith(j, m, e); err != nil {
		return err
	}
	e.setParams(sh, j)
	if k := (flopsKey{j.Seq, j.CausalFLOPs}); !e.flopsOK || e.flopsKey != k {
		e.flops, e.flopsKey, e.flopsOK = j.flops(), k, true
	}
	sh.flops = e.flops
	return nil
}

// setParams sets sh.params and sh.head to j's stagesParams and
// headParams, from e's cache.
func (e *Estimator) setParams(sh *shape, j *Job) {
	e.setParamsEnds(sh, j, j.endsOf(sh.p))
}

// setParamsEnds is setParams with the model's ends laid out as ends.
func (e *Estimator) setParamsEnds(sh *shape, j *Job, ends endsLayout) {
	k := paramsKey{sh.t, sh.f, sh.c, sh.e, sh.p, sh.ls}
	l := &e.lastParams
	if !l.ok || l.k != k {
		l.k, l.ps, l.ok = k, e.endsParams(sh, j, k), true
	}
	sh.params, sh.head = l.ps[ends].params, l.ps[ends].head
}

// paramsKey is what stageParams and headParams depend on besides the
// model and where the pipeline lays out the model's ends: the shape's
// degrees and layers per stage.
type paramsKey struct {
	t, f, c, e, p, ls int
}

// endsParams is, by endsLayout, the stagesParams and headParams of a
// shape: a layout asks for them under each of its schedules and for its
// ceilings (leastParams), each a different layout of the ends, so one
// entry holds every layout's.
type endsParams [endsNone + 1]struct {
	params [2]float64
	head   float64
}

// endsParamsOf is sh's endsParams, given the model's ParamCount pc and
// its dense layer's parameters per chip at sh's tensor degree, layer
// (denseLayerParams).
func (j *Job) endsParamsOf(sh *shape, pc model.Params, layer float64) endsParams {
	var ps endsParams
	for ends := range ps {
		l := endsLayout(ends)
		ps[ends].params = [2]float64{j.stageParamsOf(sh, firstStage, l, pc, layer), j.stageParamsOf(sh, lastStage, l, pc, layer)}
		ps[ends].head = j.headParamsOf(sh, l, pc)
	}
	return ps
}

// endsParams is sh's endsParams, whose key is k, for the estimator's
// model. A dense model's are worked out from its ParamCount and its dense
// layer's parameters at sh's tensor degree, which the estimator keeps: a
// few operations, where a look-up in a map of every key a sweep makes
// (tens of thousands) misses the processor's caches. A mixture of
// experts' or multi-token prediction's read the model again for each
// (moeLayerParams, routedPerLayer, mtpParams) and are kept in the map.
func (e *Estimator) endsParams(sh *shape, j *Job, k paramsKey) endsParams {
	keep := j.Model.MoE() || j.Model.MTPLayers > 0
	if keep {
		if ps, ok := e.params[k]; ok {
			return ps
		}
	}
	ps := j.endsParamsOf(sh, e.paramCount(j), e.denseLayer(j, sh.t))
	if keep {
		e.params[k] = ps
	}
	return ps
}

// paramCount is j.Model.ParamCount(), the estimator's model's, worked
// out once.
func (e *Estimator) paramCount(j *Job) model.Params {
	if !e.pcOK {
		e.pc, e.pcOK = j.Model.ParamCount(), true
	}
	return e.pc
}

// tensorParams is denseLayerParams at tensor degree t.
type tensorParams struct {
	t     int
	layer float64
}

// denseLayer is denseLayerParams(j.Model, t), the estimator's model's,
// worked out once per tensor degree (a search weighs a few).
func (e *Estimator) denseLayer(j *Job, t int) float64 {
	for _, d := range e.dense {
		if d.t == t {
			return d.layer
		}
	}
	v := denseLayerParams(j.Model, t)
	e.dense = append(e.dense, tensorParams{t, v})
	return v
}

// lastParams is the entry of an estimator's params it last looked up,
// when ok: a layout asks for its own one after another (its schedules,
// its ceilings), and comparing six degrees is cheaper than the map's
// hash and probe; the model is the estimator's, as the map's is.
type lastParams struct {
	k  paramsKey
	ps endsParams
	ok bool
}

// stagesParams is stageParams of the first and the last stage.
func (j *Job) stagesParams(sh *shape, ends endsLayout) [2]float64 {
	return [2]float64{j.stageParams(sh, firstStage, ends), j.stageParams(sh, lastStage, ends)}
}

// withBatch is sh with b sequences per batch shard per micro-batch.
func (j *Job) withBatch(sh shape, b int) shape {
	j.setBatch(&sh, b)
	return sh
}

// setBatch sets sh to b sequences per batch shard per micro-batch.
func (j *Job) setBatch(sh *shape, b int) {
	sh.b = b
	sh.r = j.rematIn(sh.layer, sh.b, sh.s, j.Seq)
}

func shapeOf(j Job, m mesh.Mesh) (shape, error) {
	sh, err := shapeWith(&j, &m, nil)
	if err == nil {
		ends := j.endsOf(sh.p)
		sh.params, sh.head = j.stagesParams(&sh, ends), j.headParams(&sh, ends)
		sh.flops = j.flops()
	}
	return sh, err
}

// shapeWith is shapeOf with the layer from e's cache (Estimator.layerShape),
// or worked out when e is nil.
func shapeWith(j *Job, m *mesh.Mesh, e *Estimator) (shape, error) {
	sh := shape{
		d: m.Size(mesh.Data), f: m.Size(mesh.FSDP), t: m.Size(mesh.Tensor),
		p: m.Size(mesh.Pipeline), c: m.Size(mesh.Context), e: m.Size(mesh.Expert), m: j.MicroBatches, v: 1,
		dev: max(m.Multislice.Slice.Chip.JAXDevicesPerChip, 1),
	}
	if j.Schedule.Chunked() {
		sh.v = max(j.Chunks, 1)
	}
	if err := j.shapeErr(&sh); err != nil {
		return sh, err
	}
	// the expert axis shards the batch too (MaxText's activation_batch
	// rule lists data, fsdp and expert)
	shards := sh.d * sh.f * sh.e * sh.m
	if j.GlobalBatch%shards != 0 {
		return sh, &Infeasible{Reason: ReasonBatch, Detail: batchDetail(j.GlobalBatch, sh)}
	}
	sh.s = j.Seq / sh.c
	sh.ls = j.Model.Layers / sh.p
	if e != nil {
		sh.layerShape = e.layerShape(j, &sh)
	} else {
		sh.layerShape = j.layerShape(&sh)
	}
	return j.withBatch(sh, j.GlobalBatch/shards), nil
}

// shapeErr is why a layout of sh's degrees, micro-batches and chunks
// cannot run j whatever its batch, in shapeWith's order, or nil.
func (j *Job) shapeErr(sh *shape) error {
	spec := &j.Model
	switch {
	case !TensorDivides(*spec, sh.t):
		return &Infeasible{Reason: ReasonHeads, Detail: fmt.Sprintf("%d heads, %d KV heads, d_ff %d over %s", spec.Heads, spec.KV(), spec.DFF, mesh.Degree{Axis: mesh.Tensor, ICI: sh.t, DCN: 1})}
	case spec.Units()%(sh.p*sh.v) != 0:
		// a stage holds whole scanned units (model.Spec.Units)
		return &Infeasible{Reason: ReasonLayers, Detail: fmt.Sprintf("%s over %s x %d chunks", spec.UnitsText(), mesh.Degree{Axis: mesh.Pipeline, ICI: sh.p, DCN: 1}, sh.v)}
	case sh.p > 1 && j.Schedule.Chunked() && sh.m%sh.p != 0:
		return &Infeasible{Reason: ReasonMicroBatch, Detail: fmt.Sprintf("%s needs micro-batches (%d) a multiple of %s", j.Schedule, sh.m, mesh.Degree{Axis: mesh.Pipeline, ICI: sh.p, DCN: 1})}
	case !ExpertDivides(spec.Experts, sh.e):
		return &Infeasible{Reason: ReasonExperts, Detail: expertDetail(spec.Experts, sh.e)}
	case j.Seq%sh.c != 0:
		return &Infeasible{Reason: ReasonSeq, Detail: fmt.Sprintf("%d tokens over %s", j.Seq, mesh.Degree{Axis: mesh.Context, ICI: sh.c, DCN: 1})}
	}
	return nil
}

// batchDetail says why a global batch does not split over sh's shards.
func batchDetail(globalBatch int, sh shape) string {
	if sh.e > 1 {
		return fmt.Sprintf("%d sequences over data %d x fsdp %d x expert %d x %d micro-batches", globalBatch, sh.d, sh.f, sh.e, sh.m)
	}
	return fmt.Sprintf("%d sequences over data %d x fsdp %d x %d micro-batches", globalBatch, sh.d, sh.f, sh.m)
}

// MicroBatchSize is j's sequences per batch shard per micro-batch on m
// (the batch is sharded over data, fsdp and expert), or the *Infeasible error
// of a layout that cannot run j.
func MicroBatchSize(j Job, m mesh.Mesh) (int, error) {
	sh, err := shapeOf(j, m)
	return sh.b, err
}

// TensorDivides reports whether tensor parallelism t can split the model:
// it must divide the query heads and d_ff, and divide or be a multiple of
// the key/value heads (which are then replicated).
func TensorDivides(spec model.Spec, t int) bool {
	if spec.MoE() && spec.ExpertFF()%t != 0 {
		return false
	}
	return spec.Heads%t == 0 && spec.DFF%t == 0 && (spec.KV()%t == 0 || t%spec.KV() == 0)
}

// kvShards is how many ways tensor parallelism t splits kv key/value heads.
func kvShards(kv, t int) int { return min(kv, t) }
