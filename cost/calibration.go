package cost

import (
	"maps"
	"math"
	"time"

	"shardlab/hw"
)

// Calibration holds the few constants the cost model fits rather than
// derives. Each is fitted by package validate on named rows of the
// published-run table (validate.Fit; `shardlab validate --fit` prints
// them), and the error is reported on the other rows.
type Calibration struct {
	// Efficiency is the residual efficiency per chip generation: the one
	// constant each generation gets, for what the model does not see op by
	// op (vector and transpose work XLA does not fuse away, kernel
	// scheduling gaps). Fitted on the single-slice calibration rows.
	Efficiency map[hw.Generation]float64
	// Attention is the flash attention kernel's rate relative to the
	// matmuls' on the same shapes: its softmax runs on the vector units
	// between the two MXU products. One constant for every generation;
	// held at 1 (the kernel as efficient as the matmuls of its shapes)
	// because the published runs do not separate it from the residual
	// efficiency (validate.Fit says why).
	Attention float64
	// Quantized is the fraction of the int8 or fp8 peak's advantage the
	// quantized matmuls keep, relative to bf16 ones on the same shapes:
	// scaling, casting and amax bookkeeping around every quantized matmul.
	// One constant for both formats and every generation.
	Quantized float64
	// DCNLatency is the fixed cost of one ring step across slices: a
	// transfer from a TPU to its host, over the data-center network, and
	// into the other slice's TPU ("TPU chips in different slices communicate
	// by transferring data to CPUs (hosts) which in turn transmit the data
	// over the data-center network", Cloud TPU Multislice overview). The
	// bandwidth is the line rate, hw.Chip.DCNPerChip. Fitted (2.35 ms), it
	// is far above a network round trip: it stands for all that a ring step
	// across slices costs beyond its bytes at the line rate (host staging,
	// the multislice runtime's synchronisation), which the published
	// multislice series do not take apart.
	DCNLatency time.Duration
	// SliceJitter is the coefficient of variation of one slice's step time
	// (input pipeline, host noise, DCN congestion). A multislice step ends
	// in a barrier across the slices, so it lasts as long as the slowest:
	// T·(1 + SliceJitter·E[max of n standard normals]).
	SliceJitter float64
	// Dropless is the work a dropless mixture of experts (MaxText's
	// sparse_matmul with megablox, or tokamax's ragged grouped GEMM) does
	// per routed row beyond its experts' GEMMs — the token sort, the
	// permutation into expert order and back, the combine — that the
	// op-by-op model does not see, as a width: each routed row costs the
	// GEMMs of an expert Dropless wide, so relative to the row's expert
	// GEMMs (d_model × expert d_ff) it is Dropless / expert d_ff: the work
	// is per row and d_model wide, and wider experts hide it. One
	// constant for every generation, fitted on the dropless MoE
	// calibration rows; 0 means none.
	Dropless float64
	// Contention is the share of the chip an ICI collective takes while it
	// hides under compute: the compute it overlaps runs that much slower
	// for as long as the collective lasts, so a hidden collective of time
	// c adds Contention·c to the step. On TPU the overlapped collectives
	// are async collective fusions that run on the TensorCore beside the
	// compute (MaxText's scripts set LIBTPU_INIT_ARGS
	// --xla_tpu_enable_async_collective_fusion=true and
	// --xla_tpu_overlap_compute_collective_tc=true); their DMAs share HBM
	// with it and a reduce-scatter's sums run on its vector units. The
	// form is Calculon's processor_usage, "overlap slows compute by the
	// share of the processor used by communication" (Isaev et al., SC'23;
	// ../shared/reference/perf-models-and-formulas.md §1). One constant
	// for every generation, fitted on the single-slice calibration rows
	// with their efficiencies (validate.Fit).
	Contention float64
}

// Calibrated is the calibration the planner uses: the output of
// validate.Fit on the built-in table (a test holds the two equal). It is
// a copy: changing it changes nothing the planner does (a job takes its
// own through Job.Calibration).
func Calibrated() Calibration {
	c := calibrated
	c.Efficiency = maps.Clone(calibrated.Efficiency)
	return c
}

// calibrated is what Calibrated copies.
var calibrated = Calibration{
	Efficiency:  map[hw.Generation]float64{hw.TPU7x: 0.723, hw.V4: 0.754, hw.V5e: 0.804, hw.V5p: 0.785, hw.V6e: 0.656},
	Attention:   1,
	Quantized:   0.875,
	DCNLatency:  2350 * time.Microsecond,
	SliceJitter: 0.05,
	Dropless:    2124,
	Contention:  0.28,
}

// DefaultEfficiency is the residual efficiency for a generation with no
// calibration rows.
const DefaultEfficiency = 0.7

func (j *Job) calibration() *Calibration {
	if j.Calibration != nil {
		return j.Calibration
	}
	return &calibrated
}

// EfficiencyFor is the residual efficiency the job assumes on chip: the
// job's own when set, else the generation's calibrated value.
func (j Job) EfficiencyFor(chip hw.Chip) float64 { return j.efficiency(&chip) }

// efficiency is EfficiencyFor, the job and chip read in place.
func (j *Job) efficiency(chip *hw.Chip) float64 {
	if j.Efficiency > 0 {
		return j.Efficiency
	}
	if e, ok := j.calibration().Efficiency[chip.Generation]; ok {
		return e
	}
	return DefaultEfficiency
}

// ExpectedMaxNormal is E[max of n independent standard normals], by
// integrating x·n·φ(x)·Φ(x)^(n−1) with Simpson's rule; 0 for n ≤ 1.
func ExpectedMaxNormal(n int) float64 {
	if n <= 1 {
		return 0
	}
	const lo, hi, steps = -10.0, 10.0, 4000
	h := (hi - lo) / steps
	f := func(x float64) float64 {
		phi := math.Exp(-x*x/2) / math.Sqrt(2*math.Pi)
		cdf := 0.5 * math.Erfc(-x/math.Sqrt2)
		return x * float64(n) * phi * math.Pow(cdf, float64(n-1))
	}
	sum := f(lo) + f(hi)
	for i := 1; i < steps; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		sum += w * f(lo+float64(i)*h)
	}
	return sum * h / 3
}
