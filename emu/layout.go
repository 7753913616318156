package emu

import (
	"fmt"

	"shardlab/collective"
	"shardlab/mesh"
)

// axis indices in mesh.Names order
const (
	axData = iota
	axFSDP
	axTensor
	axPipeline
	axContext
)

// grid places a mesh's devices: device ids run slice by slice; a device's
// coordinate on an axis is dcn·ICI + ici.
type grid struct {
	m      mesh.Mesh
	axes   []mesh.Axis
	n      int
	coords [][5]int
	slice  []int
}

func newGrid(m mesh.Mesh) *grid {
	g := &grid{m: m, axes: m.Axes(), n: m.Chips()}
	per := m.Multislice.Slice.Chips()
	g.coords = make([][5]int, g.n)
	g.slice = make([]int, g.n)
	for id := range g.n {
		s, local := id/per, id%per
		g.slice[id] = s
		var c [5]int
		for i, a := range g.axes {
			c[i] = (s%a.DCN)*a.ICI + local%a.ICI
			s /= a.DCN
			local /= a.ICI
		}
		g.coords[id] = c
	}
	return g
}

// id finds the device at a coordinate.
func (g *grid) id(c [5]int) int {
	for id, cc := range g.coords {
		if cc == c {
			return id
		}
	}
	panic(fmt.Sprintf("emu: no device at %v", c))
}

// group is the devices that differ from dev only on the given axes, in
// the Group order: slices' members contiguous.
func (g *grid) group(dev int, axes ...int) Group {
	base := g.coords[dev]
	gr := Group{NICI: 1, NDCN: 1}
	for i, ax := range axes {
		gr.NICI *= g.axes[ax].ICI
		gr.NDCN *= g.axes[ax].DCN
		if i > 0 {
			gr.Axis += "×"
		}
		gr.Axis += string(g.axes[ax].Name)
	}
	// enumerate DCN parts (outer) then ICI parts, axes in order
	var dcnParts, iciParts [][]int
	var walk func(i int, cur []int, dcn bool, out *[][]int)
	walk = func(i int, cur []int, dcn bool, out *[][]int) {
		if i == len(axes) {
			*out = append(*out, append([]int(nil), cur...))
			return
		}
		n := g.axes[axes[i]].ICI
		if dcn {
			n = g.axes[axes[i]].DCN
		}
		for v := range n {
			walk(i+1, append(cur, v), dcn, out)
		}
	}
	walk(0, nil, true, &dcnParts)
	walk(0, nil, false, &iciParts)
	for _, dp := range dcnParts {
		for _, ip := range iciParts {
			c := base
			for k, ax := range axes {
				c[ax] = dp[k]*g.axes[ax].ICI + ip[k]
			}
			gr.Ranks = append(gr.Ranks, g.id(c))
		}
	}
	var names []mesh.AxisName
	for _, ax := range axes {
		names = append(names, g.axes[ax].Name)
	}
	gr.ICILink = collective.Link{HopLatency: collective.ICIHopLatency}
	for _, nm := range names {
		l := g.m.Link(nm)
		gr.ICILink.Bandwidth += l.Bandwidth
		gr.ICILink.Hops += l.Hops
	}
	gr.DCNLink = collective.Link{Bandwidth: g.m.Multislice.DCNPerChip}
	return gr
}
