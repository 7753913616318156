package emu

import (
	"fmt"
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
func exchangeSteps(r Remote, mine []int) ([][]int, error) {
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
// returns the step.
func resume(tc *TrainConfig, devs []*device) (int, error) {
	var mine []int
	for _, s := range tc.ResumeSteps {
		if s >= 0 && s <= 1<<40 { // exact as a float64
			mine = append(mine, s)
		}
	}
	slices.Sort(mine)
	mine = slices.Compact(mine)
	held, err := exchangeSteps(tc.Remote, mine)
	if err != nil {
		return 0, err
	}
	step, ok := newestCommon(held)
	if !ok {
		return 0, &ResumeError{Held: held}
	}
	if step >= tc.Steps {
		return 0, &StepsDoneError{Step: step, Steps: tc.Steps}
	}
	c, err := tc.LoadCheckpoint(step)
	if err == nil && c.Step != step {
		err = fmt.Errorf("emu: the checkpoint of step %d holds step %d: %w", step, c.Step, ErrCheckpoint)
	}
	if err == nil {
		err = c.restore(tc, devs)
	}
	// every process learns whether all of them could use their checkpoint
	if tc.Remote == nil {
		if err != nil {
			return 0, err
		}
		return step, tc.Hooks.resumed(step, held)
	}
	failed := make([]float64, tc.Remote.Size())
	if err != nil {
		failed[tc.Remote.Rank()] = 1
	}
	if serr := tc.Remote.SumFloat64(failed); serr != nil {
		return 0, serr
	}
	if err != nil {
		return 0, err
	}
	var bad []string
	for r, f := range failed {
		if f != 0 {
			bad = append(bad, fmt.Sprint(r))
		}
	}
	if len(bad) > 0 {
		return 0, fmt.Errorf("emu: rank %s could not resume from its checkpoint of step %d (its own error says why): %w", strings.Join(bad, ", "), step, ErrCheckpoint)
	}
	return step, tc.Hooks.resumed(step, held)
}
