package plan

import (
	"fmt"
	"math"
	"strings"
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
}

// PublishedRunJSON is a PublishedRun in plan --json's published_runs.
type PublishedRunJSON struct {
	ID                   string  `json:"id"`
	Source               string  `json:"source"`
	Layout               string  `json:"layout"`
	Remat                string  `json:"remat"`
	RematCustom          string  `json:"remat_custom,omitempty"`
	GlobalBatch          int     `json:"global_batch_sequences"`
	Seq                  int     `json:"seq_len"`
	MFU                  float64 `json:"published_mfu_fraction"`
	FLOPConvention       string  `json:"published_mfu_attention_flops"`
	TokensChip           float64 `json:"published_tokens_per_s_per_chip"`
	TokensFromMFU        bool    `json:"published_tokens_from_mfu,omitempty"`
	PredictedMFU         float64 `json:"predicted_mfu_fraction"`
	PredictedTokensChip  float64 `json:"predicted_tokens_per_s_per_chip"`
	Error                float64 `json:"relative_error"`
	OutsideBand          bool    `json:"outside_prediction_band"`
	PickAgainstPublished float64 `json:"pick_tokens_per_s_per_chip_against_published_fraction"`
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

// publishedJSON is p's published runs for its JSON; nil (the key absent)
// where validate holds none of its job.
func (p Plan) publishedJSON() []PublishedRunJSON {
	var out []PublishedRunJSON
	for _, r := range p.Published {
		out = append(out, PublishedRunJSON{ID: r.ID, Source: r.Source, Layout: r.Layout, Remat: r.Remat, RematCustom: r.RematCustom,
			GlobalBatch: r.GlobalBatch, Seq: r.Seq, MFU: r.MFU, FLOPConvention: r.FLOPConvention, TokensChip: r.TokensPerSecondPerChip,
			TokensFromMFU: r.TokensFromMFU, PredictedMFU: r.PredictedMFU, PredictedTokensChip: r.PredictedTokensPerSecondPerChip,
			Error: r.Error, OutsideBand: p.outsideBand(r), PickAgainstPublished: p.pickAgainst(r)})
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
				r.ID, 100*r.Error, 100*r.PredictedMFU, 100*r.MFU, 100*band.Low, 100*band.High)
		}
	}
}

// writePublished writes the published runs of the job beside the pick.
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
		fmt.Fprintf(b, "  %s: %s, remat %s, batch %d x %d\n", r.ID, r.Layout, remat, r.GlobalBatch, r.Seq)
		fmt.Fprintf(b, "    published MFU %.1f%% (attention FLOPs: %s), %s tokens/s per chip%s; shardlab predicts MFU %.1f%%, %s tokens/s per chip: error %+.0f%%\n",
			100*r.MFU, r.FLOPConvention, count(r.TokensPerSecondPerChip), from, 100*r.PredictedMFU, count(r.PredictedTokensPerSecondPerChip), 100*r.Error)
		side := "above"
		if p.pickAgainst(r) < 0 {
			side = "below"
		}
		fmt.Fprintf(b, "    the pick's predicted tokens/s per chip are %.0f%% %s this run's published\n", 100*math.Abs(p.pickAgainst(r)), side)
	}
}
