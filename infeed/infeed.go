// Package infeed simulates one TPU host's training loop as a deterministic
// discrete-event system: the host's vCPUs read and preprocess examples into
// batches, push them into a bounded infeed queue, a DMA engine copies each
// batch over PCIe into HBM, the MXU loads the step's parameters and computes
// on the batch, results go to a bounded outfeed queue and a host thread
// drains it. It reports each stage's busy and idle time and why the MXU
// stalled (infeed empty, HBM copy, outfeed full) — the seed's point that a
// ready MXU waits when the host does not keep the infeed full or drain the
// outfeed — says which stage bounds the step (Result.Bound), and finds how
// many vCPUs keep up with the chips (SweepVCPUs).
package infeed

import (
	"errors"
	"fmt"
	"math"
	"time"

	"shardlab/hw"
	"shardlab/unit"
)

// Placement says where the input workers run relative to the NUMA node
// each chip's PCIe attaches to.
type Placement string

// The placements.
const (
	// Local pins each chip's workers to the chip's NUMA node.
	Local Placement = "local"
	// Interleaved lets any worker serve any chip.
	Interleaved Placement = "interleaved"
	// Node0 runs every worker on NUMA node 0, so chips on node 1 are fed
	// across the socket link.
	Node0 Placement = "node0"
)

// ParsePlacement reads a placement.
func ParsePlacement(s string) (Placement, error) {
	switch Placement(s) {
	case Local, Interleaved, Node0:
		return Placement(s), nil
	}
	return "", fmt.Errorf("infeed: placement %q: %w; want local, interleaved or node0", s, ErrInvalid)
}

// Config is one host's input pipeline.
type Config struct {
	Chips     int // chips on the host, each with its own queues and MXU
	VCPUs     int // vCPUs preprocessing input
	NUMANodes int // chips and vCPUs split evenly over the nodes
	Placement Placement
	// CrossNUMA multiplies an example's cost when its worker is on another
	// node than its chip (remote memory and socket-link traffic).
	CrossNUMA float64

	ExampleCost  time.Duration // CPU time to read and preprocess one example
	Jitter       float64       // coefficient of variation of that time (0: fixed)
	Batch        int           // examples per chip per step
	ExampleBytes unit.Bytes
	PCIe         unit.BytesPerSecond // per chip, for the HBM copy

	InfeedDepth  int // batches the infeed queue holds, per chip
	HBMBuffers   int // input batches HBM holds (2: double buffering)
	OutfeedDepth int // results the outfeed queue holds, per chip

	ParamLoad time.Duration // loading the step's parameters from HBM into the MXU
	Compute   time.Duration // the MXU's work on one batch
	Drain     time.Duration // host time to consume one result from the outfeed

	Steps int
	Seed  uint64
}

// Bounds that keep the simulated clock (int64 nanoseconds) far from
// overflow.
const (
	MaxSteps        = 100000
	MaxExampleBytes = 1 << 30
	MaxSimulated    = 10 * 365 * 24 * time.Hour
)

// ErrInvalid is wrapped by configuration errors.
var ErrInvalid = errors.New("invalid infeed config")

// ForSlice fills a host configuration from the catalog for one VM of the
// slice (hw.Slice.Host: v5litepod-8's one 8-chip ct5lp-hightpu-8t, not
// v5e's usual 4-chip VM): its chips, vCPUs and PCIe bandwidth (package
// hw's assumptions where they are not published), and NUMA nodes (1 where
// not published).
func ForSlice(s hw.Slice) Config {
	c, h := s.Chip, s.Host()
	numa := max(h.NUMANodes, 1)
	return Config{
		Chips: h.Chips, VCPUs: h.VCPUsOrAssumed(), NUMANodes: numa, Placement: Local, CrossNUMA: 1.3,
		Batch: 256, ExampleCost: 2 * time.Millisecond, ExampleBytes: 32 * unit.KiB, PCIe: c.PCIeOrAssumed(),
		InfeedDepth: 2, HBMBuffers: 2, OutfeedDepth: 2,
		ParamLoad: 0, Compute: 50 * time.Millisecond, Drain: time.Millisecond, Steps: 50, Seed: 1,
	}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("infeed: %s = %v, want %s: %w", field, v, want, ErrInvalid)
	}
	switch {
	case c.Chips < 1 || c.Chips > 64:
		return bad("chips", c.Chips, "1 to 64")
	case c.VCPUs < 1 || c.VCPUs > 4096:
		return bad("vcpus", c.VCPUs, "1 to 4096")
	case c.NUMANodes < 1 || c.NUMANodes > 8:
		return bad("NUMA nodes", c.NUMANodes, "1 to 8")
	case !(c.CrossNUMA >= 1 && c.CrossNUMA <= 10): // refuses NaN too
		return bad("cross-NUMA factor", c.CrossNUMA, "1 to 10")
	case c.ExampleCost < 0 || c.ExampleCost > time.Hour:
		return bad("example cost", c.ExampleCost, "0 to 1h")
	case !(c.Jitter >= 0 && c.Jitter <= 10):
		return bad("jitter", c.Jitter, "0 to 10")
	case c.Batch < 1 || c.Batch > 1<<20:
		return bad("batch", c.Batch, "1 to 1048576 examples")
	case c.ExampleBytes < 0 || c.ExampleBytes > MaxExampleBytes || !(c.PCIe > 0) || math.IsInf(float64(c.PCIe), 0):
		return bad("example bytes or PCIe", fmt.Sprint(c.ExampleBytes, " ", c.PCIe), "non-negative bytes and a positive bandwidth")
	case c.InfeedDepth < 1 || c.HBMBuffers < 1 || c.OutfeedDepth < 1:
		return bad("queue depths", fmt.Sprint(c.InfeedDepth, c.HBMBuffers, c.OutfeedDepth), "at least 1 each")
	case c.ParamLoad < 0 || c.Compute <= 0 || c.Drain < 0:
		return bad("param load, compute and drain times", fmt.Sprint(c.ParamLoad, c.Compute, c.Drain), "non-negative, compute positive")
	case c.Steps < 1 || c.Steps > MaxSteps:
		return bad("steps", c.Steps, fmt.Sprintf("1 to %d", MaxSteps))
	case int64(c.Steps)*int64(c.Batch)*int64(c.Chips) > 50_000_000:
		return bad("steps x batch x chips", int64(c.Steps)*int64(c.Batch)*int64(c.Chips), "at most 50 million examples")
	}
	// The clock is a time.Duration (int64 nanoseconds, 292 years). Bound
	// the simulated time as if one vCPU did all the host's work, so no sum
	// can overflow whatever MinVCPUs tries.
	year := float64(365 * 24 * time.Hour)
	limit := fmt.Sprintf("at most %.0f years of simulated time", float64(MaxSimulated)/year)
	examples := float64(c.Steps) * float64(c.Batch) * float64(c.Chips)
	if host := examples * float64(c.ExampleCost) * c.CrossNUMA; host > float64(MaxSimulated) {
		return bad("steps x batch x chips x example cost x cross-NUMA factor", fmt.Sprintf("%.3g years", host/year), limit)
	}
	hbmCopy := float64(c.ExampleBytes) * float64(c.Batch) / float64(c.PCIe) * 1e9
	if mxu := float64(c.Steps) * (float64(c.ParamLoad) + float64(c.Compute) + float64(c.Drain) + hbmCopy); mxu > float64(MaxSimulated) {
		return bad("steps x (param load + compute + drain + HBM copy)", fmt.Sprintf("%.3g years", mxu/year), limit)
	}
	if _, err := ParsePlacement(string(c.Placement)); err != nil {
		return err
	}
	if c.Placement == Local && c.VCPUs < c.NUMANodes {
		return bad("vcpus", c.VCPUs, fmt.Sprintf("at least one per NUMA node (%d) with local placement", c.NUMANodes))
	}
	return nil
}

// Stalls is MXU waiting time by reason.
type Stalls struct {
	InfeedEmpty time.Duration `json:"infeed_empty"` // no batch in HBM and none being copied: the host is behind
	HBMCopy     time.Duration `json:"hbm_copy"`     // a batch is on its way over PCIe
	OutfeedFull time.Duration `json:"outfeed_full"` // the result cannot leave: the host drains too slowly
}

// Total is all stall time.
func (s Stalls) Total() time.Duration { return s.InfeedEmpty + s.HBMCopy + s.OutfeedFull }

// Result is what the simulation measured, averaged over chips.
type Result struct {
	Config   Config
	Makespan time.Duration
	// StepTime is the steady-state time per step, measured over the second
	// half of the run (after the queues have filled).
	StepTime time.Duration
	// ExamplesPerSecond is the host's training throughput.
	ExamplesPerSecond float64
	// Busy fractions of the makespan.
	HostBusy  float64 // of all vCPU time
	CopyBusy  float64
	MXUBusy   float64 // computing (parameter loads included)
	DrainBusy float64
	Stalls    Stalls // per chip, averaged, over the whole run
	// StepStalls are the MXU's waits in one steady-state step, by reason,
	// over the steps StepTime is measured on, averaged over chips. Between
	// two steps the MXU is working or waiting for a reason, so StepTime is
	// ParamLoad + Compute + StepStalls.Total() (to integer division's
	// nanoseconds). What the MXU waits on need not be what sets the step
	// (Bound): a late batch's copy is still running when the MXU turns to
	// it.
	StepStalls Stalls
}
