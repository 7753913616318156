package emu

import (
	"errors"
	"testing"
)

// TestHookErrorsStopTheRun: an error from any hook stops the run at that
// point, and Train returns it (wrapped, naming the step).
func TestHookErrorsStopTheRun(t *testing.T) {
	stop := errors.New("stop here")
	base := TrainConfig{Model: parityModel, Mesh: testMesh(t, "v5litepod-4", 1, "data=4"), GlobalBatch: 8, Steps: 4, Seed: 5, LR: 1e-2,
		Data: &Synthetic{V: parityModel.Vocab, Seed: 11}, CheckpointEvery: 1}
	var steps []int
	tests := []struct {
		name  string
		hooks Hooks
		ran   int // steps the Step hook saw
	}{
		{"step", Hooks{Step: func(r StepReport) error {
			steps = append(steps, r.Step)
			if r.Step == 2 {
				return stop
			}
			return nil
		}}, 2},
		{"checkpoint", Hooks{Step: func(r StepReport) error { steps = append(steps, r.Step); return nil },
			Checkpoint: func(c *Checkpoint) error {
				if c.Step == 3 {
					return stop
				}
				return nil
			}}, 3},
		{"committed", Hooks{Step: func(r StepReport) error { steps = append(steps, r.Step); return nil },
			Checkpoint: func(*Checkpoint) error { return nil },
			Committed:  func(int) error { return stop }}, 1},
	}
	for _, tt := range tests {
		steps = nil
		tc := base
		tc.Hooks = tt.hooks
		res, err := Train(tc)
		if !errors.Is(err, stop) || res != nil {
			t.Errorf("%s hook fails: Train = %v, %v; want nil and the hook's error", tt.name, res, err)
		}
		if len(steps) != tt.ran {
			t.Errorf("%s hook fails: the run went on to steps %v, want it to stop after step %d", tt.name, steps, tt.ran)
		}
	}
}
