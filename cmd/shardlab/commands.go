package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"shardlab/internal/errtext"
)

// command is one command of shardlab, as a value (cmd/go's base.Command):
// the one list of commands, commandTable below, gives the dispatch, the usage
// text and the flags the tests walk.
type command struct {
	// name is the word after "shardlab": "plan", or "maxtext" for a
	// subcommand of export.
	name string
	// args is the synopsis after the name in the usage ("[flags]",
	// "list|show NAME").
	args string
	// short is the one-line summary of the usage; "" leaves the command's
	// own line out (export, which is only its subcommands).
	short string
	// aliases run the command too (--version).
	aliases []string
	// flags builds the command's flags exactly as run does, without
	// running it; nil for a command without flags or one that is only its
	// subcommands.
	flags func() *flag.FlagSet
	// run runs the command on the arguments after its name; nil for a
	// subcommand, which its parent's run dispatches.
	run func(args []string, stdout, stderr io.Writer) error
	// subs are the subcommands, listed after the command in the usage.
	subs []*command
}

// commandTable is every command, in the order the usage lists them.
var commandTable = []*command{
	{name: "plan", args: "[flags]", short: "plan a job (no flags: two built-in examples)",
		flags: func() *flag.FlagSet { fs, _ := newPlanFlags("plan", false); return fs }, run: runPlan},
	{name: "export", run: runExport, subs: []*command{
		{name: "maxtext", args: "[flags]", short: "the planned layout as a MaxText config (YAML or trainer flags)",
			flags: func() *flag.FlagSet { fs, _, _ := newExportFlags("maxtext"); return fs }},
		{name: "xpk", args: "[flags]", short: "the xpk workload create command that launches the plan",
			flags: func() *flag.FlagSet { fs, _, _ := newExportFlags("xpk"); return fs }},
		{name: "pytorch", args: "[flags]", short: "the layout as a PyTorch/XLA SPMD mesh and shardings (Python)",
			flags: func() *flag.FlagSet { fs, _, _ := newExportFlags("pytorch"); return fs }},
	}},
	{name: "mxu", args: "[flags]", short: "one GEMM on a systolic MXU, cycle by cycle",
		flags: func() *flag.FlagSet { fs, _ := newMXUFlags(); return fs }, run: runMXU, subs: []*command{
			{name: "compare", args: "[flags]", short: "the same GEMM on CPU, GPU and TPU execution models",
				flags: func() *flag.FlagSet { fs, _ := newMXUCompareFlags(); return fs }},
		}},
	{name: "infeed", args: "[flags]", short: "a host's input pipeline, event by event",
		flags: func() *flag.FlagSet { fs, _ := newInfeedFlags(); return fs }, run: runInfeed},
	{name: "inference", args: "[flags]", short: "serve a model with vLLM tpu-inference: layout, HBM, latency, vllm serve",
		flags: func() *flag.FlagSet { fs, _ := newInferenceFlags(); return fs }, run: runInference},
	{name: "run", args: "[flags]", short: "train a small transformer on virtual chips with a layout",
		flags: func() *flag.FlagSet { fs, _ := newRunFlags(); return fs }, run: runEmu},
	{name: "capacity", args: "[flags]", short: "place slices on a TPU reservation and simulate its goodput",
		flags: func() *flag.FlagSet { fs, _ := newCapacityFlags(); return fs }, run: runCapacity},
	{name: "budget", args: "[flags]", short: "time and dollars to train per generation, slice and capacity mode",
		flags: func() *flag.FlagSet { fs, _ := newBudgetFlags(); return fs },
		run:   func(args []string, stdout, _ io.Writer) error { return runBudget(args, stdout) }},
	{name: "web", args: "[--addr HOST:PORT]", short: "the planner in a browser, with charts (default 127.0.0.1:8080)",
		flags: func() *flag.FlagSet { fs, _ := newWebFlags(); return fs }, run: runWeb},
	{name: "validate", args: "[--json]", short: "cost published MaxText runs and compare with their MFU",
		flags: func() *flag.FlagSet { fs, _ := newValidateFlags(); return fs }, run: runValidate},
	{name: "check", args: "--compile-log LOG", short: "the HBM a compile of a plan reported, against the plan's estimate",
		flags: func() *flag.FlagSet { fs, _, _ := newCheckFlags(); return fs }, run: runCheck},
	{name: "hw", args: "list|show NAME", short: "the TPU catalog (NAME: v5p or v5p-128)",
		flags: func() *flag.FlagSet { fs, _ := newCatalogFlags("hw"); return fs }, run: runHW},
	{name: "model", args: "list|show NAME", short: "the model catalog (NAME or a YAML/JSON file)",
		flags: func() *flag.FlagSet { fs, _ := newCatalogFlags("model"); return fs }, run: runModel},
	{name: "version", short: "the module version and VCS revision of this binary",
		aliases: []string{"-version", "--version"}, run: runVersion},
}

// helpNames are the words that print the usage; 'help CMD' is 'CMD -h'.
var helpNames = []string{"help", "-h", "-help", "--help"}

// usage is the usage text, made from commandTable.
var usage = usageText(commandTable)

// usageText is the usage: a line per command and subcommand, its name and
// synopsis padded to one column, then its summary.
func usageText(cmds []*command) string {
	var b strings.Builder
	b.WriteString("shardlab: plan TPU training layouts\n\nusage:\n")
	line := func(synopsis, short string) {
		fmt.Fprintf(&b, "  %-32s %s\n", strings.TrimSpace(synopsis), short)
	}
	for _, c := range cmds {
		if c.short != "" {
			line("shardlab "+c.name+" "+c.args, c.short)
		}
		for _, s := range c.subs {
			line("shardlab "+c.name+" "+s.name+" "+s.args, s.short)
		}
	}
	b.WriteString("\nrun 'shardlab help COMMAND' or 'shardlab COMMAND -h' for a command's flags\n")
	return b.String()
}

// commandList names the commandTable for errors: "plan, export, …, version or
// help".
var commandList = func() string {
	names := make([]string, len(commandTable))
	for i, c := range commandTable {
		names[i] = c.name
	}
	return strings.Join(names, ", ") + " or " + helpNames[0]
}()

// commandFlags builds each command's flags by its full name ("plan",
// "export maxtext", "mxu compare"), so that tests can walk every flag of
// every command.
var commandFlags = func() map[string]func() *flag.FlagSet {
	out := map[string]func() *flag.FlagSet{}
	for _, c := range commandTable {
		if c.flags != nil {
			out[c.name] = c.flags
		}
		for _, s := range c.subs {
			out[c.name+" "+s.name] = s.flags
		}
	}
	return out
}()

// lookup finds the command name names, by its name or an alias.
func lookup(name string) *command {
	for _, c := range commandTable {
		if c.name == name {
			return c
		}
		for _, a := range c.aliases {
			if a == name {
				return c
			}
		}
	}
	return nil
}

// runCommand runs the command args[0] names.
func runCommand(args []string, stdout, stderr io.Writer) error {
	for _, h := range helpNames {
		if args[0] == h {
			return helpText(usage)
		}
	}
	c := lookup(args[0])
	if c == nil {
		return bad("unknown command %s, want %s", strconv.QuoteToASCII(args[0]), commandList)
	}
	return named(commandPath(c, args[1:]), c.run(args[1:], stdout, stderr))
}

// startsWith reports whether msg already names the command path: "export
// xpk:", "export: xpk:" (export.Error's words) or "hw show NAME".
func startsWith(msg, path string) bool {
	return strings.HasPrefix(msg, path+":") || strings.HasPrefix(msg, path+" ") ||
		strings.HasPrefix(msg, strings.ReplaceAll(path, " ", ": ")+":")
}

// commandPath is the words that name the command args run: c's name, and
// its subcommand's where args start with one ("export xpk").
func commandPath(c *command, args []string) string {
	if len(args) > 0 {
		for _, s := range c.subs {
			if s.name == args[0] {
				return c.name + " " + s.name
			}
		}
	}
	return c.name
}

// named is err with the command path in front, as every error line
// starts ("shardlab: plan: --seq ..."), where the command's own words did
// not already put it there; help text and errors already reported pass
// as they are. It still matches what err wraps (isUsage, the exit code).
func named(path string, err error) error {
	var help helpText
	var reported reportedError
	if err == nil || errors.As(err, &help) || errors.As(err, &reported) || startsWith(err.Error(), path) {
		return err
	}
	// a library's error in its own words (errtext.Detail): without a
	// package name, which would read as a second command ("check: plan:
	// no layout can run")
	return phrasedError{path + ": " + errtext.Detail(err), err}
}

// versionUsage is what 'shardlab version -h' prints.
const versionUsage = `usage of shardlab version:
  shardlab version   the module version and VCS revision of this binary (also --version)
`

// runVersion prints the version; it takes no arguments but -h.
func runVersion(args []string, stdout, _ io.Writer) error {
	switch {
	case len(args) > 0 && isHelp(args[0]):
		return helpText(versionUsage)
	case len(args) > 0:
		return bad("version: unexpected argument %s", strconv.QuoteToASCII(args[0]))
	}
	_, err := fmt.Fprintln(stdout, version())
	return err
}
