package mesh

import (
	"fmt"
	"strings"
	"time"

	"shardlab/collective"
	"shardlab/hw"
	"shardlab/unit"
)

// Coord is a device's position in a mesh, one index per axis. On an axis
// with degree ICI×DCN the index is dcn·ICI + ici: dcn says which of the
// axis's slices the device is in, ici where it sits inside it.
type Coord [NumAxes]int

// Device ids run slice by slice, id = slice·(chips per slice) + position
// in the slice; in both numbers the first axis varies fastest.

// Slice returns the slice a device is in.
func (m *Mesh) Slice(dev int) int { return dev / m.Multislice.Slice.Chips() }

// Coord returns a device's coordinate. dev must be in [0, m.Chips()).
func (m *Mesh) Coord(dev int) Coord {
	per := m.Multislice.Slice.Chips()
	s, local := dev/per, dev%per
	var c Coord
	for a, d := range m.degrees {
		c[a] = (s%d.DCN)*d.ICI + local%d.ICI
		s /= d.DCN
		local /= d.ICI
	}
	return c
}

// Device returns the device at a coordinate, and false if the coordinate
// is outside the mesh.
func (m *Mesh) Device(c Coord) (int, bool) {
	s, local, sStride, lStride := 0, 0, 1, 1
	for a, d := range m.degrees {
		if c[a] < 0 || c[a] >= d.Size() {
			return -1, false
		}
		s += c[a] / d.ICI * sStride
		local += c[a] % d.ICI * lStride
		sStride *= d.DCN
		lStride *= d.ICI
	}
	return s*m.Multislice.Slice.Chips() + local, true
}

// Group is the devices that differ from one device only on some axes, in
// ring order: member k = dcn·ICI + ici, where dcn and ici count the group's
// DCN and ICI parts with the first axis varying slowest, so the members in
// one slice are contiguous.
type Group struct {
	Axes    []Axis
	Devices []int
	ICI     int // members in each slice
	DCN     int // slices the group spans
}

// String names the group by its axes, e.g. "data×context".
func (g Group) String() string {
	names := make([]string, len(g.Axes))
	for i, a := range g.Axes {
		names[i] = a.String()
	}
	return strings.Join(names, "×")
}

// Group returns the group of dev along the given axes.
func (m *Mesh) Group(dev int, along ...Axis) Group {
	g := Group{Axes: append([]Axis(nil), along...), ICI: 1, DCN: 1}
	for _, a := range along {
		g.ICI *= m.degrees[a].ICI
		g.DCN *= m.degrees[a].DCN
	}
	base := m.Coord(dev)
	for k := range g.ICI * g.DCN {
		dcn, ici := k/g.ICI, k%g.ICI
		c := base
		for i := len(along) - 1; i >= 0; i-- { // the last axis varies fastest
			d := m.degrees[along[i]]
			c[along[i]] = dcn%d.DCN*d.ICI + ici%d.ICI
			dcn /= d.DCN
			ici /= d.ICI
		}
		id, ok := m.Device(c)
		if !ok {
			panic(fmt.Sprintf("mesh: group coordinate %v outside %s", c, m)) // Coord and Device disagree
		}
		g.Devices = append(g.Devices, id)
	}
	return g
}

// Link describes what one chip's traffic on some devices travels over.
type Link struct {
	Tier hw.Tier
	Size int // chips on the link: along the axes inside a slice, or slices
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
	// dimension, n−1 per open one; HopLatency is the fixed cost of each.
	Hops       int
	HopLatency time.Duration
}

// Collective is the link as package collective times it: the one
// conversion of a placed link.
func (l Link) Collective() collective.Link {
	return collective.Link{Bandwidth: l.Bandwidth, Hops: l.Hops, HopLatency: l.HopLatency, Dims: l.Dims}
}

// Link returns the ICI ring that a collective over the given axes
// together uses inside a slice: each axis's torus dimensions as placed, so
// their bandwidths and hops add up. One axis gives its own placement.
func (m *Mesh) Link(along ...Axis) Link {
	if len(along) == 1 {
		return m.links[along[0]]
	}
	l := Link{Tier: hw.ICI, Size: 1, HopLatency: hw.ICIHopLatency}
	for _, a := range along {
		al := m.links[a]
		if l.Dims == 0 {
			l.Wrap = al.Wrap
		} else if al.Dims > 0 {
			l.Wrap = l.Wrap && al.Wrap
		}
		l.Size *= al.Size
		l.Dims += al.Dims
		l.Bandwidth += al.Bandwidth
		l.Hops += al.Hops
	}
	return l
}

// TierLink returns the link a point-to-point send uses on a tier: one ICI
// link (one way) between neighbouring chips, or the chip's share of its
// host's DCN bandwidth.
func (m *Mesh) TierLink(t hw.Tier) Link {
	if t == hw.DCN {
		return Link{Tier: hw.DCN, Size: m.Multislice.Slices, Bandwidth: m.Multislice.DCNPerChip}
	}
	return Link{Tier: hw.ICI, Size: 2, Dims: 1, Bandwidth: m.Multislice.Slice.Chip.ICILinkBandwidth, Hops: 1, HopLatency: hw.ICIHopLatency}
}

// Between returns the tier that connects two devices: ICI inside a slice,
// DCN across slices.
func (m *Mesh) Between(a, b int) hw.Tier {
	if m.Slice(a) != m.Slice(b) {
		return hw.DCN
	}
	return hw.ICI
}

// PeerLink returns the link a send from device a to device b uses.
func (m *Mesh) PeerLink(a, b int) Link { return m.TierLink(m.Between(a, b)) }
