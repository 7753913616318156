// Package validate holds shardlab's cost model against training runs that
// Google has published for MaxText on Cloud TPU: a table of runs, each with
// its source (repository, file and commit), model dimensions, layout,
// batch, remat policy, precision and the MFU it reached; and the error
// report of package cost costed on exactly those settings. Some rows
// calibrate the one residual efficiency each chip generation gets
// (cost.Calibrated()); the error is reported on the others.
package validate

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/maxtext"
	"shardlab/mesh"
)

//go:embed runs.yaml
var runsYAML []byte

// Source says where a run was published.
type Source struct {
	Repo         string `yaml:"repo" json:"repo"`
	Path         string `yaml:"path" json:"path"`
	Commit       string `yaml:"commit" json:"commit"`
	ConfigPath   string `yaml:"config_path,omitempty" json:"config_path,omitempty"`
	ConfigCommit string `yaml:"config_commit,omitempty" json:"config_commit,omitempty"`
}

// Layout is MaxText's ici_* and dcn_* parallelism as the run set it, in
// JAX devices (on TPU7x a chip is two devices).
type Layout struct {
	ICIData     int `yaml:"ici_data" json:"ici_data"`
	ICIFSDP     int `yaml:"ici_fsdp" json:"ici_fsdp"`
	ICITensor   int `yaml:"ici_tensor" json:"ici_tensor"`
	ICISequence int `yaml:"ici_sequence" json:"ici_sequence"`
	ICIContext  int `yaml:"ici_context" json:"ici_context"`
	ICIPipeline int `yaml:"ici_pipeline" json:"ici_pipeline"`
	DCNData     int `yaml:"dcn_data" json:"dcn_data"`
	DCNFSDP     int `yaml:"dcn_fsdp" json:"dcn_fsdp"`
	DCNPipeline int `yaml:"dcn_pipeline" json:"dcn_pipeline"`
	ICIExpert   int `yaml:"ici_expert,omitempty" json:"ici_expert,omitempty"`
	DCNExpert   int `yaml:"dcn_expert,omitempty" json:"dcn_expert,omitempty"`
}

// Published is what the run's source reports.
type Published struct {
	MFU float64 `yaml:"mfu" json:"mfu"`
	// MFUSource is "published" (the source gives the MFU) or "tflops" (the
	// published TFLOP/s per chip over the chip's bf16 peak).
	MFUSource string `yaml:"mfu_source" json:"mfu_source"`
	// FLOPsConvention is how MaxText counted attention in the MFU when the
	// number was made: none (6N), full or causal (halved).
	FLOPsConvention   string  `yaml:"flops_convention" json:"flops_convention"`
	StepTimeS         float64 `yaml:"step_time_s,omitempty" json:"step_time_s,omitempty"`
	TokensPerSPerChip float64 `yaml:"tokens_per_s_per_chip,omitempty" json:"tokens_per_s_per_chip,omitempty"`
	TFLOPsPerDevice   float64 `yaml:"tflops_per_device,omitempty" json:"tflops_per_device,omitempty"`
	TFLOPsPerChip     float64 `yaml:"tflops_per_chip,omitempty" json:"tflops_per_chip,omitempty"`
}

// attentionShare is the share of the full attention FLOPs a convention
// counts.
func (p Published) attentionShare() (float64, error) {
	switch p.FLOPsConvention {
	case "none":
		return 0, nil
	case "full":
		return 1, nil
	case "causal":
		return 0.5, nil
	}
	return 0, fmt.Errorf("flops_convention = %q, want none, full or causal: %w", p.FLOPsConvention, ErrInvalid)
}

// Run is one published training run.
type Run struct {
	ID     string `yaml:"id" json:"id"`
	Source Source `yaml:"source" json:"source"`
	// Config is the run's model, hardware, layout, batch and settings.
	Config      `yaml:",inline"`
	Doubtful    string         `yaml:"doubtful,omitempty" json:"doubtful,omitempty"`
	OtherFlags  map[string]any `yaml:"other_flags,omitempty" json:"-"`
	Published   Published      `yaml:"published" json:"published"`
	Calibration bool           `yaml:"calibration" json:"calibration"`
	// Prospective marks a row added after the calibration constants were
	// frozen (2026-12-05): never fitted, and scored as its own set, not
	// with the held-out rows the constants were chosen against.
	Prospective bool `yaml:"prospective,omitempty" json:"prospective,omitempty"`
	// BatchTuned is the evidence on how the recipe chose its
	// per_device_batch_size (nil: unknown).
	BatchTuned *BatchTuning `yaml:"batch_tuned,omitempty" json:"batch_tuned,omitempty"`
	Notes      string       `yaml:"notes,omitempty" json:"notes,omitempty"`
}

// Runs is the built-in table.
func Runs() ([]Run, error) { return Parse(runsYAML) }

// ErrInvalid is wrapped by errors in a table.
var ErrInvalid = errors.New("invalid run table")

// Parse reads a table of runs (YAML). Unknown fields are errors.
func Parse(data []byte) ([]Run, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var runs []Run
	if err := dec.Decode(&runs); err != nil {
		return nil, fmt.Errorf("validate: %s: %w", strings.ReplaceAll(err.Error(), "\n", "; "), ErrInvalid)
	}
	seen := map[string]bool{}
	for i := range runs {
		r := &runs[i]
		if r.ID == "" || seen[r.ID] {
			return nil, fmt.Errorf("validate: row %d: id %q, want a unique id: %w", i+1, r.ID, ErrInvalid)
		}
		seen[r.ID] = true
		if _, _, err := r.Setup(); err != nil {
			return nil, fmt.Errorf("validate: %s: %w", r.ID, err)
		}
		if r.Calibration && r.Prospective {
			return nil, fmt.Errorf("validate: %s: calibration and prospective both true, want at most one (a prospective row is never fitted): %w", r.ID, ErrInvalid)
		}
		if r.BatchTuned != nil {
			if err := r.BatchTuned.check(); err != nil {
				return nil, fmt.Errorf("validate: %s: %w", r.ID, err)
			}
		}
		if !(r.Published.MFU > 0 && r.Published.MFU < 1) {
			return nil, fmt.Errorf("validate: %s: published mfu %v, want a fraction in (0, 1): %w", r.ID, r.Published.MFU, ErrInvalid)
		}
	}
	return runs, nil
}

// Setup is the run as package cost sees it: the job and the mesh, in
// chips. MaxText's layout counts JAX devices; where a chip is several
// devices (TPU7x: two TensorCores), the extra factor comes off the axis
// package maxtext puts it on (maxtext.Chips).
func (r Run) Setup() (cost.Job, mesh.Mesh, error) {
	j, err := r.job()
	if err != nil {
		return cost.Job{}, mesh.Mesh{}, err
	}
	m, err := r.mesh(j)
	if err != nil {
		return cost.Job{}, mesh.Mesh{}, err
	}
	if m.Size(mesh.Pipeline) > 1 {
		j.MicroBatches = m.Size(mesh.Pipeline)
	}
	return j, m, nil
}

func bad(field string, v any, want string) error {
	return fmt.Errorf("%s = %v, want %s: %w", field, v, want, ErrInvalid)
}

// mesh lays the run's MaxText layout out on its slices, for job j.
// MaxText counts JAX devices; where a chip is several devices, package
// maxtext takes the chip's factor off the axis export would have put it on
// (maxtext.Chips), so a config export wrote reads back as its plan.
func (r Run) mesh(j cost.Job) (mesh.Mesh, error) {
	s, err := hw.ParseAcceleratorType(r.AcceleratorType)
	if err != nil {
		return mesh.Mesh{}, err
	}
	ms, err := hw.NewMultislice(s, max(r.Slices, 1), 0)
	if err != nil {
		return mesh.Mesh{}, err
	}
	l := r.Layout
	var devices maxtext.Factors
	devices[mesh.Data], devices[mesh.FSDP], devices[mesh.Tensor], devices[mesh.Pipeline] = l.ICIData, l.ICIFSDP, l.ICITensor, l.ICIPipeline
	devices[mesh.Context] = max(l.ICISequence, 1) * max(l.ICIContext, 1)
	devices[mesh.Expert] = l.ICIExpert
	for i := range devices {
		devices[i] = max(devices[i], 1)
	}
	var dcn maxtext.Factors
	dcn[mesh.Data], dcn[mesh.FSDP], dcn[mesh.Pipeline], dcn[mesh.Expert] = l.DCNData, l.DCNFSDP, l.DCNPipeline, l.DCNExpert
	build := func(ici maxtext.Factors) (mesh.Mesh, error) {
		axes := make([]mesh.Degree, mesh.NumAxes)
		for _, a := range mesh.All() {
			axes[a] = mesh.Degree{Axis: a, ICI: ici[a], DCN: max(dcn[a], 1)}
		}
		return mesh.New(ms, axes...)
	}
	per := s.Chip.JAXDevicesPerChip
	chips, _, err := maxtext.Chips(devices, r.SeqLen, per, func(c maxtext.Factors) (int, error) {
		m, err := build(c)
		if err != nil {
			return 0, err
		}
		jm := j
		if m.Size(mesh.Pipeline) > 1 {
			jm.MicroBatches = m.Size(mesh.Pipeline)
		}
		return cost.MicroBatchSize(jm, m)
	})
	if err != nil {
		return mesh.Mesh{}, bad("layout", fmt.Sprintf("%+v", l), fmt.Sprintf("ici fsdp, context or data a multiple of the %d devices per chip", per))
	}
	return build(chips)
}

// job is the run's model, batch, remat, precision and kernels as a cost
// job.
func (r Run) job() (cost.Job, error) {
	spec := r.Model
	if spec.SeqLen == 0 {
		spec.SeqLen = r.SeqLen
	}
	if err := spec.Validate(); err != nil {
		return cost.Job{}, err
	}
	if r.GlobalBatch <= 0 {
		return cost.Job{}, bad("global_batch_sequences", r.GlobalBatch, "a positive number of sequences")
	}
	j := cost.NewJob(spec, r.SeqLen, r.GlobalBatch)
	// The planner's usable-HBM rule (cost.DefaultHBMHeadroom): what ran
	// must fit by the rule a plan is held to.
	j.HBMHeadroom = cost.DefaultHBMHeadroom
	var err error
	if j.Remat, err = cost.ParseRemat(r.RematPolicy); err != nil {
		return cost.Job{}, err
	}
	if j.Custom, err = cost.ParseCustom(r.RematCustom); err != nil {
		return cost.Job{}, err
	}
	w, err := dtypeBytes("weight_dtype", r.WeightDType, 4)
	if err != nil {
		return cost.Job{}, err
	}
	mu, err := dtypeBytes("mu_dtype", r.MuDType, w)
	if err != nil {
		return cost.Job{}, err
	}
	// Gradients take the parameters' dtype; Adam's nu too, and mu its own
	// (MaxText base.yml: mu_dtype "inherits from weight_dtype if unset").
	j.Precision = cost.Precision{Weight: w, Gradient: w, Optimizer: mu + w, Activation: 2}
	switch r.OptType {
	case "", "adamw", "adam_pax":
	case "sgd":
		// MaxText's opt_type sgd is optax.sgd(learning_rate) without
		// momentum (optimizers/optimizers.py @e591f30c): no state.
		j.Precision.Optimizer = 0
	default:
		return cost.Job{}, bad("opt_type", r.OptType, "adamw, adam_pax or sgd (MaxText's opt_type; unset: adamw)")
	}
	if j.Quantization, err = cost.ParseQuantization(r.Quantization); err != nil {
		return cost.Job{}, err
	}
	j.OptimizerOffload, j.ParameterOffload = r.OptimizerOffload, r.ParameterOffload
	j.VocabTiles = max(r.VocabTiles, 1)
	if _, err := r.Published.attentionShare(); err != nil {
		return cost.Job{}, err
	}
	switch cf := r.CapacityFactor; {
	case math.IsNaN(cf) || math.IsInf(cf, 0) || cf > 64 || (cf < 0 && cf != -1):
		return cost.Job{}, bad("capacity_factor", cf, "-1 or 0 (dropless) or a factor in (0, 64]")
	case cf > 0 && !spec.MoE():
		return cost.Job{}, bad("capacity_factor", cf, "unset for a dense model")
	case cf > 0:
		j.CapacityFactor = cf
	}
	switch r.Attention {
	case "", "flash":
	case "dot_product":
		j.Attention = cost.AttentionDot
	case "flash_noncausal":
		j.Attention = cost.AttentionFlashNonCausal
	default:
		return cost.Job{}, bad("attention", r.Attention, "flash, flash_noncausal or dot_product")
	}
	return j, nil
}

// dtypeBytes reads a MaxText dtype name; "" is def.
func dtypeBytes(field, s string, def int) (int, error) {
	switch strings.ToLower(s) {
	case "":
		return def, nil
	case "float32", "fp32":
		return 4, nil
	case "bfloat16", "bf16":
		return 2, nil
	}
	return 0, fmt.Errorf("%s = %q, want float32 or bfloat16: %w", field, s, ErrInvalid)
}

// predictedMFU is the estimate's MFU in the FLOP convention the run's
// number was made in.
func (r Run) predictedMFU(e cost.Estimate) float64 {
	share, _ := r.Published.attentionShare() // Setup checked it
	spec := e.Job.Model
	tokens := float64(e.Job.GlobalBatch) * float64(e.Job.Seq)
	flops := (6*float64(spec.MatmulParams()) + 3*share*spec.AttentionFLOPsPerToken(e.Job.Seq)) * tokens
	chip := e.Mesh.Multislice.Slice.Chip
	return flops / (float64(chip.PeakBF16) * float64(e.Mesh.Chips()) * e.Time.Step.Seconds())
}

// Result is one run costed.
type Result struct {
	Run       Run
	Estimate  cost.Estimate
	Predicted float64 // MFU, in the run's published convention
	// Error is (predicted − published) / published.
	Error float64
}

// Report is the error of cost against the table.
type Report struct {
	Results []Result
}

// Evaluate costs every run on its published layout with the given
// calibration (nil: cost.Calibrated()).
func Evaluate(runs []Run, cal *cost.Calibration) (Report, error) {
	var rep Report
	est := cost.NewEstimator()
	for _, r := range runs {
		j, m, err := r.Setup()
		if err != nil {
			return rep, fmt.Errorf("validate: %s: %w", r.ID, err)
		}
		j.Calibration = cal
		e, err := est.Estimate(j, m)
		if err != nil {
			return rep, fmt.Errorf("validate: %s: %w", r.ID, err)
		}
		mfu := r.predictedMFU(e)
		rep.Results = append(rep.Results, Result{Run: r, Estimate: e, Predicted: mfu, Error: (mfu - r.Published.MFU) / r.Published.MFU})
	}
	return rep, nil
}

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
// cost.Calibrated()'s value. The DCN latency (0 to 1 ms by 25 µs) and the
// slice jitter: the grid point that minimises the mean |error| of the
// multislice calibration rows' MFU ratio to their series' one-slice row.
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
	best := math.Inf(1)
	bestLatency, bestJitter := cal.DCNLatency, cal.SliceJitter
	for lat := time.Duration(0); lat <= time.Millisecond; lat += 25 * time.Microsecond {
		for jt := 0.0; jt <= 0.0801; jt += 0.0025 {
			c := cal
			c.DCNLatency, c.SliceJitter = lat, math.Round(jt*10000)/10000
			rep, err := Evaluate(multi, &c)
			if err != nil {
				return cal, err
			}
			var sum float64
			for _, r := range rep.Results {
				sum += math.Abs(r.Predicted/ones[seriesKey(r.Run)] - r.Run.Published.MFU/ones0(runs, r.Run))
			}
			if sum < best-1e-12 {
				best, bestLatency, bestJitter = sum, c.DCNLatency, c.SliceJitter
			}
		}
	}
	cal.DCNLatency, cal.SliceJitter = bestLatency, bestJitter
	return cal, nil
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
	xs, err := fitEach(rows, cal, func(c *cost.Calibration, x float64) { c.Quantized = x }, 0.05, 1, 40, true)
	if err != nil {
		return 0, err
	}
	return math.Round(median(xs)*1000) / 1000, nil
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
	xs, err := fitEach(rows, cal, func(c *cost.Calibration, x float64) { c.Dropless = x }, 0, 1e6, 60, false)
	if err != nil {
		return 0, err
	}
	return math.Round(median(xs)), nil
}

// fitEach bisects, for each row, the value in [lo, hi] that set puts into
// the calibration at which the row's predicted MFU equals its published
// one (iters halvings; rising says whether the prediction rises with the
// value), and returns the values in row order.
func fitEach(rows []Run, cal *cost.Calibration, set func(*cost.Calibration, float64), lo, hi float64, iters int, rising bool) ([]float64, error) {
	var xs []float64
	est := cost.NewEstimator()
	for _, r := range rows {
		j, m, err := r.Setup()
		if err != nil {
			return nil, fmt.Errorf("validate: %s: %w", r.ID, err)
		}
		a, b := lo, hi
		for range iters {
			mid := (a + b) / 2
			c := *cal
			set(&c, mid)
			j.Calibration = &c
			e, err := est.Estimate(j, m)
			if err != nil {
				return nil, fmt.Errorf("validate: %s: %w", r.ID, err)
			}
			if (r.predictedMFU(e) < r.Published.MFU) == rising {
				a = mid
			} else {
				b = mid
			}
		}
		xs = append(xs, (a+b)/2)
	}
	return xs, nil
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
		j, m, err := r.Setup()
		if err != nil {
			return nil, fmt.Errorf("validate: %s: %w", r.ID, err)
		}
		j.Calibration = cal
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

// Stats summarises |error| over a set of results.
type Stats struct {
	N      int     `json:"n"`
	Median float64 `json:"median_abs_error"`
	P90    float64 `json:"p90_abs_error"`
	Max    float64 `json:"max_abs_error"`
	Fit    int     `json:"fit_in_hbm"`
}

// Summary is the error over the rows that keep the predicate.
func (rep Report) Summary(keep func(Result) bool) Stats {
	var errs []float64
	var st Stats
	for _, r := range rep.Results {
		if !keep(r) {
			continue
		}
		errs = append(errs, math.Abs(r.Error))
		if r.Estimate.Memory.Fits() {
			st.Fit++
		}
	}
	st.N = len(errs)
	if st.N == 0 {
		return st
	}
	sort.Float64s(errs)
	st.Median = median(errs)
	st.P90 = percentile(errs, 0.9)
	st.Max = errs[len(errs)-1]
	return st
}

// Held-out dense rows, calibration rows and held-out mixture-of-experts
// rows. The MoE rows are reported on their own; the few that calibrate fit
// only cost.Calibration.Dropless. Neither held-out set has the
// prospective rows.
func HeldOut(r Result) bool {
	return !r.Run.Calibration && !r.Run.Prospective && !r.Run.Model.MoE()
}
func Calibration(r Result) bool { return r.Run.Calibration }
func MoE(r Result) bool         { return r.Run.Model.MoE() && !r.Run.Calibration && !r.Run.Prospective }

// Prospective rows were added after the constants were frozen.
func Prospective(r Result) bool { return r.Run.Prospective }

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// percentile is the nearest-rank percentile of sorted xs.
func percentile(sorted []float64, q float64) float64 {
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(k, 0)]
}
