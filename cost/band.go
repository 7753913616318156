package cost

import (
	"fmt"

	"shardlab/hw"
)

// ModelClass is a class of job the step-time model's error is measured
// on separately.
type ModelClass string

// The classes. Quantized is a job whose matmuls run in int8 or fp8,
// whatever its model; its rows count in their model's class too.
const (
	ClassDense     ModelClass = "dense"
	ClassMoE       ModelClass = "MoE"
	ClassQuantized ModelClass = "quantized"
)

// StepBand is how far the step-time model has been from published runs it
// was not fitted on: over the held-out rows of validate's run table
// (validate/runs.yaml, calibration: false) of one generation and class,
// the BandLow and BandHigh percentiles of the signed relative error of
// the predicted MFU, (predicted − published) / published, linearly
// interpolated between ranks, and how many rows that is. Generation ""
// pools every generation; Class "" every held-out row.
//
// A predicted MFU m with error e was the published m/(1+e), so a
// prediction's band is: step time T from T·(1+Low) to T·(1+High), MFU
// and tokens/s from m/(1+High) to m/(1+Low).
type StepBand struct {
	Generation hw.Generation
	Class      ModelClass
	Low, High  float64
	Rows       int
}

// The band's percentiles, and the fewest held-out rows a cell needs for a
// band of its own: with fewer the 10th and 90th percentiles are no more
// than the smallest and largest error. A cell with fewer rows falls back
// (Band): to its class over every generation, then, for a quantized job,
// to its model's class, then to every held-out row.
const (
	BandLow     = 0.10
	BandHigh    = 0.90
	BandMinRows = 8
)

// StepBands is the step-time model's measured error, by generation and
// class: what `shardlab validate` measures on the held-out rows, not
// chosen. validate's TestStepBands recomputes it from the table, so it
// changes only with the table or the model, and in the same commit.
var StepBands = []StepBand{
	{Generation: "", Class: "", Low: -0.0849, High: 0.1062, Rows: 47},
	{Generation: "", Class: ClassDense, Low: -0.0806, High: 0.103, Rows: 39},
	{Generation: "", Class: ClassMoE, Low: -0.1067, High: 0.1547, Rows: 8},
	{Generation: "", Class: ClassQuantized, Low: 0.0039, High: 0.0825, Rows: 3},
	{Generation: hw.V4, Class: ClassDense, Low: -0.0178, High: 0.0463, Rows: 2},
	{Generation: hw.V5e, Class: ClassDense, Low: -0.0901, High: 0.049, Rows: 12},
	{Generation: hw.V5p, Class: ClassDense, Low: -0.0468, High: 0.1655, Rows: 11},
	{Generation: hw.V6e, Class: ClassDense, Low: -0.0305, High: 0.0758, Rows: 8},
	{Generation: hw.TPU7x, Class: ClassDense, Low: -0.0154, High: 0.0875, Rows: 6},
	{Generation: hw.V5p, Class: ClassMoE, Low: -0.0132, High: 0.3229, Rows: 3},
	{Generation: hw.V6e, Class: ClassMoE, Low: -0.1393, High: -0.0106, Rows: 3},
	{Generation: hw.TPU7x, Class: ClassMoE, Low: -0.0273, High: -0.0205, Rows: 2},
	{Generation: hw.TPU7x, Class: ClassQuantized, Low: 0.0039, High: 0.0825, Rows: 3},
}

// Class is j's model class, ignoring quantization.
func (j Job) Class() ModelClass {
	if j.Model.MoE() {
		return ClassMoE
	}
	return ClassDense
}

// Band is the measured band for j on generation g: BandIn(StepBands, g).
func (j Job) Band(g hw.Generation) StepBand { return j.BandIn(StepBands, g) }

// BandIn is the band for j on generation g in table: the first of these
// cells with at least BandMinRows held-out rows — g and the quantized
// class (a quantized job whose matmuls are quantized: not an MoE job
// whose routed experts stay in bf16, UnquantizedExperts), the quantized
// class, g and j's model class, j's model class, every held-out row. The
// zero StepBand, when the table has none of them.
func (j Job) BandIn(table []StepBand, g hw.Generation) StepBand {
	type cell struct {
		g hw.Generation
		c ModelClass
	}
	var chain []cell
	if j.Quantization != QuantNone && !j.UnquantizedExperts() {
		chain = append(chain, cell{g, ClassQuantized}, cell{"", ClassQuantized})
	}
	chain = append(chain, cell{g, j.Class()}, cell{"", j.Class()}, cell{"", ""})
	for _, c := range chain {
		if b, ok := lookupBand(table, c.g, c.c); ok && b.Rows >= BandMinRows {
			return b
		}
	}
	return StepBand{}
}

// BandCell is StepBands' cell of generation g and class c, which may
// have fewer than BandMinRows rows; false when the table has none.
func BandCell(g hw.Generation, c ModelClass) (StepBand, bool) { return lookupBand(StepBands, g, c) }

func lookupBand(table []StepBand, g hw.Generation, c ModelClass) (StepBand, bool) {
	for _, b := range table {
		if b.Generation == g && b.Class == c {
			return b, true
		}
	}
	return StepBand{}, false
}

// Step is the band of a predicted step time (or any time that scales with
// it, as time to train does).
func (b StepBand) Step(t float64) (lo, hi float64) { return t * (1 + b.Low), t * (1 + b.High) }

// Rate is the band of a predicted rate (MFU, tokens/s).
func (b StepBand) Rate(r float64) (lo, hi float64) { return r / (1 + b.High), r / (1 + b.Low) }

// Width is how much faster one prediction must be than another for the
// faster to be faster whatever either's error in the band: the first's
// rate could be High too high while the second's is Low too low, so
// (1+High)/(1+Low) − 1.
func (b StepBand) Width() float64 { return (1+b.High)/(1+b.Low) - 1 }

// Runs names the band's rows: "dense tpu7x runs", "MoE runs of every
// generation", "runs of every class and generation".
func (b StepBand) Runs() string {
	switch {
	case b.Class == "" && b.Generation == "":
		return "runs of every class and generation"
	case b.Generation == "":
		return fmt.Sprintf("%s runs of every generation", b.Class)
	}
	return fmt.Sprintf("%s %s runs", b.Class, b.Generation)
}
