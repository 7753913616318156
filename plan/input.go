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
	chip := p.Request.Multislice.Slice.Chip
	c := infeed.ForChip(chip)
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
	vm := chip.Host.VCPUs
	limit := 4096
	if vm > 0 {
		limit = 16 * vm
	}
	n, _, ok, err := infeed.MinVCPUs(c, limit)
	if err != nil {
		return fmt.Errorf("plan: input check: %w", err)
	}
	perChip := float64(n) / float64(c.Chips)
	switch {
	case !ok:
		p.Warnings = append(p.Warnings, note(OptionExampleCost, "input-bound: even %d vCPUs per host cannot preprocess %d sequences per chip at %v each within the %s step", n, c.Batch, c.ExampleCost, dur(e.Time.Step)))
	case vm > 0 && n > vm:
		p.Warnings = append(p.Warnings, note(OptionExampleCost, "input-bound: needs %d vCPUs per host (%.0f per chip) to keep the chips fed at %v per sequence, and the %s VM has %d; the step would stretch to %s",
			n, perChip, c.ExampleCost, chip.Host.MachineType, vm, dur(stepWith(c, vm))))
	default:
		p.Reasons = append(p.Reasons, note(OptionExampleCost, "input: %d vCPUs per host (%.1f per chip) keep the chips fed at %v per sequence (infeed simulation; the VM has %d)",
			n, perChip, c.ExampleCost, vm))
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
