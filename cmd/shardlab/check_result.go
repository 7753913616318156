package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/internal/errtext"
	"shardlab/plan"
	"shardlab/unit"
	"shardlab/validate"
)

// checkResult is one check: the log held against the plan, whether the
// log can be the plan's compile, and the temporaries' factor it gives or
// why it gives none.
type checkResult struct {
	log validate.CompileLog
	// r is the comparison with the plan as given (its factor, if any).
	r validate.MemoryResult
	// fits is the plan's own answer, as plan --json's fits.
	fits bool
	// mismatch is why the log cannot be the plan's compile
	// (validate.ErrNotThisJob), nil where it can be.
	mismatch error
	// cal is the factor against the model without one, or calErr why
	// there is none.
	cal    *cost.MemoryCalibration
	calErr error
	// chip is the plan's, which the log's bytes are held to.
	chip hw.Chip
	// shortfall is how far the memory table's compile that passed and
	// failed to load was above a device (validate.LoadShortfall), which
	// the warning of a compile above capacity cites (over).
	shortfall int64
}

// checkPlan holds log against plan p, read from path: the comparison with
// the plan as given, whether the log can be its compile, and the factor
// against the uncalibrated model. A log that cannot be the plan's gives
// no factor.
func checkPlan(log validate.CompileLog, p plan.Plan, path string) (checkResult, error) {
	e := p.Best.Estimate
	ms := e.Mesh.Multislice
	chip := ms.Slice.Chip
	if log.Message == validate.MessageScratch {
		// not HBM: nothing to compare, no factor (checkJSON has no comparison)
		return checkResult{log: log, fits: e.Memory.Fits(), chip: chip, calErr: errScratch}, nil
	}
	shortfall, err := validate.LoadShortfall()
	if err != nil {
		return checkResult{}, err
	}
	r := validate.CompareLog(log, e.Memory, chip.JAXDevicesPerChip)
	// the comparison is of this plan, not of a case in the memory table
	r.Case.Generation, r.Case.AcceleratorType, r.Case.Slices, r.Case.Model = string(chip.Generation), ms.Slice.AcceleratorType(), max(ms.Slices, 1), p.Request.Model
	// The factor is against the uncalibrated model, whatever --calibration
	// or --temp-scale this check was given: plan --calibration applies it
	// to that model, so a factor against a scaled prediction would
	// compound (the same log would give a different file each time).
	raw, err := uncalibrated(log, r, e)
	if err != nil {
		return checkResult{}, err
	}
	res := checkResult{log: log, r: r, fits: e.Memory.Fits(), chip: chip, mismatch: validate.LogMismatch(log, r, chip), shortfall: shortfall}
	if res.mismatch == nil {
		res.cal, res.calErr = calibrationOf(log, raw, path, p)
		if errors.Is(res.calErr, validate.ErrNotThisJob) {
			res.mismatch = res.calErr
		}
	}
	if res.mismatch != nil {
		res.cal, res.calErr = nil, res.mismatch
	}
	return res, nil
}

// errScratch is why a scratch memory's out-of-memory message gives no
// temporaries' factor: its bytes are not HBM's.
var errScratch = errors.New("the log's out-of-memory is of a TensorCore's scratch memory, not HBM: it gives no temporaries factor")

// errEarlyAbort is why XLA's early abort gives none: its bytes are an
// estimate made before the step is laid out (validate.MessageEarlyAbort).
var errEarlyAbort = errors.New("XLA's early abort estimates the step before laying it out, when no rematerialization could fit it: its bytes are not the step's, and give no factor")

// errAtLimit is why a compile of a plan whose step the plan puts at
// XLA's limit gives no temporaries' factor: the compile succeeded and is
// compared, and nothing is wrong with it (exit 0, no calibration file).
var errAtLimit = errors.New("the compile fits, and a calibration needs a plan below the limit")

// status is check's exit status (checkExits) as an error: nil for 0, or
// for 1 the line stderr gets, what stops the plan first. written is what
// writing the calibration file returned.
func (res checkResult) status(c *checkFlags, written error) error {
	var why []string
	switch {
	case res.mismatch != nil:
		why = append(why, fmt.Sprintf("--compile-log %s is not this plan's compile: %s", c.log, errtext.Detail(res.mismatch)))
		if c.calibration != "" {
			why = append(why, fmt.Sprintf("--write-calibration %s: nothing written", c.calibration))
		}
		written = nil
	case !res.log.Compiled():
		why = append(why, res.failed())
	case errors.Is(res.calErr, errAtLimit):
		written = nil // a compile that succeeded at the limit: compared, no file
	case res.cal == nil && written == nil:
		why = append(why, fmt.Sprintf("no temporaries factor: %v", res.calErr))
	}
	if written != nil {
		why = append(why, written.Error())
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("check: %s", strings.Join(why, "; "))
}

// failed is what check says first of a job that failed, at its compile
// or its load (validate.CompileLog.Failure), with the plan's verdict where
// the failure is of HBM: the plan's own answer (res.fits, --json's fits),
// against what the failure shows (said).
func (res checkResult) failed() string {
	if res.log.Message == validate.MessageScratch {
		return res.log.Failure() + ": do not launch this plan as it is"
	}
	return fmt.Sprintf("%s (%s): do not launch this plan as it is", res.log.Failure(), res.said())
}

// said is the plan's verdict against a failed compile or load: the plan
// said it fits and the job did not (MISSED), or it said it does not fit.
// A load that failed with the program and the plan's arguments within the
// device (validate.Load.Over not above 0) failed on other buffers, beside
// a step the plan had right: not MISSED.
func (res checkResult) said() string {
	switch ld, ok := validate.ReserveLoad(res.log, res.r, res.chip); {
	case !res.fits:
		return "as the plan said: it does not fit"
	case ok && ld.Over <= 0:
		return fmt.Sprintf("the plan said it fits, and so the program does beside its parameters and optimizer state: other buffers held %s at load", gib(ld.Others))
	}
	return "the plan said it fits: verdict MISSED"
}

// oomLine restates the failure under the table: where XLA's compile ran
// out of memory, against the plan's verdict; for the runtime's failure to
// load (validate.Load), what the program and the plan's parameters and
// optimizer state make against the device, and what other buffers held.
func (res checkResult) oomLine() string {
	log := res.log
	verdict := "the plan said it fits: the prediction is short"
	if !res.fits {
		verdict = "the plan said it does not fit either"
	}
	ld, ok := validate.ReserveLoad(log, res.r, res.chip)
	if !ok {
		return fmt.Sprintf("out of memory at %s of %s: %s\n", gib(log.Reported), gib(log.Capacity), verdict)
	}
	with := fmt.Sprintf("the program's %s and the plan's parameters and optimizer state, %s, make %s", gib(ld.Program), gib(ld.Arguments), gib(ld.Program+ld.Arguments))
	if ld.Over > 0 {
		return fmt.Sprintf("failed to load: %s, %s above the %s a JAX device holds, so no load can reserve the program: %s\n", with, gib(ld.Over), gib(ld.Capacity), verdict)
	}
	return fmt.Sprintf("failed to load: %s of the %s a JAX device holds (%s free), yet %s was reservable: other buffers held %s beside the arguments (error_0101.md: buffer allocations are privileged over loaded programs)\n",
		with, gib(ld.Capacity), gib(-ld.Over), gib(ld.Reservable), gib(ld.Others))
}

// succeeded is what check says first of a compile that succeeded and is
// this plan's: where it lands against what a JAX device holds; "" where
// that is not known.
func (res checkResult) succeeded() string {
	free, capacity, ok := validate.Headroom(res.log, res.r, res.chip)
	if !ok || res.mismatch != nil {
		return ""
	}
	at := gib(res.log.Reported)
	if res.log.Scope == validate.ScopeTemp {
		at = fmt.Sprintf("%s (its temporaries, %s, and the plan's parameters and optimizer state, %s)", gib(res.log.Reported+res.r.Arguments), gib(res.log.Reported), gib(res.r.Arguments))
	}
	said := ""
	if !res.fits {
		said = " (the plan said it would not: its prediction is above the compile's)"
	}
	if free < 0 {
		said = "the plan said it fits"
		if !res.fits {
			said = "the plan said it does not fit"
		}
		return fmt.Sprintf("the compile succeeded at %s, %s above the %s a JAX device holds: it may fail when the program loads (the warning below): %s\n", at, gib(-free), gib(capacity), said)
	}
	return fmt.Sprintf("the compile succeeded at %s of %s a JAX device (%s free): the plan fits%s\n", at, gib(capacity), gib(free), said)
}

// headline is the text's first line: a compile (or load) that failed,
// with what to do, a log that is not the plan's, or a compile of the plan
// that succeeded and where it lands (succeeded); "" where none of these
// can be said.
func (res checkResult) headline() string {
	switch {
	case res.mismatch != nil:
		return fmt.Sprintf("not this plan's compile: %s: no verdict and no temporaries factor from it; check the log of the compile plan --verify prints for these flags (--tpu as its compile_topology, the model, --mesh, --global-batch and remat as export maxtext wrote them)\n", errtext.Detail(res.mismatch))
	case res.log.Message == validate.MessageScratch:
		return res.failed() + "\n"
	case !res.log.Compiled():
		advice := "compile a smaller --global-batch (or another --mesh) and check it again"
		if res.cal != nil {
			advice = fmt.Sprintf("plan with the compiler's temporaries (plan --temp-scale %.3f, or --calibration with --write-calibration's file), which picks a batch and layout that fit, or %s", res.cal.TempScale, advice)
		}
		if errors.Is(res.calErr, errFarOff) {
			advice = fmt.Sprintf("%v; %s", res.calErr, advice)
		}
		if ld, ok := validate.ReserveLoad(res.log, res.r, res.chip); ok && ld.Over <= 0 && res.fits {
			// the step fits: what else held HBM at load is what to change
			advice = fmt.Sprintf("free what else holds HBM when the program loads (arrays kept alive, other programs loaded: openxla/xla's error_0101.md), or make the program %s smaller, what the load was short of (a smaller --global-batch, or more remat), and check its compile again", gib(ld.Program-ld.Reservable))
		}
		return res.failed() + "; " + advice + "\n"
	}
	return res.succeeded()
}

// writeCalibration writes cal to the file at path, or says why nothing
// is written (calErr, why the log gives no factor).
func writeCalibration(path string, cal *cost.MemoryCalibration, calErr error) error {
	if calErr != nil {
		return fmt.Errorf("--write-calibration %s: nothing written: %w", path, calErr)
	}
	b, err := json.MarshalIndent(cal, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("--write-calibration %s: %w", path, err)
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
func gib(n int64) string { return unit.Bytes(n).InGiB() }

// errFarOff is wrapped by calibrationOf's error for an out-of-memory
// message whose temporaries are beyond cost.MaxTempScale times the
// plan's: a compile of this plan's chip that failed, whose bytes no factor
// the planner accepts reaches.
var errFarOff = errors.New("the model is far off for this job, and the log gives no factor")

// calibrationOf is the factor that makes the prediction's temporaries what
// the log reports: the log's temporaries are its temp, or its program,
// or, where it gives only a total, the total less the predicted arguments
// (cost's arguments match the compilers' within 1.4 % on the memory table).
// A factor outside cost's range says a memory report is not the plan's
// compile (validate.ErrNotThisJob); an out-of-memory message, which
// validate.LogMismatch has held to the chip's capacity, stays the plan's
// failed compile, below 1 giving no factor (oomLowers) and above the range
// saying the model is far off (errFarOff).
//
// The runtime's failure to load (validate.MessageReserve) follows a
// compile that passed: what it asked to reserve is the program the
// compile laid out, whole ("the compiled XLA program ... is larger than
// the total amount of free HBM", openxla/xla docs/errors/error_0101.md
// @11903d43; memory.yaml's pdb5: its 68.03 GiB are the temporaries, 66.40
// = 95.74 − 29.3 of arguments reservable), not a step XLA squeezed short
// of room, which it stops at only when the compile fails. Like with like
// is the temporaries as laid out (r.Temp, which validate.CompareLog
// predicts at the device's capacity, where the compile passed), as for a
// memory report: against the needed peak the factor would count the
// loss's exponentials, which the program keeps, as the model's error
// (review 159 #2: 1.148 in place of 1.014). It is a measurement of the
// program, not a bound from below, so it may lower the model; outside
// cost's range the log is not the plan's.
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
	// The runtime's failure to load is not such a message (the function's
	// doc): like with like is the temporaries as laid out.
	predicted := r.Temp
	squeezedOOM := log.Kind == validate.KindOOM && log.Message != validate.MessageReserve
	switch {
	case log.Message == validate.MessageEarlyAbort:
		return nil, errEarlyAbort
	case squeezedOOM:
		predicted = r.Needed
		if log.Scope != validate.ScopeTemp {
			predicted -= r.Arguments
		}
	case r.AtLimit:
		limit := p.Best.Estimate.Memory.XLACapacityPerDevice(p.Request.Multislice.Slice.Chip.JAXDevicesPerChip)
		return nil, fmt.Errorf("the prediction is XLA's limit, %.2f GiB a JAX device, which its rematerialization recomputes down to: a report there says how XLA squeezed the step, not how far the temporaries' model is off: %w", float64(limit)/(1<<30), errAtLimit)
	}
	if reported <= 0 || predicted <= 0 {
		return nil, fmt.Errorf("the log gives no temporaries to calibrate against (reported %d bytes, predicted arguments %d)", log.Reported, r.Arguments)
	}
	k := float64(reported) / float64(predicted)
	switch {
	case squeezedOOM && k < 1:
		return nil, oomLowers(log, r, k)
	case squeezedOOM && k > cost.MaxTempScale:
		// XLA's own message at the capacity of the plan's chip
		// (validate.LogMismatch held it there): this chip's compile
		// failed, and the model is far off
		return nil, fmt.Errorf("the log's temporaries are %.2f times the plan's needed peak's, beyond the %g a temporaries factor may be: %w", k, cost.MaxTempScale, errFarOff)
	case !(k >= cost.MinTempScale && k <= cost.MaxTempScale):
		return nil, fmt.Errorf("the log's temporaries are %.2f times the prediction's, want %g to %g: %w", k, cost.MinTempScale, cost.MaxTempScale, validate.ErrNotThisJob)
	}
	return measured(k, reported, predicted, path, p), nil
}

// measured is the calibration file's content for factor k, from reported
// and predicted temporaries, measured on plan p's job by the log at path.
func measured(k float64, reported, predicted int64, path string, p plan.Plan) *cost.MemoryCalibration {
	e := p.Best.Estimate
	src := calibrationSource(path, e.Job.Model.Name, p.Request.Multislice.Slice.AcceleratorType(), e.Mesh.String(), time.Now().UTC().Format(time.DateOnly))
	job := &cost.MeasuredJob{Model: e.Job.Model.Name, AcceleratorType: p.Request.Multislice.Slice.AcceleratorType(), Layout: e.Mesh.String(),
		Remat: e.Job.Remat, GlobalBatch: e.Job.GlobalBatch, MicroBatches: max(e.Job.MicroBatches, 1)}
	if e.Job.Remat == cost.RematCustom {
		job.RematCustom = e.Job.Custom.String()
	}
	return &cost.MemoryCalibration{TempScale: k, Reported: reported, Predicted: predicted, Source: src, Job: job}
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
	// ThisPlans is whether the log can be the compile of this plan
	// (validate.LogMismatch, and a memory report's temporaries within
	// cost's range of the plan's); where it cannot, Mismatch says why and
	// the document has no verdict: Compiled and Fits are left out.
	ThisPlans bool   `json:"this_plans_compile"`
	Mismatch  string `json:"mismatch,omitempty"`
	// Compiled is whether the compile succeeded (false: the log is XLA's
	// out-of-memory message, and check exits 1); Fits is the plan's own
	// answer, as plan --json's fits. Compiled false with Fits true is the
	// verdict MISSED.
	Compiled *bool               `json:"compiled,omitempty"`
	Fits     *bool               `json:"fits,omitempty"`
	Log      validate.CompileLog `json:"compile_log"`
	// Result is the comparison, absent for a scratch memory's
	// out-of-memory message, which says nothing of HBM.
	Result      *validate.MemoryRowJSON `json:"comparison,omitempty"`
	Calibration *cost.MemoryCalibration `json:"calibration,omitempty"`
	// Given is the temporaries' factor the prediction was made with
	// (--calibration or --temp-scale), as plan --json says it.
	Given *calibrationJSON `json:"temporaries_calibration,omitempty"`
	// Load is the runtime's failure to load a program that compiled
	// (validate.MessageReserve) against the plan: the program and the
	// plan's parameters and optimizer state against the device, and what
	// other buffers held.
	Load *validate.Load `json:"load,omitempty"`
	// Warnings are the text's warnings (checkResult.warnings).
	Warnings []string `json:"warnings"`
}

// notThisPlans is the comparison's verdict for a log that is not the
// plan's compile: none, as the text's first line says.
const notThisPlans = "none: not this plan's compile"

// json is the check's document; named is what compiledNone did, note the
// factor the prediction was made with.
func (res checkResult) json(named string, note *calibrationJSON) checkJSON {
	warnings := []string{}
	for _, w := range append([]string{named}, res.warnings()...) {
		if w != "" {
			warnings = append(warnings, w)
		}
	}
	doc := checkJSON{ThisPlans: res.mismatch == nil, Log: res.log, Calibration: res.cal, Given: note, Warnings: warnings}
	if res.log.Message != validate.MessageScratch {
		row := res.r.JSON()
		doc.Result = &row
	}
	if res.mismatch != nil { // a scratch memory's message is never one (checkPlan)
		doc.Mismatch, doc.Result.Verdict = errtext.Detail(res.mismatch), notThisPlans
		return doc
	}
	compiled, fits := res.log.Compiled(), res.fits
	doc.Compiled, doc.Fits = &compiled, &fits
	if ld, ok := validate.ReserveLoad(res.log, res.r, res.chip); ok {
		doc.Load = &ld
		if fits && ld.Over <= 0 {
			// the text's verdict (said): the step the plan costed fits
			doc.Result.Verdict = loadedBeside
		}
	}
	return doc
}

// loadedBeside is the comparison's verdict for a load that failed where
// the plan fits and the program fits beside the plan's parameters and
// optimizer state: other buffers held the rest (checkResult.said).
const loadedBeside = "fits beside its arguments: the load failed on other buffers"

// argumentTolerance is how far the plan's parameters and optimizer state
// may be from a compile's arguments (validate.ArgumentOff, the table's
// error) before check warns that the log may not be of the plan: on validate's memory table they agree within
// 1.4 % (`shardlab validate --memory`), so 5 % is far outside the
// model's error. Beyond validate.ArgumentBound the log is refused.
const argumentTolerance = 0.05

// warnings are what check warns of the log: the plan's parameters and
// optimizer state further from its arguments than argumentTolerance (and
// within validate.ArgumentBound, beyond which the log is refused), and a
// compile that succeeded above what the chip's device holds (over).
func (res checkResult) warnings() []string {
	var out []string
	if over := res.over(); over != "" {
		out = append(out, over)
	}
	if off, ok := validate.ArgumentOff(res.log, res.r); ok && math.Abs(off) > argumentTolerance && math.Abs(off) <= validate.ArgumentBound {
		out = append(out, fmt.Sprintf("the plan's parameters and optimizer state, %s, are %+.1f%% against the compile's arguments, %s, as the table's error (they agree within %.0f%% on validate's memory table): the log may be of another dtype, optimizer or sharding; a factor scales the temporaries only",
			gib(res.r.Arguments), 100*off, gib(res.log.Breakdown.Argument), 100*argumentTolerance))
	}
	return out
}

// over is the warning for a compile that succeeded and reports more than
// a JAX device holds (validate.Headroom below 0: the total, or the
// temporaries with the plan's parameters and optimizer state), "" for any
// other log. The memory table has both outcomes of such a compile:
// validate.LoadShortfallCase (pdb5) passed its compile with its program
// and arguments 1.63 GiB (validate.LoadShortfall) above a v5p device and
// failed to load, as it must where the report is what the program holds
// (the runtime reserves the program beside the arguments, so a device
// leaves it at most its capacity less them: validate.Load); MaxText's
// documented v5p-8 compile reports 100.4 GB, above its 95.74 GiB, and
// trained, as one can where the report over-counts (jax's memory
// analysis adds buffers whatever their lifetimes). The report alone does
// not say which it is. Below capacity the table measures no margin: pdb5
// was over, not close under, and no warning is grounded there (review
// 159 #3: it warned at less than 1.63 GiB free, and not above).
func (res checkResult) over() string {
	free, capacity, ok := validate.Headroom(res.log, res.r, res.chip)
	if !ok || res.mismatch != nil || free >= 0 {
		return ""
	}
	of := "hw/xla_hbm.csv"
	if _, known := validate.DeviceCapacity(res.chip); !known {
		of = "its published HBM"
	}
	return fmt.Sprintf("above the device: the compile reports %s more than the %s a %s JAX device holds (%s). Validate's memory table has such a compile fail and one train: %s passed its compile with its program and arguments %s over a v5p device and failed to load (the runtime reserves the program beside the arguments: openxla/xla's error_0101.md); MaxText's documented v5p-8 compile reports 100.4 GB and trained (jax's memory analysis adds buffers whatever their lifetimes: \"the compiler could over-estimate the HBM usage\", understand_logs_and_metrics.md). The report alone does not say which this is: do not launch on it alone (a smaller --global-batch or more remat, or one step on the TPUs first); a log of another chip's compile is not this plan's: give --tpu as its compile_topology",
		gib(-free), gib(capacity), res.chip.Generation, of, validate.LoadShortfallCase, gib(res.shortfall))
}

// factorNote names the prediction a factor is against: for a compile's
// out-of-memory message the step's needed peak, without what XLA
// recomputes when HBM runs short (cost.Phase.Recomputable), which the
// table's temporaries row holds as laid out; else (a memory report, or
// the runtime's failure to load a program that compiled) the temporaries
// as laid out, that row's.
func (res checkResult) factorNote() string {
	switch {
	case res.log.Message == validate.MessageReserve:
		return "as laid out: the program the compile passed, which the runtime reserves whole"
	case res.log.Kind != validate.KindOOM:
		return "as laid out"
	}
	var names []string
	for _, ph := range res.r.Memory.Phases {
		for _, b := range ph.Recomputable {
			if !slices.Contains(names, b.Name) {
				names = append(names, b.Name)
			}
		}
	}
	if len(names) == 0 {
		return "needed"
	}
	row := ""
	if res.log.Breakdown.Temp > 0 {
		row = "; the table's temporaries are as laid out"
	}
	return fmt.Sprintf("needed: the step's peak without %s, which XLA recomputes when HBM runs short%s", strings.Join(names, " and "), row)
}

// writeText writes the check for people: first what stops the plan, if
// anything does; named is what compiledNone did, note the factor the
// prediction was made with and scale that factor (0: none), which the
// factor written replaces.
func (res checkResult) writeText(w io.Writer, named string, note *calibrationJSON, scale float64) error {
	var b strings.Builder
	b.WriteString(res.headline())
	if named != "" {
		fmt.Fprintf(&b, "note: %s\n", named)
	}
	if res.log.Message == validate.MessageScratch {
		res.writeLines(&b)
	} else {
		res.writeTable(&b)
	}
	for _, warn := range res.warnings() {
		fmt.Fprintf(&b, "warning: %s\n", warn)
	}
	log, cal := res.log, res.cal
	if log.Kind == validate.KindOOM && log.Message != validate.MessageScratch && res.mismatch == nil {
		b.WriteString(res.oomLine())
	}
	switch {
	case res.mismatch != nil:
		b.WriteString("no temporaries factor: the log is not this plan's compile (the first line)\n")
	case cal != nil:
		against := ""
		if scale > 0 {
			against = fmt.Sprintf(" by the model without the factor %.3f given; this factor replaces that one, it does not multiply it", scale)
		}
		fmt.Fprintf(&b, "temporaries factor %.3f (reported %s, predicted %s %s%s): plan --temp-scale %.3f, or --calibration with --write-calibration's file, plans with it\n",
			cal.TempScale, gib(cal.Reported), gib(cal.Predicted), res.factorNote(), against, cal.TempScale)
	default:
		fmt.Fprintf(&b, "no temporaries factor: %v\n", res.calErr)
	}
	if note != nil {
		if err := note.writeText(&b); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeLines writes what the log is and the lines it was read from.
func (res checkResult) writeLines(b *strings.Builder) {
	log := res.log
	switch {
	case log.Message == validate.MessageScratch:
		fmt.Fprintf(b, "compile log: %s of %s, per JAX device\n", log.Kind, log.Space)
	case log.UsageBlocks > 1:
		fmt.Fprintf(b, "compile log: %s (%s), per JAX device: the largest of its %d \"Total hbm usage\" blocks (XLA prints one for each program it compiles)\n", log.Kind, log.Scope, log.UsageBlocks)
	default:
		fmt.Fprintf(b, "compile log: %s (%s), per JAX device\n", log.Kind, log.Scope)
	}
	for _, l := range log.Lines {
		fmt.Fprintf(b, "  %s\n", l)
	}
}

// writeTable writes the log's lines and its bytes against the plan's, by
// component where the log splits them.
func (res checkResult) writeTable(b *strings.Builder) {
	log, r := res.log, res.r
	res.writeLines(b)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\treported\tpredicted\terror")
	fmt.Fprintf(tw, "%s\t%s\t%s\t%+.1f%%\n", log.Scope, gib(log.Reported), gib(r.Predicted), 100*r.Error)
	if bd := log.Breakdown; bd.Argument > 0 && !math.IsNaN(r.ArgumentError) {
		fmt.Fprintf(tw, "arguments (parameters, optimizer state)\t%s\t%s\t%+.1f%%\n", gib(bd.Argument), gib(r.Arguments), 100*r.ArgumentError)
	}
	if bd := log.Breakdown; bd.Temp > 0 && !math.IsNaN(r.TempError) {
		fmt.Fprintf(tw, "temporaries as laid out (gradients, activations, the largest phase)\t%s\t%s\t%+.1f%%\n", gib(bd.Temp), gib(r.Temp), 100*r.TempError)
	}
	if bd := log.Breakdown; bd.HostTemp > 0 && !math.IsNaN(r.HostError) {
		fmt.Fprintf(tw, "host temporaries (offloaded activations)\t%s\t%s\t%+.1f%%\n", gib(bd.HostTemp), gib(r.Host), 100*r.HostError)
	}
	tw.Flush()
}
