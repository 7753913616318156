package cost

import "shardlab/hw"

// Calibrated is the residual efficiency per chip generation: the one
// constant each generation gets, for what the model does not see op by op
// (vector and transpose work XLA does not fuse away, kernel scheduling
// gaps, the attention kernel's own losses). It is fitted by
// `shardlab validate --fit` on the calibration rows of the published-run
// table (package validate names them); the other rows measure the error.
// A generation with no published MaxText run takes DefaultEfficiency.
var Calibrated = map[hw.Generation]float64{}

// DefaultEfficiency is the residual efficiency for a generation with no
// calibration rows: the mean of the calibrated generations.
const DefaultEfficiency = 0.7

// EfficiencyFor is the residual efficiency the job assumes on chip: the
// job's own when set, else the generation's calibrated value.
func (j Job) EfficiencyFor(chip hw.Chip) float64 {
	if j.Efficiency > 0 {
		return j.Efficiency
	}
	if e, ok := Calibrated[chip.Generation]; ok {
		return e
	}
	return DefaultEfficiency
}

func (j Job) efficiency(chip hw.Chip) float64 { return j.EfficiencyFor(chip) }
