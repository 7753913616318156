// Package maxtext is MaxText's dialect of a layout: its parallelism axis
// names, and how a layout of chips, which shardlab plans and costs, becomes
// MaxText's mesh of JAX devices and back. Package export writes MaxText
// configs with it and package validate reads published MaxText runs with
// it, so a config export writes reads back as the layout it was costed on.
//
// Sources, cited below by these names:
//
//	[base.yml]  AI-Hypercomputer/maxtext:src/maxtext/configs/base.yml @e591f30cbbf217ed67ef71263ec0538239f9c3b8
//	[maxtext_utils.py] AI-Hypercomputer/maxtext:src/maxtext/utils/maxtext_utils.py @e591f30c (create_device_mesh)
//	[types.py]  AI-Hypercomputer/maxtext:src/maxtext/configs/types.py @e591f30c
package maxtext

import (
	"fmt"
	"math"
	"strconv"

	"shardlab/mesh"
)

// Axes is every parallelism axis MaxText has a key for
// (ici_<axis>_parallelism and dcn_<axis>_parallelism, [base.yml] lines
// 659-684), in base.yml's order.
var Axes = []string{"diloco", "data", "fsdp", "fsdp_transpose", "sequence", "context", "context_usp_ulysses",
	"context_autoregressive", "tensor", "tensor_sequence", "autoregressive", "pipeline", "expert"}

// names is MaxText's name of each of shardlab's axes.
var names = [mesh.NumAxes]string{
	mesh.Data: "data", mesh.FSDP: "fsdp", mesh.Tensor: "tensor",
	mesh.Pipeline: "pipeline", mesh.Context: "context", mesh.Expert: "expert",
}

// Name is MaxText's name of a shardlab axis: the <axis> of its
// ici_<axis>_parallelism and dcn_<axis>_parallelism keys.
func Name(a mesh.Axis) string {
	if a < 0 || a >= mesh.NumAxes {
		return ""
	}
	return names[a]
}

// ICIKey is MaxText's key for the factor of the axis MaxText calls name
// (one of Axes) inside a slice: ici_<name>_parallelism ([base.yml] lines
// 659-684).
func ICIKey(name string) string { return "ici_" + name + "_parallelism" }

// DCNKey is MaxText's key for the factor of the axis MaxText calls name
// across slices: dcn_<name>_parallelism ([base.yml] lines 659-684).
func DCNKey(name string) string { return "dcn_" + name + "_parallelism" }

// PerDeviceBatchSize is MaxText's key for the sequences each JAX device
// takes per step ([base.yml]); MaxText's global batch is the devices
// times it (configs/types.py @e591f30c), so a chip of several devices
// takes that many times it.
const PerDeviceBatchSize = "per_device_batch_size"

// PerDeviceBatch is the per_device_batch_size that makes MaxText train on
// exactly batch sequences over devices JAX devices: [types.py] takes
// int(devices x per_device_batch_size), so the decimal (the shortest that
// strconv's 'g' format spells) must not round below. The error says when
// no decimal does.
func PerDeviceBatch(batch, devices int) (float64, error) {
	if batch <= 0 || devices <= 0 {
		return 0, fmt.Errorf("maxtext: %d sequences over %d devices, want both positive", batch, devices)
	}
	v := float64(batch) / float64(devices)
	for range 4 {
		w, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', -1, 64), 64)
		if int(float64(devices)*w) == batch {
			return w, nil
		}
		v = math.Nextafter(v, math.Inf(1))
	}
	return 0, fmt.Errorf("maxtext: %s %g: no decimal gives exactly %d sequences over %d devices", PerDeviceBatchSize, float64(batch)/float64(devices), batch, devices)
}

// GradientAccumulationSteps is MaxText's key for the micro-batches a step
// accumulates gradients over, one after another ([base.yml]; a
// PositiveInt, default 1, in configs/types.py @e591f30c). The step trains
// on devices x per_device_batch_size x it sequences
// (calculate_global_batch_sizes), so per_device_batch_size is one
// micro-batch's; types.py refuses it above 1 with fp8 quantization.
const GradientAccumulationSteps = "gradient_accumulation_steps"

// NoAxis is InChipAxis's answer when no axis can carry the factor.
const NoAxis mesh.Axis = -1

// InChipAxis is the axis that carries the factor of a chip's several JAX
// devices (TensorCores on v2, v3 and TPU7x; [maxtext_utils.py]: the ici_*
// factors multiply to the devices of a slice), for a chip that holds
// microBatch sequences per micro-batch of seq tokens split over context
// chips:
//   - fsdp when the chip's micro-batch splits over its devices, so each
//     device holds its share of the chip's sequences and of its state shard
//     (what the Ironwood recipes do: AI-Hypercomputer/tpu-recipes
//     training/ironwood/llama3.1-70b @c8cfe2f6, ici_fsdp 128 on 64 chips);
//   - else context, when the sequence splits once more (MaxText's
//     context_parallel_load_balance, [base.yml] line 1200, cuts it into
//     2 x context chunks);
//   - else NoAxis.
//
// Never data: that would hold a replica of the chip's state on each
// device, twice what was costed. Traffic between the devices of one chip
// stays on the chip either way.
func InChipAxis(microBatch, seq, context, perChip int) mesh.Axis {
	switch {
	case perChip <= 1:
		return NoAxis
	case microBatch > 0 && microBatch%perChip == 0:
		return mesh.FSDP
	case context > 0 && seq%(2*context*perChip) == 0:
		return mesh.Context
	}
	return NoAxis
}

// Factors is a layout's ICI factors, by shardlab axis.
type Factors [mesh.NumAxes]int

// Devices is the ICI factors of MaxText's device mesh for the chip
// factors chips: the in-chip axis (InChipAxis, for the chip's
// micro-batch) times the chip's devices. It returns that axis, and an
// error when no axis can carry the factor. DCN factors count slices and
// stay as they are.
func Devices(chips Factors, microBatch, seq, perChip int) (Factors, mesh.Axis, error) {
	if perChip <= 1 {
		return chips, NoAxis, nil
	}
	a := InChipAxis(microBatch, seq, max(chips[mesh.Context], 1), perChip)
	if a == NoAxis {
		return chips, a, fmt.Errorf("maxtext: %d sequences per chip per micro-batch of %d tokens over context %d: neither splits over a chip's %d JAX devices",
			microBatch, seq, max(chips[mesh.Context], 1), perChip)
	}
	chips[a] = max(chips[a], 1) * perChip
	return chips, a, nil
}

// Chips is Devices' inverse: the chip factors whose device mesh is
// devices, where microBatch gives a candidate chip layout's sequences per
// chip per micro-batch. It tries the axes Devices would use, fsdp then
// context, and takes the first whose chip layout Devices maps back to
// devices; a published run that does neither, but has the factor on data
// (a replica per device: it ran, so it fits), falls back to data. It
// returns the axis the factor came off.
//
// Some device meshes have two chip readings: chips of fsdp f (f even),
// context c, one sequence each, with the factor on context, and chips of
// fsdp f/2, context 2c, two sequences each, with it on fsdp, are the same
// devices running the same program; which two devices share a chip is
// JAX's choice (jax mesh_utils.create_device_mesh), not the config's.
// Chips gives the fsdp reading.
func Chips(devices Factors, seq, perChip int, microBatch func(Factors) (int, error)) (Factors, mesh.Axis, error) {
	if perChip <= 1 {
		return devices, NoAxis, nil
	}
	for _, a := range []mesh.Axis{mesh.FSDP, mesh.Context} {
		n := max(devices[a], 1)
		if n%perChip != 0 {
			continue
		}
		c := devices
		c[a] = n / perChip
		b, err := microBatch(c)
		if err != nil {
			continue
		}
		if back, _, err := Devices(c, b, seq, perChip); err == nil && back == normal(devices, a) {
			return c, a, nil
		}
	}
	if n := max(devices[mesh.Data], 1); n%perChip == 0 {
		devices[mesh.Data] = n / perChip
		return devices, mesh.Data, nil
	}
	return devices, NoAxis, fmt.Errorf("maxtext: ici factors %v: none of fsdp, context or data carries a chip's %d JAX devices", devices, perChip)
}

// normal is devices with a's factor at least 1, as Devices writes it.
func normal(devices Factors, a mesh.Axis) Factors {
	devices[a] = max(devices[a], 1)
	return devices
}

// meshAxes is MaxText's mesh_axes ([base.yml] line 531), each by the
// <axis> of its ici_<axis>_parallelism key (mesh_axes' "stage" is
// pipeline's).
var meshAxes = []string{"diloco", "data", "pipeline", "fsdp", "fsdp_transpose", "context", "context_usp_ulysses",
	"context_autoregressive", "tensor", "tensor_sequence", "expert", "autoregressive"}

// MeshAxes is the order in which MaxText's create_device_mesh lays out
// the ICI factors ([maxtext_utils.py], ordered by increasing network
// intensity), each axis by the name ICIKey takes: base.yml's mesh_axes,
// with the pipeline's stage moved before data when the job is pipelined
// (configs/types.py @e591f30c lines 3633-3640). The slice is the caller's.
func MeshAxes(pipelined bool) []string {
	out := append([]string(nil), meshAxes...)
	if pipelined {
		out[1], out[2] = out[2], out[1]
	}
	return out
}
