package plan

import (
	"fmt"
	"time"

	"shardlab/infeed"
	"shardlab/unit"
)

// checkInput simulates one host's input pipeline at the plan's step time
// and says how many vCPUs keep its chips fed; a plan that needs more than
// the VM has is flagged input-bound.
func (p *Plan) checkInput() error {
	e := p.Best.Estimate
	slice := p.Request.Multislice.Slice
	host := slice.Host()
	c := infeed.ForSlice(slice)
	// each chip receives its share of the step's sequences (at least one:
	// with tensor or context parallelism several chips read the same one)
	c.Batch = max(1, e.Job.GlobalBatch/e.Mesh.Chips())
	c.ExampleCost = p.Request.ExampleCost
	c.ExampleBytes = unit.Bytes(4 * e.Job.Seq) // int32 token ids
	c.Compute = e.Time.Step
	c.Drain = 0
	c.Steps = 12
	// search up to 16 times the VM's vCPUs, or 4096 where its count is not
	// published
	vm := host.VCPUs
	limit := 4096
	if vm > 0 {
		limit = 16 * vm
	}
	n, _, ok, err := infeed.MinVCPUs(c, limit)
	if err != nil {
		return fmt.Errorf("plan: input check: %w", err)
	}
	has := fmt.Sprintf("the VM has %d", vm)
	if vm == 0 {
		has = fmt.Sprintf("the %s VM's vCPU count is not published", host.MachineType)
	}
	perChip := float64(n) / float64(c.Chips)
	switch {
	case !ok:
		p.Warnings = append(p.Warnings, note(OptionExampleCost, "input-bound: even %s per host cannot preprocess %s per chip at %s each within the %s step (%s)",
			unit.Plural(n, "vCPU"), unit.Plural(c.Batch, "sequence"), dur(c.ExampleCost), dur(e.Time.Step), has))
	case vm > 0 && n > vm:
		p.Warnings = append(p.Warnings, note(OptionExampleCost, "input-bound: needs %s per host (%.0f per chip) to keep the chips fed at %s per sequence, and the %s VM has %d; the step would stretch to %s",
			unit.Plural(n, "vCPU"), perChip, dur(c.ExampleCost), host.MachineType, vm, dur(stepWith(c, vm))))
	default:
		p.Reasons = append(p.Reasons, note(OptionExampleCost, "input: the chips stay fed with %s per host (%.1f per chip) at %s per sequence (infeed simulation; %s)",
			unit.Plural(n, "vCPU"), perChip, dur(c.ExampleCost), has))
	}
	return nil
}

// stepWith is the steady-state step with v vCPUs.
func stepWith(c infeed.Config, v int) time.Duration {
	c.VCPUs = v
	r, err := infeed.Run(c)
	if err != nil {
		return 0
	}
	return r.StepTime
}
