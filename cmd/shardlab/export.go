package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"shardlab/export"
)

// exportFlags are the options of an export besides plan's.
type exportFlags struct {
	format string // maxtext: yaml or flags
}

// newExportFlags defines the flags of export maxtext:
// plan's (without --json, --top and --example-cost) and the target's own.
func newExportFlags(target string) (*flag.FlagSet, *planFlags, *exportFlags) {
	fs, f := newPlanFlags("export "+target, true)
	var e exportFlags
	switch target {
	case "maxtext":
		choiceVar(fs, &e.format, "format", "yaml", []string{"yaml", "flags"}, nil,
			"yaml (a config overlay for MaxText's base.yml) or flags (the trainer's command line with key=value arguments)")
	}
	return fs, f, &e
}

func runExport(args []string, stdout, stderr io.Writer) error {
	const want = "export: want 'export maxtext [flags]'"
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Fprint(stderr, `usage of shardlab export:
  shardlab export maxtext [flags]  the planned layout as a MaxText config (--format yaml or flags)
run 'shardlab export maxtext -h' for the flags
`)
		return flag.ErrHelp
	}
	if len(args) == 0 || args[0] != "maxtext" {
		return bad("%s", want)
	}
	target := args[0]
	name := "export " + target
	fs, f, e := newExportFlags(target)
	if err := parseFlags(fs, args[1:], stderr); err != nil {
		return err
	}
	plans, err := f.plans(name, setFlags(fs))
	if err != nil {
		return err
	}
	for _, p := range plans {
		if mem := p.Best.Estimate.Memory; !mem.Fits() {
			return fmt.Errorf("export: the layout does not fit in HBM by %v; nothing exported", mem.Total()-mem.Usable)
		}
	}
	// Everything is made before anything is written: a refused plan
	// leaves stdout empty.
	var b strings.Builder
	for i, p := range plans {
		if i > 0 {
			fmt.Fprintln(&b, "---")
		}
		switch {
		default:
			cfg, err := export.MaxText(p)
			if err != nil {
				return err
			}
			write := cfg.WriteYAML
			if e.format == "flags" {
				write = cfg.WriteFlags
			}
			if err := write(&b); err != nil {
				return err
			}
		}
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}
