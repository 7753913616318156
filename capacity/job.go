package capacity

import (
	"math"

	"shardlab/plan"
	"shardlab/unit"
)

// Job is what the simulation needs from a plan: how fast it trains and how
// much a checkpoint holds.
type Job struct {
	// TokensPerSecond is the whole multislice's throughput.
	TokensPerSecond float64
	// BatchTokens is the tokens one step trains, the global batch times
	// the sequence length: a job trains whole steps (Steps). Zero counts
	// tokens as they are, with no steps.
	BatchTokens float64
	// Checkpoint is the bytes one checkpoint writes: every parameter's
	// weights, master copy and optimizer state, once (data-parallel
	// replicas write one copy); gradients are not saved.
	Checkpoint unit.Bytes
}

// JobOf reads the job from the plan's chosen layout: the throughput and
// the step's batch from cost's estimate, the state from model's parameter
// count and cost's precision.
func JobOf(p plan.Plan) Job {
	est := p.Best.Estimate
	pr := est.Job.Precision
	perParam := pr.Weight + pr.Master + pr.Optimizer
	return Job{
		TokensPerSecond: est.TokensPerSecondPerChip * float64(est.Mesh.Chips()),
		BatchTokens:     float64(est.Job.GlobalBatch) * float64(est.Job.Seq),
		Checkpoint:      unit.Bytes(est.Job.Model.ParamCount().Total()) * unit.Bytes(perParam),
	}
}

// Steps is the whole steps that train tokens tokens: the last, partial
// batch is a whole step, so one token takes one step. It is the one count
// of steps behind every time to train (TimeToTrain): capacity's, plan
// --goodput's and budget's. Zero with no BatchTokens.
func (j Job) Steps(tokens float64) float64 {
	if j.BatchTokens <= 0 {
		return 0
	}
	return math.Ceil(tokens / j.BatchTokens)
}

// TimeToTrain is the wall time to train tokens tokens at the job's
// throughput times goodput: Steps whole steps of BatchTokens each (tokens
// as they are with no BatchTokens). It needs TokensPerSecond × goodput
// above zero.
func (j Job) TimeToTrain(tokens, goodput float64) unit.Seconds {
	trained := tokens
	if j.BatchTokens > 0 {
		trained = j.Steps(tokens) * j.BatchTokens
	}
	return unit.Seconds(trained / (j.TokensPerSecond * goodput))
}
