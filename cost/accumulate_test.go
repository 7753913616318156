package cost

import (
	"math"
	"testing"
	"time"

	"shardlab/collective"
	"shardlab/mesh"
)

// accumulated is llama3-8b at 8192 tokens on v6e-8 as fsdp=8: 16
// sequences in one step, and 64 in four micro-batches of 16
// (gradient_accumulation_steps=4, per_device_batch_size=2 in MaxText's
// terms: 8 devices x 2 x 4 = 64, configs/types.py
// calculate_global_batch_sizes).
func accumulated(t *testing.T) (one, four Estimate) {
	t.Helper()
	spec := lookup(t, "llama3-8b")
	m := layout(t, "v6e-8", 1, "fsdp=8")
	j := NewJob(spec, 8192, 16)
	one, err := EstimateStep(j, m)
	if err != nil {
		t.Fatal(err)
	}
	j.GlobalBatch, j.MicroBatches = 64, 4
	four, err = EstimateStep(j, m)
	if err != nil {
		t.Fatal(err)
	}
	return one, four
}

// TestAccumulationMemory: the scan holds one micro-batch's activations
// (the same 2 sequences per chip as the single step) and adds the
// accumulator, jnp.zeros_like of the parameters sharded as they are
// (utils/gradient_accumulation.py): under MaxText's fp32 weight_dtype it
// is as large as the weights themselves.
func TestAccumulationMemory(t *testing.T) {
	one, four := accumulated(t)
	if one.MicroBatchSize != 2 || four.MicroBatchSize != 2 {
		t.Fatalf("sequences per chip per micro-batch = %d and %d, want 2 and 2", one.MicroBatchSize, four.MicroBatchSize)
	}
	if four.Memory.Activations != one.Memory.Activations || four.Memory.Transient != one.Memory.Transient {
		t.Errorf("activations %v, transient %v with 4 micro-batches; want one micro-batch's %v, %v",
			four.Memory.Activations, four.Memory.Transient, one.Memory.Activations, one.Memory.Transient)
	}
	if got, want := four.Memory.Gradients-one.Memory.Gradients, one.Memory.Weights; got != want {
		t.Errorf("accumulator = %v, want the fp32 weights' %v", got, want)
	}
	if got, want := four.Memory.Total()-one.Memory.Total(), one.Memory.Weights; got != want {
		t.Errorf("total grows by %v, want the accumulator's %v", got, want)
	}
}

// TestAccumulationTime: the same work four times over, the Adam update
// once; per parameter the update moves 2x4 (weights) + 4 (gradient) +
// 2x8 (moments) = 28 bytes and each of the four sums 4 + 2x4 = 12 more,
// so 76 against 28. The FSDP weight gathers (forward and backward) and
// gradient reduce-scatters run in every micro-batch, inside the scan.
func TestAccumulationTime(t *testing.T) {
	one, four := accumulated(t)
	near := func(what string, got, want time.Duration) {
		t.Helper()
		if math.Abs(float64(got-want)) > 1e-6*float64(want)+4 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	near("MXU", four.Time.MXU, 4*one.Time.MXU)
	near("attention", four.Time.Attention, 4*one.Time.Attention)
	near("vector", four.Time.Vector, 4*one.Time.Vector)
	near("optimizer", four.Time.Optimizer, time.Duration(float64(one.Time.Optimizer)*76/28))
	if four.Time.Bubble != 0 {
		t.Errorf("bubble = %v, want none without a pipeline", four.Time.Bubble)
	}
	counts := map[collective.Op]int{collective.AllGather: 8, collective.ReduceScatter: 4}
	for _, c := range four.Comms {
		if c.Axis != mesh.FSDP {
			continue
		}
		if want := counts[c.Op]; c.Count != want {
			t.Errorf("%s count = %d, want %d", c.What, c.Count, want)
		}
		delete(counts, c.Op)
	}
	if len(counts) != 0 {
		t.Errorf("missing FSDP collectives %v", counts)
	}
}
