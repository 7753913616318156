package emu

import (
	"math/rand/v2"
	"testing"

	"shardlab/schedule"
)

// moeConfig is a small mixture of experts: 4 experts, 2 per token, the
// first layer dense.
func moeConfig(capacity float64) Config {
	return Config{Layers: 3, DModel: 8, Heads: 4, KVHeads: 2, DFF: 12, Vocab: 11, Seq: 6,
		Experts: 4, ExpertsPerToken: 2, ExpertDFF: 6, FirstDenseLayers: 1, CapacityFactor: capacity}
}

// TestMoEGradientsMatchFiniteDifferences checks the router's and the
// experts' hand-written backward (top-k softmax gates, dispatch into
// capacity slots, SwiGLU experts, combine) against central differences in
// float64, with enough capacity for every token and with tokens dropped.
func TestMoEGradientsMatchFiniteDifferences(t *testing.T) {
	for _, capacity := range []float64{2, 0.5} {
		c := moeConfig(capacity)
		p := newParams[float64](c, 3)
		rng := rand.New(rand.NewPCG(9, 9))
		// a router with clear preferences, so that a step of h never changes
		// a token's experts
		for _, l := range p.Layers {
			for i := range l.Wr.D {
				l.Wr.D[i] = rng.NormFloat64()
			}
		}
		mb := randomMicro(rng, c, 2)
		dropped := droppedRows(c, p, mb)
		if capacity >= 2 && dropped != 0 || capacity < 1 && dropped == 0 {
			t.Fatalf("capacity factor %v: %d rows dropped", capacity, dropped)
		}
		worst := checkGradients(t, c, p, mb, 1e-6)
		t.Logf("capacity factor %v, %d of %d routed rows dropped: worst |backward − finite difference| = %.3g", capacity, dropped, 2*c.Seq*c.ExpertsPerToken*(c.Layers-1), worst)
	}
}

// droppedRows counts the routed rows the MoE layers drop for mb.
func droppedRows(c Config, p *Params[float64], mb micro) int {
	x := embed(p, mb)
	n := 0
	for i := range p.Layers {
		var a *acts[float64]
		x, a = layerForward(c, &p.Layers[i], x, mb, solo[float64]{})
		if a.moe != nil {
			for _, pos := range a.moe.pos {
				if pos < 0 {
					n++
				}
			}
		}
	}
	return n
}

var moeParityModel = Config{Layers: 4, DModel: 16, Heads: 4, KVHeads: 2, DFF: 32, Vocab: 32, Seq: 8,
	Experts: 8, ExpertsPerToken: 2, ExpertDFF: 8, FirstDenseLayers: 1, CapacityFactor: 4}

func moeRun(t testing.TB, accel string, slices int, layout string, micro int) *Result {
	t.Helper()
	c := moeParityModel
	r, err := Train(TrainConfig{Model: c, Mesh: testMesh(t, accel, slices, layout), GlobalBatch: 8, MicroBatches: micro, Schedule: schedule.OneFOneB,
		Steps: 3, Seed: 5, LR: 1e-2, Data: &Synthetic{V: c.Vocab, Seed: 11}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestMoEParityWithOneDevice trains the mixture of experts on one device
// and on expert-parallel layouts, alone and mixed with data, FSDP, tensor
// and pipeline parallelism and across slices: with a capacity factor of
// experts / k no token is dropped, so every layout computes the same sums
// and must end with the same losses and weights.
func TestMoEParityWithOneDevice(t *testing.T) {
	one := moeRun(t, "v5litepod-1", 1, "", 1)
	tests := []struct {
		name   string
		accel  string
		slices int
		layout string
		micro  int
	}{
		{"expert=2", "v5p-8", 1, "expert=2,data=2", 1},
		{"expert=4", "v5litepod-4", 1, "expert=4", 1},
		{"expert=8", "v5litepod-8", 1, "expert=8", 1},
		{"expert x data", "v5litepod-4", 1, "data=2,expert=2", 1},
		{"expert x fsdp", "v5litepod-4", 1, "fsdp=2,expert=2", 1},
		{"expert x tensor", "v5litepod-4", 1, "expert=2,tensor=2", 1},
		{"expert x fsdp x tensor", "v5litepod-8", 1, "fsdp=2,expert=2,tensor=2", 1},
		{"expert over DCN", "v5litepod-4", 2, "expert=2(dcn),expert=4", 1},
		{"data(dcn) x expert x context", "v5litepod-4", 2, "data=2(dcn),expert=2,context=2", 1},
		{"pipeline x expert", "v5litepod-4", 1, "pipeline=2,expert=2", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := moeRun(t, tt.accel, tt.slices, tt.layout, tt.micro)
			worst := sameAsOne(t, r, one)
			t.Logf("%s: losses %v, worst parameter difference %.3g", tt.layout, fmtLosses(r.Losses), worst)
		})
	}
	if one.Losses[2] >= one.Losses[0] {
		t.Errorf("the mixture of experts does not train: losses %v", one.Losses)
	}
}
