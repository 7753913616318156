package fabric

import (
	"shardlab/collective"
	"shardlab/hw"
	"shardlab/mesh"
)

// Package mesh places the devices and picks their links; this file only
// turns its answers into the fabric's and the collectives' types.

// SliceOf returns each device's slice, the fabric's view of the mesh.
func SliceOf(m mesh.Mesh) []int {
	out := make([]int, m.Chips())
	for id := range out {
		out[id] = m.Slice(id)
	}
	return out
}

// Group is dev's collective group along the given axes, with the links
// each tier gives it.
func Group(m mesh.Mesh, dev int, along ...mesh.Axis) collective.Group {
	mg := m.Group(dev, along...)
	return collective.Group{Ranks: mg.Devices, NICI: mg.ICI, NDCN: mg.DCN, Axis: mg.String(),
		ICILink: m.Link(along...).Collective(), DCNLink: m.TierLink(hw.DCN).Collective()}
}
