package validate

import (
	"math"
	"sort"

	"shardlab/cost"
	"shardlab/hw"
)

// StepBands measures the step-time model's error band on the report's
// held-out rows (calibration: false), cell by cell: every held-out row;
// each class over every generation (dense and MoE by model, and the
// quantized rows, which count in their model's class too); and each
// generation within each class. A cell's band is the cost.BandLow and
// cost.BandHigh percentiles of its rows' signed MFU error, linearly
// interpolated between ranks and rounded to 0.0001. Every cell with a row
// is listed, with its count; cost.Job.Band uses only those with
// cost.BandMinRows rows or more. cost.StepBands holds the result for the
// built-in table (TestStepBands).
func StepBands(rep Report) []cost.StepBand {
	type key struct {
		g hw.Generation
		c cost.ModelClass
	}
	errs := map[key][]float64{}
	for _, r := range rep.Results {
		if r.Run.Calibration || r.Run.Prospective {
			continue
		}
		g := r.Estimate.Mesh.Multislice.Slice.Chip.Generation
		classes := []cost.ModelClass{r.Estimate.Job.Class()}
		if r.Estimate.Job.Quantization != cost.QuantNone {
			classes = append(classes, cost.ClassQuantized)
		}
		errs[key{}] = append(errs[key{}], r.Error)
		for _, c := range classes {
			errs[key{"", c}] = append(errs[key{"", c}], r.Error)
			errs[key{g, c}] = append(errs[key{g, c}], r.Error)
		}
	}
	order := map[hw.Generation]int{"": -1}
	for i, c := range hw.Chips() {
		order[c.Generation] = i
	}
	rank := map[cost.ModelClass]int{"": 0, cost.ClassDense: 1, cost.ClassMoE: 2, cost.ClassQuantized: 3}
	var out []cost.StepBand
	for k, xs := range errs {
		out = append(out, cost.StepBand{Generation: k.g, Class: k.c, Rows: len(xs),
			Low: round4(interpolated(xs, cost.BandLow)), High: round4(interpolated(xs, cost.BandHigh))})
	}
	sort.Slice(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if (x.Generation == "") != (y.Generation == "") {
			return x.Generation == ""
		}
		if rank[x.Class] != rank[y.Class] {
			return rank[x.Class] < rank[y.Class]
		}
		return order[x.Generation] < order[y.Generation]
	})
	return out
}

// interpolated is the q-quantile of xs, linearly interpolated between the
// ranks of the sorted values (numpy's default, Hyndman and Fan's type 7).
func interpolated(xs []float64, q float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	h := q * float64(len(s)-1)
	i := int(math.Floor(h))
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (h-float64(i))*(s[i+1]-s[i])
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
