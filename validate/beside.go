package validate

import (
	"fmt"
	"sync"

	"shardlab/cost"
	"shardlab/hw"
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
		if SameJob(r, p.Request) {
			same = append(same, r)
		}
	}
	rep, err := Evaluate(same, nil)
	if err != nil {
		return nil, err
	}
	var out []plan.PublishedRun
	for _, res := range rep.Results {
		out = append(out, publishedRun(res))
	}
	return out, nil
}

// SameJob says whether run r is of the job plan request req is for: what
// changes the answer is the same. A model with the same parameters
// (model.Spec.ParamCount, whatever it is called: the table's
// llama3.1-405b is the catalog's llama3-405b) at the same sequence length
// (tokens/s per chip fall as attention's FLOPs per token grow with it), on
// slices of the same accelerator type and topology, as many of them, with
// the same parameter format (the run's weight_dtype against the request's
// precision preset: its weights' and master copy's bytes, which set the
// gradients' and the collectives' too; mu_dtype, which sizes only
// optimizer state, is not compared) and matmul format (quantization), in
// a framework that runs MaxText (every run in the table is MaxText's: a
// PyTorch/XLA plan has none).
func SameJob(r Run, req plan.Request) bool {
	if req.Framework == plan.FrameworkPyTorch {
		return false
	}
	s, err := hw.ParseAcceleratorType(r.AcceleratorType)
	if err != nil {
		return false
	}
	ms := req.Multislice
	if max(r.Slices, 1) != ms.Slices || s.AcceleratorType() != ms.Slice.AcceleratorType() || s.Topology != ms.Slice.Topology ||
		r.Model.ParamCount() != req.Model.ParamCount() {
		return false
	}
	seq := req.Seq
	if seq == 0 {
		seq = req.Model.SeqLen
	}
	prec := req.Precision
	if prec == (cost.Precision{}) {
		prec = cost.MaxTextPrecision() // plan.Request's zero Precision
	}
	rp, err := r.precision()
	if err != nil {
		return false
	}
	q, err := cost.ParseQuantization(r.Quantization)
	return err == nil && r.SeqLen == seq && rp.Weight == prec.Weight && rp.Master == prec.Master && q == req.Quantization
}

// runOnly is the settings run r is costed with that a plan has no option
// for, as "name value" in the table's words: its prediction includes them,
// so plan on the run's layout, batch and remat costs it without them.
func runOnly(r Run) []string {
	var out []string
	if r.GMMTileRows != 0 {
		out = append(out, fmt.Sprintf("gmm_tile_rows %g", r.GMMTileRows))
	}
	if r.Layout.CustomMesh != "" {
		out = append(out, "custom_mesh "+r.Layout.CustomMesh)
	}
	return out
}

// publishedRun is res as a plan shows it.
func publishedRun(res Result) plan.PublishedRun {
	r, e := res.Run, res.Estimate
	out := plan.PublishedRun{
		ID: r.ID, Source: r.Source.String(), Layout: e.Mesh.String(), Remat: r.RematPolicy, RematCustom: r.RematCustom,
		GlobalBatch: e.Job.GlobalBatch, Seq: e.Job.Seq, MFU: r.Published.MFU, PredictedMFU: res.Predicted, Error: res.Error,
		FLOPConvention: r.Published.FLOPsConvention, TokensPerSecondPerChip: r.Published.TokensPerSPerChip,
		PredictedTokensPerSecondPerChip: e.TokensPerSecondPerChip, Calibration: r.Calibration, Prospective: r.Prospective,
		Devices: e.Mesh.String(), RunOnly: runOnly(r), Fits: e.Memory.Fits(),
	}
	if d, err := plan.DevicesOf(e); err == nil {
		out.Devices = d.String()
	}
	if out.TokensPerSecondPerChip == 0 {
		// Both MFUs count the run's FLOPs per token in its convention
		// (predictedMFU), so the rates stand as the MFUs do.
		out.TokensPerSecondPerChip = e.TokensPerSecondPerChip * r.Published.MFU / res.Predicted
		out.TokensFromMFU = true
	}
	return out
}
