package validate

import (
	"fmt"
	"math"
	"time"

	"shardlab/cost"
	"shardlab/hw"
)

// Fit finds the cost model's calibration from the calibration rows, in
// these steps. Each generation's residual efficiency: for each of its
// single-slice calibration rows the efficiency at which the predicted MFU
// equals the published one (by bisection; MFU rises with it), then the
// median; and with it the contention of hidden collectives, the grid value
// whose fitted efficiencies leave the least mean |error| on those rows
// (fitContention). The quantized matmuls' efficiency: likewise, on the
// calibration rows that quantize. The dropless MoE width: likewise, on the
// dropless MoE calibration rows. The attention kernel's efficiency is not
// fitted: the single-slice rows, nearly all at 2k to 8k tokens, barely
// tell it apart from the residual efficiency (a fit on them picked 0.35
// and missed the one 128k-token run by 46 %); it stays at
// cost.Calibrated()'s value. The DCN latency and the slice jitter: the
// grid point that minimises the summed |error| of the multislice
// calibration rows' MFU ratio to their series' one-slice row (fitDCN).
// Efficiencies are rounded to 0.001, the grid values are exact.
func Fit(runs []Run) (cost.Calibration, error) {
	c := cost.Calibrated()
	cal := cost.Calibration{Attention: c.Attention, Quantized: 1, DCNLatency: c.DCNLatency, SliceJitter: c.SliceJitter}
	var single, multi, quant, dropless []Run
	for _, r := range runs {
		if !r.Calibration {
			continue
		}
		switch kindOf(r) {
		case kindDropless:
			dropless = append(dropless, r)
		case kindQuantized:
			quant = append(quant, r)
		case kindSingle:
			single = append(single, r)
		case kindMulti:
			multi = append(multi, r)
		}
	}
	err := fitContention(single, &cal)
	if err != nil {
		return cal, err
	}
	if cal.Quantized, err = fitQuantized(quant, &cal); err != nil {
		return cal, err
	}
	if cal.Dropless, err = fitDropless(dropless, &cal); err != nil {
		return cal, err
	}
	ones, err := seriesBases(runs, multi, &cal)
	if err != nil {
		return cal, err
	}
	cal.DCNLatency, cal.SliceJitter, err = fitDCN(runs, multi, ones, cal)
	return cal, err
}

// fitDCN is the DCN latency and slice jitter that minimise the summed
// |error| of the multislice calibration rows' MFU ratio to their series'
// one-slice row: a grid of latencies from 0 to 5 ms by 250 µs and jitters
// from 0 to 0.08 by 0.0025, then latencies by 25 µs and the neighbouring
// jitters around its best point. The range reaches 5 ms because with the
// data-parallel all-reduce overlapped (cost's overlap) the best latency
// lies above 1 ms, the earlier grid's end.
func fitDCN(runs, multi []Run, ones map[string]float64, cal cost.Calibration) (time.Duration, float64, error) {
	best := math.Inf(1)
	bestLatency, bestJitter := cal.DCNLatency, cal.SliceJitter
	try := func(lat time.Duration, jt float64) error {
		c := cal
		c.DCNLatency, c.SliceJitter = lat, math.Round(jt*10000)/10000
		rep, err := Evaluate(multi, &c)
		if err != nil {
			return err
		}
		var sum float64
		for _, r := range rep.Results {
			sum += math.Abs(r.Predicted/ones[seriesKey(r.Run)] - r.Run.Published.MFU/ones0(runs, r.Run))
		}
		if sum < best-1e-12 {
			best, bestLatency, bestJitter = sum, c.DCNLatency, c.SliceJitter
		}
		return nil
	}
	const coarse, fine, step = 250 * time.Microsecond, 25 * time.Microsecond, 0.0025
	for lat := time.Duration(0); lat <= 5*time.Millisecond; lat += coarse {
		for jt := 0.0; jt <= 0.0801; jt += step {
			if err := try(lat, jt); err != nil {
				return 0, 0, err
			}
		}
	}
	lat0, jt0 := bestLatency, bestJitter
	for lat := max(lat0-coarse, 0); lat <= lat0+coarse; lat += fine {
		for jt := max(jt0-2*step, 0); jt <= jt0+2*step+1e-9; jt += step {
			if err := try(lat, jt); err != nil {
				return 0, 0, err
			}
		}
	}
	return bestLatency, bestJitter, nil
}

// fitKind is which of Fit's constants a row's published MFU speaks to.
type fitKind int

const (
	kindSingle    fitKind = iota // dense, bf16, one slice: the efficiencies and the contention
	kindMulti                    // dense, bf16, several slices: the DCN latency and the slice jitter
	kindQuantized                // int8 or fp8: the quantized matmuls' efficiency
	kindDropless                 // a dropless mixture of experts: the grouped GEMMs' width
	kindOther                    // a dropping mixture of experts: no constant of its own
)

func kindOf(r Run) fitKind {
	switch {
	case r.Model.MoE() && r.CapacityFactor <= 0:
		return kindDropless
	case r.Model.MoE():
		return kindOther
	case r.Quantization != "":
		return kindQuantized
	case max(r.Slices, 1) == 1:
		return kindSingle
	}
	return kindMulti
}

// seriesKey names a multislice series: the rows that differ only in
// their slice count.
func seriesKey(r Run) string {
	return fmt.Sprintf("%s on %s, %g per device, %s", r.Model.Name, r.AcceleratorType, r.PerDeviceBatchSize, r.RematPolicy)
}

// seriesBases is the predicted MFU of each series' one-slice row.
func seriesBases(all, multi []Run, cal *cost.Calibration) (map[string]float64, error) {
	out := map[string]float64{}
	for _, m := range multi {
		k := seriesKey(m)
		if _, ok := out[k]; ok {
			continue
		}
		for _, r := range all {
			if seriesKey(r) == k && max(r.Slices, 1) == 1 {
				rep, err := Evaluate([]Run{r}, cal)
				if err != nil {
					return nil, err
				}
				out[k] = rep.Results[0].Predicted
			}
		}
		if _, ok := out[k]; !ok {
			return nil, fmt.Errorf("validate: %s: no one-slice row in its series: %w", m.ID, ErrInvalid)
		}
	}
	return out, nil
}

// ones0 is the published MFU of a run's series' one-slice row.
func ones0(all []Run, r Run) float64 {
	for _, x := range all {
		if seriesKey(x) == seriesKey(r) && max(x.Slices, 1) == 1 {
			return x.Published.MFU
		}
	}
	return r.Published.MFU
}

// fitQuantized is the quantized-matmul efficiency at which the quantized
// calibration rows' median error is zero (by bisection on each row, then
// the median), with the generations' efficiencies already fitted; 1 with
// no such rows.
func fitQuantized(rows []Run, cal *cost.Calibration) (float64, error) {
	if len(rows) == 0 {
		return 1, nil
	}
	// a higher efficiency predicts a higher MFU
	x, err := fitMedian(rows, cal, func(c *cost.Calibration, x float64) { c.Quantized = x }, 0.05, 1, 40, true)
	return math.Round(x*1000) / 1000, err
}

// fitDropless is the dropless per-row width (cost.Calibration.Dropless)
// at which the dropless MoE calibration rows' median error is zero (by
// bisection on each row, then the median, rounded to a whole width), with
// the generations' efficiencies already fitted; 0 with no such rows.
func fitDropless(rows []Run, cal *cost.Calibration) (float64, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	// a wider per-row overhead predicts a lower MFU
	x, err := fitMedian(rows, cal, func(c *cost.Calibration, x float64) { c.Dropless = x }, 0, 1e6, 60, false)
	return math.Round(x), err
}

// fitMedian bisects, for each row, the value in [lo, hi] that set puts
// into the calibration at which the row's predicted MFU equals its
// published one (iters halvings; rising says whether the prediction rises
// with the value), and returns the median of the rows' values.
func fitMedian(rows []Run, cal *cost.Calibration, set func(*cost.Calibration, float64), lo, hi float64, iters int, rising bool) (float64, error) {
	var xs []float64
	est := cost.NewEstimator()
	for _, r := range rows {
		j, m, err := r.setupWith(cal)
		if err != nil {
			return 0, err
		}
		a, b := lo, hi
		for range iters {
			mid := (a + b) / 2
			c := *cal
			set(&c, mid)
			j.Calibration = &c
			e, err := est.Estimate(j, m)
			if err != nil {
				return 0, fmt.Errorf("validate: %s: %w", r.ID, err)
			}
			if (r.predictedMFU(e) < r.Published.MFU) == rising {
				a = mid
			} else {
				b = mid
			}
		}
		xs = append(xs, (a+b)/2)
	}
	return median(xs), nil
}

// fitContention sets the contention and, with it, each generation's
// residual efficiency: for each contention on a grid (0 to 1 by 0.05, then
// by 0.01 around the best) the efficiencies are fitted on the single-slice
// rows, and the pair kept is the one whose mean |error| on those rows is
// least. The two are fitted together because each trades against the
// other: a row's collectives slow it only as much as its compute lets
// them hide, and the single-slice rows span 2 % to 26 % of their compute
// in hidden collectives.
func fitContention(single []Run, cal *cost.Calibration) error {
	best := math.Inf(1)
	var bestEff map[hw.Generation]float64
	var bestC float64
	try := func(c float64) error {
		k := *cal
		k.Contention = c
		eff, err := fitEfficiency(single, &k)
		if err != nil {
			return err
		}
		k.Efficiency = eff
		rep, err := Evaluate(single, &k)
		if err != nil {
			return err
		}
		var sum float64
		for _, r := range rep.Results {
			sum += math.Abs(r.Error)
		}
		if sum < best-1e-12 {
			best, bestEff, bestC = sum, eff, c
		}
		return nil
	}
	for i := 0; i <= 20; i++ {
		if err := try(float64(i) / 20); err != nil {
			return err
		}
	}
	mid := bestC
	for i := -4; i <= 4; i++ {
		if c := math.Round(mid*100+float64(i)) / 100; i != 0 && c >= 0 && c <= 1 {
			if err := try(c); err != nil {
				return err
			}
		}
	}
	cal.Contention, cal.Efficiency = bestC, bestEff
	return nil
}

func fitEfficiency(single []Run, cal *cost.Calibration) (map[hw.Generation]float64, error) {
	per := map[hw.Generation][]float64{}
	est := cost.NewEstimator()
	for _, r := range single {
		j, m, err := r.setupWith(cal)
		if err != nil {
			return nil, err
		}
		lo, hi := 0.05, 1.0
		for range 40 {
			mid := (lo + hi) / 2
			j.Efficiency = mid
			e, err := est.Estimate(j, m)
			if err != nil {
				return nil, fmt.Errorf("validate: %s: %w", r.ID, err)
			}
			if r.predictedMFU(e) < r.Published.MFU {
				lo = mid
			} else {
				hi = mid
			}
		}
		g := m.Multislice.Slice.Chip.Generation
		per[g] = append(per[g], (lo+hi)/2)
	}
	out := map[hw.Generation]float64{}
	for g, xs := range per {
		out[g] = math.Round(median(xs)*1000) / 1000
	}
	return out, nil
}
