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
	p, err := plan.Search(plan.Request{Model: spec, Multislice: ms, MaxGlobalBatch: 512, Settings: cost.Settings{HBMHeadroom: cost.DefaultHBMHeadroom}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Best.Estimate.Mesh, p.Best.Tier, p.Best.Estimate.Job.GlobalBatch)
	// Output:
	// data=2(dcn),fsdp=64 FSDP inside, DP across slices 128
}

// The {mesh} option counts JAX devices as MaxText does: tpu7x-128 is 64
// chips of 2 devices, and fsdp=128 is fsdp=64 on the chips, each chip's
// sequences split over its 2 devices.
func ExamplePlan_Devices() {
	o := plan.DefaultOptions()
	o.Model, o.TPU, o.Mesh = "llama3-70b", "tpu7x-128", "fsdp=128"
	r, err := plan.ParseRequest(o)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := plan.Search(r)
	if err != nil {
		fmt.Println(err)
		return
	}
	d, _ := p.Devices()
	fmt.Println(p.Best.Estimate.Mesh, "|", d, "|", d.Count(), "|", d.InChip)
	// Output:
	// fsdp=64 | fsdp=128 | 128 devices (64 chips) | fsdp
}
