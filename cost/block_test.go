package cost

import (
	"strings"
	"testing"

	"shardlab/unit"
)

// maverickRun is Llama 4 Maverick as the published v5p-256 run lays it
// out (validate/runs.yaml v5p-llama4-maverick-256: fsdp=32, tensor=4, 512
// sequences of 8,192, dropless, flash attention) under remat r, with its
// scanned block of scanBlock layers: each fsdp shard's 16 sequences are
// 131,072 tokens a chip.
func maverickRun(t *testing.T, r Remat, scanBlock int) Memory {
	t.Helper()
	spec := lookup(t, "llama4-maverick")
	if spec.ScanBlock != 4 {
		t.Fatalf("llama4-maverick: scan_block %d, want MaxText's inhomogeneous_layer_cycle_interval 4", spec.ScanBlock)
	}
	spec.ScanBlock = scanBlock
	j := NewJob(spec, 8192, 512)
	j.Attention, j.Remat = AttentionFlash, r
	if r == RematCustom {
		// the run's policy (benchmarks/maxtext_v5p_model_configs.py @9ca35d7e)
		p, err := ParseCustom("decoder_layer_input=offload,out_proj=offload,query_proj=offload,key_proj=offload,value_proj=offload")
		if err != nil {
			t.Fatal(err)
		}
		j.Custom = p
	}
	mem, err := NewEstimator().Memory(j, layout(t, "v5p-256", 1, "fsdp=32,tensor=4"))
	if err != nil {
		t.Fatal(err)
	}
	return mem
}

// layerBuffer is the bytes of the layer backward's buffer named name, 0
// when it has none.
func layerBuffer(t *testing.T, mem Memory, name string) unit.Bytes {
	t.Helper()
	for _, p := range mem.Phases {
		if !strings.HasPrefix(p.Name, PhaseLayerBackward) {
			continue
		}
		for _, b := range p.Buffers {
			if b.Name == name {
				return b.Bytes
			}
		}
		return 0
	}
	t.Fatalf("no %s phase in %v", PhaseLayerBackward, mem.Phases)
	return 0
}

// TestScannedBlockWeightsByHand holds the gathered weights of Maverick's
// layer backward to its MaxText block (models.py 358-364, 586-587 and
// llama4.py 480-540 @9ca35d7e: Llama4ScannableBlock, one nn.remat over
// layers dense, MoE, dense, MoE), by hand, in bf16, tensor 4 (8 KV heads
// over 4 shards), experts gathered over fsdp whole (expert 1):
//
//	dense layer: Q, O 5120×5120 each, K, V 5120×1024 each, 2 norms of
//	  5120, MLP 3×5120×16384: 314,583,040 / 4 = 78,645,760
//	MoE layer:   attention and norms 62,924,800 / 4 + shared expert
//	  3×5120×8192 / 4 + router 5120×128 + 128 experts 3×5120×8192 / 4
//	  = 15,731,200 + 31,457,280 + 655,360 + 4,026,531,840 = 4,074,375,680
//
// Under a policy that chains the block's layers (full,
// save_dot_except_mlp: blockChained) the block is gathered whole, 2 dense
// + 2 MoE = 8,306,042,880 parameters, 16,612,085,760 bytes; under the
// run's custom policy, or minimal, or with no block, one MoE layer,
// 8,148,751,360 bytes. The unreduced gradient is one stacked expert
// projection whatever the unit (each reduce-scatters when its dot ends):
// 128×5120×8192 / 4 = 1,342,177,280 parameters, 2,684,354,560 bytes.
func TestScannedBlockWeightsByHand(t *testing.T) {
	const block, layer, grad = 16_612_085_760, 8_148_751_360, 2_684_354_560
	for _, c := range []struct {
		remat     Remat
		scanBlock int
		want      unit.Bytes
	}{
		{RematFull, 4, block},
		{RematSaveDotExceptMLP, 4, block},
		{RematCustom, 4, layer},
		{RematMinimal, 4, layer},
		{RematFull, 0, layer},
	} {
		mem := maverickRun(t, c.remat, c.scanBlock)
		if got := layerBuffer(t, mem, "gathered weights (FSDP)"); got != c.want {
			t.Errorf("%s, scan_block %d: gathered weights %d bytes, want %d", c.remat, c.scanBlock, got, c.want)
		}
		if got := layerBuffer(t, mem, "unreduced weight gradient (FSDP)"); got != grad {
			t.Errorf("%s, scan_block %d: unreduced weight gradient %d bytes, want %d", c.remat, c.scanBlock, got, grad)
		}
	}
}

// TestScannedBlockRecomputeByHand holds what Maverick's chained block
// (full remat) adds to the layer backward and takes from the held
// activations, by hand, at 131,072 tokens a chip, tensor 4, bf16:
//
//   - the 3 earlier layers' recomputed activations: per token, Q 1280, K
//     256, V 256, context 1280, out_proj 1280, wi_0 and wi_1 4096 each
//     (the layers' average MLP: dense 16384, MoE shared + 1 routed 8192
//     each, over 4), the pre-attention norm's output 1280 and the
//     mid-layer norm's 1280, the activation product 4096, the two norms'
//     inputs gathered over tensor 5120 each, the fp32 statistics (an
//     rsqrt per norm over 4 and a log-sum-exp per local head, 10.5 × 4
//     bytes = 21 elements), and the layer's own input 1280, recomputed
//     from the block's: 30,741 elements, 3 × 30,741 × 2 × 131,072 =
//     24,175,706,112 bytes;
//   - the MoE dispatch of both MoE layers: 2 × (131,072 routed rows sent
//     and returned, 5120 wide) = 2 × 2,684,354,560 bytes;
//   - the held activations: the scan carries one input a block, 48 / 4
//     × 1280 × 131,072 × 2 = 4,026,531,840 bytes, where one layer a unit
//     holds 4 times that.
//
// The last layer's own walk (recomputed activations still live) is the
// one-layer unit's.
func TestScannedBlockRecomputeByHand(t *testing.T) {
	const dispatch = 2_684_354_560
	blk, one := maverickRun(t, RematFull, 4), maverickRun(t, RematFull, 0)
	const earlier = "recomputed activations of the block's earlier layers"
	if got := layerBuffer(t, blk, earlier); got != 24_175_706_112 {
		t.Errorf("block: %s %d bytes, want 24,175,706,112", earlier, got)
	}
	if got := layerBuffer(t, one, earlier); got != 0 {
		t.Errorf("one layer a unit: %s %d bytes, want none", earlier, got)
	}
	for _, c := range []struct {
		mem        Memory
		what       string
		dispatch   unit.Bytes
		activation unit.Bytes
	}{{blk, "block", 2 * dispatch, 4_026_531_840}, {one, "one layer a unit", dispatch, 4 * 4_026_531_840}} {
		if got := layerBuffer(t, c.mem, "MoE dispatch"); got != c.dispatch {
			t.Errorf("%s: MoE dispatch %d bytes, want %d", c.what, got, c.dispatch)
		}
		if c.mem.Activations != c.activation {
			t.Errorf("%s: held activations %d bytes, want %d", c.what, c.mem.Activations, c.activation)
		}
	}
	const live = "recomputed activations still live"
	if b, o := layerBuffer(t, blk, live), layerBuffer(t, one, live); b != o || b == 0 {
		t.Errorf("the last layer's walk: %d bytes in the block, %d alone, want the same", b, o)
	}
}

// TestCustomBlockIsPerLayer: under the published run's custom policy
// every inner layer's decoder_layer_input is kept (offloaded), so each
// layer recomputes from its own input and the block changes nothing:
// the same memory with and without it.
func TestCustomBlockIsPerLayer(t *testing.T) {
	blk, one := maverickRun(t, RematCustom, 4), maverickRun(t, RematCustom, 0)
	if blk.Total() != one.Total() || blk.Host != one.Host || blk.Activations != one.Activations {
		t.Errorf("custom policy: block %v total, %v host, %v held; one layer %v, %v, %v; want the same",
			blk.Total(), blk.Host, blk.Activations, one.Total(), one.Host, one.Activations)
	}
}
