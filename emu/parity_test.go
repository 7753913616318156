package emu

import (
	"fmt"
	"math"
	"testing"

	"shardlab/mesh"
	"shardlab/schedule"
)

func testMesh(t testing.TB, accel string, slices int, layout string) mesh.Mesh {
	t.Helper()
	if layout == "" {
		layout = "data=1" // one chip
	}
	m, err := mesh.ParseOn(accel, slices, layout)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var parityModel = Config{Layers: 4, DModel: 16, Heads: 4, KVHeads: 2, DFF: 32, Vocab: 32, Seq: 8}

func parityRun(t testing.TB, m mesh.Mesh, micro int, k schedule.Kind, tied bool) *Result {
	return parityRunChunked(t, m, micro, k, 1, tied)
}

func parityRunChunked(t testing.TB, m mesh.Mesh, micro int, k schedule.Kind, chunks int, tied bool) *Result {
	t.Helper()
	c := parityModel
	c.Tied = tied
	r, err := Train(TrainConfig{Model: c, Mesh: m, GlobalBatch: 8, MicroBatches: micro, Schedule: k, Chunks: chunks, Steps: 3, Seed: 5, LR: 1e-2,
		Data: &Synthetic{V: c.Vocab, Seed: 11}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func close(a, b float64) bool { return math.Abs(a-b) <= 4e-5+1e-5*math.Abs(b) }

func TestParityWithOneDevice(t *testing.T) {
	one := map[bool]*Result{}
	for _, tied := range []bool{false, true} {
		one[tied] = parityRun(t, testMesh(t, "v5litepod-1", 1, ""), 1, schedule.OneFOneB, tied)
	}
	tests := []struct {
		name   string
		accel  string
		slices int
		layout string
		micro  int
		sched  schedule.Kind
		tied   bool
		chunks int
	}{
		{"data parallel", "v5litepod-8", 1, "data=8", 1, "", false, 0},
		{"data parallel, tied", "v5litepod-8", 1, "data=8", 1, "", true, 0},
		{"FSDP", "v5litepod-8", 1, "fsdp=8", 1, "", false, 0},
		{"tensor parallel", "v5litepod-8", 1, "tensor=2,data=4", 1, "", false, 0},
		{"pipeline GPipe", "v5litepod-4", 1, "pipeline=4", 4, schedule.GPipe, false, 0},
		{"pipeline 1F1B", "v5litepod-4", 1, "pipeline=4", 4, schedule.OneFOneB, false, 0},
		{"context parallel", "v5litepod-8", 1, "context=4,data=2", 1, "", false, 0},
		{"DP over DCN", "v5litepod-4", 2, "data=2(dcn),data=4", 1, "", false, 0},
		{"mixed: data(dcn) x fsdp x tensor", "v5litepod-4", 2, "data=2(dcn),fsdp=2,tensor=2", 1, "", false, 0},
		{"mixed: fsdp x pipeline x tensor", "v5litepod-8", 1, "fsdp=2,pipeline=2,tensor=2", 2, schedule.OneFOneB, false, 0},
		{"mixed: pipeline(dcn) x context x data", "v5litepod-4", 2, "pipeline=2(dcn),context=2,data=2", 2, schedule.GPipe, false, 0},
		{"mixed: fsdp(dcn) x context x tensor", "v5litepod-4", 2, "fsdp=2(dcn),context=2,tensor=2", 1, "", false, 0},
		// several non-contiguous chunks of layers per device: device d holds
		// chunks d and d+p of the p·v pieces
		{"pipeline interleaved 1F1B, 2 chunks", "v5litepod-4", 1, "pipeline=2,data=2", 2, schedule.Interleaved, false, 2},
		{"pipeline interleaved 1F1B, 4 micro-batches", "v5litepod-4", 1, "pipeline=2,data=2", 4, schedule.Interleaved, false, 2},
		{"pipeline circular, 2 repeats", "v5litepod-4", 1, "pipeline=2,data=2", 2, schedule.Circular, false, 2},
		{"pipeline circular, 4 stages", "v5litepod-4", 1, "pipeline=4", 4, schedule.Circular, false, 1},
		// the output layer and loss after the pipeline, on every stage: the
		// output layer gathered over fsdp; stages with no sequences of the
		// head (1 sequence a device over 2 stages, the last without; 2
		// over 4, the last two without)
		{"pipeline GPipe x fsdp x tensor", "v5litepod-8", 1, "fsdp=2,pipeline=2,tensor=2", 2, schedule.GPipe, false, 0},
		{"pipeline GPipe, 1 sequence over 2 stages", "v5litepod-16", 1, "pipeline=2,data=8", 1, schedule.GPipe, false, 0},
		{"pipeline GPipe, 2 sequences over 4 stages", "v5litepod-16", 1, "pipeline=4,data=4", 2, schedule.GPipe, false, 0},
		{"pipeline(dcn) interleaved x tensor", "v5litepod-4", 2, "pipeline=2(dcn),tensor=2,fsdp=2", 2, schedule.Interleaved, false, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sched := tt.sched
			if sched == "" {
				sched = schedule.OneFOneB
			}
			r := parityRunChunked(t, testMesh(t, tt.accel, tt.slices, tt.layout), tt.micro, sched, tt.chunks, tt.tied)
			worst := sameAsOne(t, r, one[tt.tied])
			t.Logf("%s: losses %v, worst parameter difference %.3g", tt.layout, fmtLosses(r.Losses), worst)
		})
	}
}

// sameAsOne holds a run's losses and final weights to the one-device
// run's (close) and returns the worst parameter difference.
func sameAsOne(t *testing.T, r, ref *Result) float64 {
	t.Helper()
	for i := range ref.Losses {
		if !close(r.Losses[i], ref.Losses[i]) {
			t.Errorf("step %d loss %.8f, one device %.8f", i+1, r.Losses[i], ref.Losses[i])
		}
	}
	got, want := r.Final.Tensors(), ref.Final.Tensors()
	if len(got) != len(want) {
		t.Fatalf("%d tensors, one device %d", len(got), len(want))
	}
	worst := 0.0
	for ti := range want {
		for i := range want[ti] {
			a, b := float64(got[ti][i]), float64(want[ti][i])
			if !close(a, b) {
				t.Fatalf("tensor %d element %d = %.8g, one device %.8g", ti, i, a, b)
			}
			worst = max(worst, math.Abs(a-b))
		}
	}
	return worst
}

func fmtLosses(l []float64) string { return fmt.Sprintf("%.5f", l) }

func TestBF16MasterWeights(t *testing.T) {
	// Mixed precision: the passes see bf16-rounded weights, Adam updates fp32
	// masters. Every layout rounds the same weights the same way, so parity
	// with one device holds; and the model still trains.
	run := func(accel, layout string) *Result {
		c := parityModel
		r, err := Train(TrainConfig{Model: c, Mesh: testMesh(t, accel, 1, layout), GlobalBatch: 8, Steps: 4, Seed: 5, LR: 1e-2,
			Data: &Synthetic{V: c.Vocab, Seed: 11}, BF16Compute: true})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	one := run("v5litepod-1", "")
	for _, layout := range []string{"fsdp=8", "tensor=2,data=4"} {
		r := run("v5litepod-8", layout)
		for i := range one.Losses {
			if !close(r.Losses[i], one.Losses[i]) {
				t.Errorf("%s step %d: loss %v, one device %v", layout, i+1, r.Losses[i], one.Losses[i])
			}
		}
	}
	if one.Losses[3] >= one.Losses[0] {
		t.Errorf("bf16 compute does not train: losses %v", one.Losses)
	}
	// the masters keep more than bf16's 8 bits of mantissa
	var fine int
	for _, tensor := range one.Final.Tensors() {
		for _, v := range tensor {
			if math.Float32bits(v)&0xffff != 0 {
				fine++
			}
		}
	}
	if fine == 0 {
		t.Error("master weights were rounded to bf16 too")
	}
	if x := roundBF16([]float32{1.00390625, 1.01171875, -3.14159}); x[0] != 1 || x[1] != 1.015625 || x[2] != -3.140625 {
		t.Errorf("roundBF16 = %v", x)
	}
}
