package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"shardlab/budget"
	"shardlab/capacity"
	"shardlab/hw"
	"shardlab/inference"
	"shardlab/plan"
	"shardlab/unit"
)

// capacityFlags are the options of 'shardlab capacity'.
type capacityFlags struct {
	model, tpu, mode, granularity  string
	slices, blocks, spares, days   int
	subBlockChips, blockChips      int
	seed                           uint64
	holdback, chipRate, storage    float64
	tokens                         float64
	interval, repair, recovery     time.Duration
	startup, maintEvery, maintDown time.Duration
	json                           bool
	// set is the flags the command line gave (setFlags).
	set map[string]bool
}

// DefaultHoldback is the command's assumed managed-mode holdback: the docs
// publish none.
const defaultHoldback = 0.05

func newCapacityFlags() (*flag.FlagSet, *capacityFlags) {
	fs := flag.NewFlagSet("capacity", flag.ContinueOnError)
	f := &capacityFlags{}
	fs.StringVar(&f.model, "model", plan.DefaultModel, "catalog model name or a YAML/JSON spec file of at most 1 MiB")
	fs.StringVar(&f.tpu, "tpu", "tpu7x-256", "accelerator type of one slice, in whole sub-blocks (TPU7x: 4x4x4 cubes; tpu7x-128, tpu7x-256, ...)")
	intVar(fs, &f.slices, "slices", 8, 1, plan.MaxSlices, "", "number of slices joined by DCN")
	choiceVar(fs, &f.mode, "mode", "all-capacity", capacity.Modes(), parseMode, "capacity mode")
	choiceVar(fs, &f.granularity, "maintenance-by", "sub-block", capacity.Granularities(), parseGranularity, "All Capacity maintenance granularity (a VM takes its sub-block's slice down)")
	intVar(fs, &f.blocks, "blocks", 1, 1, capacity.MaxBlocks, "", "blocks in the reservation (144 TPU7x sub-blocks each)")
	intVar(fs, &f.subBlockChips, "sub-block-chips", 0, 0, 1<<16, "0: the generation's published size", "chips in one sub-block, where Google's public docs give none (v6e); with --block-chips, the sizes are yours\n(refused for tpu7x, whose sizes are published)")
	intVar(fs, &f.blockChips, "block-chips", 0, 0, 1<<22, "0: the generation's published size", "chips in one block, a whole number of sub-blocks (v6e, with --sub-block-chips; refused for tpu7x)")
	intVar(fs, &f.spares, "spares", 2, 0, capacity.MaxBlocks*144, "", "spare sub-blocks set aside for the job (All Capacity mode; 0 in managed mode)")
	floatVar(fs, &f.holdback, "holdback", defaultHoldback, floatFlag{lo: 0, hi: 0.5}, "managed mode: fraction of sub-blocks Compute Engine holds back (an assumption: the docs publish none)")
	intVar(fs, &f.days, "days", 30, 1, 3650, "", "simulated days")
	durationVar(fs, &f.interval, "checkpoint-every", 0, 0, 7*24*time.Hour, "0: Daly's interval", "productive time between checkpoints")
	// the simulation's PCG takes any uint64; the range is inference's, for
	// the same reason: the JSON echoes the seed, which every reader holding
	// it in an int64 must read back
	uint64Var(fs, &f.seed, "seed", 1, 0, inference.MaxSeed, "", "random seed")
	floatVar(fs, &f.chipRate, "chip-failure-rate", capacity.DefaultChipFailuresPerHour, floatFlag{lo: 0, hi: 1, unit: "per chip per hour"},
		"unexpected failures (default from Llama 3's 419 interruptions in 54 days on 16,384 GPUs; 0: none, so no Young or Daly interval, and without --checkpoint-every the job checkpoints only before maintenance)")
	floatVar(fs, &f.storage, "storage-gbps", float64(capacity.DefaultStoragePerHost)*8/1e9, floatFlag{lo: 0.01, hi: 10_000, unit: "Gbit/s per host"}, "checkpoint write and read bandwidth of each host (an assumption)")
	durationVar(fs, &f.repair, "repair", capacity.DefaultRepair, 0, 90*24*time.Hour, "", "mean time to repair a failed host (an assumption)")
	durationVar(fs, &f.recovery, "recovery", capacity.DefaultRecovery, 0, 24*time.Hour, "", "time to detect a failure and reschedule the slice (an assumption)")
	durationVar(fs, &f.startup, "startup", capacity.DefaultStartup, 0, 24*time.Hour, "", "TPU init, program startup and compile after a restart (an assumption)")
	durationVar(fs, &f.maintEvery, "maintenance-every", capacity.DefaultMaintenanceEvery, 0, 3650*24*time.Hour, "0: none; else at least 24h",
		"planned maintenance interval (All Capacity docs: not more often than every 90 days)")
	durationVar(fs, &f.maintDown, "maintenance-down", capacity.DefaultMaintenanceDown, 0, 30*24*time.Hour, "", "how long maintained capacity is unavailable (an assumption)")
	tokensVar(fs, &f.tokens, 1e12, "tokens to train, for the expected time to train")
	fs.BoolVar(&f.json, "json", false, "print JSON")
	return fs, f
}

// capacityReport is what the command prints; JSON keys carry their units.
type capacityReport struct {
	Model              string             `json:"model"`
	Reservation        string             `json:"reservation"`
	Mode               capacity.Mode      `json:"mode"`
	Placement          capacity.Placement `json:"placement"`
	TokensPerS         float64            `json:"tokens_per_s"`
	StateBytes         unit.Bytes         `json:"checkpoint_state_bytes"`
	SaveS              float64            `json:"checkpoint_save_s"`
	RestoreS           float64            `json:"checkpoint_restore_s"`
	JobFailuresPerHour float64            `json:"job_failures_per_hour"`
	IntervalS          float64            `json:"checkpoint_interval_s"`
	// YoungS and DalyS are absent with no failures (--chip-failure-rate
	// 0): √(2·C·M) has no finite value for an infinite MTBF M.
	YoungS *float64 `json:"young_interval_s,omitempty"`
	DalyS  *float64 `json:"daly_interval_s,omitempty"`
	// SimulatedOptimumS is the best interval of capacity.Optimize's
	// sweep (SweepLowS to SweepHighS), null where none keeps any work;
	// SimulatedOptimumEdge is "floor" or "ceiling" where it is an end of
	// the sweep, which SimulatedOptimumBound names, so that the optimum
	// may lie past it.
	SimulatedOptimumS     *float64 `json:"simulated_optimum_interval_s"`
	SimulatedOptimumFr    float64  `json:"simulated_optimum_goodput_fraction"`
	SimulatedOptimumEdge  string   `json:"simulated_optimum_edge,omitempty"`
	SimulatedOptimumBound string   `json:"simulated_optimum_bound,omitempty"`
	// optimumOpen is whether that end is the sweep's own (Daly's interval
	// × or ÷ 8), not a clamp (the horizon, the save, 1 s)
	optimumOpen       bool
	SweepLowS         float64            `json:"simulated_sweep_low_interval_s"`
	SweepHighS        float64            `json:"simulated_sweep_high_interval_s"`
	HorizonS          float64            `json:"horizon_s"`
	Seed              uint64             `json:"seed"`
	Goodput           float64            `json:"goodput_fraction"`
	Badput            map[string]float64 `json:"badput_s"`
	HostFailures      int                `json:"host_failures"`
	Interruptions     int                `json:"interruptions"`
	MaintenanceEvents int                `json:"maintenance_events"`
	Tokens            float64            `json:"tokens"`
	// ExpectedGoodput is the renewal-reward expectation of the simulated
	// job (capacity.ExpectRun): failures, checkpoints and restarts, with
	// spares at hand and no maintenance. Without expectationFlags it is
	// plan --goodput's and budget's goodput for the same job.
	ExpectedGoodput float64 `json:"expected_goodput_fraction"`
	// TimeToTrainS is the time to train at ExpectedGoodput; SimulatedS at
	// this seed's simulated goodput, one sample.
	TimeToTrainS float64 `json:"expected_time_to_train_s"`
	SimulatedS   float64 `json:"simulated_time_to_train_s"`
	// TimeToTrainLowS and TimeToTrainHighS: the expected time to train at
	// the ends of the plan's measured error band (trainBand); absent
	// without one.
	TimeToTrainLowS   float64        `json:"low_expected_time_to_train_s,omitempty"`
	TimeToTrainHighS  float64        `json:"high_expected_time_to_train_s,omitempty"`
	SubBlockAvailable float64        `json:"sub_block_availability_fraction"`
	SparesFor95       int            `json:"spares_for_95_percent"`
	SideBySide        modeComparison `json:"side_by_side"`
	Assumptions       []string       `json:"assumptions"`
	// Warnings say where the expectation leaves out what the simulated
	// run met (waiting for capacity, maintenance).
	Warnings []string `json:"warnings"`
	// movedBy are the flags given that move the expectation from plan
	// --goodput's and budget's (expectationMovedBy), as the text names them.
	movedBy []string
}

// expectationFlags are capacity's flags that move its expected goodput
// (capacity.ExpectRun: the job's failure rate, checkpoint interval, save,
// and restart of recovery, startup and restore) from the figure plan
// --goodput and budget give for the same job (capacity.Expect, which
// takes capacity's default rate, durations and storage, and Daly's
// interval): the chip failure rate, the interval, the storage bandwidth
// (the save and the restore), recovery and startup. The others move the
// simulation only (mode, holdback, spares, blocks and sub-block sizes,
// which place whole sub-blocks, repair, maintenance, days, seed) or the
// time to train and not the goodput (tokens); model, tpu and slices are
// the job, which plan --goodput and budget are asked for too.
var expectationFlags = []string{"chip-failure-rate", "checkpoint-every", "storage-gbps", "recovery", "startup"}

// expectationMovedBy is the flags of fs given (fs.Visit) among
// expectationFlags at another value than their default, each as
// "--name value".
func expectationMovedBy(fs *flag.FlagSet) []string {
	var out []string
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(expectationFlags, f.Name) && f.Value.String() != f.DefValue {
			out = append(out, "--"+f.Name+" "+f.Value.String())
		}
	})
	return out
}

// modeComparison is the same job, seed and rates in the other capacity
// mode: managed with --holdback, or All Capacity with --spares.
type modeComparison struct {
	Mode    capacity.Mode `json:"mode"`
	Setting string        `json:"setting"`
	Goodput float64       `json:"goodput_fraction"`
	Refused string        `json:"refused,omitempty"`
}

// otherMode simulates the job in the mode it was not asked about.
func otherMode(f *capacityFlags, slice hw.Slice, mode capacity.Mode, cfg capacity.Config) modeComparison {
	c := modeComparison{Mode: capacity.Managed, Setting: fmt.Sprintf("%.3g holdback", f.holdback)}
	holdback, spares := f.holdback, 0
	if mode == capacity.Managed {
		c = modeComparison{Mode: capacity.AllCapacity, Setting: fmt.Sprintf("%d spare sub-blocks", f.spares)}
		holdback, spares = 0, f.spares
	}
	h, err := f.hierarchy(slice.Chip, c.Mode)
	var r capacity.Reservation
	if err == nil {
		r, err = capacity.NewIn(h, c.Mode, f.blocks, holdback)
	}
	var pl capacity.Placement
	if err == nil {
		pl, err = capacity.Place(r, slice, f.slices, spares)
	}
	var res capacity.Result
	if err == nil {
		res, err = capacity.Run(pl, cfg)
	}
	if err != nil {
		c.Refused = err.Error()
		return c
	}
	c.Goodput = res.Goodput()
	return c
}

// hierarchy is the reservation's hierarchy: the generation's published
// one, or, with --sub-block-chips and --block-chips, the user's, for a
// generation whose sizes are not published (v6e). On one whose sizes are
// published (TPU7x) the flags are refused: they would replace cited sizes.
func (f *capacityFlags) hierarchy(chip hw.Chip, mode capacity.Mode) (capacity.Hierarchy, error) {
	if err := capacity.CheckMode(chip, mode); err != nil {
		return capacity.Hierarchy{}, usageError{err}
	}
	if f.subBlockChips > 0 || f.blockChips > 0 {
		if pub, err := capacity.HierarchyOf(chip); err == nil {
			var given []string
			if f.subBlockChips > 0 {
				given = append(given, fmt.Sprintf("--sub-block-chips %d", f.subBlockChips))
			}
			if f.blockChips > 0 {
				given = append(given, fmt.Sprintf("--block-chips %d", f.blockChips))
			}
			return pub, bad("capacity: %s on %s: want neither: they are for v6e, whose sizes Google's public docs do not state; %s's are published: %s",
				strings.Join(given, " and "), chip.Generation, chip.Generation, pub.Sizes())
		}
	}
	switch {
	case f.subBlockChips > 0 && f.blockChips > 0:
		h, err := capacity.UserHierarchy(chip, f.subBlockChips, f.blockChips)
		if err != nil {
			return h, usageError{err}
		}
		return h, nil
	case f.subBlockChips > 0 || f.blockChips > 0:
		return capacity.Hierarchy{}, bad("capacity: --sub-block-chips %d and --block-chips %d: give both, or neither for the generation's published sizes", f.subBlockChips, f.blockChips)
	}
	h, err := capacity.HierarchyOf(chip)
	if errors.Is(err, capacity.ErrSizesNotPublished) {
		return h, bad("capacity: %s: Google's public docs do not state its sub-block and block sizes; give them with --sub-block-chips and --block-chips (the plan then says they are yours)", chip.Generation)
	}
	if err != nil {
		return h, usageError{err}
	}
	return h, nil
}

func parseMode(s string) error        { _, err := capacity.ParseMode(s); return err }
func parseGranularity(s string) error { _, err := capacity.ParseGranularity(s); return err }

func runCapacity(args []string, stdout, stderr io.Writer) error {
	fs, f := newCapacityFlags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	mode, err := capacity.ParseMode(f.mode)
	if err != nil {
		return usageError{err}
	}
	gran, err := capacity.ParseGranularity(f.granularity)
	if err != nil {
		return usageError{err}
	}
	f.set = setFlags(fs)
	if err := f.wholeSubBlocks(mode); err != nil {
		return err
	}
	req, slice, err := f.request()
	if err != nil {
		return err
	}
	res, pl, holdback, err := f.place(mode, slice)
	if err != nil {
		return err
	}
	p, err := plan.Search(req)
	if err != nil {
		return f.planError(err)
	}
	job := capacity.JobOf(p)
	cfg, lambda, young, daly := f.simConfig(pl, job, slice, gran)
	r, err := capacity.Run(pl, cfg)
	if err != nil {
		return usageError{err}
	}
	bar := newBar(stderr, 0)
	opt, err := capacity.Optimize(pl, cfg, func(done, total int) { bar.n = total; bar.tick("interval sweep") })
	bar.done()
	if err != nil {
		return usageError{err}
	}
	rep := f.report(p, res, pl, mode, holdback, job, cfg, r)
	rep.JobFailuresPerHour = lambda
	if lambda > 0 {
		ys, ds := young.Seconds(), daly.Seconds()
		rep.YoungS, rep.DalyS = &ys, &ds
	}
	rep.setOptimum(opt)
	rep.SideBySide, rep.movedBy = otherMode(f, slice, mode, cfg), expectationMovedBy(fs)
	if f.json {
		return writeJSON(stdout, rep)
	}
	return writeCapacityText(stdout, rep, pl)
}

// place is the reservation the flags ask (its mode's holdback or
// spares, its hierarchy, its blocks) and the slices laid onto it, with
// the holdback that applies.
func (f *capacityFlags) place(mode capacity.Mode, slice hw.Slice) (capacity.Reservation, capacity.Placement, float64, error) {
	holdback, spares, err := f.modeSettings(mode, f.set)
	if err != nil {
		return capacity.Reservation{}, capacity.Placement{}, 0, err
	}
	h, err := f.hierarchy(slice.Chip, mode)
	if err != nil {
		return capacity.Reservation{}, capacity.Placement{}, 0, err
	}
	res, err := capacity.NewIn(h, mode, f.blocks, holdback)
	if err != nil {
		return res, capacity.Placement{}, 0, usageError{err}
	}
	pl, err := capacity.Place(res, slice, f.slices, spares)
	if err != nil {
		fits := func(blocks int) bool {
			r, err := capacity.NewIn(h, mode, blocks, holdback)
			if err != nil {
				return false
			}
			_, err = capacity.Place(r, slice, f.slices, spares)
			return err == nil
		}
		return res, pl, 0, f.placeError(err, fits)
	}
	return res, pl, holdback, nil
}

// simConfig is the failure simulation the flags ask for the placement:
// the job's checkpoint saved and restored by the slices' hosts, and the
// checkpoint interval --checkpoint-every, else Daly's optimum for the
// job's failure rate. It returns that rate (per hour) and Young's and
// Daly's intervals too. With no failures (rate 0) Young's and Daly's
// √(2·C·M) has no finite value, and they are returned as 0; the job then
// checkpoints only before maintenance (the interval is the horizon).
func (f *capacityFlags) simConfig(pl capacity.Placement, job capacity.Job, slice hw.Slice, gran capacity.Granularity) (cfg capacity.Config, lambda float64, young, daly time.Duration) {
	save := capacity.CheckpointTime(job.Checkpoint, f.slices*slice.Hosts(), unit.BytesPerSecond(f.storage*1e9/8))
	cfg = capacity.Config{
		ChipFailuresPerHour: f.chipRate, Repair: f.repair, Recovery: f.recovery, Startup: f.startup,
		Save: save, Restore: save, MaintenanceEvery: f.maintEvery, MaintenanceDown: f.maintDown,
		Granularity: gran, Horizon: time.Duration(f.days) * 24 * time.Hour, Seed: f.seed,
	}
	lambda = capacity.JobFailureRate(pl, f.chipRate)
	cfg.Interval = f.interval
	if lambda == 0 {
		if cfg.Interval == 0 {
			cfg.Interval = cfg.Horizon
		}
		return cfg, 0, 0, 0
	}
	young, daly = capacity.Intervals(pl, cfg)
	if cfg.Interval == 0 {
		cfg.Interval = max(daly, time.Second)
	}
	return cfg, lambda, young, daly
}

// request is the plan request the flags ask, and the slice: one of some
// size, as wholeSubBlocks, which runs first, refuses a bare generation.
func (f *capacityFlags) request() (plan.Request, hw.Slice, error) {
	o := plan.DefaultOptions()
	o.Model, o.TPU, o.Slices, o.Top = f.model, f.tpu, f.slices, 1
	spec, err := specFile("--model", f.model)
	if err != nil {
		return plan.Request{}, hw.Slice{}, err
	}
	o.ModelSpec = spec
	req, err := plan.ParseRequest(o)
	if err != nil {
		return plan.Request{}, hw.Slice{}, f.planError(err)
	}
	slice, err := hw.ParseTPU(f.tpu)
	if err != nil {
		return plan.Request{}, hw.Slice{}, f.planError(err)
	}
	return req, slice, nil
}

// option spells a plan option in capacity's words: as its flag where
// capacity has one (--model, --tpu, --slices; --slices with "(the
// default)" where it was not given, as capacity's default, 8, is not
// plan's), else as plan's default, which capacity plans with and has no
// flag for.
func (f *capacityFlags) option(o plan.Option) string {
	switch {
	case o == plan.OptionSlices:
		return f.slicesWord()
	case o == plan.OptionModel, o == plan.OptionTPU:
		return o.Flag()
	}
	return "plan's default " + o.String()
}

// slicesWord is --slices as a message names it: "--slices" where it was
// given, else "--slices 8 (the default)".
func (f *capacityFlags) slicesWord() string {
	if f.set["slices"] {
		return plan.OptionSlices.Flag()
	}
	return fmt.Sprintf("%s %d (the default)", plan.OptionSlices.Flag(), f.slices)
}

// planError is a plan error in capacity's words (option, noPlan).
func (f *capacityFlags) planError(err error) error { return phrased(err, f.option, f.noPlan) }

// wholeSubBlocks refuses, before the slice count, a --tpu that is no
// whole sub-blocks of the reservation's hierarchy: capacity simulates
// whole sub-blocks (capacity.Hierarchy.SubBlocksPerSlice), so no count
// of such slices runs. A --tpu or hierarchy that is wrong otherwise is
// left to the checks that name it.
func (f *capacityFlags) wholeSubBlocks(mode capacity.Mode) error {
	slice, err := hw.ParseTPU(f.tpu)
	if err != nil {
		return nil
	}
	h, err := f.hierarchy(slice.Chip, mode)
	if slice.Chips() == 0 {
		// a bare generation: plan would offer its default slice, which
		// need not be whole sub-blocks; name the ones capacity lays out
		if err != nil {
			return err
		}
		return bad("capacity: --tpu %s names no size; capacity simulates whole %s sub-blocks: give %s", f.tpu, h.SubBlock, sizesList(h.WholeSlices()))
	}
	if err != nil {
		return nil
	}
	var ce *capacity.Error
	if _, err := h.SubBlocksPerSlice(slice); errors.As(err, &ce) {
		return bad("capacity: --tpu %s: want %s", f.tpu, ce.Want)
	} else if err != nil {
		return usageError{err}
	}
	return nil
}

// sizesList is the first few of a list of accelerator types and its last,
// "tpu7x-128, tpu7x-256, tpu7x-384, ... tpu7x-18432".
func sizesList(types []string) string {
	if len(types) <= 4 {
		return strings.Join(types, ", ")
	}
	return strings.Join(types[:3], ", ") + ", ... " + types[len(types)-1]
}

// placeError is capacity.Place's error, where it refuses the slice count
// or the spares, named as their flags (with "(the default)" where not
// given), and with the --blocks that would hold the job where more
// blocks would (fits says whether a reservation of so many blocks does).
func (f *capacityFlags) placeError(err error, fits func(blocks int) bool) error {
	var ce *capacity.Error
	if !errors.As(err, &ce) || (ce.Field != "slices" && ce.Field != "spares") {
		return usageError{err}
	}
	word := f.slicesWord()
	if ce.Field == "spares" {
		word = fmt.Sprintf("--spares %d", f.spares)
		if !f.set["spares"] {
			word += " (the default)"
		}
	}
	msg := fmt.Sprintf("capacity: %s: want %s", word, ce.Want)
	if ce.Field == "slices" && f.set["slices"] {
		msg = fmt.Sprintf("capacity: --slices %d: want %s", f.slices, ce.Want)
	}
	for b := f.blocks + 1; b <= capacity.MaxBlocks; b++ {
		if fits(b) {
			return bad("%s; with --blocks %d they fit", msg, b)
		}
	}
	return bad("%s", msg)
}

// noPlan words a search that found no layout: capacity takes the
// model, slice and slice count and plans the rest with plan's defaults,
// so it says what capacity's user can change, and which of plan's flags
// would make the job run.
func (f *capacityFlags) noPlan(none *plan.NoPlanError) string {
	bare := *none
	bare.Fixes = nil
	msg := "capacity: " + bare.Phrase(f.option) + "; capacity plans with plan's defaults for the rest: change --model, --tpu or --slices"
	if len(none.Fixes) == 0 {
		return msg + ", or ask shardlab plan, whose flags set the rest"
	}
	fixes := make([]string, len(none.Fixes))
	for i, f := range none.Fixes {
		fixes[i] = plan.Note{Text: f}.Phrase(plan.Option.Flag)
	}
	return msg + "; shardlab plan would run it with " + strings.Join(fixes, "; or ")
}

// modeSettings checks --holdback and --spares against the mode and returns
// the ones that apply.
func (f *capacityFlags) modeSettings(mode capacity.Mode, set map[string]bool) (holdback float64, spares int, err error) {
	if mode == capacity.AllCapacity {
		if set["holdback"] && f.holdback != 0 {
			return 0, 0, bad("capacity: --holdback %g: want it only with --mode managed (All Capacity mode has no holdback)", f.holdback)
		}
		return 0, f.spares, nil
	}
	if set["spares"] && f.spares != 0 {
		return 0, 0, bad("capacity: --spares %d: want 0 with --mode managed, where Compute Engine's holdback (--holdback) replaces failed hosts", f.spares)
	}
	return f.holdback, 0, nil
}

// setOptimum puts o, capacity's sweep of checkpoint intervals, in the
// report.
func (r *capacityReport) setOptimum(o capacity.Optimum) {
	if o.Interval > 0 {
		s := o.Interval.Seconds()
		r.SimulatedOptimumS = &s
	}
	r.SimulatedOptimumFr, r.SimulatedOptimumEdge, r.SimulatedOptimumBound = o.Goodput, string(o.Edge), o.Bound
	r.optimumOpen = o.Edge != capacity.Inside && !o.Clamped
	r.SweepLowS, r.SweepHighS = o.Low.Seconds(), o.High.Seconds()
}

// optimumText is the report's simulated optimum as the text says it: the
// interval, whether it is an end of the sweep (and so may not be the
// optimum), its goodput and the sweep's range; none where no interval
// keeps any work.
func (r capacityReport) optimumText() string {
	sweep := fmt.Sprintf("%d seeds, intervals %v to %v", capacity.OptimumSeeds, secs(r.SweepLowS), secs(r.SweepHighS))
	if r.SimulatedOptimumS == nil {
		return fmt.Sprintf("simulated optimum none: goodput 0 at every interval (%s)", sweep)
	}
	at := ""
	if e := r.SimulatedOptimumEdge; e != "" {
		at = fmt.Sprintf(", at the sweep's %s: %s", e, r.SimulatedOptimumBound)
		if r.optimumOpen && e == string(capacity.Floor) {
			at += "; the best may be shorter"
		} else if r.optimumOpen {
			at += "; the best may be longer"
		}
	}
	g := fmt.Sprintf("%.4f", r.SimulatedOptimumFr)
	if r.SimulatedOptimumFr < 1e-4 {
		g = fmt.Sprintf("%.2g", r.SimulatedOptimumFr) // 0.0000 would read as none
	}
	return fmt.Sprintf("simulated optimum %v%s (goodput %s, %s)", secs(*r.SimulatedOptimumS), at, g, sweep)
}

// report is the simulation's result in the command's words.
func (f *capacityFlags) report(p plan.Plan, res capacity.Reservation, pl capacity.Placement, mode capacity.Mode, holdback float64,
	job capacity.Job, cfg capacity.Config, r capacity.Result) capacityReport {
	avail := capacity.Availability(f.chipRate*float64(res.Hierarchy.SubBlockChips()), f.repair)
	rep := capacityReport{
		Model:       p.Request.Model.Name,
		Reservation: fmt.Sprintf("%d x %d sub-blocks of %s", res.Blocks, res.Hierarchy.SubBlocksPerBlock, res.Hierarchy.SubBlock),
		Mode:        mode, Placement: pl, TokensPerS: job.TokensPerSecond, StateBytes: job.Checkpoint,
		SaveS: cfg.Save.Seconds(), RestoreS: cfg.Restore.Seconds(),
		IntervalS: cfg.Interval.Seconds(), HorizonS: cfg.Horizon.Seconds(), Seed: f.seed, Goodput: r.Goodput(),
		Badput: map[string]float64{
			"program_startup": r.Badput.ProgramStartup.Seconds(), "checkpoint_save": r.Badput.CheckpointSave.Seconds(),
			"checkpoint_restore": r.Badput.CheckpointRestore.Seconds(), "wasted_progress": r.Badput.WastedProgress.Seconds(),
			"infrastructure_recovery": r.Badput.InfrastructureRecovery.Seconds(), "waiting_for_capacity": r.Badput.WaitingForCapacity.Seconds(),
		},
		HostFailures: r.HostFailures, Interruptions: r.Interruptions, MaintenanceEvents: r.MaintenanceEvents,
		Tokens: f.tokens, ExpectedGoodput: capacity.ExpectRun(pl, cfg),
		SimulatedS:        float64(job.TimeToTrain(f.tokens, math.Max(r.Goodput(), 1e-9))),
		SubBlockAvailable: avail, SparesFor95: capacity.SparesFor(pl.Used, avail, 0.95, res.SubBlocks()),
	}
	if f.chipRate == capacity.DefaultChipFailuresPerHour {
		rep.Assumptions = append(rep.Assumptions, "a TPU chip fails as often as an H100 in Llama 3's run")
	}
	rep.Assumptions = append(rep.Assumptions, "repair, recovery, startup, maintenance downtime and storage bandwidth are assumptions (flags)")
	rep.TimeToTrainS = float64(job.TimeToTrain(f.tokens, math.Max(rep.ExpectedGoodput, 1e-9)))
	rep.Warnings = expectationGaps(r, rep.SimulatedS)
	rep.TimeToTrainLowS, rep.TimeToTrainHighS = trainBand(p, rep.TimeToTrainS)
	if mode == capacity.Managed {
		rep.Assumptions = append(rep.Assumptions, fmt.Sprintf("managed holdback %.3g of the sub-blocks: the docs publish none", holdback))
	}
	if f.subBlockChips > 0 {
		rep.Assumptions = append(rep.Assumptions, res.Hierarchy.Sources...)
	}
	return rep
}

// expectationGaps warns where the expected goodput (capacity.ExpectRun:
// spares at hand, no maintenance) leaves out what the simulated run r
// met: time waiting for capacity (too few spares for the failures) and
// maintenance waves. Its simulated time to train, simS, then speaks for
// the reservation.
func expectationGaps(r capacity.Result, simS float64) []string {
	wait := r.Badput.WaitingForCapacity
	if wait <= 0 && r.MaintenanceEvents == 0 {
		return []string{}
	}
	return []string{fmt.Sprintf("the simulated run also waited %v for capacity (%.3g %% of it) and saw %s, which the expected goodput leaves out; its simulated time to train is %v (one seed)",
		secs(wait.Seconds()), 100*wait.Seconds()/r.Horizon.Seconds(), unit.Plural(r.MaintenanceEvents, "maintenance wave"), secs(simS))}
}

func writeCapacityText(w io.Writer, r capacityReport, pl capacity.Placement) error {
	var b strings.Builder
	if err := pl.WriteText(&b); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\n%s: %.0f tokens/s; checkpoint state %v, save %v, restore %v\n", r.Model, r.TokensPerS, r.StateBytes,
		secs(r.SaveS), secs(r.RestoreS))
	if r.JobFailuresPerHour == 0 {
		fmt.Fprintf(&b, "failures: none on the job's chips (MTBF infinite); sub-block availability %.5f\n", r.SubBlockAvailable)
		every := secs(r.IntervalS).String()
		if r.IntervalS == r.HorizonS {
			every += " (the horizon: checkpoints only before maintenance)"
		}
		fmt.Fprintf(&b, "checkpoint interval %s; Young and Daly: none with no failures, %s\n", every, r.optimumText())
	} else {
		fmt.Fprintf(&b, "failures: %.4f per hour on the job's chips (MTBF %v); sub-block availability %.5f\n",
			r.JobFailuresPerHour, secs(3600/r.JobFailuresPerHour), r.SubBlockAvailable)
		fmt.Fprintf(&b, "checkpoint interval %v; Young %v, Daly %v, %s\n", secs(r.IntervalS), secs(*r.YoungS), secs(*r.DalyS), r.optimumText())
	}
	fmt.Fprintf(&b, "\nsimulated %v, seed %d: goodput %.4f; %d host failures, %d interruptions, %d maintenance waves\n",
		secs(r.HorizonS), r.Seed, r.Goodput, r.HostFailures, r.Interruptions, r.MaintenanceEvents)
	for _, k := range []string{"program_startup", "checkpoint_save", "checkpoint_restore", "wasted_progress", "infrastructure_recovery", "waiting_for_capacity"} {
		fmt.Fprintf(&b, "  badput %-24s %10v  %6.3f %%\n", k, secs(r.Badput[k]), 100*r.Badput[k]/r.HorizonS)
	}
	if o := r.SideBySide; o.Refused != "" {
		fmt.Fprintf(&b, "side by side, %s mode (%s): %s\n", o.Mode, o.Setting, o.Refused)
	} else {
		fmt.Fprintf(&b, "side by side, %s mode (%s), same seed: goodput %.4f\n", o.Mode, o.Setting, o.Goodput)
	}
	whose := "as plan --goodput and budget compute it for this job (capacity's default failure rate, checkpoint interval, storage, recovery and startup)"
	if len(r.movedBy) > 0 {
		whose = fmt.Sprintf("at the flags given (%s); plan --goodput and budget compute it at capacity's defaults of them", strings.Join(r.movedBy, ", "))
	}
	fmt.Fprintf(&b, "expected goodput %.4f (renewal reward: failures, checkpoints, restarts; spares at hand, no maintenance), %s\n", r.ExpectedGoodput, whose)
	fmt.Fprintf(&b, "expected time to train %.3g tokens: %v", r.Tokens, secs(r.TimeToTrainS))
	if r.TimeToTrainHighS > 0 {
		fmt.Fprintf(&b, " (%v to %v in the step model's band)", secs(r.TimeToTrainLowS), secs(r.TimeToTrainHighS))
	}
	fmt.Fprintf(&b, "; %v at seed %d's simulated goodput %.4f\n", secs(r.SimulatedS), r.Seed, r.Goodput)
	if r.SparesFor95 >= 0 {
		fmt.Fprintf(&b, "spare sub-blocks for 95 %% confidence that %d are healthy: %d\n", pl.Used, r.SparesFor95)
	}
	for _, a := range r.Assumptions {
		fmt.Fprintf(&b, "assumption: %s\n", a)
	}
	for _, a := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", a)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// secs renders seconds as a duration rounded for reading, to at least
// three significant digits: hours from 100 h (a 30-day horizon is 720h0m0s),
// minutes from 1 h (an MTBF of 49.5 h is 49h30m0s), seconds from 1 min.
func secs(s float64) span { return span(s) }

// span is float seconds as secs renders them: in time.Duration's spelling,
// past its 292 years too (a time to train of thousands of years).
type span float64

func (s span) String() string {
	if float64(s) >= float64(math.MaxInt64)/1e9 {
		// past time.Duration's 292 years: hours, and the years beside them
		return fmt.Sprintf("%.0fh0m0s (%s years)", math.Round(float64(s)/3600), strings.TrimSuffix(budget.Days(float64(s)), "y"))
	}
	d := time.Duration(float64(s) * float64(time.Second))
	switch {
	case d >= 100*time.Hour:
		d = d.Round(time.Hour)
	case d >= time.Hour:
		d = d.Round(time.Minute)
	case d >= time.Minute:
		d = d.Round(time.Second)
	default:
		d = d.Round(10 * time.Millisecond)
	}
	return d.String()
}
