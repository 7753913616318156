package export

// Whether JAX lays a MaxText mesh on the slice's torus without splitting
// a physical axis, which MaxText asks of it unless
// allow_split_physical_axes is set.
//
// Sources:
//
//	[mesh_utils.py] jax-ml/jax:jax/_src/mesh_utils.py @cec06d116c05f0d52adfceee3d3b730fdbcb0ce5
//	  (create_device_mesh, _get_physical_tpu_mesh, _create_device_mesh_for_nd_torus)

import (
	"slices"

	"shardlab/hw"
	"shardlab/maxtext"
)

// needsSplit reports whether JAX's create_device_mesh, called as MaxText
// calls it by default (allow_split_physical_axes false, [base.yml] line
// 1145; [maxtext_utils.py] create_device_mesh and, across slices,
// create_hybrid_device_mesh, which lays each slice the same way), refuses
// the ICI factors ici (by MaxText axis name) on slice s.
func needsSplit(s hw.Slice, ici map[string]int, pipelined bool) bool {
	phys, ok := physicalMesh(s)
	if !ok {
		return false
	}
	var shape []int
	for _, a := range maxtext.MeshAxes(pipelined) {
		shape = append(shape, max(ici[a], 1))
	}
	return !wholeAssignment(phys, shape)
}

// physicalMesh is the slice's devices as [mesh_utils.py]
// _get_physical_tpu_mesh shapes them: the chips' x, y and z (z 1 on a 2-D
// slice), then the TensorCores of a TPU7x chip, each a device. On v2 and
// v3 JAX's own handler reshapes any mesh, so there is none to check
// (false). JAX's handlers for small v5e, v6e, v5p and TPU7x slices are
// not modelled: a mesh they would take is at worst written with
// allow_split_physical_axes, which JAX consults only when no whole
// assignment exists.
func physicalMesh(s hw.Slice) ([]int, bool) {
	switch s.Chip.Generation {
	case hw.V2, hw.V3:
		return nil, false
	}
	phys := s.Topology.Dims()
	for len(phys) < 3 {
		phys = append(phys, 1)
	}
	if n := s.Chip.JAXDevicesPerChip; n > 1 {
		phys = append(phys, n)
	}
	return phys, true
}

// wholeAssignment is [mesh_utils.py] _create_device_mesh_for_nd_torus
// without splitting: from the last logical axis (the most
// network-intensive) to the first, each takes the first set of untaken
// physical axes, in itertools.combinations order from the most axes to
// one, whose sizes multiply to its size; an axis of size 1 may take a
// physical axis of size 1. It reports false where an axis larger than 1
// finds none, where JAX raises NotImplementedError ("Failed to find
// assignment for logical_axis_index").
func wholeAssignment(phys, shape []int) bool {
	left := slices.Clone(phys)
	for i := len(shape) - 1; i >= 0; i-- {
		found := false
		for k := len(left); k >= 1 && !found; k-- {
			found = takeAxes(left, k, shape[i])
		}
		if !found && shape[i] > 1 {
			return false
		}
	}
	return true
}

// takeAxes takes (zeroes) the first k-subset of left, in lexicographic
// order of indices, whose sizes multiply to n, and reports whether one
// did.
func takeAxes(left []int, k, n int) bool {
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	for {
		p := 1
		for _, j := range idx {
			p *= left[j]
		}
		if p == n {
			for _, j := range idx {
				left[j] = 0
			}
			return true
		}
		// the next combination: bump the rightmost index that can move
		i := k - 1
		for i >= 0 && idx[i] == len(left)-k+i {
			i--
		}
		if i < 0 {
			return false
		}
		idx[i]++
		for j := i + 1; j < k; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}
