package cost

import (
	"math"

	"shardlab/mesh"
	"shardlab/model"
	"shardlab/schedule"
	"shardlab/unit"
)

// stage picks a pipeline stage for per-stage accounting.
type stage int

const (
	firstStage stage = iota
	lastStage
)

// String names st as StageMemory does: "first" or "last".
func (st stage) String() string {
	if st == lastStage {
		return "last"
	}
	return "first"
}

// stageParams is the parameters one chip of a stage holds: the stage's
// layers, plus the ends of the model as ends lays them out (endsOf):
// without a pipeline all of them; in MaxText's pipelines all of them on
// every stage; in Megatron's (1F1B, interleaved) the input embedding on
// the first stage and the final norm and output layer on the last (a
// tied output keeps its own copy of the embedding there); sharded over
// tensor, fsdp, context and expert (weightShards). The multi-token prediction modules go where the
// output layer goes (holdsMTP).
// With more tensor shards than key/value heads, each K/V head is
// replicated on t/KV chips (Megatron's GQA layout).
func (j *Job) stageParams(sh *shape, st stage, ends endsLayout) float64 {
	return j.stageParamsOf(sh, st, ends, j.Model.ParamCount(), denseLayerParams(j.Model, sh.t))
}

// stageParamsOf is stageParams, given the model's ParamCount pc and its
// dense layer's parameters per chip at sh's tensor degree, layer
// (denseLayerParams), as an estimator keeps them (Estimator.setParamsEnds).
func (j *Job) stageParamsOf(sh *shape, st stage, ends endsLayout, pc model.Params, layer float64) float64 {
	var n int64
	switch {
	case sh.p == 1 || ends == endsEvery:
		n = pc.Embedding + pc.Output + pc.FinalNorm
	case ends == endsNone:
	case st == firstStage:
		n = pc.Embedding
	case j.Model.TiedEmbeddings:
		n = pc.Embedding + pc.FinalNorm
	default:
		n = pc.Output + pc.FinalNorm
	}
	layers := float64(sh.ls) * layer
	if j.Model.MoE() {
		moe := j.moeLayersPerStage(sh)
		layers = (float64(sh.ls)-moe)*layer + moe*j.moeLayerParams(sh)
	}
	// MaxText shards the embed dimension of every weight over fsdp and
	// context, and but the routed experts' over expert (weightShards)
	p := (layers+float64(n)/float64(sh.t))/float64(sh.weightShards()*sh.e) + j.routedShard(sh)
	if j.holdsMTP(sh, st, ends) {
		p += j.mtpParams(sh)
	}
	return p
}

// weightShards is how many ways a weight's embed dimension is split
// besides the expert axis: fsdp × context. MaxText's rules for every
// logical axis a weight's model dimension takes list context beside fsdp
// (configs/base.yml logical_axis_rules @e591f30c: embed_vocab, line 545,
// the embedding's and the output layer's; q_lora and kv_lora, lines
// 568-572; embed_moe, lines 587-588, the routed experts' (layers/moe.py
// lines 472-473: ("exp", "embed_moe", "mlp_moe")); embed, lines 605-606,
// every other kernel's), and expert too but for embed_moe: context
// parallelism shards the weights as FSDP does, and MaxText says so
// ("The main communications are the same as FSDP (all gather weights and
// synchronize gradients)", docs/guides/optimization/sharding.md, "CP
// Arithmetic Intensity"). The norms' scales ("norm": tensor, line 607)
// go with their layers, a rounding error.
func (sh *shape) weightShards() int { return sh.f * sh.c }

// routedShard is the routed experts' parameters one chip of a stage
// holds: routedPerChip's over fsdp, expert and tensor, over context too
// (embed_moe: weightShards).
func (j *Job) routedShard(sh *shape) float64 {
	return j.routedPerChip(sh) / float64(sh.c)
}

// holdsMTP reports whether stage st holds the multi-token prediction
// modules (mtpParams) in layout ends: without a pipeline, and in
// MaxText's pipelines on every stage, as the output layer is: the
// modules are the Transformer's mtp_block, beside the decoder and not in
// its pipeline_module (models/models.py Transformer.setup, lines 94-110,
// and __call__, lines 243-254 @e591f30c), run on the decoder's
// hidden_state, the pipeline's output for the whole batch (layers/
// decoders.py Decoder.__call__, lines 928-930 and 1290, returned at
// 1319), and their weights' logical axes name no "layers" axis, so none
// maps to "stage": the projection's kernel ("embed", None) and the norms'
// ("norm",) (layers/multi_token_prediction.py MultiTokenPredictionLayer.
// __init__, lines 175-199), the decoder layer's as the model's layers'
// but unscanned. In Megatron's layout they sit with the output layer on
// the last stage; endsNone holds none of them.
func (j *Job) holdsMTP(sh *shape, st stage, ends endsLayout) bool {
	switch {
	case sh.p == 1 || ends == endsEvery:
		return true
	case ends == endsSplit:
		return st == lastStage
	}
	return false
}

// endsLayout is where a pipeline lays out the model's ends: the input
// embedding, the final norm and the output layer.
type endsLayout uint8

const (
	// endsSplit: Megatron's, the embedding on the first stage, the
	// norm and the output layer on the last.
	endsSplit endsLayout = iota
	// endsEvery: MaxText's, all of them on every stage (headOnEveryStage).
	endsEvery
	// endsNone: none of them on any stage, fewer parameters than either
	// layout lays out (BatchMemory.leastParams).
	endsNone
)

// endsOf is where j lays out the ends of a pipeline of p stages.
func (j *Job) endsOf(p int) endsLayout {
	if j.headOnEveryStage(p) {
		return endsEvery
	}
	return endsSplit
}

// headOnEveryStage reports whether a pipeline of p stages keeps the input
// embedding, the final norm and the output layer on every stage, as
// MaxText's pipelines (GPipe and circular) do: only the decoder layers
// go into pipeline_module (layers/decoders.py Decoder.__call__, lines
// 894-930 @e591f30c), whose nnx.vmap over the stages names their stacked
// axis "layers" (layers/pipeline.py line 679) and base.yml maps "layers"
// to "stage" (configs/base.yml logical_axis_rules, line 608); the token
// embedding is the Transformer's (models/models.py line 353), its table
// sharded ("vocab", "embed_vocab") (layers/embeddings.py lines 130-137),
// the output layer's kernel ("embed_vocab", "vocab") and the final norm's
// scale ("norm",) (layers/decoders.py apply_output_head, lines 794-837),
// and "vocab" maps to tensor, "embed_vocab" to fsdp, context and expert,
// "norm" to tensor (base.yml lines 544-545, 607), none to "stage": every
// stage's chips hold the same share of them.
func (j *Job) headOnEveryStage(p int) bool {
	return p > 1 && (j.Schedule == schedule.GPipe || j.Schedule == schedule.Circular)
}

// headParams is the parameters of the embedding, final norm and output
// layer, and the multi-token prediction modules (holdsMTP), one chip
// holds that its replicas on the other pipeline stages hold too (ends
// endsEvery), sharded as stageParams shards them; 0 for the other
// layouts.
func (j *Job) headParams(sh *shape, ends endsLayout) float64 {
	if ends != endsEvery || sh.p <= 1 {
		return 0
	}
	return j.headParamsOf(sh, ends, j.Model.ParamCount())
}

// headParamsOf is headParams, given the model's ParamCount pc.
func (j *Job) headParamsOf(sh *shape, ends endsLayout, pc model.Params) float64 {
	if ends != endsEvery || sh.p <= 1 {
		return 0
	}
	return float64(pc.Embedding+pc.Output+pc.FinalNorm)/float64(sh.t*sh.weightShards()*sh.e) + j.mtpParams(sh)
}

// denseLayerParams is the parameters one chip holds of a dense layer of
// spec, before fsdp and expert: split over tensor t, K/V over at most KV
// shards.
func denseLayerParams(spec model.Spec, t int) float64 {
	kv := float64(2 * spec.DModel * spec.KV() * spec.Head())
	return (float64(spec.ParamCount().PerLayer())-kv)/float64(t) + kv/float64(kvShards(spec.KV(), t))
}

// paramsPerChip is the parameters of the most loaded chip.
func (j *Job) paramsPerChip(sh *shape) float64 {
	return max(sh.params[firstStage], sh.params[lastStage])
}

// Memory estimates HBM per chip.
func (e *Estimator) Memory(j Job, m mesh.Mesh) (Memory, error) {
	sh, err := e.validShape(&j, &m)
	if err != nil {
		return Memory{}, err
	}
	return e.memory(&j, &m, &sh), nil
}

// memory is HBM per chip on the most loaded pipeline stage, its phases
// spelled out; the other stage of a pipeline, where it lays out a larger
// peak, is its LaidOut (Memory.Nominal).
func (e *Estimator) memory(j *Job, m *mesh.Mesh, sh *shape) Memory {
	sm, other := e.stages(j, m, sh)
	sm.mem.Phases, sm.mem.Peak = sm.phases.list(), sm.phases.name(sm.peak)
	if sh.p > 1 {
		other.mem.Phases, other.mem.Peak = other.phases.list(), other.phases.name(other.peak)
		if other.mem.ownNominal() > sm.mem.ownNominal() {
			sm.mem.LaidOut = &StageMemory{Stage: other.st.String(), Memory: other.mem}
		}
	}
	return sm.mem
}

// mostLoaded is the stage of the two (the same when there is one pipeline
// stage) whose HBM total is larger, the first on a tie.
func (e *Estimator) mostLoaded(j *Job, m *mesh.Mesh, sh *shape) stageMemory {
	sm, _ := e.stages(j, m, sh)
	return sm
}

// stages is mostLoaded and, with a pipeline, the other stage.
func (e *Estimator) stages(j *Job, m *mesh.Mesh, sh *shape) (most, other stageMemory) {
	first := j.stageMemory(e.stageBase(j, m, sh, firstStage), sh)
	if sh.p == 1 {
		return first, first
	}
	last := j.stageMemory(e.stageBase(j, m, sh, lastStage), sh)
	last.st = lastStage
	if last.mem.Total() > first.mem.Total() {
		return last, first
	}
	return first, last
}

// stageBase is what a pipeline stage's HBM holds whatever the batch: its
// state (the gradients scaled by TempScale), HBM and usable HBM, the
// state offloaded to the host, and the micro-batches its schedule keeps in
// flight.
type stageBase struct {
	mem      Memory
	inFlight float64    // micro-batches of activations held
	output   outputSpan // the sequences its output layer and loss work on
}

// outputSpan is the sequences a stage's output layer and loss work on at
// once (outputSeqs).
type outputSpan uint8

const (
	// outputNone: the stage has no output layer (the first stage of a
	// 1F1B or interleaved pipeline).
	outputNone outputSpan = iota
	// outputMicroBatch: one micro-batch's sequences, without a pipeline
	// (gradient accumulation runs the loss in each micro-batch's pass)
	// and on the last stage of a 1F1B or interleaved pipeline.
	outputMicroBatch
	// outputWholeBatch: the pipeline's whole batch, its share of it
	// sharded over data, pipeline, fsdp and expert, on every stage
	// (MaxText's pipelines).
	outputWholeBatch
)

// stageBase is stage st's: the first holds the most micro-batches in
// flight, and in Megatron's layout the embedding, the last the output
// layer (stageParams; setInFlight says which stages run the output layer
// and loss).
func (e *Estimator) stageBase(j *Job, m *mesh.Mesh, sh *shape, st stage) stageBase {
	ms := &m.Multislice
	chip := &ms.Slice.Chip
	mem := j.stageState(sh, st)
	mem.HBM, mem.Usable = chip.HBM, chip.UsableHBM(j.HBMHeadroom)
	mem.XLACapacity, mem.HostUsable = chip.XLACapacity(), ms.Slice.HostRAMPerChip()
	b := stageBase{mem: mem}
	e.setInFlight(&b, j, sh, st)
	return b
}

// stageState is the state of stage st's base (its Memory's Weights,
// Gradients and Optimizer, and the Host memory the offloaded ones take),
// which reads only the stage's parameters, the job's precision, offload
// and temporaries' scale, and gradient accumulation's micro-batches
// (accumulator).
func (j *Job) stageState(sh *shape, st stage) Memory {
	prec := j.Precision
	params := sh.params[st]
	mem := Memory{
		Weights:   unit.Bytes(params * float64(prec.Weight+prec.Master)),
		Gradients: unit.Bytes(params * float64(prec.Gradient)),
		Optimizer: unit.Bytes(params * float64(prec.Optimizer)),
	}
	if j.ParameterOffload {
		mem.Host += mem.Weights
		mem.Weights = 0
	}
	if j.OptimizerOffload {
		mem.Host += mem.Optimizer
		mem.Optimizer = 0
	}
	mem.Gradients = j.tempScaled(mem.Gradients) + accumulator(j, sh, params)
	return mem
}

// accumulator is the bytes per chip of gradient accumulation's sum of
// the micro-batches' gradients, params per chip of it: MaxText's
// gradient_accumulation_loss_and_grad (utils/gradient_accumulation.py,
// maxtext e591f30) carries it through its scan as jnp.zeros_like of the
// parameters, sharded as they are, so it takes the weights' dtype
// (weight_dtype), beside the gradient each micro-batch's backward makes.
// A pipeline's micro-batches and a single micro-batch have none.
func accumulator(j *Job, sh *shape, params float64) unit.Bytes {
	if sh.p > 1 || sh.m <= 1 {
		return 0
	}
	return unit.Bytes(params * float64(j.Precision.Weight))
}

// setInFlight sets b's micro-batches in flight and the span of its
// output layer and loss, for stage st: the part of the stage's base that
// reads the schedule, its chunks and the micro-batches
// (BatchMemory.Reschedule).
//
// MaxText's pipelines (GPipe and circular) run the output layer and the
// loss after the pipeline, on the whole batch, on every stage: the
// decoder applies pipeline_module to the whole batch and then
// apply_output_head to its output (layers/decoders.py Decoder.__call__,
// @e591f30c), whose logits are sharded ("activation_embed_and_logits_batch",
// "activation_length", "activation_vocab"), the batch over data, stage,
// fsdp, fsdp_transpose and expert (configs/base.yml logical_axis_rules);
// loss_fn takes cross_entropy_with_logits of the logits model.apply
// returns for the whole batch and constrains the per-token loss to the
// same batch sharding (trainers/pre_train/train.py loss_fn), and the
// pipeline's output, state_io [stages, micro-batches/stages, micro-batch,
// ...], has the stage axis on its first dimension (layers/pipeline.py
// init_states, __call__), so each stage's chips hold their share of the
// whole batch. A 1F1B or interleaved schedule (Megatron's, which MaxText
// does not run) starts a micro-batch's backward on the last stage right
// after its forward, so its loss runs there, one micro-batch at a time.
func (e *Estimator) setInFlight(b *stageBase, j *Job, sh *shape, st stage) {
	pp := e.pipe(j.Schedule, sh.p, sh.m, sh.v)
	b.inFlight, b.output = pp.inFlight, outputMicroBatch
	if st == lastStage {
		b.inFlight = pp.lastInFlight
	}
	switch {
	case sh.p == 1:
	case j.headOnEveryStage(sh.p):
		b.output = outputWholeBatch
	case st != lastStage:
		b.output = outputNone
	}
}

// outputSeqs is the sequences per chip whose logits the output layer and
// loss hold at once, for span out: a micro-batch's, or the chip's share
// of the whole batch, which the pipeline axis splits too (the batch the
// data, fsdp and expert axes leave a chip, over the stages, rounded up
// as XLA pads an uneven shard).
func outputSeqs(sh *shape, out outputSpan) float64 {
	switch out {
	case outputNone:
		return 0
	case outputWholeBatch:
		return math.Ceil(float64(sh.b) * float64(sh.m) / float64(sh.p))
	}
	return float64(sh.b)
}

// tempScaled is b scaled by TempScale (1 when it is 0).
func (j *Job) tempScaled(b unit.Bytes) unit.Bytes {
	if k := j.TempScale; k > 0 {
		return unit.Bytes(math.Round(float64(b) * k))
	}
	return b
}

// stageMemory is a stage's HBM per chip at sh.b sequences per micro-batch:
// the base's, the held activations and the largest phase (peak), whose
// buffers stay in arrays until memory spells them out.
type stageMemory struct {
	mem    Memory
	phases stagePhases
	peak   int
	st     stage // which stage (stages sets the last's)
}

func (j *Job) stageMemory(base stageBase, sh *shape) stageMemory {
	sm := stageMemory{mem: base.mem}
	mem := &sm.mem
	mem.Activations, mem.Host = j.held(&base, sh)
	j.phases(&sm.phases, sh, base.output)
	mem.Transient, sm.peak = j.transient(&sm.phases)
	return sm
}

// held is the activations a stage holds for the backward pass at sh.b
// sequences per micro-batch (scaled by TempScale) and its host memory with
// those it offloads.
func (j *Job) held(base *stageBase, sh *shape) (device, host unit.Bytes) {
	held := float64(sh.ls) * base.inFlight
	return j.tempScaled(unit.Bytes(held * sh.r.device)), base.mem.Host + unit.Bytes(held*sh.r.offload)
}

// transient scales ps's buffers (the recomputable ones too) by TempScale
// and returns the largest phase's bytes and which it is (the first on a
// tie).
func (j *Job) transient(ps *stagePhases) (unit.Bytes, int) {
	var max unit.Bytes
	peak := 0
	for i := range ps.n {
		pb := &ps.phase[i]
		for k := range pb.buf[:pb.n] {
			pb.buf[k].Bytes = j.tempScaled(pb.buf[k].Bytes)
		}
		pb.rec.Bytes = j.tempScaled(pb.rec.Bytes)
		if b := pb.bytes(); b > max || i == 0 {
			max, peak = b, i
		}
	}
	return max, peak
}

// stageReason is stageMemory(base, sh).mem.Reason(): where the state
// and the held activations alone exceed the usable HBM, ReasonHBM
// without the phases (whose buffers only add to them). It lists the
// phases in ps.
func (j *Job) stageReason(base *stageBase, sh *shape, ps *stagePhases) Reason {
	mem := base.mem
	mem.Activations, mem.Host = j.held(base, sh)
	if mem.Total() > mem.Usable {
		return ReasonHBM
	}
	j.phases(ps, sh, base.output)
	mem.Transient, _ = j.transient(ps)
	return mem.Reason()
}
