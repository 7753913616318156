package emu

import (
	"errors"
	"fmt"
	"shardlab/emu/fabric"
	"slices"
	"strings"
)

// Resuming a run spread over several processes: each process writes its
// own devices' checkpoint, and a process can die between its write and
// another's. So every process keeps its previous checkpoint until all of
// them have written the next one (Train confirms that with a reduction
// after each write, then calls Hooks.Committed), and at a resume the
// processes exchange the steps they hold and take the newest one that all
// of them hold. Under that rule such a step always exists after a crash.

// ResumeError is a resume that the processes cannot agree on: no step is
// held by every process.
type ResumeError struct {
	// Held lists, by process (rank), the checkpoint steps it holds.
	Held [][]int
}

func (e *ResumeError) Error() string {
	return "emu: no checkpoint step is held by every process, so none can resume: " + describeHeld(e.Held)
}

// Unwrap makes it an ErrCheckpoint.
func (e *ResumeError) Unwrap() error { return ErrCheckpoint }

// StepsDoneError is a resume from a checkpoint at or past the run's last
// step: there is nothing left to train.
type StepsDoneError struct {
	Step  int // the checkpoint's
	Steps int // the run's
}

func (e *StepsDoneError) Error() string {
	return fmt.Sprintf("emu: the checkpoint is at step %d and the run has %d steps: nothing left to train, want more than %d steps", e.Step, e.Steps, e.Step)
}

// Unwrap makes it an ErrInvalid.
func (e *StepsDoneError) Unwrap() error { return ErrInvalid }

// describeHeld is "rank 0 holds steps 6, 7; rank 1 holds none".
func describeHeld(held [][]int) string {
	var parts []string
	for r, steps := range held {
		switch len(steps) {
		case 0:
			parts = append(parts, fmt.Sprintf("rank %d holds none", r))
		case 1:
			parts = append(parts, fmt.Sprintf("rank %d holds step %d", r, steps[0]))
		default:
			s := fmt.Sprint(steps)
			parts = append(parts, fmt.Sprintf("rank %d holds steps %s", r, strings.ReplaceAll(s[1:len(s)-1], " ", ", ")))
		}
	}
	return strings.Join(parts, "; ")
}

// newestCommon is the newest step that every list holds.
func newestCommon(held [][]int) (int, bool) {
	if len(held) == 0 {
		return 0, false
	}
	for _, s := range slices.Backward(held[0]) {
		all := true
		for _, other := range held[1:] {
			if !slices.Contains(other, s) {
				all = false
				break
			}
		}
		if all {
			return s, true
		}
	}
	return 0, false
}

// exchangeSteps gives every process every process's sorted steps, through
// two sums: the counts, then the steps in rank order.
func exchangeSteps(r fabric.Remote, mine []int) ([][]int, error) {
	if r == nil {
		return [][]int{mine}, nil
	}
	counts := make([]float64, r.Size())
	counts[r.Rank()] = float64(len(mine))
	if err := r.SumFloat64(counts); err != nil {
		return nil, err
	}
	total, off := 0, 0
	for i, c := range counts {
		if i < r.Rank() {
			off += int(c)
		}
		total += int(c)
	}
	all := make([]float64, total)
	for i, s := range mine {
		all[off+i] = float64(s)
	}
	if err := r.SumFloat64(all); err != nil {
		return nil, err
	}
	held := make([][]int, r.Size())
	off = 0
	for i, c := range counts {
		for _, v := range all[off : off+int(c)] {
			held[i] = append(held[i], int(v))
		}
		off += int(c)
	}
	return held, nil
}

// resume agrees with the other processes on a step, loads this process's
// checkpoint of it into devs, and checks that every process could. It
// returns the step. A checkpoint that is unusable (corrupted, truncated,
// of the wrong size) but of this run is skipped: the processes agree on
// the newest step that every one of them still holds, and so on until one
// loads everywhere; Hooks.Skipped hears what was skipped and why. A
// checkpoint of another run (a *MismatchError) stops the resume: the
// older ones are of that run too.
func resume(tc *TrainConfig, devs []*device) (int, error) {
	mine := resumeSteps(tc.ResumeSteps)
	shape := shapeOf(tc, devs)
	var skipped []skippedCheckpoint // this process's, newest first
	var othersFailed string         // which ranks' checkpoints failed last, when not this one's
	for {
		held, err := exchangeSteps(tc.Remote, mine)
		if err != nil {
			return 0, err
		}
		step, ok := newestCommon(held)
		switch {
		case !ok && len(skipped) > 0:
			return 0, unusable(skipped)
		case !ok && othersFailed != "":
			return 0, fmt.Errorf("emu: %s (its own error says why), and no older step is held by every rank: %w", othersFailed, ErrCheckpoint)
		case !ok:
			return 0, &ResumeError{Held: held}
		case step >= tc.Steps:
			return 0, &StepsDoneError{Step: step, Steps: tc.Steps}
		}
		err = load(tc, devs, step, shape)
		status := loadStatus(err)
		worst, failed, serr := allStatuses(tc, status)
		if serr != nil {
			return 0, serr
		}
		switch {
		case worst == loadOK:
			for _, sk := range skipped {
				if err := tc.Hooks.skipped(sk.step, sk.err); err != nil {
					return 0, err
				}
			}
			return step, tc.Hooks.resumed(step, held)
		case status != loadOK && worst == loadFatal:
			return 0, err
		case worst == loadFatal:
			return 0, fmt.Errorf("emu: rank %s could not resume from its checkpoint of step %d (its own error says why): %w", strings.Join(failed, ", "), step, ErrCheckpoint)
		case status == loadSkip:
			skipped = append(skipped, skippedCheckpoint{step, err})
			mine = slices.DeleteFunc(mine, func(s int) bool { return s == step })
		default:
			othersFailed = fmt.Sprintf("rank %s could not resume from its checkpoint of step %d", strings.Join(failed, ", "), step)
		}
	}
}

// resumeSteps are the steps this process holds checkpoints of, sorted,
// each once; only steps exact as a float64 are exchanged.
func resumeSteps(steps []int) []int {
	var mine []int
	for _, s := range steps {
		if s >= 0 && s <= 1<<40 { // exact as a float64
			mine = append(mine, s)
		}
	}
	slices.Sort(mine)
	return slices.Compact(mine)
}

// allStatuses tells every process whether all of them could use their
// checkpoint, and whether one that could not can skip it: the worst
// status of all, and the ranks whose load failed.
func allStatuses(tc *TrainConfig, status float64) (worst float64, failed []string, err error) {
	statuses := []float64{status}
	if tc.Remote != nil {
		statuses = make([]float64, tc.Remote.Size())
		statuses[tc.Remote.Rank()] = status
		if err := tc.Remote.SumFloat64(statuses); err != nil {
			return 0, nil, err
		}
	}
	failed = []string{}
	for r, st := range statuses {
		worst = max(worst, st)
		if st != loadOK {
			failed = append(failed, fmt.Sprint(r))
		}
	}
	return worst, failed, nil
}

// load reads this process's checkpoint of step and restores it into devs.
func load(tc *TrainConfig, devs []*device, step int, shape *CheckpointShape) error {
	c, err := tc.LoadCheckpoint(step, shape)
	if err == nil && c == nil {
		err = fmt.Errorf("emu: no checkpoint of step %d: %w", step, ErrCheckpoint)
	}
	if err == nil && c.Step != step {
		err = fmt.Errorf("emu: the checkpoint of step %d holds step %d: %w", step, c.Step, ErrCheckpoint)
	}
	if err == nil {
		err = c.restore(tc, devs)
	}
	return err
}

// A checkpoint loaded, could not be used but can be skipped for an older
// one, or stops the resume.
const (
	loadOK    = 0
	loadSkip  = 1
	loadFatal = 2
)

// loadStatus sorts load's error: an unusable checkpoint of this run is
// skipped; one of another run, or any other error, is fatal.
func loadStatus(err error) float64 {
	var mm *MismatchError
	switch {
	case err == nil:
		return loadOK
	case errors.Is(err, ErrCheckpoint) && !errors.As(err, &mm):
		return loadSkip
	}
	return loadFatal
}

// skippedCheckpoint is a step whose checkpoint this process could not use.
type skippedCheckpoint struct {
	step int
	err  error
}

// unusable is the error of a resume that skipped every checkpoint: the
// newest one's error, with the others'.
func unusable(skipped []skippedCheckpoint) error {
	if len(skipped) == 1 {
		return skipped[0].err
	}
	var older []string
	for _, sk := range skipped[1:] {
		older = append(older, fmt.Sprintf("step %d: %v", sk.step, sk.err))
	}
	return fmt.Errorf("%w; no older checkpoint is usable either (%s)", skipped[0].err, strings.Join(older, "; "))
}
