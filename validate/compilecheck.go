package validate

import (
	"errors"
	"fmt"
	"math"

	"shardlab/hw"
	"shardlab/unit"
)

// ErrNotThisJob is wrapped by the errors of a compile log that cannot be
// the compile of the job it is held against (LogMismatch): another chip's,
// another job's, or a message XLA does not print. Such a log gives no
// verdict on the job and no temporaries' factor.
var ErrNotThisJob = errors.New("the log cannot be of this job's compile")

// ArgumentBound is how far the job's parameters and optimizer state
// (MemoryResult.Arguments) may be from a compile's arguments, as
// validate's error of them ((predicted − reported) / reported, as
// MemoryResult.ArgumentError and the memory table's error column), for
// the log to be of the job. On the memory table the arguments a compile
// reports agree with cost's within 1.4 % (mt-doc-ds2-16b-pdb24 -1.4 %,
// hy3-v7-64c-pdb12-aot and hy3-v7-64c-probe-p13-outproj-off -0.0 %:
// `shardlab validate --memory`); what cost leaves out of them (the input
// batch, XLA's padding of shards) is of that order. The nearest job a log
// could otherwise be of is a sixth or a fifth off: MaxText's mu_dtype
// bfloat16 under fp32 weights keeps Adam's first moment in 2 bytes in
// place of 4, 10 bytes a parameter in place of 12 (configs/base.yml
// @e591f30c: weight_dtype float32, mu_dtype inherits it), an error of
// +20 % for a plan of 12 against a compile of 10 and -16.7 % the other
// way; another dtype, optimizer or sharding moves them by a third or
// more. A tenth lies between the two.
const ArgumentBound = 0.10

// Compiled reports whether the job the log is of ran past its compile and
// load: a memory report of a program XLA laid out, not an out-of-memory
// message (of the compile, of a scratch memory, or of the runtime's load
// of a program that compiled, CompileLog.Failure).
func (l CompileLog) Compiled() bool { return l.Kind != KindOOM }

// ArgumentOff is how far r's parameters and optimizer state are from the
// log's arguments, as validate's error ((r − log) / log, what
// CompareLog's MemoryResult.ArgumentError and check's table print: +0.98
// is a job at 1.98 times the compile's); ok is false where either is not
// known.
func ArgumentOff(l CompileLog, r MemoryResult) (off float64, ok bool) {
	if l.Breakdown.Argument <= 0 || r.Arguments <= 0 {
		return 0, false
	}
	return relErr(r.Arguments, l.Breakdown.Argument), true
}

// DeviceCapacity is the HBM XLA lets one JAX device of chip hold
// (hw.Chip.XLACapacity over its devices); known is false where no
// out-of-memory message of the generation was found (hw/xla_hbm.csv),
// and the figure is then hw's assumption.
func DeviceCapacity(chip hw.Chip) (perDevice int64, known bool) {
	_, known = chip.CompilerHBM()
	return int64(chip.XLACapacity() / unit.Bytes(max(chip.JAXDevicesPerChip, 1))), known
}

// capacityPrint is how far a capacity a log prints may be from the
// chip's for the log to be of the chip: XLA prints it to two decimals of
// a GiB (hw/xla_hbm.csv holds such prints), 0.005 GiB; 1 % is wider than
// that, and narrower than the closest pair of generations (TPU7x's 94.74
// GiB a device against v5p's 95.74, 1.04 % apart).
const capacityPrint = 0.01

// LogMismatch is why log, held against the job r compares it with on
// chip, cannot be that job's compile, wrapping ErrNotThisJob; nil where it
// can be. A log is not the job's when it is an out-of-memory message
// below its own capacity (XLA prints one only above it), when the
// capacity it prints is not what XLA gives a JAX device of chip
// (capacityMismatch; not checked where that is not known), when it
// reports less in all than the job's parameters and optimizer state
// alone (beyond ArgumentBound), or when those are further than
// ArgumentBound from its arguments (ArgumentOff). A scratch memory's
// message (MessageScratch) says nothing of HBM and is held to none.
func LogMismatch(l CompileLog, r MemoryResult, chip hw.Chip) error {
	if l.Message == MessageScratch {
		return nil
	}
	if l.Kind == KindOOM && l.Reported < l.Capacity {
		return fmt.Errorf("validate: an out-of-memory message at %s of %s: XLA prints one only above its capacity: %w", gib(l.Reported), gib(l.Capacity), ErrNotThisJob)
	}
	if per, known := DeviceCapacity(chip); known && l.Capacity > 0 {
		if err := capacityMismatch(l, r, chip, per); err != nil {
			return err
		}
	}
	if l.Scope == ScopeTotal && l.Breakdown.Argument == 0 && float64(l.Reported)*(1+ArgumentBound) < float64(r.Arguments) {
		return fmt.Errorf("validate: the log reports %s in all, below the job's parameters and optimizer state alone, %s, by more than the %.0f%% a compile of the job is within: it is of another program (XLA prints a report for each program it compiles) or another job: %w", gib(l.Reported), gib(r.Arguments), 100*ArgumentBound, ErrNotThisJob)
	}
	if off, ok := ArgumentOff(l, r); ok && math.Abs(off) > ArgumentBound {
		return fmt.Errorf("validate: the job's parameters and optimizer state, %s, are %+.1f%% against the compile's arguments, %s (error = (predicted - reported) / reported), beyond the %.0f%% a compile of the job is within (another dtype, optimizer, model or sharding): %w", gib(r.Arguments), 100*off, gib(l.Breakdown.Argument), 100*ArgumentBound, ErrNotThisJob)
	}
	return nil
}

// capacityMismatch is why the capacity log l prints cannot be what a JAX
// device of chip gives a compile of the job r (per, DeviceCapacity),
// within capacityPrint of per; nil where it can be. A limit on the total
// is per. A limit on the temporaries alone (ScopeTemp) is either per,
// where XLA holds the temporaries to the whole device (the Hunyuan3 and
// DeepSeek V3 compiles on TPU7x print 94.74G, memory.yaml's hy3-v7-64c
// rows), or per less the job's arguments, what the runtime can reserve
// beside them (tpurecipes-dsv3-v5p256-pdb5: 66.40 = 95.74 − 29.3 GiB);
// the arguments are cost's, within 1.4 % of the compilers' on the memory
// table, well inside the print's tolerance. What the runtime could
// reserve (MessageReserve) is at most per less the arguments, and less
// where other buffers were live ("buffer allocations are privileged over
// loaded programs", docs/errors/error_0101.md @11903d43). The early
// abort's available bytes leave out what its docs do not say
// (MessageEarlyAbort): it is held only to be no more than per.
func capacityMismatch(l CompileLog, r MemoryResult, chip hw.Chip, per int64) error {
	tol := capacityPrint * float64(per)
	near := func(want int64) bool { return math.Abs(float64(l.Capacity-want)) <= tol }
	switch {
	case l.Message == MessageEarlyAbort:
		if float64(l.Capacity) > float64(per)+tol {
			return fmt.Errorf("validate: XLA's early abort has %s available a JAX device, more than the %s a %s device holds (hw/xla_hbm.csv): it was compiled for another chip: %w", gib(l.Capacity), gib(per), chip.Generation, ErrNotThisJob)
		}
	case l.Message == MessageReserve:
		if float64(l.Capacity) > float64(per-r.Arguments)+tol {
			return fmt.Errorf("validate: the runtime had %s reservable a JAX device, more than the %s a %s device holds (hw/xla_hbm.csv) leaves beside the job's parameters and optimizer state, %s: it was of another chip or job: %w", gib(l.Capacity), gib(per), chip.Generation, gib(r.Arguments), ErrNotThisJob)
		}
	case l.Scope == ScopeTemp:
		if !near(per) && !near(per-r.Arguments) {
			return fmt.Errorf("validate: the HBM it had for the temporaries is %s a JAX device, neither the %s a %s device holds (hw/xla_hbm.csv) nor the %s that leaves beside the job's parameters and optimizer state, %s: it was compiled for another chip (or loaded beside other buffers): %w", gib(l.Capacity), gib(per), chip.Generation, gib(per-r.Arguments), gib(r.Arguments), ErrNotThisJob)
		}
	case !near(per):
		return fmt.Errorf("validate: the capacity it prints is %s a JAX device, %s's is %s (hw/xla_hbm.csv): it was compiled for another chip: %w", gib(l.Capacity), chip.Generation, gib(per), ErrNotThisJob)
	}
	return nil
}

// AboveCapacity reports whether a log of a compile that succeeded reports
// more than XLA lets a JAX device of chip hold (DeviceCapacity; the
// published HBM a device where that is not known), and that capacity. It
// is not a mismatch: jax's memory analysis adds the arguments, outputs
// and temporaries without their lifetimes, and "the compiler could
// over-estimate the HBM usage" (MaxText's
// docs/guides/monitoring_and_debugging/understand_logs_and_metrics.md
// @e591f30c, whose v5p-8 run reports 100.4 GB against the 95.74 GiB its
// devices hold, and trained: memory.yaml's mt-doc-ds2-16b-pdb24). Nor is
// it a promise that the step loads: LoadShortfallCase passed its compile
// with its program and arguments above a device, and failed to load.
func AboveCapacity(l CompileLog, chip hw.Chip) (perDevice int64, above bool) {
	per, known := DeviceCapacity(chip)
	if !known {
		per = int64(chip.HBM / unit.Bytes(max(chip.JAXDevicesPerChip, 1)))
	}
	// a temp-scope report is part of the total: above, the total is too
	return per, l.Compiled() && per > 0 && l.Reported > per
}

// LoadShortfallCase is the memory table's one compile that passed and
// whose program then failed to load: the runtime could not reserve the
// temporaries the compile laid out (MessageReserve).
const LoadShortfallCase = "tpurecipes-dsv3-v5p256-pdb5"

// LoadShortfall is how far the load of LoadShortfallCase fell short, a
// JAX device: the bytes it asked to reserve less those reservable (68.03
// − 66.40 = 1.63 GiB), read from the memory table. Its reservable is the
// device's 95.74 GiB less its 29.34 of arguments (the table's note:
// nothing else was live), so this is also by how much its program and
// arguments exceeded the device: an overshoot above capacity. It says
// what a compile that passed can be over and still fail at load; it is
// no margin below capacity (no case in the table measures how much free
// a load needs), and check warns only of a compile above capacity.
func LoadShortfall() (int64, error) {
	cases, err := MemoryCases()
	if err != nil {
		return 0, err
	}
	for _, c := range cases {
		if c.ID == LoadShortfallCase && c.Kind == KindOOM && c.ReportedBytes > c.CapacityBytes {
			return c.ReportedBytes - c.CapacityBytes, nil
		}
	}
	return 0, fmt.Errorf("validate: memory case %s: not in the table as an out-of-memory case that states its bytes", LoadShortfallCase)
}

// Headroom is what a log of a compile that succeeded leaves free of what
// XLA lets a JAX device of chip hold (AboveCapacity's capacity), and that
// capacity: the total reported, or for a report of the temporaries alone
// those and the job's parameters and optimizer state (r.Arguments, cost's:
// the log does not give them). ok is false for a log of a job that did
// not run.
func Headroom(l CompileLog, r MemoryResult, chip hw.Chip) (free, capacity int64, ok bool) {
	if !l.Compiled() {
		return 0, 0, false
	}
	capacity, _ = AboveCapacity(l, chip)
	used := l.Reported
	if l.Scope == ScopeTemp {
		used += r.Arguments
	}
	return capacity - used, capacity, capacity > 0
}

// Load is what the runtime's failure to load a program that compiled
// (MessageReserve) says of the job it is held against, a JAX device: the
// program it asked to reserve and what was reservable, the job's
// parameters and optimizer state (cost's: the message does not print
// them), and the device's capacity (DeviceCapacity). The runtime reserves
// the program beside the arguments and whatever other buffers are live
// ("buffer allocations are privileged over loaded programs", openxla/xla
// docs/errors/error_0101.md @11903d43), so a device leaves at most
// Capacity − Arguments reservable: where the program is more than that
// (Over above 0) no load can reserve it, as memory.yaml's pdb5's could
// not (68.03 GiB of temporaries and 29.34 of arguments, 1.63 over
// 95.74); where it is not, the reservable fell short by what other
// buffers held (Others).
type Load struct {
	Program    int64 `json:"program_bytes"`
	Reservable int64 `json:"reservable_bytes"`
	Arguments  int64 `json:"arguments_bytes"`
	Capacity   int64 `json:"capacity_bytes"`
	// Over is Program + Arguments − Capacity: above 0, by how much the
	// program and the arguments exceed a device.
	Over int64 `json:"over_capacity_bytes"`
	// Others is Capacity − Arguments − Reservable, 0 or more: what the
	// device held beside the arguments at load (or how far its
	// arguments are above the job's).
	Others int64 `json:"other_buffers_bytes"`
}

// ReserveLoad is l's Load against the job r on chip; ok is false where l
// is not the runtime's failure to load (MessageReserve).
func ReserveLoad(l CompileLog, r MemoryResult, chip hw.Chip) (ld Load, ok bool) {
	if l.Message != MessageReserve {
		return Load{}, false
	}
	per, _ := AboveCapacity(l, chip)
	ld = Load{Program: l.Reported, Reservable: l.Capacity, Arguments: r.Arguments, Capacity: per}
	ld.Over = ld.Program + ld.Arguments - ld.Capacity
	ld.Others = max(ld.Capacity-ld.Arguments-ld.Reservable, 0)
	return ld, true
}
