package cost

import (
	"math"
	"time"

	"shardlab/mesh"
	"shardlab/unit"
)

// A search costs one job at many batches and many layouts, most of which
// it drops: BatchMemory weighs a job's memory batch by batch with its
// checks and shape worked out once, and Bound is the part of an estimate
// the collectives only add to. The search drops a layout whose bound is
// already too slow, ranks the others by their Throughput, and finishes
// (Finish) only the layouts it keeps.

// BatchMemory is the HBM per chip of one job on one layout as its global
// batch varies: what Memory answers for the job at each batch, with the
// job's checks, its shape, the state and the schedule's micro-batches in
// flight worked out once. A search asks it for every batch it tries.
type BatchMemory struct {
	e *Estimator
	// est holds the job (at shards sequences) and the layout, as the
	// ceilings' collectives read them (ThroughputCeiling)
	est    Estimate
	sh     shape
	at     shape // sh at the batch last weighed (shapeAt)
	shards int   // sequences per step the batch is a multiple of
	n      int   // pipeline stages to weigh: 1, or the first and last
	// stages are each stage's base, once staged (stage); state is the
	// larger stage state (no batch takes less HBM) and usable the usable
	// HBM, once stateOK (stage, or StateExceeds alone)
	stages          [2]stageBase
	state, usable   unit.Bytes
	staged, stateOK bool
	floor           stepFloor   // MaxThroughput's, once worked out
	ps              stagePhases // Check's scratch
	// comm is the collectives' floors ceilingStep last worked out, for
	// the layout Reset set and the jobs Reschedule and SetPolicy made
	// of its job since (collectivesFloor)
	comm commMemo
	// ok is whether Reset (or Reschedule) last succeeded, so that the
	// layout's shape holds for Reschedule
	ok bool
	// least is the parameters leastParams lays out on the stages, once
	// leastOK: they read the layout's degrees alone, which Reschedule
	// and SetPolicy keep, so Reset forgets them
	least   [2]float64
	leastOK bool
	// floors remembers computeFloor's answers for the layout Reset set,
	// by micro-batches, policy and dispatch (floorKey)
	floors floorMemo
	// lc is the layout's collectives that read neither the batch nor the
	// micro-batches (layoutComm), once worked out: Reset forgets them.
	lc layoutComm
	// specs is the estimator's count of specs that had passed when the
	// job's spec last passed its checks (validate)
	specs uint64
	// layers remembers the layer shapes of the layout Reset set by policy
	// (layer): Reset forgets them
	layers layerMemo
}

// layerMemo holds a layout's layer shapes by remat policy: at most six
// (SearchRemats and the ceilings' RematNone), the later ones not
// remembered past that.
type layerMemo struct {
	r  [6]Remat
	ls [6]layerShape
	n  int
}

// layer is the estimator's layerShape of j in bm's shape, remembered by
// policy: a search sets a layout's memory to each policy again under
// each schedule and micro-batch count, and of what a layer shape reads
// (layerKey) only the policy changes within a layout, since the shape's
// tensor degree, tokens and expert degree are the layout's and
// Reschedule and SetPolicy keep the rest of the job.
func (bm *BatchMemory) layer(j *Job) layerShape {
	l := &bm.layers
	for i := range l.n {
		if l.r[i] == j.Remat {
			return l.ls[i]
		}
	}
	ls := bm.e.layerShape(j, &bm.sh)
	if l.n < len(l.r) {
		l.r[l.n], l.ls[l.n] = j.Remat, ls
		l.n++
	}
	return ls
}

// validate is e.validate of j, whose spec is that of the job bm last
// passed validate with: where no other spec has passed since (the
// estimator's count is the same), the estimator's spec is still j's, so
// only the job's own settings are checked, without comparing the spec
// (a search validates a layout's job for each of its schedules and
// policies).
func (bm *BatchMemory) validate(j *Job) error {
	e := bm.e
	if e.checked && bm.specs == e.specs {
		return j.validateSettings()
	}
	err := e.validate(j)
	bm.specs = e.specs
	return err
}

// BatchMemory checks j on m as Memory does, but for the global batch, and
// returns its memory as a function of the batch. The error, when there is
// one, is what Memory returns at every positive batch.
func (e *Estimator) BatchMemory(j Job, m mesh.Mesh) (BatchMemory, error) {
	var bm BatchMemory
	err := bm.Reset(e, &j, &m)
	return bm, err
}

// Reset makes bm what e.BatchMemory(*j, *m) returns, in place: a search
// weighs a layout's memory for every schedule and micro-batch count, and
// a BatchMemory is too large to copy each time. On an error bm is left
// unusable.
func (bm *BatchMemory) Reset(e *Estimator, j *Job, m *mesh.Mesh) error {
	bm.e, bm.n, bm.floor, bm.ok, bm.leastOK, bm.lc.ok, bm.layers.n = e, 1, stepFloor{}, false, false, false, 0
	bm.comm.n, bm.comm.next, bm.floors.n, bm.floors.next = 0, 0, 0, 0
	bm.stages, bm.state, bm.usable, bm.staged, bm.stateOK = [2]stageBase{}, 0, 0, false, false
	bm.est = Estimate{Mesh: *m, Job: *j}
	jb := &bm.est.Job
	jb.GlobalBatch = 1
	if err := e.validate(jb); err != nil {
		return err
	}
	bm.specs = e.specs
	bm.shards = m.Size(mesh.Data) * m.Size(mesh.FSDP) * m.Size(mesh.Expert) * j.MicroBatches
	jb.GlobalBatch = bm.shards
	var err error
	if err = e.shapeInto(&bm.sh, jb, m); err != nil {
		return err
	}
	bm.layers.r[0], bm.layers.ls[0], bm.layers.n = jb.Remat, bm.sh.layerShape, 1
	if bm.sh.p > 1 {
		bm.n = 2
	}
	bm.at = bm.sh
	bm.ok = true
	return nil
}

// Reschedule makes bm what Reset(e, j, m) makes of it, where e and m are
// those bm was last Reset with: a search weighs a layout's memory under
// every schedule and micro-batch count in turn, and most of Reset's work
// does not read them. Where bm's last Reset (or Reschedule) succeeded and
// j is its job but for the schedule, the chunks, the micro-batches, the
// global batch, the remat policy and the ring of experts (compared whole,
// so anything else differing takes Reset's path), it keeps the shape's
// degrees, its tokens and layers per chip, the parameters (each stage's
// state; worked out again where the schedule moves the model's ends,
// headOnEveryStage) and the FLOPs: shapeWith works them out from the mesh and the
// rest of the job alone, at one sequence per micro-batch whatever the
// micro-batches (the batch is the shards). The layer's
// footprint is kept too unless the policy or the dispatch changed, as
// SetPolicy keeps it. It works out again what reads what changed: the
// checks (Job.validate, Job.shapeErr, in Reset's order; the checks the
// last Reset passed read none of it) and the shards, and, as Reset does,
// leaves the stages' bases with their micro-batches in flight to the
// first weighing that needs them (stage). What the ceilings remember of
// the layout it keeps (leastParams, computeFloor, collectivesFloor,
// layoutComm).
// TestRescheduleIsReset holds it to Reset.
func (bm *BatchMemory) Reschedule(j *Job) error {
	old := &bm.est.Job
	same := *j
	same.Schedule, same.Chunks, same.MicroBatches = old.Schedule, old.Chunks, old.MicroBatches
	same.GlobalBatch, same.Remat, same.RingOfExperts = old.GlobalBatch, old.Remat, old.RingOfExperts
	if !bm.ok || same != *old {
		m := bm.est.Mesh
		return bm.Reset(bm.e, j, &m)
	}
	policy := j.Remat != old.Remat || j.RingOfExperts != old.RingOfExperts
	ends := j.endsOf(bm.sh.p) != old.endsOf(bm.sh.p)
	e := bm.e
	bm.n, bm.floor, bm.ok = 1, stepFloor{}, false
	bm.stages, bm.state, bm.usable, bm.staged, bm.stateOK = [2]stageBase{}, 0, 0, false, false
	bm.est = Estimate{Mesh: bm.est.Mesh, Job: *j}
	jb := &bm.est.Job
	jb.GlobalBatch = 1
	if err := bm.validate(jb); err != nil { // the old job's spec (same)
		return err
	}
	sh := &bm.sh
	sh.m, sh.v = jb.MicroBatches, 1
	if jb.Schedule.Chunked() {
		sh.v = max(jb.Chunks, 1)
	}
	if err := jb.shapeErr(sh); err != nil {
		return err
	}
	bm.shards = sh.d * sh.f * sh.e * sh.m
	jb.GlobalBatch = bm.shards
	if policy {
		sh.layerShape = bm.layer(jb)
		jb.setBatch(sh, 1)
	}
	if ends {
		e.setParams(sh, jb)
	}
	if sh.p > 1 {
		bm.n = 2
	}
	bm.at = bm.sh
	bm.ok = true
	return nil
}

// stage works out each stage's base and the larger stage state, for the
// job and layout Reset (or Reschedule) last set, the first time Total or
// Check needs them: the ceilings a search skips most layouts by read
// neither, and a stage's base reads only the layout, the stage's
// parameters (which Reschedule works out again where the schedule moves
// the model's ends), the job's precision, offload, headroom and
// temporaries' scale (none of which Reschedule changes) and its
// schedule's micro-batches in flight (setInFlight), not the remat policy
// or the dispatch (SetPolicy), so it is what Reset worked it out as
// before.
func (bm *BatchMemory) stage() {
	if bm.staged {
		return
	}
	for i := range bm.stages[:bm.n] {
		bm.stages[i] = bm.e.stageBase(&bm.est.Job, &bm.est.Mesh, &bm.sh, stage(i))
		bm.state = max(bm.state, bm.stages[i].mem.State())
	}
	bm.usable = bm.stages[0].mem.Usable
	bm.staged, bm.stateOK = true, true
}

// SetPolicy makes bm what Estimator.BatchMemory returns for its job with
// remat policy r and the ring of experts or not, or returns the error it
// returns and leaves bm as it was: the policy and the dispatch change the
// layer's footprint, not the layout's checks, the shape's degrees, the
// state or the schedule's micro-batches in flight. A search weighs every
// policy of a layout and schedule.
func (bm *BatchMemory) SetPolicy(r Remat, ring bool) error {
	j := &bm.est.Job
	if j.Remat == r && j.RingOfExperts == ring {
		return nil
	}
	r0, ring0 := j.Remat, j.RingOfExperts
	j.Remat, j.RingOfExperts, j.GlobalBatch = r, ring, 1
	var err error
	if e := bm.e; e.checked && (bm.specs == e.specs || e.model == j.Model) {
		// the job passed every check with its last policy (Reset, or
		// SetPolicy), and no other check reads the policy: the first of
		// validateSettings' to fail now is the remat's or the ring's
		if err = j.rematErr(); err == nil {
			err = j.ringErr()
		}
	} else {
		err = bm.validate(j)
	}
	j.GlobalBatch = bm.shards
	if err != nil {
		j.Remat, j.RingOfExperts = r0, ring0
		return err
	}
	bm.floor.computeOK = false
	bm.sh.layerShape = bm.layer(j)
	j.setBatch(&bm.sh, 1)
	bm.at = bm.sh
	return nil
}

// Total is Memory's total for the job at globalBatch sequences per step
// (Memory.Total), or Memory's error.
func (bm *BatchMemory) Total(globalBatch int) (unit.Bytes, error) {
	sh, err := bm.shapeAt(globalBatch)
	if err != nil {
		return 0, err
	}
	bm.stage()
	total := unit.Bytes(0)
	for _, b := range bm.stages[:bm.n] {
		total = max(total, bm.est.Job.stageMemory(b, sh).mem.Total())
	}
	return total, nil
}

// Fits is Memory's Fits for the job at globalBatch sequences per step, or
// Memory's error: every stage's HBM within the usable HBM and what it
// offloads within the host memory. A layout whose state alone exceeds
// the usable HBM does not fit at any batch: the activations and the
// phases only add to it.
func (bm *BatchMemory) Fits(globalBatch int) (bool, error) {
	why, err := bm.Check(globalBatch)
	return why == "" && err == nil, err
}

// Check is why the job does not fit at globalBatch sequences per step
// (Memory.Reason of its most loaded stage: ReasonHBM before ReasonHost),
// "" when it fits, or Memory's error.
func (bm *BatchMemory) Check(globalBatch int) (Reason, error) {
	sh, err := bm.shapeAt(globalBatch)
	if err != nil {
		return "", err
	}
	bm.stage()
	if bm.state > bm.usable {
		return ReasonHBM, nil
	}
	var why Reason
	for i := range bm.stages[:bm.n] {
		switch r := bm.est.Job.stageReason(&bm.stages[i], sh, &bm.ps); r {
		case ReasonHBM:
			return r, nil
		case ReasonHost:
			why = r
		}
	}
	return why, nil
}

// StateExceeds reports whether the job's state alone, its larger stage's
// weights, gradients and optimizer state (Memory.State), exceeds the
// usable HBM: Check is then ReasonHBM at every batch it weighs. The state
// reads the layout's parameters per stage, the job's precision, offload
// and temporaries' scale, and gradient accumulation's sum of a job's
// micro-batches without a pipeline (stageBase), not the schedule, its
// chunks, the remat policy, the expert dispatch or, on a pipeline, the
// micro-batches: on a pipelined layout it says the same for every job
// Reschedule and SetPolicy make of this one.
//
// It weighs the state alone where the stages' bases are not yet worked
// out (stageState, which stageBase builds each base's on): a search asks
// it of every layout before any ceiling or batch, and drops most layouts
// without weighing a batch.
func (bm *BatchMemory) StateExceeds() bool {
	if !bm.stateOK {
		j := &bm.est.Job
		for i := range bm.n {
			bm.state = max(bm.state, j.stageState(&bm.sh, stage(i)).State())
		}
		bm.usable = bm.est.Mesh.Multislice.Slice.Chip.UsableHBM(j.HBMHeadroom)
		bm.stateOK = true
	}
	return bm.state > bm.usable
}

// Bound is the estimator's Bound of the job at globalBatch, the job
// checked and its shape worked out once for every batch.
func (bm *BatchMemory) Bound(globalBatch int) (Bound, error) {
	sh, err := bm.shapeAt(globalBatch)
	if err != nil {
		return Bound{}, err
	}
	j := bm.est.Job
	j.GlobalBatch = globalBatch
	return bm.e.bound(&j, &bm.est.Mesh, sh)
}

// MaxThroughput is at least Bound(b).TokensPerSecondPerChip() at every
// batch b from lo to hi sequences per step the job runs at, without
// costing any: a search need not find the batch of a job whose every
// batch is slower than the layouts it keeps. The bound's step is its
// compute (at least computeFloor's, each of its four terms rounded down
// by under a nanosecond) stretched by the bubble and the slice sync (each
// rounded down by under one more); a step's tokens over the floor's time
// is monotone in the batch, so one of lo and hi is the fastest. It is
// +Inf where the floor is too small to say (or the chip has no peak for
// the job's quantization, which Bound reports).
func (bm *BatchMemory) MaxThroughput(lo, hi int) float64 {
	f := bm.stepFloor()
	if f.noPeak {
		return math.Inf(1)
	}
	perShard, fixed := bm.computeFloor()
	best := 0.0
	for _, b := range [2]int{lo, hi} {
		floorNs := (perShard*float64(b)/float64(bm.shards) + fixed) * 1e9 * (1 - slack)
		stepNs := bm.jobStretch()*(floorNs-4) - 2
		if !(stepNs > 0) {
			return math.Inf(1)
		}
		best = max(best, float64(b)*float64(bm.est.Job.Seq)/(stepNs/1e9)/f.chips)
	}
	return best * (1 + slack)
}

// slack covers the floating-point rounding of the ceilings on throughput
// and of what they bound.
const slack = 1e-9

// ThroughputCeiling is at least the estimator's Throughput of the job's
// Bound at globalBatch, without its compute: the least step its
// collectives allow where the compute is at least MaxThroughput's floor
// (leastStep). It is +Inf where that says nothing.
func (bm *BatchMemory) ThroughputCeiling(globalBatch int) float64 {
	f := bm.stepFloor()
	if f.noPeak {
		return math.Inf(1)
	}
	c, ok := bm.ceilingStep(globalBatch)
	if !ok {
		return math.Inf(1)
	}
	stepNs := bm.leastStep(&c, bm.jobStretch())
	if !(stepNs > 0) {
		return math.Inf(1)
	}
	return float64(globalBatch) * float64(bm.est.Job.Seq) / (stepNs / 1e9) / f.chips * (1 + slack)
}

// stepFloor is bm.floor, worked out the first time.
func (bm *BatchMemory) stepFloor() *stepFloor {
	f := &bm.floor
	if !f.ok {
		j, m := &bm.est.Job, &bm.est.Mesh
		_, err := j.matmulPeak(&m.Multislice.Slice.Chip)
		f.ok, f.noPeak, f.chips = true, err != nil, float64(m.Chips())
	}
	return f
}

// jobStretch is the Stretch of the job's own schedule, worked out the
// first time it is asked for (the ceilings over a range of schedules,
// which a search weighs most, take theirs from the caller).
func (bm *BatchMemory) jobStretch() float64 {
	f := bm.stepFloor()
	if !f.stretchOK {
		f.stretch, f.stretchOK = bm.Stretch(bm.est.Job.Schedule, bm.sh.v), true
	}
	return f.stretch
}

// stepFloor is what the ceilings on throughput find once for a job's
// memory, whatever its policy: whether the chip has a peak for the job's
// matmuls, by how much the bubble and the slice sync stretch the compute,
// and the chips; and, until the policy changes, its compute's floor.
type stepFloor struct {
	ok, noPeak     bool
	stretch, chips float64
	stretchOK      bool // stretch is worked out (jobStretch)
	// computeFloor's at one sequence per micro-batch, for the policy
	// set, when computeOK
	computeOK       bool
	perShard, fixed float64
}

// shapeAt is the job's shape at globalBatch, or the error Memory gives.
// It is good until the next call.
func (bm *BatchMemory) shapeAt(globalBatch int) (*shape, error) {
	switch {
	case globalBatch <= 0:
		// the job's checks come first, and only the sequence length's
		// before the batch's: it passed them
		j := bm.est.Job
		j.GlobalBatch = globalBatch
		return nil, j.validateSettings()
	case globalBatch%bm.shards != 0:
		return nil, &Infeasible{Reason: ReasonBatch, Detail: batchDetail(globalBatch, bm.sh)}
	}
	if b := globalBatch / bm.shards; bm.at.b != b {
		bm.est.Job.setBatch(&bm.at, b)
	}
	return &bm.at, nil
}

// Bound is an estimate as far as its compute, pipeline bubble and slice
// sync: the part of the step the collectives only add to. Finish
// completes it.
type Bound struct {
	est Estimate
	sh  shape
}

// Bound is the first part of Estimate, with its errors: a search that
// ranks layouts by throughput need not finish the estimate of one whose
// bound is already slower than the layouts it keeps.
func (e *Estimator) Bound(j Job, m mesh.Mesh) (Bound, error) {
	sh, err := e.validShape(&j, &m)
	if err != nil {
		return Bound{}, err
	}
	return e.bound(&j, &m, &sh)
}

// bound is Bound of j, checked, on m in shape sh.
func (e *Estimator) bound(j *Job, m *mesh.Mesh, sh *shape) (Bound, error) {
	chip := m.Multislice.Slice.Chip
	if _, err := j.MatmulPeak(chip); err != nil {
		return Bound{}, err
	}
	est := Estimate{Mesh: *m, Job: *j, MicroBatchSize: sh.b}
	if j.Model.MoE() {
		est.TokensPerExpert = j.TokensPerExpert(sh.b, sh.s, sh.e)
	}
	if j.ParameterOffload || j.OptimizerOffload {
		// the offloaded state's PCIe time needs the host's share (Finish
		// spells the memory out)
		est.Memory = e.mostLoaded(j, m, sh).mem
	}
	if err := e.compute(&est, sh); err != nil {
		return Bound{}, err
	}
	pp := e.pipe(j.Schedule, sh.p, sh.m, sh.v)
	est.Bubble = pp.bubble
	if pp.bubble > 0 {
		est.Time.Bubble = seconds(est.Time.Compute.Seconds() * pp.bubble / (1 - pp.bubble))
	}
	// Every step ends in a barrier across slices: the step takes as long as
	// the slowest slice's.
	est.Time.Sync = seconds(est.Time.Compute.Seconds() * j.calibration().SliceJitter * e.maxNormal(m.Multislice.Slices))
	return Bound{est: est, sh: *sh}, nil
}

// GlobalBatch is the batch the bound is of.
func (b Bound) GlobalBatch() int { return b.est.Job.GlobalBatch }

// Step is the bound's step: compute, bubble and sync, at most the
// estimate's Time.Step.
func (b Bound) Step() time.Duration { return b.est.Time.Compute + b.est.Time.Bubble + b.est.Time.Sync }

// TokensPerSecondPerChip is the throughput at the bound's step, at least
// the estimate's.
func (b Bound) TokensPerSecondPerChip() float64 {
	return tokensPerSecondPerChip(b.est.Job, b.est.Mesh.Chips(), b.Step())
}

// tokensPerSecondPerChip is j's throughput per chip at a step on n chips.
// It never rises with the step: Duration.Seconds never falls as the
// duration grows, nor does division by it rise.
func tokensPerSecondPerChip(j Job, n int, step time.Duration) float64 {
	return float64(j.GlobalBatch) * float64(j.Seq) / step.Seconds() / float64(n)
}
