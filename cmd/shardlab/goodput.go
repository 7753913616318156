package main

import (
	"fmt"
	"io"

	"shardlab/capacity"
	"shardlab/export"
	"shardlab/plan"
	"shardlab/unit"
)

// goodputJSON is plan --goodput's addition to a plan's JSON.
type goodputJSON struct {
	capacity.Expectation
	SaveS        float64 `json:"checkpoint_save_s"`
	RestartS     float64 `json:"restart_s"`
	IntervalS    float64 `json:"checkpoint_interval_s"`
	TimeToTrainS float64 `json:"time_to_train_s"`
	// LowS and HighS are the time to train at the ends of the plan's
	// measured error band (plan.Plan.PredictionBand; it scales with the step), as
	// a budget row's prediction_band has them; absent without a band.
	LowS  float64 `json:"low_time_to_train_s,omitempty"`
	HighS float64 `json:"high_time_to_train_s,omitempty"`
}

// trainBand is the time to train s at the ends of p's band, or zeros
// when p has none.
func trainBand(p plan.Plan, s float64) (lo, hi float64) {
	band, ok := p.PredictionBand()
	if !ok {
		return 0, 0
	}
	return band.Step(s)
}

// planWithGoodput is a plan's JSON with its expected goodput.
type planWithGoodput struct {
	plan.JSON
	Goodput     goodputJSON      `json:"goodput"`
	Calibration *calibrationJSON `json:"temporaries_calibration,omitempty"`
	Verify      *export.Steps    `json:"verify,omitempty"`
}

// expectOf is the analytic goodput of a plan's chosen layout.
func expectOf(p plan.Plan, tokens float64) capacity.Expectation {
	m := p.Best.Estimate.Mesh
	chips := m.Chips()
	return capacity.Expect(capacity.JobOf(p), chips, m.Multislice.Hosts(), tokens)
}

// writeGoodputPlans writes the plans as writePlans does, each with its
// expected goodput.
func writeGoodputPlans(w io.Writer, plans []plan.Plan, adds []addenda, asJSON bool, tokens float64) error {
	doc := func(p plan.Plan, a addenda) planWithGoodput {
		e := expectOf(p, tokens)
		g := goodputJSON{Expectation: e, SaveS: e.Save.Seconds(), RestartS: e.Restart.Seconds(),
			IntervalS: e.Interval.Seconds(), TimeToTrainS: float64(e.TimeToTrain)}
		g.LowS, g.HighS = trainBand(p, g.TimeToTrainS)
		return planWithGoodput{JSON: p.JSON(flagName), Goodput: g, Calibration: a.note, Verify: a.verify}
	}
	return writePlans(w, plans, adds, asJSON, doc, func(w io.Writer, p plan.Plan) { writeGoodput(w, p, tokens) })
}

// writeGoodput writes the expected goodput of p's chosen layout, training
// tokens tokens.
func writeGoodput(w io.Writer, p plan.Plan, tokens float64) {
	e := expectOf(p, tokens)
	fmt.Fprintf(w, "\nGoodput (expected; shardlab capacity simulates %s):\n", capacity.Simulated())
	fmt.Fprintf(w, "  %.2f job failures a day over %s (Llama 3's rate per chip, an assumption), spares at hand\n",
		24*e.FailuresPerHour, unit.Plural(p.Best.Estimate.Mesh.Chips(), "chip"))
	fmt.Fprintf(w, "  checkpoint save %v, restart %v; checkpoint every %v of work (Daly)\n",
		unit.Seconds(e.Save.Seconds()), unit.Seconds(e.Restart.Seconds()), unit.Seconds(e.Interval.Seconds()))
	band := ""
	if lo, hi := trainBand(p, float64(e.TimeToTrain)); hi > 0 {
		band = fmt.Sprintf(" (%s to %s in the band)", days(lo), days(hi))
	}
	fmt.Fprintf(w, "  goodput %.1f%%: %.3g tokens in %s%s\n", 100*e.Goodput, e.Tokens, days(float64(e.TimeToTrain)), band)
}

// days spells a duration in days, or hours below two days.
func days(s float64) string {
	if s < 2*86400 {
		return fmt.Sprintf("%.1f hours", s/3600)
	}
	return fmt.Sprintf("%.1f days", s/86400)
}
