package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"shardlab/cost"
	"shardlab/emu"
	"shardlab/export"
	"shardlab/hw"
	"shardlab/infeed"
	"shardlab/mesh"
	"shardlab/model"
	"shardlab/plan"
	"shardlab/schedule"
	"shardlab/systolic"
	"shardlab/unit"
)

const usage = `shardlab: plan TPU training layouts

usage:
  shardlab plan [flags]            plan a job (no flags: two built-in examples)
  shardlab export maxtext [flags]  the planned layout as a MaxText config
  shardlab mxu [flags]             one GEMM on a systolic MXU, cycle by cycle
  shardlab mxu compare [flags]     the same GEMM on CPU, GPU and TPU execution models
  shardlab infeed [flags]          a host's input pipeline, event by event
  shardlab run [flags]             train a small transformer on virtual chips with a layout
  shardlab hw list|show NAME       the TPU catalog (NAME: v5p or v5p-128)
  shardlab model list|show NAME    the model catalog (NAME or a YAML/JSON file)

run 'shardlab plan -h' for the plan flags
`

// exit statuses
const (
	exitOK    = 0
	exitError = 1 // the question has no answer (no layout fits)
	exitUsage = 2 // bad input
)

// usageError marks bad input: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func bad(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// run is the whole command; main only exits with its status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "plan":
		err = runPlan(args[1:], stdout, stderr, false)
	case "export":
		if len(args) < 2 || args[1] != "maxtext" {
			err = bad("export: want 'export maxtext [plan flags]'")
			break
		}
		err = runPlan(args[2:], stdout, stderr, true)
	case "mxu":
		err = runMXU(args[1:], stdout, stderr)
	case "infeed":
		err = runInfeed(args[1:], stdout, stderr)
	case "run":
		err = runEmu(args[1:], stdout, stderr)
	case "hw":
		err = runHW(args[1:], stdout)
	case "model":
		err = runModel(args[1:], stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		err = bad("unknown command %q, want plan, export, run, mxu, infeed, hw or model", args[0])
	}
	if err == nil {
		return exitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintf(stderr, "shardlab: %s\n", oneLine(err.Error()))
	if isUsage(err) {
		return exitUsage
	}
	return exitError
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// catalogArgs reads "list" or "show NAME" with an optional --json before or
// after the name.
func catalogArgs(cmd string, args []string) (sub string, names []string, asJSON bool, err error) {
	if len(args) == 0 {
		return "", nil, false, bad("%s: want '%s list' or '%s show NAME'", cmd, cmd, cmd)
	}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	j := fs.Bool("json", false, "print JSON")
	names, err = parseInterleaved(fs, args[1:])
	return args[0], names, *j, err
}

// parseInterleaved parses flags that may come before or after positional
// arguments ("hw show v5p --json") and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var names []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, bad("%s: %v", fs.Name(), err)
		}
		if fs.NArg() == 0 {
			return names, nil
		}
		names = append(names, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// parseFlags parses a subcommand's flags: -h prints the flags to stderr,
// anything wrong is a one-line usage error.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stderr)
		fmt.Fprintf(stderr, "usage of shardlab %s:\n", fs.Name())
		fs.PrintDefaults()
		return err
	case err != nil:
		return bad("%s: %v (run 'shardlab %s -h' for the flags)", fs.Name(), err, fs.Name())
	case fs.NArg() > 0:
		return bad("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// isUsage reports whether err comes from bad input.
func isUsage(err error) bool {
	var ue usageError
	var pe *hw.ParseError
	var fe *model.FieldError
	var me *mesh.Error
	return errors.As(err, &ue) || errors.As(err, &pe) || errors.As(err, &fe) || errors.As(err, &me) ||
		errors.Is(err, model.ErrInvalid) || errors.Is(err, plan.ErrRequest) || errors.Is(err, cost.ErrJob) ||
		errors.Is(err, mesh.ErrTensorOverDCN) || errors.Is(err, schedule.ErrInvalid) || errors.Is(err, systolic.ErrInvalid) ||
		errors.Is(err, infeed.ErrInvalid) || errors.Is(err, emu.ErrInvalid) || errors.Is(err, emu.ErrCheckpoint)
}

type planFlags struct {
	model, tpu, topology, mesh string
	slices                     int
	dcnGbps                    float64
	seq                        int
	batch, maxBatch            string
	remat, sched, precision    string
	efficiency, headroom       float64
	causal, json               bool
	top                        int
	exampleCost                time.Duration
}

func runPlan(args []string, stdout, stderr io.Writer, toMaxText bool) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	var f planFlags
	fs.StringVar(&f.model, "model", "", "catalog model name or a YAML/JSON spec file (default llama3-8b)")
	fs.StringVar(&f.tpu, "tpu", "", "accelerator type of one slice, e.g. tpu7x-8, v5p-128, v6e-256 (default tpu7x-8);\na generation alone (tpu7x) picks the smallest footprint: one host, a slice, or slices")
	fs.StringVar(&f.topology, "topology", "", "slice topology AxB or AxBxC, overriding the accelerator type's default")
	fs.IntVar(&f.slices, "slices", 1, "number of slices joined by DCN")
	fs.Float64Var(&f.dcnGbps, "dcn-gbps", 0, "DCN bandwidth per host in Gbit/s (default: the catalog's)")
	fs.IntVar(&f.seq, "seq", 0, "sequence length in tokens (default: the model's)")
	fs.StringVar(&f.batch, "global-batch", "", "fix the global batch: N sequences, or Ntok tokens (k, M, Ki, Mi allowed: 4Mitok)")
	fs.StringVar(&f.maxBatch, "max-global-batch", "4Mitok", "convergence limit on the global batch, sequences or tokens")
	fs.StringVar(&f.mesh, "mesh", "", "cost this one layout, e.g. data=2(dcn),fsdp=64 (default: search all)")
	fs.StringVar(&f.remat, "remat", "", "none, selective or full (default: search all)")
	fs.StringVar(&f.sched, "schedule", "1f1b", "pipeline schedule: gpipe or 1f1b")
	fs.StringVar(&f.precision, "precision", "maxtext", "maxtext (fp32 weights and grads, 16 B/param) or zero (bf16 weights and grads, fp32 master, 16 B/param)")
	fs.Float64Var(&f.efficiency, "efficiency", cost.DefaultEfficiency, "fraction of peak FLOP/s the matmuls reach")
	fs.Float64Var(&f.headroom, "hbm-headroom", cost.DefaultHBMHeadroom, "fraction of HBM kept free")
	fs.BoolVar(&f.causal, "causal-flops", false, "halve attention FLOPs in MFU (MaxText's convention)")
	fs.IntVar(&f.top, "top", 5, "how many ranked layouts to show")
	fs.DurationVar(&f.exampleCost, "example-cost", 0, "host CPU time to read and preprocess one sequence; checks the VM's vCPUs keep the chips fed (0: skip)")
	fs.BoolVar(&f.json, "json", false, "print JSON")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })

	var reqs []plan.Request
	if !set["model"] && !set["tpu"] && !set["mesh"] && !set["topology"] {
		// the built-in default: one VM, and two slices
		for _, d := range []struct {
			model, tpu string
			slices     int
		}{{"llama3-8b", "tpu7x-8", 1}, {"llama3-70b", "tpu7x-128", 2}} {
			g := f
			g.model, g.tpu, g.slices = d.model, d.tpu, d.slices
			r, err := g.request()
			if err != nil {
				return err
			}
			reqs = append(reqs, r)
		}
	} else {
		if f.model == "" {
			f.model = "llama3-8b"
		}
		if f.tpu == "" {
			f.tpu = "tpu7x-8"
		}
		r, err := f.request()
		if err != nil {
			return err
		}
		reqs = append(reqs, r)
	}
	var plans []plan.Plan
	for _, r := range reqs {
		var p plan.Plan
		var err error
		if r.Multislice.Chips() == 0 {
			// --tpu named only a generation: find the smallest footprint
			p, err = plan.SearchScope(r, r.Multislice.Slice.Chip, 64)
		} else {
			p, err = plan.Search(r)
		}
		if err != nil {
			return err
		}
		plans = append(plans, p)
	}
	switch {
	case toMaxText:
		for i, p := range plans {
			if i > 0 {
				fmt.Fprintln(stdout, "---")
			}
			if err := export.MaxText(stdout, p); err != nil {
				return err
			}
		}
	case f.json && len(plans) == 1:
		return plans[0].WriteJSON(stdout)
	case f.json:
		out := make([]plan.JSON, len(plans))
		for i, p := range plans {
			out[i] = p.JSON()
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	default:
		for i, p := range plans {
			if i > 0 {
				fmt.Fprintln(stdout, "\n"+strings.Repeat("=", 72)+"\n")
			}
			if err := p.WriteText(stdout); err != nil {
				return err
			}
		}
	}
	return nil
}

func (f planFlags) request() (plan.Request, error) {
	var r plan.Request
	spec, err := loadModel(f.model)
	if err != nil {
		return r, err
	}
	r.Model = spec
	if c, err := hw.Lookup(f.tpu); err == nil {
		// a generation without a size: the planner picks one host, a slice or a multislice
		if f.topology != "" || f.slices != 1 {
			return r, bad("--tpu %s names no size; give an accelerator type (e.g. %s) to use --topology or --slices", f.tpu, c.AcceleratorTypes()[1])
		}
		r.Multislice.Slice.Chip = c
		return f.finish(r, spec)
	}
	slice, err := hw.ParseAcceleratorType(f.tpu)
	if err != nil {
		return r, err
	}
	if f.topology != "" {
		if slice, err = hw.ParseTopology(slice.Chip, f.topology); err != nil {
			return r, err
		}
	}
	if f.slices < 1 || f.slices > 4096 {
		return r, bad("--slices %d, want 1 to 4096", f.slices)
	}
	if f.dcnGbps < 0 {
		return r, bad("--dcn-gbps %v, want a positive bandwidth in Gbit/s per host", f.dcnGbps)
	}
	ms, err := hw.NewMultislice(slice, f.slices, unit.BitsPerSecond(f.dcnGbps*1e9))
	if err != nil {
		return r, err
	}
	r.Multislice = ms
	return f.finish(r, spec)
}

// finish reads the flags that do not depend on the topology.
func (f planFlags) finish(r plan.Request, spec model.Spec) (plan.Request, error) {
	var err error
	if f.seq < 0 || f.seq > 1<<24 {
		return r, bad("--seq %d, want a positive number of tokens", f.seq)
	}
	r.Seq = f.seq
	seq := f.seq
	if seq == 0 {
		seq = spec.SeqLen
	}
	if r.MaxGlobalBatch, err = parseBatch("--max-global-batch", f.maxBatch, seq, false); err != nil {
		return r, err
	}
	if f.batch != "" {
		if r.GlobalBatch, err = parseBatch("--global-batch", f.batch, seq, true); err != nil {
			return r, err
		}
		if r.GlobalBatch > r.MaxGlobalBatch {
			r.MaxGlobalBatch = r.GlobalBatch
		}
	}
	if f.mesh != "" {
		if r.Axes, err = mesh.ParseAxes(f.mesh); err != nil {
			return r, err
		}
	}
	if f.remat != "" {
		if r.Remat, err = cost.ParseRemat(f.remat); err != nil {
			return r, usageError{err}
		}
	}
	if r.Schedule, err = schedule.ParseKind(f.sched); err != nil {
		return r, usageError{err}
	}
	switch f.precision {
	case "maxtext":
		r.Precision = cost.MaxTextPrecision()
	case "zero":
		r.Precision = cost.ZeROPrecision()
	default:
		return r, bad("--precision %q, want maxtext or zero", f.precision)
	}
	if !(f.efficiency > 0 && f.efficiency <= 1) {
		return r, bad("--efficiency %v, want a fraction in (0, 1]", f.efficiency)
	}
	if !(f.headroom >= 0 && f.headroom < 1) {
		return r, bad("--hbm-headroom %v, want a fraction in [0, 1)", f.headroom)
	}
	r.Efficiency, r.HBMHeadroom, r.CausalFLOPs = f.efficiency, f.headroom, f.causal
	if f.headroom == 0 {
		r.HBMHeadroom = 1e-9 // zero means the default to plan.Request
	}
	if f.top < 1 || f.top > 100 {
		return r, bad("--top %d, want 1 to 100", f.top)
	}
	r.Top = f.top
	if f.exampleCost < 0 || f.exampleCost > time.Hour {
		return r, bad("--example-cost %v, want 0 (skip the input check) up to 1h", f.exampleCost)
	}
	r.ExampleCost = f.exampleCost
	return r, nil
}

// loadModel finds a catalog model or reads a spec file.
func loadModel(name string) (model.Spec, error) {
	if s, ok := model.Lookup(name); ok {
		return s, nil
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return model.Spec{}, bad("model %q: not a catalog model (%s) nor a readable YAML/JSON file", name, strings.Join(model.Names(), ", "))
	}
	s, err := model.Parse(data)
	if err != nil {
		return model.Spec{}, fmt.Errorf("%s: %w", name, err)
	}
	if s.Name == "" {
		s.Name = name
	}
	return s, nil
}

func runHW(args []string, stdout io.Writer) error {
	sub, names, asJSON, err := catalogArgs("hw", args)
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		chips := hw.Chips()
		if asJSON {
			return writeJSON(stdout, chips)
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
	var slice *hw.Slice
	c, err := hw.Lookup(name)
	if err != nil {
		s, perr := hw.ParseAcceleratorType(name)
		if perr != nil {
			return perr
		}
		c, slice = s.Chip, &s
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

func runModel(args []string, stdout io.Writer) error {
	sub, names, asJSON, err := catalogArgs("model", args)
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		specs := model.Catalog()
		if asJSON {
			return writeJSON(stdout, specs)
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "name\tparams\tpublished\tlayers\td_model\theads\tkv\td_ff\tvocab\tseq\t")
		for _, s := range specs {
			fmt.Fprintf(tw, "%s\t%.2fB\t%.2fB\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", s.Name, float64(s.ParamCount().Total())/1e9,
				float64(s.Published)/1e9, s.Layers, s.DModel, s.Heads, s.KV(), s.DFF, s.Vocab, s.SeqLen)
		}
		return tw.Flush()
	case "show":
		if len(names) != 1 {
			return bad("model show: want one NAME or spec file")
		}
		s, err := loadModel(names[0])
		if err != nil {
			return err
		}
		if asJSON {
			return writeJSON(stdout, s)
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
		fmt.Fprintf(tw, "  per layer\tattention %d, MLP %d, norms %d\n", p.Attention, p.MLP, p.Norms)
		fmt.Fprintf(tw, "  embeddings\tinput %d, output %d\n", p.Embedding, p.Output)
		fmt.Fprintf(tw, "training FLOPs/token\t%.4g at seq %d (6N + 12·L·H·Q·T)\n", s.FLOPsPerToken(s.SeqLen, false), s.SeqLen)
		if s.Source != "" {
			fmt.Fprintf(tw, "source\t%s\n", s.Source)
		}
		return tw.Flush()
	}
	return bad("model: unknown subcommand %q, want list or show", sub)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
