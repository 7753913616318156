package plan

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/maxtext"
	"shardlab/mesh"
	"shardlab/unit"
)

// The {mesh} option counts JAX devices, as MaxText's ici_*_parallelism
// keys and JAX do (hw.Chip.JAXDevicesPerChip: two a chip on v2, v3 and
// TPU7x, one on the rest); shardlab plans and costs chips. The device
// mesh and the chip layout are one another's readings by MaxText's rule
// (package maxtext: the chip's devices split its sequences per
// micro-batch on fsdp, else its sequence on context).

// DeviceLayout is a plan's layout as MaxText's mesh of JAX devices.
type DeviceLayout struct {
	// Degrees are the device mesh's axes; DCN factors count slices, as
	// the chip layout's do.
	Degrees []mesh.Degree
	// InChip is the axis that carries a chip's several devices;
	// maxtext.NoAxis for one device a chip.
	InChip mesh.Axis
	// Devices and Chips are the layout's JAX devices and chips.
	Devices, Chips int
}

// String spells the device mesh as the {mesh} option takes it.
func (d DeviceLayout) String() string { return spellMesh(d.Degrees) }

// Count is "N devices (M chips)", or "M chips" when a chip is one device.
func (d DeviceLayout) Count() string {
	if d.Devices == d.Chips {
		return unit.Plural(d.Chips, "chip")
	}
	return fmt.Sprintf("%d devices (%s)", d.Devices, unit.Plural(d.Chips, "chip"))
}

// spellMesh is degrees spelt as mesh.Mesh.String spells a layout.
func spellMesh(degrees []mesh.Degree) string {
	if s := mesh.Spell(degrees); s != "" {
		return s
	}
	return "single device"
}

// canonicalMesh is degrees spelt with their axes in mesh's order, so
// that two spellings of one mesh ("context=2,fsdp=64" and
// "fsdp=64,context=2") compare equal.
func canonicalMesh(degrees []mesh.Degree) string {
	sorted := slices.Clone(degrees)
	slices.SortStableFunc(sorted, func(a, b mesh.Degree) int { return cmp.Compare(a.Axis, b.Axis) })
	return spellMesh(sorted)
}

// factors is degrees' ICI factors by axis (1 for an axis not named).
func factors(degrees []mesh.Degree) maxtext.Factors {
	var f maxtext.Factors
	for i := range f {
		f[i] = 1
	}
	for _, d := range degrees {
		f[d.Axis] = d.ICI
	}
	return f
}

// Devices is the plan's layout as MaxText's device mesh: the chip layout
// with the in-chip factor on the axis maxtext.Devices picks for the
// plan's sequences per batch shard per micro-batch. The error says when
// neither axis can carry it (the plan then has no MaxText mesh).
func (p Plan) Devices() (DeviceLayout, error) { return DevicesOf(p.Best.Estimate) }

// DevicesOf is e's layout as MaxText's device mesh (Plan.Devices): a
// published run's too (validate.Beside), as the {mesh} option takes it.
func DevicesOf(e cost.Estimate) (DeviceLayout, error) {
	per := e.Mesh.Multislice.Slice.Chip.JAXDevicesPerChip
	chips := e.Mesh.Degrees()
	devs, in, err := maxtext.Devices(factors(chips), e.MicroBatchSize, e.Job.Seq, per)
	if err != nil {
		return DeviceLayout{}, err
	}
	out := DeviceLayout{InChip: in, Chips: e.Mesh.Chips(), Devices: e.Mesh.Chips() * max(per, 1)}
	for _, d := range chips {
		d.ICI = devs[d.Axis]
		out.Degrees = append(out.Degrees, d)
	}
	return out, nil
}

// deviceSpec is e's device mesh as the {mesh} option takes it, where it
// differs from e's chip layout (a chip of several JAX devices); "" where
// it does not, or where no MaxText mesh carries a chip's devices.
func deviceSpec(e cost.Estimate) string {
	d, err := DevicesOf(e)
	if err != nil || d.String() == e.Mesh.String() {
		return ""
	}
	return d.String()
}

// reading is a chip layout for a device mesh, and the axis its in-chip
// factor came off.
type reading struct {
	axes []mesh.Degree
	in   mesh.Axis
}

// chipReadings are the chip layouts a device mesh can be, in the order
// maxtext.Chips tries them: the in-chip factor off fsdp, then off
// context. Which one MaxText runs depends on the batch, so Search costs
// each until one maps back to the devices asked.
func chipReadings(devices []mesh.Degree, per int) []reading {
	if per <= 1 {
		return []reading{{devices, maxtext.NoAxis}}
	}
	var out []reading
	for _, a := range []mesh.Axis{mesh.FSDP, mesh.Context} {
		for i, d := range devices {
			if d.Axis != a || d.ICI%per != 0 {
				continue
			}
			axes := append([]mesh.Degree(nil), devices...)
			axes[i].ICI /= per
			out = append(out, reading{axes, a})
		}
	}
	return out
}

// parseDeviceMesh reads the {mesh} option in devices: the chip layouts
// it can be, checked against the multislice when it has chips (a bare
// generation's footprint is Search's to pick, and Search checks it then).
func parseDeviceMesh(r *Request, value string) error {
	devices, err := mesh.ParseAxes(value)
	if err != nil {
		return refuseErr(OptionMesh, value, err)
	}
	if n := fixedSize(devices, mesh.Expert); n > 1 && !r.Model.MoE() {
		return refuse(OptionMesh, value, nil, " %q: expert %d with %s, a dense model: it has no experts to split, want a mesh without expert", value, n, r.Model.Name)
	}
	per := max(r.Multislice.Slice.Chip.JAXDevicesPerChip, 1)
	if per == 1 {
		r.Axes, r.DeviceAxes = devices, nil
		if r.Multislice.Chips() > 0 {
			_, err := askedMesh(r.Multislice, devices, value)
			return err
		}
		return nil
	}
	r.Axes, r.DeviceAxes = devices, devices
	if rs := chipReadings(devices, per); len(rs) > 0 {
		r.Axes = rs[0].axes
	}
	if r.Multislice.Chips() == 0 {
		return nil
	}
	axes, err := checkDevices(r.Multislice, devices, value)
	if err != nil {
		return err
	}
	r.Axes = axes
	return nil
}

// checkDevices checks a mesh asked in devices on ms, a multislice of
// chips of several devices, and returns its first chip reading that fits
// ms. It says, in package mesh's words, what mesh.New would: the axis and
// DCN errors first (a probe of the degrees with every ICI factor 1), then
// the ICI product against the slice's devices; then whether fsdp or
// context can carry a chip's devices.
func checkDevices(ms hw.Multislice, devices []mesh.Degree, value string) ([]mesh.Degree, error) {
	chip := ms.Slice.Chip
	per := chip.JAXDevicesPerChip
	probe := append([]mesh.Degree(nil), devices...)
	for i := range probe {
		probe[i].ICI = min(probe[i].ICI, 1)
	}
	var me *mesh.Error
	if _, err := mesh.New(ms, probe...); errors.As(err, &me) && me.Field != "ICI factors" {
		return nil, refuseErr(OptionMesh, value, err)
	}
	if ici, want := product(devices), ms.Slice.Chips()*per; ici != want {
		return nil, refuseErr(OptionMesh, value, &mesh.Error{Field: "ICI factors", Value: fmt.Sprintf("%d (%s)", ici, spellICI(devices)), Err: mesh.ErrInvalid,
			Want: fmt.Sprintf("a product of %d, the JAX devices in one %s slice (%d chips, %d devices each, as MaxText counts them)",
				want, ms.Slice.AcceleratorType(), ms.Slice.Chips(), per)})
	}
	readings := chipReadings(devices, per)
	if len(readings) == 0 {
		return nil, refuse(OptionMesh, value, nil, " %q counts JAX devices: a %s chip is %d of them, and MaxText puts them on fsdp or context, so want an ICI fsdp or context factor that is a multiple of %d (%s on one %s chip)",
			value, chip.Generation, per, per, mesh.Degree{Axis: mesh.FSDP, ICI: per, DCN: 1}, chip.Generation)
	}
	var first error
	for _, rd := range readings {
		_, err := askedMesh(ms, rd.axes, value)
		if err == nil {
			return rd.axes, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// spellICI is the degrees' ICI factors, "data 2 x fsdp 4".
func spellICI(degrees []mesh.Degree) string {
	parts := make([]string, len(degrees))
	for i, d := range degrees {
		parts[i] = fmt.Sprintf("%s %d", d.Axis, d.ICI)
	}
	return strings.Join(parts, " x ")
}

// product is the degrees' ICI factors multiplied.
func product(degrees []mesh.Degree) int {
	n := 1
	for _, d := range degrees {
		n *= d.ICI
	}
	return n
}

// searchDevices is Search for a mesh asked in devices: it costs each
// chip reading of it (chipReadings), the fsdp reading with a batch whose
// sequences per chip per micro-batch split over the chip's devices, keeps
// those whose MaxText mesh is the one asked, and returns the best of them
// (better): which two devices share a chip is JAX's choice, not the
// mesh's, so the planner takes the reading that runs fastest.
func searchDevices(r Request) (Plan, error) {
	chip := r.Multislice.Slice.Chip
	per := chip.JAXDevicesPerChip
	asked, want := spellMesh(r.DeviceAxes), canonicalMesh(r.DeviceAxes)
	if _, err := checkDevices(r.Multislice, r.DeviceAxes, asked); err != nil {
		return Plan{}, err
	}
	if err := r.askedRing(r.DeviceAxes, asked); err != nil {
		return Plan{}, err
	}
	var first error
	var got []string
	var best *Plan
	for _, rd := range chipReadings(r.DeviceAxes, per) {
		q := r
		q.Axes, q.DeviceAxes = rd.axes, nil
		if rd.in == mesh.FSDP {
			q.microStep = per
		}
		p, err := search(q)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		p.Request.DeviceAxes, p.Request.microStep = r.DeviceAxes, 0
		d, err := p.Devices()
		e := p.Best.Estimate
		switch {
		case err == nil && canonicalMesh(d.Degrees) == want:
			if best == nil || better(p.Best, best.Best) {
				best = &p
			}
		case err == nil:
			got = append(got, fmt.Sprintf("%s chips with %s per batch shard per micro-batch are MaxText's %s", e.Mesh, unit.Plural(e.MicroBatchSize, "sequence"), d))
		}
	}
	if best != nil {
		return *best, nil
	}
	if len(got) == 0 && first != nil {
		return Plan{}, first
	}
	return Plan{}, &OptionError{Option: OptionMesh, Value: asked, Err: ErrRequest,
		Text: fmt.Sprintf("{mesh} %q counts JAX devices (%d a %s chip), but no batch the planner can run gives MaxText that mesh: %s; give that mesh, or a {global_batch} that puts a multiple of %d sequences on each batch shard per micro-batch",
			asked, per, chip.Generation, strings.Join(got, "; "), per)}
}

// deviceCount is the multislice's JAX devices and chips, "N devices (M
// chips)", or "M chips" when a chip is one device.
func deviceCount(ms hw.Multislice) string {
	per := max(ms.Slice.Chip.JAXDevicesPerChip, 1)
	return DeviceLayout{Devices: ms.Chips() * per, Chips: ms.Chips()}.Count()
}
