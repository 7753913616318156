package plan

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/internal/errtext"
	"shardlab/maxtext"
	"shardlab/mesh"
	"shardlab/model"
	"shardlab/schedule"
	"shardlab/unit"
)

// Options are a planning question as a user states it, in the words and
// units a front end takes (the CLI's flags, a web form). ParseRequest
// checks them once and turns them into a Request. Start from
// DefaultOptions: a zero value is not a question, and a zero number means
// zero except where a field says otherwise.
type Options struct {
	// Model is a catalog model name (llama3-8b), or, with ModelSpec, the
	// name of the spec (its file), used when the spec names no model.
	Model string `json:"model"`
	// ModelSpec is a YAML or JSON model spec, as model.Parse reads it; the
	// front end reads it (plan reads no files). When set, Model is not
	// looked up in the catalog.
	ModelSpec []byte `json:"-"`
	// TPU is an accelerator type (tpu7x-8, v5p-128), or a generation alone
	// (tpu7x), which plans on the smallest footprint that runs the job.
	TPU string `json:"tpu"`
	// Topology overrides the accelerator type's topology (AxB or AxBxC);
	// "" keeps it.
	Topology string `json:"topology"`
	// Slices is the number of slices joined by DCN.
	Slices int `json:"slices"`
	// DCNGbps is the DCN bandwidth per host in Gbit/s; 0 takes the
	// catalog's.
	DCNGbps float64 `json:"dcn_gbps"`
	// Seq is the sequence length in tokens; 0 takes the model's.
	Seq int `json:"seq"`
	// GlobalBatch fixes the global batch, in sequences (512, 512seq) or
	// tokens (4Mitok); "" lets the planner choose it. See ParseBatch.
	GlobalBatch string `json:"global_batch"`
	// MaxGlobalBatch is the convergence limit on the global batch, in
	// sequences or tokens; "" takes DefaultMaxGlobalBatch, raised to
	// GlobalBatch when that is larger. A limit given below GlobalBatch is
	// refused.
	MaxGlobalBatch string `json:"max_global_batch"`
	// Mesh asks for one layout (data=2(dcn),fsdp=64) instead of a search,
	// in JAX devices as MaxText counts them (two a TPU7x chip; see
	// Request.DeviceAxes); "" searches all.
	Mesh string `json:"mesh"`
	// Remat is a MaxText remat_policy; "" searches cost.SearchRemats.
	Remat string `json:"remat"`
	// RematCustom places the tagged tensors under Remat custom
	// (query_proj=offload,...).
	RematCustom string `json:"remat_custom"`
	// Schedule is the pipeline schedule (gpipe, 1f1b, interleaved,
	// circular); "" searches gpipe, 1f1b and interleaved with 2 and 4
	// chunks.
	Schedule string `json:"schedule"`
	// Framework limits the search to what a framework runs: "" (any) or
	// "maxtext", whose pipelines are GPipe and circular only (its backward
	// pass is autodiff of a forward scan; maxtext issue #752), so the
	// search tries gpipe and circular with 2 and 4 chunks.
	Framework string `json:"framework"`
	// Chunks is the chunks of layers per pipeline device of the
	// interleaved and circular schedules; 0 takes 2 for interleaved and 1
	// for circular.
	Chunks int `json:"chunks"`
	// GradientAccumulationSteps, with Mesh and GlobalBatch, runs the step
	// as this many micro-batches one after another (MaxText
	// gradient_accumulation_steps); 0 lets the planner choose, as it does
	// for a search. See accumulate.go.
	GradientAccumulationSteps int `json:"gradient_accumulation_steps"`
	// Precision is maxtext, bf16 or zero (cost.ParsePrecision).
	Precision string `json:"precision"`
	// Quantization is the matmuls' format: none, int8 or fp8.
	Quantization string `json:"quantization"`
	// Attention is the attention kernel: flash or dot_product.
	Attention string `json:"attention"`
	// OptimizerOffload and ParameterOffload keep the optimizer state and
	// the parameters in host memory.
	OptimizerOffload bool `json:"optimizer_offload"`
	ParameterOffload bool `json:"parameter_offload"`
	// VocabTiles splits the logits and loss into this many chunks.
	VocabTiles int `json:"vocab_tiles"`
	// Efficiency is the residual efficiency of the matmuls after their MXU
	// shapes; 0 takes the generation's calibrated value.
	Efficiency float64 `json:"efficiency"`
	// HBMHeadroom is the fraction of HBM kept free; 0 keeps none.
	HBMHeadroom float64 `json:"hbm_headroom"`
	// TempScale scales the estimate of the step's temporaries to what a
	// compile of the job reported (cost.MemoryCalibration); 0 means 1.
	TempScale float64 `json:"temp_scale"`
	// CausalFLOPs halves the attention FLOPs in MFU, MaxText's convention
	// since its PR 1988 and the default; false counts them in full (PaLM).
	CausalFLOPs bool `json:"causal_flops"`
	// CapacityFactor caps each expert's rows per device at ceil(factor ·
	// tokens · k / experts), dropping the rest (MaxText capacity_factor);
	// 0 is dropless (MaxText's default: sparse_matmul with megablox).
	CapacityFactor float64 `json:"capacity_factor"`
	// LoadImbalance is the busiest expert's tokens over the mean, dropless
	// (0 or 1: balanced).
	LoadImbalance float64 `json:"load_imbalance"`
	// Top is how many ranked layouts to keep.
	Top int `json:"top"`
	// ExampleCost is the host CPU time to read and preprocess one
	// sequence; the plan then checks that the host's vCPUs keep the chips
	// fed. 0 skips the check.
	ExampleCost time.Duration `json:"example_cost"`
}

// What a request plans when it names no model or TPU: Llama 3 8B on one
// TPU7x VM.
const (
	DefaultModel = "llama3-8b"
	DefaultTPU   = "tpu7x-8"
)

// The bounds of the numeric options, which ParseRequest enforces (and the
// CLI's flags show).
const (
	MaxSlices      = 4096
	MinDCNGbps     = 0.1     // Gbit/s per host
	MaxDCNGbps     = 100_000 // Gbit/s per host
	MaxSeq         = 1 << 24 // tokens
	MaxChunks      = cost.MaxChunks
	MaxVocabTiles  = 1 << 16
	MinEfficiency  = 0.01
	MaxTop         = 100
	MaxExampleCost = time.Hour
	// MaxCapacityFactor and MaxLoadImbalance bound the MoE options.
	MinCapacityFactor = 0.01
	MaxCapacityFactor = 64
	MaxLoadImbalance  = 64
	// MaxBatch is the largest global batch ParseBatch accepts, in
	// sequences.
	MaxBatch = 1 << 30
	// MaxScopeSlices is the most slices of its largest slice a request for
	// a bare generation plans on (SearchScope).
	MaxScopeSlices = 64
)

// DefaultOptions are the options of a question that sets nothing but its
// model and TPU: every field is the value ParseRequest then uses.
func DefaultOptions() Options {
	return Options{
		Model: DefaultModel, TPU: DefaultTPU, Slices: 1,
		Precision: "maxtext", Quantization: "none", Attention: "flash",
		VocabTiles: 1, HBMHeadroom: cost.DefaultHBMHeadroom, Top: 5,
		// MaxText's current MFU convention (PR 1988, 2025-07-22: maxtext_utils
		// calculate_tflops_training_per_device halves causal attention)
		CausalFLOPs: true,
	}
}

// Examples are the built-in examples a front end shows when the user names
// no model, TPU, mesh or topology: o's other options with llama3-8b on one
// tpu7x-8 VM, and with llama3-70b on two tpu7x-128 slices.
func (o Options) Examples() []Options {
	out := []Options{o, o}
	out[0].Model, out[0].ModelSpec, out[0].TPU, out[0].Slices = "llama3-8b", nil, "tpu7x-8", 1
	out[1].Model, out[1].ModelSpec, out[1].TPU, out[1].Slices = "llama3-70b", nil, "tpu7x-128", 2
	return out
}

// OptionError is an option ParseRequest refuses: which one, its value as
// given, and a text that says what is wrong and what is accepted. It wraps
// ErrRequest and, when the owning package refused the value, that
// package's error.
type OptionError struct {
	Option Option
	Value  string
	// Text names options as {key}, like a Note's; Phrase spells them.
	Text string
	// PyTorch is the limit of what the PyTorch/XLA export writes that the
	// value passes (FrameworkPyTorch's refusals, which Text words as the
	// framework option's), nil for any other refusal: a front end whose
	// command implies the framework, with no framework option to name,
	// words it with PyTorchLimit.Phrase.
	PyTorch *PyTorchLimit
	Err     error
}

// Phrase is the error's text, without the package name, with the options
// spelt by name (Option.String when nil).
func (e *OptionError) Phrase(name func(Option) string) string { return phrase(e.Text, name) }

func (e *OptionError) Error() string { return "plan: " + e.Phrase(nil) }

func (e *OptionError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrRequest}
	}
	return []error{ErrRequest, e.Err}
}

// refuse is an OptionError whose text starts with the option's name;
// format and a follow it (see textf).
func refuse(o Option, value string, err error, format string, a ...any) *OptionError {
	return &OptionError{Option: o, Value: value, Text: "{" + string(o) + "}" + textf(format, a...), Err: err}
}

// refuseErr is an OptionError for a value the owning package refused with
// err: "{option}: " and err's own words (errtext.Detail: without the
// package's name, which doubled "mesh: mesh:", nor its sentinel), or
// "{option} "value": " where those words open by restating the value
// (errtext.After: "quantization fp8: ...").
func refuseErr(o Option, value string, err error) *OptionError {
	d := errtext.Detail(err)
	if rest, ok := errtext.After(d, value); ok {
		// the detail restates the value: "{option} "value": rest"
		return refuse(o, value, err, " %q: %s", value, rest)
	}
	return refuse(o, value, err, ": %s", d)
}

// ParseRequest checks the options once, naming the option at fault, its
// value and what is accepted (an *OptionError), and returns the request
// they ask: its model, multislice (or, for a bare generation, the chip
// alone: Search then picks the footprint), batch limits in sequences,
// layout, policies and bounds, with every default resolved.
func ParseRequest(o Options) (Request, error) {
	var r Request
	var err error
	if r.Model, err = parseModel(o); err != nil {
		return r, err
	}
	if err := cost.CheckTrainable(r.Model); err != nil {
		return r, refuse(OptionModel, o.Model, err, " %s: %s", o.Model, errtext.Detail(err))
	}
	if r.Multislice, err = parseMultislice(o); err != nil {
		return r, err
	}
	for _, step := range []func(*Request, Options) error{parseBatches, parseSchedule, parseNumerics, parseLimits, parseFixedBatch, parseAccumulation, parsePyTorch, parseMaxText} {
		if err := step(&r, o); err != nil {
			return r, err
		}
	}
	if _, err := r.job().MatmulPeak(r.Multislice.Slice.Chip); err != nil {
		return r, refuseErr(OptionQuantization, o.Quantization, err)
	}
	return r, nil
}

// parseBatches reads the sequence length, the batches and the mesh.
func parseBatches(r *Request, o Options) error {
	var err error
	switch {
	case o.Seq < 0 || o.Seq > MaxSeq:
		return refuse(OptionSeq, strconv.Itoa(o.Seq), nil, " %d, want 0 to %d tokens (0: the model's)", o.Seq, MaxSeq)
	case o.Seq == 0:
		r.Seq = r.Model.SeqLen
	default:
		r.Seq = o.Seq
	}
	if err := model.CheckSequence(r.Model.Name, r.Model.Layers, r.Model.DModel, r.Seq); err != nil {
		var fe *model.FieldError
		errors.As(err, &fe)
		return refuse(OptionSeq, strconv.Itoa(r.Seq), nil, " %d, want %s", r.Seq, fe.Want)
	}
	if err = parseMaxBatch(r, o.MaxGlobalBatch); err != nil {
		return err
	}
	if o.GlobalBatch != "" {
		if r.GlobalBatch, err = ParseBatch(o.GlobalBatch, r.Seq, true); err != nil {
			return refuseBatch(OptionGlobalBatch, o.GlobalBatch, err)
		}
		switch {
		case o.MaxGlobalBatch == "":
			r.MaxGlobalBatch = max(r.MaxGlobalBatch, r.GlobalBatch)
		case r.GlobalBatch > r.MaxGlobalBatch:
			return refuse(OptionGlobalBatch, o.GlobalBatch, nil, " %q is %d sequences, above {max_global_batch} %q (%d sequences): raise the limit or lower the batch",
				o.GlobalBatch, r.GlobalBatch, o.MaxGlobalBatch, r.MaxGlobalBatch)
		}
	}
	if o.Mesh != "" {
		return parseDeviceMesh(r, o.Mesh)
	}
	return nil
}

// askedMesh is the layout the {mesh} option asks for on ms; value is the
// option as given. A layout that does not fit ms is the user's: its error
// is an *OptionError for {mesh}.
func askedMesh(ms hw.Multislice, axes []mesh.Degree, value string) (mesh.Mesh, error) {
	m, err := mesh.New(ms, axes...)
	if err != nil {
		return m, refuseErr(OptionMesh, value, err)
	}
	return m, nil
}

// spellAxes is degrees as the {mesh} option spells them (data=2(dcn),fsdp=4).
func spellAxes(degrees []mesh.Degree) string {
	var items []string
	for _, d := range degrees {
		if d.ICI != 1 || d.DCN == 1 {
			items = append(items, fmt.Sprintf("%s=%d", d.Axis, d.ICI))
		}
		if d.DCN != 1 {
			items = append(items, fmt.Sprintf("%s=%d(dcn)", d.Axis, d.DCN))
		}
	}
	return strings.Join(items, ",")
}

// parseSchedule reads the remat policy, the pipeline schedule and its
// chunks.
func parseSchedule(r *Request, o Options) error {
	var err error
	if o.Remat != "" {
		if r.Remat, err = cost.ParseRemat(o.Remat); err != nil {
			return refuseErr(OptionRemat, o.Remat, err)
		}
	}
	if o.Schedule != "" {
		if r.Schedule, err = schedule.ParseKind(o.Schedule); err != nil {
			return refuseErr(OptionSchedule, o.Schedule, err)
		}
	}
	if r.Framework, err = ParseFramework(o.Framework); err != nil {
		return err
	}
	if _, ok := maxTextSchedule(r.Schedule); r.Framework == FrameworkMaxText && r.Schedule != "" && !ok {
		return refuse(OptionSchedule, string(r.Schedule), nil, " %s: MaxText runs its pipelines GPipe-style or circularly (maxtext issue #752), want {schedule} gpipe or {schedule} circular", r.Schedule)
	}
	chunks := strconv.Itoa(o.Chunks)
	switch {
	case o.Chunks < 0 || o.Chunks > MaxChunks:
		return refuse(OptionChunks, chunks, nil, " %d, want 0 to %d (0: 2 for interleaved, 1 for circular)", o.Chunks, MaxChunks)
	case o.Chunks > 1 && !r.Schedule.Chunked():
		return refuse(OptionChunks, chunks, nil, " %d needs {schedule} interleaved or circular", o.Chunks)
	case o.Chunks == 1 && r.Schedule == schedule.Interleaved:
		return refuse(OptionChunks, chunks, nil, " 1 with {schedule} interleaved, want 2 or more (1 chunk is 1f1b)")
	case o.Chunks == 0 && r.Schedule == schedule.Interleaved:
		r.Chunks = 2
	default:
		r.Chunks = o.Chunks
	}
	if pipe := fixedPipeline(r.Axes); r.Axes != nil && pipe == 1 && r.Schedule != "" {
		return refuse(OptionSchedule, o.Schedule, nil, " %s with {mesh} %q, which has no pipeline: a schedule orders a pipeline's micro-batches, want %s=N in {mesh} or no {schedule}", r.Schedule, o.Mesh, mesh.Pipeline)
	}
	if err := fixedStages(r, o); err != nil {
		return err
	}
	return fixedChunks(r, o)
}

// fixedStages refuses a fixed layout whose pipeline does not divide the
// model's layers: each stage holds layers / pipeline of them (cost's
// rule), so no batch, schedule or remat policy runs it; the error names
// the pipeline degrees that do and that the chips split into.
func fixedStages(r *Request, o Options) error {
	pipe, units := fixedPipeline(r.Axes), r.Model.Units()
	if r.Axes == nil || units%pipe == 0 {
		return nil
	}
	chips := r.Multislice.Chips()
	var fit []string
	for p := 1; p <= units; p++ {
		if units%p == 0 && chips%p == 0 {
			fit = append(fit, strconv.Itoa(p))
		}
	}
	what := r.Model.UnitsText()
	if r.Model.BlockLayers() > 1 {
		// the blocks are what a stage holds whole, so they are what the
		// pipeline must divide (8 divides Llama 4's 48 layers, not its 12
		// blocks)
		what += fmt.Sprintf(" (its %d layers; a stage holds whole blocks)", r.Model.Layers)
	}
	return refuse(OptionMesh, o.Mesh, nil, " %q: pipeline %d does not divide %s's %s into whole stages, want a pipeline degree of %s (dividing the %s and the %d chips)",
		o.Mesh, pipe, r.Model.Name, what, errtext.OrList(fit), r.Model.UnitWord(), chips)
}

// fixedChunks refuses chunks that cannot split the model's layers over a
// fixed layout's pipeline: each of its stages holds chunks chunks of
// layers / (pipeline x chunks) layers (cost's rule), so where some other
// number of chunks would, the chunks are what contradicts the layout; the
// error names those that do.
func fixedChunks(r *Request, o Options) error {
	pipe := fixedPipeline(r.Axes)
	units := r.Model.Units()
	if r.Axes == nil || pipe == 1 || !r.Schedule.Chunked() || units%(pipe*max(r.Chunks, 1)) == 0 {
		return nil
	}
	var fit []string
	for v := 1; v <= MaxChunks; v++ {
		if units%(pipe*v) == 0 && (v > 1 || r.Schedule != schedule.Interleaved) {
			fit = append(fit, strconv.Itoa(v))
		}
	}
	if len(fit) == 0 {
		return nil // the pipeline alone does not divide the layers: no chunks would
	}
	given := strconv.Itoa(o.Chunks)
	if o.Chunks == 0 {
		given = fmt.Sprintf("0 (%d for %s)", max(r.Chunks, 1), r.Schedule)
	}
	want := errtext.OrList(fit)
	return refuse(OptionChunks, given, nil, " %s with {mesh} %q: %s's %d %s over pipeline %d x %d chunks is no whole number of %s a chunk, want %s",
		given, o.Mesh, r.Model.Name, units, r.Model.UnitWord(), pipe, max(r.Chunks, 1), r.Model.UnitWord(), want)
}

// fixedPipeline is the pipeline degree of a fixed layout's axes.
func fixedPipeline(axes []mesh.Degree) int { return fixedSize(axes, mesh.Pipeline) }

// fixedSize is axis a's size in the degrees of a fixed layout.
func fixedSize(axes []mesh.Degree, a mesh.Axis) int {
	n := 1
	for _, d := range axes {
		if d.Axis == a {
			n *= d.Size()
		}
	}
	return n
}

// parseNumerics reads the precision, the custom remat tensors,
// quantization and the attention kernel.
func parseNumerics(r *Request, o Options) error {
	var err error
	if r.Precision, err = cost.ParsePrecision(o.Precision); err != nil {
		return refuseErr(OptionPrecision, o.Precision, err)
	}
	if o.RematCustom != "" && r.Remat != cost.RematCustom {
		return refuse(OptionRematCustom, o.RematCustom, nil, " %q needs {remat} custom", o.RematCustom)
	}
	if r.Custom, err = cost.ParseCustom(o.RematCustom); err != nil {
		return refuseErr(OptionRematCustom, o.RematCustom, err)
	}
	if r.Quantization, err = cost.ParseQuantization(o.Quantization); err != nil {
		return refuseErr(OptionQuantization, o.Quantization, err)
	}
	switch strings.ToLower(strings.TrimSpace(o.Attention)) {
	case "flash", "splash":
		r.Attention = cost.AttentionFlash
	case "dot_product", "dot-product":
		r.Attention = cost.AttentionDot
	default:
		return refuse(OptionAttention, o.Attention, nil, " %q, want flash or dot_product", o.Attention)
	}
	r.OptimizerOffload, r.ParameterOffload, r.CausalFLOPs = o.OptimizerOffload, o.ParameterOffload, o.CausalFLOPs
	return nil
}

// parseLimits checks the numeric options against their ranges.
func parseLimits(r *Request, o Options) error {
	fl := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	switch {
	case o.VocabTiles < 1 || o.VocabTiles > MaxVocabTiles:
		return refuse(OptionVocabTiles, strconv.Itoa(o.VocabTiles), nil, " %d, want 1 to %d", o.VocabTiles, MaxVocabTiles)
	case o.Efficiency != 0 && !(o.Efficiency >= MinEfficiency && o.Efficiency <= 1):
		return refuse(OptionEfficiency, fl(o.Efficiency), nil, " %s, want a number in [%g, 1], or 0 for the generation's calibrated value", fl(o.Efficiency), MinEfficiency)
	case !(o.HBMHeadroom >= 0 && o.HBMHeadroom < 1):
		return refuse(OptionHBMHeadroom, fl(o.HBMHeadroom), nil, " %s, want a fraction in [0, 1)", fl(o.HBMHeadroom))
	case !(o.TempScale == 0 || o.TempScale >= cost.MinTempScale && o.TempScale <= cost.MaxTempScale):
		return refuse(OptionTempScale, fl(o.TempScale), nil, " %s, want 0 (none) or a factor in [%g, %g]", fl(o.TempScale), cost.MinTempScale, cost.MaxTempScale)
	case o.CapacityFactor != 0 && !(o.CapacityFactor >= MinCapacityFactor && o.CapacityFactor <= MaxCapacityFactor):
		return refuse(OptionCapacityFactor, fl(o.CapacityFactor), nil, " %s, want 0 (dropless) or a factor in [%g, %d]", fl(o.CapacityFactor), MinCapacityFactor, MaxCapacityFactor)
	case !(o.LoadImbalance == 0 || (o.LoadImbalance >= 1 && o.LoadImbalance <= MaxLoadImbalance)):
		return refuse(OptionLoadImbalance, fl(o.LoadImbalance), nil, " %s, want 0 (balanced) or a ratio in [1, %d]", fl(o.LoadImbalance), MaxLoadImbalance)
	case o.CapacityFactor != 0 && !r.Model.MoE():
		return refuse(OptionCapacityFactor, fl(o.CapacityFactor), nil, " %s, but %s has no experts: it applies to a mixture-of-experts model only", fl(o.CapacityFactor), r.Model.Name)
	case o.LoadImbalance != 0 && !r.Model.MoE():
		return refuse(OptionLoadImbalance, fl(o.LoadImbalance), nil, " %s, but %s has no experts: it applies to a mixture-of-experts model only", fl(o.LoadImbalance), r.Model.Name)
	case o.Top < 1 || o.Top > MaxTop:
		return refuse(OptionTop, strconv.Itoa(o.Top), nil, " %d, want 1 to %d", o.Top, MaxTop)
	case o.ExampleCost < 0 || o.ExampleCost > MaxExampleCost:
		return refuse(OptionExampleCost, o.ExampleCost.String(), nil, " %v, want 0s to %v (0: skip the check)", o.ExampleCost, MaxExampleCost)
	}
	r.VocabTiles, r.Efficiency, r.HBMHeadroom, r.Top, r.ExampleCost = o.VocabTiles, o.Efficiency, o.HBMHeadroom, o.Top, o.ExampleCost
	r.TempScale = o.TempScale
	r.CapacityFactor, r.LoadImbalance = o.CapacityFactor, o.LoadImbalance
	return nil
}

// parseModel finds the catalog model, or parses the spec.
func parseModel(o Options) (model.Spec, error) { return findModel(o) }

// findModel finds the catalog model, or parses the spec.
func findModel(o Options) (model.Spec, error) {
	if o.ModelSpec != nil {
		s, err := model.Parse(o.ModelSpec)
		if err != nil {
			return s, refuse(OptionModel, o.Model, err, " %s: %s", o.Model, errtext.Detail(err))
		}
		if s.Name == "" {
			s.Name = o.Model
		}
		return s, nil
	}
	s, ok := model.Lookup(o.Model)
	if !ok {
		return s, refuse(OptionModel, o.Model, nil, " %q: want a catalog model (%s) or a YAML/JSON spec", o.Model, strings.Join(model.Names(), ", "))
	}
	return s, nil
}

// parseMultislice reads the TPU, topology, slices and DCN bandwidth. A
// bare generation gives a multislice of no slices that holds the chip.
func parseMultislice(o Options) (hw.Multislice, error) {
	slice, err := hw.ParseTPU(o.TPU)
	if err != nil {
		return hw.Multislice{}, refuseErr(OptionTPU, o.TPU, err)
	}
	if slice.Chips() == 0 {
		if o.Topology != "" || o.Slices != 1 || o.DCNGbps != 0 {
			return hw.Multislice{}, refuse(OptionTPU, o.TPU, nil, " %s names no size; give an accelerator type (e.g. %s) to use {topology}, {slices} or {dcn_gbps}",
				o.TPU, slice.Chip.AcceleratorTypes()[1])
		}
		return hw.Multislice{Slice: slice}, nil
	}
	if o.Topology != "" {
		if slice, err = hw.ParseTopology(slice.Chip, o.Topology); err != nil {
			return hw.Multislice{}, refuseErr(OptionTopology, o.Topology, err)
		}
	}
	switch {
	case o.Slices < 1 || o.Slices > MaxSlices:
		return hw.Multislice{}, refuse(OptionSlices, strconv.Itoa(o.Slices), nil, " %d, want 1 to %d", o.Slices, MaxSlices)
	case o.DCNGbps != 0 && !(o.DCNGbps >= MinDCNGbps && o.DCNGbps <= MaxDCNGbps):
		v := strconv.FormatFloat(o.DCNGbps, 'g', -1, 64)
		return hw.Multislice{}, refuse(OptionDCNGbps, v, nil, " %s, want %g to %g Gbit/s per host, or 0 for the catalog's", v, float64(MinDCNGbps), float64(MaxDCNGbps))
	case o.DCNGbps != 0 && o.Slices == 1:
		// meaningless with the other options, as {chunks} without a
		// chunked schedule or {capacity_factor} on a dense model
		v := strconv.FormatFloat(o.DCNGbps, 'g', -1, 64)
		return hw.Multislice{}, refuse(OptionDCNGbps, v, nil, " %s with {slices} 1: one slice sends nothing over DCN, so its bandwidth changes nothing; give {slices} 2 or more, or no {dcn_gbps}", v)
	}
	ms, err := hw.NewMultislice(slice, o.Slices, unit.BitsPerSecond(o.DCNGbps*1e9))
	if err != nil {
		var pe *hw.ParseError
		if errors.As(err, &pe) && pe.Field == "dcn bandwidth" {
			return ms, refuseErr(OptionDCNGbps, fmt.Sprint(o.DCNGbps), err)
		}
		return ms, refuseErr(OptionSlices, strconv.Itoa(o.Slices), err)
	}
	return ms, nil
}

// Request is a planning question, as ParseRequest makes it from Options.
type Request struct {
	Model model.Spec
	// Multislice is where to plan. A multislice of no slices that holds
	// only a chip (what ParseRequest makes of a bare generation, tpu7x)
	// asks for the smallest footprint of the chip's generation that runs
	// the job: see SearchScope.
	Multislice hw.Multislice
	// Seq is tokens per sequence; 0 means the model's SeqLen.
	Seq int
	// GlobalBatch fixes the sequences per step; 0 lets the planner choose
	// the largest batch that fits, up to MaxGlobalBatch.
	GlobalBatch int
	// MaxGlobalBatch is the convergence limit in sequences per step.
	MaxGlobalBatch int
	// Axes, when set, asks for this one layout (each named axis's degree)
	// instead of searching.
	Axes []mesh.Degree
	// DeviceAxes, when set, is the layout asked in JAX devices, on a chip
	// of several (TPU7x): Axes is then one of its chip readings, and
	// Search costs each reading until one's MaxText mesh is DeviceAxes
	// (Plan.Devices). nil on a chip of one device, where Axes says it all.
	DeviceAxes []mesh.Degree
	// microStep, when above 1, makes the planner's batch put a multiple
	// of it sequences on each chip per micro-batch (the fsdp reading of a
	// device mesh: the chip's devices split its sequences).
	microStep int
	// maxTextBlock is the decoder_block of the model's MaxText config,
	// for MaxText's ring rule (Request.ring); "" for a model MaxText ships
	// no config of. defaults sets it, once.
	maxTextBlock string
	// Remat fixes the rematerialisation policy; "" searches all.
	Remat cost.Remat
	// Custom places the tagged tensors when Remat is custom.
	Custom cost.Places
	// Schedule fixes the pipeline schedule, with Chunks for interleaved
	// and circular; "" searches GPipe, 1F1B and interleaved 1F1B with 2
	// and 4 chunks.
	Schedule schedule.Kind
	Chunks   int
	// Accumulation, when above 0, is the micro-batches a fixed layout
	// (Axes) without a pipeline runs its fixed GlobalBatch in (MaxText
	// gradient_accumulation_steps); 0 lets the planner choose.
	Accumulation int
	// Framework, when FrameworkMaxText, searches only the schedules
	// MaxText runs.
	Framework Framework
	// Workers is how many goroutines cost layouts (0: one per CPU). The
	// plan is the same for every count.
	Workers int
	// Cache, when set, keeps the search's estimators for the searches
	// after it that share it (a budget sweep's); nil: none kept. The plan
	// is the same either way.
	Cache *Cache
	// Settings are cost.Job's, as they are, except that the zero
	// Precision, which no job can have, means cost.MaxTextPrecision (and
	// HBMHeadroom 0 keeps none free; cost.DefaultHBMHeadroom is the usual
	// value).
	cost.Settings
	// Top is how many ranked layouts to keep (at least 1).
	Top int
	// BestOnly asks a searched plan (Axes and DeviceAxes unset) for its
	// Best, Rule and Band only, as the full search finds them, costing
	// fewer combinations in full (a lean search: see lean.go). Its other
	// fields hold what the lean search found: Top, Alternatives, Reasons
	// and Warnings may name other layouts than the full search's, and
	// Rejected count less. When nothing runs, its error is the full
	// search's (search).
	BestOnly bool
	// ExampleCost, when set, is the host CPU time to read and preprocess
	// one sequence; the plan then checks with package infeed that the
	// host's vCPUs keep the chips fed.
	ExampleCost time.Duration
}

// ErrRequest is wrapped by errors in the request.
var ErrRequest = errors.New("invalid request")

func (r *Request) defaults() error {
	if r.Seq == 0 {
		r.Seq = r.Model.SeqLen
	}
	if r.Precision == (cost.Precision{}) {
		r.Precision = cost.MaxTextPrecision()
	}
	if r.Top < 1 {
		r.Top = 1
	}
	if mt, ok := maxtext.ModelOf(r.Model); ok {
		r.maxTextBlock = mt.Block
	}
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("plan: %s = %v, want %s: %w", field, v, want, ErrRequest)
	}
	switch {
	case r.Seq < 0:
		return bad("seq", r.Seq, "a positive number of tokens")
	case r.GlobalBatch < 0:
		return bad("global batch", r.GlobalBatch, "a positive number of sequences (or 0 to let the planner choose)")
	case r.MaxGlobalBatch <= 0:
		return bad("max global batch", r.MaxGlobalBatch, "a positive number of sequences")
	case r.GlobalBatch > r.MaxGlobalBatch:
		return bad("global batch", r.GlobalBatch, fmt.Sprintf("at most the max global batch (%d)", r.MaxGlobalBatch))
	case r.Multislice.Chips() == 0:
		return bad("topology", "none", "a slice")
	case r.VocabTiles < 0:
		return bad("vocab tiles", r.VocabTiles, "a positive count")
	case r.ExampleCost < 0:
		return bad("example cost", r.ExampleCost, "a non-negative duration")
	}
	if _, err := r.job().MatmulPeak(r.Multislice.Slice.Chip); err != nil {
		return fmt.Errorf("plan: %w: %w", err, ErrRequest)
	}
	if err := cost.CheckTrainable(r.Model); err != nil {
		return fmt.Errorf("plan: %w: %w", err, ErrRequest)
	}
	return r.Model.Validate()
}

func (r Request) job() cost.Job {
	j := cost.NewJob(r.Model, r.Seq, 1)
	j.Schedule = r.Schedule
	if j.Schedule == "" {
		j.Schedule = schedule.OneFOneB
	}
	j.Chunks = r.Chunks
	j.Custom = r.Custom
	j.Settings = r.Settings
	return j
}
