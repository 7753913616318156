// Package schedule writes pipeline-parallel schedules (GPipe, 1F1B) down as
// data — the ordered forward and backward ops of every stage — and derives
// from those lists, by simulating them, what a planner needs: the step's
// makespan, the pipeline bubble and how many micro-batches' activations each
// stage holds at once.
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
)

// Kinds lists the schedules.
func Kinds() []Kind { return []Kind{GPipe, OneFOneB} }

// ParseKind reads a schedule name.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "gpipe":
		return GPipe, nil
	case "1f1b", "pipedream-flush", "onefoneb":
		return OneFOneB, nil
	}
	return "", fmt.Errorf("schedule: unknown schedule %q, want gpipe or 1f1b", s)
}

// Pass is a forward or backward pass of one micro-batch through one stage.
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

// Op is one pass of one micro-batch.
type Op struct {
	Pass       Pass
	MicroBatch int
}

func (o Op) String() string { return fmt.Sprintf("%s%d", o.Pass, o.MicroBatch) }

// Schedule is the ordered op list of each stage.
type Schedule struct {
	Kind         Kind
	Stages       int
	MicroBatches int
	Ops          [][]Op // Ops[s] runs in order on stage s
}

// ErrInvalid is wrapped by New's errors.
var ErrInvalid = errors.New("invalid schedule")

// New builds the op lists for p stages and m micro-batches.
func New(k Kind, p, m int) (Schedule, error) {
	if p < 1 || m < 1 || p > 1<<12 || m > 1<<16 {
		return Schedule{}, fmt.Errorf("schedule: %d stages and %d micro-batches: %w; want 1..4096 stages and 1..65536 micro-batches", p, m, ErrInvalid)
	}
	s := Schedule{Kind: k, Stages: p, MicroBatches: m, Ops: make([][]Op, p)}
	for st := range p {
		ops := make([]Op, 0, 2*m)
		switch k {
		case GPipe:
			for i := range m {
				ops = append(ops, Op{Forward, i})
			}
			for i := range m {
				ops = append(ops, Op{Backward, i})
			}
		case OneFOneB:
			warm := min(p-st-1, m)
			for i := range warm {
				ops = append(ops, Op{Forward, i})
			}
			for i := range m - warm {
				ops = append(ops, Op{Forward, warm + i}, Op{Backward, i})
			}
			for i := m - warm; i < m; i++ {
				ops = append(ops, Op{Backward, i})
			}
		default:
			return Schedule{}, fmt.Errorf("schedule: kind %q: %w; want gpipe or 1f1b", k, ErrInvalid)
		}
		s.Ops[st] = ops
	}
	return s, nil
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
	// PeakInFlight[s] is the most micro-batches whose forward has run on
	// stage s and whose backward has not: the activations it must hold.
	PeakInFlight []int
}

// Bubble is the fraction of the makespan a stage sits idle.
func (t Timeline) Bubble() float64 {
	if t.Makespan == 0 {
		return 0
	}
	return 1 - t.Busy/t.Makespan
}

// Simulate runs the schedule with every forward taking fwd and every
// backward bwd time units on every stage, and sends between stages taking
// send units. A pass starts when its stage is free and its inputs are there:
// forward of micro-batch i on stage s after forward i on stage s−1 (plus the
// send), backward i on stage s after backward i on s+1 (plus the send) and
// after its own forward.
func (s Schedule) Simulate(fwd, bwd, send float64) Timeline {
	p, m := s.Stages, s.MicroBatches
	fEnd := make([][]float64, p)
	bEnd := make([][]float64, p)
	for st := range p {
		fEnd[st] = make([]float64, m)
		bEnd[st] = make([]float64, m)
		for i := range m {
			fEnd[st][i], bEnd[st][i] = -1, -1
		}
	}
	tl := Timeline{Spans: make([][]Span, p), PeakInFlight: make([]int, p), Busy: float64(m) * (fwd + bwd)}
	next := make([]int, p)
	free := make([]float64, p)
	inFlight := make([]int, p)
	done := 0
	total := 2 * m * p
	for done < total {
		progress := false
		for st := range p {
			for next[st] < len(s.Ops[st]) {
				op := s.Ops[st][next[st]]
				ready, ok := 0.0, true
				if op.Pass == Forward {
					if st > 0 {
						if fEnd[st-1][op.MicroBatch] < 0 {
							ok = false
						} else {
							ready = fEnd[st-1][op.MicroBatch] + send
						}
					}
				} else {
					if fEnd[st][op.MicroBatch] < 0 {
						ok = false
					} else {
						ready = fEnd[st][op.MicroBatch]
					}
					if st < p-1 {
						if bEnd[st+1][op.MicroBatch] < 0 {
							ok = false
						} else {
							ready = max(ready, bEnd[st+1][op.MicroBatch]+send)
						}
					}
				}
				if !ok {
					break
				}
				start := max(free[st], ready)
				d := fwd
				if op.Pass == Backward {
					d = bwd
				}
				end := start + d
				if op.Pass == Forward {
					fEnd[st][op.MicroBatch] = end
					inFlight[st]++
					tl.PeakInFlight[st] = max(tl.PeakInFlight[st], inFlight[st])
				} else {
					bEnd[st][op.MicroBatch] = end
					inFlight[st]--
				}
				free[st] = end
				tl.Spans[st] = append(tl.Spans[st], Span{Op: op, Start: start, End: end})
				tl.Makespan = max(tl.Makespan, end)
				next[st]++
				done++
				progress = true
			}
		}
		if !progress {
			panic(fmt.Sprintf("schedule: %s with %d stages and %d micro-batches deadlocks", s.Kind, p, m))
		}
	}
	return tl
}

// Bubble is the idle fraction of a step for the schedule with p stages and
// m micro-batches, derived by simulating it with a backward pass twice as
// long as the forward (the matmul FLOP ratio) and free sends. For GPipe and
// 1F1B it equals (p−1)/(m+p−1) (Narayanan et al. 2021 §2.2; MaxText's
// sharding guide).
func Bubble(k Kind, p, m int) (float64, error) {
	s, err := New(k, p, m)
	if err != nil {
		return 0, err
	}
	return s.Simulate(1, 2, 0).Bubble(), nil
}

// Render draws the timeline as text, one row per stage and one column per
// time unit (unit long), "." where the stage idles.
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
			for c := int(sp.Start/unit + 0.5); c < int(sp.End/unit+0.5) && c < cols; c++ {
				row[c] = ch
			}
		}
		fmt.Fprintf(&b, "stage %d |%s|\n", st, row)
	}
	return b.String()
}
