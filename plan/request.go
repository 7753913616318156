package plan

import (
	"errors"
	"fmt"
	"time"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/mesh"
	"shardlab/model"
	"shardlab/schedule"
)

// Request is a planning question, as ParseRequest makes it from Options.
type Request struct {
	Model model.Spec
	// Multislice is where to plan. A multislice of no slices that holds
	// only a chip (what ParseRequest makes of a bare generation, tpu7x)
	// asks for the smallest footprint of the chip's generation that runs
	// the job: see SearchScope.
	Multislice hw.Multislice
	// Seq is tokens per sequence; 0 means the model's SeqLen.
	Seq int
	// GlobalBatch fixes the sequences per step; 0 lets the planner choose
	// the largest batch that fits, up to MaxGlobalBatch.
	GlobalBatch int
	// MaxGlobalBatch is the convergence limit in sequences per step.
	MaxGlobalBatch int
	// Axes, when set, asks for this one layout (each named axis's degree)
	// instead of searching.
	Axes []mesh.Degree
	// DeviceAxes, when set, is the layout asked in JAX devices, on a chip
	// of several (TPU7x): Axes is then one of its chip readings, and
	// Search costs each reading until one's MaxText mesh is DeviceAxes
	// (Plan.Devices). nil on a chip of one device, where Axes says it all.
	DeviceAxes []mesh.Degree
	// microStep, when above 1, makes the planner's batch put a multiple
	// of it sequences on each chip per micro-batch (the fsdp reading of a
	// device mesh: the chip's devices split its sequences).
	microStep int
	// Remat fixes the rematerialisation policy; "" searches all.
	Remat cost.Remat
	// Custom places the tagged tensors when Remat is custom.
	Custom cost.Places
	// Schedule fixes the pipeline schedule, with Chunks for interleaved
	// and circular; "" searches GPipe, 1F1B and interleaved 1F1B with 2
	// and 4 chunks.
	Schedule schedule.Kind
	Chunks   int
	// Framework, when FrameworkMaxText, searches only the schedules
	// MaxText runs.
	Framework Framework
	// Workers is how many goroutines cost layouts (0: one per CPU). The
	// plan is the same for every count.
	Workers int
	// Cache, when set, keeps the search's estimators for the searches
	// after it that share it (a budget sweep's); nil: none kept. The plan
	// is the same either way.
	Cache *Cache
	// Settings are cost.Job's, as they are, except that the zero
	// Precision, which no job can have, means cost.MaxTextPrecision (and
	// HBMHeadroom 0 keeps none free; cost.DefaultHBMHeadroom is the usual
	// value).
	cost.Settings
	// Top is how many ranked layouts to keep (at least 1).
	Top int
	// BestOnly asks a searched plan (Axes and DeviceAxes unset) for its
	// Best, Rule and Band only, as the full search finds them, costing
	// fewer combinations in full (a lean search: see lean.go). Its other
	// fields hold what the lean search found: Top, Alternatives, Reasons
	// and Warnings may name other layouts than the full search's, and
	// Rejected count less. When nothing runs, its error is the full
	// search's (search).
	BestOnly bool
	// ExampleCost, when set, is the host CPU time to read and preprocess
	// one sequence; the plan then checks with package infeed that the
	// host's vCPUs keep the chips fed.
	ExampleCost time.Duration
}

// ErrRequest is wrapped by errors in the request.
var ErrRequest = errors.New("invalid request")

func (r *Request) defaults() error {
	if r.Seq == 0 {
		r.Seq = r.Model.SeqLen
	}
	if r.Precision == (cost.Precision{}) {
		r.Precision = cost.MaxTextPrecision()
	}
	if r.Top < 1 {
		r.Top = 1
	}
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("plan: %s = %v, want %s: %w", field, v, want, ErrRequest)
	}
	switch {
	case r.Seq < 0:
		return bad("seq", r.Seq, "a positive number of tokens")
	case r.GlobalBatch < 0:
		return bad("global batch", r.GlobalBatch, "a positive number of sequences (or 0 to let the planner choose)")
	case r.MaxGlobalBatch <= 0:
		return bad("max global batch", r.MaxGlobalBatch, "a positive number of sequences")
	case r.GlobalBatch > r.MaxGlobalBatch:
		return bad("global batch", r.GlobalBatch, fmt.Sprintf("at most the max global batch (%d)", r.MaxGlobalBatch))
	case r.Multislice.Chips() == 0:
		return bad("topology", "none", "a slice")
	case r.VocabTiles < 0:
		return bad("vocab tiles", r.VocabTiles, "a positive count")
	case r.ExampleCost < 0:
		return bad("example cost", r.ExampleCost, "a non-negative duration")
	}
	if _, err := r.job().MatmulPeak(r.Multislice.Slice.Chip); err != nil {
		return fmt.Errorf("plan: %w: %w", err, ErrRequest)
	}
	if err := cost.CheckTrainable(r.Model); err != nil {
		return fmt.Errorf("plan: %w: %w", err, ErrRequest)
	}
	return r.Model.Validate()
}

func (r Request) job() cost.Job {
	j := cost.NewJob(r.Model, r.Seq, 1)
	j.Schedule = r.Schedule
	if j.Schedule == "" {
		j.Schedule = schedule.OneFOneB
	}
	j.Chunks = r.Chunks
	j.Custom = r.Custom
	j.Settings = r.Settings
	return j
}
