package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"text/tabwriter"

	"shardlab/cost"
	"shardlab/emu"
	"shardlab/emu/mpi"
	"shardlab/export"
	"shardlab/hw"
	"shardlab/infeed"
	"shardlab/mesh"
	"shardlab/model"
	"shardlab/plan"
	"shardlab/schedule"
	"shardlab/schema"
	"shardlab/systolic"
	"shardlab/unit"
	"shardlab/validate"
)

// exit statuses
const (
	exitOK    = 0
	exitError = 1 // the question has no answer (no layout fits)
	exitUsage = 2 // bad input
	// exitStopped: under mpirun, a peer rank stopped answering (the status
	// the MPI watchdog used to exit with itself)
	exitStopped = 3
)

// usageError marks bad input: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func bad(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// run is the whole command; main only exits with its status.
func run(args []string, stdout, stderr io.Writer) int {
	var err error
	switch {
	case len(args) == 0:
		err = bad("no command, want %s (run 'shardlab help' for the usage)", commandList)
	case args[0] == "help" && len(args) > 1 && !isHelp(args[1]):
		// shardlab help CMD [SUB] is shardlab CMD [SUB] -h
		return run(append(append([]string{}, args[1:]...), "-h"), stdout, stderr)
	default:
		err = runCommand(args, stdout, stderr)
	}
	if err == nil {
		return exitOK
	}
	var help helpText
	if errors.As(err, &help) {
		fmt.Fprint(stdout, string(help))
		return exitOK
	}
	var reported reportedError
	if errors.As(err, &reported) {
		return reported.code
	}
	fmt.Fprintf(stderr, "shardlab: %s\n", oneLine(err.Error()))
	var stopped *mpi.StoppedError
	switch {
	case isUsage(err):
		return exitUsage
	case errors.As(err, &stopped):
		return exitStopped
	}
	return exitError
}

// reportedError is an error the command has already written to stderr; it
// only sets the exit status.
type reportedError struct {
	err  error
	code int
}

func (e reportedError) Error() string { return e.err.Error() }
func (e reportedError) Unwrap() error { return e.err }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func isHelp(s string) bool { return s == "-h" || s == "-help" || s == "--help" || s == "help" }

// version is the module version and VCS revision the binary was built
// from, as the Go toolchain recorded them.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "shardlab: no build information (" + runtime.Version() + ")"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	out := "shardlab " + v
	var vcs []string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			vcs = append([]string{"revision " + s.Value}, vcs...)
		case s.Key == "vcs.time":
			vcs = append(vcs, s.Value)
		case s.Key == "vcs.modified" && s.Value == "true":
			vcs = append(vcs, "modified")
		}
	}
	if len(vcs) > 0 {
		out += " (" + strings.Join(vcs, ", ") + ")"
	}
	return out + ", " + bi.GoVersion
}

// catalogUsage is what 'shardlab hw -h' and 'shardlab model -h' print.
var catalogUsage = map[string]string{
	"hw": `usage of shardlab hw:
  shardlab hw list [--json]        the TPU catalog
  shardlab hw show NAME [--json]   one generation (v5p) or accelerator type (v5p-128)
`,
	"model": `usage of shardlab model:
  shardlab model list [--json]        the model catalog
  shardlab model show NAME [--json]   a catalog model (llama3-8b) or a YAML/JSON spec file of at most 1 MiB
`,
}

// newCatalogFlags defines the flags of hw and model.
func newCatalogFlags(cmd string) (*flag.FlagSet, *bool) {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	return fs, fs.Bool("json", false, "print JSON")
}

// catalogArgs reads "list" or "show NAME" with an optional --json before or
// after the name; -h gives the usage.
func catalogArgs(cmd string, args []string) (sub string, names []string, asJSON bool, err error) {
	if len(args) > 0 && isHelp(args[0]) || len(args) > 1 && isHelp(args[1]) {
		return "", nil, false, helpText(catalogUsage[cmd])
	}
	if len(args) == 0 {
		return "", nil, false, bad("%s: want '%s list' or '%s show NAME'", cmd, cmd, cmd)
	}
	fs, j := newCatalogFlags(cmd)
	fs.SetOutput(io.Discard)
	names, err = parseInterleaved(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		err = helpText(catalogUsage[cmd])
	}
	return args[0], names, *j, err
}

// parseInterleaved parses flags that may come before or after positional
// arguments ("hw show v5p --json") and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	g := guard(fs)
	defer g.restore()
	var names []string
	for {
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			return nil, err
		} else if err != nil && g.err != nil {
			return nil, g.err
		} else if err != nil {
			return nil, bad("%s: %v", fs.Name(), err)
		}
		if fs.NArg() == 0 {
			return names, nil
		}
		if why := model.NotText(fs.Arg(0)); why != "" {
			return nil, bad("%s: argument %s, want printable text: %s", fs.Name(), strconv.QuoteToASCII(fs.Arg(0)), why)
		}
		names = append(names, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// isUsage reports whether err comes from bad input.
func isUsage(err error) bool {
	var ue usageError
	var pe *hw.ParseError
	var fe *model.FieldError
	var me *mesh.Error
	return errors.As(err, &ue) || errors.As(err, &pe) || errors.As(err, &fe) || errors.As(err, &me) ||
		errors.Is(err, model.ErrInvalid) || errors.Is(err, plan.ErrRequest) || errors.Is(err, cost.ErrJob) ||
		errors.Is(err, mesh.ErrTensorOverDCN) || errors.Is(err, mesh.ErrContextOverDCN) || errors.Is(err, schedule.ErrInvalid) || errors.Is(err, systolic.ErrInvalid) ||
		errors.Is(err, infeed.ErrInvalid) || errors.Is(err, emu.ErrInvalid) || errors.Is(err, emu.ErrCheckpoint) || errors.Is(err, validate.ErrInvalid) ||
		errors.Is(err, export.ErrUnsupported) || errors.Is(err, export.ErrInvalid)
}

// planFlags are the options of plan and export: plan's options,
// filled by the flags over plan.DefaultOptions, and the CLI's own.
type planFlags struct {
	plan.Options
	// model and tpu are "" when not given: without them, nor --mesh or
	// --topology, the command shows plan's built-in examples.
	model, tpu string
	json       bool
	// verify prints how to compile the plan ahead of time and check it.
	verify bool
	// calibration is a memory calibration file, for TempScale.
	calibration string
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
func newPlanFlags(name string, export bool) (*flag.FlagSet, *planFlags) {
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
	fs.StringVar(&o.MaxGlobalBatch, "max-global-batch", d.MaxGlobalBatch, "convergence limit on the global batch, sequences or tokens")
	fs.StringVar(&o.Mesh, "mesh", d.Mesh, "cost this one layout, in JAX devices as MaxText counts them (2 a TPU7x, v3 or v2 chip), e.g. data=2(dcn),fsdp=64 (default: search all)")
	remats := []string{}
	for _, r := range cost.Remats() {
		remats = append(remats, string(r))
	}
	choiceVar(fs, &o.Remat, "remat", d.Remat, remats, nil, "MaxText remat_policy (default: search none, minimal, save_dot_except_mlp, save_qkv_proj and full)")
	fs.StringVar(&o.RematCustom, "remat-custom", d.RematCustom, "with --remat custom: tensor=device|offload|remat, comma-separated (decoder_layer_input, query_proj, key_proj,\nvalue_proj, context, out_proj, mlpwi_0, mlpwi_1, mlpwo)")
	choiceVar(fs, &o.Quantization, "quantization", d.Quantization, []string{"none", "int8", "fp8"}, nil, "matmul format: none (bf16), int8 or fp8 (the chip's peak for that format)")
	choiceVar(fs, &o.Attention, "attention", d.Attention, []string{"flash", "dot_product"}, nil, "attention kernel: flash (skips masked causal blocks, keeps no scores) or dot_product")
	fs.BoolVar(&o.OptimizerOffload, "optimizer-offload", d.OptimizerOffload, "keep the optimizer state in host memory (MaxText optimizer_memory_host_offload)")
	fs.BoolVar(&o.ParameterOffload, "parameter-offload", d.ParameterOffload, "keep the parameters in host memory (MaxText parameter_memory_host_offload)")
	intVar(fs, &o.VocabTiles, "vocab-tiles", d.VocabTiles, 1, plan.MaxVocabTiles, "", "split the logits and loss into this many chunks (MaxText num_vocab_tiling)")
	choiceVar(fs, &o.Schedule, "schedule", d.Schedule, []string{"gpipe", "1f1b", "interleaved", "circular"}, parseSchedule, "pipeline schedule (default: search gpipe, 1f1b and interleaved with 2 and 4 chunks)")
	if export {
		// An export runs on MaxText: search only what it runs.
		o.Framework = string(plan.FrameworkMaxText)
	} else {
		choiceVar(fs, &o.Framework, "framework", d.Framework, []string{"maxtext"}, nil, "search only what this framework runs: maxtext (gpipe and circular pipelines; default: every schedule)")
	}
	intVar(fs, &o.Chunks, "chunks", d.Chunks, 0, plan.MaxChunks, "0: 2 for interleaved, 1 for circular", "chunks of layers per pipeline device (interleaved; circular: MaxText num_pipeline_repeats)")
	choiceVar(fs, &o.Precision, "precision", d.Precision, []string{"maxtext", "bf16", "zero"}, nil, "maxtext (weight_dtype float32: fp32 weights, grads and Adam moments, 16 B/param), bf16 (weight_dtype bfloat16: 8 B/param) or zero (bf16 weights and grads, fp32 master and moments, 16 B/param)")
	floatVar(fs, &o.Efficiency, "efficiency", d.Efficiency, floatFlag{lo: plan.MinEfficiency, hi: 1, zero: "the generation's calibrated value"}, "residual efficiency of the matmuls after their MXU shapes")
	floatVar(fs, &o.HBMHeadroom, "hbm-headroom", d.HBMHeadroom, floatFlag{lo: 0, hi: 1, hiOpen: true}, "fraction of HBM kept free")
	floatVar(fs, &o.TempScale, "temp-scale", d.TempScale, floatFlag{lo: cost.MinTempScale, hi: cost.MaxTempScale, zero: "none"}, "scale the estimate of the step's temporaries (gradients, held activations, the largest phase) by this factor, what a compile of the job reported over the estimate (--calibration sets it from a file)")
	fs.StringVar(&f.calibration, "calibration", "", "read --temp-scale from a calibration `file` that 'shardlab check --compile-log LOG --write-calibration FILE' wrote")
	floatVar(fs, &o.CapacityFactor, "capacity-factor", d.CapacityFactor, floatFlag{lo: plan.MinCapacityFactor, hi: plan.MaxCapacityFactor, zero: "dropless (MaxText sparse_matmul, megablox)"}, "mixture of experts: each expert takes at most ceil(factor x tokens x k / experts) rows per device, the rest dropped (MaxText capacity_factor)")
	floatVar(fs, &o.LoadImbalance, "load-imbalance", d.LoadImbalance, floatFlag{lo: 1, hi: plan.MaxLoadImbalance, zero: "balanced"}, "mixture of experts, dropless: the busiest expert's tokens over the mean")
	fs.BoolVar(&o.CausalFLOPs, "causal-flops", d.CausalFLOPs, "MFU counts causal attention as half its FLOPs, MaxText's convention since its PR 1988 (false: in full, PaLM's); the step time does not change")
	if !export {
		intVar(fs, &o.Top, "top", d.Top, 1, plan.MaxTop, "", "how many ranked layouts to show")
		durationVar(fs, &o.ExampleCost, "example-cost", d.ExampleCost, 0, plan.MaxExampleCost, "0: skip the check",
			"host CPU time to read and preprocess one sequence; checks the VM's vCPUs keep the chips fed")
		fs.BoolVar(&f.json, "json", false, "print JSON")
		fs.BoolVar(&f.verify, "verify", false, "also print how to check the plan before renting TPUs: MaxText's ahead-of-time compile on a CPU machine, then shardlab check")
		fs.BoolVar(&f.goodput, "goodput", false, "add the expected goodput: failures at the default chip rate, Daly's checkpoint interval, time to train --tokens")
		floatVar(fs, &f.tokens, "tokens", 1e12, floatFlag{lo: 1, hi: 1e16}, "tokens to train, for --goodput's time to train")
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
	if err := f.charts.check(); err != nil {
		return err
	}
	plans, err := f.plans("plan", setFlags(fs))
	if err != nil {
		return err
	}
	if set := setFlags(fs); set["tokens"] && !f.goodput {
		return bad("plan: --tokens %g needs --goodput", f.tokens)
	}
	if f.goodput {
		err = writeGoodputPlans(stdout, plans, f.json, f.tokens)
	} else {
		err = writePlans(stdout, plans, f.json)
	}
	if err != nil {
		return err
	}
	if f.charts.any() {
		if err := f.charts.write(plans); err != nil {
			return err
		}
	}
	if f.verify && !f.json {
		for _, p := range plans {
			if _, err := io.WriteString(stdout, "\n"+compileNote(p, jobFlags(fs))); err != nil {
				return err
			}
		}
	}
	for _, p := range plans {
		if mem := p.Best.Estimate.Memory; !mem.Fits() {
			return fmt.Errorf("plan: the --mesh layout does not fit in HBM: %v of %v usable, over by %v", mem.Total(), mem.Usable, mem.Total()-mem.Usable)
		}
	}
	return nil
}

// plans asks plan the questions the flags ask.
func (f *planFlags) plans(name string, set map[string]bool) ([]plan.Plan, error) {
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
			return nil, bad("%s: --calibration %s: %s", name, f.calibration, err)
		}
		f.TempScale = c.TempScale
	}
	opts, err := f.options(name, set)
	if err != nil {
		return nil, err
	}
	reqs := make([]plan.Request, len(opts))
	for i, o := range opts {
		if reqs[i], err = plan.ParseRequest(o); err != nil {
			return nil, planError(err)
		}
	}
	var plans []plan.Plan
	for _, r := range reqs {
		p, err := plan.Search(r)
		if err != nil {
			return nil, planError(err)
		}
		plans = append(plans, p)
	}
	return plans, nil
}

// flagName spells a plan option as the flag that sets it:
// --max-global-batch.
func flagName(o plan.Option) string { return o.Flag() }

// phrasedError is an error of package plan with the options it names
// spelt as flags.
type phrasedError struct {
	text string
	err  error
}

func (e phrasedError) Error() string { return e.text }
func (e phrasedError) Unwrap() error { return e.err }

// planError spells the options an error of package plan names as flags.
func planError(err error) error {
	var oe *plan.OptionError
	var none *plan.NoPlanError
	var xe *export.Error
	switch {
	case errors.As(err, &oe):
		return phrasedError{oe.Phrase(flagName), err}
	case errors.As(err, &none):
		return phrasedError{"plan: " + none.Phrase(flagName), err}
	case errors.As(err, &xe):
		return phrasedError{xe.Phrase(flagName), err}
	}
	return err
}

func writePlans(stdout io.Writer, plans []plan.Plan, asJSON bool) error {
	switch {
	case asJSON && len(plans) == 1:
		return plans[0].WriteJSON(stdout, flagName)
	case asJSON:
		out := make([]plan.JSON, len(plans))
		for i, p := range plans {
			out[i] = p.JSON(flagName)
		}
		return writeJSON(stdout, struct {
			Plans []plan.JSON `json:"plans"`
		}{out})
	default:
		for i, p := range plans {
			if i > 0 {
				fmt.Fprintln(stdout, "\n"+strings.Repeat("=", 72)+"\n")
			}
			if err := p.WriteText(stdout, flagName); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadModel finds a catalog model or reads a spec file; what names the
// flag or command for errors ("--model").
func loadModel(what, name string) (model.Spec, error) {
	data, err := specFile(what, name)
	if err != nil {
		return model.Spec{}, err
	}
	if data == nil {
		s, _ := model.Lookup(name)
		return s, nil
	}
	s, err := model.Parse(data)
	if err != nil {
		return model.Spec{}, fmt.Errorf("%s %s: %w", what, name, err)
	}
	if s.Name == "" {
		s.Name = name
	}
	return s, nil
}

// specFile reads the spec file name names, unless it names a catalog
// model (nil, nil); what names the flag or command for errors ("--model").
func specFile(what, name string) ([]byte, error) {
	if _, ok := model.Lookup(name); ok {
		return nil, nil
	}
	if _, err := os.Stat(name); err != nil {
		return nil, bad("%s %q: not a catalog model (%s) nor a readable YAML/JSON file", what, name, strings.Join(model.Names(), ", "))
	}
	data, err := readFile(what, name, maxSpecBytes)
	if err == nil && data == nil {
		data = []byte{} // an empty file is an empty spec, not a catalog name
	}
	return data, err
}

// parseTPU reads --tpu everywhere it appears: a generation (tpu7x) or an
// accelerator type (tpu7x-8), through the hw package's parsers. slice is
// nil for a generation.
func parseTPU(what, s string) (hw.Chip, *hw.Slice, error) {
	slice, err := hw.ParseTPU(s)
	switch {
	case err != nil:
		return hw.Chip{}, nil, fmt.Errorf("%s: %w", what, err)
	case slice.Chips() == 0:
		return slice.Chip, nil, nil
	}
	return slice.Chip, &slice, nil
}

// hostSlice is a generation's smallest slice of whole hosts (tpu7x-8,
// v5p-8, v5litepod-4).
func hostSlice(c hw.Chip) (hw.Slice, error) {
	for _, name := range c.AcceleratorTypes() {
		s, err := hw.ParseAcceleratorType(name)
		if err == nil && s.Chips() >= c.Host.Chips {
			return s, nil
		}
	}
	return hw.Slice{}, bad("--tpu %s: no slice of whole hosts in the catalog", c.Generation)
}

func runHW(args []string, stdout, stderr io.Writer) error {
	sub, names, asJSON, err := catalogArgs("hw", args)
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		if len(names) > 0 {
			return bad("hw list: unexpected argument %q; 'hw show NAME' shows one", names[0])
		}
		chips := hw.Chips()
		if asJSON {
			return writeJSON(stdout, struct {
				Chips []hw.Chip `json:"chips"`
			}{chips})
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "generation\tname\tbf16\tHBM\tHBM BW\tICI per link\tDCN per chip\tTC x MXU\thost\tmax slice")
		for _, c := range chips {
			mxu := "?"
			if c.MXUsPerTensorCore > 0 {
				mxu = fmt.Sprint(c.MXUsPerTensorCore)
			}
			dcn := "no multislice"
			if c.DCNPerChip > 0 {
				dcn = fmt.Sprintf("%.1f Gbit/s", c.DCNPerChip.Bits()/1e9)
			}
			fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%v\t%d x %v\t%s\t%d x %s of %dx%d\t%s (%s)\t%s\n", c.Generation, c.Name, c.PeakBF16, c.HBM,
				c.HBMBandwidth, c.ICILinks, c.ICILinkBandwidth, dcn, c.TensorCores, mxu, c.MXUDim, c.MXUDim, c.Host.MachineType, unit.Plural(c.Host.Chips, "chip"),
				unit.Plural(c.MaxSliceChips, "chip"))
		}
		return tw.Flush()
	case "show":
		if len(names) != 1 {
			return bad("hw show: want one NAME, a generation (v5p) or an accelerator type (v5p-128)")
		}
		return showHW(names[0], asJSON, stdout)
	}
	return bad("hw: unknown subcommand %q, want list or show", sub)
}

func showHW(name string, asJSON bool, w io.Writer) error {
	c, slice, err := parseTPU("hw show", name)
	if err != nil {
		return err
	}
	if asJSON {
		if slice != nil {
			return writeJSON(w, struct {
				AcceleratorType string  `json:"accelerator_type"`
				Topology        string  `json:"topology"`
				Chips           int     `json:"chips"`
				Hosts           int     `json:"hosts"`
				Chip            hw.Chip `json:"chip"`
			}{slice.AcceleratorType(), slice.Topology.String(), slice.Chips(), slice.Hosts(), c})
		}
		return writeJSON(w, c)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if slice != nil {
		var wraps []string
		for i := range slice.Topology.Dims() {
			wraps = append(wraps, fmt.Sprint(slice.Wraps(i)))
		}
		fmt.Fprintf(tw, "accelerator type\t%s\n", slice.AcceleratorType())
		fmt.Fprintf(tw, "topology\t%s (wraparound %s)\n", slice.Topology, strings.Join(wraps, ", "))
		fmt.Fprintf(tw, "chips\t%d on %s\n", slice.Chips(), unit.Plural(slice.Hosts(), "host"))
	}
	fmt.Fprintf(tw, "generation\t%s (%s)\n", c.Generation, c.Name)
	fmt.Fprintf(tw, "peak bf16\t%v\n", c.PeakBF16)
	if c.PeakFP8 > 0 {
		fmt.Fprintf(tw, "peak fp8\t%v\n", c.PeakFP8)
	}
	if c.PeakInt8 > 0 {
		fmt.Fprintf(tw, "peak int8\t%.0f TOP/s\n", float64(c.PeakInt8)/1e12)
	}
	fmt.Fprintf(tw, "HBM\t%v at %v\n", c.HBM, c.HBMBandwidth)
	mxus := "MXUs per TensorCore not published"
	if c.MXUsPerTensorCore > 0 {
		mxus = unit.Plural(c.MXUsPerTensorCore, "MXU") + " each"
	}
	fmt.Fprintf(tw, "TensorCores\t%d, %s, MXU %dx%d\n", c.TensorCores, mxus, c.MXUDim, c.MXUDim)
	fmt.Fprintf(tw, "ICI\t%dD torus, %d links of %v each way\n", c.TorusDims, c.ICILinks, c.ICILinkBandwidth)
	if c.DCNPerChip > 0 {
		fmt.Fprintf(tw, "DCN\t%.1f Gbit/s per chip, %.0f Gbit/s per host\n", c.DCNPerChip.Bits()/1e9, c.DCNPerHost().Bits()/1e9)
	} else {
		fmt.Fprintf(tw, "DCN\tno Multislice\n")
	}
	h := c.Host
	fmt.Fprintf(tw, "host VM\t%s: %s", h.MachineType, unit.Plural(h.Chips, "chip"))
	if h.VCPUs > 0 {
		fmt.Fprintf(tw, ", %s", unit.Plural(h.VCPUs, "vCPU"))
	}
	if h.RAM > 0 {
		fmt.Fprintf(tw, ", %.0f GB RAM", float64(h.RAM)/1e9)
	}
	if h.NUMANodes > 0 {
		fmt.Fprintf(tw, ", %s", unit.Plural(h.NUMANodes, "NUMA node"))
	}
	if h.BootDisk != "" {
		fmt.Fprintf(tw, ", boot disk %s, data disks %s", h.BootDisk, strings.Join(h.DataDisks, " or "))
	}
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "JAX devices per chip\t%d\n", c.JAXDevicesPerChip)
	fmt.Fprintf(tw, "largest slice\t%s (pod %s)\n", unit.Plural(c.MaxSliceChips, "chip"), unit.Plural(c.PodChips, "chip"))
	types := c.AcceleratorTypes()
	if len(types) > 8 {
		types = append(types[:6:6], "…", types[len(types)-1])
	}
	fmt.Fprintf(tw, "accelerator types\t%s\n", strings.Join(types, ", "))
	fmt.Fprintf(tw, "sources\t%s\n", strings.Join(c.Sources, "; "))
	return tw.Flush()
}

func runModel(args []string, stdout, stderr io.Writer) error {
	sub, names, asJSON, err := catalogArgs("model", args)
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		if len(names) > 0 {
			return bad("model list: unexpected argument %q; 'model show NAME' shows one", names[0])
		}
		specs := model.Catalog()
		if asJSON {
			out := make([]model.Summary, len(specs))
			for i, s := range specs {
				out[i] = s.Summarize()
			}
			return writeJSON(stdout, struct {
				Models []model.Summary `json:"models"`
			}{out})
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "name\tparams\tpublished\tactive\tlayers\td_model\theads\tkv\td_ff\texperts\tvocab\tseq\t")
		for _, s := range specs {
			active, experts := "-", "-"
			if s.MoE() {
				active = fmt.Sprintf("%.2fB", float64(s.ParamCount().Active())/1e9)
				experts = fmt.Sprintf("%d/%d", s.ExpertsPerToken, s.Experts)
			}
			fmt.Fprintf(tw, "%s\t%.2fB\t%.2fB\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t\n", s.Name, float64(s.ParamCount().Total())/1e9,
				float64(s.Published)/1e9, active, s.Layers, s.DModel, s.Heads, s.KV(), s.DFF, experts, s.Vocab, s.SeqLen)
		}
		return tw.Flush()
	case "show":
		if len(names) != 1 {
			return bad("model show: want one NAME or spec file")
		}
		s, err := loadModel("model show", names[0])
		if err != nil {
			return err
		}
		if asJSON {
			return writeJSON(stdout, s.Summarize())
		}
		p := s.ParamCount()
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "name\t%s\n", s.Name)
		fmt.Fprintf(tw, "shape\t%s, d_model %d, %s (%d KV) of %d, d_ff %d, vocab %d, seq %d\n",
			unit.Plural(s.Layers, "layer"), s.DModel, unit.Plural(s.Heads, "head"), s.KV(), s.Head(), s.DFF, s.Vocab, s.SeqLen)
		fmt.Fprintf(tw, "parameters\t%d (%.3fB)", p.Total(), float64(p.Total())/1e9)
		if s.Published > 0 {
			fmt.Fprintf(tw, "; published %d (%+.2f%%)", s.Published, 100*float64(p.Total()-s.Published)/float64(s.Published))
		}
		fmt.Fprintln(tw)
		if s.MoE() {
			fmt.Fprintf(tw, "active parameters\t%d (%.3fB)", p.Active(), float64(p.Active())/1e9)
			if s.PublishedActive > 0 {
				fmt.Fprintf(tw, "; published %d (%+.2f%%)", s.PublishedActive, 100*float64(p.Active()-s.PublishedActive)/float64(s.PublishedActive))
			}
			fmt.Fprintln(tw)
			fmt.Fprintf(tw, "experts\t%d routed (%d per token) and %d shared of d_ff %d in %d of %d layers\n",
				s.Experts, s.ExpertsPerToken, s.SharedExperts, s.ExpertFF(), p.MoELayers, s.Layers)
			fmt.Fprintf(tw, "  per MoE layer\tattention %d, router %d, experts %d x %d, shared %d, norms %d\n",
				p.Attention, p.Router, p.Experts, p.Expert, p.Shared, p.Norms)
		}
		if p.DenseLayers() > 0 {
			fmt.Fprintf(tw, "  per dense layer\tattention %d, MLP %d, norms %d\n", p.Attention, p.MLP, p.Norms)
		}
		fmt.Fprintf(tw, "  embeddings\tinput %d, output %d\n", p.Embedding, p.Output)
		fmt.Fprintf(tw, "training FLOPs/token\t%.4g at seq %d (6N + 12·L·H·Q·T; N the matmul parameters a token uses)\n", s.FLOPsPerToken(s.SeqLen, false), s.SeqLen)
		if s.Source != "" {
			fmt.Fprintf(tw, "source\t%s\n", s.Source)
		}
		return tw.Flush()
	}
	return bad("model: unknown subcommand %q, want list or show", sub)
}

// writeJSON writes v, a JSON object, with its schema version first.
func writeJSON(w io.Writer, v any) error { return schema.Write(w, v) }
