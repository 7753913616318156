package emu

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"math"
	"sort"
	"sync"

	"shardlab/collective"
	"shardlab/emu/fabric"
	"shardlab/emu/kernel"
	"shardlab/mesh"
	"shardlab/schedule"
)

// TrainConfig is a training run on virtual chips.
type TrainConfig struct {
	Model        Config
	Mesh         mesh.Mesh
	GlobalBatch  int // sequences per step
	MicroBatches int // pipeline micro-batches; 1 without a pipeline
	Schedule     schedule.Kind
	// Chunks is the chunks of layers each pipeline device holds for the
	// interleaved and circular schedules (device d holds chunks d, d+p, …
	// of the p·Chunks pieces of the model); 0 means 1.
	Chunks int
	Steps  int
	Seed   uint64
	LR     float64
	Data   Source
	// Trace records every device's compute and communication spans in
	// Result.Trace (memory grows with the steps).
	Trace bool
	// FreeComm makes communication cost no simulated time.
	FreeComm bool
	// GEMM is the float32 matrix multiply the devices train with; nil is
	// kernel.Go() (a build with the openblas tag may pass OpenBLAS's).
	GEMM kernel.GEMM
	// BlocksOnlyClock charges only the transformer blocks to the simulated
	// clock (balanced pipeline stages, to measure the schedule's bubble).
	BlocksOnlyClock bool
	// Efficiency scales the chip's peak for the simulated compute clock;
	// 0 means 1, the peak. emu never imports cost (it is cost's independent
	// check): shardlab run passes cost's calibrated residual efficiency for
	// the chip's generation, the one value of it.
	Efficiency float64
	// BF16Compute runs the passes on bfloat16-rounded copies of the
	// weights while Adam updates fp32 master weights (mixed precision).
	BF16Compute bool
	// Remat is what a layer keeps for its backward pass: every tensor
	// (RematNone, also ""), or its input alone (RematFull).
	Remat Remat
	// FailLinks lists links (device pairs) that are down.
	FailLinks [][2]int
	// Resume continues from a checkpoint of the same run.
	Resume *Checkpoint
	// ResumeSteps and LoadCheckpoint resume from stored checkpoints
	// instead: the steps this process holds and how to read one. The
	// processes agree on the newest step that every one of them holds
	// (one may have died between two writes), each loads its own, and all
	// of them fail if any cannot (a *ResumeError when no step is common).
	// A checkpoint that is unusable but of this run is skipped for the
	// newest older step every process holds (Hooks.Skipped hears it).
	// LoadCheckpoint is given the shape this run's checkpoints have, to
	// pass to ReadCheckpointOf: a file of another size is refused from its
	// header, before its body is read.
	ResumeSteps    []int
	LoadCheckpoint func(step int, want *CheckpointShape) (*Checkpoint, error)
	// Remote, when set, runs only this process's devices and reaches the
	// others through it (package emu/mpi).
	Remote fabric.Remote
	// CheckpointEvery hands the state to Hooks.Checkpoint every that many
	// steps.
	CheckpointEvery int
	Hooks           Hooks

	dataID string            // Data.Identity(), once per run
	sched  schedule.Schedule // the pipeline's op lists, once per run
}

// Hooks let the caller act at points of a run: report progress, write
// checkpoints, inject faults. Each may be nil; an error from one stops the
// run and Train returns it.
type Hooks struct {
	// Step is called after every step.
	Step func(StepReport) error
	// Checkpoint is handed the state every TrainConfig.CheckpointEvery
	// steps; the caller writes it.
	Checkpoint func(*Checkpoint) error
	// Committed is called after Checkpoint once every process has written
	// that step's checkpoint: older ones may go. Until then a process keeps
	// its previous one, so that some step stays complete on every process
	// whenever one dies.
	Committed func(step int) error
	// Resumed hears the step a resume of stored checkpoints starts from
	// (once every process has loaded it) and every process's steps.
	Resumed func(step int, held [][]int) error
	// Skipped hears, before Resumed, each newer checkpoint of this
	// process that the resume skipped and why (an error wrapping
	// ErrCheckpoint): a run resumed from an older step than the newest.
	Skipped func(step int, why error) error
}

func (h Hooks) skipped(step int, why error) error {
	if h.Skipped == nil {
		return nil
	}
	if err := h.Skipped(step, why); err != nil {
		return fmt.Errorf("emu: skipped the checkpoint of step %d: %w", step, err)
	}
	return nil
}

func (h Hooks) resumed(step int, held [][]int) error {
	if h.Resumed == nil {
		return nil
	}
	if err := h.Resumed(step, held); err != nil {
		return fmt.Errorf("emu: resumed from step %d: %w", step, err)
	}
	return nil
}

// StepReport is one step's outcome.
type StepReport struct {
	Step       int
	Loss       float64
	SimSeconds float64 // simulated step time
	Tokens     int
}

// Remat is a rematerialisation policy, named as MaxText's remat_policy.
type Remat string

const (
	// RematNone keeps every tensor the backward pass reads.
	RematNone Remat = "none"
	// RematFull keeps each layer's input alone and reruns the layer's
	// forward before its backward, as jax.checkpoint does with no policy
	// (MaxText's default remat_policy, full: layers/decoders.py
	// get_remat_policy).
	RematFull Remat = "full"
)

// factor spells axis a at size n in the layout syntax, as mesh does
// ("expert=4").
func factor(a mesh.Axis, n int) string { return mesh.Degree{Axis: a, ICI: n, DCN: 1}.String() }

// validate checks the run against its layout.
func (tc *TrainConfig) validate() error {
	c := tc.Model
	if err := c.validate(); err != nil {
		return err
	}
	m := tc.Mesh
	d, f, t, p, cp, e := m.Size(mesh.Data), m.Size(mesh.FSDP), m.Size(mesh.Tensor), m.Size(mesh.Pipeline), m.Size(mesh.Context), m.Size(mesh.Expert)
	bad := func(format string, a ...any) error {
		return fmt.Errorf("emu: "+format+": %w", append(a, ErrInvalid)...)
	}
	switch {
	case m.Degree(mesh.Tensor).DCN > 1:
		return fmt.Errorf("emu: %w", mesh.ErrTensorOverDCN)
	case e > 1 && c.Experts == 0:
		return bad("%s: the model is dense, with no experts to split; want %s or a model with experts", factor(mesh.Expert, e), factor(mesh.Expert, 1))
	case c.Experts%e != 0:
		return bad("%s must divide the %d experts", factor(mesh.Expert, e), c.Experts)
	case c.Heads%t != 0 || c.KVHeads%t != 0 || c.DFF%t != 0 || c.expertFF()%t != 0:
		return bad("%s must divide heads %d, kv_heads %d, d_ff %d and expert_d_ff %d", factor(mesh.Tensor, t), c.Heads, c.KVHeads, c.DFF, c.expertFF())
	case tc.Chunks < 0 || (tc.Chunks > 1 && !tc.Schedule.Chunked()):
		return bad("chunks = %d with schedule %s, want 1 (only interleaved and circular split a device's layers into chunks)", tc.Chunks, tc.Schedule)
	case tc.Schedule.Chunked() && p == 1:
		return bad("schedule %s with %s, want a pipeline of 2 or more stages (or schedule gpipe or 1f1b)", tc.Schedule, factor(mesh.Pipeline, 1))
	case c.Layers%(p*max(tc.Chunks, 1)) != 0:
		return bad("%s x %d chunks must divide the %d layers", factor(mesh.Pipeline, p), max(tc.Chunks, 1), c.Layers)
	case c.Seq%cp != 0:
		return bad("%s must divide the sequence length %d", factor(mesh.Context, cp), c.Seq)
	case c.Tied && p > 1:
		return bad("tied embeddings with %s are not supported; untie them or drop the pipeline", factor(mesh.Pipeline, p))
	case tc.MicroBatches < 1 || (p == 1 && tc.MicroBatches != 1):
		return bad("micro-batches = %d, want 1 without a pipeline and at least 1 with one", tc.MicroBatches)
	case tc.GlobalBatch < 1 || tc.GlobalBatch%(d*f*e*tc.MicroBatches) != 0:
		return bad("global batch %d must split evenly over data %d x fsdp %d x expert %d x %d micro-batches", tc.GlobalBatch, d, f, e, tc.MicroBatches)
	case tc.Steps < 1:
		return bad("steps = %d, want at least 1", tc.Steps)
	case tc.Data == nil || tc.Data.Vocab() != c.Vocab:
		return bad("data source must match the model's vocabulary of %d", c.Vocab)
	case tc.Remat != "" && tc.Remat != RematNone && tc.Remat != RematFull:
		return bad("remat %q, want none or full", tc.Remat)
	case !(tc.LR > 0) || math.IsInf(tc.LR, 1):
		return bad("learning rate %v, want a positive finite number", tc.LR)
	}
	if _, err := schedule.NewChunked(tc.Schedule, p, tc.MicroBatches, max(tc.Chunks, 1)); err != nil {
		return err
	}
	if tc.Resume != nil && tc.LoadCheckpoint != nil {
		return bad("Resume and LoadCheckpoint both set, want one")
	}
	return nil
}

// Result is what a run measured.
type Result struct {
	Losses []float64
	Steps  []StepReport
	// ResumedFrom is the step the run resumed from (0: from the start);
	// Losses and Steps cover the steps after it.
	ResumedFrom int
	Devices     []DeviceStats
	// Final is the trained model, reassembled from the devices' shards.
	Final *Params[float32]
	// Checkpoint is the state after the last step.
	Checkpoint *Checkpoint
	// Diverged, when set, is why the run stopped before its last step.
	Diverged *Divergence
	// Bubble is the idle share of the pipeline devices' simulated time.
	Bubble float64
	Trace  []fabric.Span
}

// Divergence is a run stopped because its loss was not finite or had
// exploded past Limit.
type Divergence struct {
	Step  int
	Loss  float64
	Limit float64
}

func (d *Divergence) String() string {
	if math.IsNaN(d.Loss) || math.IsInf(d.Loss, 0) {
		return fmt.Sprintf("the loss at step %d is %v", d.Step, d.Loss)
	}
	return fmt.Sprintf("the loss at step %d is %.4g, above %.4g (far worse than a uniform guess over the vocabulary)", d.Step, d.Loss, d.Limit)
}

// divergenceLimit is the loss past which a run has diverged: three times
// a uniform guess's ln(vocab), and at least 5 nats above it. A loss that
// high means the model puts on average less than 1/vocab³ on the right
// token; training does not come back from it, it overflows soon after.
func divergenceLimit(vocab int) float64 {
	u := math.Log(float64(vocab))
	return max(3*u, u+5)
}

// DeviceStats is one virtual chip's counters.
type DeviceStats struct {
	ID    int
	Coord mesh.Coord
	Slice int
	Sent  collective.Counter
	// SentByAxis is Sent split by the group's axes ("tensor all-reduce").
	SentByAxis collective.Counter
	// Control is the bytes of clock exchanges with other processes.
	Control int64
	Memory  Memory
	// Transients is Memory.Transient at the peak by buffer class.
	Transients Transients
	Busy       float64 // simulated compute seconds
	Clock      float64 // simulated seconds at the end
}

// setDefaults fills in the zero values that have defaults.
func (tc *TrainConfig) setDefaults() {
	if tc.Efficiency == 0 {
		tc.Efficiency = 1
	}
	if tc.Schedule == "" {
		tc.Schedule = schedule.OneFOneB
	}
	if tc.MicroBatches == 0 {
		tc.MicroBatches = 1
	}
	if tc.Chunks == 0 {
		tc.Chunks = 1
	}
}

// Train runs the configuration.
func Train(tc TrainConfig) (*Result, error) {
	tc.setDefaults()
	if err := tc.validate(); err != nil {
		return nil, err
	}
	r, err := newRun(&tc)
	if err != nil {
		return nil, err
	}
	for step := r.res.ResumedFrom; step < tc.Steps; step++ {
		if err := r.step(step); err != nil {
			return nil, err
		}
		if r.res.Diverged != nil {
			break // and no checkpoint of the diverged state
		}
		if err := r.checkpoint(step + 1); err != nil {
			return nil, err
		}
	}
	return r.finish()
}

// run is a training run under way in this process.
type run struct {
	tc   *TrainConfig
	fab  *fabric.Fabric
	full *Params[float32] // the shapes of the model every device shards (hollow)
	devs []*device        // this process's
	res  *Result
	rate float64 // simulated FLOP/s of one chip
	last int     // the last step done
}

// newRun connects this process's devices, checks their links and restores
// a checkpoint when the run resumes.
func newRun(tc *TrainConfig) (*run, error) {
	tc.dataID = tc.Data.Identity()
	m := tc.Mesh
	tc.sched, _ = schedule.NewChunked(tc.Schedule, m.Size(mesh.Pipeline), tc.MicroBatches, tc.Chunks) // validated
	fab, err := newRunFabric(tc)
	if err != nil {
		return nil, err
	}
	r := &run{tc: tc, fab: fab, full: newParams[float32](tc.Model, tc.Seed), rate: float64(m.Multislice.Slice.Chip.PeakBF16) * tc.Efficiency}
	// this process runs its own devices; every process knows every group
	var groups []collective.Group
	ts := newTemplates(r.full)
	for id := range m.Chips() {
		if !fab.Local(id) {
			continue
		}
		d := newDevice(tc, id, fab.Endpoint(id), ts)
		r.devs = append(r.devs, d)
		groups = append(groups, d.tensorG, d.contextG, d.fsdpG, d.gradG, d.expertG, d.denseG)
		if next := d.pipeNext(); next >= 0 {
			groups = append(groups, collective.Group{Ranks: []int{id, next}, NICI: 2, NDCN: 1})
		}
	}
	// the devices hold their shards: the full model and the templates are
	// read only for their shapes from here on
	for _, p := range ts.pieces {
		hollow(p)
	}
	hollow(r.full)
	// a failed link must be one of the layout's, and then stops the start
	used := fabric.RingLinks(groups)
	for _, l := range tc.FailLinks {
		if !used[l] {
			return nil, fmt.Errorf("emu: devices %d and %d share no ring in this layout, so %d-%d is not one of its links: %w", l[0], l[1], l[0], l[1], ErrInvalid)
		}
	}
	if err := fab.Discover(groups); err != nil {
		return nil, err
	}
	start := 0
	switch {
	case tc.Resume != nil:
		if tc.Resume.Step >= tc.Steps {
			return nil, &StepsDoneError{Step: tc.Resume.Step, Steps: tc.Steps}
		}
		if err := tc.Resume.restore(tc, r.devs); err != nil {
			return nil, err
		}
		start = tc.Resume.Step
	case tc.LoadCheckpoint != nil:
		if start, err = resume(tc, r.devs); err != nil {
			return nil, err
		}
	}
	r.res, r.last = &Result{ResumedFrom: start}, start
	return r, nil
}

// newRunFabric is the fabric of tc's mesh: its sends over mesh's links,
// other processes' devices through tc.Remote, the failed links down.
func newRunFabric(tc *TrainConfig) (*fabric.Fabric, error) {
	m := tc.Mesh
	fab := fabric.ForMesh(m)
	fab.FreeComm = tc.FreeComm
	fab.Trace = tc.Trace
	if tc.Remote != nil {
		fab.SetRemote(tc.Remote)
		tc.Remote.Attach(fab)
	}
	for _, l := range tc.FailLinks {
		if l[0] < 0 || l[1] < 0 || l[0] >= m.Chips() || l[1] >= m.Chips() {
			return nil, fmt.Errorf("emu: failed link %d-%d names a device outside 0..%d: %w", l[0], l[1], m.Chips()-1, ErrInvalid)
		}
		fab.FailLink(l[0], l[1])
	}
	return fab, nil
}

// maxClock is the latest simulated clock of every device of every process.
func (r *run) maxClock() (float64, error) {
	t := []float64{0}
	for _, d := range r.devs {
		t[0] = max(t[0], d.ep.Clock())
	}
	if r.tc.Remote != nil {
		if err := r.tc.Remote.MaxFloat64(t); err != nil {
			return 0, err
		}
	}
	return t[0], nil
}

// step trains one step on every local device, gathers the loss from every
// process, reports it and stops the run (Result.Diverged) if it diverged.
func (r *run) step(step int) error {
	tc := r.tc
	before, err := r.maxClock()
	if err != nil {
		return err
	}
	batch := tc.Data.Batch(step, tc.GlobalBatch, tc.Model.Seq)
	var wg sync.WaitGroup
	for _, d := range r.devs {
		wg.Go(func() { d.step(batch, r.rate) })
	}
	wg.Wait()
	loss, err := r.loss()
	if err != nil {
		return err
	}
	after, err := r.maxClock()
	if err != nil {
		return err
	}
	rep := StepReport{Step: step + 1, Loss: loss, SimSeconds: after - before, Tokens: tc.GlobalBatch * tc.Model.Seq}
	r.res.Losses = append(r.res.Losses, loss)
	r.res.Steps = append(r.res.Steps, rep)
	r.last = step + 1
	if tc.Hooks.Step != nil {
		if err := tc.Hooks.Step(rep); err != nil {
			return fmt.Errorf("emu: after step %d: %w", step+1, err)
		}
	}
	// every process has the same loss, so all of them stop here
	if limit := divergenceLimit(tc.Model.Vocab); !(loss <= limit) {
		r.res.Diverged = &Divergence{Step: step + 1, Loss: loss, Limit: limit}
	}
	return nil
}

// loss is the step's loss: each device's that ran the head (the last
// stage's, or every stage's with the head after the pipeline, headAfter)
// in its slot, gathered from every process (a sum with one term per
// slot), then added in device order, so the same bits however the
// devices are spread over processes.
func (r *run) loss() (float64, error) {
	losses := make([]float64, r.tc.Mesh.Chips())
	for _, d := range r.devs {
		if d.coord[mesh.Tensor] == 0 && (d.last || r.tc.headAfter()) {
			losses[d.id] = d.loss
		}
	}
	if r.tc.Remote != nil {
		if err := r.tc.Remote.SumFloat64(losses); err != nil {
			return 0, err
		}
	}
	loss := 0.0
	for _, l := range losses {
		loss += l
	}
	return loss, nil
}

// checkpoint hands the state after step to Hooks.Checkpoint when one is
// due, then, once every process has written its own, to Hooks.Committed.
func (r *run) checkpoint(step int) error {
	tc, h := r.tc, r.tc.Hooks
	if tc.CheckpointEvery <= 0 || h.Checkpoint == nil || step%tc.CheckpointEvery != 0 {
		return nil
	}
	if err := h.Checkpoint(snapshot(tc, r.devs, step)); err != nil {
		return fmt.Errorf("emu: checkpoint after step %d: %w", step, err)
	}
	if h.Committed == nil {
		return nil
	}
	if tc.Remote != nil {
		// every process has written its checkpoint once this reduction
		// returns
		if err := tc.Remote.SumFloat64([]float64{0}); err != nil {
			return err
		}
	}
	if err := h.Committed(step); err != nil {
		return fmt.Errorf("emu: checkpoint after step %d: %w", step, err)
	}
	return nil
}

// finish collects the devices' counters, traces and final state; under
// MPI at process 0, which alone returns the bubble and the final model.
func (r *run) finish() (*Result, error) {
	tc, res := r.tc, r.res
	for _, d := range r.devs {
		res.Devices = append(res.Devices, DeviceStats{ID: d.id, Coord: d.coord, Slice: tc.Mesh.Slice(d.id), Sent: d.ep.Sent(), SentByAxis: d.ep.SentByAxis(),
			Control: d.ep.ControlBytes(), Memory: d.mem.peak, Transients: d.mem.transients(), Busy: d.busy, Clock: d.ep.Clock()})
		res.Trace = append(res.Trace, d.trace...)
		res.Trace = append(res.Trace, d.ep.Spans()...)
	}
	res.Checkpoint = snapshot(tc, r.devs, r.last)
	all := r.devs
	if tc.Remote != nil {
		// process 0 collects every device's counters, trace and shards
		var err error
		if all, err = gatherDevices(tc, r.fab, r.full, res, r.devs); err != nil {
			return nil, err
		}
		if all == nil {
			return res, nil // not process 0: its part is done
		}
	}
	var busy, makespan float64
	for _, d := range res.Devices {
		makespan = max(makespan, d.Clock)
		busy += d.Busy
	}
	if tc.Mesh.Size(mesh.Pipeline) > 1 && makespan > 0 {
		// every device's idle share of the common makespan
		res.Bubble = 1 - busy/(float64(len(res.Devices))*makespan)
	}
	res.Final = assembleFinal(tc, all)
	return res, nil
}

// shipment is what a process sends process 0 at the end of a run.
type shipment struct {
	Stats []DeviceStats
	Trace []fabric.Span
	IDs   []int
	Flats [][][]float32
}

// gatherDevices sends this process's counters, trace and parameter shards
// to process 0, which returns every device (remote ones rebuilt around
// their shards) and fills res with all of them; other processes get nil.
func gatherDevices(tc *TrainConfig, fab *fabric.Fabric, full *Params[float32], res *Result, devs []*device) ([]*device, error) {
	sh := shipment{Stats: res.Devices, Trace: res.Trace}
	for _, d := range devs {
		sh.IDs = append(sh.IDs, d.id)
		sh.Flats = append(sh.Flats, d.flat)
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(sh); err != nil {
		return nil, err
	}
	parts, err := tc.Remote.GatherBytes(buf.Bytes())
	if err != nil || tc.Remote.Rank() != 0 {
		return nil, err
	}
	res.Devices, res.Trace = nil, nil
	var all []*device
	ts := newTemplates(full)
	for _, part := range parts {
		var in shipment
		if err := gob.NewDecoder(bytes.NewReader(part)).Decode(&in); err != nil {
			return nil, fmt.Errorf("emu: a process's results: %w", err)
		}
		res.Devices = append(res.Devices, in.Stats...)
		res.Trace = append(res.Trace, in.Trace...)
		for i, id := range in.IDs {
			d := newDevice(tc, id, fab.Endpoint(id), ts)
			d.flat = in.Flats[i]
			all = append(all, d)
		}
	}
	sort.Slice(res.Devices, func(i, j int) bool { return res.Devices[i].ID < res.Devices[j].ID })
	return all, nil
}

// assembleFinal rebuilds the full model from the replica at data 0,
// context 0: each group's shards concatenated over the group it is
// sharded over, then tensor, expert and pipeline pieces.
func assembleFinal(tc *TrainConfig, list []*device) *Params[float32] {
	m := tc.Mesh
	devs := map[int]*device{}
	for _, d := range list {
		devs[d.id] = d
	}
	pieces := map[[3]int]*Params[float32]{}
	piece := func(si, ti, ei int) *Params[float32] {
		if p, ok := pieces[[3]int{si, ti, ei}]; ok {
			return p
		}
		var c mesh.Coord
		c[mesh.Tensor], c[mesh.Pipeline], c[mesh.Expert] = ti, si, ei
		id, _ := m.Device(c)
		base := devs[id]
		var flat [][]float32
		for gi := range base.flat {
			buf := make([]float32, 0, base.fullLen[gi])
			for _, member := range base.shardOf(gi).Ranks {
				buf = append(buf, devs[member].flat[gi]...)
			}
			flat = append(flat, buf[:base.realLen[gi]])
		}
		p := base.bind(flat)
		pieces[[3]int{si, ti, ei}] = p
		return p
	}
	return assemble(tc.Model, piece, m.Size(mesh.Pipeline), m.Size(mesh.Tensor), m.Size(mesh.Expert), tc.Chunks)
}

// Adam's constants (β₂ = 0.95 as in most LLM pre-training).
const (
	adamB1  = 0.9
	adamB2  = 0.95
	adamEps = 1e-8
)

func adam(w, g, m, v []float32, lr float64, step int) {
	c1 := 1 - math.Pow(adamB1, float64(step))
	c2 := 1 - math.Pow(adamB2, float64(step))
	for i := range w {
		gi := float64(g[i])
		mi := adamB1*float64(m[i]) + (1-adamB1)*gi
		vi := adamB2*float64(v[i]) + (1-adamB2)*gi*gi
		m[i], v[i] = float32(mi), float32(vi)
		w[i] -= float32(lr * (mi / c1) / (math.Sqrt(vi/c2) + adamEps))
	}
}

// gemm is the GEMM tc's devices train with.
func (tc *TrainConfig) gemm() kernel.GEMM {
	if tc.GEMM != nil {
		return tc.GEMM
	}
	return kernel.Go()
}
