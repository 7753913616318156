package capacity

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"shardlab/internal/enum"
	"shardlab/unit"
)

// Granularity is the unit All Capacity mode maintenance is carried out on
// [ac-maint]: "at the host, sub-block, block, or reservation level". A host
// (VM) takes its sub-block's slice down, so the two cost the job the same.
type Granularity int

const (
	BySubBlock    Granularity = iota // VM or sub-block at a time, moving slices onto spares
	ByBlock                          // one block at a time
	ByReservation                    // the whole reservation at once
)

var granularityNames = enum.New[Granularity]("Granularity", []string{BySubBlock: "sub-block", ByBlock: "block", ByReservation: "reservation"})

func (g Granularity) String() string { return granularityNames.String(g) }

// Granularities lists the accepted granularity names.
func Granularities() []string { return granularityNames.List() }

// Default rates and durations. Each says where it comes from; the ones no
// source gives are assumptions, and every one can be overridden.
const (
	// DefaultChipFailuresPerHour: the Llama 3 405B pre-training run had 419
	// unexpected interruptions in 54 days on 16,384 H100 GPUs (Llama 3
	// paper, arXiv:2407.21783, section 3.3.4). Per accelerator: 419 / (54 x
	// 24 h x 16,384) = 1.97e-5 per hour. We take one TPU chip to fail as
	// often as one GPU (an assumption: no TPU figure is published); a host
	// fails at this times its chips (hw).
	DefaultChipFailuresPerHour = 419.0 / (54 * 24 * 16384)
	// DefaultMaintenanceEvery: All Capacity maintenance "won't be carried
	// out more frequently than once every 90 days" [ac-maint]; we take it
	// every 90 days, the most often it can come.
	DefaultMaintenanceEvery = 90 * 24 * time.Hour
	// DefaultMaintenanceDown is how long a maintained unit is unavailable:
	// an assumption, not published.
	DefaultMaintenanceDown = 4 * time.Hour
	// DefaultRepair is the mean time to repair a failed host and return its
	// sub-block: an assumption, not published.
	DefaultRepair = 24 * time.Hour
	// DefaultRecovery is the time to detect a failure and reschedule the
	// slice onto a spare (infrastructure recovery): an assumption.
	DefaultRecovery = 10 * time.Minute
	// DefaultStartup is TPU initialisation, program startup and XLA
	// compilation after a restart: an assumption.
	DefaultStartup = 10 * time.Minute
	// DefaultStoragePerHost is the checkpoint write and read bandwidth of
	// each host to storage (every host writes its shards in parallel): 1
	// GB/s, an assumption; Hyperdisk and Cloud Storage limits vary with the
	// volume and the VM.
	DefaultStoragePerHost unit.BytesPerSecond = 1e9
)

// Config is a simulation's inputs. Durations are means or fixed times as
// each field says.
type Config struct {
	ChipFailuresPerHour float64       // unexpected failures per chip per hour
	Repair              time.Duration // mean of an exponential repair time
	Recovery            time.Duration // failure detected -> slice rescheduled
	Startup             time.Duration // TPU init + program startup + compile
	Save, Restore       time.Duration // one checkpoint save or restore
	Interval            time.Duration // productive time between checkpoints
	MaintenanceEvery    time.Duration // 0: no planned maintenance
	MaintenanceDown     time.Duration
	Granularity         Granularity // All Capacity mode; managed mode has its own
	Horizon             time.Duration
	Seed                uint64
}

// CheckpointTime is how long writing (or reading) state takes when hosts
// move it in parallel at perHost each.
func CheckpointTime(state unit.Bytes, hosts int, perHost unit.BytesPerSecond) time.Duration {
	if hosts < 1 || perHost <= 0 {
		return 0
	}
	return time.Duration(float64(state) / (float64(perHost) * float64(hosts)) * float64(time.Second))
}

// MaxHorizon bounds a simulation: 10 simulated years.
const MaxHorizon = 10 * 365 * 24 * time.Hour

func (c Config) check() error {
	d := func(name string, v time.Duration, lo time.Duration) error {
		if v < lo || v > MaxHorizon {
			return refuse(name, v.String(), "a duration from %v to %v", lo, MaxHorizon)
		}
		return nil
	}
	if r := c.ChipFailuresPerHour; math.IsNaN(r) || math.IsInf(r, 0) || r < 0 || r > 1 {
		return refuse("chip failure rate", fmt.Sprint(r), "a finite rate in [0, 1] per chip per hour")
	}
	for _, f := range []struct {
		name string
		v    time.Duration
		lo   time.Duration
	}{
		{"repair", c.Repair, 0}, {"recovery", c.Recovery, 0}, {"startup", c.Startup, 0},
		{"checkpoint save", c.Save, 0}, {"checkpoint restore", c.Restore, 0},
		{"checkpoint interval", c.Interval, time.Second}, {"maintenance interval", c.MaintenanceEvery, 0},
		{"maintenance downtime", c.MaintenanceDown, 0}, {"horizon", c.Horizon, time.Minute},
	} {
		if err := d(f.name, f.v, f.lo); err != nil {
			return err
		}
	}
	if c.MaintenanceEvery != 0 && c.MaintenanceEvery < 24*time.Hour {
		return refuse("maintenance interval", c.MaintenanceEvery.String(), "0 (none) or at least 24h")
	}
	if c.Granularity < BySubBlock || c.Granularity > ByReservation {
		return refuse("granularity", fmt.Sprint(int(c.Granularity)), "sub-block, block or reservation")
	}
	return nil
}

// Badput is time lost, in the ML Goodput library's categories.
type Badput struct {
	ProgramStartup         time.Duration // TPU init, program startup, compile
	CheckpointSave         time.Duration
	CheckpointRestore      time.Duration
	WastedProgress         time.Duration // work since the last checkpoint, lost
	InfrastructureRecovery time.Duration // detection, rescheduling, maintenance downtime
	WaitingForCapacity     time.Duration // no healthy spare
}

// Total is the sum of the categories.
func (b Badput) Total() time.Duration {
	return b.ProgramStartup + b.CheckpointSave + b.CheckpointRestore + b.WastedProgress + b.InfrastructureRecovery + b.WaitingForCapacity
}

// Result is what a simulation measured.
type Result struct {
	Horizon    time.Duration
	Productive time.Duration // goodput time: work kept
	Badput     Badput
	// HostFailures counts failures anywhere in the job's sub-blocks or its
	// spares; Interruptions the ones that stopped the job.
	HostFailures, Interruptions, MaintenanceEvents, Checkpoints int
}

// Goodput is the productive fraction of the horizon.
func (r Result) Goodput() float64 { return float64(r.Productive) / float64(r.Horizon) }

type phase int

const (
	running phase = iota
	saving
	recovering
	waiting
	startup
	restoring
	maintDown
)

const never = time.Duration(math.MaxInt64)

// Sim is the simulation as a state machine: Step advances the clock to the
// next event and handles it; Result reads the totals. Time is a counter it
// owns; randomness comes only from its seeded generator.
type Sim struct {
	cfg Config
	rng *rand.Rand
	// per-sub-block failure rate per nanosecond
	rate      float64
	used      int // the job's sub-blocks
	slices    int
	perSlice  int
	blocks    int // blocks the job spans
	managed   bool
	missing   int // job sub-blocks failed and not yet replaced
	spares    int // healthy spare sub-blocks
	repairs   []time.Duration
	now       time.Duration
	ph        phase
	phaseEnd  time.Duration
	work      time.Duration // productive time since the last checkpoint
	nextFail  time.Duration
	nextMaint time.Duration
	maintLeft int // planned interruptions still to take
	maintDown bool
	res       Result
	done      bool
}

// NewSim checks cfg and starts a simulation of the job placed by p, which
// begins running at time 0 with a fresh checkpoint.
func NewSim(p Placement, cfg Config) (*Sim, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if p.Used < 1 {
		return nil, refuse("placement", "of no sub-blocks", "a placement from Place")
	}
	s := &Sim{
		cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5ca1ab1e)),
		rate: cfg.ChipFailuresPerHour * float64(p.Reservation.Hierarchy.SubBlockChips()) / float64(time.Hour),
		used: p.Used, slices: len(p.Slices), perSlice: p.SubBlocksPerSlice, blocks: p.BlocksSpanned,
		managed:   p.Reservation.Mode == Managed,
		spares:    p.Reserved,
		nextMaint: never,
	}
	if s.managed {
		s.spares = p.HeldBack
	}
	if cfg.MaintenanceEvery > 0 {
		s.nextMaint = cfg.MaintenanceEvery
	}
	s.res.Horizon = cfg.Horizon
	s.enter(running)
	s.drawFailure()
	return s, nil
}

// Run simulates p under cfg to the horizon.
func Run(p Placement, cfg Config) (Result, error) {
	s, err := NewSim(p, cfg)
	if err != nil {
		return Result{}, err
	}
	for s.Step() {
	}
	return s.Result(), nil
}

// Now is the simulated time.
func (s *Sim) Now() time.Duration { return s.now }

// Result is the totals so far; after the last Step, work not yet saved at
// the horizon counts as productive.
func (s *Sim) Result() Result {
	r := s.res
	r.Productive += s.work
	return r
}

func (s *Sim) drawFailure() {
	healthy := s.used - s.missing + s.spares
	if healthy <= 0 || s.rate == 0 {
		s.nextFail = never
		return
	}
	s.nextFail = s.now + time.Duration(s.rng.ExpFloat64()/(s.rate*float64(healthy)))
	if s.nextFail < s.now { // overflow
		s.nextFail = never
	}
}

func (s *Sim) enter(p phase) {
	s.ph = p
	var d time.Duration
	switch p {
	case running:
		if s.maintLeft > 0 {
			s.interruptForMaintenance()
			return
		}
		d = s.cfg.Interval - s.work
	case saving:
		d = s.cfg.Save
	case recovering:
		d = s.cfg.Recovery
	case waiting:
		s.phaseEnd = never
		return
	case startup:
		d = s.cfg.Startup
	case restoring:
		d = s.cfg.Restore
	case maintDown:
		d = s.cfg.MaintenanceDown
	}
	s.phaseEnd = s.now + d
}

// advance moves the clock to t, charging the time to the current phase.
func (s *Sim) advance(t time.Duration) {
	dt := t - s.now
	b := &s.res.Badput
	switch s.ph {
	case running:
		s.work += dt
	case saving:
		b.CheckpointSave += dt
	case recovering, maintDown:
		b.InfrastructureRecovery += dt
	case waiting:
		b.WaitingForCapacity += dt
	case startup:
		b.ProgramStartup += dt
	case restoring:
		b.CheckpointRestore += dt
	}
	s.now = t
}

// Step handles the next event and reports whether the horizon is still
// ahead.
func (s *Sim) Step() bool {
	if s.done {
		return false
	}
	t, ev := s.cfg.Horizon, 0
	for i, c := range []time.Duration{s.phaseEnd, s.nextFail, s.nextRepair(), s.nextMaint} {
		if c < t {
			t, ev = c, i+1
		}
	}
	s.advance(t)
	switch ev {
	case 0:
		s.done = true
		return false
	case 1:
		s.endPhase()
	case 2:
		s.fail()
	case 3:
		s.repaired()
	case 4:
		s.maintenance()
	}
	return true
}

func (s *Sim) nextRepair() time.Duration {
	if len(s.repairs) == 0 {
		return never
	}
	return s.repairs[0]
}

func (s *Sim) endPhase() {
	switch s.ph {
	case running:
		s.enter(saving)
	case saving:
		s.res.Productive += s.work
		s.work = 0
		s.res.Checkpoints++
		if s.maintLeft > 0 {
			s.interruptForMaintenance()
			return
		}
		s.enter(running)
	case recovering:
		s.resume()
	case startup:
		s.enter(restoring)
	case restoring, maintDown:
		if s.ph == maintDown {
			s.enter(startup)
			return
		}
		s.enter(running)
	}
}

// resume swaps healthy spares in for the failed sub-blocks, or waits.
func (s *Sim) resume() {
	if s.missing > s.spares {
		s.enter(waiting)
		return
	}
	s.spares -= s.missing
	s.missing = 0
	s.enter(startup)
}

func (s *Sim) fail() {
	s.res.HostFailures++
	healthyJob := s.used - s.missing
	inJob := s.rng.IntN(healthyJob+s.spares) < healthyJob
	s.addRepair(s.now + time.Duration(s.rng.ExpFloat64()*float64(s.cfg.Repair)))
	if !inJob {
		s.spares--
		s.drawFailure()
		return
	}
	s.missing++
	switch s.ph {
	case running, saving, startup, restoring:
		s.res.Interruptions++
		s.res.Badput.WastedProgress += s.work
		s.work = 0
		s.enter(recovering)
	}
	s.drawFailure()
}

func (s *Sim) addRepair(t time.Duration) {
	i := len(s.repairs)
	s.repairs = append(s.repairs, t)
	for i > 0 && s.repairs[i-1] > t { // keep sorted; ties keep arrival order
		s.repairs[i] = s.repairs[i-1]
		i--
	}
	s.repairs[i] = t
}

func (s *Sim) repaired() {
	s.repairs = s.repairs[1:]
	s.spares++
	if s.ph == waiting {
		s.resume()
	}
	s.drawFailure()
}

// maintenance starts a planned maintenance wave. Managed mode: Compute
// Engine moves one slice at a time onto its holdback. All Capacity mode,
// by sub-block: the job moves as many slices at a time as its healthy
// spares hold; by block: one stop per block the job spans; by
// reservation: one stop. A stop with nowhere to move waits out the
// downtime. Every stop is announced, so the job checkpoints first and
// loses no progress.
func (s *Sim) maintenance() {
	s.nextMaint += s.cfg.MaintenanceEvery
	s.res.MaintenanceEvents++
	batch := s.spares / s.perSlice // slices the spares can hold at once
	switch {
	case s.managed || s.cfg.Granularity == BySubBlock:
		if batch == 0 {
			s.maintLeft, s.maintDown = 1, true
			break
		}
		s.maintLeft, s.maintDown = (s.slices+batch-1)/batch, false
	case s.cfg.Granularity == ByBlock:
		s.maintLeft, s.maintDown = s.blocks, true
	default:
		s.maintLeft, s.maintDown = 1, true
	}
	switch {
	case s.ph == running && s.work == 0:
		// a checkpoint has just been written: nothing to save first
		s.interruptForMaintenance()
	case s.ph == running:
		s.enter(saving)
	}
}

// interruptForMaintenance takes one planned stop, right after a checkpoint.
func (s *Sim) interruptForMaintenance() {
	s.maintLeft--
	s.res.Interruptions++
	if s.maintDown {
		s.enter(maintDown)
		return
	}
	s.enter(recovering)
}

// ParseGranularity reads a maintenance granularity, in any case; vm and
// host mean sub-block (a VM takes its sub-block's slice down).
func ParseGranularity(s string) (Granularity, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	switch v {
	case "vm", "host":
		return BySubBlock, nil
	}
	if g, ok := granularityNames.Lookup(v); ok {
		return g, nil
	}
	return 0, refuse("granularity", fmt.Sprintf("%q", s), "sub-block (or vm, host), block or reservation")
}
