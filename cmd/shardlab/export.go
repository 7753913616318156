package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"shardlab/budget"
	"shardlab/export"
	"shardlab/plan"
)

// exportFlags are the options of an export besides plan's.
type exportFlags struct {
	format string // maxtext: yaml or flags
	xpk    export.XPKOptions
	// capacity is --capacity as typed; ParseCapacity reads it.
	capacity string
}

// newExportFlags defines the flags of export maxtext or export xpk:
// plan's (without --json, --top and --example-cost) and the target's own.
func newExportFlags(target string) (*flag.FlagSet, *planFlags, *exportFlags) {
	fs, f := newPlanFlags("export "+target, true)
	if target == "pytorch" {
		// search only what the PyTorch/XLA export writes
		f.Framework = string(plan.FrameworkPyTorch)
	}
	var e exportFlags
	switch target {
	case "maxtext":
		choiceVar(fs, &e.format, "format", "yaml", []string{"yaml", "flags"}, nil,
			"yaml (a config overlay for MaxText's base.yml) or flags (the trainer's command line with key=value arguments)")
	case "xpk":
		fs.StringVar(&e.xpk.Cluster, "cluster", "", "GKE cluster to run on (required)")
		fs.StringVar(&e.xpk.Workload, "workload", "", "workload name, also MaxText's run_name (default shardlab-MODEL)")
		fs.StringVar(&e.xpk.DockerImage, "docker-image", "", "container image with MaxText, run as it is (this or --base-docker-image is required: xpk's default image has no MaxText)")
		fs.StringVar(&e.xpk.BaseDockerImage, "base-docker-image", "", "image with MaxText's dependencies to which xpk adds the working directory, e.g. maxtext_base_image")
		var modes []string
		for _, c := range export.Capacities() {
			modes = append(modes, string(c))
		}
		choiceVar(fs, &e.capacity, "capacity", "", modes, nil,
			"how GKE finds the TPUs (default: the cluster's); xpk reads it only on a cluster with node auto-provisioning, elsewhere the workload runs on the cluster's node pools")
		fs.StringVar(&e.xpk.Reservation, "reservation", "", "reservation, with --capacity reservation: its name, or another project's as projects/PROJECT/reservations/NAME\n(xpk also takes /reservationBlocks/BLOCK and /reservationSubBlocks/SUB_BLOCK after it)")
		intVar(fs, &e.xpk.MaxRestarts, "max-restarts", 0, 0, export.MaxRestarts, "", "times the JobSet is restarted after a failure (xpk --max-restarts)")
	}
	return fs, f, &e
}

func runExport(args []string, stdout, stderr io.Writer) error {
	const want = "export: want 'export maxtext [flags]', 'export xpk [flags]' or 'export pytorch [flags]'"
	if len(args) > 0 && isHelp(args[0]) {
		return helpText(`usage of shardlab export:
  shardlab export maxtext [flags]  the planned layout as a MaxText config (--format yaml or flags)
  shardlab export xpk [flags]      the xpk workload create command that launches it
  shardlab export pytorch [flags]  the layout as a PyTorch/XLA SPMD mesh and shardings (Python)
run 'shardlab export maxtext -h', 'shardlab export xpk -h' or 'shardlab export pytorch -h' for the flags
`)
	}
	if len(args) == 0 || args[0] != "maxtext" && args[0] != "xpk" && args[0] != "pytorch" {
		return bad("%s", want)
	}
	target := args[0]
	name := "export " + target
	fs, f, e := newExportFlags(target)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	p, held, err := exportPlan(name, target, fs, f)
	if err != nil {
		return err
	}
	if target == "xpk" {
		if e.xpk.Cluster == "" {
			return bad("%s: --cluster is required: xpk workload create needs the cluster to run on", name)
		}
		c, err := export.ParseCapacity(e.capacity)
		if err != nil {
			return err
		}
		e.xpk.Capacity = c
		if e.xpk.Reservation != "" && c == export.CapacityDefault {
			e.xpk.Capacity = export.CapacityReservation
		}
		e.xpk.CapacityWarnings = budget.GKEWarnings(string(e.xpk.Capacity), p.Request.Multislice.Slice.Chip.Generation)
		e.xpk.MaxRestartsGiven = setFlags(fs)["max-restarts"]
	}
	if mem := p.Best.Estimate.Memory; !mem.Fits() {
		return fmt.Errorf("export: the layout does not fit (%s); nothing exported", mem.Shortfall())
	}
	// Everything is made before anything is written: a refused plan
	// leaves stdout empty.
	var b strings.Builder
	if err := writeExport(&b, target, p, held, e); err != nil {
		return planError(err)
	}
	if _, err = io.WriteString(stdout, b.String()); err != nil {
		return err
	}
	if err := exportNotes(stderr, name, target, p, held, e.xpk); err != nil {
		return err
	}
	return exportCalibrationNote(stderr, name, p, f)
}

// exportNotes says on stderr (stdout is the file) what the file's header
// says of it: that it holds MaxText's best, not plan's choice (held), and
// for xpk what its command of options o does not run as asked.
func exportNotes(stderr io.Writer, name, target string, p plan.Plan, held *export.Held, o export.XPKOptions) error {
	var lines []string
	if held != nil {
		lines = append(lines, held.Note())
	}
	if target == "xpk" {
		for _, w := range export.XPKWarnings(p, o) {
			lines = append(lines, "warning: "+w)
		}
	}
	for _, l := range lines {
		if _, err := fmt.Fprintf(stderr, "%s: %s\n", name, l); err != nil {
			return err
		}
	}
	return nil
}

// exportCalibrationNote says on stderr (stdout is the engine's file)
// which temporaries' factor the exported plan was made with, as plan
// names it (calibrationNote): a layout or batch the calibration changed
// is in the file, and nothing in it says so.
func exportCalibrationNote(stderr io.Writer, name string, p plan.Plan, f *planFlags) error {
	note := calibrationNote(p, f.calibration, f.cal, f.TempScale)
	if note == nil {
		return nil
	}
	var b strings.Builder
	if err := note.writeText(&b); err != nil {
		return err
	}
	_, err := io.WriteString(stderr, name+": "+strings.TrimSuffix(b.String(), "\n"))
	return err
}

// exportPlan plans the one job an export to target writes, and for
// MaxText and xpk, where that is not what plan chooses for the same
// flags, what it holds instead (export.MaxTextHeld).
func exportPlan(name, target string, fs *flag.FlagSet, f *planFlags) (plan.Plan, *export.Held, error) {
	// An export is one job's config, which an engine loads as one
	// (MaxText's OmegaConf.load refuses a second YAML document): with no
	// job named it is the default job the --model and --tpu help name,
	// as the web UI's download is, not plan's two built-in examples.
	set := setFlags(fs)
	if !set["model"] && !set["tpu"] && !set["mesh"] && !set["topology"] {
		if set["slices"] {
			// as plan: a slice count is of a TPU the user names
			return plan.Plan{}, nil, bad("%s: --slices %d needs --tpu (or --model, --mesh or --topology): without them %s writes the default job, %s on one %s",
				name, f.Slices, name, plan.DefaultModel, plan.DefaultTPU)
		}
		set["model"] = true
	}
	opts, err := f.questions(name, set)
	if err != nil {
		return plan.Plan{}, nil, err
	}
	if len(opts) != 1 {
		return plan.Plan{}, nil, fmt.Errorf("%s: %d jobs planned, want one", name, len(opts))
	}
	o := opts[0]
	if target == "pytorch" {
		p, err := searchOptions(o)
		return p, nil, pytorchError(name, err)
	}
	return maxTextPlan(o)
}

// pytorchError is err as export pytorch (name) words it: a refusal by the
// PyTorch framework's rules (plan.OptionError.PyTorch) names the command,
// which asks that framework itself and has no --framework; err otherwise.
func pytorchError(name string, err error) error {
	var oe *plan.OptionError
	if errors.As(err, &oe) && oe.PyTorch != nil {
		return phrasedError{oe.PyTorch.Phrase(name, flagName), err}
	}
	return err
}

// maxTextPlan plans options o (export.MaxTextOptions'), as an export to
// MaxText writes them: plan's choice for the same flags, over every
// schedule, where MaxText runs it, else MaxText's best
// (export.MaxTextHeld), searched only then. The export's own request is
// read first, so that what it refuses (a schedule MaxText does not run)
// is refused before any search, and a job with no plan at all is refused
// by the export's own search, as it says why.
func maxTextPlan(o plan.Options) (plan.Plan, *export.Held, error) {
	if _, err := plan.ParseRequest(o); err != nil {
		return plan.Plan{}, nil, planError(err)
	}
	shown := o
	shown.Framework = plan.DefaultOptions().Framework
	p, err := searchOptions(shown)
	if err != nil {
		p, err = searchOptions(o)
		return p, nil, err
	}
	held, err := export.MaxTextHeld(shown, p, searchOptions)
	switch {
	case err != nil:
		return plan.Plan{}, nil, planError(err)
	case held != nil:
		return held.Plan, held, nil
	}
	return p, nil, nil
}

// writeExport writes one plan for target: for MaxText and xpk, held's
// where it is not plan's choice (non-nil).
func writeExport(b *strings.Builder, target string, p plan.Plan, held *export.Held, e *exportFlags) error {
	switch {
	case target == "pytorch":
		m, err := export.PyTorch(p)
		if err != nil {
			return err
		}
		if err := m.WritePython(b); err != nil {
			return err
		}
	case target == "xpk":
		o := e.xpk
		if o.Workload == "" {
			o.Workload = export.RunName(p.Request.Model.Name)
		}
		if err := export.XPKOf(b, p, held, o); err != nil {
			return err
		}
	default:
		cfg, err := export.MaxTextOf(p, held)
		if err != nil {
			return err
		}
		write := cfg.WriteYAML
		if e.format == "flags" {
			write = cfg.WriteFlags
		}
		if err := write(b); err != nil {
			return err
		}
	}
	return nil
}
