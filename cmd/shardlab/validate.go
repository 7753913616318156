package main

import (
	"flag"
	"io"

	"shardlab/validate"
)

// runValidate costs every published run of the built-in table on its
// published layout and prints predicted against published MFU.
type validateFlags struct{ json, breakdown, fit, memory, serving bool }

func newValidateFlags() (*flag.FlagSet, *validateFlags) {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	var f validateFlags
	fs.BoolVar(&f.json, "json", false, "print JSON")
	fs.BoolVar(&f.breakdown, "breakdown", false, "print each run's step time by part (with --json: as JSON, each part in seconds)")
	fs.BoolVar(&f.fit, "fit", false, "print each calibration constant fitted on the calibration rows (what cost.Calibrated holds), the rows it was fitted on and its error on them and on the held-out rows (with --json: as JSON)")
	fs.BoolVar(&f.memory, "memory", false, "print the memory table: cost's HBM estimate against what XLA reported (with --json: as JSON)")
	fs.BoolVar(&f.serving, "serving", false, "print the serving table: shardlab inference's prediction against published TPU serving throughput (with --json: as JSON)")
	return fs, &f
}

func runValidate(args []string, stdout, stderr io.Writer) error {
	fs, f := newValidateFlags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	if f.memory {
		return runValidateTable(f, stdout, validate.BuiltInMemoryReport)
	}
	if f.serving {
		return runValidateTable(f, stdout, validate.BuiltInServingReport)
	}
	runs, err := validate.Runs()
	if err != nil {
		return err
	}
	if f.fit {
		return runValidateTable(f, stdout, func() (validate.FitRows, error) { return validate.FitReport(runs) })
	}
	rep, err := validate.Evaluate(runs, nil)
	if err != nil {
		return err
	}
	if f.breakdown {
		return writeValidateReport(f, stdout, rep.StepTimes())
	}
	return writeValidateReport(f, stdout, rep)
}

// check refuses flags that ask for two reports (--memory, --serving,
// --fit and --breakdown each print one; --json prints any of them, or
// the MFU table, as JSON).
func (f *validateFlags) check() error {
	var given []string
	for _, r := range []struct {
		name string
		set  bool
	}{{"memory", f.memory}, {"serving", f.serving}, {"fit", f.fit}, {"breakdown", f.breakdown}} {
		if r.set {
			given = append(given, r.name)
		}
	}
	if len(given) > 1 {
		return bad("validate: --%s and --%s are two reports, give one", given[0], given[1])
	}
	return nil
}

// validateReport is one of validate's reports (the MFU table, the fit,
// the step times, the memory and serving tables), which prints as text
// or JSON.
type validateReport interface {
	WriteText(io.Writer) error
	WriteJSON(io.Writer) error
}

// runValidateTable builds the report that the flags ask for
// (validate.BuiltInMemoryReport: the memory table costed;
// validate.BuiltInServingReport: the serving model run on the serving
// table; validate.FitReport: the calibration fitted) and prints it; check
// has refused the other reports' flags.
func runValidateTable[R validateReport](f *validateFlags, stdout io.Writer, build func() (R, error)) error {
	rep, err := build()
	if err != nil {
		return err
	}
	return writeValidateReport(f, stdout, rep)
}

// writeValidateReport prints rep as JSON with --json, else as text.
func writeValidateReport(f *validateFlags, stdout io.Writer, rep validateReport) error {
	if f.json {
		return rep.WriteJSON(stdout)
	}
	return rep.WriteText(stdout)
}
