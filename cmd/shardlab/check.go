package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"shardlab/cost"
	"shardlab/export"
	"shardlab/hw"
	"shardlab/plan"
	"shardlab/unit"
	"shardlab/validate"
)

// checkFlags are check's own flags beside the plan's.
type checkFlags struct {
	log, calibration string
	json             bool
}

func newCheckFlags() (*flag.FlagSet, *planFlags, *checkFlags) {
	fs, f := newPlanFlags("check", true)
	var c checkFlags
	fs.StringVar(&c.log, "compile-log", "", "the log of a compile of this plan's MaxText config (train_compile's 'Memory analysis', or XLA's out-of-memory message) (required)")
	fs.StringVar(&c.calibration, "write-calibration", "", "also write the temporaries' factor this log gives to this `file`, for plan --calibration:\nagainst the model without a factor, whatever --calibration or --temp-scale this check has")
	fs.BoolVar(&c.json, "json", false, "print JSON")
	return fs, f, &c
}

// maxCompileLog is the largest compile log check reads: 64 MiB, room for an
// HLO dump around the memory report.
const maxCompileLog = 64 << 20

// runCheck compares a compile log with the prediction for the same plan:
// the flags are the plan's, as export maxtext took them.
func runCheck(args []string, stdout, stderr io.Writer) error {
	fs, f, c := newCheckFlags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	doc, err := checkDoc(fs, f, c)
	switch {
	case doc != "" && err != nil && c.json:
		// the comparison, with why no calibration was written
		return failJSONDoc(stdout, []byte(doc), err)
	case err != nil && c.json:
		return failJSON(stdout, err)
	case doc != "":
		if _, werr := io.WriteString(stdout, doc); werr != nil {
			return werr
		}
	}
	return err
}

// checkDoc is runCheck's document, JSON with --json, once its flags are
// parsed; nothing is written before it is whole, so that with --json a
// job that cannot run writes its error document alone. The comparison
// names the temporaries' factor its prediction was made with, as plan
// does (calibrationNote).
func checkDoc(fs *flag.FlagSet, f *planFlags, c *checkFlags) (string, error) {
	named := compiledNone(f)
	log, p, err := checkInputs(fs, f, c)
	if err != nil {
		return "", err
	}
	e := p.Best.Estimate
	r := validate.CompareLog(log, e.Memory, e.Mesh.Multislice.Slice.Chip.JAXDevicesPerChip)
	// the comparison is of this plan, not of a case in the memory table
	ms := e.Mesh.Multislice
	r.Case.Generation, r.Case.AcceleratorType, r.Case.Slices, r.Case.Model = string(ms.Slice.Chip.Generation), ms.Slice.AcceleratorType(), max(ms.Slices, 1), p.Request.Model
	// The factor is against the uncalibrated model, whatever --calibration
	// or --temp-scale this check was given: plan --calibration applies it
	// to that model, so a factor against a scaled prediction would
	// compound (the same log would give a different file each time).
	raw, err := uncalibrated(log, r, e)
	if err != nil {
		return "", err
	}
	cal, calErr := calibrationOf(log, raw, c.log, p)
	var written error
	if c.calibration != "" {
		if written = writeCalibration(c.calibration, cal, calErr); isUsage(written) {
			return "", written
		}
	}
	note := calibrationNote(p, f.calibration, f.cal, f.TempScale)
	var b strings.Builder
	if c.json {
		warnings := []string{}
		for _, w := range []string{named, argumentWarning(log, r)} {
			if w != "" {
				warnings = append(warnings, w)
			}
		}
		err = writeJSON(&b, checkJSON{Log: log, Result: r.JSON(), Calibration: cal, Given: note, Warnings: warnings})
	} else {
		if named != "" {
			fmt.Fprintf(&b, "note: %s\n", named)
		}
		if err = writeCheck(&b, log, r, cal, calErr, e.Job.TempScale); err == nil && note != nil {
			err = note.writeText(&b)
		}
	}
	if err != nil {
		return "", err
	}
	return b.String(), written
}

// compiledNone sets check's plan to the policy MaxText compiles for a
// job given without remat (--remat none, no --remat-custom): MaxText has
// no policy that keeps every activation, and export writes its closest,
// custom with every named tensor on device (cost.NamedNone), which is
// what the log compiled; comparing it with none's costing would measure
// another program (plan --verify's commands carry the custom policy
// already). It returns what it did, for the output, or "".
func compiledNone(f *planFlags) string {
	if !strings.EqualFold(strings.TrimSpace(f.Remat), string(cost.RematNone)) || f.RematCustom != "" {
		return ""
	}
	r, places := cost.MaxTextRemat(cost.RematNone, cost.Places{})
	f.Remat, f.RematCustom = string(r), places.String()
	return fmt.Sprintf("--remat none: MaxText has no policy that keeps every activation, and export maxtext writes its closest, --remat custom --remat-custom %s, which is what the log compiled: the comparison and any calibration are of that policy", f.RematCustom)
}

// checkInputs reads and parses the compile log and plans the one job it
// compiled, whose slice's HBM must be the log's.
func checkInputs(fs *flag.FlagSet, f *planFlags, c *checkFlags) (validate.CompileLog, plan.Plan, error) {
	var none validate.CompileLog
	if c.log == "" {
		return none, plan.Plan{}, bad("check: --compile-log is required: the log of MaxText's train_compile of the plan (plan --verify prints the command)")
	}
	if c.calibration != "" {
		if err := checkOutputFile("--write-calibration", c.calibration); err != nil {
			return none, plan.Plan{}, err
		}
	}
	text, err := readFile("--compile-log", c.log, maxCompileLog)
	if err != nil {
		return none, plan.Plan{}, err
	}
	log, err := validate.ParseCompileLog(string(text))
	if err != nil {
		return none, plan.Plan{}, usageError{fmt.Errorf("check: --compile-log %s: %w", c.log, err)}
	}
	plans, err := f.plans("check", setFlags(fs))
	if err != nil {
		return none, plan.Plan{}, err
	}
	if len(plans) != 1 {
		return none, plan.Plan{}, bad("check: give the plan the log compiled (--model, --tpu, --slices, --mesh, --global-batch as export maxtext took them), not the built-in examples")
	}
	p := plans[0]
	if g := p.ChosenAccumulation(); g > 0 {
		// the planner's count depends on the calibration the check is
		// given; the compiled config's count does not
		return none, plan.Plan{}, bad("check: give --gradient-accumulation-steps as the compiled config's gradient_accumulation_steps (1 where it has none): the log does not say, and the plan of these flags runs --global-batch %d as %d micro-batches it chose (what export maxtext writes for them)", p.Request.GlobalBatch, g)
	}
	if err := checkLogCapacity(c.log, log, p.Best.Estimate.Mesh.Multislice.Slice.Chip); err != nil {
		return none, plan.Plan{}, err
	}
	return log, p, nil
}

// errWrongLog is a calibration refused because the log cannot be of the
// plan's compile.
type errWrongLog struct{ error }

func (e errWrongLog) Unwrap() error { return e.error }

// writeCalibration writes cal to the file at path, or refuses with calErr,
// why the log gives no factor.
//
// A log that gives no factor though it may be the plan's (a report at
// XLA's limit, an out-of-memory message below the plan's needed peak, no
// temporaries) is the comparison without a file: exit 1
// after the comparison is printed. A factor outside the accepted range
// says the log is not the plan's compile: a usage error, as the other
// logs check refuses.
func writeCalibration(path string, cal *cost.MemoryCalibration, calErr error) error {
	var wrong errWrongLog
	switch {
	case errors.As(calErr, &wrong):
		return usageError{fmt.Errorf("check: --write-calibration: %w", calErr)}
	case calErr != nil:
		return fmt.Errorf("check: --write-calibration %s: nothing written: %w", path, calErr)
	}
	b, err := json.MarshalIndent(cal, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("check: --write-calibration %s: %w", path, err)
	}
	return nil
}

// uncalibrated is the comparison r of log with the estimate e, made
// against e's layout costed without its temporaries' factor, where it has
// one (r itself when not).
func uncalibrated(log validate.CompileLog, r validate.MemoryResult, e cost.Estimate) (validate.MemoryResult, error) {
	if e.Job.TempScale == 0 {
		return r, nil
	}
	j := e.Job
	j.TempScale = 0
	u, err := cost.EstimateStep(j, e.Mesh)
	if err != nil {
		return r, fmt.Errorf("check: the plan without its temporaries' factor: %w", err)
	}
	raw := validate.CompareLog(log, u.Memory, e.Mesh.Multislice.Slice.Chip.JAXDevicesPerChip)
	raw.Case = r.Case
	return raw, nil
}

// gib spells a compile log's bytes as check prints them: GiB to two
// decimals, as XLA's own G.
func gib(n int64) string { return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30)) }

// checkLogCapacity refuses a log that cannot be of the plan: an
// out-of-memory message below its own capacity (XLA prints it only above),
// or a capacity other than the one XLA gives a JAX device of the plan's
// chip (hw/xla_hbm.csv), beyond the 1 % its two-decimal print can differ
// by: the log was compiled for another chip.
func checkLogCapacity(path string, log validate.CompileLog, chip hw.Chip) error {
	if log.Kind == validate.KindOOM && log.Reported < log.Capacity {
		return bad("check: --compile-log %s: an out-of-memory message at %s of %s: XLA prints it only above its capacity, want the log of the compile that failed", path, gib(log.Reported), gib(log.Capacity))
	}
	if _, known := chip.CompilerHBM(); known && log.Capacity > 0 {
		per := chip.XLACapacity() / unit.Bytes(max(chip.JAXDevicesPerChip, 1))
		if math.Abs(float64(log.Capacity)-float64(per)) > 0.01*float64(per) {
			return bad("check: --compile-log %s: the log's capacity is %s a JAX device, %s's is %s (hw/xla_hbm.csv): it was compiled for another chip; give --tpu as the compile's compile_topology", path, gib(log.Capacity), chip.Generation, gib(int64(per)))
		}
	}
	return nil
}

// calibrationOf is the factor that makes the prediction's temporaries what
// the log reports: the log's temporaries are its temp, or its program,
// or, where it gives only a total, the total less the predicted arguments
// (cost's arguments match the compilers' within 1.4 % on the memory table).
func calibrationOf(log validate.CompileLog, r validate.MemoryResult, path string, p plan.Plan) (*cost.MemoryCalibration, error) {
	reported := log.Breakdown.Temp
	switch {
	case reported > 0:
	case log.Scope == validate.ScopeTemp:
		reported = log.Reported
	default:
		reported = log.Reported - r.Arguments
	}
	// An out-of-memory message reports what XLA could squeeze the step to,
	// after its rematerialization: the needed peak's temporaries, not those
	// as laid out (which keep what XLA recomputes when HBM runs short). It
	// calibrates against them also where the plan put the laid-out step
	// above XLA's limit: the needed peak was too low, by the factor. It
	// only bounds the step from below (XLA stopped squeezing above the
	// limit), so it raises the model and never lowers it (oomLowers).
	predicted := r.Temp
	switch {
	case log.Kind == validate.KindOOM:
		predicted = r.Needed
		if log.Scope != validate.ScopeTemp {
			predicted -= r.Arguments
		}
	case r.AtLimit:
		return nil, fmt.Errorf("the prediction is XLA's limit, %.2f GiB, which its rematerialization recomputes down to: a report there says how XLA squeezed the step, not how far the temporaries' model is off", float64(r.Limit)/(1<<30))
	}
	if reported <= 0 || predicted <= 0 {
		return nil, fmt.Errorf("the log gives no temporaries to calibrate against (reported %d bytes, predicted arguments %d)", log.Reported, r.Arguments)
	}
	k := float64(reported) / float64(predicted)
	if !(k >= cost.MinTempScale && k <= cost.MaxTempScale) {
		return nil, errWrongLog{fmt.Errorf("the log's temporaries are %.2f times the prediction's, want %g to %g: is the log this plan's compile?", k, cost.MinTempScale, cost.MaxTempScale)}
	}
	if log.Kind == validate.KindOOM && k < 1 {
		return nil, oomLowers(log, r, k)
	}
	e := p.Best.Estimate
	src := calibrationSource(path, e.Job.Model.Name, p.Request.Multislice.Slice.AcceleratorType(), e.Mesh.String(), time.Now().UTC().Format(time.DateOnly))
	job := &cost.MeasuredJob{Model: e.Job.Model.Name, AcceleratorType: p.Request.Multislice.Slice.AcceleratorType(), Layout: e.Mesh.String(),
		Remat: e.Job.Remat, GlobalBatch: e.Job.GlobalBatch, MicroBatches: max(e.Job.MicroBatches, 1)}
	if e.Job.Remat == cost.RematCustom {
		job.RematCustom = e.Job.Custom.String()
	}
	return &cost.MemoryCalibration{TempScale: k, Reported: reported, Predicted: predicted, Source: src, Job: job}, nil
}

// oomLowers is why an out-of-memory message gives no factor below 1 (k):
// its bytes are what XLA's rematerialization squeezed the failed step to,
// recomputing beyond the policy the plan costs, a bound from below on
// the step and not its peak as laid out. A plan whose needed peak is
// above them already refused the layout; a factor from them would lower
// every later plan's temporaries by a squeeze XLA makes only when the
// step does not fit, and so accept layouts like the one that failed.
func oomLowers(log validate.CompileLog, r validate.MemoryResult, k float64) error {
	return fmt.Errorf("the plan's needed peak, %s, is above the %s XLA's out-of-memory message reports of %s: the message is what XLA squeezed the failed step to, a bound from below, so a factor from it (%.3f) would lower later plans below a compile that failed; recompile at a batch that fits to calibrate", gib(r.Needed), gib(log.Reported), gib(log.Capacity), k)
}

type checkJSON struct {
	Log         validate.CompileLog     `json:"compile_log"`
	Result      validate.MemoryRowJSON  `json:"comparison"`
	Calibration *cost.MemoryCalibration `json:"calibration,omitempty"`
	// Given is the temporaries' factor the prediction was made with
	// (--calibration or --temp-scale), as plan --json says it.
	Given *calibrationJSON `json:"temporaries_calibration,omitempty"`
	// Warnings are the text's warnings (argumentWarning).
	Warnings []string `json:"warnings"`
}

// argumentTolerance is how far a compile's arguments may be from the
// plan's parameters and optimizer state before check warns that the log
// may not be of the plan: on validate's memory table they agree within
// 1.4 % (`shardlab validate --memory`), so 5 % is far outside the
// model's error.
const argumentTolerance = 0.05

// argumentWarning is what check warns of a compile whose arguments are
// further from the plan's parameters and optimizer state than
// argumentTolerance, the compile's bytes against the plan's; empty
// otherwise.
func argumentWarning(log validate.CompileLog, r validate.MemoryResult) string {
	bd := log.Breakdown
	if bd.Argument <= 0 || r.Arguments <= 0 {
		return ""
	}
	off := float64(bd.Argument)/float64(r.Arguments) - 1
	if math.Abs(off) <= argumentTolerance {
		return ""
	}
	return fmt.Sprintf("the compile's arguments, %s, are %+.1f%% against the plan's parameters and optimizer state, %s (they agree within %.0f%% on validate's memory table): the log may be of another dtype, optimizer or sharding; a factor scales the temporaries only",
		gib(bd.Argument), 100*off, gib(r.Arguments), 100*argumentTolerance)
}

// writeCheck writes the comparison for people.
// scale is the temporaries' factor r's prediction was made with (0:
// none); the factor cal is against the model without it.
func writeCheck(w io.Writer, log validate.CompileLog, r validate.MemoryResult, cal *cost.MemoryCalibration, calErr error, scale float64) error {
	var b strings.Builder
	fmt.Fprintf(&b, "compile log: %s (%s), per JAX device\n", log.Kind, log.Scope)
	for _, l := range log.Lines {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\treported\tpredicted\terror")
	fmt.Fprintf(tw, "%s\t%s\t%s\t%+.1f%%\n", log.Scope, gib(log.Reported), gib(r.Predicted), 100*r.Error)
	if bd := log.Breakdown; bd.Argument > 0 && !math.IsNaN(r.ArgumentError) {
		fmt.Fprintf(tw, "arguments (parameters, optimizer state)\t%s\t%s\t%+.1f%%\n", gib(bd.Argument), gib(r.Arguments), 100*r.ArgumentError)
	}
	if bd := log.Breakdown; bd.Temp > 0 && !math.IsNaN(r.TempError) {
		fmt.Fprintf(tw, "temporaries (gradients, activations, the largest phase)\t%s\t%s\t%+.1f%%\n", gib(bd.Temp), gib(r.Temp), 100*r.TempError)
	}
	if bd := log.Breakdown; bd.HostTemp > 0 && !math.IsNaN(r.HostError) {
		fmt.Fprintf(tw, "host temporaries (offloaded activations)\t%s\t%s\t%+.1f%%\n", gib(bd.HostTemp), gib(r.Host), 100*r.HostError)
	}
	tw.Flush()
	if w := argumentWarning(log, r); w != "" {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	if log.Kind == validate.KindOOM {
		verdict := "the plan said it fits: the prediction is short"
		if r.Refused {
			verdict = "the plan said it does not fit either"
		}
		fmt.Fprintf(&b, "out of memory at %s of %s: %s\n", gib(log.Reported), gib(log.Capacity), verdict)
	}
	switch {
	case cal != nil:
		against := ""
		if scale > 0 {
			against = fmt.Sprintf(" by the model without the factor %.3f given; this factor replaces that one, it does not multiply it", scale)
		}
		fmt.Fprintf(&b, "temporaries factor %.3f (reported %s, predicted %s%s): plan --temp-scale %.3f, or --calibration with --write-calibration's file, plans with it\n",
			cal.TempScale, gib(cal.Reported), gib(cal.Predicted), against, cal.TempScale)
	default:
		fmt.Fprintf(&b, "no temporaries factor: %v\n", calErr)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cliCommands is how the command line spells shardlab's commands in a
// verification's steps: options as flags (check's own two too), with the
// job flags given (jobFlags).
func cliCommands(flags []string) export.Commands {
	return export.Commands{Spell: plan.Option.Flag, Job: flags}
}

// verifySteps is plan p's verify steps as the command line spells them:
// model is --model as given ("" for the plan's model's name), flags the
// job flags given (jobFlags). The export and the check are given the
// plan's layout and batch as flags, so that they cost the same plan.
func verifySteps(p plan.Plan, model string, flags []string) export.Steps {
	return export.Verify(p, model).Steps(cliCommands(flags))
}

// compileNote is what plan --verify prints of steps s: how to compile the
// plan ahead of time on a CPU machine and hold the compiler's memory to
// the plan's, with the report the compile should print (Plan.XLAReport);
// for a slice MaxText's compile has no compile_topology for (v2, v3, v4
// beyond 4096 chips' TensorCores), that there is none.
func compileNote(s export.Steps) string {
	if !s.Available {
		return "Verify: " + s.Unavailable + "\n"
	}
	note := ""
	if v := s.Of; v.TopologyNote != "" {
		note = "Note: " + v.TopologyNote + "\n"
	}
	return note + fmt.Sprintf(`Verify before renting TPUs (MaxText's ahead-of-time compile runs on a CPU machine; XLA reports the HBM it lays the step out in, by this plan about %[4]v a JAX device, or fails as the TPU would):
  %[1]s
  %[2]s
  %[3]s
(then plan --calibration %[6]s%[5]s plans with the compiler's temporaries)
`, s.Commands[0].Line, s.Commands[1].Line, s.Commands[2].Line, s.Of.Report, calibrateAdvice(s.Of), s.Calibration)
}

// calibrateAdvice is what plan needs beside the calibration file check
// writes, to plan with it: the file in place of a factor the plan was
// given (plan refuses two), and for a plan without remat the policy the
// factor was measured under (the commands' --remat custom, what MaxText
// runs for none).
func calibrateAdvice(v export.Verification) string {
	s := ""
	if v.TempScale != 0 {
		s += ", in place of the temporaries' factor given (--temp-scale or --calibration),"
	}
	if v.NamedNone {
		s += " with the commands' --remat custom --remat-custom (the policy it is measured under, MaxText's for none)"
	}
	return s
}

// jobFlags spells the flags given that describe the job and the hardware,
// as export and check take them (not the layout, batch and remat, which
// export.Verify adds from the plan, nor plan's own), one argument each:
// --name and its value, and a bool flag --name=value, the one form the
// flag package reads it in.
func jobFlags(fs *flag.FlagSet) []string {
	// plan's own flags, besides those export.Verify writes or leaves out
	own := map[string]bool{"json": true, "verify": true, "goodput": true, "tokens": true, "html": true, "svg": true, "png": true}
	var args []string
	fs.Visit(func(f *flag.Flag) {
		if own[f.Name] || export.VerifyOwns(plan.Option(strings.ReplaceAll(f.Name, "-", "_"))) {
			return
		}
		// a bool flag takes its value only after "=": "--causal-flops
		// false" is --causal-flops (true) and an argument "false"
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
			args = append(args, "--"+f.Name+"="+f.Value.String())
			return
		}
		args = append(args, "--"+f.Name, f.Value.String())
	})
	return args
}
