package cost

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"shardlab/collective"
	"shardlab/hw"
	"shardlab/internal/errtext"
	"shardlab/mesh"
	"shardlab/model"
	"shardlab/schedule"
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
	// occupy in host memory, per chip, and HostUsable the host memory a
	// chip has for them (hw.Slice.HostRAMPerChip; 0 where its VM's RAM is
	// not published, and then Host is not checked).
	Host       unit.Bytes `json:"host"`
	HostUsable unit.Bytes `json:"host_usable"`
	HBM        unit.Bytes `json:"hbm"`
	Usable     unit.Bytes `json:"usable"` // HBM less the headroom
	// XLACapacity is the HBM XLA fits the program into
	// (hw.Chip.XLACapacity), which Report compiles against.
	XLACapacity unit.Bytes `json:"xla_capacity"`
	// LaidOut is, for a pipeline whose other costed stage lays out a
	// larger peak than this one (the same program runs on every stage,
	// so XLA's report shows the larger: Nominal), that stage; nil
	// otherwise.
	LaidOut *StageMemory `json:"laid_out_stage,omitempty"`
}

// StageMemory is a pipeline stage's Memory and which it is: "first" or
// "last".
type StageMemory struct {
	Stage string `json:"stage"`
	Memory
}

// Total is the sum of the components.
func (m Memory) Total() unit.Bytes {
	return m.Weights + m.Gradients + m.Optimizer + m.Activations + m.Transient
}

// State is weights, gradients and optimizer state.
func (m Memory) State() unit.Bytes { return m.Weights + m.Gradients + m.Optimizer }

// XLACapacityPerDevice is XLACapacity a JAX device, on a chip of devices
// of them (a TPU7x chip is two): what XLA's memory report and its
// out-of-memory message are held to.
func (m Memory) XLACapacityPerDevice(devices int) unit.Bytes {
	return m.XLACapacity / unit.Bytes(max(devices, 1))
}

// Fits reports whether the total stays within the usable HBM and what
// is offloaded within the host memory (HostFits).
func (m Memory) Fits() bool { return m.Total() <= m.Usable && m.HostFits() }

// Reason is why the memory does not fit (ReasonHBM before ReasonHost),
// or "" when it does.
func (m Memory) Reason() Reason {
	switch {
	case m.Total() > m.Usable:
		return ReasonHBM
	case !m.HostFits():
		return ReasonHost
	}
	return ""
}

// HostFits reports whether what is offloaded stays within the host
// memory a chip has, where that is known. Where it is not, it is true and
// HostUnchecked says so: a caller that reports a fit must say that host
// memory was not checked.
func (m Memory) HostFits() bool { return m.HostUsable == 0 || m.Host <= m.HostUsable }

// HostUnchecked reports whether the step offloads to host memory (Host >
// 0) on a VM whose RAM the catalog does not publish (HostUsable == 0), so
// that HostFits could not hold it to anything.
func (m Memory) HostUnchecked() bool { return m.Host > 0 && m.HostUsable == 0 }

// Shortfall says what does not fit and by how much: "HBM by 2.0 GiB",
// "host memory by 30 GiB", or both joined by "and"; "" when it fits.
func (m Memory) Shortfall() string {
	var parts []string
	if t := m.Total(); t > m.Usable {
		parts = append(parts, fmt.Sprintf("HBM by %v", t-m.Usable))
	}
	if !m.HostFits() {
		parts = append(parts, fmt.Sprintf("host memory by %v (%v offloaded per chip, %v of its VM's RAM)", m.Host-m.HostUsable, m.Host, m.HostUsable))
	}
	return strings.Join(parts, " and ")
}

// Time is a step's duration split into what the chip waits on.
type Time struct {
	// Compute is the sum of the five parts below it.
	Compute   time.Duration `json:"compute"`
	MXU       time.Duration `json:"mxu"`       // the projections and the output layer, with recompute
	Attention time.Duration `json:"attention"` // the attention core
	Vector    time.Duration `json:"vector"`    // memory-bound work at HBM bandwidth
	Optimizer time.Duration `json:"optimizer"` // the Adam update (and gradient accumulation's sums) at HBM bandwidth
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

// Passes is the forward and backward compute of the step, the time its
// overlapped collectives can hide under: the matmuls, the attention core
// and the vector work, not the optimizer update (it waits for the last
// gradient reduction) nor host transfers that do not hide (they are
// waited for).
func (t Time) Passes() time.Duration { return t.MXU + t.Attention + t.Vector }

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
	// MicroBatchSize is sequences per batch shard per micro-batch: the
	// chips of one data × fsdp × expert shard hold the same sequences,
	// split between them by tensor, context and pipeline.
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
// pipeline schedules it has simulated (those any estimator simulated are
// shared: simulated), the MXU efficiency of each GEMM shape, a layer's
// shape and a stage's parameters for its model. It is not safe for
// concurrent use.
type Estimator struct {
	// model is the last model spec that passed its checks (model.Spec is
	// a value: a search costs one spec thousands of times).
	model   model.Spec
	checked bool
	// specs counts the specs that have passed (model changing to each):
	// a BatchMemory whose job's spec passed at the same count need not
	// compare it again (BatchMemory.validate)
	specs uint64
	pipes map[pipeKey]pipe
	// lastPipe is the entry of pipes last asked for, when ok.
	lastPipe struct {
		k  pipeKey
		p  pipe
		ok bool
	}
	effs  map[effKey]float64
	maxes map[int]float64 // ExpectedMaxNormal by n
	mxus  map[mxuKey]mxuStats
	// lastMXU is the entry of mxus last asked for, when ok.
	lastMXU struct {
		k  mxuKey
		st mxuStats
		ok bool
	}
	layers       map[layerKey]layerShape  // for model
	recentLayers recentLayers             // for model
	params       map[paramsKey]endsParams // for model, with experts or MTP (endsParams)
	lastParams   lastParams               // for model
	// pc is model's ParamCount, when pcOK, and dense its dense layer's
	// parameters per chip by tensor degree (denseLayerParams), which
	// endsParams works a dense model's parameters out from.
	pc    model.Params
	pcOK  bool
	dense []tensorParams
	// flops is jobFLOPs for model at flopsKey, when flopsOK.
	flops    jobFLOPs
	flopsKey flopsKey
	flopsOK  bool
	comms    []Comm // Estimate's scratch
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
		layers: map[layerKey]layerShape{}, params: map[paramsKey]endsParams{}}
}

// validate is j.validate, with the model's own checks run once per spec.
func (e *Estimator) validate(j *Job) error {
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
	e.specs++
	clear(e.layers) // they are the last model's
	e.recentLayers = recentLayers{}
	clear(e.params)
	e.lastParams = lastParams{}
	e.pcOK, e.dense = false, e.dense[:0]
	e.flopsOK = false
	return nil
}

// EstimateStep is NewEstimator().Estimate.
func EstimateStep(j Job, m mesh.Mesh) (Estimate, error) { return NewEstimator().Estimate(j, m) }

// simulated holds the pipe of every schedule an estimator simulated, by
// its pipeKey, for every estimator: a simulation reads nothing but its
// key, and a sweep's searches each cost with estimators of their own (as
// a plan's notes and its largest micro-batch do with a new one), each of
// which simulated the schedules the others had. An estimator still keeps
// its own map (pipes), which is cheaper to read than this one.
var simulated sync.Map

// pipeKey names a simulated schedule: kind, stages, micro-batches, chunks.
type pipeKey struct {
	kind    int // the schedule's place in schedule.Kinds (Kind.Index): a search asks
	p, m, v int // millions of times, and ints hash faster than its name
}

func (e *Estimator) pipe(k schedule.Kind, p, m, v int) pipe {
	if p == 1 {
		return pipe{inFlight: 1, lastInFlight: 1}
	}
	key := pipeKey{k.Index(), p, m, v}
	// a layout's stages and its ceilings ask for one schedule in a row
	if l := &e.lastPipe; l.ok && l.k == key {
		return l.p
	}
	r, ok := e.pipes[key]
	if ok {
		e.lastPipe.k, e.lastPipe.p, e.lastPipe.ok = key, r, true
		return r
	}
	if s, ok := simulated.Load(key); ok {
		r = s.(pipe)
	} else {
		s, err := schedule.NewChunked(k, p, m, v)
		if err != nil || key.kind < 0 {
			panic(fmt.Sprintf("cost: schedule %q: %v", k, err)) // validated by shapeOf
		}
		tl := s.Simulate(1, 2, 0)
		r = pipe{bubble: tl.Bubble(), inFlight: float64(tl.PeakInFlight[0]) / float64(v), lastInFlight: float64(tl.PeakInFlight[p-1]) / float64(v)}
		simulated.Store(key, r)
	}
	e.pipes[key] = r
	e.lastPipe.k, e.lastPipe.p, e.lastPipe.ok = key, r, true
	return r
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
	est.Memory = e.memory(&j, &m, &sh)
	// the collectives gather in the estimator's scratch and leave in one
	// slice of their own (nil when there are none)
	e.step(&est, &sh)
	est.Comms = nil
	if len(e.comms) > 0 {
		est.Comms = slices.Clone(e.comms)
	}

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

// step adds est's collectives, in the estimator's scratch (e.comms), and
// the step they make with the bound's compute, bubble and sync.
func (e *Estimator) step(est *Estimate, sh *shape) {
	est.Comms = e.comms[:0]
	e.communicate(est, sh)
	e.comms = est.Comms
	est.Time.Step = est.Time.Compute + est.Time.Bubble + est.Time.ICI + est.Time.DCN + est.Time.Sync
}

// Throughput is the tokens per second per chip b's estimate finishes with
// (Finish's TokensPerSecondPerChip, to the bit), without spelling out its
// memory or keeping its collectives: a search ranks every layout by it
// and finishes only those it keeps.
func (e *Estimator) Throughput(b *Bound) float64 {
	est := b.est
	e.step(&est, &b.sh)
	return tokensPerSecondPerChip(est.Job, est.Mesh.Chips(), est.Time.Step)
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
func (j Job) MatmulPeak(chip hw.Chip) (float64, error) { return j.matmulPeak(&chip) }

// matmulPeak is MatmulPeak, the job and chip read in place.
func (j *Job) matmulPeak(chip *hw.Chip) (float64, error) {
	peak, ok := chip.Peak(j.Quantization.Format())
	if !ok {
		return 0, fmt.Errorf("cost: quantization %s: %s publishes no %s peak, want %s: %w", j.Quantization, chip.Name, j.Quantization, quantizationsOf(chip), ErrJob)
	}
	return float64(peak), nil
}

// quantizationsOf lists the quantizations chip publishes a peak for, as
// the quantization is spelt: "none (bf16) or int8".
func quantizationsOf(chip *hw.Chip) string {
	var ok []string
	for _, q := range []Quantization{QuantNone, QuantInt8, QuantFP8} {
		if _, has := chip.Peak(q.Format()); !has {
			continue
		}
		if q == QuantNone {
			ok = append(ok, "none (bf16)")
		} else {
			ok = append(ok, string(q))
		}
	}
	if len(ok) == 0 {
		return "none: it publishes no matmul peak"
	}
	return errtext.OrList(ok)
}
