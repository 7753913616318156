package validate

import (
	"fmt"
	"math/rand/v2"
	"time"

	"shardlab/inference"
)

// ServingEngine is the simulator's engine of a row's engine.
func (r ServingRow) ServingEngine() inference.Engine {
	if r.Engine == EngineJetStreamPyTorch {
		return inference.JetStream
	}
	return inference.VLLM
}

// maxStepOverhead bounds the fit: a fixed time a step beyond it would be
// a tenth of a second.
const maxStepOverhead = 100 * time.Millisecond

// FitStepOverhead fits engine's fixed time a step on the rows marked
// calibration of that engine, and on nothing else: the smallest time of
// 0 or more, to 0.1 ms, at which the median of their signed throughput
// errors is at most 0 (the throughput falls as the time grows, so it is
// found by bisection). A fixed time cannot be negative: when the rows
// are under-predicted with none, the fit is 0. It also returns the rows
// it was fitted on.
func FitStepOverhead(rows []ServingRow, engine inference.Engine) (time.Duration, []string, error) {
	var calib []ServingRow
	var ids []string
	for _, r := range rows {
		if r.Calibration && r.NotModelled == "" && r.Model != "" && r.ServingEngine() == engine {
			calib = append(calib, r)
			ids = append(ids, r.ID)
		}
	}
	if len(calib) == 0 {
		return 0, nil, fmt.Errorf("validate: no calibration rows of engine %v to fit its step time on", engine)
	}
	medianErr := func(h time.Duration) (float64, error) {
		var errs []float64
		for _, r := range calib {
			req, err := r.Request()
			if err != nil {
				return 0, servingTable.rowError(r.ID, err)
			}
			o := r.SimOptions()
			o.StepOverhead = &h
			sim, err := inference.Simulate(req, inference.Estimate(req, r.TP, r.DP), o, rand.New(rand.NewPCG(ServingSeed, 0)))
			if err != nil {
				return 0, servingTable.rowError(r.ID, err)
			}
			errs = append(errs, (sim.TokensPerSecond-r.Published.OutputTokensPerS)/r.Published.OutputTokensPerS)
		}
		return median(errs), nil
	}
	const step = 100 * time.Microsecond
	e, err := medianErr(0)
	if err != nil || e <= 0 {
		return 0, ids, err
	}
	lo, hi := 0, int(maxStepOverhead/step) // in steps: error > 0 at lo, ≤ 0 at hi
	if e, err = medianErr(maxStepOverhead); err != nil || e > 0 {
		return 0, ids, fmt.Errorf("validate: engine %v's calibration rows are over-predicted even at a step time of %v (median error %+.1f%%)", engine, maxStepOverhead, 100*e)
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		e, err := medianErr(time.Duration(mid) * step)
		if err != nil {
			return 0, ids, err
		}
		if e > 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return time.Duration(hi) * step, ids, nil
}
