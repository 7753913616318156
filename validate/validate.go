// Package validate holds shardlab's cost model against training runs that
// Google has published for MaxText on Cloud TPU: a table of runs, each with
// its source (repository, file and commit), model dimensions, layout,
// batch, remat policy, precision and the MFU it reached; and the error
// report of package cost costed on exactly those settings. Some rows
// calibrate the one residual efficiency each chip generation gets
// (cost.Calibrated()); the error is reported on the others.
package validate

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/maxtext"
	"shardlab/mesh"
)

//go:embed runs.yaml
var runsYAML []byte

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
	// CustomMesh is MaxText's custom_mesh where the run's config set it and
	// MaxText applied it (on one slice only with allow_split_physical_axes
	// true: max_utils.py create_device_mesh @449b4fe); mesh.ParseCustom
	// reads it and mesh.NewCustom places it. "": none.
	CustomMesh string `yaml:"custom_mesh,omitempty" json:"custom_mesh,omitempty"`
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
	Cited `yaml:",inline"`
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

// Parse reads a table of runs (YAML) as the other tables are read
// (parseTable): unknown fields, fractional numbers where whole ones
// belong, NaN and infinities are errors, each naming its row and field,
// and so is a row whose source, layout, flags or published MFU is not
// valid.
func Parse(data []byte) ([]Run, error) {
	return parseTable[Run](data, runsTable)
}

// check validates a run once it is decoded (parseTable has checked its
// source): that Setup takes it, its flags, batch verdict and published
// MFU.
func (r *Run) check() error {
	if _, _, err := r.Setup(); err != nil {
		return err
	}
	if r.Calibration && r.Prospective {
		return fmt.Errorf("calibration and prospective both true, want at most one (a prospective row is never fitted): %w", ErrInvalid)
	}
	if r.BatchTuned != nil {
		if err := r.BatchTuned.check(); err != nil {
			return err
		}
	}
	if !(r.Published.MFU > 0 && r.Published.MFU < 1) {
		return fmt.Errorf("published mfu %v, want a fraction in (0, 1): %w", r.Published.MFU, ErrInvalid)
	}
	return nil
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

// setupWith is Setup with the calibration cal (nil: cost.Calibrated()),
// its error naming the run.
func (r Run) setupWith(cal *cost.Calibration) (cost.Job, mesh.Mesh, error) {
	j, m, err := r.Setup()
	if err != nil {
		return cost.Job{}, mesh.Mesh{}, fmt.Errorf("validate: %s: %w", r.ID, err)
	}
	j.Calibration = cal
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
	custom, err := mesh.ParseCustom(l.CustomMesh)
	if err != nil {
		return mesh.Mesh{}, err
	}
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
		return mesh.NewCustom(ms, custom, axes...)
	}
	per := s.Chip.JAXDevicesPerChip
	if custom != mesh.Standard && per > 1 {
		return mesh.Mesh{}, bad("layout.custom_mesh", custom, fmt.Sprintf("unset on %s, whose chip is %d JAX devices: MaxText's hybrid rings reshape a 16x16 slice of one-device chips", s.Chip.Name, per))
	}
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
	m, err := build(chips)
	if err != nil {
		return mesh.Mesh{}, err
	}
	return m, ringOrder(m)
}

// ringOrder checks that MaxText lists a hybrid ring's axis of 64 before
// its axis of 4 (mesh_axes: maxtext.MeshAxes), as mesh.NewCustom places
// them: reshape_mesh_to_rings' (64, 4) array is reshaped to the ICI
// factors in mesh_axes' order (max_utils.py create_device_mesh
// @449b4fe), so the other order would not put the axis of 4 on the
// rings.
func ringOrder(m mesh.Mesh) error {
	if m.Custom() == mesh.Standard {
		return nil
	}
	at := map[string]int{}
	for i, name := range maxtext.MeshAxes(m.Size(mesh.Pipeline) > 1) {
		at[name] = i
	}
	var ring, over mesh.Axis
	for _, d := range m.Degrees() {
		switch d.ICI {
		case 4:
			ring = d.Axis
		case 64:
			over = d.Axis
		}
	}
	if at[maxtext.Name(over)] > at[maxtext.Name(ring)] {
		return bad("layout.custom_mesh", m.Custom(), fmt.Sprintf("a layout whose axis of 64 (%s) comes before its axis of 4 (%s) in MaxText's mesh_axes, the only order modelled",
			maxtext.Name(over), maxtext.Name(ring)))
	}
	return nil
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
	if j.Precision, err = r.precision(); err != nil {
		return cost.Job{}, err
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
	if j.GMMTile, err = r.gmmTile(); err != nil {
		return cost.Job{}, err
	}
	if j.Attention, err = r.attention(); err != nil {
		return cost.Job{}, err
	}
	return j, nil
}

// gmmTile is the run's gmm_tile_rows: unset (MaxText's default tile),
// or, for a dropless mixture of experts, the mean row tile of its
// grouped GEMMs.
func (r Run) gmmTile() (float64, error) {
	switch g := r.GMMTileRows; {
	case g == 0:
		return 0, nil
	case math.IsNaN(g) || g < 1 || g > cost.MaxGMMTile:
		return 0, bad("gmm_tile_rows", g, fmt.Sprintf("unset or a mean row tile in [1, %d]", cost.MaxGMMTile))
	case !r.Model.MoE() || r.CapacityFactor > 0:
		return 0, bad("gmm_tile_rows", g, "unset but for a dropless mixture of experts (the only run with grouped GEMMs)")
	default:
		return g, nil
	}
}

// precision is the bytes of the run's parameters, gradients, optimizer
// state and activations: weight_dtype, mu_dtype and opt_type.
func (r Run) precision() (cost.Precision, error) {
	w, err := dtypeBytes("weight_dtype", r.WeightDType, 4)
	if err != nil {
		return cost.Precision{}, err
	}
	mu, err := dtypeBytes("mu_dtype", r.MuDType, w)
	if err != nil {
		return cost.Precision{}, err
	}
	// Gradients take the parameters' dtype; Adam's nu too, and mu its own
	// (MaxText base.yml: mu_dtype "inherits from weight_dtype if unset").
	p := cost.Precision{Weight: w, Gradient: w, Optimizer: mu + w, Activation: 2}
	switch r.OptType {
	case "", "adamw", "adam_pax":
	case "sgd":
		// MaxText's opt_type sgd is optax.sgd(learning_rate) without
		// momentum (optimizers/optimizers.py @e591f30c): no state.
		p.Optimizer = 0
	default:
		return cost.Precision{}, bad("opt_type", r.OptType, "adamw, adam_pax or sgd (MaxText's opt_type; unset: adamw)")
	}
	return p, nil
}

// attention is the run's attention kernel (MaxText's attention; unset:
// flash).
func (r Run) attention() (cost.AttentionKind, error) {
	switch r.Attention {
	case "", "flash":
		return "", nil // cost's default kernel, flash
	case "dot_product":
		return cost.AttentionDot, nil
	case "flash_noncausal":
		return cost.AttentionFlashNonCausal, nil
	default:
		return "", bad("attention", r.Attention, "flash, flash_noncausal or dot_product")
	}
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
		j, m, err := r.setupWith(cal)
		if err != nil {
			return rep, err
		}
		e, err := est.Estimate(j, m)
		if err != nil {
			return rep, fmt.Errorf("validate: %s: %w", r.ID, err)
		}
		mfu := r.predictedMFU(e)
		rep.Results = append(rep.Results, Result{Run: r, Estimate: e, Predicted: mfu, Error: (mfu - r.Published.MFU) / r.Published.MFU})
	}
	return rep, nil
}

// Stats summarises |error| over a set of results.
type Stats struct {
	N      int     `json:"n"`
	Median float64 `json:"median_abs_error"`
	P90    float64 `json:"p90_abs_error"`
	Max    float64 `json:"max_abs_error"`
	// Fit counts the runs that fit (cost.Memory.Fits: HBM, and host RAM
	// for what they offload); the key keeps its first name. HostUnchecked
	// counts the runs that fit HBM and offload to a VM whose RAM is not
	// published (cost.Memory.HostUnchecked): they are not counted in Fit,
	// as nothing held them to host RAM.
	Fit           int `json:"fit_in_hbm"`
	HostUnchecked int `json:"host_ram_unchecked"`
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
		switch m := r.Estimate.Memory; {
		case m.Fits() && m.HostUnchecked():
			st.HostUnchecked++
		case m.Fits():
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
