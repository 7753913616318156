// Package mesh lays a training job's parallelism out on TPU hardware. It
// owns the axis table (Axis: data, fsdp, tensor, pipeline, context, expert), a
// mesh of those axes each split into an ICI factor inside a slice and a DCN
// factor across slices, the placement of devices on it (device ↔
// coordinate, the group of devices along some axes), and the links they
// talk over: the ICI ring an axis gets on the slice's torus, which sets the
// bandwidth its collectives get, and the link between two devices (ICI, or
// DCN across slices).
package mesh

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"shardlab/hw"
)

// Degree is one axis's parallelism: ICI chips inside each slice times DCN
// slices.
type Degree struct {
	Axis Axis `json:"name"`
	ICI  int  `json:"ici"`
	DCN  int  `json:"dcn"`
}

// Size is the axis's total degree.
func (d Degree) Size() int { return d.ICI * d.DCN }

// ErrTensorOverDCN rejects tensor parallelism across slices.
var ErrTensorOverDCN = errors.New("tensor parallelism over DCN is not supported: " +
	"it all-reduces activations inside every layer, on the critical path, over a fraction of ICI's bandwidth; " +
	"keep tensor inside a slice and use data, fsdp or pipeline across slices")

// ErrContextOverDCN rejects context parallelism across slices.
var ErrContextOverDCN = errors.New("context parallelism over DCN is not supported: " +
	"ring attention passes every layer's keys and values around the ring, the same fine-grained traffic as tensor " +
	"parallelism; keep context inside a slice and use data, fsdp or pipeline across slices")

// dcnShare is err with what DCN gives a chip of ms against its ICI, from
// the catalog (one way: DCNPerChip against ICILinks x ICILinkBandwidth),
// where both are known: v5p's 6.25 GB/s against 540 GB/s is 1/86.
func dcnShare(err error, ms hw.Multislice) error {
	c := ms.Slice.Chip
	dcn, ici := float64(ms.DCNPerChip), float64(c.ICILinkBandwidth)*float64(c.ICILinks)
	if dcn <= 0 || ici <= 0 {
		return err
	}
	return fmt.Errorf("%w (on %s DCN gives each chip %.3g GB/s against ICI's %.3g GB/s, 1/%.0f)", err, c.Generation, dcn/1e9, ici/1e9, ici/dcn)
}

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

// Mesh is a validated layout on a multislice.
type Mesh struct {
	Multislice hw.Multislice
	degrees    [NumAxes]Degree
	links      [NumAxes]Link
	custom     Custom
}

// New validates the degrees for ms. Axes not named have degree 1; an axis
// may be named once. The ICI factors must multiply to the chips of one
// slice, the DCN factors to the number of slices, and an axis that may not
// cross slices (tensor) must have DCN factor 1.
func New(ms hw.Multislice, degrees ...Degree) (Mesh, error) {
	var m Mesh
	m.Multislice = ms
	var seen [NumAxes]bool
	for _, a := range All() {
		m.degrees[a] = Degree{Axis: a, ICI: 1, DCN: 1}
	}
	for _, d := range degrees {
		a := d.Axis
		if !a.Valid() {
			return Mesh{}, &Error{Field: "axis", Value: a.String(), Want: "one of " + axisList(), Err: ErrInvalid}
		}
		if seen[a] {
			return Mesh{}, &Error{Field: "axis", Value: a.String(), Want: "each axis named once", Err: ErrInvalid}
		}
		seen[a] = true
		if d.ICI < 1 || d.DCN < 1 {
			return Mesh{}, &Error{Field: a.String(), Value: fmt.Sprintf("ici %d dcn %d", d.ICI, d.DCN), Want: "factors of at least 1", Err: ErrInvalid}
		}
		m.degrees[a] = d
	}
	for _, a := range All() {
		if d := m.degrees[a]; d.DCN > 1 && !a.CrossesDCN() {
			return Mesh{}, &Error{Field: a.String(), Value: fmt.Sprintf("%d over DCN", d.DCN), Err: dcnShare(axes[a].overDCN, ms)}
		}
	}
	if ms.Slices == 1 {
		// Said before the products: the ICI factors of a multislice
		// layout may well be right for one slice.
		for _, d := range m.degrees {
			if d.DCN > 1 {
				return Mesh{}, &Error{Field: d.Axis.String() + " DCN factor", Value: strconv.Itoa(d.DCN),
					Want: "1: a DCN factor splits an axis across slices, and there is 1 slice", Err: ErrInvalid}
			}
		}
	}
	ici, dcn := m.product(false, ms.Slice.Chips()), m.product(true, ms.Slices)
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

// product multiplies the ICI (or DCN) factors, stopping once past limit
// so that it cannot overflow.
func (m *Mesh) product(dcn bool, limit int) int {
	p := 1
	for _, d := range m.degrees {
		if dcn {
			p *= d.DCN
		} else {
			p *= d.ICI
		}
		if p > limit {
			break
		}
	}
	return p
}

// placeOrder is the axes in the order they claim torus dimensions.
func placeOrder() []Axis {
	order := All()
	sort.SliceStable(order, func(i, j int) bool { return axes[order[i]].place < axes[order[j]].place })
	return order
}

// placing is placeOrder, worked out once: a search places a mesh per
// layout it costs.
var placing = placeOrder()

// maxDims is the most torus dimensions a slice has (hw.Topology).
const maxDims = len(hw.Topology{})

// place assigns each ICI axis a share of the torus dimensions. Axes that
// communicate on the critical path go first (tensor, context, then fsdp,
// data, pipeline: the table's place column). As JAX's create_device_mesh
// does without splitting physical axes (jax/_src/mesh_utils.py
// _create_device_mesh_for_nd_torus @01a64421, which MaxText calls with
// allow_split_physical_axes false), an axis takes whole untouched
// dimensions whose sizes multiply to its degree, three if it can, else
// two, else one (wholeDims). When none do, it takes from the dimensions
// in order the largest share that divides what is left: the greedy gcd
// always completes because the factors multiply to the slice.
func (m *Mesh) place() {
	topo := m.Multislice.Slice.Topology
	dims := topo[:topo.Rank()] // not Dims, which copies
	var leftAll [maxDims]int
	left := leftAll[:len(dims)]
	copy(left, dims)
	c := m.Multislice.Slice.Chip
	for _, a := range placing {
		n := m.degrees[a].ICI
		l := Link{Tier: hw.ICI, Size: n, HopLatency: hw.ICIHopLatency}
		whole, some := wholeDims(dims, left, n)
		for d := range dims {
			if n == 1 {
				break
			}
			if some && !whole[d] {
				continue
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
			panic(fmt.Sprintf("mesh: cannot place %s=%d on %v", a, m.degrees[a].ICI, dims))
		}
		m.links[a] = l
	}
}

// wholeDims picks untouched dimensions (left equal to dims, larger than
// 1) whose sizes multiply to n: the first such set of three in
// combination order, else of two, else one; false when there is none.
func wholeDims(dims, left []int, n int) (set [maxDims]bool, ok bool) {
	if n <= 1 {
		return set, false
	}
	var freeAll [maxDims]int
	free := freeAll[:0]
	for d := range dims {
		if left[d] == dims[d] && dims[d] > 1 {
			free = append(free, d)
		}
	}
	for k := min(3, len(free)); k >= 1; k-- {
		if pick, ok := subsetWithProduct(free, dims, k, n); ok {
			for _, d := range pick[:k] {
				set[d] = true
			}
			return set, true
		}
	}
	return set, false
}

// subsetWithProduct is the first k of free (at most three of at most
// three), in combination order, whose dims multiply to n, or false.
func subsetWithProduct(free, dims []int, k, n int) (pick [maxDims]int, ok bool) {
	return pick, pickProduct(&pick, free, dims, k, n, 0, 0, 1)
}

// pickProduct is subsetWithProduct from pick's i-th entry on, the
// entries before it chosen with product prod, the next from free[start:].
func pickProduct(pick *[maxDims]int, free, dims []int, k, n, i, start, prod int) bool {
	if i == k {
		return prod == n
	}
	for j := start; j < len(free); j++ {
		pick[i] = free[j]
		if pickProduct(pick, free, dims, k, n, i+1, j+1, prod*dims[free[j]]) {
			return true
		}
	}
	return false
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Degree returns an axis's degree.
func (m *Mesh) Degree(a Axis) Degree { return m.degrees[a] }

// Size returns an axis's total degree.
func (m *Mesh) Size(a Axis) int { return m.degrees[a].Size() }

// Degrees returns every axis's degree in canonical order.
func (m Mesh) Degrees() []Degree { return append([]Degree(nil), m.degrees[:]...) }

// Chips is the total number of chips (hw.Multislice.Chips), read from
// the topology in place: a search asks it per layout and batch, and
// Multislice and Slice are large to copy for their value receivers.
func (m *Mesh) Chips() int { return m.Multislice.Slice.Topology.Chips() * m.Multislice.Slices }

// String spells the layout in the syntax Parse reads, e.g.
// "data=2(dcn),fsdp=64"; degree-1 axes are left out.
func (m Mesh) String() string {
	if s := Spell(m.degrees[:]); s != "" {
		return s
	}
	return "single chip"
}

// Spell writes degrees in the syntax Parse reads, e.g.
// "data=2(dcn),fsdp=64", leaving degree-1 axes out: "" when every degree
// is 1.
func Spell(degrees []Degree) string {
	var parts []string
	for _, d := range degrees {
		if d.DCN > 1 || d.ICI > 1 {
			parts = append(parts, d.String())
		}
	}
	return strings.Join(parts, ",")
}

// String spells the degree in the syntax Parse reads: "expert=4",
// "data=2(dcn)", "data=2(dcn),data=4" for a DCN and an ICI factor, and
// "expert=1" when both are 1. Messages that show a factor ask it, so that
// mesh alone spells an axis.
func (d Degree) String() string {
	var parts []string
	if d.DCN > 1 {
		parts = append(parts, fmt.Sprintf("%s=%d(dcn)", d.Axis, d.DCN))
	}
	if d.ICI > 1 || d.DCN <= 1 {
		parts = append(parts, fmt.Sprintf("%s=%d", d.Axis, d.ICI))
	}
	return strings.Join(parts, ",")
}

func (m Mesh) spell(dcn bool) string {
	var parts []string
	for _, d := range m.degrees {
		f := d.ICI
		if dcn {
			f = d.DCN
		}
		parts = append(parts, fmt.Sprintf("%s %d", d.Axis, f))
	}
	return strings.Join(parts, " x ")
}

// ParseAxes reads a layout such as "data=2(dcn),fsdp=4,tensor=2": each item
// is NAME=N for an ICI factor or NAME=N(dcn) for a DCN factor ("(ici)" may be
// written too). An axis may appear once for ICI and once for DCN.
func ParseAxes(s string) ([]Degree, error) {
	type key struct {
		axis Axis
		dcn  bool
	}
	seen := map[key]bool{}
	byAxis := map[Axis]*Degree{}
	var order []Axis
	items := strings.Split(s, ",")
	for _, item := range items {
		item = strings.TrimSpace(item)
		name, val, ok := strings.Cut(item, "=")
		if !ok || name == "" {
			return nil, &Error{Field: "mesh item", Value: strconv.Quote(item), Want: "NAME=N or NAME=N(dcn), e.g. data=2(dcn),fsdp=4", Err: ErrInvalid}
		}
		n, err := ParseAxis(name)
		if err != nil {
			return nil, err
		}
		val, dcn := strings.CutSuffix(strings.ToLower(strings.TrimSpace(val)), "(dcn)")
		if !dcn {
			val = strings.TrimSuffix(val, "(ici)")
		}
		if strings.ContainsAny(val, "()") {
			return nil, &Error{Field: n.String(), Value: strconv.Quote(strings.TrimSpace(item)), Want: "N for an ICI factor or N(dcn) for a DCN factor (N(ici) is the same as N)", Err: ErrInvalid}
		}
		f, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil || f < 1 || f > 1<<20 {
			return nil, &Error{Field: n.String(), Value: strconv.Quote(val), Want: "a whole number from 1 to 1048576", Err: ErrInvalid}
		}
		if seen[key{n, dcn}] {
			return nil, &Error{Field: n.String(), Value: "given twice", Want: "one ICI and at most one DCN factor per axis", Err: ErrInvalid}
		}
		seen[key{n, dcn}] = true
		a, ok := byAxis[n]
		if !ok {
			a = &Degree{Axis: n, ICI: 1, DCN: 1}
			byAxis[n] = a
			order = append(order, n)
		}
		if dcn {
			a.DCN = f
		} else {
			a.ICI = f
		}
	}
	out := make([]Degree, 0, len(order))
	for _, n := range order {
		out = append(out, *byAxis[n])
	}
	return out, nil
}

// Parse reads a layout such as "data=2(dcn),fsdp=4" (ParseAxes) and
// validates it on ms (New).
func Parse(ms hw.Multislice, spec string) (Mesh, error) {
	degrees, err := ParseAxes(spec)
	if err != nil {
		return Mesh{}, err
	}
	return New(ms, degrees...)
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
