package plan

import (
	"fmt"
	"strconv"
	"strings"

	"shardlab/cost"
	"shardlab/maxtext"
	"shardlab/mesh"
	"shardlab/unit"
)

// ChipBatch is how a plan's micro-batch spreads over its chips. cost
// splits the batch over data x fsdp x expert of the layout in chips
// (cost.MicroBatchSize): the chips of one such batch shard, tensor x
// context of them in each pipeline stage, share its sequences, so a chip
// takes fewer than its shard, a fraction of a sequence where tensor x
// context exceeds them. The shard counts chips, not JAX devices: on a chip
// of several devices (TPU7x) it holds that many of MaxText's device-level
// shards (llama3-8b on tpu7x-16, data=8 in chips, data=8,fsdp=2 in devices:
// 2 sequences a shard, per_device_batch_size 1).
type ChipBatch struct {
	// PerShard is the sequences per batch shard (of chips) per
	// micro-batch (cost.Estimate.MicroBatchSize).
	PerShard int
	// PerChip is the sequences per chip per micro-batch: MaxText's
	// per_device_batch_size (PerDevice) times the chip's JAX devices,
	// read per micro-batch of a pipeline stage where a pipeline's
	// micro-batches pass every stage (PerDevice counts the whole step on
	// every device there). 0 where PerDevice is.
	PerChip float64
	// PerDevice is MaxText's per_device_batch_size for the plan, as
	// export writes it (maxtext.PerDeviceBatch of the batch a gradient
	// accumulation step takes over the multislice's JAX devices); 0 where
	// no decimal gives the batch exactly.
	PerDevice float64
	// DevicesPerChip is the chip's JAX devices (at least 1).
	DevicesPerChip int
}

// chipBatch is e's ChipBatch on the multislice of e's mesh.
func chipBatch(e cost.Estimate) ChipBatch {
	ms := e.Mesh.Multislice
	per := max(ms.Slice.Chip.JAXDevicesPerChip, 1)
	cb := ChipBatch{PerShard: e.MicroBatchSize, DevicesPerChip: per}
	steps := max(accumulation(&e), 1)
	v, err := maxtext.PerDeviceBatch(e.Job.GlobalBatch/steps, ms.Chips()*per)
	if err != nil {
		return cb
	}
	cb.PerDevice = v
	cb.PerChip = v * float64(per)
	if p := e.Mesh.Size(mesh.Pipeline); p > 1 {
		// [types.py] (package maxtext): a pipelined step is one pass of
		// per_device_batch_size x devices sequences, which
		// num_pipeline_microbatches split; each stage's chips take every
		// micro-batch
		cb.PerChip *= float64(p) / float64(max(e.Job.MicroBatches, 1))
	}
	// the product of decimals to the digits it has, not a float's tail
	cb.PerChip, _ = strconv.ParseFloat(strconv.FormatFloat(cb.PerChip, 'g', 12, 64), 64)
	return cb
}

// ChipBatch is how the plan's micro-batch spreads over its chips.
func (p Plan) ChipBatch() ChipBatch { return chipBatch(p.Best.Estimate) }

// Shared reports whether a chip takes fewer sequences than its batch
// shard: tensor or context parallelism splits each of the shard's
// sequences over several chips.
func (cb ChipBatch) Shared() bool {
	return cb.PerChip > 0 && float64(cb.PerShard) != cb.PerChip
}

// perChip scales n sequences per batch shard to sequences per chip.
func (cb ChipBatch) perChip(n int) float64 {
	if cb.PerShard == 0 || cb.PerChip == 0 {
		return 0
	}
	return float64(n) * cb.PerChip / float64(cb.PerShard)
}

// Text is the micro-batch per chip in words, with the batch shard's where
// it differs and MaxText's per_device_batch_size where that differs:
// "0.5 sequences per chip per micro-batch (2 per batch shard of data x
// fsdp x expert chips, ...)".
func (cb ChipBatch) Text() string {
	if cb.PerChip == 0 {
		return unit.Plural(cb.PerShard, "sequence") + " per batch shard (data x fsdp x expert chips) per micro-batch"
	}
	var notes []string
	if cb.Shared() {
		notes = append(notes, fmt.Sprintf("%d per batch shard of data x fsdp x expert chips, which tensor x context chips share", cb.PerShard))
	}
	if cb.PerDevice != cb.PerChip {
		notes = append(notes, fmt.Sprintf("MaxText's %s %s", maxtext.PerDeviceBatchSize, decimal(cb.PerDevice)))
	}
	out := sequences(cb.PerChip) + " per chip per micro-batch"
	if len(notes) > 0 {
		out += " (" + strings.Join(notes, "; ") + ")"
	}
	return out
}

// sequences is "1 sequence", "2 sequences" or "0.5 sequences".
func sequences(v float64) string {
	if d := decimal(v); d != "1" {
		return d + " sequences"
	}
	return "1 sequence"
}

// decimal is v to four significant digits, without trailing zeros, or
// whole from 1000 up.
func decimal(v float64) string {
	if v >= 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
