package model

// Chunked attention: Llama 4's layers with RoPE attend only within
// aligned chunks of AttentionChunk tokens, causally (a query at position
// p sees the keys of its own chunk up to p), and the others (NoPE) over
// the whole context. MaxText builds its llama4 block so
// (models/llama4.py @e591f30c: determine_is_nope_layer, layer_id+1 a
// multiple of nope_layer_interval, is GLOBAL, every other layer CHUNK,
// line 386; configs/models/llama4-17b-128e.yml 41-43: "Chunk attention is
// used on all RoPE layers", chunk_attn_window_size 8192,
// nope_layer_interval 4), as Hugging Face's Llama 4 does (use_rope layers
// take attention_chunk_size; no_rope_layer_interval 4).

import "fmt"

// ChunkGlobalEvery is the layer interval of Llama 4's global (NoPE)
// layers: of each 4 the last attends over the whole context and the
// other 3 within the chunk (MaxText nope_layer_interval: 4 in
// llama4-17b-128e.yml and llama4-17b-16e.yml @e591f30c).
const ChunkGlobalEvery = 4

// Chunked reports whether some layers attend within chunks.
func (s Spec) Chunked() bool { return s.AttentionChunk > 0 }

// ChunkedLayers counts the layers that attend within chunks: all but
// each ChunkGlobalEvery-th, as MaxText's calculate_llama4_attention_tflops
// counts them (num_layers − num_layers // nope_layer_interval).
func (s Spec) ChunkedLayers() int {
	if !s.Chunked() {
		return 0
	}
	return s.Layers - s.Layers/ChunkGlobalEvery
}

// chunkKeys is the keys one token's query attends, on average over seq
// tokens, in a layer that attends within chunks of chunk tokens, as
// MaxText counts them (utils/maxtext_utils.py
// _calculate_chunked_attention_flops_per_layer @e591f30c): the sum of the
// chunks' squares, ⌊seq/chunk⌋·chunk² + (seq mod chunk)², over seq, and
// half that with causal set (its calculate_llama4_attention_tflops halves
// the sum "to apply the causal mask", as a global layer's S² is halved).
// A sequence no longer than the chunk is a global layer's.
func chunkKeys(seq, chunk int, causal bool) float64 {
	n, r := float64(seq/chunk), float64(seq%chunk)
	keys := (n*float64(chunk)*float64(chunk) + r*r) / float64(seq)
	if causal {
		keys /= 2
	}
	return keys
}

// validateChunk holds attention_chunk_size to a model whose softmax
// layers are all alike but for the chunk: not with a sliding window,
// whose local layers are another pattern, linear attention or
// multi-token prediction, whose layers shardlab does not chunk.
func (s Spec) validateChunk(bad func(string, int, string) error) error {
	if s.Chunked() && (s.Windowed() || s.Hybrid() || s.MTPLayers > 0) {
		return bad("attention_chunk_size", s.AttentionChunk, fmt.Sprintf("0 with a sliding window, linear attention or MTP layers (sliding_window %d, full_attention_every %d, mtp_layers %d)", s.SlidingWindow, s.FullAttentionEvery, s.MTPLayers))
	}
	return nil
}
