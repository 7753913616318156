package infeed_test

import (
	"fmt"
	"time"

	"shardlab/hw"
	"shardlab/infeed"
)

func ExampleMinVCPUs() {
	s7, _ := hw.ParseAcceleratorType("tpu7x-8")
	c := infeed.ForSlice(s7) // one tpu7x-standard-4t: 4 chips, 224 vCPUs, 2 NUMA nodes
	c.ExampleCost = 2 * time.Millisecond
	c.Batch = 256
	c.Compute = 50 * time.Millisecond
	n, r, ok, _ := infeed.MinVCPUs(c, c.VCPUs)
	fmt.Println(n, ok, r.StepTime)
	// Output:
	// 42 true 50ms
}

// A host of 40 vCPUs feeds the chips 2 % late; the sweep finds the 42
// that keep them busy, and its verdict is the run's.
func ExampleSweepVCPUs() {
	s7, _ := hw.ParseAcceleratorType("tpu7x-8")
	c := infeed.ForSlice(s7)
	c.VCPUs = 40
	r, s, _ := infeed.SweepVCPUs(c, 4096)
	fmt.Println(r.StepTime, r.Bound(), "|", s.VCPUs, s.Found, s.Result.Bound())
	fmt.Println(r.Bound().Verdict())
	// Output:
	// 51.2ms host | 42 true mxu
	// input-bound: the host does not keep the infeed full and the ready MXU waits
}
