package main

import (
	"flag"
	"fmt"
	"io"
	"sort"

	"shardlab/validate"
)

// runValidate costs every published run of the built-in table on its
// published layout and prints predicted against published MFU.
func runValidate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	breakdown := fs.Bool("breakdown", false, "print each run's step time by part")
	fit := fs.Bool("fit", false, "print the residual efficiency per generation fitted on the calibration rows (what cost.Calibrated holds)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	runs, err := validate.Runs()
	if err != nil {
		return err
	}
	if *fit {
		eff, err := validate.Fit(runs)
		if err != nil {
			return err
		}
		var gens []string
		for g := range eff {
			gens = append(gens, string(g))
		}
		sort.Strings(gens)
		for _, g := range gens {
			for k, v := range eff {
				if string(k) == g {
					fmt.Fprintf(stdout, "%s\t%.3f\n", g, v)
				}
			}
		}
		return nil
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
