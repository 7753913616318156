package systolic

import "math"

type phase uint8

const (
	phaseWait   phase = iota // waiting for HBM data or a shadow load
	phaseLoad                // shifting the stationary tile in, one row per cycle
	phaseStream              // streaming through the skewed array
	phaseDrain               // OS: shifting the outputs out, one row per cycle
	phaseDone
)

// Phase names, for traces.
func (p phase) String() string {
	return [...]string{"wait", "load", "stream", "drain", "done"}[p]
}

// Sim is the cycle-level simulator: a state machine whose clock is the
// cycle counter. Each Step advances one cycle: it moves the current fold
// through load, stream and drain, counts which PEs multiply this cycle (the
// skewed wavefront: PE (i, j) works on streamed element τ−i−j), which edge
// buffers are read or written, and what the HBM engine delivers. The counts
// of a cycle are interval lengths in closed form, so a Step costs O(1)
// whatever the array's size; Simulate also skips, in closed form, the runs
// of cycles within a phase that only add to counters, so its cost grows
// with the folds, not the cycles.
type Sim struct {
	a                   Array
	g                   GEMM
	m                   Mapping
	folds               []fold
	fr, fc              int
	e                   int64
	fitsA, fitsB, fitsC bool

	cycle int64
	f     int   // current fold
	ph    phase // current phase
	local int   // cycle within the phase
	res   Result

	// HBM engine: a fluid FIFO; each fold's reads complete at ready[f].
	hbmBusyUntil float64
	ready        []float64
	issued       []bool
	// double buffering: the next fold's stationary tile loads into shadow
	// registers starting when this fold starts streaming.
	shadowStart int64
	shadowBusy  bool
	// reference counts each streaming cycle by walking the fold's rows and
	// columns (waveLoops) and never skips: the original simulator, kept for
	// tests and the benchmark.
	reference bool
	// ws, os: the dataflow as flags, tested every cycle (a Dataflow is a
	// string).
	ws, os bool

	// Observe, when set, is called after every cycle with the fold, the
	// phase and the number of MACs done in that cycle (for traces).
	Observe func(cycle int64, fold int, ph string, macs int)
}

// NewSim prepares a simulation of g on a.
func NewSim(a Array, g GEMM) (*Sim, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	if err := g.Validate(); err != nil {
		return nil, err
	}
	m := MapGEMM(a.Dataflow, g)
	s := &Sim{a: a, g: g, m: m, folds: folds(m, a.Rows, a.Cols), e: a.elem(),
		fr: ceilDiv(m.Sr, a.Rows), fc: ceilDiv(m.Sc, a.Cols)}
	fits := func(elems int64) bool { return a.BufferBytes == 0 || elems*s.e <= a.BufferBytes/3 }
	s.fitsA = fits(int64(g.M) * int64(g.K))
	s.fitsB = fits(int64(g.K) * int64(g.N))
	s.fitsC = fits(int64(g.M) * int64(g.N))
	s.ws, s.os = a.Dataflow == WeightStationary, a.Dataflow == OutputStationary
	s.ready = make([]float64, len(s.folds))
	s.issued = make([]bool, len(s.folds))
	s.res = Result{GEMM: g, Dataflow: a.Dataflow, Rows: a.Rows, Cols: a.Cols, Folds: len(s.folds)}
	s.issue(0, 0)
	s.ph = phaseWait
	return s, nil
}

// Simulate runs g on a to the end. Its Result equals stepping NewSim one
// cycle at a time.
func Simulate(a Array, g GEMM) (Result, error) {
	s, err := NewSim(a, g)
	if err != nil {
		return Result{}, err
	}
	s.finish()
	return s.Result(), nil
}

// finish runs to the end, skipping in closed form the cycles that only add
// to counters (see skip) unless Observe needs every cycle.
func (s *Sim) finish() {
	for {
		if s.Observe == nil && !s.reference {
			s.skip()
		}
		if !s.Step() {
			return
		}
	}
}

// skip jumps over the cycles ahead in the current phase that change
// nothing but counters, leaving to Step every cycle that does more: the
// first streaming cycle (it starts the shadow load), the last cycle of a
// load, stream or drain (it moves to the next phase or fold), and the cycle
// a waiting fold becomes ready. The counters it adds are the sums of what
// Step would have added cycle by cycle, so Results are identical.
func (s *Sim) skip() {
	if s.ph == phaseDone {
		return
	}
	fd := s.folds[s.f]
	var n int64
	switch s.ph {
	case phaseWait:
		// HBM stalls until the fold's reads are in (the first cycle c with
		// float64(c) ≥ ready), then load stalls until the shadow load ends.
		if !(s.ready[s.f] < 1<<62) {
			return // past any run's end (or NaN): let Step count, as the reference does
		}
		hbm := max(s.cycle, int64(math.Ceil(s.ready[s.f])))
		load := hbm
		if s.shadowBusy {
			load = max(load, s.shadowStart+int64(fd.sr))
		}
		s.res.HBMStalls += hbm - s.cycle
		s.res.LoadStalls += load - hbm
		s.res.StallCycles += load - s.cycle
		n = load - s.cycle
	case phaseLoad, phaseDrain:
		n = int64(fd.sr - 1 - s.local)
		if n <= 0 {
			return
		}
		switch {
		case s.ph == phaseDrain:
			s.res.Buffer.CWrites += n * int64(fd.sc)
		case s.a.Dataflow == WeightStationary:
			s.res.Buffer.BReads += n * int64(fd.sc)
		default:
			s.res.Buffer.AReads += n * int64(fd.sc)
		}
	case phaseStream:
		end := streamCycles(fd.sr, fd.sc, s.m.T) - 1
		if s.local == 0 || int64(s.local) >= end {
			return
		}
		n = end - int64(s.local)
		w := waveOver(int64(s.local), end, int64(fd.sr), int64(fd.sc), int64(s.m.T))
		s.count(fd, w)
		s.res.MACs += w.macs
	}
	if s.ph != phaseWait {
		s.local += int(n)
	}
	s.cycle += n
	s.res.Cycles = s.cycle
}

// Result is what the simulation has counted so far.
func (s *Sim) Result() Result { return s.res }

// Cycle is the current cycle count.
func (s *Sim) Cycle() int64 { return s.cycle }

// transfer queues bytes on the HBM engine at time t and returns when they
// are through.
func (s *Sim) transfer(t float64, bytes int64) float64 {
	if bytes == 0 {
		return t
	}
	if s.a.HBMBytesPerCycle == 0 {
		return t
	}
	start := math.Max(t, s.hbmBusyUntil)
	s.hbmBusyUntil = start + float64(bytes)/s.a.HBMBytesPerCycle
	return s.hbmBusyUntil
}

// issue queues the HBM reads fold f needs, at time t.
func (s *Sim) issue(f int, t float64) {
	if f >= len(s.folds) || s.issued[f] {
		return
	}
	s.issued[f] = true
	fd := s.folds[f]
	T := int64(s.m.T)
	sr, sc := int64(fd.sr), int64(fd.sc)
	var elems int64
	switch s.a.Dataflow {
	case WeightStationary: // B tile stationary, A rows stream
		elems += sr * sc
		if fd.col == 0 || !s.fitsA {
			elems += T * sr
		}
	case InputStationary: // A tile stationary, B columns stream
		elems += sr * sc
		if fd.col == 0 || !s.fitsB {
			elems += T * sr
		}
	case OutputStationary: // A rows and B columns both stream
		if fd.col == 0 || !s.fitsA {
			elems += sr * T
		}
		if fd.row == 0 || !s.fitsB {
			elems += T * sc
		}
	}
	if s.a.Dataflow != OutputStationary && fd.row > 0 && !s.fitsC {
		elems += T * sc // partial sums come back from HBM
	}
	s.res.HBMReadBytes += elems * s.e
	s.ready[f] = s.transfer(t, elems*s.e)
}

// finishFold queues the fold's output writes.
func (s *Sim) finishFold(f int) {
	fd := s.folds[f]
	var elems int64
	if s.a.Dataflow == OutputStationary {
		elems = int64(fd.sr) * int64(fd.sc)
	} else if fd.row == s.fr-1 || !s.fitsC {
		elems = int64(s.m.T) * int64(fd.sc)
	}
	s.res.HBMWriteBytes += elems * s.e
	s.transfer(float64(s.cycle), elems*s.e)
}

func (s *Sim) enter(p phase) {
	s.ph = p
	s.local = 0
}

// Step advances one cycle. It returns false when the GEMM is done (and
// the cycle was not used).
func (s *Sim) Step() bool {
	if s.ph == phaseDone {
		return false
	}
	fd := s.folds[s.f]
	macs := 0
	ph := s.ph
	switch s.ph {
	case phaseWait:
		if !s.wait(fd) {
			break
		}
		return s.Step() // the fold starts without spending the cycle here
	case phaseLoad:
		// one row of the stationary tile shifts in per cycle
		if s.ws {
			s.res.Buffer.BReads += int64(fd.sc)
		} else {
			s.res.Buffer.AReads += int64(fd.sc)
		}
		s.local++
		if s.local == fd.sr {
			s.enter(phaseStream)
		}
	case phaseStream:
		if s.local == 0 && s.a.DoubleBuffer && s.a.Dataflow != OutputStationary && s.f+1 < len(s.folds) {
			// start filling the shadow registers with the next fold's tile
			s.issue(s.f+1, float64(s.cycle))
			s.shadowStart = max(s.cycle, int64(math.Ceil(s.ready[s.f+1])))
			s.shadowBusy = true
		}
		macs = s.streamCycle(fd)
		s.local++
		if int64(s.local) == streamCycles(fd.sr, fd.sc, s.m.T) {
			if s.a.Dataflow == OutputStationary {
				s.enter(phaseDrain)
			} else {
				s.endFold()
			}
		}
	case phaseDrain:
		// one row of finished outputs leaves per cycle
		s.res.Buffer.CWrites += int64(fd.sc)
		s.local++
		if s.local == fd.sr {
			s.endFold()
		}
	}
	s.res.MACs += int64(macs)
	s.cycle++
	s.res.Cycles = s.cycle
	if s.Observe != nil {
		s.Observe(s.cycle-1, s.f, ph.String(), macs)
	}
	return true
}

// wait spends a waiting cycle, counting the stall, or, when the fold's
// data and stationary tile are ready, starts the fold and reports true.
func (s *Sim) wait(fd fold) bool {
	ready := float64(s.cycle) >= s.ready[s.f]
	if s.shadowBusy {
		ready = ready && s.cycle >= s.shadowStart+int64(fd.sr)
	}
	if !ready {
		s.res.StallCycles++
		if float64(s.cycle) < s.ready[s.f] {
			s.res.HBMStalls++
		} else {
			s.res.LoadStalls++
		}
		return false
	}
	switch {
	case s.a.Dataflow == OutputStationary:
		s.enter(phaseStream)
	case s.shadowBusy: // double-buffered tile already in the shadow registers
		s.shadowBusy = false
		if s.a.Dataflow == WeightStationary {
			s.res.Buffer.BReads += int64(fd.sr) * int64(fd.sc)
		} else {
			s.res.Buffer.AReads += int64(fd.sr) * int64(fd.sc)
		}
		s.enter(phaseStream)
	default:
		s.enter(phaseLoad)
	}
	return true
}

func (s *Sim) endFold() {
	s.finishFold(s.f)
	s.f++
	if s.f == len(s.folds) {
		s.ph = phaseDone
		return
	}
	if !s.a.DoubleBuffer || s.a.Dataflow == OutputStationary {
		s.issue(s.f, float64(s.cycle+1))
	}
	s.enter(phaseWait)
}

// streamCycle does one cycle of streaming: PE (i, j) multiplies the
// streamed element t = τ−i−j when 0 ≤ t < T. Row i reads element τ−i at the
// left edge; column j's sum for element τ−(Sr−1)−j leaves at the bottom
// (WS, IS). In OS, column j also reads element τ−j of the weights at the
// top edge. The stationary operand is not read at all. The counts come in
// closed form (waveAt), or from the reference loops when s.reference is set.
func (s *Sim) streamCycle(fd fold) int {
	var w wave
	if s.reference {
		w = waveLoops(s.local, fd.sr, fd.sc, s.m.T)
	} else {
		w = waveAt(int64(s.local), int64(fd.sr), int64(fd.sc), int64(s.m.T))
	}
	s.count(fd, w)
	return int(w.macs)
}

// count adds the edge traffic of w, one streaming cycle or a run of them,
// to the result (its MACs are the caller's).
func (s *Sim) count(fd fold, w wave) {
	switch {
	case s.ws:
		s.res.Buffer.AReads += w.edgeRows
	case s.os:
		s.res.Buffer.AReads += w.edgeRows
		s.res.Buffer.BReads += w.edgeCols
		s.res.WeightReadsWhileStreaming += w.edgeCols
	default: // input stationary
		s.res.Buffer.BReads += w.edgeRows
		s.res.WeightReadsWhileStreaming += w.edgeRows
	}
	if !s.os {
		s.res.Buffer.CWrites += w.outs
		if fd.row > 0 {
			s.res.Buffer.CReads += w.outs
		}
	}
}
