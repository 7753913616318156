// Package mesh lays a training job's parallelism out on TPU hardware: a mesh
// of named axes (data, fsdp, tensor, pipeline, context), each split into an
// ICI factor inside a slice and a DCN factor across slices, and the placement
// of each ICI axis on the slice's torus, which sets the bandwidth its
// collectives get.
package mesh

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"shardlab/hw"
	"shardlab/unit"
)

// AxisName names a parallelism axis.
type AxisName string

// The axes, in the order shardlab prints them.
const (
	Data     AxisName = "data"
	FSDP     AxisName = "fsdp"
	Tensor   AxisName = "tensor"
	Pipeline AxisName = "pipeline"
	Context  AxisName = "context"
)

// Names returns the axis names in canonical order.
func Names() []AxisName { return []AxisName{Data, FSDP, Tensor, Pipeline, Context} }

func index(n AxisName) int {
	for i, a := range Names() {
		if a == n {
			return i
		}
	}
	return -1
}

// Axis is one parallelism axis: ICI chips inside each slice times DCN slices.
type Axis struct {
	Name AxisName `json:"name"`
	ICI  int      `json:"ici"`
	DCN  int      `json:"dcn"`
}

// Size is the axis's total degree.
func (a Axis) Size() int { return a.ICI * a.DCN }

// ErrTensorOverDCN rejects tensor parallelism across slices.
var ErrTensorOverDCN = errors.New("tensor parallelism over DCN is not supported: " +
	"it all-reduces activations inside every layer, on the critical path, and DCN has about " +
	"1/20 of ICI's bandwidth per chip; keep tensor inside a slice and use data or pipeline across slices")

// ErrContextOverDCN rejects context parallelism across slices.
var ErrContextOverDCN = errors.New("context parallelism over DCN is not supported: " +
	"ring attention passes every layer's keys and values around the ring, the same fine-grained traffic as tensor " +
	"parallelism; keep context inside a slice and use data, fsdp or pipeline across slices")

// ErrInvalid is wrapped by every other layout error.
var ErrInvalid = errors.New("invalid mesh")

// Error reports a bad layout: which field, its value and what is accepted.
type Error struct {
	Field string
	Value string
	Want  string
	Err   error
}

func (e *Error) Error() string {
	if e.Want == "" {
		return fmt.Sprintf("mesh: %s = %s: %v", e.Field, e.Value, e.Err)
	}
	return fmt.Sprintf("mesh: %s = %s, want %s", e.Field, e.Value, e.Want)
}

func (e *Error) Unwrap() error { return e.Err }

// Link describes how one axis's collectives travel inside a slice.
type Link struct {
	Size int // chips along the axis inside a slice
	// Dims is the number of torus dimensions the axis spans; Wrap is true
	// when every one of them is a full ring with wraparound links.
	Dims int
	Wrap bool
	// Bandwidth is what one chip can send along the axis in a ring
	// collective: one-way link bandwidth times 2 for each spanned dimension
	// that wraps (a bidirectional ring), times 1 for one that does not (the
	// scaling book's sharding chapter: a line costs about twice a ring, and
	// k axes at once divide the time by k).
	Bandwidth unit.BytesPerSecond
	// Hops is the longest path a ring collective walks: n/2 per wrapped
	// dimension, n−1 per open one.
	Hops int
}

// Mesh is a validated layout on a multislice.
type Mesh struct {
	Multislice hw.Multislice
	axes       [5]Axis
	links      [5]Link
}

// New validates axes for ms. Axes not named have degree 1; an axis may be
// named once. The ICI factors must multiply to the chips of one slice, the
// DCN factors to the number of slices, and tensor must have DCN factor 1.
func New(ms hw.Multislice, axes ...Axis) (Mesh, error) {
	var m Mesh
	m.Multislice = ms
	seen := [5]bool{}
	for i, n := range Names() {
		m.axes[i] = Axis{Name: n, ICI: 1, DCN: 1}
	}
	for _, a := range axes {
		i := index(a.Name)
		if i < 0 {
			return Mesh{}, &Error{Field: "axis", Value: strconv.Quote(string(a.Name)), Want: "one of data, fsdp, tensor, pipeline, context", Err: ErrInvalid}
		}
		if seen[i] {
			return Mesh{}, &Error{Field: "axis", Value: string(a.Name), Want: "each axis named once", Err: ErrInvalid}
		}
		seen[i] = true
		if a.ICI < 1 || a.DCN < 1 {
			return Mesh{}, &Error{Field: string(a.Name), Value: fmt.Sprintf("ici %d dcn %d", a.ICI, a.DCN), Want: "factors of at least 1", Err: ErrInvalid}
		}
		m.axes[i] = a
	}
	if t := m.axes[index(Tensor)]; t.DCN > 1 {
		return Mesh{}, &Error{Field: "tensor", Value: fmt.Sprintf("%d over DCN", t.DCN), Err: ErrTensorOverDCN}
	}
	if c := m.axes[index(Context)]; c.DCN > 1 {
		return Mesh{}, &Error{Field: "context", Value: fmt.Sprintf("%d over DCN", c.DCN), Err: ErrContextOverDCN}
	}
	ici, dcn := 1, 1
	for _, a := range m.axes {
		ici *= a.ICI
		dcn *= a.DCN
		if ici > ms.Slice.Chips() || dcn > ms.Slices {
			break
		}
	}
	if ici != ms.Slice.Chips() {
		return Mesh{}, &Error{Field: "ICI factors", Value: fmt.Sprintf("%d (%s)", ici, m.spell(false)),
			Want: fmt.Sprintf("a product of %d, the chips in one %s slice", ms.Slice.Chips(), ms.Slice.AcceleratorType()), Err: ErrInvalid}
	}
	if dcn != ms.Slices {
		return Mesh{}, &Error{Field: "DCN factors", Value: fmt.Sprintf("%d (%s)", dcn, m.spell(true)),
			Want: fmt.Sprintf("a product of %d, the number of slices", ms.Slices), Err: ErrInvalid}
	}
	m.place()
	return m, nil
}

// place assigns each ICI axis a share of the torus dimensions. Axes that
// communicate on the critical path go first (tensor, context, then fsdp,
// data, pipeline), each taking from the dimensions in order the largest
// share that divides what is left: the greedy gcd always completes because
// the factors multiply to the slice.
func (m *Mesh) place() {
	dims := m.Multislice.Slice.Topology.Dims()
	left := append([]int(nil), dims...)
	c := m.Multislice.Slice.Chip
	for _, name := range []AxisName{Tensor, Context, FSDP, Data, Pipeline} {
		i := index(name)
		n := m.axes[i].ICI
		l := Link{Size: n}
		for d := range dims {
			if n == 1 {
				break
			}
			g := gcd(n, left[d])
			if g == 1 {
				continue
			}
			n /= g
			wrap := g == dims[d] && m.Multislice.Slice.Wraps(d)
			if l.Dims == 0 {
				l.Wrap = wrap
			} else {
				l.Wrap = l.Wrap && wrap
			}
			l.Dims++
			if wrap {
				l.Bandwidth += 2 * c.ICILinkBandwidth
				l.Hops += g / 2
			} else {
				l.Bandwidth += c.ICILinkBandwidth
				l.Hops += g - 1
			}
			left[d] /= g
		}
		if n != 1 {
			panic(fmt.Sprintf("mesh: cannot place %s=%d on %v", name, m.axes[i].ICI, dims))
		}
		m.links[i] = l
	}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Axis returns the named axis.
func (m Mesh) Axis(n AxisName) Axis {
	i := index(n)
	if i < 0 {
		return Axis{Name: n, ICI: 1, DCN: 1}
	}
	return m.axes[i]
}

// Size returns the named axis's total degree.
func (m Mesh) Size(n AxisName) int { return m.Axis(n).Size() }

// Axes returns all five axes in canonical order.
func (m Mesh) Axes() []Axis { return append([]Axis(nil), m.axes[:]...) }

// Link returns how the named axis's ICI part is placed on the torus.
func (m Mesh) Link(n AxisName) Link {
	i := index(n)
	if i < 0 {
		return Link{Size: 1}
	}
	return m.links[i]
}

// Chips is the total number of chips.
func (m Mesh) Chips() int { return m.Multislice.Chips() }

// String spells the layout in the syntax Parse reads, e.g.
// "data=2(dcn),fsdp=64"; degree-1 axes are left out.
func (m Mesh) String() string {
	var parts []string
	for _, a := range m.axes {
		if a.DCN > 1 {
			parts = append(parts, fmt.Sprintf("%s=%d(dcn)", a.Name, a.DCN))
		}
		if a.ICI > 1 {
			parts = append(parts, fmt.Sprintf("%s=%d", a.Name, a.ICI))
		}
	}
	if len(parts) == 0 {
		return "single chip"
	}
	return strings.Join(parts, ",")
}

func (m Mesh) spell(dcn bool) string {
	var parts []string
	for _, a := range m.axes {
		f := a.ICI
		if dcn {
			f = a.DCN
		}
		parts = append(parts, fmt.Sprintf("%s %d", a.Name, f))
	}
	return strings.Join(parts, " x ")
}

// ParseAxes reads a layout such as "data=2(dcn),fsdp=4,tensor=2": each item
// is NAME=N for an ICI factor or NAME=N(dcn) for a DCN factor ("(ici)" may be
// written too). An axis may appear once for ICI and once for DCN.
func ParseAxes(s string) ([]Axis, error) {
	type key struct {
		name AxisName
		dcn  bool
	}
	seen := map[key]bool{}
	byName := map[AxisName]*Axis{}
	var order []AxisName
	items := strings.Split(s, ",")
	for _, item := range items {
		item = strings.TrimSpace(item)
		name, val, ok := strings.Cut(item, "=")
		if !ok || name == "" {
			return nil, &Error{Field: "mesh item", Value: strconv.Quote(item), Want: "NAME=N or NAME=N(dcn), e.g. data=2(dcn),fsdp=4", Err: ErrInvalid}
		}
		n := AxisName(strings.ToLower(strings.TrimSpace(name)))
		if index(n) < 0 {
			return nil, &Error{Field: "axis", Value: strconv.Quote(name), Want: "one of data, fsdp, tensor, pipeline, context", Err: ErrInvalid}
		}
		val = strings.ToLower(strings.TrimSpace(val))
		dcn := false
		switch {
		case strings.HasSuffix(val, "(dcn)"):
			dcn, val = true, strings.TrimSuffix(val, "(dcn)")
		case strings.HasSuffix(val, "(ici)"):
			val = strings.TrimSuffix(val, "(ici)")
		}
		if strings.ContainsAny(val, "()") {
			return nil, &Error{Field: string(n), Value: strconv.Quote(strings.TrimSpace(item)), Want: "N for an ICI factor or N(dcn) for a DCN factor (N(ici) is the same as N)", Err: ErrInvalid}
		}
		f, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil || f < 1 || f > 1<<20 {
			return nil, &Error{Field: string(n), Value: strconv.Quote(val), Want: "a whole number from 1 to 1048576", Err: ErrInvalid}
		}
		if seen[key{n, dcn}] {
			return nil, &Error{Field: string(n), Value: "given twice", Want: "one ICI and at most one DCN factor per axis", Err: ErrInvalid}
		}
		seen[key{n, dcn}] = true
		a, ok := byName[n]
		if !ok {
			a = &Axis{Name: n, ICI: 1, DCN: 1}
			byName[n] = a
			order = append(order, n)
		}
		if dcn {
			a.DCN = f
		} else {
			a.ICI = f
		}
	}
	out := make([]Axis, 0, len(order))
	for _, n := range order {
		out = append(out, *byName[n])
	}
	return out, nil
}

// Parse reads a layout such as "data=2(dcn),fsdp=4" (ParseAxes) and
// validates it on ms (New).
func Parse(ms hw.Multislice, spec string) (Mesh, error) {
	axes, err := ParseAxes(spec)
	if err != nil {
		return Mesh{}, err
	}
	return New(ms, axes...)
}

// ParseOn lays spec out on slices copies of an accelerator type:
// ParseOn("v5p-128", 2, "data=2(dcn),fsdp=64").
func ParseOn(accel string, slices int, spec string) (Mesh, error) {
	s, err := hw.ParseAcceleratorType(accel)
	if err != nil {
		return Mesh{}, err
	}
	ms, err := hw.NewMultislice(s, slices, 0)
	if err != nil {
		return Mesh{}, err
	}
	return Parse(ms, spec)
}
