package infeed

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

type kind uint8

const (
	exampleDone kind = iota
	copyDone
	loadDone
	computeDone
	drainDone
)

type event struct {
	at     time.Duration
	seq    int64
	kind   kind
	chip   int
	worker int
}

// queue is a binary heap of events (queue.go).
type queue []event

type mxuState uint8

const (
	mxuWaiting mxuState = iota // for a batch in HBM
	mxuLoading
	mxuComputing
	mxuBlocked // result done, outfeed full
	mxuDone
)

type chip struct {
	node int
	// production: examples started and finished so far, finished batches
	// waiting for room in the infeed, and batches pushed into it
	started, done int
	assembled     int
	pushed        int
	infeed        int
	copying       bool
	hbm           int // batches in HBM
	// MXU
	mxu         mxuState
	steps       int // steps started
	finished    int // steps computed
	firstEnd    time.Duration
	lastEnd     time.Duration
	waitSince   time.Duration
	waitReason  int // 0 infeed empty, 1 HBM copy
	outfeed     int
	draining    bool
	drained     int
	busyCopy    time.Duration
	busyMXU     time.Duration
	busyDrain   time.Duration
	stalls      Stalls
	blockedFrom time.Duration
	// the stalls when the steady state's first and last steps ended
	// (firstEnd, lastEnd): all the MXU's waits before those steps
	midStalls, lastStalls Stalls
}

// Sim is the discrete-event simulation: a state machine over an event
// queue whose clock is simulated time. Step handles one event.
type Sim struct {
	c       Config
	now     time.Duration
	seq     int64
	q       queue
	chips   []chip
	workers []int // NUMA node of each worker
	nodeEnd []int // with local placement, one past the last worker of each node
	idle    idleSet
	busy    time.Duration // summed over workers
	rng     *rand.Rand
	done    bool
}

// NewSim prepares a simulation.
func NewSim(c Config) (*Sim, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s := &Sim{c: c, chips: make([]chip, c.Chips), workers: make([]int, c.VCPUs), nodeEnd: make([]int, c.NUMANodes),
		idle: newIdleSet(c.VCPUs), rng: rand.New(rand.NewPCG(c.Seed, 0x1f))}
	for i := range s.chips {
		s.chips[i].node = i * c.NUMANodes / c.Chips
	}
	for w := range s.workers {
		s.workers[w] = w * c.NUMANodes / c.VCPUs
		if c.Placement == Node0 {
			s.workers[w] = 0
		}
		s.nodeEnd[s.workers[w]] = w + 1 // a node's workers are consecutive
	}
	s.dispatch()
	return s, nil
}

// MinMeasuredSteps is the fewest steps whose run measures a step: the
// steady state is measured from the end of the middle step (midStep, at
// least the first, which holds the pipeline's fill from empty) to the
// last, so a run of one step measures none. Its StepTime was 0, which
// Bound read as the MXU's (review 152 #3: "input keeps up" for a host
// that starved the chips for 2 s a step). A Sim runs and traces a single
// step; Run, whose Result carries a verdict, refuses one.
const MinMeasuredSteps = 2

// Run simulates c to the end and measures its steady state; c.Steps must
// be at least MinMeasuredSteps.
func Run(c Config) (Result, error) {
	if c.Steps < MinMeasuredSteps {
		return Result{}, bad("{steps}", c.Steps, fmt.Sprintf("%d to %d: the steady state is measured from the end of the middle step (at least the first, the pipeline's fill) to the last, and one step leaves none",
			MinMeasuredSteps, MaxSteps))
	}
	s, err := NewSim(c)
	if err != nil {
		return Result{}, err
	}
	for s.Step() {
	}
	for i := range s.chips {
		if s.chips[i].finished != c.Steps || s.chips[i].drained != c.Steps {
			return Result{}, fmt.Errorf("infeed: chip %d stopped after %d of %d steps with no event pending: %w", i, s.chips[i].finished, c.Steps, ErrStuck)
		}
	}
	return s.Result(), nil
}

// ErrStuck reports a simulation that ran out of events before every step
// was done: a bug in the model, which tests guard against.
var ErrStuck = errors.New("simulation stuck")

func (s *Sim) at(d time.Duration, k kind, chip, worker int) {
	s.seq++
	s.q.push(event{at: s.now + d, seq: s.seq, kind: k, chip: chip, worker: worker})
}

// Step handles the next event; it returns false when every chip has run
// every step and drained every result.
func (s *Sim) Step() bool {
	if len(s.q) == 0 {
		s.done = true
		return false
	}
	e := s.q.pop()
	s.now = e.at
	ch := &s.chips[e.chip]
	switch e.kind {
	case exampleDone:
		s.idle.add(e.worker)
		ch.done++
		if ch.done%s.c.Batch == 0 {
			ch.assembled++
			s.pushInfeed(e.chip)
		}
	case copyDone:
		ch.copying = false
		ch.busyCopy += s.c.copyTime()
		ch.hbm++
		s.pushInfeed(e.chip) // room freed in the infeed queue
		s.startCopy(e.chip)
	case loadDone:
		ch.mxu = mxuComputing
		s.at(s.c.Compute, computeDone, e.chip, 0)
	case computeDone:
		ch.busyMXU += s.c.ParamLoad + s.c.Compute
		ch.finished++
		if ch.finished == s.midStep() {
			ch.firstEnd, ch.midStalls = s.now, ch.stalls
		}
		ch.lastEnd, ch.lastStalls = s.now, ch.stalls
		ch.hbm--
		s.startCopy(e.chip) // an HBM buffer is free
		if ch.outfeed < s.c.OutfeedDepth {
			ch.outfeed++
			s.startDrain(e.chip)
			s.nextStep(e.chip)
		} else {
			ch.mxu = mxuBlocked
			ch.blockedFrom = s.now
		}
	case drainDone:
		ch.draining = false
		ch.busyDrain += s.c.Drain
		ch.outfeed--
		ch.drained++
		if ch.mxu == mxuBlocked {
			ch.stalls.OutfeedFull += s.now - ch.blockedFrom
			ch.outfeed++
			s.nextStep(e.chip)
		}
		s.startDrain(e.chip)
	}
	s.dispatch()
	s.startMXUs()
	return true
}

// copyTime is the time to copy one batch over PCIe into HBM.
func (c Config) copyTime() time.Duration {
	bytes := float64(c.ExampleBytes) * float64(c.Batch)
	return time.Duration(math.Ceil(bytes / float64(c.PCIe) * 1e9))
}

// pushInfeed moves assembled batches into the infeed queue while it has
// room.
func (s *Sim) pushInfeed(i int) {
	ch := &s.chips[i]
	for ch.assembled > 0 && ch.infeed < s.c.InfeedDepth {
		ch.assembled--
		ch.infeed++
		ch.pushed++
		s.startCopy(i)
	}
}

// startCopy starts the DMA of the next infeed batch into a free HBM buffer.
func (s *Sim) startCopy(i int) {
	ch := &s.chips[i]
	if ch.copying || ch.infeed == 0 || ch.hbm >= s.c.HBMBuffers {
		return
	}
	ch.copying = true
	ch.infeed--
	s.updateWait(i)
	s.at(s.c.copyTime(), copyDone, i, 0)
}

func (s *Sim) startDrain(i int) {
	ch := &s.chips[i]
	if ch.draining || ch.outfeed == 0 {
		return
	}
	ch.draining = true
	s.at(s.c.Drain, drainDone, i, 0)
}

// nextStep puts the MXU back to waiting for its next batch, or done.
func (s *Sim) nextStep(i int) {
	ch := &s.chips[i]
	if ch.steps == s.c.Steps {
		ch.mxu = mxuDone
		return
	}
	ch.mxu = mxuWaiting
	ch.waitSince = s.now
	ch.waitReason = s.reason(i)
}

func (s *Sim) reason(i int) int {
	if s.chips[i].copying {
		return 1
	}
	return 0
}

// updateWait re-labels a waiting MXU's stall when its cause changes.
func (s *Sim) updateWait(i int) {
	ch := &s.chips[i]
	if ch.mxu != mxuWaiting {
		return
	}
	if r := s.reason(i); r != ch.waitReason {
		s.closeWait(i)
		ch.waitReason = r
	}
}

func (s *Sim) closeWait(i int) {
	ch := &s.chips[i]
	d := s.now - ch.waitSince
	if ch.waitReason == 1 {
		ch.stalls.HBMCopy += d
	} else {
		ch.stalls.InfeedEmpty += d
	}
	ch.waitSince = s.now
}

// startMXUs starts every waiting MXU whose batch is in HBM.
func (s *Sim) startMXUs() {
	for i := range s.chips {
		ch := &s.chips[i]
		s.updateWait(i)
		if ch.mxu != mxuWaiting || ch.hbm == 0 || ch.steps == s.c.Steps {
			continue
		}
		s.closeWait(i)
		ch.steps++
		ch.mxu = mxuLoading
		s.at(s.c.ParamLoad, loadDone, i, 0)
	}
}

// dispatch gives idle workers, in index order, the next example of the
// chip furthest behind that they may serve, while that chip has a batch
// to produce.
func (s *Sim) dispatch() {
	for w := s.idle.next(0); w >= 0; w = s.idle.next(w + 1) {
		best := s.chipFor(w)
		if best < 0 {
			// Nothing this worker may serve now, nor any later worker that
			// may serve the same chips: dispatch only ever makes a chip
			// less eligible. Those are the rest of its node's workers with
			// local placement, and every worker otherwise.
			if s.c.Placement != Local {
				return
			}
			w = s.nodeEnd[s.workers[w]] - 1
			continue
		}
		ch := &s.chips[best]
		ch.started++
		s.idle.remove(w)
		d := s.exampleCost(s.workers[w] != ch.node)
		s.busy += d
		s.at(d, exampleDone, best, w)
	}
}

// chipFor is the chip furthest behind that worker w may serve now, or -1.
func (s *Sim) chipFor(w int) int {
	best := -1
	for i := range s.chips {
		ch := &s.chips[i]
		if s.c.Placement == Local && s.workers[w] != ch.node {
			continue
		}
		// the host prepares at most one batch beyond those pushed into
		// the infeed (a one-batch prefetch buffer in host memory)
		if ch.started >= s.c.Batch*s.c.Steps || ch.started >= s.c.Batch*(ch.pushed+2) {
			continue
		}
		if best < 0 || s.progress(i) < s.progress(best) {
			best = i
		}
	}
	return best
}

func (s *Sim) progress(i int) int { return s.chips[i].started }

func (s *Sim) exampleCost(remote bool) time.Duration {
	d := float64(s.c.ExampleCost)
	if remote {
		d *= s.c.CrossNUMA
	}
	if s.c.Jitter > 0 {
		// log-normal with the given coefficient of variation and mean d
		sigma := math.Sqrt(math.Log(1 + s.c.Jitter*s.c.Jitter))
		d *= math.Exp(sigma*s.rng.NormFloat64() - sigma*sigma/2)
	}
	// a sample this far out (over 6 standard deviations for a 1h example
	// at the largest jitter Validate allows) is clamped, so that the clock
	// cannot overflow
	return time.Duration(min(d, float64(MaxSimulated)))
}

// midStep is the step from whose end the steady state is measured: the
// middle of the run, past the queues' fill.
func (s *Sim) midStep() int { return max(1, s.c.Steps/2) }

// Result summarises the run so far.
func (s *Sim) Result() Result {
	r := Result{Config: s.c, Makespan: s.now}
	if s.now == 0 {
		return r
	}
	n := float64(len(s.chips))
	var step time.Duration
	var waits Stalls
	for i := range s.chips {
		ch := &s.chips[i]
		r.CopyBusy += float64(ch.busyCopy) / float64(s.now) / n
		r.MXUBusy += float64(ch.busyMXU) / float64(s.now) / n
		r.DrainBusy += float64(ch.busyDrain) / float64(s.now) / n
		r.Stalls.InfeedEmpty += ch.stalls.InfeedEmpty / time.Duration(n)
		r.Stalls.HBMCopy += ch.stalls.HBMCopy / time.Duration(n)
		r.Stalls.OutfeedFull += ch.stalls.OutfeedFull / time.Duration(n)
		if k := s.midStep(); ch.finished > k {
			steps := time.Duration(ch.finished - k)
			step += (ch.lastEnd - ch.firstEnd) / steps
			waits.InfeedEmpty += (ch.lastStalls.InfeedEmpty - ch.midStalls.InfeedEmpty) / steps
			waits.HBMCopy += (ch.lastStalls.HBMCopy - ch.midStalls.HBMCopy) / steps
			waits.OutfeedFull += (ch.lastStalls.OutfeedFull - ch.midStalls.OutfeedFull) / steps
		}
	}
	r.StepTime = step / time.Duration(n)
	r.StepStalls = Stalls{InfeedEmpty: waits.InfeedEmpty / time.Duration(n), HBMCopy: waits.HBMCopy / time.Duration(n), OutfeedFull: waits.OutfeedFull / time.Duration(n)}
	r.HostBusy = float64(s.busy) / (float64(s.now) * float64(len(s.workers)))
	r.ExamplesPerSecond = float64(s.c.Steps*s.c.Batch*s.c.Chips) / s.now.Seconds()
	return r
}
