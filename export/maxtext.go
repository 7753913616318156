// Package export writes a planned layout in the language of the tools that
// run it for real: a MaxText config (YAML, or the key=value arguments of
// its trainer), the xpk command that launches it on GKE, the PyTorch/XLA
// SPMD mesh and shardings, and a serving plan's `vllm serve` command line,
// each checked against the target's own key, flag or API list. What is written
// is what was costed; a plan the target cannot run as costed is refused
// with an error that says what to change.
//
// Sources, cited below by these names:
//
//	[base.yml]  AI-Hypercomputer/maxtext:src/maxtext/configs/base.yml @e591f30cbbf217ed67ef71263ec0538239f9c3b8
//	[types.py]  AI-Hypercomputer/maxtext:src/maxtext/configs/types.py @e591f30c
//	[maxtext_utils.py] AI-Hypercomputer/maxtext:src/maxtext/utils/maxtext_utils.py @e591f30c (create_device_mesh)
//	[max_utils.py] AI-Hypercomputer/maxtext:src/maxtext/utils/max_utils.py @e591f30c (fill_unspecified_mesh_axes)
//	[xpk]       AI-Hypercomputer/xpk:src/xpk/parser/workload.py @367c838253bea41e7d7716145ad6513f44c1a21e
//	[xpk-sc]    AI-Hypercomputer/xpk:src/xpk/core/system_characteristics.py @367c8382
package export

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/maxtext"
	"shardlab/mesh"
	"shardlab/plan"
	"shardlab/schedule"
	"shardlab/unit"
)

// ErrUnsupported is wrapped by the errors of a plan the target cannot run
// as it was costed; the error says what to pass instead.
var ErrUnsupported = errors.New("the target cannot run the plan as costed")

// Error is a plan, or an option, the target cannot take: which setting,
// its value and what is accepted.
type Error struct {
	Target string // "maxtext" or "xpk"
	// Field is the setting, named by the target's key, or a planner
	// option in braces ({reservation}) that Phrase spells as the front
	// end does (a library error names no CLI flag).
	Field string
	Value string
	Want  string
	Err   error
}

func (e *Error) Error() string { return e.Phrase(nil) }

// Phrase is the error with the planner options Field and Want name in
// braces ({global_batch}, {reservation}) spelt by name: the CLI's flags,
// the web UI's fields or query keys; nil spells them as plan.Option does.
func (e *Error) Phrase(name func(plan.Option) string) string {
	return fmt.Sprintf("export: %s: %s %s; %s", e.Target, plan.Note{Text: e.Field}.Phrase(name), e.Value, plan.Note{Text: e.Want}.Phrase(name))
}

func (e *Error) Unwrap() error { return e.Err }

func unsupported(target, field, value, want string) error {
	return &Error{Target: target, Field: field, Value: value, Want: want, Err: ErrUnsupported}
}

// Setting is one MaxText config key and its value: an int, a float64, a
// bool or a string.
type Setting struct {
	Key   string
	Value any
}

// MaxTextConfig is a plan as MaxText settings, to overlay on base.yml.
type MaxTextConfig struct {
	// RunName names the run (MaxText's run_name, xpk's workload) and the
	// YAML file: RunName + ".yml".
	RunName string
	// Comments say what was planned, one line each, without the '#'.
	Comments []string
	Settings []Setting
}

// Get returns the value of key.
func (c MaxTextConfig) Get(key string) (any, bool) {
	for _, s := range c.Settings {
		if s.Key == key {
			return s.Value, true
		}
	}
	return nil, false
}

// devices is axis a's size in MaxText's JAX devices, its ici_* factor
// times its dcn_* factor as written (1 where either is not).
func (c MaxTextConfig) devices(a mesh.Axis) int {
	n := 1
	for _, k := range []string{maxtext.ICIKey(maxtext.Name(a)), maxtext.DCNKey(maxtext.Name(a))} {
		if v, ok := c.Get(k); ok {
			if f, ok := v.(int); ok {
				n *= f
			}
		}
	}
	return n
}

// layoutComment is the plan's layout, MFU and step time for an export's
// header: the layout in JAX devices, as --mesh takes it and the engines
// count, with the chip layout beside it where a chip is several devices.
func layoutComment(p plan.Plan) string {
	e := p.Best.Estimate
	return fmt.Sprintf("layout %s, MFU %s estimated, step %v", layoutSpec(p), e.MFUPeaks(), unit.Seconds(e.Time.Step.Seconds()))
}

// layoutSpec is the plan's layout in JAX devices, as its mesh option
// takes it and the engines count, with the chip layout beside it where a
// chip is several devices.
func layoutSpec(p plan.Plan) string {
	e := p.Best.Estimate
	if d, err := p.Devices(); err == nil && d.Devices != d.Chips {
		return fmt.Sprintf("%s in JAX devices (%s in chips)", d, e.Mesh)
	}
	return e.Mesh.String()
}

// MaxTextOptions are options o as an export that MaxText runs (its config,
// and the xpk command that launches it) plans them: searching only what
// MaxText runs (plan.FrameworkMaxText), so that the layout chosen is one
// MaxText runs as costed. The framework o names is read as plan reads it
// (plan.ParseFramework): none or any (the export limits the search to
// MaxText's) or maxtext; another (pytorch too) is refused, naming the
// framework option, not replaced. Every front end's MaxText and xpk export plans
// through it where MaxText cannot run plan's own choice (MaxTextHeld):
// the CLI's and the web UI's downloads of the same options are the same
// file.
func MaxTextOptions(o plan.Options) (plan.Options, error) {
	f, err := plan.ParseFramework(o.Framework)
	if err != nil {
		return o, err
	}
	if f != "" && f != plan.FrameworkMaxText {
		return o, &plan.OptionError{Option: plan.OptionFramework, Value: o.Framework,
			Text: fmt.Sprintf("{%s} %q, want %s, %s or empty for an export to MaxText", plan.OptionFramework, o.Framework, plan.FrameworkAny, plan.FrameworkMaxText)}
	}
	o.Framework = string(plan.FrameworkMaxText)
	return o, nil
}

// MaxText turns the plan's chosen layout and job into MaxText settings. It
// refuses, with an error wrapping ErrUnsupported, a plan MaxText would run
// differently from how it was costed.
func MaxText(p plan.Plan) (MaxTextConfig, error) {
	e := p.Best.Estimate
	j := e.Job
	ms := p.Request.Multislice
	c := MaxTextConfig{RunName: RunName(j.Model.Name)}
	set := func(k string, v any) { c.Settings = append(c.Settings, Setting{k, v}) }
	c.Comments = append(c.Comments,
		fmt.Sprintf("shardlab plan: %s on %s", j.Model.Name, ms),
		layoutComment(p))

	mt, err := maxTextModel(set, &c, j.Model)
	if err != nil {
		return c, err
	}
	maxTextMoE(set, j)
	perChip, err := meshSettings(set, &c, e, ms)
	if err != nil {
		return c, err
	}
	set("num_slices", ms.Slices)

	devices := ms.Chips() * perChip
	accumulate := accumulation(e)
	pdbs, err := perDeviceBatch(j.GlobalBatch/accumulate, devices)
	if err != nil {
		return c, err
	}
	set(maxtext.PerDeviceBatchSize, pdbs)
	if accumulate > 1 {
		set(maxtext.GradientAccumulationSteps, accumulate)
	}
	set("max_target_length", j.Seq)

	if err := pipeline(set, e, mt); err != nil {
		return c, err
	}
	if err := remat(set, j, mt); err != nil {
		return c, err
	}
	if err := precision(set, j); err != nil {
		return c, err
	}
	if err := kernels(set, j, pdbs); err != nil {
		return c, err
	}
	if err := contextParallel(set, &c, j, mt.Block, c.devices(mesh.Context), c.devices(mesh.Tensor)); err != nil {
		return c, err
	}
	if err := flashBlocks(j, c.devices(mesh.Context)); err != nil {
		return c, err
	}
	return c, nil
}

// meshSettings writes the ici_* and dcn_* factors, in JAX devices, and
// returns the devices per chip. MaxText's mesh is of JAX devices, and on
// v2, v3 and TPU7x each TensorCore of a chip is one; shardlab plans and
// costs chips. Package maxtext owns the rule for the chip's own factor
// (maxtext.Devices), which validate reads back with maxtext.Chips. Every
// axis MaxText has is written, so that none keeps base.yml's placeholder
// (-1 on ici_fsdp and dcn_data, which MaxText fills with what is left,
// [max_utils.py]) or a value a model config sets; shardlab plans no
// fsdp_transpose, tensor_sequence, sequence or the rest, so those are 1.
func meshSettings(set func(string, any), c *MaxTextConfig, e cost.Estimate, ms hw.Multislice) (int, error) {
	j := e.Job
	chip := ms.Slice.Chip
	var chips maxtext.Factors
	ici, dcn := map[string]int{}, map[string]int{}
	for _, a := range mesh.All() {
		ax := e.Mesh.Degree(a)
		chips[a] = ax.ICI
		dcn[maxtext.Name(a)] = ax.DCN
	}
	perChip := chip.JAXDevicesPerChip
	devices, in, err := maxtext.Devices(chips, e.MicroBatchSize, j.Seq, perChip)
	if err != nil {
		return 0, unsupported("maxtext", "micro-batch per chip", strconv.Itoa(e.MicroBatchSize),
			fmt.Sprintf("each %s chip is %d JAX devices in MaxText, and neither the chip's sequences per micro-batch nor the %d-token sequence (over context %d) split over them; pass a {global_batch} that gives each chip a multiple of %d sequences per micro-batch",
				chip.Generation, perChip, j.Seq, e.Mesh.Size(mesh.Context), perChip))
	}
	for _, a := range mesh.All() {
		ici[maxtext.Name(a)] = devices[a]
	}
	switch in {
	case mesh.FSDP:
		c.Comments = append(c.Comments, fmt.Sprintf("each %s chip is %d JAX devices (TensorCores): %s carries the in-chip factor %d, splitting each chip's %d sequences per micro-batch",
			chip.Generation, perChip, maxtext.ICIKey(maxtext.Name(in)), perChip, e.MicroBatchSize))
	case mesh.Context:
		c.Comments = append(c.Comments, fmt.Sprintf("each %s chip is %d JAX devices (TensorCores): %s carries the in-chip factor %d, since the chip's micro-batch of %s does not split over them",
			chip.Generation, perChip, maxtext.ICIKey(maxtext.Name(in)), perChip, unit.Plural(e.MicroBatchSize, "sequence")))
	}
	for _, tier := range []struct {
		key func(string) string
		f   map[string]int
	}{{maxtext.ICIKey, ici}, {maxtext.DCNKey, dcn}} {
		for _, a := range maxtext.Axes {
			n := tier.f[a]
			if n == 0 {
				n = 1
			}
			set(tier.key(a), n)
		}
	}
	if needsSplit(ms.Slice, ici, e.Mesh.Size(mesh.Pipeline) > 1) {
		// shardlab places an axis on part of a torus dimension where no
		// whole ones fit (mesh.Mesh.place); JAX does so only when allowed,
		// and MaxText's default refuses the mesh (maxtext_utils.py
		// create_device_mesh @e591f30c)
		set("allow_split_physical_axes", true)
		c.Comments = append(c.Comments, fmt.Sprintf("the ICI factors do not each take whole dimensions of the %s torus, so JAX's device mesh splits one (allow_split_physical_axes)", ms.Slice.Topology))
	}
	return perChip, nil
}

// kernels writes the matmul format, the attention kernel, the offloads and
// the vocabulary tiling.
func kernels(set func(string, any), j cost.Job, pdbs float64) error {
	// quantization: [base.yml] lines 115-122 and QuantizationType in
	// [types.py]: 'fp8' is the GPU recipe; on TPU fp8 matmuls are
	// 'fp8_full', run through Qwix, as the Ironwood fp8 recipes do
	// (AI-Hypercomputer/tpu-recipes training/ironwood/llama3.1-70b/8k-fp8-tpu7x-4x4x4 @c8cfe2f6). AQT,
	// the default path, is deprecated ([types.py] warns), so Qwix is asked
	// for with int8 too.
	switch j.Quantization {
	case cost.QuantNone: // base.yml's "" is bf16 matmuls
	case cost.QuantInt8:
		set("quantization", "int8")
		set("use_qwix_quantization", true)
	case cost.QuantFP8:
		set("quantization", "fp8_full")
		set("use_qwix_quantization", true)
	default:
		return unsupported("maxtext", "quantization", string(j.Quantization), "want none, int8 or fp8")
	}
	att := j.Attention
	switch att {
	case "":
		att = cost.AttentionFlash
	case cost.AttentionFlashNonCausal:
		return unsupported("maxtext", "attention", string(att), "want flash or dot_product: MaxText's flash attention skips the masked blocks")
	}
	set("attention", string(att)) // [base.yml] line 392: flash or dot_product, both costed
	set("optimizer_memory_host_offload", j.OptimizerOffload)
	set("parameter_memory_host_offload", j.ParameterOffload)
	tiles := max(j.VocabTiles, 1)
	// [types.py]: per_device_batch_size x max_target_length must divide
	// into num_vocab_tiling chunks.
	tokens := pdbs * float64(j.Seq)
	if math.Mod(tokens, float64(tiles)) != 0 {
		fix := fmt.Sprintf("pass a {vocab_tiles} that divides %s", formatFloat(tokens))
		if tokens != math.Trunc(tokens) {
			// no tile count divides a fraction of a token: the batch must change
			fix = "pass a {global_batch} that gives each JAX device a whole number of tokens"
		}
		return unsupported("maxtext", "num_vocab_tiling", strconv.Itoa(tiles),
			fmt.Sprintf("MaxText needs %s x max_target_length (%s x %d = %s tokens a device) to be a multiple of it; %s",
				maxtext.PerDeviceBatchSize, formatFloat(pdbs), j.Seq, formatFloat(tokens), fix))
	}
	set("num_vocab_tiling", tiles)
	return nil
}

// accumulation is the gradient_accumulation_steps MaxText runs e's job
// with: its micro-batches on a layout without a pipeline (cost.Job), else
// 1 (a pipeline's micro-batches are num_pipeline_microbatches).
func accumulation(e cost.Estimate) int {
	if e.Mesh.Size(mesh.Pipeline) > 1 {
		return 1
	}
	return max(e.Job.MicroBatches, 1)
}

// perDeviceBatch is maxtext.PerDeviceBatch, its refusal as export's.
func perDeviceBatch(batch, devices int) (float64, error) {
	v, err := maxtext.PerDeviceBatch(batch, devices)
	if err != nil {
		return 0, unsupported("maxtext", maxtext.PerDeviceBatchSize, formatFloat(float64(batch)/float64(devices)),
			fmt.Sprintf("no decimal gives exactly %d sequences over %d devices", batch, devices))
	}
	return v, nil
}

// pipeline writes MaxText's pipeline settings. MaxText's pipeline is a
// scan over iterations, differentiated by JAX: every micro-batch runs
// forward before any runs backward, GPipe's order, with layers assigned
// to stages circularly when num_pipeline_repeats > 1 (maxtext src/maxtext/layers/pipeline.py @e591f30c;
// maxtext issue 752 asks for 1F1B). A plan costed under 1F1B or
// interleaved 1F1B has a different bubble and activation memory, so it is
// refused.
func pipeline(set func(string, any), e cost.Estimate, mt maxTextArch) error {
	j := e.Job
	stages := e.Mesh.Size(mesh.Pipeline)
	if stages <= 1 {
		return nil
	}
	repeats := 1
	switch j.Schedule {
	case schedule.GPipe:
	case schedule.Circular:
		repeats = max(j.Chunks, 1)
	default:
		return unsupported("maxtext", "pipeline schedule", string(j.Schedule),
			fmt.Sprintf("MaxText runs only GPipe-order pipelines, plain or circular (maxtext issue 752: no 1F1B), and the plan was costed under %s; pass {schedule} gpipe, or {schedule} circular with {chunks} for num_pipeline_repeats, to cost it as MaxText runs it", j.Schedule))
	}
	// MaxText pipelines only the MoE layers of its deepseek block
	// (pipeline_parallel_layers defaults to them, [types.py]) and a stage of
	// its llama4 block is a scanned block of layers (layers/decoders.py
	// @e591f30c, _build_nnx_pipeline_stage); shardlab costs a pipeline of
	// all the layers, one at a time
	if mt.Block == "deepseek" || mt.Block == "llama4" {
		return unsupported("maxtext", mesh.Pipeline.String(), fmt.Sprintf("%d stages", stages),
			fmt.Sprintf("MaxText's %s decoder block does not pipeline the model's layers as shardlab costs them; plan %s with {mesh} without pipeline", mt.Block, j.Model.Name))
	}
	// MaxText's decoder layers: Gemma 2's pair a local and a global
	// attention layer (configs/models/gemma2-9b.yml)
	layers := j.Model.Layers / mt.Pairs
	if layers%(stages*repeats) != 0 {
		return unsupported("maxtext", mesh.Pipeline.String(), fmt.Sprintf("%d stages x %d repeats", stages, repeats),
			fmt.Sprintf("MaxText needs stages x num_pipeline_repeats x num_layers_per_pipeline_stage = its %d decoder layers ([types.py]%s)", layers, pairsNote(mt)))
	}
	// [types.py]: num_pipeline_microbatches must be a multiple of the
	// stages, and must divide the batch.
	if j.MicroBatches%stages != 0 || j.GlobalBatch%j.MicroBatches != 0 {
		return unsupported("maxtext", "micro-batches", strconv.Itoa(j.MicroBatches),
			fmt.Sprintf("MaxText needs num_pipeline_microbatches to be a multiple of the %d stages that divides the global batch (%d)", stages, j.GlobalBatch))
	}
	set("num_pipeline_microbatches", j.MicroBatches)
	set("num_pipeline_repeats", repeats)
	set("num_layers_per_pipeline_stage", layers/(stages*repeats))
	set("pipeline_parallel_layers", layers)
	return nil
}

// remat writes remat_policy. Every policy shardlab costs but none is one
// of MaxText's by name ([base.yml] lines 355-358); none, which keeps
// every tagged tensor, is MaxText's custom policy with each of them on
// device. Custom writes the place of every tagged tensor ([base.yml] lines
// 359-383), so none keeps a default.
func remat(set func(string, any), j cost.Job, mt maxTextArch) error {
	// MaxText has no policy that keeps every activation: for none the
	// closest it states (cost.NamedNone), which the plan's framework note
	// costs and plan --verify's check compares with
	r, places := cost.MaxTextRemat(j.Remat, j.Custom)
	set("remat_policy", string(r))
	if r != cost.RematCustom {
		return nil
	}
	if places[cost.LayerInput] == cost.Recompute {
		// [base.yml] line 361: "this tensor cannot be rematerialized"
		return unsupported("maxtext", "decoder_layer_input", "remat", "MaxText keeps each layer's input on device or offloads it; pass decoder_layer_input=device or offload in {remat_custom}")
	}
	for t := range cost.NumTensors {
		name := t.String()
		if !j.Model.GatedMLP {
			// one input projection, tagged mlpwi (layers/linears.py)
			if t == cost.MLPWi1 {
				continue
			}
			if t == cost.MLPWi0 {
				name = "mlpwi"
			}
		}
		set(name, places[t].String())
	}
	if mt.FusedQKV {
		// one projection, tagged qkv_proj (attentions.py), holds Q, K and V
		if places[cost.Query] != places[cost.Key] || places[cost.Query] != places[cost.Value] {
			return unsupported("maxtext", "remat of query_proj, key_proj, value_proj", fmt.Sprintf("%s, %s, %s", places[cost.Query], places[cost.Key], places[cost.Value]),
				fmt.Sprintf("MaxText's %s fuses them into qkv_proj, one place for the three; pass qkv_proj=PLACE in {remat_custom}", j.Model.Name))
		}
		set("qkv_proj", places[cost.Query].String())
	}
	return nil
}

// precision writes the dtypes of the state. MaxText's optimizer keeps mu
// in mu_dtype and nu in the weights' dtype ([base.yml] lines 993-995), its
// gradients take the weights' dtype, and there is no separate master copy:
// shardlab's maxtext preset (fp32 weights) and bf16 preset (bf16 weights)
// are MaxText's two, and zero (bf16 weights over an fp32 master copy) has
// no MaxText setting.
func precision(set func(string, any), j cost.Job) error {
	p := j.Precision
	if p.Activation != 2 {
		return unsupported("maxtext", "activation bytes", strconv.Itoa(p.Activation), "MaxText's dtype is bfloat16 (2 bytes); pass {precision} maxtext or bf16")
	}
	var w string
	switch p {
	case cost.MaxTextPrecision():
		w = "float32"
	case cost.MaxTextBF16Precision():
		w = "bfloat16"
	default:
		return unsupported("maxtext", "precision", p.Name(), "MaxText keeps no master copy of the weights: pass {precision} maxtext (weight_dtype float32) or bf16 (weight_dtype bfloat16)")
	}
	// opt_type is not written: the plan does not choose the optimizer, and
	// both of MaxText's Adams keep the two moments cost counts: base.yml's
	// adamw (mu in mu_dtype, nu in the weights' dtype) and adam_pax, which
	// gpt3-175b.yml sets (mu and nu like the weights, optimizers.py
	// adam_pax @e591f30c) — the same bytes with mu_dtype = weight_dtype.
	set("dtype", "bfloat16")
	set("weight_dtype", w)
	set("mu_dtype", w)
	return nil
}

// WriteYAML writes the config as a MaxText config file: its first line
// the command that runs it, saved as RunName.yml, then base_config, so
// that MaxText reads base.yml first and the settings over it
// (pyconfig.py _load_config @e591f30c looks for base.yml beside the file,
// then in MaxText's configs directory).
func (c MaxTextConfig) WriteYAML(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", c.RunCommand())
	fmt.Fprintf(&b, "# (saved as %s: the trainer takes a first argument ending in .yml as its config, pyconfig.py @e591f30c; add key=value arguments for where it writes, base_output_directory, and what it reads, dataset_type and dataset_path)\n", c.File())
	for _, l := range c.Comments {
		fmt.Fprintf(&b, "# %s\n", l)
	}
	b.WriteString("base_config: 'base.yml'\n")
	for _, s := range c.Settings {
		v := formatValue(s.Value)
		if _, ok := s.Value.(string); ok {
			v = "'" + v + "'"
		}
		fmt.Fprintf(&b, "%s: %s\n", s.Key, v)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// File is the name WriteYAML's command runs the config under.
func (c MaxTextConfig) File() string { return c.RunName + ".yml" }

// RunCommand runs the YAML config: MaxText's trainer module with the
// config file as its first argument (docs/guides/checkpointing_solutions/
// multi_tier_checkpointing.md line 232 @e591f30c: "python3 -m
// maxtext.trainers.pre_train.train ${MAXTEXT_CONFIG}"), and the run's name.
func (c MaxTextConfig) RunCommand() string {
	return trainModule + " " + c.File() + " run_name=" + c.RunName
}

// trainModule starts MaxText's trainer (docs/run_maxtext/
// run_maxtext_localhost.md @e591f30c; it was MaxText.train before the
// package moved to src/maxtext).
const trainModule = "python3 -m maxtext.trainers.pre_train.train"

// TrainModule is how MaxText's trainer is started with base.yml, the
// config the key=value arguments overlay (pyconfig.py @e591f30c takes a
// first argument ending in .yml as the config file, and finds
// src/maxtext/configs/ in a checkout or an installed package;
// docs/run_maxtext/run_maxtext_elastic_training.md lines 93-94).
const TrainModule = trainModule + " src/maxtext/configs/base.yml"

// RunName makes a run name from a model name, as xpk's workload names
// must be ([xpk] validators.py name_type): shardlab-llama3-70b.
func RunName(model string) string {
	var b strings.Builder
	b.WriteString("shardlab-")
	for _, r := range strings.ToLower(model) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	s := b.String()
	if len(s) > 40 {
		s = s[:40]
	}
	return strings.TrimRight(s, "-")
}

// Args are the settings as the trainer's key=value arguments.
func (c MaxTextConfig) Args() []string {
	out := make([]string, len(c.Settings))
	for i, s := range c.Settings {
		out[i] = s.Key + "=" + formatValue(s.Value)
	}
	return out
}

// WriteFlags writes the trainer's command line, one argument a line.
func (c MaxTextConfig) WriteFlags(w io.Writer) error {
	var b strings.Builder
	for _, l := range c.Comments {
		fmt.Fprintf(&b, "# %s\n", l)
	}
	b.WriteString(TrainModule)
	for _, a := range c.Args() {
		b.WriteString(" \\\n  " + a)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func formatValue(v any) string {
	switch v := v.(type) {
	case float64:
		return formatFloat(v)
	case bool:
		return strconv.FormatBool(v)
	default:
		return fmt.Sprint(v)
	}
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
