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

// Compiled reports whether the compile the log is of succeeded: a memory
// report of a program XLA laid out, not its out-of-memory message.
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
// below its own capacity (XLA prints one only above it), when the capacity
// it prints is not what XLA gives a JAX device of chip (DeviceCapacity,
// beyond capacityPrint; not checked where that is not known), or when the
// job's parameters and optimizer state are further than ArgumentBound
// from its arguments (ArgumentOff).
func LogMismatch(l CompileLog, r MemoryResult, chip hw.Chip) error {
	if l.Kind == KindOOM && l.Reported < l.Capacity {
		return fmt.Errorf("validate: compile log: an out-of-memory message at %s of %s: XLA prints one only above its capacity: %w", gib(l.Reported), gib(l.Capacity), ErrNotThisJob)
	}
	if per, known := DeviceCapacity(chip); known && l.Capacity > 0 && math.Abs(float64(l.Capacity-per)) > capacityPrint*float64(per) {
		return fmt.Errorf("validate: compile log: the capacity it prints is %s a JAX device, %s's is %s (hw/xla_hbm.csv): it was compiled for another chip: %w", gib(l.Capacity), chip.Generation, gib(per), ErrNotThisJob)
	}
	if off, ok := ArgumentOff(l, r); ok && math.Abs(off) > ArgumentBound {
		return fmt.Errorf("validate: compile log: the job's parameters and optimizer state, %s, are %+.1f%% against the compile's arguments, %s (error = (predicted - reported) / reported), beyond the %.0f%% a compile of the job is within (another dtype, optimizer, model or sharding): %w", gib(r.Arguments), 100*off, gib(l.Breakdown.Argument), 100*ArgumentBound, ErrNotThisJob)
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
// devices hold, and trained: memory.yaml's mt-doc-ds2-16b-pdb24).
func AboveCapacity(l CompileLog, chip hw.Chip) (perDevice int64, above bool) {
	per, known := DeviceCapacity(chip)
	if !known {
		per = int64(chip.HBM / unit.Bytes(max(chip.JAXDevicesPerChip, 1)))
	}
	// a temp-scope report is part of the total: above, the total is too
	return per, l.Compiled() && per > 0 && l.Reported > per
}
