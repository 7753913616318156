package export_test

import (
	"os"

	"shardlab/cost"
	"shardlab/export"
	"shardlab/hw"
	"shardlab/mesh"
	"shardlab/model"
	"shardlab/plan"
)

func ExampleMaxText() {
	spec, _ := model.Lookup("llama3-8b")
	s, _ := hw.ParseAcceleratorType("v5p-128")
	ms, _ := hw.NewMultislice(s, 1, 0)
	axes, _ := mesh.ParseAxes("fsdp=64")
	p, _ := plan.Search(plan.Request{Model: spec, Multislice: ms, Axes: axes, GlobalBatch: 128, MaxGlobalBatch: 128, Remat: "full", HBMHeadroom: cost.DefaultHBMHeadroom})
	export.MaxText(os.Stdout, p)
	// Output:
	// # shardlab plan: llama3-8b on v5p-128 (4x4x4, 64 chips)
	// # layout fsdp=64, 65.1% MFU estimated, step 3.17 s
	// ici_data_parallelism: 1
	// ici_fsdp_parallelism: 64
	// ici_tensor_parallelism: 1
	// ici_pipeline_parallelism: 1
	// ici_context_parallelism: 1
	// dcn_data_parallelism: 1
	// dcn_fsdp_parallelism: 1
	// dcn_tensor_parallelism: 1
	// dcn_pipeline_parallelism: 1
	// dcn_context_parallelism: 1
	// num_slices: 1
	// per_device_batch_size: 2
	// max_target_length: 8192
	// remat_policy: 'full'
	// weight_dtype: 'float32'
}
