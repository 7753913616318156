package validate

import (
	"sync"

	"shardlab/hw"
	"shardlab/model"
	"shardlab/plan"
)

// builtIn is the built-in run table, parsed once (Runs).
var builtIn = sync.OnceValues(Runs)

// Beside is the published runs of plan p's very job, from the built-in
// table, costed as `shardlab validate` costs them (Evaluate, with the
// calibration cost.Calibrated holds), in the form the plan shows beside
// its pick (plan.PublishedRun); nil where the table holds none.
func Beside(p plan.Plan) ([]plan.PublishedRun, error) {
	runs, err := builtIn()
	if err != nil {
		return nil, err
	}
	return besideIn(runs, p)
}

// besideIn is Beside over the table runs.
func besideIn(runs []Run, p plan.Plan) ([]plan.PublishedRun, error) {
	var same []Run
	for _, r := range runs {
		if SameJob(r, p.Request.Model, p.Request.Multislice) {
			same = append(same, r)
		}
	}
	rep, err := Evaluate(same, nil)
	if err != nil {
		return nil, err
	}
	var out []plan.PublishedRun
	for _, res := range rep.Results {
		// A run whose matmuls run in another format is another job: its
		// MXU rate and band are another class's.
		if res.Estimate.Job.Quantization != p.Best.Estimate.Job.Quantization {
			continue
		}
		out = append(out, publishedRun(res))
	}
	return out, nil
}

// SameJob says whether run r is of the job of a plan of model spec on
// slices ms: a model with the same parameters (model.Spec.ParamCount,
// whatever it is called: the table's llama3.1-405b is the catalog's
// llama3-405b), on slices of the same accelerator type and topology, as
// many of them.
func SameJob(r Run, spec model.Spec, ms hw.Multislice) bool {
	s, err := hw.ParseAcceleratorType(r.AcceleratorType)
	if err != nil {
		return false
	}
	return max(r.Slices, 1) == ms.Slices && s.AcceleratorType() == ms.Slice.AcceleratorType() && s.Topology == ms.Slice.Topology &&
		r.Model.ParamCount() == spec.ParamCount()
}

// publishedRun is res as a plan shows it.
func publishedRun(res Result) plan.PublishedRun {
	r, e := res.Run, res.Estimate
	out := plan.PublishedRun{
		ID: r.ID, Source: r.Source.String(), Layout: e.Mesh.String(), Remat: r.RematPolicy, RematCustom: r.RematCustom,
		GlobalBatch: e.Job.GlobalBatch, Seq: e.Job.Seq, MFU: r.Published.MFU, PredictedMFU: res.Predicted, Error: res.Error,
		FLOPConvention: r.Published.FLOPsConvention, TokensPerSecondPerChip: r.Published.TokensPerSPerChip,
		PredictedTokensPerSecondPerChip: e.TokensPerSecondPerChip,
	}
	if out.TokensPerSecondPerChip == 0 {
		// Both MFUs count the run's FLOPs per token in its convention
		// (predictedMFU), so the rates stand as the MFUs do.
		out.TokensPerSecondPerChip = e.TokensPerSecondPerChip * r.Published.MFU / res.Predicted
		out.TokensFromMFU = true
	}
	return out
}
