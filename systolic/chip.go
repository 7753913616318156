package systolic

import (
	"fmt"

	"shardlab/hw"
	"shardlab/unit"
)

// Preset is a chip's matrix units as the catalog describes them (package
// hw cites each): TPU v3 has two 128x128 MXUs per TensorCore, v4 and v5p
// four, v5e four, v6e two 256x256, TPU7x 256x256 in a number not published.
type Preset struct {
	Chip hw.Chip
	// MXUs per chip; when the catalog does not publish the count, one per
	// TensorCore is assumed and Assumed is set.
	MXUs       int
	Assumed    bool
	Rows, Cols int
	// ClockHz is the MXU clock implied by the chip's peak: peak bf16 FLOP/s
	// over 2 FLOPs per MAC and MXUs·Rows·Cols MACs per cycle.
	ClockHz float64
}

// PresetFor returns the chip's MXU preset.
func PresetFor(c hw.Chip) Preset {
	p := Preset{Chip: c, MXUs: c.MXUs(), Rows: c.MXUDim, Cols: c.MXUDim}
	if p.MXUs == 0 {
		p.MXUs, p.Assumed = c.TensorCores, true
	}
	p.ClockHz = float64(c.PeakBF16) / (2 * float64(p.MXUs) * float64(p.Rows*p.Cols))
	return p
}

// HBMBytesPerCycle is the chip's HBM bandwidth shared by its MXUs, in
// bytes per MXU cycle: what one Array may read and write.
func (p Preset) HBMBytesPerCycle() float64 {
	return float64(p.Chip.HBMBandwidth) / float64(p.MXUs) / p.ClockHz
}

// Array is one of the preset's MXUs: weight stationary with double-buffered
// weights, bf16 operands.
func (p Preset) Array() Array {
	return Array{Rows: p.Rows, Cols: p.Cols, Dataflow: WeightStationary, DoubleBuffer: true, ElementBytes: 2}
}

func (p Preset) String() string {
	s := fmt.Sprintf("%s: %s of %dx%d at %.2f GHz", p.Chip.Name, unit.Plural(p.MXUs, "MXU"), p.Rows, p.Cols, p.ClockHz/1e9)
	if p.Assumed {
		s += "; the MXU count is not published: one per TensorCore is assumed, and the clock is the peak over it"
	}
	return s
}

// Efficiency is the share of the chip's MXU capacity a GEMM uses: useful
// MACs over MXUs·Rows·Cols·cycles, with the GEMM's folds spread over the
// chip's MXUs (closed form, weight stationary, double-buffered). It falls
// below 1 for padding (dimensions that are not multiples of the array),
// fill and drain, and too few folds to keep every MXU busy.
func (p Preset) Efficiency(g GEMM) (float64, error) {
	r, err := ClosedForm(p.Array(), g)
	if err != nil {
		return 0, err
	}
	perMXU := ceilDiv(r.Folds, p.MXUs)
	cycles := float64(r.Cycles) * float64(perMXU) / float64(r.Folds)
	return float64(r.MACs) / (float64(p.MXUs) * float64(p.Rows*p.Cols) * cycles), nil
}

// Cycles is the GEMM's duration on the chip in MXU cycles, folds spread
// over its MXUs.
func (p Preset) Cycles(g GEMM) (float64, Result, error) {
	r, err := ClosedForm(p.Array(), g)
	if err != nil {
		return 0, r, err
	}
	return float64(r.Cycles) * float64(ceilDiv(r.Folds, p.MXUs)) / float64(r.Folds), r, nil
}
