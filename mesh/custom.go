package mesh

import (
	"fmt"
	"strconv"
	"strings"

	"shardlab/hw"
	"shardlab/internal/enum"
)

// Custom is a device order that MaxText builds by hand in place of the
// placement of JAX's create_device_mesh (place): its custom_mesh setting.
//
// Source, cited below as [max_utils.py]: AI-Hypercomputer/maxtext
// MaxText/max_utils.py @449b4fe52a781e8f9adfa43550bed36d2e9dbd99
// (reshape_mesh_to_rings, create_custom_device_mesh, is_valid_custom_mesh,
// create_device_mesh), with JAX's jax/_src/mesh_utils.py
// @dd4f396d90c8a3468970f117b5f12e8f5bfdb612 (create_device_mesh,
// _create_device_mesh_for_nd_torus), the JAX of February 2025.
type Custom int

const (
	// Standard is no custom mesh: create_device_mesh's placement.
	Standard Custom = iota
	// HybridRing64x4 is MaxText's hybrid_ring_64x4. On a 16x16 slice,
	// create_device_mesh([16, 16]) gives the chips as a grid a[y][x] (the
	// last logical axis takes physical x, the first y), and
	// reshape_mesh_to_rings makes element 8i+j of the axis of 64 and
	// element k of the axis of 4 the k-th chip of the square
	// a[2i][2j], a[2i][2j+1], a[2i+1][2j+1], a[2i+1][2j]: the axis of 4
	// runs round a 2x2 square whose four steps, the closing one included,
	// are each one ICI link, and the axis of 64 takes every other chip in
	// both dimensions, 8x8 at stride 2.
	HybridRing64x4
)

// customNames is the one name table of the custom meshes: MaxText's
// custom_mesh values (base.yml @449b4fe: "Available options:
// ['hybrid_ring_64x4', 'hybrid_ring_32x8']"), "" for none.
var customNames = enum.New[Custom]("Custom", []string{Standard: "", HybridRing64x4: "hybrid_ring_64x4"})

// String is the custom mesh's name as MaxText spells it, "" for Standard.
func (c Custom) String() string { return customNames.String(c) }

// ParseCustom reads a custom mesh by MaxText's name, exactly as MaxText
// compares it ([max_utils.py] is_valid_custom_mesh); "" is Standard.
func ParseCustom(s string) (Custom, error) {
	if c, ok := customNames.Lookup(s); ok {
		return c, nil
	}
	return -1, &Error{Field: "custom_mesh", Value: strconv.Quote(s),
		Want: `"" (none) or ` + customList() + ` (MaxText's hybrid_ring_32x8 is not modelled)`, Err: ErrInvalid}
}

// Ring side and chips of HybridRing64x4 ([max_utils.py]
// reshape_mesh_to_rings: a_i = i*2, a_j = j*2, a ring of size 4 from
// the square a[a_i:a_i+2, a_j:a_j+2]), and the slice it reshapes
// (create_custom_device_mesh and create_device_mesh call
// create_device_mesh([16, 16], …) on each slice).
const (
	ringSide   = 2
	ringChips  = ringSide * ringSide
	ringOver   = 64
	ringGridXY = 16
)

// NewCustom is New with the custom mesh c. Standard is New. For
// HybridRing64x4 the slice must be 16x16 chips and the ICI factors one
// axis of 64 and one of 4 ([max_utils.py] is_valid_custom_mesh:
// sorted(set(ici)) == [1, 4, 64]); the axis of 4 takes the rings and
// the axis of 64 the squares, which is MaxText's order when its
// mesh_axes lists the axis of 64 first (the caller that reads MaxText
// checks that: package maxtext owns mesh_axes). DCN factors are as New
// takes them: create_custom_device_mesh reshapes each slice alike.
func NewCustom(ms hw.Multislice, c Custom, degrees ...Degree) (Mesh, error) {
	m, err := New(ms, degrees...)
	if err != nil || c == Standard {
		return m, err
	}
	if c != HybridRing64x4 {
		return Mesh{}, &Error{Field: "custom_mesh", Value: c.String(), Want: `"" (none) or ` + customList(), Err: ErrInvalid}
	}
	topo := ms.Slice.Topology
	if topo.Rank() != 2 || topo[0] != ringGridXY || topo[1] != ringGridXY {
		return Mesh{}, &Error{Field: "custom_mesh", Value: fmt.Sprintf("%s on a %s slice", c, topo),
			Want: "a 16x16 slice: MaxText lays it out with create_device_mesh([16, 16]) without splitting physical axes", Err: ErrInvalid}
	}
	ring, over, ok := m.ringAxes()
	if !ok {
		return Mesh{}, &Error{Field: "custom_mesh", Value: fmt.Sprintf("%s with ICI factors %s", c, m.spell(false)),
			Want: "one axis of 64 and one of 4 inside the slice, the rest 1 (MaxText's is_valid_custom_mesh)", Err: ErrInvalid}
	}
	m.custom = c
	m.placeHybridRing(ring, over)
	return m, nil
}

// ringAxes finds HybridRing64x4's axes: the ICI axis of 4 and the one of
// 64, every other axis 1.
func (m *Mesh) ringAxes() (ring, over Axis, ok bool) {
	ring, over = -1, -1
	for _, d := range m.degrees {
		switch {
		case d.ICI == ringChips && ring < 0:
			ring = d.Axis
		case d.ICI == ringOver && over < 0:
			over = d.Axis
		case d.ICI != 1:
			return -1, -1, false
		}
	}
	return ring, over, ring >= 0 && over >= 0
}

// Custom is the mesh's custom device order (Standard for New's meshes).
func (m *Mesh) Custom() Custom { return m.custom }

// placeHybridRing sets the links of HybridRing64x4's two axes.
//
// The ring axis: its ringChips chips go round a square, every step (the
// closing one too) one ICI link that no other ring uses, so it is a
// closed bidirectional ring of ringChips: 2 links' one-way bandwidth per
// chip, ringChips/2 hops, one ring (Dims 1), as a wrapped torus dimension
// of that size is placed.
//
// The axis over the squares: in each torus dimension d its members sit
// every ringSide chips, dims[d]/ringSide of them, a ring that closes
// through the wraparound link where the dimension wraps. Each ring step
// is ringSide links long, and the ringSide groups that live in one row
// (one per ring position in that row) all step along it at once, so
// every link carries ringSide groups' traffic each way: one way per
// dimension a chip gets link bandwidth / ringSide, twice that where the
// dimension wraps (both ways round), and a ring walk is ringSide hops per
// member step.
func (m *Mesh) placeHybridRing(ring, over Axis) {
	b := m.Multislice.Slice.Chip.ICILinkBandwidth
	m.links[ring] = Link{Tier: hw.ICI, Size: ringChips, Dims: 1, Wrap: true,
		Bandwidth: 2 * b, Hops: ringChips / 2, HopLatency: hw.ICIHopLatency}
	l := Link{Tier: hw.ICI, Size: ringOver, Wrap: true, HopLatency: hw.ICIHopLatency}
	topo := m.Multislice.Slice.Topology
	for d, n := range topo[:topo.Rank()] {
		members := n / ringSide
		l.Dims++
		if m.Multislice.Slice.Wraps(d) {
			l.Bandwidth += 2 * b / ringSide
			l.Hops += members / 2 * ringSide
		} else {
			l.Wrap = false
			l.Bandwidth += b / ringSide
			l.Hops += (members - 1) * ringSide
		}
	}
	m.links[over] = l
}

// customList names the custom meshes for messages.
func customList() string { return strings.Join(customNames.List()[1:], ", ") }
