package cost

import (
	"testing"

	"shardlab/unit"
)

// TestExpertOutputAllReduceByHand holds the tensor collectives of a
// dropless MoE layer (expertOutputAllReduce) to MaxText's sparse_matmul
// at the commit the published Maverick run used (MaxText/layers/moe.py
// @9ca35d7e, tpu-recipes-v0.1.3): the shard_map takes the tokens with
// d_model unsharded (in_specs (activation_batch, activation_length,
// None)), so XLA all-gathers them over tensor, and the down-projection's
// partial sums leave it through jax.lax.psum_scatter over tensor
// (scatter_dimension=1): an all-gather and a reduce-scatter of the
// routed rows, tokens × k × d_model, the bytes of one ring all-reduce,
// 2(t − 1)/t × the buffer.
//
// Llama 4 Maverick on v5p-256 as fsdp=32,tensor=4 at 512 sequences of
// 8,192: each fsdp shard's 16 sequences are 131,072 tokens a device, top-1,
// d_model 5,120 in bf16: 1,342,177,280 bytes, 2,013,265,920 a collective
// at tensor 4. Full remat runs the layer's forward twice (the forward and
// the recomputed one), 24 MoE layers of 48: 48 of them, 96,636,764,160
// bytes a step; with no remat 24.
func TestExpertOutputAllReduceByHand(t *testing.T) {
	spec := lookup(t, "llama4-maverick")
	if spec.MoELayers() != 24 || spec.ExpertsPerToken != 1 || spec.DModel != 5120 {
		t.Fatalf("llama4-maverick: %d MoE layers, top-%d, d_model %d; the hand count assumes 24, 1, 5120",
			spec.MoELayers(), spec.ExpertsPerToken, spec.DModel)
	}
	m := layout(t, "v5p-256", 1, "fsdp=32,tensor=4")
	const perCollective = unit.Bytes(2 * 3 * 16 * 8192 * 5120 * 2 / 4)
	for _, c := range []struct {
		remat Remat
		count int
	}{{RematFull, 48}, {RematNone, 24}} {
		j := NewJob(spec, 8192, 512)
		j.Remat = c.remat
		est, err := NewEstimator().Estimate(j, m)
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, cm := range est.Comms {
			if cm.What != "expert output all-reduce" {
				continue
			}
			found = true
			if cm.Count != c.count || cm.ICIBytes != unit.Bytes(c.count)*perCollective {
				t.Errorf("remat %s: %d expert output all-reduces of %d bytes in all, want %d of %d bytes each (%d)",
					c.remat, cm.Count, cm.ICIBytes, c.count, perCollective, unit.Bytes(c.count)*perCollective)
			}
		}
		if !found {
			t.Errorf("remat %s: no expert output all-reduce in %d comms, want %d", c.remat, len(est.Comms), c.count)
		}
	}
}
