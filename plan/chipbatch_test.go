package plan

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"shardlab/hw"
	"shardlab/mesh"
)

// TestChipBatch: the sequences per chip per micro-batch, against review
// 163 #1's hand counts (8 sequences on 16 chips is 0.5 a chip, MaxText's
// per_device_batch_size 0.5, not the 2 of a data x fsdp shard; 16 on 256
// TPU7x chips, 512 JAX devices, is 1/16 a chip, 1/32 a device, what
// export maxtext writes), and a second count of every case from the
// layout: a micro-batch's sequences over the chips of one pipeline
// stage, and the shard's over its tensor x context chips.
func TestChipBatch(t *testing.T) {
	for _, c := range []struct {
		model, tpu, mesh, batch, schedule string
		perChip, perDevice                float64
		shard                             int
	}{
		{"llama3-8b", "v5p-32", "fsdp=4,tensor=4", "8", "", 0.5, 0.5, 2},
		{"llama3-8b", "tpu7x-8", "data=4,fsdp=2", "", "", 2, 1, 2}, // the default batch, 8: 2 a chip of 2 devices
		{"llama3-8b", "tpu7x-8", "fsdp=8", "8", "", 2, 1, 2},
		{"llama3-8b", "tpu7x-512", "fsdp=16,context=32", "16", "", 0.0625, 0.03125, 1},
		// 32 sequences in 4 micro-batches of 8 over 8 fsdp shards: 1 a
		// shard, 1 a chip of a stage (8 chips), and MaxText's
		// per_device_batch_size the step's 32 over 32 devices
		{"llama3-8b", "v5p-64", "fsdp=8,pipeline=4", "32", "gpipe", 1, 1, 1},
	} {
		p := searchOptions(t, func(o *Options) {
			o.Model, o.TPU, o.Mesh, o.GlobalBatch, o.Schedule = c.model, c.tpu, c.mesh, c.batch, c.schedule
		})
		e := p.Best.Estimate
		cb := p.ChipBatch()
		name := c.model + " " + c.tpu + " " + c.mesh
		if cb.PerChip != c.perChip || cb.PerDevice != c.perDevice || cb.PerShard != c.shard {
			t.Errorf("%s: ChipBatch = %+v, want %g a chip, %g a device, %d a shard", name, cb, c.perChip, c.perDevice, c.shard)
		}
		stage := float64(e.Mesh.Chips()) / float64(e.Mesh.Size(mesh.Pipeline))
		want := float64(e.Job.GlobalBatch) / float64(max(e.Job.MicroBatches, 1)) / stage
		if math.Abs(cb.PerChip-want) > 1e-9*want {
			t.Errorf("%s: %g sequences per chip per micro-batch, want %d / %d micro-batches / %g chips a stage = %g",
				name, cb.PerChip, e.Job.GlobalBatch, e.Job.MicroBatches, stage, want)
		}
		share := float64(e.Mesh.Size(mesh.Tensor) * e.Mesh.Size(mesh.Context))
		if got := float64(cb.PerShard) / share; math.Abs(cb.PerChip-got) > 1e-9*got {
			t.Errorf("%s: %g per chip, want the shard's %d over tensor x context %g = %g", name, cb.PerChip, cb.PerShard, share, got)
		}
		var text strings.Builder
		if err := p.WriteText(&text, nil); err != nil {
			t.Fatal(err)
		}
		if line := sequences(cb.PerChip) + " per chip per micro-batch"; !strings.Contains(text.String(), line) {
			t.Errorf("%s: text lacks %q", name, line)
		}
		j := p.JSON(nil)
		if j.MicroBatch != cb.PerChip || j.MicroBatchShard != cb.PerShard || j.PerDeviceBatch != cb.PerDevice {
			t.Errorf("%s: JSON %g a chip, %d a shard, %g a device, want %+v", name, j.MicroBatch, j.MicroBatchShard, j.PerDeviceBatch, cb)
		}
	}
}

// TestQuantizedHFU: review 163's "HFU 110.0% (of the bf16 peak)" on an
// int8 plan reads as a bug; the text says it against the int8 peak too,
// as validate's table does ("/ x% int8"), by the ratio of the two peaks
// hw's catalog holds.
func TestQuantizedHFU(t *testing.T) {
	p := searchOptions(t, func(o *Options) { o.Model, o.TPU, o.Quantization = "llama3-70b", "v5e-256", "int8" })
	e := p.Best.Estimate
	chip := p.Request.Multislice.Slice.Chip
	bf16, _ := chip.Peak(hw.BF16)
	int8, _ := chip.Peak(hw.Int8)
	want := e.HFU * float64(bf16) / float64(int8)
	if got := p.JSON(nil).QuantizedHFU; math.Abs(got-want) > 1e-9 {
		t.Errorf("quantized_hfu_fraction = %g, want HFU %g x bf16 / int8 peak = %g", got, e.HFU, want)
	}
	var text strings.Builder
	if err := p.WriteText(&text, nil); err != nil {
		t.Fatal(err)
	}
	if line := fmt.Sprintf("HFU %.1f%% / %.1f%% int8 (of the bf16 peak / of the int8 peak)", 100*e.HFU, 100*want); !strings.Contains(text.String(), line) {
		t.Errorf("text lacks %q:\n%s", line, text.String())
	}
}

// TestBatchShardCountsChips: review 166 (smaller). On TPU7x, two JAX
// devices a chip, the batch shard is one of the layout's in chips, not of
// its device_spec: llama3-8b on tpu7x-16 (data=8 in chips, data=8,fsdp=2
// in devices, 16 sequences) is 2 sequences a shard of chips and MaxText's
// per_device_batch_size 1 over 16 device shards, both the micro-batch;
// the text says the shard counts chips, as README's schema row does.
func TestBatchShardCountsChips(t *testing.T) {
	p := searchOptions(t, func(o *Options) { o.Model, o.TPU = "llama3-8b", "tpu7x-16" })
	e, j := p.Best.Estimate, p.JSON(nil)
	batch := e.Job.GlobalBatch / max(e.Job.MicroBatches, 1)
	chipShards := e.Mesh.Size(mesh.Data) * e.Mesh.Size(mesh.FSDP) * e.Mesh.Size(mesh.Expert)
	if j.MicroBatchShard*chipShards != batch {
		t.Errorf("%d a shard x %d chip shards (%s), want the micro-batch %d", j.MicroBatchShard, chipShards, e.Mesh, batch)
	}
	devShards := 1
	for _, kv := range strings.Split(j.Top[0].DeviceSpec, ",") {
		var axis string
		var n int
		if _, err := fmt.Sscanf(strings.Replace(kv, "=", " ", 1), "%s %d", &axis, &n); err != nil {
			t.Fatalf("device spec %q: %v", j.Top[0].DeviceSpec, err)
		}
		if axis == "data" || axis == "fsdp" || axis == "expert" {
			devShards *= n
		}
	}
	if devShards == chipShards || j.PerDeviceBatch*float64(devShards) != float64(batch) {
		t.Errorf("per_device_batch_size %g x %d device shards (%s), want the micro-batch %d over more shards than the %d of chips",
			j.PerDeviceBatch, devShards, j.Top[0].DeviceSpec, batch, chipShards)
	}
	if got := (ChipBatch{PerShard: 2}).Text(); !strings.Contains(got, "data x fsdp x expert chips") {
		t.Errorf("text %q, want the shard named in chips", got)
	}
}
