package web

import (
	"shardlab/capacity"
	"shardlab/plan"
)

// goodputView is a plan's expected goodput (capacity.Expect) as the page
// shows it.
type goodputView struct {
	FailuresPerDay          float64
	SaveS, RestartS, EveryS float64
	Goodput                 float64
	Tokens, DaysToTrain     float64
	// DaysLow and DaysHigh are the time to train at the ends of the
	// plan's error band (it scales with the step); 0 without a band.
	DaysLow, DaysHigh float64
}

// goodputOf is the analytic goodput of p's chosen layout for 1e12 tokens.
func goodputOf(p plan.Plan) goodputView {
	m := p.Best.Estimate.Mesh
	chips := m.Chips()
	e := capacity.Expect(capacity.JobOf(p), chips, m.Multislice.Hosts(), 1e12)
	v := goodputView{FailuresPerDay: 24 * e.FailuresPerHour, SaveS: e.Save.Seconds(), RestartS: e.Restart.Seconds(),
		EveryS: e.Interval.Seconds(), Goodput: e.Goodput, Tokens: e.Tokens, DaysToTrain: e.TimeToTrain.Hours() / 24}
	if band, ok := p.PredictionBand(); ok {
		v.DaysLow, v.DaysHigh = band.Step(v.DaysToTrain)
	}
	return v
}
