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
	fs.BoolVar(&f.breakdown, "breakdown", false, "print each run's step time by part")
	fs.BoolVar(&f.fit, "fit", false, "print each calibration constant fitted on the calibration rows (what cost.Calibrated holds), the rows it was fitted on and its error on them and on the held-out rows")
	fs.BoolVar(&f.memory, "memory", false, "print the memory table: cost's HBM estimate against what XLA reported (with --json: as JSON)")
	fs.BoolVar(&f.serving, "serving", false, "print the serving table: shardlab inference's prediction against published TPU serving throughput (with --json: as JSON)")
	return fs, &f
}

func runValidate(args []string, stdout, stderr io.Writer) error {
	fs, f := newValidateFlags()
	asJSON, breakdown, fit := &f.json, &f.breakdown, &f.fit
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if f.memory && f.serving {
		return bad("validate: --memory and --serving are two reports, give one")
	}
	if f.memory {
		return runValidateTable(f, stdout, "memory", validate.BuiltInMemoryReport)
	}
	if f.serving {
		return runValidateTable(f, stdout, "serving", validate.BuiltInServingReport)
	}
	runs, err := validate.Runs()
	if err != nil {
		return err
	}
	if *fit {
		rows, err := validate.FitReport(runs)
		if err != nil {
			return err
		}
		return validate.WriteFitReport(stdout, rows)
	}
	rep, err := validate.Evaluate(runs, nil)
	if err != nil {
		return err
	}
	if *asJSON {
		return rep.WriteJSON(stdout)
	}
	if *breakdown {
		return rep.WriteBreakdown(stdout)
	}
	return rep.WriteText(stdout)
}

// tableReport is the report of one of validate's side tables (memory,
// serving), which prints as text or JSON only.
type tableReport interface {
	WriteText(io.Writer) error
	WriteJSON(io.Writer) error
}

// runValidateTable builds the report of the side table that flag --name
// asks for (validate.BuiltInMemoryReport: the memory table costed;
// validate.BuiltInServingReport: the serving model run on the serving
// table) and prints it.
func runValidateTable[R tableReport](f *validateFlags, stdout io.Writer, name string, build func() (R, error)) error {
	if f.breakdown || f.fit {
		return bad("validate: --%s goes with --json only, not --breakdown or --fit", name)
	}
	rep, err := build()
	if err != nil {
		return err
	}
	if f.json {
		return rep.WriteJSON(stdout)
	}
	return rep.WriteText(stdout)
}
