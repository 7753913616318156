package capacity

import (
	"shardlab/plan"
	"shardlab/unit"
)

// Job is what the simulation needs from a plan: how fast it trains and how
// much a checkpoint holds.
type Job struct {
	// TokensPerSecond is the whole multislice's throughput.
	TokensPerSecond float64
	// Checkpoint is the bytes one checkpoint writes: every parameter's
	// weights, master copy and optimizer state, once (data-parallel
	// replicas write one copy); gradients are not saved.
	Checkpoint unit.Bytes
}

// JobOf reads the job from the plan's chosen layout: the throughput from
// cost's estimate, the state from model's parameter count and cost's
// precision.
func JobOf(p plan.Plan) Job {
	est := p.Best.Estimate
	pr := est.Job.Precision
	perParam := pr.Weight + pr.Master + pr.Optimizer
	return Job{
		TokensPerSecond: est.TokensPerSecondPerChip * float64(est.Mesh.Chips()),
		Checkpoint:      unit.Bytes(est.Job.Model.ParamCount().Total()) * unit.Bytes(perParam),
	}
}
