package cost

import (
	"strings"
	"testing"

	"shardlab/model"
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
	return maverickMemory(t, spec, r)
}

// maverickMemory is maverickRun on spec.
func maverickMemory(t *testing.T, spec model.Spec, r Remat) Memory {
	t.Helper()
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

// TestUntaggedBlockIsTheUnit: Qwen 3.5's layers tag no
// decoder_layer_input, nor its Gated DeltaNet layers out_proj
// (models/qwen3_5.py 58-246 and models/qwen3.py 433-1016 @e591f30c:
// model.Spec.TagsLayerInput, TagsOutProj), so no policy finds an inner
// layer's input of its scanned block of 4 but by recomputing the layers
// before it: under every policy but none (which reruns nothing) the unit
// is the block, its 4 layers all MoE; custom's decoder_layer_input=offload
// has no tensor to act on, so the scan carries the block's input on
// device. Llama 4 Maverick's layers tag both: its custom and minimal
// family stay one layer a unit.
func TestUntaggedBlockIsTheUnit(t *testing.T) {
	qwen := lookup(t, "qwen3.5-397b-a17b")
	if qwen.ScanBlock != 4 || qwen.TagsLayerInput() || qwen.TagsOutProj() {
		t.Fatalf("qwen3.5-397b-a17b: scan_block %d, tags decoder_layer_input %v, out_proj %v; want 4, false, false", qwen.ScanBlock, qwen.TagsLayerInput(), qwen.TagsOutProj())
	}
	custom, err := ParseCustom("decoder_layer_input=offload,out_proj=offload")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Remats() {
		j := NewJob(qwen, 8192, 512)
		j.Remat, j.Custom = r, custom
		unit, moe := 4, 4
		if r == RematNone {
			unit, moe = 1, 1
		}
		if j.blockUnit() != unit || j.blockMoELayers() != moe {
			t.Errorf("qwen3.5 under %s: a unit of %d layers, %d MoE; want %d and %d", r, j.blockUnit(), j.blockMoELayers(), unit, moe)
		}
		if r == RematCustom && j.places()[LayerInput] != Device {
			t.Errorf("qwen3.5 under custom decoder_layer_input=offload: its input %s, want device (no such name to offload)", j.places()[LayerInput])
		}
	}
	maverick := lookup(t, "llama4-maverick")
	for r, unit := range map[Remat]int{RematCustom: 1, RematMinimal: 1, RematMinimalOffloaded: 1, RematFull: 4, RematSaveQKVProj: 4, RematNone: 1} {
		j := NewJob(maverick, 8192, 512)
		j.Remat = r
		if j.blockUnit() != unit {
			t.Errorf("llama4-maverick under %s: a unit of %d layers, want %d", r, j.blockUnit(), unit)
		}
	}
}

// TestUntaggedCustomBlockByHand: Maverick's published run (custom:
// decoder_layer_input, out_proj, Q, K and V offloaded) as if its layers
// tagged no decoder_layer_input (UntaggedLayerInput), by hand from the
// tests above: the block is the unit, so the layer backward gathers the
// whole block, 16,612,085,760 bytes (TestScannedBlockWeightsByHand);
// the scan carries one input a block on device, 48 / 4 × 1280 × 131,072
// × 2 = 4,026,531,840 bytes more held in HBM; and host memory loses the
// 48 layers' offloaded inputs, 4 × 4,026,531,840 = 16,106,127,360 bytes.
func TestUntaggedCustomBlockByHand(t *testing.T) {
	tagged := maverickRun(t, RematCustom, 4)
	untagged := maverickRunUntagged(t)
	if got := layerBuffer(t, untagged, "gathered weights (FSDP)"); got != 16_612_085_760 {
		t.Errorf("untagged custom: gathered weights %d bytes, want the block's 16,612,085,760", got)
	}
	if got := untagged.Activations - tagged.Activations; got != 4_026_531_840 {
		t.Errorf("untagged custom: %d bytes more held, want 4,026,531,840", got)
	}
	if got := tagged.Host - untagged.Host; got != 16_106_127_360 {
		t.Errorf("untagged custom: %d bytes less offloaded, want 16,106,127,360", got)
	}
}

// maverickRunUntagged is maverickRun's custom run with
// UntaggedLayerInput set.
func maverickRunUntagged(t *testing.T) Memory {
	t.Helper()
	spec := lookup(t, "llama4-maverick")
	spec.UntaggedLayerInput = true
	return maverickMemory(t, spec, RematCustom)
}
