package export

import (
	"strings"
	"testing"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/mesh"
	"shardlab/model"
	"shardlab/plan"
)

func planFor(t *testing.T, accel string, slices int, layout string, batch int) plan.Plan {
	t.Helper()
	spec, _ := model.Lookup("llama3-70b")
	s, err := hw.ParseAcceleratorType(accel)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := hw.NewMultislice(s, slices, 0)
	if err != nil {
		t.Fatal(err)
	}
	axes, err := mesh.ParseAxes(layout)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Search(plan.Request{Model: spec, Multislice: ms, Axes: axes, GlobalBatch: batch, MaxGlobalBatch: batch, Remat: "full",
		HBMHeadroom: cost.DefaultHBMHeadroom})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMaxText(t *testing.T) {
	tests := []struct {
		accel  string
		slices int
		layout string
		batch  int
		want   []string
	}{
		// TPU7x: MaxText sees each TensorCore as a device, two per chip
		// (accelerator_to_spec_map.py), so 256 sequences over 128 chips is 1
		// per device.
		{"tpu7x-128", 2, "fsdp=64,data=2(dcn)", 256, []string{"ici_fsdp_parallelism: 64\n", "dcn_data_parallelism: 2\n",
			"dcn_fsdp_parallelism: 1\n", "num_slices: 2\n", "per_device_batch_size: 1\n", "remat_policy: 'full'\n"}},
		// v5p is megacore: one device per chip.
		{"v5p-128", 2, "fsdp=32,tensor=2,pipeline=2(dcn)", 256, []string{"ici_tensor_parallelism: 2\n",
			"dcn_pipeline_parallelism: 2\n", "num_pipeline_microbatches: ", "per_device_batch_size: 2\n"}},
		{"tpu7x-128", 1, "fsdp=64", 64, []string{"per_device_batch_size: 0.5\n", "max_target_length: 8192\n"}},
	}
	for _, tt := range tests {
		var b strings.Builder
		if err := MaxText(&b, planFor(t, tt.accel, tt.slices, tt.layout, tt.batch)); err != nil {
			t.Fatal(err)
		}
		for _, w := range tt.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s %s: MaxText config lacks %q:\n%s", tt.accel, tt.layout, w, b.String())
			}
		}
		if tt.slices == 1 && strings.Contains(b.String(), "num_pipeline_microbatches") {
			t.Errorf("num_pipeline_microbatches without a pipeline:\n%s", b.String())
		}
	}
}
