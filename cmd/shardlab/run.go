package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"unicode/utf8"

	"shardlab/cost"
	"shardlab/emu"
	"shardlab/emu/mpi"
	"shardlab/export"
	"shardlab/hw"
	"shardlab/infeed"
	"shardlab/internal/errtext"
	"shardlab/mesh"
	"shardlab/model"
	"shardlab/plan"
	"shardlab/schedule"
	"shardlab/schema"
	"shardlab/systolic"
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
	fmt.Fprintf(stderr, "shardlab: %s\n", clipLine(oneLine(err.Error())))
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

// maxErrorLine bounds the error line run prints. An error echoes the
// user's value, so a 100 KB --model made a 100 KB line; past the bound
// the middle is elided, keeping the start (the command, the flag and the
// value's beginning) and the end (what is accepted). No error of
// shardlab's own words comes near it.
const maxErrorLine = 4096

// clipLine is s, or s with its middle elided to keep it within
// maxErrorLine bytes, cut at rune boundaries.
func clipLine(s string) string {
	if len(s) <= maxErrorLine {
		return s
	}
	head, tail := maxErrorLine/4, maxErrorLine/2
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	from := len(s) - tail
	for from < len(s) && !utf8.RuneStart(s[from]) {
		from++
	}
	return fmt.Sprintf("%s…[%d bytes elided]…%s", s[:head], from-head, s[from:])
}

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
	if err == nil {
		err = notShown(what, name, data)
	}
	return data, err
}

// notShown refuses a spec file that is what 'model show --json' prints
// (a JSON object with a schema key, and counts a spec does not take),
// saying how to get the spec: its model's 'model show NAME --spec'.
func notShown(what, name string, data []byte) error {
	var shown map[string]json.RawMessage
	if json.Unmarshal(data, &shown) != nil || shown[schema.Key] == nil {
		return nil
	}
	var shownName string
	if json.Unmarshal(shown["name"], &shownName) != nil {
		shownName = ""
	}
	if _, ok := model.Lookup(shownName); !ok {
		shownName = "NAME" // not a catalog model: its spec is a file already
	}
	return bad("%s %s: holds %q: it is what 'shardlab model show --json' prints, not a spec; 'shardlab model show %s --spec' prints the model as a spec", what, name, schema.Key, shownName)
}

// parseTPU reads --tpu everywhere it appears: a generation (tpu7x) or an
// accelerator type (tpu7x-8), through the hw package's parsers. slice is
// nil for a generation.
func parseTPU(what, s string) (hw.Chip, *hw.Slice, error) {
	slice, err := hw.ParseTPU(s)
	switch {
	case err != nil:
		// hw's own words after the value, as plan's options quote them
		// ('--tpu "v9": unknown TPU generation; valid: ...')
		rest, _ := errtext.After(errtext.Detail(err), s)
		return hw.Chip{}, nil, phrasedError{fmt.Sprintf("%s %s: %s", what, strconv.Quote(s), rest), err}
	case slice.Chips() == 0:
		return slice.Chip, nil, nil
	}
	return slice.Chip, &slice, nil
}

// hostSlice is one of a generation's usual VMs (hw.Chip.HostSlice:
// tpu7x-8, v5p-8, v5litepod-4).
func hostSlice(c hw.Chip) (hw.Slice, error) {
	s, err := c.HostSlice()
	if err != nil {
		return hw.Slice{}, bad("--tpu %s: %v", c.Generation, err)
	}
	return s, nil
}

// writeJSON writes v, a JSON object, with its schema version first.
func writeJSON(w io.Writer, v any) error { return schema.Write(w, v) }
