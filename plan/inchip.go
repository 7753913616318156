package plan

import (
	"fmt"

	"shardlab/cost"
	"shardlab/maxtext"
	"shardlab/mesh"
	"shardlab/unit"
)

// The devices of one chip. On a chip of several JAX devices (v2, v3,
// TPU7x: hw.Chip.JAXDevicesPerChip) MaxText puts them on an axis of its
// own choosing (package maxtext, InChipAxis: fsdp where the batch shard's
// sequences split over them, else context), so a layout that is pure
// data parallelism across chips is FSDP over each chip's devices, each
// device holding half the chip's replica in its own HBM. cost costs
// chips: the collectives between a chip's devices, over its die-to-die
// link, are in no step time (package inference says the same of serving,
// inference/inchip.go, where the link's rate is discussed).

// inChip is e's in-chip axis in words, "FSDP over each chip's 2 JAX
// devices", and the axis; "" and maxtext.NoAxis (via DevicesOf) where a
// chip is one device or no axis carries its devices.
func inChip(e cost.Estimate) (string, mesh.Axis) {
	per := e.Mesh.Multislice.Slice.Chip.JAXDevicesPerChip
	if per <= 1 {
		return "", maxtext.NoAxis
	}
	d, err := DevicesOf(e)
	if err != nil || d.InChip < 0 {
		return "", maxtext.NoAxis
	}
	name := d.InChip.String()
	if d.InChip == mesh.FSDP {
		name = "FSDP"
	}
	if e.Mesh.Chips() == 1 {
		return fmt.Sprintf("%s over the chip's %d JAX devices", name, per), d.InChip
	}
	return fmt.Sprintf("%s over each chip's %d JAX devices", name, per), d.InChip
}

// dpName is the name of pure data parallelism across the chips of e,
// whose devices MaxText puts on an axis (inChip): "pure DP across chips,
// FSDP over each chip's 2 JAX devices", or for one chip "one chip, FSDP
// over the chip's 2 JAX devices"; "" where a chip is one device.
func dpName(e cost.Estimate) string {
	words, _ := inChip(e)
	switch {
	case words == "":
		return ""
	case e.Mesh.Chips() == 1:
		return "one chip, " + words
	}
	return "pure DP across chips, " + words
}

// dpInChipNote is the reason for pure data parallelism across chips whose
// devices MaxText puts on fsdp: what each device holds against its own
// HBM, the chip's usable HBM split evenly over its devices (hw.Chip.XLACapacity
// counts a device's capacity times the devices). ok is false where a chip
// is one device.
func dpInChipNote(where string, e cost.Estimate) (Note, bool) {
	if _, a := inChip(e); a != mesh.FSDP {
		return Note{}, false
	}
	per := unit.Bytes(e.Mesh.Multislice.Slice.Chip.JAXDevicesPerChip)
	state, device := e.Memory.State(), e.Memory.Usable/per
	fit := "fit no JAX device, but"
	if state <= device {
		fit = "would fit one JAX device, and MaxText splits it:"
	}
	return note("", "inside %s: %s (as MaxText runs it): a full replica's weights, gradients and optimizer state (%v) %s a share of it, %v, fits each of a chip's %d devices in %v of usable HBM a device (%v a chip) with room for %s of activations a device",
		where, dpName(e), state, fit, state/per, per, device, e.Memory.Usable,
		sequences(float64(e.MicroBatchSize)/float64(per))), true
}

// inChipWarnings says that the collectives between a chip's devices are
// not costed, what they are on e's in-chip axis; none where a chip is one
// device.
func inChipWarnings(e cost.Estimate) []Note {
	words, a := inChip(e)
	if words == "" {
		return nil
	}
	what := "each layer's weights all-gathered and its gradients reduce-scattered between them"
	if a == mesh.Context {
		what = "each layer's keys and values exchanged between them (context parallelism)"
	}
	return []Note{note("", "in-chip collectives not costed: MaxText runs %s, %s over the chip's die-to-die link, whose rate is not published; the step time and the collectives table count the collectives between chips only",
		words, what)}
}
