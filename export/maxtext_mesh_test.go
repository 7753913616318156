package export

import (
	"slices"
	"testing"

	"shardlab/maxtext"
	"shardlab/plan"
)

// TestWholeAssignment holds wholeAssignment to JAX's own cases of
// _create_device_mesh_for_nd_torus without splitting (tests/
// mesh_utils_test.py @cec06d11, test_create_device_mesh_for_nd_torus: each
// assigned whole) and to meshes it refuses (a logical axis no product of
// untaken physical axes equals raises NotImplementedError: "Failed to find
// assignment", jax/_src/mesh_utils.py). Physical meshes are as
// _get_physical_tpu_mesh gives them: a 2-D slice has a z of 1, which the
// 8x8 case shows being taken by an axis of 8 (assignment (0, 2)).
func TestWholeAssignment(t *testing.T) {
	for _, c := range []struct {
		phys, shape []int
		want        bool
	}{
		{[]int{2, 2, 1}, []int{1, 1, 4}, true},
		{[]int{2, 2, 4}, []int{1, 4, 4}, true},
		{[]int{4, 4, 4}, []int{1, 16, 4}, true},
		{[]int{4, 4, 8}, []int{1, 16, 8}, true},
		{[]int{4, 4, 8}, []int{1, 8, 16}, true},
		{[]int{4, 4, 8}, []int{16, 8, 1}, true},
		{[]int{4, 8, 8}, []int{1, 32, 8}, true},
		{[]int{8, 8, 8}, []int{1, 64, 8}, true},
		{[]int{8, 8, 16}, []int{1, 64, 16}, true},
		{[]int{8, 8, 1}, []int{8, 8}, true},
		// the split cases of test_create_device_mesh_for_nd_torus_split_axes_can_handle_axes_split
		{[]int{8, 8, 1}, []int{2, 1, 32, 1}, false},
		{[]int{16, 16, 1}, []int{128, 2}, false}, // 2 is no product of 16, 16 and 1
		{[]int{4, 4, 4}, []int{8, 8}, false},     // 8 is no product of 4s
	} {
		if got := wholeAssignment(c.phys, c.shape); got != c.want {
			t.Errorf("wholeAssignment(%v, %v) = %v, want %v", c.phys, c.shape, got, c.want)
		}
	}
}

// TestMaxTextSplitsPhysicalAxesWhenJAXMust: a layout whose ICI factors JAX
// cannot lay on the slice's torus without splitting a physical axis
// (tensor=2 on v5e's 16x16, expert=8 on v4's 4x4x4) is written with
// allow_split_physical_axes true, without which MaxText's
// create_device_mesh refuses it (maxtext_utils.py @e591f30c, base.yml line
// 1145 false); one JAX lays whole is left at base.yml's false.
func TestMaxTextSplitsPhysicalAxesWhenJAXMust(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(*plan.Options)
		split bool
	}{
		{"v5e tensor 2", func(o *plan.Options) {
			o.Model, o.TPU, o.Mesh, o.GlobalBatch = "llama3-70b", "v5litepod-256", "fsdp=128,tensor=2", "128"
		}, true},
		{"v4 expert 8", func(o *plan.Options) {
			o.Model, o.TPU, o.Mesh, o.GlobalBatch = "mixtral-8x7b", "v4-128", "fsdp=8,expert=8", "64"
		}, true},
		{"v5p fsdp whole", func(o *plan.Options) { o.Model, o.TPU, o.Mesh, o.GlobalBatch = "llama3-8b", "v5p-128", "fsdp=64", "64" }, false},
		{"tpu7x in-chip fsdp", func(o *plan.Options) {
			o.Model, o.TPU, o.Mesh, o.GlobalBatch = "llama3-70b", "tpu7x-128", "fsdp=128", "128"
		}, false},
	} {
		c := c
		t.Run(c.name, func(t *testing.T) {
			p := search(t, c.edit)
			cfg, err := MaxText(p)
			if err != nil {
				t.Fatal(err)
			}
			v, ok := cfg.Get("allow_split_physical_axes")
			if got := ok && v == true; got != c.split {
				t.Errorf("allow_split_physical_axes %v (written %v), want %v", v, ok, c.split)
			}
			if ok && v != true {
				t.Errorf("allow_split_physical_axes written as %#v: only true is worth writing", v)
			}
		})
	}
}

// jaxAcceptsMesh is the engine's rule for checkMaxText: the ICI factors
// in MaxText's mesh_axes order are laid whole by JAX, or the config
// allows splitting.
func jaxAcceptsMesh(t *testing.T, p plan.Plan, vals map[string]any) bool {
	t.Helper()
	if vals["allow_split_physical_axes"] == true {
		return true
	}
	phys, ok := physicalMesh(p.Request.Multislice.Slice)
	if !ok {
		return true // JAX's v2 and v3 handler reshapes any mesh
	}
	var shape []int
	for _, a := range maxtext.MeshAxes(pipelined(vals)) {
		n, _ := vals[maxtext.ICIKey(a)].(int)
		shape = append(shape, max(n, 1))
	}
	return wholeAssignment(slices.Clone(phys), shape)
}

func pipelined(vals map[string]any) bool {
	i, _ := vals["ici_pipeline_parallelism"].(int)
	d, _ := vals["dcn_pipeline_parallelism"].(int)
	return i*d > 1
}
