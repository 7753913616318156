package export

import (
	"errors"
	"fmt"
	"strings"

	"shardlab/cost"
	"shardlab/plan"
)

// The files a verification's commands write: the compile's log (its
// standard output and error) and the calibration file check writes.
const (
	CompileLogFile  = "compile.log"
	CalibrationFile = "calibration.json"
)

// The steps of a verification (Command.Step), in the order they run.
const (
	StepExport  = "export"
	StepCompile = "compile"
	StepCheck   = "check"
)

// The options of shardlab check that a verification's check step gives
// (check's own, not a plan's): the compile's log it reads and the
// calibration file it writes. A front end spells them as it spells a
// plan's options (Commands.Spell).
const (
	OptionCompileLog       plan.Option = "compile_log"
	OptionWriteCalibration plan.Option = "write_calibration"
)

// shardlab's own commands in a verification's steps: export's, which
// writes the plan's MaxText config to its standard output, and check's,
// which holds a compile's log to the plan; each before its options.
var (
	exportCommand = []string{"shardlab", "export", "maxtext"}
	checkCommand  = []string{"shardlab", "check"}
)

// Commands is how a front end spells the options of shardlab's own
// commands in a verification's steps; package export builds the commands
// (Verification.Steps) and spells none of shardlab's flags.
type Commands struct {
	// Spell spells an option as the commands take it: a plan's
	// (plan.Option) and check's own (OptionCompileLog,
	// OptionWriteCalibration).
	Spell func(plan.Option) string
	// Job are the job's further options as the front end spells them,
	// one argument each (a flag, its value, or flag=value), between the
	// job's identity and its layout; VerifyOwns's options are Verify's.
	Job []string
}

// Steps is how to verify a plan before renting TPUs (Verify), the one
// form every front end renders: plan --verify's text, plan --json's
// verify key, plan --html's report, the web page and its plan.json.
// Either the three commands, or why there are none.
type Steps struct {
	// Of is the verification the steps are of.
	Of Verification `json:"-"`
	// Available says there are commands; where not, UnavailableReason
	// says why for a script (Verification.Why) and Unavailable in words.
	Available         bool   `json:"available"`
	UnavailableReason string `json:"unavailable_reason,omitempty"`
	Unavailable       string `json:"unavailable,omitempty"`
	// Commands are export's, the compile's and check's, in that order
	// (empty without steps).
	Commands []Command `json:"commands"`
	// ConfigFile is the MaxText config export writes and the compile
	// reads, CompileLog the compile's log check reads, and Calibration
	// the file check writes, for plan to plan with.
	ConfigFile  string `json:"config_file,omitempty"`
	CompileLog  string `json:"compile_log_file,omitempty"`
	Calibration string `json:"calibration_file,omitempty"`
	// Expected is what the compile should report.
	Expected *ExpectedReport `json:"expected_report,omitempty"`
	// Notes say what the commands alone do not: a compile of another
	// topology, a plan without remat compiled under MaxText's policy for
	// none, a temporaries' factor the calibration replaces, and first,
	// with Held, whose steps they are.
	Notes []string `json:"notes"`
	// Held, where the plan is one MaxText cannot run and its MaxText
	// export holds MaxText's best (Held.Steps), is that layout, in JAX
	// devices as the mesh option takes it: the steps are its.
	Held string `json:"held_layout,omitempty"`
}

// Command is one step's command.
type Command struct {
	// Step is StepExport, StepCompile or StepCheck.
	Step string `json:"step"`
	// Args are the program and its arguments, one word each, unquoted
	// (for an exec); Line is the command for a POSIX shell, with where
	// its output goes.
	Args []string `json:"args"`
	Line string   `json:"line"`
	// Stdout is the file its standard output goes to (the compile's with
	// its standard error); absent for check, which prints its comparison.
	Stdout string `json:"stdout_file,omitempty"`
}

// ExpectedReport is what XLA's memory report of the compile should read,
// by the plan.
type ExpectedReport struct {
	// PerDevice is the report a JAX device (Verification.Report), and
	// Recomputes whether XLA recomputes values to get there (at most
	// Capacity then).
	PerDevice  int64 `json:"xla_report_bytes_per_jax_device"`
	Recomputes bool  `json:"xla_recomputes"`
	// Capacity is the HBM XLA lets a JAX device hold: a compile that
	// needs more fails with XLA's out-of-memory message, which check
	// reads as well.
	Capacity int64 `json:"xla_capacity_bytes"`
	// Remat is the policy compiled: the plan's, or for a plan without
	// remat the custom policy MaxText runs for none (cost.NamedNone),
	// RematCustom a custom policy's places.
	Remat       string `json:"remat"`
	RematCustom string `json:"remat_custom,omitempty"`
}

// Steps is v's commands as front end c spells them; without a compile,
// why (a refusal phrased with c.Spell).
func (v Verification) Steps(c Commands) Steps {
	s := Steps{Of: v, Commands: []Command{}, Notes: []string{}, UnavailableReason: v.Why, Unavailable: v.Unavailable}
	if v.Refused != nil {
		s.Unavailable = Refusal(v.Refused, c.Spell)
	}
	if s.Unavailable != "" {
		return s
	}
	opts, line := v.options(c.Spell, c.Job)
	checkLog, checkCal := c.Spell(OptionCompileLog), c.Spell(OptionWriteCalibration)
	export := append(append([]string{}, exportCommand...), opts...)
	check := append(append(append([]string{}, checkCommand...), checkLog, CompileLogFile), opts...)
	checkLine := ShellQuote(checkCommand) + " " + ShellWord(checkLog) + " " + CompileLogFile + line
	if !v.Recomputes {
		// at XLA's limit a report gives no temporaries' factor: no file
		check = append(check, checkCal, CalibrationFile)
		checkLine += " " + ShellWord(checkCal) + " " + CalibrationFile
		s.Calibration = CalibrationFile
	}
	s.Commands = []Command{
		{Step: StepExport, Args: export, Line: ShellQuote(exportCommand) + line + " > " + ShellWord(v.ConfigFile), Stdout: v.ConfigFile},
		{Step: StepCompile, Args: v.CompileArgs, Line: v.Compile + " 2>&1 | tee " + CompileLogFile, Stdout: CompileLogFile},
		{Step: StepCheck, Args: check, Line: checkLine},
	}
	s.Available, s.ConfigFile, s.CompileLog = true, v.ConfigFile, CompileLogFile
	s.Expected = &ExpectedReport{PerDevice: int64(v.Report), Recomputes: v.Recomputes, Capacity: int64(v.XLACapacity)}
	for _, ov := range v.Layout {
		switch ov.Option {
		case plan.OptionRemat:
			s.Expected.Remat = ov.Arg
		case plan.OptionRematCustom:
			s.Expected.RematCustom = ov.Arg
		}
	}
	s.Notes = v.notes()
	return s
}

// LoadNote is what a compile that passes does not promise: the runtime
// reserves the program's memory when it loads it, beside the parameters
// and whatever else holds HBM then (openxla/xla docs/errors/
// error_0101.md @11903d43), and a compile whose program and parameters
// were above a device has failed there (validate's memory table,
// tpurecipes-dsv3-v5p256-pdb5: passed the compile 1.63 GiB over, failed
// at load; validate.LoadShortfall), which check warns of; it reads the
// runtime's message from the run's log.
const LoadNote = "a compile that passes can still fail when the runtime loads the program beside the parameters and whatever else holds HBM then: check warns of a compile above a device's HBM, and reads the runtime's message"

// AtLimitNote says why the steps of a plan at XLA's limit write no
// calibration (Steps.Calibration empty).
const AtLimitNote = "the plan puts the step at XLA's limit, which its rematerialization recomputes down to: a compile that succeeds reports that limit, which says the plan fits but not how far the temporaries' model is off, so check gates the launch and writes no calibration"

// notes are what v's commands alone do not say.
func (v Verification) notes() []string {
	notes := []string{}
	if v.TopologyNote != "" {
		notes = append(notes, v.TopologyNote)
	}
	if v.NamedNone {
		notes = append(notes, fmt.Sprintf("the plan has no remat, and MaxText runs none as the custom policy %s (every tensor kept on the device), which the commands carry: the compile and the calibration's factor are that policy's, to plan with", cost.NamedNone()))
	}
	if v.TempScale != 0 && !v.Recomputes {
		notes = append(notes, fmt.Sprintf("the plan was made with a temporaries' factor of %g; the calibration file check writes is against the model without one, and replaces that factor rather than multiplying it", v.TempScale))
	}
	if v.Recomputes {
		notes = append(notes, AtLimitNote)
	}
	return notes
}

// Refusal says that MaxText cannot compile a plan as it is, and why: err
// (Verification.Refused) on one line, with the options it names spelt by
// spell.
func Refusal(err error, spell func(plan.Option) string) string {
	text := err.Error()
	var xe *Error
	var oe *plan.OptionError
	switch {
	case errors.As(err, &xe):
		text = xe.Phrase(spell)
	case errors.As(err, &oe):
		text = oe.Phrase(spell)
	}
	return "MaxText cannot compile this plan as it is (" + strings.Join(strings.Fields(text), " ") + ")"
}
