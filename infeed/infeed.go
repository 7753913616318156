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
	"strconv"
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
	return "", &ConfigError{Field: "{placement}", Value: strconv.Quote(s), Want: "local, interleaved or node0"}
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
	// HBM is the chip's (hw.Chip.HBM), which its HBMBuffers input batches
	// must fit in.
	HBM unit.Bytes

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

// ErrInvalid is wrapped by configuration errors (ConfigError).
var ErrInvalid = errors.New("invalid infeed config")

// ForSlice fills a host configuration from the catalog for one VM of the
// slice (hw.Slice.Host: v5litepod-8's one 8-chip ct5lp-hightpu-8t, not
// v5e's usual 4-chip VM): its chips, vCPUs and PCIe bandwidth (package
// hw's assumptions where they are not published), NUMA nodes (1 where
// not published) and each chip's HBM.
func ForSlice(s hw.Slice) Config {
	c, h := s.Chip, s.Host()
	numa := max(h.NUMANodes, 1)
	return Config{
		Chips: h.Chips, VCPUs: h.VCPUsOrAssumed(), NUMANodes: numa, Placement: Local, CrossNUMA: 1.3,
		Batch: 256, ExampleCost: 2 * time.Millisecond, ExampleBytes: 32 * unit.KiB, PCIe: c.PCIeOrAssumed(), HBM: c.HBM,
		InfeedDepth: 2, HBMBuffers: 2, OutfeedDepth: 2,
		ParamLoad: 0, Compute: 50 * time.Millisecond, Drain: time.Millisecond, Steps: 50, Seed: 1,
	}
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
