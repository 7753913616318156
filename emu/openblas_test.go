//go:build openblas

package emu

import (
	"testing"

	"shardlab/emu/kernel/openblas"
	"shardlab/schedule"
)

// TestTrainWithOpenBLAS trains with OpenBLAS's GEMM passed in: its losses
// match the Go kernel's to rounding (the sums' order differs).
func TestTrainWithOpenBLAS(t *testing.T) {
	m := testMesh(t, "v5litepod-8", 1, "fsdp=2,tensor=2,pipeline=2")
	tc := TrainConfig{Model: parityModel, Mesh: m, GlobalBatch: 8, MicroBatches: 2, Schedule: schedule.OneFOneB, Steps: 3, Seed: 5, LR: 1e-2,
		Data: &Synthetic{V: parityModel.Vocab, Seed: 11}}
	want, err := Train(tc)
	if err != nil {
		t.Fatal(err)
	}
	tc.GEMM = openblas.New()
	got, err := Train(tc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want.Losses {
		if !close(got.Losses[i], want.Losses[i]) {
			t.Errorf("step %d: loss with OpenBLAS = %v, want the Go kernel's %v", i, got.Losses[i], want.Losses[i])
		}
	}
}
