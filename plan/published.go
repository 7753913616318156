package plan

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"shardlab/cost"
)

// PublishedRun is a published training run of a plan's very job (its
// model, accelerator type, topology and slice count), as package validate
// holds and costs it (validate.Beside, which owns both the table and which
// of its rows are the plan's job): shown beside the plan's pick so that the
// rule order's choice is seen against what real TPUs measured on the same
// hardware, and the printed band against the model's error on this job.
// Package plan does not import validate (validate imports plan): the
// front ends ask validate and set Plan.Published.
type PublishedRun struct {
	// ID is the row's id in validate/runs.yaml; Source where it was
	// published (repo/path@commit, or a page).
	ID, Source string
	// Layout is the run's mesh in chips (mesh.Mesh.String), Remat its
	// remat_policy (RematCustom: its remat_custom, "" for none).
	Layout, Remat, RematCustom string
	GlobalBatch, Seq           int
	// MFU is the published MFU, in FLOPConvention, the source's count of
	// attention FLOPs ("none", "full", "causal"); PredictedMFU is cost's
	// prediction of the run on its published settings in the same
	// convention, and Error (PredictedMFU − MFU) / MFU.
	MFU, PredictedMFU, Error float64
	FLOPConvention           string
	// TokensPerSecondPerChip is the published rate; where the source gives
	// none (TokensFromMFU), the predicted rate scaled by MFU / PredictedMFU,
	// which is exact since both MFUs count the same FLOPs per token.
	TokensPerSecondPerChip          float64
	TokensFromMFU                   bool
	PredictedTokensPerSecondPerChip float64
	// Devices is the run's layout in JAX devices as MaxText counts them
	// and the {mesh} option takes them (DevicesOf); Layout where a chip is
	// one device.
	Devices string
	// Calibration marks a row the model's constants were fitted on (its
	// error is not a test of the model), Prospective one added after they
	// were frozen: validate's table marks them "(cal)" and "(new)".
	Calibration, Prospective bool
	// RunOnly is the settings the run set that a plan has no option for
	// ("gmm_tile_rows 298.667"): the prediction includes them, so a plan
	// of the run's layout, batch and remat costs it without them.
	RunOnly []string
	// Fits says whether the run fits by the plan's HBM rule, as costed.
	Fits bool
}

// PublishedRunJSON is a PublishedRun in plan --json's published_runs.
type PublishedRunJSON struct {
	ID                   string   `json:"id"`
	Source               string   `json:"source"`
	Layout               string   `json:"layout"`
	Remat                string   `json:"remat"`
	RematCustom          string   `json:"remat_custom,omitempty"`
	GlobalBatch          int      `json:"global_batch_sequences"`
	Seq                  int      `json:"seq_len"`
	MFU                  float64  `json:"published_mfu_fraction"`
	FLOPConvention       string   `json:"published_mfu_attention_flops"`
	TokensChip           float64  `json:"published_tokens_per_s_per_chip"`
	TokensFromMFU        bool     `json:"published_tokens_from_mfu,omitempty"`
	PredictedMFU         float64  `json:"predicted_mfu_fraction"`
	PredictedTokensChip  float64  `json:"predicted_tokens_per_s_per_chip"`
	Error                float64  `json:"relative_error"`
	OutsideBand          bool     `json:"outside_prediction_band"`
	PickAgainstPublished float64  `json:"pick_tokens_per_s_per_chip_against_published_fraction"`
	DeviceSpec           string   `json:"device_spec"`
	Calibration          bool     `json:"calibration"`
	Prospective          bool     `json:"prospective"`
	RunOnly              []string `json:"run_only_settings,omitempty"`
	Fits                 bool     `json:"fits"`
	PickAgainstPredicted float64  `json:"pick_against_predicted_fraction"`
	NotPicked            []string `json:"not_picked_because,omitempty"`
}

// outsideBand says whether r's error lies outside the band p prints (its
// PredictionBand); false where p prints none.
func (p Plan) outsideBand(r PublishedRun) bool {
	b, ok := p.PredictionBand()
	return ok && (r.Error < b.Low || r.Error > b.High)
}

// pickAgainst is the pick's predicted tokens/s per chip over r's
// published rate, minus one: −0.10 where the pick is predicted 10% below
// what the run published on the same hardware.
func (p Plan) pickAgainst(r PublishedRun) float64 {
	return p.Best.Estimate.TokensPerSecondPerChip/r.TokensPerSecondPerChip - 1
}

// pickAgainstPredicted is the pick's predicted tokens/s per chip over
// the run's, as shardlab predicts both, minus one: like against like, so
// the model's error on the run (PublishedRun.Error) cancels.
func (p Plan) pickAgainstPredicted(r PublishedRun) float64 {
	return p.Best.Estimate.TokensPerSecondPerChip/r.PredictedTokensPerSecondPerChip - 1
}

// notPicked is what, in run r's settings, kept the search from its
// layout, where r is predicted faster than the pick: a global batch
// other than the one the request fixes or above its limit, a remat
// policy other than the one it fixes or outside what it searches
// (cost.SearchRemats), another layout it fixes, or not fitting the HBM
// rule. Empty where the pick is predicted as fast, or where none of
// these says why.
func (p Plan) notPicked(r PublishedRun) []string {
	if p.pickAgainstPredicted(r) >= 0 {
		return nil
	}
	var out []string
	switch req := p.Request; {
	case req.GlobalBatch != 0 && r.GlobalBatch != req.GlobalBatch:
		out = append(out, fmt.Sprintf("its global batch, %d sequences, is not the %d the request fixes", r.GlobalBatch, req.GlobalBatch))
	case r.GlobalBatch > req.MaxGlobalBatch:
		out = append(out, fmt.Sprintf("its global batch, %d sequences, is above the request's limit of %d", r.GlobalBatch, req.MaxGlobalBatch))
	}
	remat, err := cost.ParseRemat(r.Remat)
	switch req := p.Request; {
	case err != nil:
	case req.Remat != "" && remat != req.Remat:
		out = append(out, fmt.Sprintf("its remat policy %s is not the %s the request fixes", remat, req.Remat))
	case req.Remat == "" && !slices.Contains(cost.SearchRemats(), remat):
		names := make([]string, 0, len(cost.SearchRemats()))
		for _, s := range cost.SearchRemats() {
			names = append(names, string(s))
		}
		out = append(out, fmt.Sprintf("its remat policy %s is not one the search tries (%s)", remat, strings.Join(names, ", ")))
	}
	if p.Request.Axes != nil && r.Layout != p.Best.Estimate.Mesh.String() {
		out = append(out, "the request fixes another layout")
	}
	if !r.Fits {
		out = append(out, "it does not fit by the plan's HBM rule")
	}
	return out
}

// publishedJSON is p's published runs for its JSON; nil (the key absent)
// where validate holds none of its job.
func (p Plan) publishedJSON() []PublishedRunJSON {
	var out []PublishedRunJSON
	for _, r := range p.Published {
		out = append(out, PublishedRunJSON{ID: r.ID, Source: r.Source, Layout: r.Layout, Remat: r.Remat, RematCustom: r.RematCustom,
			GlobalBatch: r.GlobalBatch, Seq: r.Seq, MFU: r.MFU, FLOPConvention: r.FLOPConvention, TokensChip: r.TokensPerSecondPerChip,
			TokensFromMFU: r.TokensFromMFU, PredictedMFU: r.PredictedMFU, PredictedTokensChip: r.PredictedTokensPerSecondPerChip,
			Error: r.Error, OutsideBand: p.outsideBand(r), PickAgainstPublished: p.pickAgainst(r), DeviceSpec: r.Devices,
			Calibration: r.Calibration, Prospective: r.Prospective, RunOnly: r.RunOnly, Fits: r.Fits,
			PickAgainstPredicted: p.pickAgainstPredicted(r), NotPicked: p.notPicked(r)})
	}
	return out
}

// writeBandMisses writes, under the band's line, each published run of
// the job whose predicted error lies outside the band: the band is the
// error over many jobs, and on this one the model measured another.
func (p Plan) writeBandMisses(b *strings.Builder) {
	band, ok := p.PredictionBand()
	if !ok {
		return
	}
	for _, r := range p.Published {
		if p.outsideBand(r) {
			fmt.Fprintf(b, "  outside the band on this very job: validate's published run %s is predicted %+.0f%% off (MFU %.1f%% against a published %.1f%%), where the band allows %+.0f%% to %+.0f%%\n",
				r.ID+r.mark(), 100*r.Error, 100*r.PredictedMFU, 100*r.MFU, 100*band.Low, 100*band.High)
		}
	}
}

// mark is r's mark as validate's table prints it: " (cal)" for a
// calibration row, " (new)" for a prospective one.
func (r PublishedRun) mark() string {
	switch {
	case r.Calibration:
		return " (cal)"
	case r.Prospective:
		return " (new)"
	}
	return ""
}

// layoutWords is r's layout as the {mesh} option takes it, with the
// chips' reading beside it where a chip is several JAX devices.
func (r PublishedRun) layoutWords() string {
	if r.Devices == "" || r.Devices == r.Layout {
		return r.Layout
	}
	return fmt.Sprintf("%s in JAX devices (%s in chips)", r.Devices, r.Layout)
}

// aboveBelow is |f| as a percentage, "above" or "below".
func aboveBelow(f float64) string {
	side := "above"
	if f < 0 {
		side = "below"
	}
	return fmt.Sprintf("%.0f%% %s", 100*math.Abs(f), side)
}

// writePublished writes the published runs of the job beside the pick:
// the pick against each run as shardlab predicts both (the model's error
// cancels), then against its published rate, which carries that error.
func (p Plan) writePublished(b *strings.Builder) {
	if len(p.Published) == 0 {
		return
	}
	fmt.Fprintf(b, "\nPublished runs of this job (shardlab validate), beside the pick (%s tokens/s per chip predicted):\n", count(p.Best.Estimate.TokensPerSecondPerChip))
	for _, r := range p.Published {
		remat := r.Remat
		if r.RematCustom != "" {
			remat += " (" + r.RematCustom + ")"
		}
		from := ""
		if r.TokensFromMFU {
			from = " (from its MFU)"
		}
		fmt.Fprintf(b, "  %s%s: %s, remat %s, batch %d x %d\n", r.ID, r.mark(), r.layoutWords(), remat, r.GlobalBatch, r.Seq)
		fmt.Fprintf(b, "    published MFU %.1f%% (attention FLOPs: %s), %s tokens/s per chip%s; shardlab predicts MFU %.1f%%, %s tokens/s per chip: error %+.0f%%\n",
			100*r.MFU, r.FLOPConvention, count(r.TokensPerSecondPerChip), from, 100*r.PredictedMFU, count(r.PredictedTokensPerSecondPerChip), 100*r.Error)
		if len(r.RunOnly) > 0 {
			fmt.Fprintf(b, "    the prediction includes the run's %s, which plan has no option for\n", strings.Join(r.RunOnly, ", "))
		}
		fmt.Fprintf(b, "    the pick is predicted %s this run as shardlab predicts it; against its published rate, %s (with the model's %+.0f%% error on this run)\n",
			aboveBelow(p.pickAgainstPredicted(r)), aboveBelow(p.pickAgainst(r)), 100*r.Error)
		if why := p.notPicked(r); len(why) > 0 {
			fmt.Fprintf(b, "    the search did not pick it: %s\n", strings.Join(why, "; "))
		}
	}
}
