package plan

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strings"
	"text/tabwriter"

	"shardlab/hw"
	"shardlab/schema"
	"shardlab/unit"
)

// MaxSweepPoints bounds the searches of a sweep.
const MaxSweepPoints = 9

// ErrNoSweep is wrapped by the error of a sweep that does not apply to a
// plan: one asked for one mesh, or one no point of which runs the job.
var ErrNoSweep = errors.New("the sweep does not apply")

// SweepKind is what a sweep varies.
type SweepKind string

// The sweeps: the slice count, or the global batch.
const (
	SweepSlices SweepKind = "slices"
	SweepBatch  SweepKind = "batch"
)

// SweepPoint is one search of a sweep: the value swept, and the best
// layout there with its MFU and throughput.
type SweepPoint struct {
	X                      float64 `json:"x"`
	Layout                 string  `json:"layout"`
	StepSeconds            float64 `json:"step_time_s"`
	MFU                    float64 `json:"mfu_fraction"`
	TokensPerSecondPerChip float64 `json:"tokens_per_s_per_chip"`
}

// Sweep is a plan's request searched again at each of a range of slice
// counts or global batches (each point a full Search): how MFU and
// throughput scale. Points that no layout runs are left out.
type Sweep struct {
	Kind SweepKind `json:"kind"`
	// XLabel names the swept quantity with its unit.
	XLabel string       `json:"x_label"`
	Points []SweepPoint `json:"points"`
	// MinBatch, for a batch sweep of a multislice, is the Multislice
	// minimum global batch (Request.MinBatch); MaxBatch the request's max global
	// batch.
	MinBatch float64 `json:"multislice_min_batch,omitempty"`
	MaxBatch int     `json:"max_global_batch,omitempty"`
}

// SliceCounts are the slice counts a slices sweep searches for a plan on
// n slices of a chip: 1, 2, 4, … up to n (at least 4 where the chip runs
// Multislice, only 1 where it does not), and n itself, at most
// MaxSweepPoints of them.
func SliceCounts(c hw.Chip, n int) []int {
	if c.DCNPerChip == 0 {
		return []int{1}
	}
	top := max(n, 4)
	var out []int
	for k := 1; k < top && len(out) < MaxSweepPoints-1; k *= 2 {
		out = append(out, k)
	}
	return append(out, top)
}

// MinBatch is the smallest global batch, in sequences of the request's
// sequence length, at which the backward pass of its model on its
// multislice hides the DCN gradient all-reduce (the Multislice batch
// rule's break-even on every slice), or 0 for one slice.
func (r *Request) MinBatch() float64 {
	if r.Seq < 1 {
		return 0
	}
	return r.breakEvenTokens() * float64(r.Multislice.Slices) / float64(r.Seq)
}

// Batches are the global batches, in sequences, a batch sweep searches:
// powers of two up to the max global batch, the Multislice minimum batch
// inside the range, at most MaxSweepPoints of them.
func Batches(maxBatch int, minBatch float64) []int {
	hi := 1
	for hi*2 <= maxBatch {
		hi *= 2
	}
	budget := MaxSweepPoints // powers of two from lo to hi, then maxBatch
	if hi != maxBatch {
		budget--
	}
	lo := max(1, hi>>(budget-1))
	if minBatch >= 1 && minBatch < float64(lo) {
		lo = max(1, int(math.Exp2(math.Floor(math.Log2(minBatch)))))
		for bits.Len(uint(hi/lo)) > budget {
			lo *= 2
		}
	}
	var out []int
	for b := lo; b <= hi; b *= 2 {
		out = append(out, b)
	}
	if hi != maxBatch {
		out = append(out, maxBatch)
	}
	return out
}

// SweepOf searches p's request again at each point of the kind's range
// (SliceCounts, or Batches with the batch fixed). A plan asked for one
// mesh does not scale, nor one no point runs: the error wraps ErrNoSweep.
func SweepOf(p Plan, kind SweepKind) (Sweep, error) {
	r := p.Request
	if r.Axes != nil {
		return Sweep{}, fmt.Errorf("plan: %s sweep: the plan costs one mesh: %w", kind, ErrNoSweep)
	}
	ms := r.Multislice
	s := Sweep{Kind: kind}
	var xs []int
	var edit func(*Request, int) error
	switch kind {
	case SweepSlices:
		s.XLabel = "slices of " + ms.Slice.AcceleratorType()
		xs = SliceCounts(ms.Slice.Chip, ms.Slices)
		edit = func(q *Request, n int) error {
			var err error
			q.Multislice, err = hw.NewMultislice(ms.Slice, n, ms.DCNPerHost())
			return err
		}
	case SweepBatch:
		s.XLabel = "global batch (sequences of " + unit.Plural(r.Seq, "token") + ")"
		s.MinBatch, s.MaxBatch = r.MinBatch(), r.MaxGlobalBatch
		xs = Batches(r.MaxGlobalBatch, s.MinBatch)
		edit = func(q *Request, b int) error { q.GlobalBatch = b; return nil }
	default:
		return Sweep{}, fmt.Errorf("plan: sweep %q, want %s or %s: %w", kind, SweepSlices, SweepBatch, ErrNoSweep)
	}
	if r.Cache == nil {
		r.Cache = new(Cache) // the points share their estimators
	}
	for _, x := range xs {
		q := r
		if err := edit(&q, x); err != nil {
			return Sweep{}, fmt.Errorf("plan: %s sweep at %d: %w", kind, x, err)
		}
		found, err := Search(q)
		if errors.Is(err, ErrNoPlan) {
			continue
		}
		if err != nil {
			return Sweep{}, fmt.Errorf("plan: %s sweep at %d: %w", kind, x, err)
		}
		e := found.Best.Estimate
		s.Points = append(s.Points, SweepPoint{X: float64(x), Layout: e.Mesh.String(), StepSeconds: e.Time.Step.Seconds(),
			MFU: e.MFU, TokensPerSecondPerChip: e.TokensPerSecondPerChip})
	}
	if len(s.Points) == 0 {
		return Sweep{}, fmt.Errorf("plan: %s sweep: no point runs the job: %w", kind, ErrNoSweep)
	}
	return s, nil
}

// WriteText writes the sweep for people: a row per point.
func (s Sweep) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "MFU and throughput against %s, each point the best layout a full search finds:\n", s.XLabel)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, string(s.Kind)+"\tlayout\tstep\tMFU\ttokens/s/chip")
	for _, p := range s.Points {
		fmt.Fprintf(tw, "%g\t%s\t%v\t%.1f%%\t%.0f\n", p.X, p.Layout, unit.Seconds(p.StepSeconds), 100*p.MFU, p.TokensPerSecondPerChip)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if s.MinBatch > 0 {
		fmt.Fprintf(&b, "the Multislice minimum batch is %.0f sequences: below it the DCN gradient all-reduce outlasts the backward pass\n", s.MinBatch)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the sweep as JSON with the schema version.
func (s Sweep) WriteJSON(w io.Writer) error { return schema.Write(w, s) }
