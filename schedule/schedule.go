// Package schedule writes pipeline-parallel schedules down as data — the
// ordered forward and backward ops of every device, each op a pass of one
// micro-batch through one chunk of layers — and derives from those lists,
// by simulating them against their dependencies, what a planner needs: the
// step's makespan, the pipeline bubble and how many micro-batch chunks'
// activations each device holds at once. GPipe, 1F1B, interleaved 1F1B
// (virtual stages) and MaxText's circular pipeline are all op lists over
// the same dependency rule.
package schedule

import (
	"errors"
	"fmt"
	"strings"
)

// Kind names a schedule.
type Kind string

// The schedules.
const (
	// GPipe runs every micro-batch forward, then every one backward
	// (Huang et al. 2019).
	GPipe Kind = "gpipe"
	// OneFOneB is PipeDream-Flush's one-forward-one-backward schedule
	// (Narayanan et al. 2021): same bubble as GPipe, at most p micro-batches
	// in flight.
	OneFOneB Kind = "1f1b"
	// Interleaved is 1F1B over v chunks of layers per device (virtual
	// pipeline stages, Narayanan et al. 2021 §2.2.2): the bubble shrinks
	// to (p−1)/(v·m) of the ideal time, at v times the sends.
	Interleaved Kind = "interleaved"
	// Circular is MaxText's circular pipeline (num_pipeline_repeats): each
	// device holds v chunks of layers, micro-batches loop round the stages
	// v times, every forward before every backward as autodiff of the loop
	// gives.
	Circular Kind = "circular"
)

// kinds is the schedules, in the order Kinds lists them and Index counts.
var kinds = [...]Kind{GPipe, OneFOneB, Interleaved, Circular}

// Kinds lists the schedules (a fresh slice: the caller may keep it).
func Kinds() []Kind {
	k := kinds
	return k[:]
}

// Index is k's place in Kinds, -1 for a name that is no schedule: an int
// a cache can key a schedule by.
func (k Kind) Index() int {
	for i, x := range kinds {
		if x == k {
			return i
		}
	}
	return -1
}

// Chunked reports whether a schedule splits a device's layers into chunks.
func (k Kind) Chunked() bool { return k == Interleaved || k == Circular }

// ParseKind reads a schedule name, in any case.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "gpipe":
		return GPipe, nil
	case "1f1b", "pipedream-flush", "onefoneb":
		return OneFOneB, nil
	case "interleaved", "interleaved-1f1b", "interleaved_1f1b":
		return Interleaved, nil
	case "circular":
		return Circular, nil
	}
	return "", fmt.Errorf("schedule: unknown schedule %q, want gpipe, 1f1b, interleaved or circular", s)
}

// Pass is a forward or backward pass of one micro-batch through one chunk.
type Pass uint8

// The passes.
const (
	Forward Pass = iota
	Backward
)

func (p Pass) String() string {
	if p == Forward {
		return "F"
	}
	return "B"
}

// Op is one pass of one micro-batch through one of a device's chunks of
// layers.
type Op struct {
	Pass       Pass
	MicroBatch int
	Chunk      int
}

func (o Op) String() string {
	if o.Chunk == 0 {
		return fmt.Sprintf("%s%d", o.Pass, o.MicroBatch)
	}
	return fmt.Sprintf("%s%d.%d", o.Pass, o.MicroBatch, o.Chunk)
}

// Schedule is the ordered op list of each device. Chunk c of device d is
// virtual stage c·Stages + d: the model's layers split into Stages·Chunks
// pieces dealt round the devices.
type Schedule struct {
	Kind         Kind
	Stages       int // devices along the pipeline axis
	MicroBatches int
	Chunks       int // chunks of layers per device (1 for GPipe and 1F1B)
	Ops          [][]Op
}

// ErrInvalid is wrapped by New's errors.
var ErrInvalid = errors.New("invalid schedule")

// New builds the op lists for p stages and m micro-batches, one chunk per
// device; interleaved and circular schedules take their chunks from
// NewChunked.
func New(k Kind, p, m int) (Schedule, error) { return NewChunked(k, p, m, 1) }

// NewChunked builds the op lists for p devices, m micro-batches and v
// chunks per device.
func NewChunked(k Kind, p, m, v int) (Schedule, error) {
	if p < 1 || m < 1 || v < 1 || p > 1<<12 || m > 1<<16 || v > 64 || p*v > 1<<12 {
		return Schedule{}, fmt.Errorf("schedule: %d stages, %d micro-batches and %d chunks: %w; want 1..4096 stages, 1..65536 micro-batches and 1..64 chunks", p, m, v, ErrInvalid)
	}
	switch {
	case !k.Chunked() && v != 1:
		return Schedule{}, fmt.Errorf("schedule: %s with %d chunks per device: %w; want 1 (interleaved or circular split a device's layers)", k, v, ErrInvalid)
	case k == Interleaved && v < 2:
		return Schedule{}, fmt.Errorf("schedule: interleaved 1F1B with %d chunk per device: %w; want 2 or more (1 is plain 1f1b)", v, ErrInvalid)
	case k.Chunked() && m%p != 0:
		// Megatron's rule for interleaving; a circular loop with fewer
		// micro-batches than stages leaves device 0 waiting for each one to
		// come round.
		return Schedule{}, fmt.Errorf("schedule: %s with %d micro-batches over %d stages: %w; want a multiple of the stages", k, m, p, ErrInvalid)
	}
	s := Schedule{Kind: k, Stages: p, MicroBatches: m, Chunks: v, Ops: make([][]Op, p)}
	for d := range p {
		switch k {
		case GPipe:
			s.Ops[d] = gpipe(m)
		case OneFOneB:
			s.Ops[d] = oneFOneB(p, m, d)
		case Interleaved:
			s.Ops[d] = interleaved(p, m, v, d)
		case Circular:
			s.Ops[d] = circular(m, v)
		default:
			return Schedule{}, fmt.Errorf("schedule: kind %q: %w; want gpipe, 1f1b, interleaved or circular", k, ErrInvalid)
		}
	}
	return s, nil
}

func gpipe(m int) []Op {
	ops := make([]Op, 0, 2*m)
	for i := range m {
		ops = append(ops, Op{Pass: Forward, MicroBatch: i})
	}
	for i := range m {
		ops = append(ops, Op{Pass: Backward, MicroBatch: i})
	}
	return ops
}

// oneFOneB: p−d−1 warm-up forwards on device d, then one forward and one
// backward in turn, then the remaining backwards.
func oneFOneB(p, m, d int) []Op {
	ops := make([]Op, 0, 2*m)
	warm := min(p-d-1, m)
	for i := range warm {
		ops = append(ops, Op{Pass: Forward, MicroBatch: i})
	}
	for i := range m - warm {
		ops = append(ops, Op{Pass: Forward, MicroBatch: warm + i}, Op{Pass: Backward, MicroBatch: i})
	}
	for i := m - warm; i < m; i++ {
		ops = append(ops, Op{Pass: Backward, MicroBatch: i})
	}
	return ops
}

// interleaved is Megatron-LM's interleaved schedule
// (megatron/core/pipeline_parallel/schedules.py,
// forward_backward_pipelining_with_interleaving): micro-batches go in
// groups of p through chunk 0, then chunk 1, and so on; device d warms up
// with (p−d−1)·2 + (v−1)·p forwards, then alternates, then drains. The
// k-th forward runs chunk (k/p) mod v, the k-th backward chunk
// v−1−(k/p) mod v, both on micro-batch (k/(p·v))·p + k mod p.
func interleaved(p, m, v, d int) []Op {
	total := m * v
	at := func(pass Pass, k int) Op {
		c := (k / p) % v
		if pass == Backward {
			c = v - 1 - c
		}
		return Op{Pass: pass, MicroBatch: (k/(p*v))*p + k%p, Chunk: c}
	}
	warm := min((p-d-1)*2+(v-1)*p, total)
	ops := make([]Op, 0, 2*total)
	for k := range warm {
		ops = append(ops, at(Forward, k))
	}
	for k := range total - warm {
		ops = append(ops, at(Forward, warm+k), at(Backward, k))
	}
	for k := total - warm; k < total; k++ {
		ops = append(ops, at(Backward, k))
	}
	return ops
}

// circular is MaxText's circular pipeline (src/MaxText/layers/pipeline.py):
// at loop iteration t, device d runs loop position t−d, which is
// micro-batch (t−d) mod m of chunk (t−d) div m; so each device runs chunk
// 0 for every micro-batch, then chunk 1, and so on. The backward pass is
// the loop's reverse.
func circular(m, v int) []Op {
	ops := make([]Op, 0, 2*m*v)
	for k := range m * v {
		ops = append(ops, Op{Pass: Forward, MicroBatch: k % m, Chunk: k / m})
	}
	for k := m*v - 1; k >= 0; k-- {
		ops = append(ops, Op{Pass: Backward, MicroBatch: k % m, Chunk: k / m})
	}
	return ops
}

// Dep is an op another op waits for: the op, the device that runs it, and
// whether its result crosses to another device (a send).
type Dep struct {
	Device int
	Op     Op
	Send   bool
}

// Deps lists what op, run by device d, waits for: a forward the same
// micro-batch's forward through the previous virtual stage; a backward its
// own forward and the same micro-batch's backward through the next virtual
// stage.
func (s Schedule) Deps(d int, op Op) []Dep {
	p, last := s.Stages, s.Stages*s.Chunks-1
	vs := op.Chunk*p + d
	at := func(v int, pass Pass) Dep {
		dd := v % p
		return Dep{Device: dd, Op: Op{Pass: pass, MicroBatch: op.MicroBatch, Chunk: v / p}, Send: dd != d}
	}
	if op.Pass == Forward {
		if vs == 0 {
			return nil
		}
		return []Dep{at(vs-1, Forward)}
	}
	deps := []Dep{at(vs, Forward)}
	if vs < last {
		deps = append(deps, at(vs+1, Backward))
	}
	return deps
}

// Span is one op placed in time on one stage.
type Span struct {
	Op         Op
	Start, End float64
}

// Timeline is a simulated schedule.
type Timeline struct {
	Spans    [][]Span // per stage, in execution order
	Makespan float64
	// Busy is the compute time of one stage, m·(forward + backward).
	Busy float64
	// PeakInFlight[d] is the most micro-batch chunks whose forward has run
	// on device d and whose backward has not: the activations it must hold,
	// in units of one micro-batch through one chunk (1/Chunks of the
	// device's layers).
	PeakInFlight []int
	Chunks       int
}

// Bubble is the fraction of the makespan a stage sits idle.
func (t Timeline) Bubble() float64 {
	if t.Makespan == 0 {
		return 0
	}
	return 1 - t.Busy/t.Makespan
}

// Simulate runs the schedule with a forward through a device's whole share
// of layers taking fwd and a backward bwd time units (a chunk takes 1/v of
// that), and sends between devices taking send units. An op starts when
// its device is free and everything it depends on (Deps) has ended, plus
// the send where a dependency crosses devices.
func (s Schedule) Simulate(fwd, bwd, send float64) Timeline {
	p, m, v := s.Stages, s.MicroBatches, s.Chunks
	r := newSimulation(s, fwd, bwd, send)
	next := make([]int, p)
	done, total := 0, 2*m*v*p
	for done < total {
		progress := false
		for d := range p {
			for next[d] < len(s.Ops[d]) {
				op := s.Ops[d][next[d]]
				ready, ok := r.ready(d, op)
				if !ok {
					break
				}
				r.place(d, op, ready)
				next[d]++
				done++
				progress = true
			}
		}
		if !progress {
			panic(fmt.Sprintf("schedule: %s with %d stages, %d micro-batches and %d chunks deadlocks", s.Kind, p, m, v))
		}
	}
	return r.tl
}

// simulation is a schedule being run: when each op ended (-1 before it has),
// when each device is next free, and the micro-batch chunks in flight.
type simulation struct {
	s              Schedule
	fwd, bwd, send float64
	end            [][2][]float64 // per virtual stage, per pass, per micro-batch
	free           []float64
	inFlight       []int
	tl             Timeline
}

// newSimulation starts s with no op run and every device free at 0.
func newSimulation(s Schedule, fwd, bwd, send float64) *simulation {
	p, m, v := s.Stages, s.MicroBatches, s.Chunks
	end := make([][2][]float64, p*v)
	for i := range end {
		for ps := range end[i] {
			end[i][ps] = make([]float64, m)
			for j := range m {
				end[i][ps][j] = -1
			}
		}
	}
	return &simulation{s: s, fwd: fwd, bwd: bwd, send: send, end: end, free: make([]float64, p), inFlight: make([]int, p),
		tl: Timeline{Spans: make([][]Span, p), PeakInFlight: make([]int, p), Busy: float64(m) * (fwd + bwd), Chunks: v}}
}

// endOf is when device d's op ended, or -1 if it has not run.
func (r *simulation) endOf(d int, op Op) float64 {
	return r.end[op.Chunk*r.s.Stages+d][op.Pass][op.MicroBatch]
}

// ready is when device d's op may start as far as its dependencies go (the
// last to end, plus the send where one crosses devices), and false while
// one has not run.
func (r *simulation) ready(d int, op Op) (float64, bool) {
	ready := 0.0
	for _, dep := range r.s.Deps(d, op) {
		e := r.endOf(dep.Device, dep.Op)
		if e < 0 {
			return 0, false
		}
		if dep.Send {
			e += r.send
		}
		ready = max(ready, e)
	}
	return ready, true
}

// place runs device d's op from when both the device and its inputs are
// ready, for a chunk's share of the forward or backward time.
func (r *simulation) place(d int, op Op, ready float64) {
	start := max(r.free[d], ready)
	dur := r.fwd / float64(r.s.Chunks)
	if op.Pass == Backward {
		dur = r.bwd / float64(r.s.Chunks)
		r.inFlight[d]--
	} else {
		r.inFlight[d]++
		r.tl.PeakInFlight[d] = max(r.tl.PeakInFlight[d], r.inFlight[d])
	}
	r.end[op.Chunk*r.s.Stages+d][op.Pass][op.MicroBatch] = start + dur
	r.free[d] = start + dur
	r.tl.Spans[d] = append(r.tl.Spans[d], Span{Op: op, Start: start, End: start + dur})
	r.tl.Makespan = max(r.tl.Makespan, start+dur)
}

// Bubble is the idle fraction of a step for the schedule with p stages and
// m micro-batches, derived by simulating it with a backward pass twice as
// long as the forward (the matmul FLOP ratio) and free sends. For GPipe and
// 1F1B it equals (p−1)/(m+p−1) (Narayanan et al. 2021 §2.2; MaxText's
// sharding guide).
func Bubble(k Kind, p, m int) (float64, error) { return BubbleChunked(k, p, m, 1) }

// BubbleChunked is Bubble for v chunks per device. Interleaved 1F1B idles
// (p−1)/v of a micro-batch's time against m (Narayanan et al. 2021 §2.2.2:
// bubble time fraction (1/v)·(p−1)/m of the ideal); circular (p−1) of
// m·v + p − 1 loop iterations.
func BubbleChunked(k Kind, p, m, v int) (float64, error) {
	s, err := NewChunked(k, p, m, v)
	if err != nil {
		return 0, err
	}
	return s.Simulate(1, 2, 0).Bubble(), nil
}

// Render draws the timeline as text, one row per device and one column per
// time unit (unit long), "." where the device idles: forwards as the
// micro-batch's digit, backwards as its letter; odd chunks as the shifted
// key (")!@#…" for 0–9) and the upper-case letter.
func (t Timeline) Render(unit float64) string {
	var b strings.Builder
	cols := int(t.Makespan/unit + 0.5)
	for st, spans := range t.Spans {
		row := []byte(strings.Repeat(".", cols))
		for _, sp := range spans {
			ch := byte('0' + sp.Op.MicroBatch%10)
			if sp.Op.Pass == Backward {
				ch = byte('a' + sp.Op.MicroBatch%26)
			}
			if sp.Op.Chunk%2 == 1 { // odd chunks in the other case
				switch {
				case sp.Op.Pass == Forward:
					ch = ")!@#$%^&*("[sp.Op.MicroBatch%10]
				default:
					ch = byte('A' + sp.Op.MicroBatch%26)
				}
			}
			for c := int(sp.Start/unit + 0.5); c < int(sp.End/unit+0.5) && c < cols; c++ {
				row[c] = ch
			}
		}
		fmt.Fprintf(&b, "stage %d |%s|\n", st, row)
	}
	return b.String()
}
