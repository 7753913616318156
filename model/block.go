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

import "fmt"

// BlockLayers is the layers of one scanned unit: ScanBlock, at least 1.
func (s Spec) BlockLayers() int { return max(s.ScanBlock, 1) }

// Units is the scanned units the layers make: Layers / BlockLayers. A
// pipeline's stages hold whole units (MaxText builds a stage of the
// decoder's block: decoders.py get_pipeline_stage_module, blocks[0],
// @e591f30c).
func (s Spec) Units() int { return s.Layers / s.BlockLayers() }

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
