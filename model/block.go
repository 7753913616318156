package model

// Scanned blocks: MaxText scans a model whose layers are not all alike as
// a block of them. Its llama4 decoder, with scan_layers (base.yml's
// default), returns Llama4ScannableBlock, which loops over
// inhomogeneous_layer_cycle_interval Llama4DecoderLayers (layer i of the
// block dense or MoE by interleave_moe_layer_step, RoPE or NoPE by
// nope_layer_interval), and the decoder wraps that block whole in
// nn.remat (set_remat_policy) and scans it num_decoder_layers /
// inhomogeneous_layer_cycle_interval times: MaxText 9ca35d7e (the Llama 4
// recipes' tag tpu-recipes-v0.1.3) layers/models.py 358-364 and 586-587,
// layers/llama4.py 480-540; 3eb77db3 layers/decoders.py 404 and 760;
// e591f30c layers/decoders.py 494 and 1087, models/llama4.py 532-616. Both
// Llama 4 configs set inhomogeneous_layer_cycle_interval 4
// (configs/models/llama4-17b-16e.yml and llama4-17b-128e.yml, line 38 at
// the three commits), "the least common multiple of nope interval and
// moe interval": Maverick's block is dense, MoE, dense, MoE+NoPE, Scout's
// four MoE layers, the last NoPE.
//
// Its qwen3_5 decoder does the same with Qwen3_5ScannableBlock, a loop over
// inhomogeneous_layer_cycle_interval Qwen3_5DecoderLayers (layer i of
// softmax attention when (i+1) % interval == 0, else Gated DeltaNet;
// every one MoE) that the decoder wraps in nn.remat and scans
// num_decoder_layers / inhomogeneous_layer_cycle_interval times
// (e591f30c models/qwen3_5.py 58-108 and 146, layers/decoders.py 487-488,
// 885-886 and 1085-1087; configs/models/qwen3.5-397b-a17b.yml:
// inhomogeneous_layer_cycle_interval 4).

import "fmt"

// BlockLayers is the layers of one scanned unit: ScanBlock, at least 1.
func (s Spec) BlockLayers() int { return max(s.ScanBlock, 1) }

// Units is the scanned units the layers make: Layers / BlockLayers. A
// pipeline's stages hold whole units (MaxText builds a stage of the
// decoder's block: decoders.py get_pipeline_stage_module, blocks[0],
// @e591f30c).
func (s Spec) Units() int { return s.Layers / s.BlockLayers() }

// UnitWord is what a pipeline splits the model into: "layers", or
// "scanned blocks" where it scans blocks of layers.
func (s Spec) UnitWord() string {
	if s.BlockLayers() > 1 {
		return "scanned blocks"
	}
	return "layers"
}

// UnitsText counts the units a pipeline splits: "48 layers", or "12
// scanned blocks of 4 layers".
func (s Spec) UnitsText() string {
	if b := s.BlockLayers(); b > 1 {
		return fmt.Sprintf("%d scanned blocks of %d layers", s.Units(), b)
	}
	return fmt.Sprintf("%d layers", s.Layers)
}

// TagsLayerInput reports whether MaxText's decoder layers of the model
// tag their input decoder_layer_input (checkpoint_name): the name by
// which a remat policy keeps each layer's input, and so the one by which
// a scanned block's inner layers can each find theirs without the
// layers before them recomputed. MaxText's do (layers/decoders.py 122,
// models/llama4.py 463 and 595, and every models/*.py decoder layer
// @e591f30c) but qwen3_next's and qwen3_5's: Qwen3NextDecoderLayer
// (models/qwen3.py 1279-1420) and Qwen3_5DecoderLayer and its scannable
// block (models/qwen3_5.py 58-246) call no checkpoint_name, which the
// catalog says as UntaggedLayerInput.
func (s Spec) TagsLayerInput() bool { return !s.UntaggedLayerInput }

// TagsOutProj reports whether every decoder layer of the model tags its
// attention's output projection out_proj (checkpoint_name), as MaxText's
// softmax attention does (layers/attentions.py 1366 @e591f30c); not a hybrid's: MaxText's one linear attention,
// Qwen3NextGatedDeltaNet (models/qwen3.py 433-1016 @e591f30c, which
// Qwen3_5GatedDeltaNet is), names none of its tensors, its out_proj
// among them.
func (s Spec) TagsOutProj() bool { return !s.Hybrid() }

// BlockMoELayers counts the MoE layers of one scanned unit. Every block
// is alike (validateBlock), so it counts the first: layers 0 to
// BlockLayers−1 (with one layer a unit, the one layer is MoE when any
// is: a unit's count is its largest layer's).
func (s Spec) BlockMoELayers() int {
	if !s.MoE() {
		return 0
	}
	if s.BlockLayers() == 1 {
		return 1
	}
	n := 0
	for i := range s.BlockLayers() {
		if s.IsMoELayer(i) {
			n++
		}
	}
	return n
}

// validateBlock holds scan_block to a unit that repeats: it divides the
// layers, every block starts alike (no first dense layers, which MaxText
// scans apart), and each interleaved pattern's period divides it.
func (s Spec) validateBlock(bad func(string, int, string) error) error {
	b := s.ScanBlock
	if b == 0 || b == 1 {
		return nil
	}
	periods := []int{1}
	if s.MoE() {
		periods = append(periods, s.moeEvery())
	}
	if s.Chunked() {
		periods = append(periods, ChunkGlobalEvery)
	}
	if s.Windowed() {
		periods = append(periods, s.GlobalAttentionEvery)
	}
	if s.Hybrid() {
		periods = append(periods, s.FullAttentionEvery)
	}
	want := fmt.Sprintf("0 or 1 (one layer a unit), or a divisor of layers (%d) that is a multiple of the layer patterns' periods %v, with first_dense_layers 0", s.Layers, periods)
	if b < 0 || b > s.Layers || s.Layers%b != 0 || s.FirstDenseLayers != 0 {
		return bad("scan_block", b, want)
	}
	for _, p := range periods {
		if p > 0 && b%p != 0 {
			return bad("scan_block", b, want)
		}
	}
	return nil
}
