package infeed_test

import (
	"fmt"
	"time"

	"shardlab/hw"
	"shardlab/infeed"
)

func ExampleMinVCPUs() {
	c7, _ := hw.Lookup("tpu7x")
	c := infeed.ForChip(c7) // tpu7x-standard-4t: 4 chips, 224 vCPUs, 2 NUMA nodes
	c.ExampleCost = 2 * time.Millisecond
	c.Batch = 256
	c.Compute = 50 * time.Millisecond
	n, r, ok, _ := infeed.MinVCPUs(c, c.VCPUs)
	fmt.Println(n, ok, r.StepTime)
	// Output:
	// 42 true 50ms
}
