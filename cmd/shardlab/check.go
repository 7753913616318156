package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"shardlab/cost"
	"shardlab/export"
	"shardlab/internal/errtext"
	"shardlab/plan"
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
	fs.StringVar(&c.log, "compile-log", "", "the log of a compile of this plan's MaxText config (train_compile's 'Memory analysis', XLA's 'Total hbm usage' blocks or out-of-memory message) or of its run (the runtime's load failure) (required)")
	fs.StringVar(&c.calibration, "write-calibration", "", "also write the temporaries' factor this log gives to this `file`, for plan --calibration:\nagainst the model without a factor, whatever --calibration or --temp-scale this check has")
	fs.BoolVar(&c.json, "json", false, "print JSON")
	return fs, f, &c
}

// maxCompileLog is the largest compile log check reads: 64 MiB, room for an
// HLO dump around the memory report.
const maxCompileLog = 64 << 20

// checkExits is check's exit table, which its usage ends with and
// README's Memory section gives: one status for each outcome, so that a
// script behind train_compile's pipe through tee (whose status is tee's)
// stops where the plan must not be launched as it is.
func checkExits() string {
	return fmt.Sprintf(`
exit status:
  0  the log is of a compile of this plan that succeeded: compared, and calibrated where it gives a factor
     (none where the plan puts the step at XLA's limit, which the compile recomputes down to: no file)
  1  after the comparison, and with --json in its document: the compile failed (an out-of-memory message
     of HBM, or of a kernel's VMEM or SMEM, or the runtime's failure to load the program that compiled:
     do not launch the plan as it is; a factor it gives is still written), the log gives no
     temporaries factor otherwise, or it cannot be this plan's compile (an out-of-memory message below its own
     capacity, another chip's capacity, the plan's parameters and optimizer state more than %.0f%% off
     the compile's arguments, a memory report's temporaries outside %g to %g times the plan's: with
     --json, this_plans_compile false and no compiled or fits); and, as for plan, flags whose plan
     cannot run
  2  bad input, with nothing on stdout: a flag, flags that leave the compiled job open (no --model or
     --tpu, or a --gradient-accumulation-steps the planner would choose), or a log that cannot be read or holds
     no memory report
`, 100*validate.ArgumentBound, cost.MinTempScale, cost.MaxTempScale)
}

// runCheck compares a compile log with the prediction for the same plan:
// the flags are the plan's, as export maxtext took them.
func runCheck(args []string, stdout, stderr io.Writer) error {
	fs, f, c := newCheckFlags()
	if err := parseFlags(fs, args); err != nil {
		var help helpText
		if errors.As(err, &help) {
			return help + helpText(checkExits())
		}
		return err
	}
	doc, err := checkDoc(fs, f, c)
	// the document's error in the words of check's error line: a
	// planner's refusal as check's, not plan's (named)
	err = named("check", err)
	switch {
	case doc != "" && err != nil && c.json:
		// the comparison, with why the exit status is 1
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
// parsed, and its exit status as an error (checkResult.status); nothing
// is written before it is whole, so that with --json a job that cannot
// run writes its error document alone. The comparison names the
// temporaries' factor its prediction was made with, as plan does
// (calibrationNote).
func checkDoc(fs *flag.FlagSet, f *planFlags, c *checkFlags) (string, error) {
	named := compiledNone(f)
	log, p, err := checkInputs(fs, f, c)
	if err != nil {
		return "", err
	}
	res, err := checkPlan(log, p, c.log)
	if err != nil {
		return "", err
	}
	var written error
	if c.calibration != "" {
		written = writeCalibration(c.calibration, res.cal, res.calErr)
	}
	note := calibrationNote(p, f.calibration, f.cal, f.TempScale)
	var b strings.Builder
	if c.json {
		err = writeJSON(&b, res.json(named, note))
	} else {
		err = res.writeText(&b, named, note, p.Best.Estimate.Job.TempScale)
	}
	if err != nil {
		return "", err
	}
	return b.String(), res.status(c, written)
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
// compiled. Whether the log can be that job's compile is checkPlan's
// question: such a log is read, only not of this plan.
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
	set := setFlags(fs)
	for _, need := range []struct{ flag, what string }{{"model", "the model the log compiled"}, {"tpu", "the accelerator type it compiled for, its compile_topology"}} {
		if !set[need.flag] {
			// a default would hold the log to a job it may not be of
			return none, plan.Plan{}, bad("check: --%s is required: %s (plan --verify prints the check command with the job's flags)", need.flag, need.what)
		}
	}
	text, err := readFile("--compile-log", c.log, maxCompileLog)
	if err != nil {
		return none, plan.Plan{}, err
	}
	log, err := validate.ParseCompileLog(string(text))
	if err != nil {
		return none, plan.Plan{}, bad("check: --compile-log %s: %s", c.log, errtext.Detail(err))
	}
	plans, err := f.plans("check", set)
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
	return log, p, nil
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
	then := fmt.Sprintf("(then plan --calibration %s%s plans with the compiler's temporaries)", s.Calibration, calibrateAdvice(s.Of))
	if s.Calibration == "" {
		then = "(" + export.AtLimitNote + ")"
	}
	return note + fmt.Sprintf(`Verify before renting TPUs (MaxText's ahead-of-time compile runs on a CPU machine; XLA reports the HBM it lays the step out in, by this plan about %[4]v a JAX device, or fails with the out-of-memory message the TPU's compile would give; %[6]s):
  %[1]s
  %[2]s
  %[3]s
%[5]s
`, s.Commands[0].Line, s.Commands[1].Line, s.Commands[2].Line, s.Of.Report, then, export.LoadNote)
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
