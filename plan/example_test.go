package plan_test

import (
	"fmt"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/model"
	"shardlab/plan"
)

func ExampleSearch() {
	spec, _ := model.Lookup("llama3-70b")
	s, _ := hw.ParseAcceleratorType("tpu7x-128")
	ms, _ := hw.NewMultislice(s, 2, 0)
	p, err := plan.Search(plan.Request{Model: spec, Multislice: ms, MaxGlobalBatch: 512, HBMHeadroom: cost.DefaultHBMHeadroom})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Best.Estimate.Mesh, p.Best.Tier, p.Best.Estimate.Job.GlobalBatch)
	// Output:
	// data=2(dcn),fsdp=64 FSDP inside, DP across slices 512
}
