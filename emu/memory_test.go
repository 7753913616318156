package emu

import (
	"reflect"
	"runtime"
	"testing"

	"shardlab/schedule"
)

// TestEstimateMemoryMatchesMeter holds the estimate from tensor shapes
// against what the devices' meters measure while training (a second
// implementation, rule 12): state exactly, the peak from above and within
// 30%.
func TestEstimateMemoryMatchesMeter(t *testing.T) {
	dense := Config{Layers: 4, DModel: 32, Heads: 4, KVHeads: 2, DFF: 64, Vocab: 64, Seq: 16}
	moe := dense
	moe.Experts, moe.ExpertsPerToken, moe.ExpertDFF, moe.FirstDenseLayers, moe.CapacityFactor = 8, 2, 16, 1, 1.5
	for _, tt := range []struct {
		accel  string
		slices int
		layout string
		micro  int
		sched  schedule.Kind
		bf16   bool
		chunks int
		moe    bool
		full   bool // remat full
	}{
		{"v5litepod-4", 2, "data=2(dcn),fsdp=2,tensor=2", 1, schedule.OneFOneB, true, 0, false, false},
		{"v5litepod-4", 2, "data=2(dcn),fsdp=2,tensor=2", 1, schedule.OneFOneB, false, 0, false, false},
		{"v5litepod-8", 1, "fsdp=8", 1, schedule.OneFOneB, false, 0, false, false},
		{"v5litepod-4", 1, "tensor=2,data=2", 1, schedule.OneFOneB, true, 0, false, false},
		{"v5litepod-4", 1, "pipeline=2,data=2", 4, schedule.GPipe, false, 0, false, false},
		{"v5litepod-4", 1, "pipeline=4", 8, schedule.OneFOneB, true, 0, false, false},
		{"v5litepod-4", 1, "pipeline=2,context=2", 2, schedule.OneFOneB, false, 0, false, false},
		{"v5litepod-4", 1, "context=2,fsdp=2", 1, schedule.OneFOneB, true, 0, false, false},
		{"v5litepod-4", 1, "pipeline=2,data=2", 4, schedule.Interleaved, false, 2, false, false},
		{"v5litepod-4", 1, "pipeline=2,fsdp=2", 2, schedule.Circular, true, 2, false, false},
		{"v5litepod-8", 1, "expert=8", 1, schedule.OneFOneB, false, 0, true, false},
		{"v5litepod-8", 1, "fsdp=2,expert=4", 1, schedule.OneFOneB, true, 0, true, false},
		{"v5litepod-8", 1, "data=2,expert=2,tensor=2", 1, schedule.OneFOneB, false, 0, true, false},
		{"v5litepod-4", 1, "pipeline=2,expert=2", 2, schedule.OneFOneB, true, 0, true, false},
		{"v5litepod-4", 2, "data=2(dcn),fsdp=2,tensor=2", 1, schedule.OneFOneB, true, 0, false, true},
		{"v5litepod-4", 1, "pipeline=2,context=2", 2, schedule.OneFOneB, false, 0, false, true},
		{"v5litepod-8", 1, "fsdp=2,expert=4", 1, schedule.OneFOneB, true, 0, true, true},
	} {
		model := dense
		if tt.moe {
			model = moe
		}
		tc := TrainConfig{Model: model, Mesh: testMesh(t, tt.accel, tt.slices, tt.layout), GlobalBatch: 16, MicroBatches: tt.micro,
			Schedule: tt.sched, Chunks: tt.chunks, Steps: 1, Seed: 1, LR: 1e-3, BF16Compute: tt.bf16, Data: &Synthetic{V: model.Vocab, Seed: 1}}
		if tt.full {
			tc.Remat = RematFull
		}
		est, err := EstimateMemory(tc)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Train(tc)
		if err != nil {
			t.Fatal(err)
		}
		if len(est.Devices) != len(res.Devices) {
			t.Fatalf("%s: %d devices estimated, %d ran", tt.layout, len(est.Devices), len(res.Devices))
		}
		for i, d := range res.Devices {
			got, e := d.Memory, est.Devices[i]
			if e.Weights != got.Weights || e.Gradients != got.Gradients || e.Optimizer != got.Optimizer {
				t.Errorf("%s bf16=%v device %d: state estimated %d/%d/%d bytes, measured %d/%d/%d", tt.layout, tt.bf16, i,
					e.Weights, e.Gradients, e.Optimizer, got.Weights, got.Gradients, got.Optimizer)
			}
			if e.Total() < got.Total() || float64(e.Total()) > 1.3*float64(got.Total()) {
				t.Errorf("%s bf16=%v device %d: peak estimated %d bytes, measured %d (want 1 to 1.3 times)", tt.layout, tt.bf16, i, e.Total(), got.Total())
			}
		}
	}
}

// TestEstimateMemoryStatic holds the estimate of what stays allocated
// against the Go heap measured between steps, after a collection.
func TestEstimateMemoryStatic(t *testing.T) {
	dense := Config{Layers: 4, DModel: 128, Heads: 4, KVHeads: 2, DFF: 352, Vocab: 256, Seq: 32}
	moe := dense
	moe.Experts, moe.ExpertsPerToken, moe.ExpertDFF, moe.CapacityFactor = 8, 2, 96, 1.25
	for _, layout := range []string{"data=2(dcn),fsdp=2,tensor=2", "pipeline=2(dcn),tensor=2,data=2", "expert=2(dcn),fsdp=2,expert=2"} {
		model := dense
		if layout[0] == 'e' {
			model = moe
		}
		tc := TrainConfig{Model: model, Mesh: testMesh(t, "v5litepod-4", 2, layout), GlobalBatch: 16, MicroBatches: 1,
			Steps: 3, Seed: 1, LR: 1e-3, BF16Compute: true, Data: &Synthetic{V: model.Vocab, Seed: 1}}
		if layout[0] == 'p' {
			tc.MicroBatches = 2
		}
		est, err := EstimateMemory(tc)
		if err != nil {
			t.Fatal(err)
		}
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		base := ms.HeapAlloc
		var live uint64
		tc.Hooks.Step = func(StepReport) error {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			live = max(live, ms.HeapAlloc-min(base, ms.HeapAlloc))
			return nil
		}
		if _, err := Train(tc); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: static %d, live %d, ratio %.3f; step %d end %d process %d", layout, est.Static, live, float64(est.Static)/float64(live), est.Step, est.End, est.Process)
		if float64(est.Static) < float64(live) || float64(est.Static) > 1.5*float64(live) {
			t.Errorf("%s: static memory estimated %d bytes, measured %d live between steps (want 1 to 1.5 times)", layout, est.Static, live)
		}
		if est.Process < est.Static+est.Step || est.Process < est.Static+est.End {
			t.Errorf("%s: peak %d is below static %d plus step %d or end %d", layout, est.Process, est.Static, est.Step, est.End)
		}
	}
}

// TestMeterDrainsEachStep: every buffer the meter counts during a step is
// freed by its end (what a step holds past it is the model state alone),
// over layouts, remat policies, kernels and a mixture of experts.
func TestMeterDrainsEachStep(t *testing.T) {
	dense := Config{Layers: 4, DModel: 16, Heads: 4, KVHeads: 2, DFF: 32, Vocab: 32, Seq: 8}
	moe := dense
	moe.Experts, moe.ExpertsPerToken, moe.ExpertDFF, moe.FirstDenseLayers, moe.CapacityFactor = 4, 2, 8, 1, 1.5
	for _, tt := range []struct {
		layout string
		model  Config
		remat  Remat
		micro  int
	}{
		{"fsdp=2,context=2", dense, RematNone, 1},
		{"pipeline=2,tensor=2", dense, RematFull, 2},
		{"expert=2,fsdp=2", moe, RematFull, 1},
	} {
		for _, flash := range []bool{false, true} {
			tt.model.FlashAttention = flash
			tc := TrainConfig{Model: tt.model, Mesh: testMesh(t, "v5litepod-4", 1, tt.layout), GlobalBatch: 8, MicroBatches: tt.micro,
				Steps: 1, Seed: 1, LR: 1e-3, BF16Compute: true, Remat: tt.remat, Data: &Synthetic{V: tt.model.Vocab, Seed: 1}}
			tc.setDefaults()
			r, err := newRun(&tc)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.step(0); err != nil {
				t.Fatal(err)
			}
			for _, d := range r.devs {
				if m := d.mem; len(m.live) != 0 || m.cur.Activations != 0 || m.cur.Transient != 0 {
					t.Errorf("%s remat %s flash=%v device %d: %d buffers, %d bytes of activations and %d transient still metered after the step, want none",
						tt.layout, tt.remat, flash, d.id, len(m.live), m.cur.Activations, m.cur.Transient)
				}
			}
		}
	}
}

// TestRematFullTrainsAsNone: rerunning each layer's forward before its
// backward (remat full) gives the same losses and the same model, to the
// bit, as keeping everything, and holds less: the layers' inputs alone.
func TestRematFullTrainsAsNone(t *testing.T) {
	c := Config{Layers: 4, DModel: 16, Heads: 4, KVHeads: 2, DFF: 32, Vocab: 32, Seq: 8}
	for _, layout := range []string{"context=2,fsdp=2", "pipeline=2,tensor=2"} {
		var res [2]*Result
		for i, remat := range []Remat{RematNone, RematFull} {
			tc := TrainConfig{Model: c, Mesh: testMesh(t, "v5litepod-4", 1, layout), GlobalBatch: 8, MicroBatches: 2, Steps: 3, Seed: 1, LR: 1e-2,
				BF16Compute: true, Remat: remat, Data: &Synthetic{V: c.Vocab, Seed: 1}}
			if layout[0] != 'p' {
				tc.MicroBatches = 1
			}
			r, err := Train(tc)
			if err != nil {
				t.Fatal(err)
			}
			res[i] = r
		}
		if !reflect.DeepEqual(res[0].Losses, res[1].Losses) || !reflect.DeepEqual(res[0].Final, res[1].Final) {
			t.Errorf("%s: remat full losses %v, none %v (or the final models differ), want the same", layout, res[1].Losses, res[0].Losses)
		}
		for i := range res[0].Devices {
			if none, full := res[0].Devices[i].Memory.Activations, res[1].Devices[i].Memory.Activations; full >= none {
				t.Errorf("%s device %d: held activations %d bytes with remat full, %d with none; want fewer", layout, i, full, none)
			}
		}
	}
}
