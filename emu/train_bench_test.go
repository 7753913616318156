package emu

import (
	"testing"
	"time"
)

// BenchmarkTrain reports training tokens/s for the default `shardlab run`
// (its flag defaults in cmd/shardlab/emurun.go: 4 layers, d_model 64, on 8
// virtual chips, data=2(dcn),fsdp=2,tensor=2; 30 steps of 16 sequences,
// bfloat16 compute) and, in each iteration and so under the same load,
// the ratios to the same training on v1's path (its GEMM kernel and
// row-by-row attention) and with FlashAttention (above 1: flash is
// slower).
func BenchmarkTrain(b *testing.B) {
	m := testMesh(b, "v5litepod-4", 2, "data=2(dcn),fsdp=2,tensor=2")
	c := Config{Layers: 4, DModel: 64, Heads: 4, KVHeads: 2, DFF: 176, Vocab: 256, Seq: 64}
	tc := TrainConfig{Model: c, Mesh: m, GlobalBatch: 16, MicroBatches: 1, Steps: 30, Seed: 1, LR: 3e-3, BF16Compute: true, Data: &Synthetic{V: 256, Seed: 1}}
	benchmarkTrain(b, tc, true)
}

// BenchmarkTrain100M is one step of a ~100M-parameter model (12 layers,
// d_model 768) on 8 FSDP chips, and the same on v1's path; with its
// warm-up run it takes about two minutes.
func BenchmarkTrain100M(b *testing.B) {
	m := testMesh(b, "v5litepod-8", 1, "fsdp=8")
	c := Config{Layers: 12, DModel: 768, Heads: 12, KVHeads: 12, DFF: 3072, Vocab: 256, Seq: 128}
	tc := TrainConfig{Model: c, Mesh: m, GlobalBatch: 8, MicroBatches: 1, Steps: 1, Seed: 1, LR: 1e-4, Data: &Synthetic{V: 256, Seed: 1}}
	params := 0
	for _, t := range benchmarkTrain(b, tc, false).Final.Tensors() {
		params += len(t)
	}
	b.ReportMetric(float64(params)/1e6, "Mparams")
}

// benchmarkTrain trains tc in each iteration with the kernels in use and
// on v1's path (and, with flash, with FlashAttention), after one run
// untimed, reports tokens/s and the ratios, and returns the last result
// with the kernels in use.
func benchmarkTrain(b *testing.B, tc TrainConfig, flash bool) *Result {
	withFlash := tc
	withFlash.Model.FlashAttention = true
	onV1 := tc
	onV1.GEMM = packedV1{} // v1's kernel, which also asks for v1's layers
	type run struct {
		tc TrainConfig
		d  *time.Duration
	}
	var tNow, tV1, tFlash time.Duration
	var last *Result
	runs := []run{{tc, &tNow}, {onV1, &tV1}}
	if flash {
		runs = append(runs, run{withFlash, &tFlash})
	}
	// the process's first training grows the heap, faulting in every
	// page (expensive on a VM); whichever path ran first would pay it
	if _, err := Train(tc); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		for _, r := range runs {
			t0 := time.Now()
			res, err := Train(r.tc)
			if err != nil {
				b.Fatal(err)
			}
			*r.d += time.Since(t0)
			if r.d == &tNow {
				last = res
			}
		}
	}
	b.ReportMetric(float64(tc.Steps*tc.GlobalBatch*tc.Model.Seq)*float64(b.N)/tNow.Seconds(), "tokens/s")
	b.ReportMetric(tV1.Seconds()/tNow.Seconds(), "x-v1")
	if flash {
		b.ReportMetric(tFlash.Seconds()/tNow.Seconds(), "flash-time-ratio")
	}
	return last
}
