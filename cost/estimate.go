package cost

import (
	"fmt"
	"math"
	"slices"
	"time"

	"shardlab/collective"
	"shardlab/hw"
	"shardlab/mesh"
	"shardlab/model"
	"shardlab/schedule"
	"shardlab/systolic"
	"shardlab/unit"
)

// Memory is HBM per chip by component, for the most loaded chip (the
// pipeline stage that also holds an embedding or the output layer).
type Memory struct {
	Weights     unit.Bytes `json:"weights"` // includes any master copy
	Gradients   unit.Bytes `json:"gradients"`
	Optimizer   unit.Bytes `json:"optimizer"`
	Activations unit.Bytes `json:"activations"` // held for the backward pass
	// Transient is the short-lived buffers of the step's largest phase
	// (Peak), on top of the state and the held activations; Phases lists
	// each phase's buffers.
	Transient unit.Bytes `json:"transient"`
	Peak      string     `json:"peak_phase"`
	Phases    []Phase    `json:"phases"`
	// Host is what offloaded activations, parameters or optimizer state
	// occupy in host memory, per chip.
	Host   unit.Bytes `json:"host"`
	HBM    unit.Bytes `json:"hbm"`
	Usable unit.Bytes `json:"usable"` // HBM less the headroom
}

// Total is the sum of the components.
func (m Memory) Total() unit.Bytes {
	return m.Weights + m.Gradients + m.Optimizer + m.Activations + m.Transient
}

// State is weights, gradients and optimizer state.
func (m Memory) State() unit.Bytes { return m.Weights + m.Gradients + m.Optimizer }

// Fits reports whether the total stays within the usable HBM.
func (m Memory) Fits() bool { return m.Total() <= m.Usable }

// Time is a step's duration split into what the chip waits on.
type Time struct {
	// Compute is the sum of the five parts below it.
	Compute   time.Duration `json:"compute"`
	MXU       time.Duration `json:"mxu"`       // the projections and the output layer, with recompute
	Attention time.Duration `json:"attention"` // the attention core
	Vector    time.Duration `json:"vector"`    // memory-bound work at HBM bandwidth
	Optimizer time.Duration `json:"optimizer"` // the Adam update at HBM bandwidth
	Offload   time.Duration `json:"offload"`   // host transfers that do not hide under the matmuls
	// ICI is the exposed ICI communication, with the compute time the
	// hidden ICI collectives take from the chip: Contention, a part of
	// ICI (Calibration.Contention).
	ICI        time.Duration `json:"ici"`
	Contention time.Duration `json:"ici_contention"`
	DCN        time.Duration `json:"dcn"` // exposed DCN communication
	Bubble     time.Duration `json:"bubble"`
	// Sync is waiting for the slowest slice at the end of a multislice
	// step.
	Sync time.Duration `json:"sync"`
	Step time.Duration `json:"step"`
}

// Comm is one kind of collective in a step, per chip.
type Comm struct {
	Axis     mesh.Axis
	What     string
	Op       collective.Op
	Count    int // per step
	ICIBytes unit.Bytes
	DCNBytes unit.Bytes
	ICITime  time.Duration
	DCNTime  time.Duration
	// Overlapped is true for collectives that can run under compute
	// (gradient reductions, weight gathers, ring attention); tensor-parallel
	// all-reduces and pipeline sends are on the critical path.
	Overlapped bool
}

// Estimate is the cost of one step of a job on a layout.
type Estimate struct {
	Mesh   mesh.Mesh
	Job    Job
	Memory Memory
	Time   Time
	Comms  []Comm
	// Bubble is the idle fraction of the pipeline schedule.
	Bubble float64
	// ModelFLOPs is the step's model FLOPs (no recompute), HardwareFLOPs
	// with the rematerialisation.
	ModelFLOPs    unit.FLOPs
	HardwareFLOPs unit.FLOPs
	// MFU and HFU are against the chip's bf16 peak (hw.BF16), whatever
	// the job's quantization, so that plans in different formats compare.
	MFU, HFU float64
	// QuantizedMFU is the MFU against the peak of the format the
	// quantized matmuls run in (hw.Int8 or hw.FP8), 0 for a bf16 job.
	QuantizedMFU float64
	// MFUOther is the MFU in the other attention convention than the
	// job's CausalFLOPs picks: counted in full when MFU halves causal
	// attention, halved when MFU counts it in full. The step is the same.
	MFUOther float64
	// TokensPerSecondPerChip is the training throughput per chip.
	TokensPerSecondPerChip float64
	// DCNBytesPerStep is what all chips together send over DCN in a step.
	DCNBytesPerStep unit.Bytes
	// ICIBytesPerChip is what one chip sends over ICI in a step.
	ICIBytesPerChip unit.Bytes
	// MicroBatchSize is sequences per chip per micro-batch.
	MicroBatchSize int
	// MXUEfficiency is the FLOP-weighted share of MXU capacity the layer's
	// GEMMs (forward and backward, per chip) can use, from the systolic
	// closed form. MatmulEfficiency is the same over the projections' (and
	// experts' and output layer's) GEMMs, AttentionEfficiency over the
	// attention core's: the matmuls run at peak × Job.Efficiency ×
	// MatmulEfficiency, the attention core at peak × Job.Efficiency ×
	// AttentionEfficiency.
	MXUEfficiency, MatmulEfficiency, AttentionEfficiency float64
	// PaddingLoss is the FLOP-weighted share of MXU tiles left empty
	// because GEMM dimensions are not multiples of the array side, and
	// RaggedGEMMs names the GEMMs that lose the most to it.
	PaddingLoss float64
	RaggedGEMMs []string
	// TokensPerExpert is the rows each expert's grouped GEMM takes on a
	// chip per micro-batch (0 for a dense model).
	TokensPerExpert float64
}

// Estimator computes estimates, remembering what layouts share: the
// pipeline schedules it has simulated, the MXU efficiency of each GEMM
// shape, a layer's shape and a stage's parameters for its model. It is
// not safe for concurrent use.
type Estimator struct {
	// model is the last model spec that passed its checks (model.Spec is
	// a value: a search costs one spec thousands of times).
	model   model.Spec
	checked bool
	pipes   map[pipeKey]pipe
	effs    map[effKey]float64
	maxes   map[int]float64 // ExpectedMaxNormal by n
	mxus    map[mxuKey]mxuStats
	layers  map[layerKey]layerShape  // for model
	params  map[paramsKey][2]float64 // for model
	comms   []Comm                   // Estimate's scratch
}

// maxNormal is ExpectedMaxNormal(n), integrated once per n.
func (e *Estimator) maxNormal(n int) float64 {
	if v, ok := e.maxes[n]; ok {
		return v
	}
	v := ExpectedMaxNormal(n)
	e.maxes[n] = v
	return v
}

type pipe struct {
	bubble       float64
	inFlight     float64 // micro-batches (whole stages' worth) held by the first stage
	lastInFlight float64 // and by the last
}

// NewEstimator returns an empty estimator.
func NewEstimator() *Estimator {
	return &Estimator{pipes: map[pipeKey]pipe{}, effs: map[effKey]float64{}, maxes: map[int]float64{}, mxus: map[mxuKey]mxuStats{},
		layers: map[layerKey]layerShape{}, params: map[paramsKey][2]float64{}}
}

// validate is j.validate, with the model's own checks run once per spec.
func (e *Estimator) validate(j Job) error {
	if err := j.validateSettings(); err != nil {
		return err
	}
	if e.checked && e.model == j.Model {
		return nil
	}
	if err := j.Model.Validate(); err != nil {
		return err
	}
	e.model, e.checked = j.Model, true
	clear(e.layers) // they are the last model's
	clear(e.params)
	return nil
}

// EstimateStep is NewEstimator().Estimate.
func EstimateStep(j Job, m mesh.Mesh) (Estimate, error) { return NewEstimator().Estimate(j, m) }

// pipeKey names a simulated schedule: kind, stages, micro-batches, chunks.
type pipeKey struct {
	kind    schedule.Kind
	p, m, v int
}

func (e *Estimator) pipe(k schedule.Kind, p, m, v int) pipe {
	if p == 1 {
		return pipe{inFlight: 1, lastInFlight: 1}
	}
	key := pipeKey{k, p, m, v}
	if r, ok := e.pipes[key]; ok {
		return r
	}
	s, err := schedule.NewChunked(k, p, m, v)
	if err != nil {
		panic(err) // validated by shapeOf
	}
	tl := s.Simulate(1, 2, 0)
	r := pipe{bubble: tl.Bubble(), inFlight: float64(tl.PeakInFlight[0]) / float64(v), lastInFlight: float64(tl.PeakInFlight[p-1]) / float64(v)}
	e.pipes[key] = r
	return r
}

// shape is the per-chip view of a job on a layout.
type shape struct {
	d, f, t, p, c int // axis degrees
	e             int // expert degree
	m             int // micro-batches
	b             int // sequences per chip per micro-batch
	s             int // tokens per chip per sequence (Seq / context)
	ls            int // layers per stage
	v             int // chunks of layers per device (interleaved, circular)
	layerShape
	r remat // the layer's footprint at b sequences
	// params is stageParams of the first and the last stage.
	params [2]float64
}

// layerShape is a decoder layer on a chip whatever the batch: the layer,
// its backward walk, and layerInUse's layer and matrix.
type layerShape struct {
	layer              layerView
	walk               backwardSteps
	inUse, inUseMatrix float64
}

// layerShape is sh's layer.
func (j Job) layerShape(sh shape) layerShape {
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
	activation   int
	t, s, seq, e int
}

// layerShape is j.layerShape, kept per layerKey for the estimator's model.
func (e *Estimator) layerShape(j Job, sh shape) layerShape {
	k := layerKey{j.Remat, j.Custom, j.CapacityFactor, j.Attention, j.Precision.Activation, sh.t, sh.s, j.Seq, sh.e}
	if ls, ok := e.layers[k]; ok {
		return ls
	}
	ls := j.layerShape(sh)
	e.layers[k] = ls
	return ls
}

// shapeOf is the package's shapeOf, its layer from the estimator's cache
// (the job's model is the one validate last passed).
func (e *Estimator) shapeOf(j Job, m mesh.Mesh) (shape, error) {
	sh, err := shapeWith(j, m, e.layerShape)
	if err != nil {
		return sh, err
	}
	k := paramsKey{sh.t, sh.f, sh.e, sh.p, sh.ls}
	params, ok := e.params[k]
	if !ok {
		params = j.stagesParams(sh)
		e.params[k] = params
	}
	sh.params = params
	return sh, nil
}

// paramsKey is what stageParams depends on besides the model.
type paramsKey struct{ t, f, e, p, ls int }

// stagesParams is stageParams of the first and the last stage.
func (j Job) stagesParams(sh shape) [2]float64 {
	return [2]float64{j.stageParams(sh, firstStage), j.stageParams(sh, lastStage)}
}

// withBatch is sh with b sequences per chip per micro-batch.
func (j Job) withBatch(sh shape, b int) shape {
	sh.b = b
	sh.r = j.rematIn(sh.layer, sh.b, sh.s, j.Seq)
	return sh
}

func shapeOf(j Job, m mesh.Mesh) (shape, error) {
	sh, err := shapeWith(j, m, Job.layerShape)
	if err == nil {
		sh.params = j.stagesParams(sh)
	}
	return sh, err
}

// shapeWith is shapeOf with the layer from layer.
func shapeWith(j Job, m mesh.Mesh, layer func(Job, shape) layerShape) (shape, error) {
	sh := shape{
		d: m.Size(mesh.Data), f: m.Size(mesh.FSDP), t: m.Size(mesh.Tensor),
		p: m.Size(mesh.Pipeline), c: m.Size(mesh.Context), e: m.Size(mesh.Expert), m: j.MicroBatches, v: 1,
	}
	if j.Schedule.Chunked() {
		sh.v = max(j.Chunks, 1)
	}
	spec := j.Model
	switch {
	case !TensorDivides(spec, sh.t):
		return sh, &Infeasible{Reason: ReasonHeads, Detail: fmt.Sprintf("%d heads, %d KV heads, d_ff %d over tensor=%d", spec.Heads, spec.KV(), spec.DFF, sh.t)}
	case spec.Layers%(sh.p*sh.v) != 0:
		return sh, &Infeasible{Reason: ReasonLayers, Detail: fmt.Sprintf("%d layers over pipeline=%d x %d chunks", spec.Layers, sh.p, sh.v)}
	case sh.p > 1 && j.Schedule.Chunked() && sh.m%sh.p != 0:
		return sh, &Infeasible{Reason: ReasonMicroBatch, Detail: fmt.Sprintf("%s needs micro-batches (%d) a multiple of pipeline=%d", j.Schedule, sh.m, sh.p)}
	case !ExpertDivides(spec.Experts, sh.e):
		return sh, &Infeasible{Reason: ReasonExperts, Detail: expertDetail(spec.Experts, sh.e)}
	case j.Seq%sh.c != 0:
		return sh, &Infeasible{Reason: ReasonSeq, Detail: fmt.Sprintf("%d tokens over context=%d", j.Seq, sh.c)}
	case sh.p == 1 && sh.m > 1:
		return sh, &Infeasible{Reason: ReasonMicroBatch, Detail: fmt.Sprintf("%d micro-batches", sh.m)}
	}
	// the expert axis shards the batch too (MaxText's activation_batch
	// rule lists data, fsdp and expert)
	shards := sh.d * sh.f * sh.e * sh.m
	if j.GlobalBatch%shards != 0 {
		return sh, &Infeasible{Reason: ReasonBatch, Detail: batchDetail(j.GlobalBatch, sh)}
	}
	sh.s = j.Seq / sh.c
	sh.ls = spec.Layers / sh.p
	sh.layerShape = layer(j, sh)
	return j.withBatch(sh, j.GlobalBatch/shards), nil
}

// batchDetail says why a global batch does not split over sh's shards.
func batchDetail(globalBatch int, sh shape) string {
	if sh.e > 1 {
		return fmt.Sprintf("%d sequences over data %d x fsdp %d x expert %d x %d micro-batches", globalBatch, sh.d, sh.f, sh.e, sh.m)
	}
	return fmt.Sprintf("%d sequences over data %d x fsdp %d x %d micro-batches", globalBatch, sh.d, sh.f, sh.m)
}

// MicroBatchSize is j's sequences per chip per micro-batch on m (the
// batch is sharded over data, fsdp and expert), or the *Infeasible error
// of a layout that cannot run j.
func MicroBatchSize(j Job, m mesh.Mesh) (int, error) {
	sh, err := shapeOf(j, m)
	return sh.b, err
}

// stage picks a pipeline stage for per-stage accounting.
type stage int

const (
	firstStage stage = iota
	lastStage
)

// stageParams is the parameters one chip of a stage holds: the stage's
// layers, plus the input embedding (first stage) or the final norm and
// output layer (last stage; a tied output keeps its own copy of the
// embedding there), all of it with one stage; sharded over tensor and fsdp.
// With more tensor shards than key/value heads, each K/V head is
// replicated on t/KV chips (Megatron's GQA layout).
func (j Job) stageParams(sh shape, st stage) float64 {
	pc := j.Model.ParamCount()
	var ends int64
	switch {
	case sh.p == 1:
		ends = pc.Embedding + pc.Output + pc.FinalNorm
	case st == firstStage:
		ends = pc.Embedding
	case j.Model.TiedEmbeddings:
		ends = pc.Embedding + pc.FinalNorm
	default:
		ends = pc.Output + pc.FinalNorm
	}
	kv := float64(2 * j.Model.DModel * j.Model.KV() * j.Model.Head())
	layer := (float64(pc.PerLayer())-kv)/float64(sh.t) + kv/float64(kvShards(j.Model.KV(), sh.t))
	layers := float64(sh.ls) * layer
	if j.Model.MoE() {
		moe := j.moeLayersPerStage(sh)
		layers = (float64(sh.ls)-moe)*layer + moe*j.moeLayerParams(sh)
	}
	// MaxText shards the embed dimension of every weight but the routed
	// experts' over fsdp and expert (base.yml's embed rule lists both)
	return (layers+float64(ends)/float64(sh.t))/float64(sh.f*sh.e) + j.routedPerChip(sh)
}

// paramsPerChip is the parameters of the most loaded chip.
func (j Job) paramsPerChip(sh shape) float64 {
	return max(sh.params[firstStage], sh.params[lastStage])
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

// Memory estimates HBM per chip.
func (e *Estimator) Memory(j Job, m mesh.Mesh) (Memory, error) {
	if err := e.validate(j); err != nil {
		return Memory{}, err
	}
	sh, err := e.shapeOf(j, m)
	if err != nil {
		return Memory{}, err
	}
	return e.memory(j, m, sh), nil
}

// memory is HBM per chip on the most loaded pipeline stage, its phases
// spelled out.
func (e *Estimator) memory(j Job, m mesh.Mesh, sh shape) Memory {
	sm := e.mostLoaded(j, m, sh)
	sm.mem.Phases, sm.mem.Peak = sm.phases.list(), sm.phases.name(sm.peak)
	return sm.mem
}

// mostLoaded is the stage of the two (the same when there is one pipeline
// stage) whose HBM total is larger, the first on a tie.
func (e *Estimator) mostLoaded(j Job, m mesh.Mesh, sh shape) stageMemory {
	first := j.stageMemory(e.stageBase(j, m, sh, firstStage), sh, firstStage)
	if sh.p == 1 {
		return first
	}
	if last := j.stageMemory(e.stageBase(j, m, sh, lastStage), sh, lastStage); last.mem.Total() > first.mem.Total() {
		return last
	}
	return first
}

// stageBase is what a pipeline stage's HBM holds whatever the batch: its
// state (the gradients scaled by TempScale), HBM and usable HBM, the
// state offloaded to the host, and the micro-batches its schedule keeps in
// flight.
type stageBase struct {
	mem      Memory
	inFlight float64 // micro-batches of activations held
	logits   float64 // micro-batches of logits held
}

// stageBase is stage st's: the first holds the most micro-batches in
// flight and the embedding, the last the output layer and the logits.
func (e *Estimator) stageBase(j Job, m mesh.Mesh, sh shape, st stage) stageBase {
	ms := m.Multislice
	chip := ms.Slice.Chip
	prec := j.Precision
	params := sh.params[st]
	mem := Memory{
		Weights:   unit.Bytes(params * float64(prec.Weight+prec.Master)),
		Gradients: unit.Bytes(params * float64(prec.Gradient)),
		Optimizer: unit.Bytes(params * float64(prec.Optimizer)),
		HBM:       chip.HBM,
		Usable:    chip.UsableHBM(j.HBMHeadroom),
	}
	if j.ParameterOffload {
		mem.Host += mem.Weights
		mem.Weights = 0
	}
	if j.OptimizerOffload {
		mem.Host += mem.Optimizer
		mem.Optimizer = 0
	}
	mem.Gradients = j.tempScaled(mem.Gradients)
	pp := e.pipe(j.Schedule, sh.p, sh.m, sh.v)
	b := stageBase{mem: mem, inFlight: pp.inFlight, logits: 1}
	if st == lastStage {
		b.inFlight = pp.lastInFlight
	}
	// Where every forward runs before the first backward (GPipe, and
	// MaxText's circular pipeline), the last stage holds each of its
	// micro-batches' logits until that micro-batch's backward.
	if sh.p > 1 && (j.Schedule == schedule.GPipe || j.Schedule == schedule.Circular) {
		b.logits = pp.lastInFlight
	}
	return b
}

// tempScaled is b scaled by TempScale (1 when it is 0).
func (j Job) tempScaled(b unit.Bytes) unit.Bytes {
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
}

func (j Job) stageMemory(base stageBase, sh shape, st stage) stageMemory {
	sm := stageMemory{mem: base.mem}
	mem := &sm.mem
	held := float64(sh.ls) * base.inFlight
	mem.Activations = j.tempScaled(unit.Bytes(held * sh.r.device))
	mem.Host += unit.Bytes(held * sh.r.offload)
	sm.phases = j.phases(sh, st, base.logits)
	for i := range sm.phases.n {
		pb := &sm.phases.phase[i]
		for k := range pb.buf[:pb.n] {
			pb.buf[k].Bytes = j.tempScaled(pb.buf[k].Bytes)
		}
		if b := pb.bytes(); b > mem.Transient || i == 0 {
			mem.Transient, sm.peak = b, i
		}
	}
	return sm
}

// Estimate computes memory, time and traffic for one step of j on m. A job
// the layout cannot run returns an *Infeasible error; a job that does not
// fit HBM is still estimated and reports Memory.Fits() false.
func (e *Estimator) Estimate(j Job, m mesh.Mesh) (Estimate, error) {
	b, err := e.Bound(j, m)
	if err != nil {
		return Estimate{}, err
	}
	return e.Finish(b), nil
}

// Finish completes the estimate b began: the memory with its phases, the
// collectives, the step, MFU and throughput.
func (e *Estimator) Finish(b Bound) Estimate {
	est, sh := b.est, b.sh
	j, m := est.Job, est.Mesh
	chip := m.Multislice.Slice.Chip
	est.Memory = e.memory(j, m, sh)
	// the collectives gather in the estimator's scratch and leave in one
	// slice of their own (nil when there are none)
	est.Comms = e.comms[:0]
	e.communicate(&est, sh)
	e.comms = est.Comms
	est.Comms = nil
	if len(e.comms) > 0 {
		est.Comms = slices.Clone(e.comms)
	}
	est.Time.Step = est.Time.Compute + est.Time.Bubble + est.Time.ICI + est.Time.DCN + est.Time.Sync

	n := m.Chips()
	chips := float64(n)
	step := est.Time.Step.Seconds()
	bf16, _ := chip.Peak(hw.BF16)
	peak := float64(bf16) * chips
	tokens := float64(j.GlobalBatch) * float64(j.Seq)
	est.MFU = float64(est.ModelFLOPs) / (peak * step)
	if j.Quantization != QuantNone {
		q, _ := j.MatmulPeak(chip)
		est.QuantizedMFU = float64(est.ModelFLOPs) / (q * chips * step)
	}
	est.MFUOther = j.Model.FLOPsPerToken(j.Seq, !j.CausalFLOPs) * tokens / (peak * step)
	est.HFU = float64(est.HardwareFLOPs) / (peak * step)
	est.TokensPerSecondPerChip = tokensPerSecondPerChip(j, n, est.Time.Step)
	for _, cm := range est.Comms {
		est.ICIBytesPerChip += cm.ICIBytes
		est.DCNBytesPerStep += cm.DCNBytes * unit.Bytes(n)
	}
	return est
}

// MFUPeaks is the MFU with the peaks it is against, for text: "52.1% of
// the bf16 peak", and for a quantized job also the MFU against its
// format's peak ("99.6% of the bf16 peak, 49.8% of the int8 peak").
func (e Estimate) MFUPeaks() string {
	s := fmt.Sprintf("%.1f%% of the %s peak", 100*e.MFU, hw.BF16)
	if e.Job.Quantization != QuantNone {
		s += fmt.Sprintf(", %.1f%% of the %s peak", 100*e.QuantizedMFU, e.Job.Quantization.Format())
	}
	return s
}

// MatmulPeak is the chip's peak rate for the job's matmuls, or an error
// when the chip publishes none for the job's quantization.
func (j Job) MatmulPeak(chip hw.Chip) (float64, error) {
	peak, ok := chip.Peak(j.Quantization.Format())
	if !ok {
		return 0, fmt.Errorf("cost: quantization %s: %s publishes no %s peak, want none (bf16): %w", j.Quantization, chip.Name, j.Quantization, ErrJob)
	}
	return float64(peak), nil
}

// compute fills in the FLOPs and the compute part of the step: the
// matmuls at the quantized peak times the MXU efficiency of their shapes,
// the attention core (flash attention skips the masked half of causal
// attention, whatever convention MFU counts in) at the bf16 peak times
// the MXU efficiency of its own GEMMs' shapes (a head of 128 fills half a
// 256-wide array), both times the residual efficiency, plus the memory-bound work at HBM bandwidth, and
// host-offload transfers that do not hide under the matmuls.
func (e *Estimator) compute(est *Estimate, sh shape) error {
	j, m := est.Job, est.Mesh
	chip := m.Multislice.Slice.Chip
	spec := j.Model
	chips := float64(m.Chips())
	tokens := float64(j.GlobalBatch) * float64(j.Seq)
	layers := float64(spec.Layers)
	r := sh.r

	matmul := 6 * float64(spec.MatmulParams()) * tokens
	matmul += j.expertPadding(tokens)
	attnFwd := spec.AttentionFLOPsPerToken(j.Seq) * tokens
	if j.Attention.SkipsMasked() {
		attnFwd /= 2 // the kernel skips blocks above the causal diagonal
	}
	recompute := r.recompute * layers * tokens
	attn := 3 * attnFwd
	if r.attention {
		attn += attnFwd
	}
	est.ModelFLOPs = unit.FLOPs(spec.FLOPsPerToken(j.Seq, j.CausalFLOPs) * tokens)
	est.HardwareFLOPs = unit.FLOPs(matmul + recompute + attn)

	mx, err := e.mxu(j, sh, systolic.PresetFor(chip))
	if err != nil {
		return err
	}
	est.MXUEfficiency, est.PaddingLoss, est.RaggedGEMMs = mx.efficiency, mx.padding, mx.ragged
	est.MatmulEfficiency, est.AttentionEfficiency = mx.matmul, mx.attention
	peak, _ := j.MatmulPeak(chip)
	t := &est.Time
	bf16Eff := mx.matmul * j.efficiency(chip) // a bf16 GEMM's share of the bf16 peak
	mmEff := bf16Eff
	if j.Quantization != QuantNone {
		mmEff *= j.calibration().Quantized
	}
	// The dropless sort, permutation and combine are data movement in the
	// activation dtype, expressed as bf16 GEMM time: quantization (MaxText's
	// fp8_full quantizes the dot_generals and the grouped GEMMs, qwix rules
	// in layers/quantizations.py and layers/moe.py @e591f30c) does not
	// speed them up. Nor does tensor parallelism split them: the MoE
	// layer's tokens are sharded over the batch axes and the sequence's
	// (activation_batch: data, fsdp, fsdp_transpose, expert;
	// activation_norm_length: tensor_sequence, context; base.yml
	// logical_axis_rules, layers/moe.py get_routed_moe_shardings
	// @e591f30c), not over tensor, so every tensor rank routes and sorts the
	// same tokens while the grouped GEMMs split each expert's width.
	sortPerChip := j.droplessExtra(tokens) * float64(sh.t) / chips
	t.MXU = seconds((matmul+recompute)/chips/(peak*mmEff) + sortPerChip/(float64(chip.PeakBF16)*bf16Eff))
	t.Attention = seconds(attn / chips / (float64(chip.PeakBF16) * mx.attention * j.efficiency(chip) * j.calibration().Attention))
	t.Vector = seconds(j.vectorBytes(sh, r) / float64(chip.HBMBandwidth))
	t.Optimizer = seconds(j.optimizerBytes(sh) / float64(chip.HBMBandwidth))
	if pcie := j.offloadBytes(sh, r, est.Memory); pcie > 0 && chip.PCIe > 0 {
		t.Offload = max(0, seconds(pcie/float64(chip.PCIe))-t.MXU-t.Attention)
	}
	t.Compute = t.MXU + t.Attention + t.Vector + t.Optimizer + t.Offload
	return nil
}

// vectorBytes is the HBM traffic per chip per step of the memory-bound
// work the MXU does not do: per layer and token, each norm reads and
// writes the residual stream, the two residual sums read two operands and
// write one (a parallel block's one sum reads three), rotary embedding rewrites Q and K, and the MLP's activation
// reads its inputs and writes its product; the backward pass moves about
// twice the forward's bytes and every policy but none redoes the forward's
// (Korthikanti et al. 2022 count the same tensors). The output layer's
// softmax and loss read and write the logits in fp32 about four times.
func (j Job) vectorBytes(sh shape, r remat) float64 {
	spec := j.Model
	e := float64(j.Precision.Activation)
	d := float64(spec.DModel)
	q := float64(spec.Heads * spec.Head())
	kv := float64(spec.KV() * spec.Head())
	act := 2 * float64(spec.DFF)
	if spec.GatedMLP {
		act = 3 * float64(spec.DFF)
	}
	sums := 2 * 3 * d // two residual sums, each reading two operands and writing one
	if spec.ParallelBlock {
		sums = 4 * d // one, reading three and writing one
	}
	perToken := e * (float64(spec.Norms())*2*d + sums + 2*(q+kv) + act) / float64(sh.t)
	passes := 3.0
	if j.Remat != RematNone {
		passes++
	}
	tokens := float64(sh.b) * float64(sh.s) * float64(sh.m)
	bytes := float64(sh.ls) * tokens * perToken * passes
	bytes += tokens * float64(spec.Vocab) / float64(sh.t) * 4 * 4
	return bytes
}

// optimizerBytes is the HBM traffic of the Adam update per chip: it reads
// the weights, gradients and both moments and writes the weights and
// moments back.
func (j Job) optimizerBytes(sh shape) float64 {
	p := j.Precision
	return j.paramsPerChip(sh) * float64(2*(p.Weight+p.Master)+p.Gradient+2*p.Optimizer)
}

// offloadBytes is what moves over PCIe per chip per step: offloaded
// activations out in the forward pass and back in the backward, and
// offloaded parameters and optimizer state in and out once.
func (j Job) offloadBytes(sh shape, r remat, mem Memory) float64 {
	x := 2 * float64(sh.ls) * float64(sh.m) * r.offload
	if j.ParameterOffload || j.OptimizerOffload {
		x += 2 * float64(mem.Host)
	}
	return x
}

// communicate adds every collective and the exposed ICI and DCN time.
func (e *Estimator) communicate(est *Estimate, sh shape) {
	j, m := est.Job, est.Mesh
	t := &tally{est: est, sh: sh, dcnLine: m.TierLink(hw.DCN).Collective(), latency: j.calibration().DCNLatency}
	prec := j.Precision
	params := j.paramsPerChip(sh)
	grads := unit.Bytes(params * float64(prec.Gradient))
	t.dataParallel(grads)
	t.fsdp(grads, unit.Bytes(params*float64(min(prec.Weight, prec.Activation))))
	act := unit.Bytes(float64(sh.b) * float64(sh.s) * float64(j.Model.DModel) * float64(prec.Activation))
	first := len(est.Comms)
	tpTime := e.tensorParallel(est, sh, act, t.add)
	var tpAll time.Duration
	for _, c := range est.Comms[first:] {
		tpAll += c.ICITime
	}
	t.context()
	t.pipeline(act)
	t.experts()

	// Overlap: collectives marked overlapped hide under the compute of all
	// but one layer; gradient reductions can only hide under the backward
	// pass of the last micro-batch; each tier (ICI, DCN) is its own link.
	compute := est.Time.Compute.Seconds()
	backward := compute * 2 / 3
	ls := float64(sh.ls)
	window := seconds(compute * (ls - 1) / ls)
	bwdWindow := seconds(backward / float64(sh.m) * (ls - 1) / ls)
	exposed := func(grad, gather time.Duration) time.Duration {
		total := grad + gather
		x := max(total-window, grad-bwdWindow, time.Duration(float64(total)/ls))
		return min(x, total)
	}
	ici := exposed(t.gradICI, t.gatherICI)
	// What hides still takes its share of the chip (Calibration.Contention):
	// the FSDP gathers and reductions, ring attention's K/V and the tensor-
	// parallel collectives under their matmuls. DCN transfers go through
	// the host and take none.
	hidden := t.gradICI + t.gatherICI - ici + max(tpAll-tpTime, 0)
	est.Time.Contention = seconds(hidden.Seconds() * j.calibration().Contention)
	est.Time.ICI = ici + est.Time.Contention + tpTime + t.ppICI + t.afterICI
	est.Time.DCN = exposed(t.gradDCN, t.gatherDCN) + t.ppDCN + t.afterDCN
}

// tally collects a step's collectives into est.Comms and their times by
// how they can overlap: gradient reductions (under the backward pass),
// gathers (under any compute), after the loop and pipeline sends (on the
// critical path), per tier.
type tally struct {
	est                  *Estimate
	sh                   shape
	dcnLine              collective.Link
	latency              time.Duration
	gradICI, gradDCN     time.Duration
	gatherICI, gatherDCN time.Duration
	afterICI, afterDCN   time.Duration
	ppICI, ppDCN         time.Duration
}

// dcn is the link of a ring across n slices: n−1 steps per phase at the
// line rate (mesh's DCN link), each paying the DCN latency.
func (t *tally) dcn(n int) collective.Link {
	l := t.dcnLine
	l.Hops, l.HopLatency = max(n-1, 0), t.latency
	return l
}

// perLayer is op on size split into one collective per scanned layer, as
// XLA issues the weight gathers, gradient reductions and (with its
// data-parallel all-reduce optimisation) the cross-slice all-reduces.
func (t *tally) perLayer(op collective.Op, size unit.Bytes, nICI int, ici collective.Link, nDCN int) collective.Cost {
	return collective.Hierarchical(op, size/unit.Bytes(t.sh.ls), nICI, ici, nDCN, t.dcn(nDCN)).Scale(t.sh.ls)
}

func (t *tally) add(axis mesh.Axis, what string, op collective.Op, count int, cost collective.Cost, overlapped bool) {
	if count == 0 || cost == (collective.Cost{}) {
		return
	}
	cost = cost.Scale(count)
	t.est.Comms = append(t.est.Comms, Comm{Axis: axis, What: what, Op: op, Count: count,
		ICIBytes: cost.ICIBytes, DCNBytes: cost.DCNBytes, ICITime: cost.ICITime, DCNTime: cost.DCNTime, Overlapped: overlapped})
}

// dataParallel: gradients summed over the replicas (data and context), one
// all-reduce per scanned layer (MaxText's multislice scripts set
// xla_tpu_enable_data_parallel_all_reduce_opt, which pipelines them across
// the loop's iterations), each paying the ring's DCN latency. They are on
// the critical path: in MaxText's v5e series (README.md @ e47fa1b5d) the
// multislice loss grows as the per-device batch shrinks, as it does when
// the all-reduce's time is not hidden.
func (t *tally) dataParallel(grads unit.Bytes) {
	m, sh := t.est.Mesh, t.sh
	if sh.d*sh.c <= 1 {
		return
	}
	d, c := m.Degree(mesh.Data), m.Degree(mesh.Context)
	cost := t.perLayer(collective.AllReduce, grads, d.ICI*c.ICI, m.Link(mesh.Data, mesh.Context).Collective(), d.DCN*c.DCN)
	t.add(mesh.Data, "gradient all-reduce", collective.AllReduce, 1, cost, false)
	t.afterICI += cost.ICITime
	t.afterDCN += cost.DCNTime
}

// fsdp: gather the weights (in the compute dtype) before forward and again
// before backward, reduce-scatter the gradients, per micro-batch.
func (t *tally) fsdp(grads, gathered unit.Bytes) {
	m, sh := t.est.Mesh, t.sh
	if sh.f*sh.e <= 1 {
		return
	}
	f := m.Degree(mesh.FSDP)
	fl := m.Link(mesh.FSDP).Collective()
	var ag, rs collective.Cost
	if routed := t.est.Job.routedPerChip(sh); sh.e > 1 || routed > 0 {
		// the routed experts over fsdp, the rest over fsdp and expert
		e := m.Degree(mesh.Expert)
		share := unit.Bytes(0)
		if params := t.est.Job.paramsPerChip(sh); params > 0 {
			share = unit.Bytes(float64(gathered) * routed / params)
		}
		gshare := unit.Bytes(float64(grads) * float64(share) / max(float64(gathered), 1))
		ag = t.perLayer(collective.AllGather, share*unit.Bytes(sh.f), f.ICI, fl, f.DCN)
		rs = t.perLayer(collective.ReduceScatter, gshare*unit.Bytes(sh.f), f.ICI, fl, f.DCN)
		fe := m.Link(mesh.FSDP, mesh.Expert).Collective()
		n := unit.Bytes(sh.f * sh.e)
		ag = addCost(ag, t.perLayer(collective.AllGather, (gathered-share)*n, f.ICI*e.ICI, fe, f.DCN*e.DCN))
		rs = addCost(rs, t.perLayer(collective.ReduceScatter, (grads-gshare)*n, f.ICI*e.ICI, fe, f.DCN*e.DCN))
	} else {
		ag = t.perLayer(collective.AllGather, gathered*unit.Bytes(sh.f), f.ICI, fl, f.DCN)
		rs = t.perLayer(collective.ReduceScatter, grads*unit.Bytes(sh.f), f.ICI, fl, f.DCN)
	}
	t.add(mesh.FSDP, "weight all-gather", collective.AllGather, 2*sh.m, ag, true)
	t.add(mesh.FSDP, "gradient reduce-scatter", collective.ReduceScatter, sh.m, rs, true)
	t.gatherICI += ag.Scale(2 * sh.m).ICITime
	t.gatherDCN += ag.Scale(2 * sh.m).DCNTime
	t.gradICI += rs.Scale(sh.m).ICITime
	t.gradDCN += rs.Scale(sh.m).DCNTime
}

// context: ring attention passes every chip's K and V blocks around the
// ring — the bytes of an all-gather of K and V — in forward, and K, V and
// their gradients in backward.
func (t *tally) context() {
	j, m, sh := t.est.Job, t.est.Mesh, t.sh
	if sh.c <= 1 {
		return
	}
	spec := j.Model
	c := m.Degree(mesh.Context)
	kv := unit.Bytes(2 * float64(sh.b) * float64(sh.s) * float64(spec.KV()*spec.Head()) * float64(j.Precision.Activation) / float64(kvShards(spec.KV(), sh.t)))
	per := 3
	if sh.r.attention {
		per = 4
	}
	cost := collective.Hierarchical(collective.AllGather, kv*unit.Bytes(sh.c), c.ICI, m.Link(mesh.Context).Collective(), c.DCN, t.dcn(c.DCN))
	n := per * sh.ls * sh.m
	t.add(mesh.Context, "ring attention K/V", collective.AllGather, n, cost, true)
	t.gatherICI += cost.Scale(n).ICITime
	t.gatherDCN += cost.Scale(n).DCNTime
}

// pipeline: each micro-batch's activations go forward across every stage
// boundary and their gradients come back. The fill and drain put 2(p−1)
// sends on the critical path (schedule's TestSendDelaysTheFill); the rest
// overlap with other micro-batches' compute.
func (t *tally) pipeline(act unit.Bytes) {
	m, sh := t.est.Mesh, t.sh
	if sh.p <= 1 {
		return
	}
	pa := m.Degree(mesh.Pipeline)
	msg := act / unit.Bytes(sh.t)
	perChip := 2 * sh.m * sh.v // every chunk boundary, forward and back
	iciSend := collective.Time(collective.SendRecv, 2, msg, m.TierLink(hw.ICI).Collective())
	dcnSend := collective.Time(collective.SendRecv, 2, msg, t.dcn(2))
	dcnBoundaries, iciBoundaries := pa.DCN-1, sh.p-pa.DCN
	// With v chunks a micro-batch crosses p·v−1 boundaries: v passes of
	// the p−1 between stages, and v−1 sends from the last stage round to
	// the first, over DCN when the stages span slices.
	iciAll, dcnAll := sh.v*iciBoundaries, sh.v*dcnBoundaries
	if pa.DCN > 1 {
		dcnAll += sh.v - 1
	} else {
		iciAll += sh.v - 1
	}
	bytes := collective.Bytes(collective.SendRecv, 2, msg) * unit.Bytes(2*sh.m)
	cost := collective.Cost{
		ICIBytes: bytes * unit.Bytes(iciAll) / unit.Bytes(sh.p),
		DCNBytes: bytes * unit.Bytes(dcnAll) / unit.Bytes(sh.p),
		ICITime:  iciSend * time.Duration(perChip),
		DCNTime:  dcnSend * time.Duration(perChip),
	}
	if iciBoundaries == 0 {
		cost.ICITime = 0
	}
	if dcnBoundaries == 0 {
		cost.DCNTime = 0
	}
	t.add(mesh.Pipeline, "stage activations", collective.SendRecv, 1, cost, false)
	t.ppICI = 2 * time.Duration(iciBoundaries) * iciSend
	t.ppDCN = 2 * time.Duration(dcnBoundaries) * dcnSend
}

// tensorParallel adds the tensor-parallel collectives and returns their
// exposed time. Each layer all-reduces its activations twice in the
// forward pass (after attention and after the MLP; with sequence
// parallelism an all-gather and a reduce-scatter of the same bytes),
// twice in the backward pass (Narayanan et al. 2021 §2.3), and again in
// the forward it recomputes. They are not all on the critical path:
// decomposed into t ring steps, each forward collective overlaps the
// projection it feeds or drains (collective matmul: Wang et al., ASPLOS
// 2023, "Overlap communication with dependent computation via
// decomposition"), and each backward one the weight-gradient matmul that
// does not depend on it; one ring step in t stays exposed either way.
func (e *Estimator) tensorParallel(est *Estimate, sh shape, act unit.Bytes, add func(mesh.Axis, string, collective.Op, int, collective.Cost, bool)) time.Duration {
	if sh.t <= 1 {
		return 0
	}
	if est.Job.Model.ParallelBlock {
		return e.parallelTensor(est, sh, act, add)
	}
	j, m := est.Job, est.Mesh
	spec := j.Model
	per := 4
	fwd := 1.0
	if r := sh.r; r.recompute > 0 || r.attention {
		per, fwd = 6, 2
	}
	cost := collective.Hierarchical(collective.AllReduce, act, sh.t, m.Link(mesh.Tensor).Collective(), 1, collective.Link{})
	n := per * sh.ls * sh.m
	moeN, moeCost := j.expertOutputAllReduce(est, sh, fwd)
	add(mesh.Tensor, "activation all-reduce", collective.AllReduce, n-moeN, cost, false)
	if moeN > 0 {
		add(mesh.Tensor, "expert output all-reduce", collective.AllReduce, moeN, moeCost, false)
	}

	// The matmuls each all-reduce can hide under, per layer and micro-batch.
	d, q := float64(spec.DModel), float64(spec.Heads*spec.Head())
	kv := float64(spec.KV() * spec.Head())
	mlp := 2.0
	if spec.GatedMLP {
		mlp = 3
	}
	tokens := float64(sh.b) * float64(sh.s) // per micro-batch, shared by the tensor group
	attnMM := 2 * d * (2*q + 2*kv) * tokens / float64(sh.t)
	mlpMM := 2 * d * mlp * float64(spec.DFF) * tokens / float64(sh.t)
	perFLOP := est.Time.MXU.Seconds() / mxuFLOPsPerChip(est, sh)
	comm := cost.ICITime.Seconds()
	hide := func(mm float64) float64 { return max(comm/float64(sh.t), comm-mm*perFLOP) }
	layer := (fwd + 1) * (hide(attnMM) + hide(mlpMM))
	exposed := layer * float64(sh.ls) * float64(sh.m)
	if moeN > 0 {
		// the expert output's all-reduce is larger than the activation's
		// it stands in for: what it adds is exposed as well, overlapped
		// no more than the one it replaces
		more := moeCost.ICITime.Seconds() - comm
		exposed += float64(moeN) * max(more/float64(sh.t), more-mlpMM*perFLOP)
	}
	return seconds(exposed)
}

// parallelTensor is tensorParallel for a parallel block. Between layers
// the activations are sharded over tensor (MaxText's activation_embed
// rule), so a layer all-gathers its one normed input for both blocks and
// reduce-scatters each block's output: one all-gather and two
// reduce-scatters in the forward pass, where a sequential layer does two
// of each (its two all-reduces). The backward pass is the forward's
// transpose: the two blocks' output gradients are one tensor, all-gathered
// once, and the input's gradient, summed over both blocks, is
// reduce-scattered once. Recomputing any projection that reads the input
// repeats its all-gather; the blocks' outputs, which only the residual sum
// reads, are never recomputed. Each collective hides as in tensorParallel
// under the projections it feeds or drains, but for one ring step in t.
func (e *Estimator) parallelTensor(est *Estimate, sh shape, act unit.Bytes, add func(mesh.Axis, string, collective.Op, int, collective.Cost, bool)) time.Duration {
	j, m := est.Job, est.Mesh
	spec := j.Model
	r := sh.r
	re := 0
	if r.recompute > 0 {
		re = 1
	}
	l := m.Link(mesh.Tensor).Collective()
	ag := collective.Hierarchical(collective.AllGather, act, sh.t, l, 1, collective.Link{})
	rs := collective.Hierarchical(collective.ReduceScatter, act, sh.t, l, 1, collective.Link{})
	n := sh.ls * sh.m
	add(mesh.Tensor, "activation all-gather", collective.AllGather, (2+re)*n, ag, false)
	add(mesh.Tensor, "activation reduce-scatter", collective.ReduceScatter, 3*n, rs, false)

	// The matmuls each collective can hide under, per layer and
	// micro-batch, in seconds.
	d, q := float64(spec.DModel), float64(spec.Heads*spec.Head())
	kv := float64(spec.KV() * spec.Head())
	mlp := 1.0
	if spec.GatedMLP {
		mlp = 2
	}
	perFLOP := est.Time.MXU.Seconds() / mxuFLOPsPerChip(est, sh)
	mm := func(flopsPerToken float64) float64 {
		return flopsPerToken * float64(sh.b) * float64(sh.s) / float64(sh.t) * perFLOP
	}
	in := mm(2*d*(q+2*kv) + 2*d*mlp*float64(spec.DFF)) // QKV and the MLP's input
	attnOut, mlpOut := mm(2*d*q), mm(2*d*float64(spec.DFF))
	tf := float64(sh.t)
	hide := func(c time.Duration, mm float64) float64 { return max(c.Seconds()/tf, c.Seconds()-mm) }
	layer := hide(ag.ICITime, in) + hide(rs.ICITime, attnOut) + hide(rs.ICITime, mlpOut) // forward
	layer += hide(ag.ICITime, attnOut+mlpOut) + hide(rs.ICITime, in)                     // backward
	if re > 0 {
		layer += hide(ag.ICITime, mm(r.recompute))
	}
	return seconds(layer * float64(n))
}

// mxuFLOPsPerChip is the matmul FLOPs one chip runs in a step, the ones
// Time.MXU is the time of.
func mxuFLOPsPerChip(est *Estimate, sh shape) float64 {
	j := est.Job
	r := sh.r
	tokens := float64(j.GlobalBatch) * float64(j.Seq)
	return (6*float64(j.Model.MatmulParams()) + r.recompute*float64(j.Model.Layers)) * tokens / float64(est.Mesh.Chips())
}

func seconds(s float64) time.Duration { return time.Duration(s * 1e9) }
