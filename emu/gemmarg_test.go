package emu

import (
	"slices"
	"sync/atomic"
	"testing"

	"shardlab/emu/kernel"
	"shardlab/schedule"
)

// countingGEMM is kernel.Go() counting its calls.
type countingGEMM struct{ calls *atomic.Int64 }

func (g countingGEMM) Name() string { return "counting " + kernel.Go().Name() }
func (g countingGEMM) Sgemm(ta, tb bool, m, n, k int, a []float32, lda int, b []float32, ldb int, acc bool, c []float32, ldc int) {
	g.calls.Add(1)
	kernel.Go().Sgemm(ta, tb, m, n, k, a, lda, b, ldb, acc, c, ldc)
}

// TestTrainUsesGEMMPassedIn: the devices multiply with TrainConfig.GEMM,
// and nil means kernel.Go(), bit for bit.
func TestTrainUsesGEMMPassedIn(t *testing.T) {
	m := testMesh(t, "v5litepod-8", 1, "fsdp=2,tensor=2,pipeline=2")
	tc := TrainConfig{Model: parityModel, Mesh: m, GlobalBatch: 8, MicroBatches: 2, Schedule: schedule.OneFOneB, Steps: 2, Seed: 5, LR: 1e-2,
		Data: &Synthetic{V: parityModel.Vocab, Seed: 11}}
	def, err := Train(tc)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	tc.GEMM = countingGEMM{&calls}
	got, err := Train(tc)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() == 0 {
		t.Error("Train with TrainConfig.GEMM set never called it")
	}
	if !slices.Equal(got.Losses, def.Losses) {
		t.Errorf("losses with kernel.Go() passed in = %v, want the default's %v", got.Losses, def.Losses)
	}
}
