package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"shardlab/cost"
	"shardlab/export"
	"shardlab/hw"
	"shardlab/internal/errtext"
	"shardlab/mesh"
	"shardlab/plan"
	"shardlab/schedule"
	"shardlab/unit"
	"shardlab/validate"
)

// meshExample is the layout --mesh's help shows, data=2(dcn),fsdp=64 as
// mesh spells it.
var meshExample = mesh.Spell([]mesh.Degree{{Axis: mesh.Data, ICI: 1, DCN: 2}, {Axis: mesh.FSDP, ICI: 64, DCN: 1}})

// planFlags are the options of plan and export: plan's options,
// filled by the flags over plan.DefaultOptions, and the CLI's own.
type planFlags struct {
	plan.Options
	// model and tpu are "" when not given: without them, nor --mesh or
	// --topology, plan shows its built-in examples and an export writes
	// the default job (exportPlan).
	model, tpu string
	json       bool
	// verify prints how to compile the plan ahead of time and check it.
	verify bool
	// calibration is a memory calibration file, for TempScale, and cal
	// what plans read from it.
	calibration string
	cal         *cost.MemoryCalibration
	// goodput adds the expected goodput (package capacity) for tokens
	// tokens to each plan.
	goodput bool
	tokens  float64
	charts  chartFiles
}

// newPlanFlags defines the flags of plan, or of an export, which
// writes only the chosen layout and so has no --json, --top or
// --example-cost (whose input check only adds warnings). Defaults and
// bounds are plan's.
func newPlanFlags(name string, exporting bool) (*flag.FlagSet, *planFlags) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	f := planFlags{Options: plan.DefaultOptions()}
	o, d := &f.Options, plan.DefaultOptions()
	fs.StringVar(&f.model, "model", "", "catalog model name or a YAML/JSON spec file of at most 1 MiB (default "+plan.DefaultModel+")")
	fs.StringVar(&f.tpu, "tpu", "", "accelerator type of one slice, e.g. tpu7x-8, v5p-128, v6e-256 (default "+plan.DefaultTPU+");\na generation alone (tpu7x) picks the smallest footprint: one host, a slice, or slices")
	fs.StringVar(&o.Topology, "topology", d.Topology, "slice topology AxB or AxBxC, overriding the accelerator type's default")
	intVar(fs, &o.Slices, "slices", d.Slices, 1, plan.MaxSlices, "", "number of slices joined by DCN")
	floatVar(fs, &o.DCNGbps, "dcn-gbps", d.DCNGbps, floatFlag{lo: plan.MinDCNGbps, hi: plan.MaxDCNGbps, unit: "Gbit/s", zero: "the catalog's"}, "DCN bandwidth per host in Gbit/s")
	intVar(fs, &o.Seq, "seq", d.Seq, 0, plan.MaxSeq, "0: the model's", "sequence length in tokens")
	fs.StringVar(&o.GlobalBatch, "global-batch", d.GlobalBatch, "fix the global batch: N sequences, or Ntok tokens (k, M, Ki, Mi allowed: 4Mitok)")
	fs.StringVar(&o.MaxGlobalBatch, "max-global-batch", d.MaxGlobalBatch, "convergence limit on the global batch, sequences or tokens (default "+plan.DefaultMaxGlobalBatch+", raised to --global-batch when that is larger; a limit given is never raised)")
	fs.StringVar(&o.Mesh, "mesh", d.Mesh, "cost this one layout, in JAX devices as MaxText counts them (2 a TPU7x, v3 or v2 chip), e.g. "+meshExample+" (default: search all)")
	remats := []string{}
	for _, r := range cost.Remats() {
		remats = append(remats, string(r))
	}
	var searched []string
	for _, r := range cost.SearchRemats() {
		searched = append(searched, string(r))
	}
	choiceVar(fs, &o.Remat, "remat", d.Remat, remats, nil, "MaxText remat_policy (default: search "+strings.Join(searched, ", ")+"; with --framework pytorch none and full)")
	fs.StringVar(&o.RematCustom, "remat-custom", d.RematCustom, "with --remat custom: tensor=device|offload|remat, comma-separated (decoder_layer_input, query_proj, key_proj,\nvalue_proj, context, out_proj, mlpwi_0, mlpwi_1, mlpwo)")
	choiceVar(fs, &o.Quantization, "quantization", d.Quantization, []string{"none", "int8", "fp8"}, nil, "matmul format: none (bf16), int8 or fp8 (the chip's peak for that format)")
	choiceVar(fs, &o.Attention, "attention", d.Attention, []string{"flash", "dot_product"}, nil, "attention kernel: flash (skips masked causal blocks, keeps no scores) or dot_product")
	fs.BoolVar(&o.OptimizerOffload, "optimizer-offload", d.OptimizerOffload, "keep the optimizer state in host memory (MaxText optimizer_memory_host_offload)")
	fs.BoolVar(&o.ParameterOffload, "parameter-offload", d.ParameterOffload, "keep the parameters in host memory (MaxText parameter_memory_host_offload)")
	intVar(fs, &o.VocabTiles, "vocab-tiles", d.VocabTiles, 1, plan.MaxVocabTiles, "", "split the logits and loss into this many chunks (MaxText num_vocab_tiling)")
	choiceVar(fs, &o.Schedule, "schedule", d.Schedule, []string{"gpipe", "1f1b", "interleaved", "circular"}, parseSchedule, "pipeline schedule (default: search gpipe, 1f1b and interleaved with 2 and 4 chunks)")
	if exporting {
		maxTextOnly(o)
	} else {
		choiceVar(fs, &o.Framework, "framework", d.Framework, plan.Frameworks(), nil, "search only what this framework runs: maxtext (gpipe and circular pipelines); pytorch (what export pytorch writes: data, fsdp and tensor, one pass a step, remat none or full, MaxText's precision as PyTorch's autocast); any (default): every schedule")
	}
	intVar(fs, &o.Chunks, "chunks", d.Chunks, 0, plan.MaxChunks, "0: 2 for interleaved, 1 for circular", "chunks of layers per pipeline device (interleaved; circular: MaxText num_pipeline_repeats)")
	intVar(fs, &o.GradientAccumulationSteps, "gradient-accumulation-steps", d.GradientAccumulationSteps, 0, plan.MaxAccumulationSteps, "0: the planner chooses",
		"with --mesh and --global-batch: run the step as this many micro-batches, summing their gradients (MaxText gradient_accumulation_steps)")
	choiceVar(fs, &o.Precision, "precision", d.Precision, []string{"maxtext", "bf16", "zero"}, nil, "maxtext (weight_dtype float32: fp32 weights, grads and Adam moments, 16 B/param), bf16 (weight_dtype bfloat16: 8 B/param) or zero (bf16 weights and grads, fp32 master and moments, 16 B/param)")
	floatVar(fs, &o.Efficiency, "efficiency", d.Efficiency, floatFlag{lo: plan.MinEfficiency, hi: 1, zero: "the generation's calibrated value"}, "residual efficiency of the matmuls after their MXU shapes")
	floatVar(fs, &o.HBMHeadroom, "hbm-headroom", d.HBMHeadroom, floatFlag{lo: 0, hi: 1, hiOpen: true}, "fraction of HBM kept free")
	floatVar(fs, &o.TempScale, "temp-scale", d.TempScale, floatFlag{lo: cost.MinTempScale, hi: cost.MaxTempScale, zero: "none"}, "scale the estimate of the step's temporaries (gradients, held activations, the largest phase) by this factor, what a compile of the job reported over the estimate (--calibration sets it from a file)")
	fs.StringVar(&f.calibration, "calibration", "", "read --temp-scale from a calibration `file` that 'shardlab check --compile-log LOG --write-calibration FILE' wrote")
	floatVar(fs, &o.CapacityFactor, "capacity-factor", d.CapacityFactor, floatFlag{lo: plan.MinCapacityFactor, hi: plan.MaxCapacityFactor, zero: "dropless (MaxText sparse_matmul, megablox)"}, "mixture of experts: each expert takes at most ceil(factor x tokens x k / experts) rows per device, the rest dropped (MaxText capacity_factor)")
	floatVar(fs, &o.LoadImbalance, "load-imbalance", d.LoadImbalance, floatFlag{lo: 1, hi: plan.MaxLoadImbalance, zero: "balanced"}, "mixture of experts, dropless: the busiest expert's tokens over the mean")
	fs.BoolVar(&o.CausalFLOPs, "causal-flops", d.CausalFLOPs, "MFU counts causal attention as half its FLOPs, MaxText's convention since its PR 1988 (false: in full, PaLM's); the step time does not change")
	if !exporting {
		intVar(fs, &o.Top, "top", d.Top, 1, plan.MaxTop, "", "how many ranked layouts to show")
		durationVar(fs, &o.ExampleCost, "example-cost", d.ExampleCost, 0, plan.MaxExampleCost, "0: skip the check",
			"host CPU time to read and preprocess one sequence; checks the VM's vCPUs keep the chips fed")
		fs.BoolVar(&f.json, "json", false, "print JSON")
		fs.BoolVar(&f.verify, "verify", false, "also print how to check the plan before renting TPUs: MaxText's ahead-of-time compile on a CPU machine, then shardlab check\n(with --json as each plan's verify key, with --html as a section of the report)")
		fs.BoolVar(&f.goodput, "goodput", false, "add the expected goodput: failures at the default chip rate, Daly's checkpoint interval, time to train --tokens")
		tokensVar(fs, &f.tokens, 1e12, "tokens to train, for --goodput's time to train")
		fs.StringVar(&f.charts.html, "html", "", "also write the plan with its charts as one self-contained HTML `file`")
		fs.StringVar(&f.charts.svg, "svg", "", "also write the plan's charts as one SVG `file`")
		fs.StringVar(&f.charts.png, "png", "", "also write the plan's charts as one PNG `file`")
	}
	return fs, &f
}

func parseSchedule(s string) error { _, err := schedule.ParseKind(s); return err }

// options are the questions the flags ask plan: the built-in examples
// when no --model, --tpu, --mesh or --topology is given, else one.
func (f *planFlags) options(name string, set map[string]bool) ([]plan.Options, error) {
	if !set["model"] && !set["tpu"] && !set["mesh"] && !set["topology"] {
		if set["slices"] {
			return nil, bad("%s: --slices %d needs --tpu (or --model, --mesh or --topology): without them %s shows two built-in examples with their own slice counts", name, f.Slices, name)
		}
		return f.Options.Examples(), nil
	}
	o := f.Options
	if f.model != "" {
		o.Model = f.model
		spec, err := specFile("--model", f.model)
		if err != nil {
			return nil, err
		}
		o.ModelSpec = spec
	}
	if f.tpu != "" {
		o.TPU = f.tpu
	}
	return []plan.Options{o}, nil
}

func runPlan(args []string, stdout, stderr io.Writer) error {
	fs, f := newPlanFlags("plan", false)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := distinctOutputs(f.charts); err != nil {
		return err
	}
	if err := f.charts.check(); err != nil {
		return err
	}
	plans, opts, err := f.plansOf("plan", setFlags(fs))
	if err != nil && f.json {
		return failJSON(stdout, err)
	} else if err != nil {
		return err
	}
	if set := setFlags(fs); set["tokens"] && !f.goodput {
		return bad("plan: --tokens %g needs --goodput", f.tokens)
	}
	if !f.json && len(plans) == 1 {
		if _, err := io.WriteString(stdout, topologyNote(f.tpu, f.Topology, plans[0])); err != nil {
			return err
		}
	}
	adds := make([]addenda, len(plans))
	for i, p := range plans {
		adds[i].note = calibrationNote(p, f.calibration, f.cal, f.TempScale)
		if f.verify {
			s := planVerifySteps(p, opts[i], f.model, jobFlags(fs))
			adds[i].verify = &s
		}
	}
	if f.goodput {
		err = writeGoodputPlans(stdout, plans, adds, f.json, f.tokens)
	} else {
		err = writePlans(stdout, plans, adds, f.json, calibrated, nil)
	}
	if err != nil {
		return err
	}
	if f.charts.any() {
		if err := f.charts.write(plans, adds); err != nil {
			return err
		}
	}
	for _, a := range adds {
		if a.verify != nil && !f.json {
			if _, err := io.WriteString(stdout, "\n"+heldNote(*a.verify)+compileNote(*a.verify)); err != nil {
				return err
			}
		}
	}
	for _, p := range plans {
		if mem := p.Best.Estimate.Memory; !mem.Fits() {
			return fmt.Errorf("plan: the --mesh layout does not fit: %s", mem.Shortfall())
		}
	}
	return nil
}

// topologyNote says what --topology replaced, when it is not the
// accelerator type's own: that type's default topology, and the slice the
// plan is of (--tpu v5p-128 --topology 4x4x8 plans a v5p-256); "" when
// --topology is not given or is the default.
func topologyNote(tpu, topology string, p plan.Plan) string {
	of := tpu
	if tpu == "" {
		tpu, of = plan.DefaultTPU, plan.DefaultTPU+", --tpu's default"
	}
	def, err := hw.ParseAcceleratorType(tpu)
	got := p.Request.Multislice.Slice
	if topology == "" || err != nil || def.Topology == got.Topology {
		return ""
	}
	return fmt.Sprintf("Note: --topology %s replaced the default topology of %s (%s, %s): the plan's slice is a %s (%s, %s)\n\n",
		topology, of, def.Topology, unit.Plural(def.Chips(), "chip"), got.AcceleratorType(), got.Topology, unit.Plural(got.Chips(), "chip"))
}

// distinctOutputs refuses two of --html, --svg and --png naming one file,
// which the later would overwrite.
func distinctOutputs(c chartFiles) error {
	outs := []struct{ flag, path string }{{"--html", c.html}, {"--svg", c.svg}, {"--png", c.png}}
	for i, a := range outs {
		for _, b := range outs[i+1:] {
			if a.path != "" && b.path != "" && samePath(a.path, b.path) {
				return bad("plan: %s %s and %s %s name one file, which would hold only the last written; give each its own file", a.flag, a.path, b.flag, b.path)
			}
		}
	}
	return nil
}

// samePath reports whether a and b name one file: one path once cleaned
// and made absolute, or, where both exist, one file (a link to it).
func samePath(a, b string) bool {
	if fa, err := os.Stat(a); err == nil {
		if fb, err := os.Stat(b); err == nil {
			return os.SameFile(fa, fb)
		}
	}
	aa, err1 := filepath.Abs(a)
	ab, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == ab
}

// plans asks plan the questions the flags ask.
func (f *planFlags) plans(name string, set map[string]bool) ([]plan.Plan, error) {
	plans, _, err := f.plansOf(name, set)
	return plans, err
}

// plansOf is plans, with the options each plan was planned from.
func (f *planFlags) plansOf(name string, set map[string]bool) ([]plan.Plan, []plan.Options, error) {
	opts, err := f.questions(name, set)
	if err != nil {
		return nil, nil, err
	}
	reqs := make([]plan.Request, len(opts))
	for i, o := range opts {
		if reqs[i], err = plan.ParseRequest(o); err != nil {
			return nil, nil, planError(err)
		}
	}
	var plans []plan.Plan
	for _, r := range reqs {
		p, err := searchRequest(r)
		if err != nil {
			return nil, nil, err
		}
		if p.Published, err = validate.Beside(p); err != nil {
			return nil, nil, err
		}
		plans = append(plans, p)
	}
	return plans, opts, nil
}

// planVerifySteps is plan --verify's steps of plan p of options o: where
// MaxText cannot run p and export maxtext holds MaxText's best in its
// place (export.MaxTextHeld, as the web's plan.json and verify section
// ask it), the steps of that layout (export.Held.Steps), which export
// writes and MaxText compiles; else p's own (verifySteps).
func planVerifySteps(p plan.Plan, o plan.Options, model string, flags []string) export.Steps {
	if held, err := export.MaxTextHeld(o, p, searchOptions); err == nil && held != nil {
		return held.Steps(model, cliCommands(flags))
	}
	return verifySteps(p, model, flags)
}

// heldNote is, for steps s of the layout export maxtext holds in place
// of the plan (Steps.Held), the line that says so (the steps' first
// note, export.Held.Steps); "" for the plan's own.
func heldNote(s export.Steps) string {
	if s.Held == "" || len(s.Notes) == 0 {
		return ""
	}
	return "Note: " + s.Notes[0] + "\n"
}

// searchOptions plans one job's options o, as plans does.
func searchOptions(o plan.Options) (plan.Plan, error) {
	r, err := plan.ParseRequest(o)
	if err != nil {
		return plan.Plan{}, planError(err)
	}
	return searchRequest(r)
}

// searchRequest plans request r.
func searchRequest(r plan.Request) (plan.Plan, error) {
	p, err := plan.Search(r)
	if err != nil {
		return plan.Plan{}, planError(err)
	}
	p.WeighOffload()
	return p, nil
}

// questions are the options of the questions the flags ask (options),
// with the temporaries' factor of a calibration file read first.
func (f *planFlags) questions(name string, set map[string]bool) ([]plan.Options, error) {
	if f.calibration != "" {
		if set["temp-scale"] {
			return nil, bad("%s: --calibration and --temp-scale both set the temporaries' factor; give one", name)
		}
		data, err := readFile("--calibration", f.calibration, 1<<16)
		if err != nil {
			return nil, err
		}
		c, err := cost.ParseMemoryCalibration(data)
		if err != nil {
			return nil, bad("%s: --calibration %s: %s", name, f.calibration, errtext.Detail(err))
		}
		f.TempScale, f.cal = c.TempScale, &c
	}
	return f.options(name, set)
}

// maxTextOnly sets an export's default options o to plan as MaxText runs
// (export.MaxTextOptions): an export runs on MaxText, so it searches only
// what MaxText runs. The defaults name no framework, which it could
// refuse: an error is a broken default, not a user's mistake.
func maxTextOnly(o *plan.Options) {
	mo, err := export.MaxTextOptions(*o)
	if err != nil {
		panic("shardlab: the default options' framework: " + err.Error())
	}
	*o = mo
}

// flagName spells a plan option as the flag that sets it:
// --max-global-batch.
func flagName(o plan.Option) string { return o.Flag() }

// phrasedError is a library's error in the CLI's words (an error of
// package plan with the options it names spelt as flags, hw's with the
// flag and value in front), still matching what it wraps (errors.Is,
// errors.As: isUsage).
type phrasedError struct {
	text string
	err  error
}

func (e phrasedError) Error() string { return e.text }

func (e phrasedError) Unwrap() error { return e.err }

// planError spells the options an error of package plan names as flags.
func planError(err error) error {
	return phrased(err, flagName, func(none *plan.NoPlanError) string { return "plan: " + none.Phrase(flagName) })
}

// phrased is err, an error of package plan or export, with the options
// it names spelt by spell in a command's words: an option error and an
// export error as they phrase them with spell, a search with no layout as
// noPlan words it. Any other error is err.
func phrased(err error, spell func(plan.Option) string, noPlan func(*plan.NoPlanError) string) error {
	var oe *plan.OptionError
	var none *plan.NoPlanError
	var xe *export.Error
	switch {
	case errors.As(err, &oe):
		return phrasedError{oe.Phrase(spell), err}
	case errors.As(err, &none):
		return phrasedError{noPlan(none), err}
	case errors.As(err, &xe):
		return phrasedError{xe.Phrase(spell), err}
	}
	return err
}

// addenda are what plan's flags add to a plan: the note of the
// temporaries' factor it was made with (nil for none), and with --verify
// its verify steps (nil without).
type addenda struct {
	note   *calibrationJSON
	verify *export.Steps
}

// calibratedPlan is a plan's JSON with the temporaries' factor it was
// made with, absent without one, and with --verify its verify steps.
type calibratedPlan struct {
	plan.JSON
	Calibration *calibrationJSON `json:"temporaries_calibration,omitempty"`
	Verify      *export.Steps    `json:"verify,omitempty"`
}

// writePlans writes the plans, each with its addenda (adds[i]): as JSON,
// each plan's doc — the one plan's document, or {"plans": [...]} for
// several; as text, each plan after its note and followed by more's
// lines (nil for none), a rule between plans (the verify steps follow
// them all). plan --goodput's plans are these with their goodput.
func writePlans[T any](w io.Writer, plans []plan.Plan, adds []addenda, asJSON bool,
	doc func(plan.Plan, addenda) T, more func(io.Writer, plan.Plan)) error {
	if asJSON {
		out := make([]T, len(plans))
		for i, p := range plans {
			out[i] = doc(p, adds[i])
		}
		if len(out) == 1 {
			return writeJSON(w, out[0])
		}
		return writeJSON(w, struct {
			Plans []T `json:"plans"`
		}{out})
	}
	for i, p := range plans {
		if i > 0 {
			fmt.Fprintln(w, "\n"+strings.Repeat("=", 72)+"\n")
		}
		if n := adds[i].note; n != nil {
			if err := n.writeText(w); err != nil {
				return err
			}
		}
		if err := p.WriteText(w, flagName); err != nil {
			return err
		}
		if more != nil {
			more(w, p)
		}
	}
	return nil
}

// calibrated is a plan's JSON with its addenda.
func calibrated(p plan.Plan, a addenda) calibratedPlan {
	return calibratedPlan{p.JSON(flagName), a.note, a.verify}
}
