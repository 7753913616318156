package model

// Local and global attention: the layers of a model such as Gemma 4 that
// attend over a sliding window of the last positions (local) between
// layers that attend over the whole context (global), the global ones
// with their own KV heads and head width (Spec.SlidingWindow and the
// Global* fields).

import "fmt"

// validateWindow checks the sliding-window fields: all zero without a
// window; with one, a pattern of at least two layers (one local, one
// global) up to the layers, global KV heads dividing the heads, and
// neither latent nor linear attention beside it.
func (s Spec) validateWindow(bad func(string, int, string) error) error {
	const limit = 1 << 24
	if s.SlidingWindow == 0 {
		why := "without a sliding window (set sliding_window for local attention)"
		if err := allZero(bad, why, specField{"global_attention_every", s.GlobalAttentionEvery},
			specField{"global_kv_heads", s.GlobalKVHeads}, specField{"global_head_dim", s.GlobalHeadDim}); err != nil {
			return err
		}
		if s.GlobalKeyAsValue {
			return bad("global_key_as_value", 1, "false without a sliding window (set sliding_window for local attention)")
		}
		return nil
	}
	switch {
	case s.SlidingWindow < 0 || s.SlidingWindow > limit:
		return bad("sliding_window", s.SlidingWindow, fmt.Sprintf("0 (every layer global) or 1 to %d tokens", limit))
	case s.GlobalAttentionEvery < 2 || s.GlobalAttentionEvery > s.Layers:
		return bad("global_attention_every", s.GlobalAttentionEvery, fmt.Sprintf("2 (every second layer global) up to layers (%d) with a sliding window", s.Layers))
	case s.GlobalKVHeads < 0 || s.GlobalKVHeads > s.Heads || (s.GlobalKVHeads > 0 && s.Heads%s.GlobalKVHeads != 0):
		return bad("global_kv_heads", s.GlobalKVHeads, fmt.Sprintf("0 (= kv_heads) or a divisor of heads (%d)", s.Heads))
	case s.GlobalHeadDim < 0 || s.GlobalHeadDim > limit:
		return bad("global_head_dim", s.GlobalHeadDim, "0 (= head_dim) or a positive integer")
	case s.MLA():
		return bad("sliding_window", s.SlidingWindow, "0 with latent attention")
	case s.Hybrid():
		return bad("sliding_window", s.SlidingWindow, "0 with linear attention (full_attention_every above 1)")
	}
	return nil
}

// Windowed reports whether some layers attend over a sliding window.
func (s Spec) Windowed() bool { return s.SlidingWindow > 0 }

// IsGlobalLayer reports whether layer i (from 0) attends over the whole
// context: every layer of a model without a window, else the last of
// each GlobalAttentionEvery (Gemma 4's layer_types: five
// "sliding_attention" and then one "full_attention").
func (s Spec) IsGlobalLayer(i int) bool {
	if i < 0 || i >= s.Layers {
		return false
	}
	k := s.globalEvery()
	return !s.Windowed() || i%k == k-1
}

// globalEvery is GlobalAttentionEvery, at least 1 (Validate holds it to
// 2 or more with a window; an unchecked spec must not divide by zero).
func (s Spec) globalEvery() int { return max(s.GlobalAttentionEvery, 1) }

// GlobalLayers counts the softmax layers that attend over the whole
// context (all of them without a window; of a hybrid model, its softmax
// layers).
func (s Spec) GlobalLayers() int {
	if !s.Windowed() {
		return s.AttentionLayers()
	}
	return s.Layers / s.globalEvery()
}

// LocalLayers counts the layers that attend over the sliding window.
func (s Spec) LocalLayers() int {
	if !s.Windowed() {
		return 0
	}
	return s.Layers - s.GlobalLayers()
}

// Global is the shape of a global layer's attention: the spec with the
// global KV heads and head width in place of the local ones, its keys
// serving as values when GlobalKeyAsValue, and no window. Without a
// window it is the spec itself.
func (s Spec) Global() Spec {
	if !s.Windowed() {
		return s
	}
	g := s
	if s.GlobalKVHeads > 0 {
		g.KVHeads = s.GlobalKVHeads
	}
	if s.GlobalHeadDim > 0 {
		g.HeadDim = s.GlobalHeadDim
	}
	g.SlidingWindow, g.GlobalAttentionEvery, g.GlobalKVHeads, g.GlobalHeadDim = 0, 0, 0, 0
	return g
}

// AttendedKeys is the keys a query at position p (from 0) attends in a
// layer that sees window positions (0: the whole context): p + 1, or the
// window once the context is longer.
func AttendedKeys(p, window int) int {
	if window > 0 {
		return min(p+1, window)
	}
	return p + 1
}

// AttendedPairs is the (query, key) pairs of n queries after c earlier
// positions in a layer that sees window positions (0: all): the sum of
// AttendedKeys over positions c to c+n−1, n·(c + (n+1)/2) without a
// window.
func AttendedPairs(c, n, window int) float64 {
	if window <= 0 || c+n <= window {
		return float64(n) * (float64(c) + float64(n+1)/2)
	}
	// positions c … window−1 attend p + 1 keys, the rest the window
	below := max(min(window, c+n)-c, 0)
	return float64(below)*(float64(c)+float64(below+1)/2) + float64(n-below)*float64(window)
}

// attentionKeys is the keys one token's query attends in each softmax
// layer, summed over the layers and weighted by the layer's attention
// width (H·(Q_k+Q_v)/2), at sequence length seq: seq in a global layer
// and at most the window in a local one; with causal set, a causal
// sequence's mean as MaxText counts it (utils/maxtext_utils.py
// calculate_gemma2_tflops_training_per_device and
// calculate_mixed_attention_model_tflops_training_per_device @e591f30c):
// half of seq in a global layer (S²/2 pairs, S(S+1)/2 less half a key
// per query) and in a local one (S·W − W²/2)/S with W the window cut to
// the sequence: the pairs AttendedPairs counts, S·W − W²/2 + W/2, less
// W/2, which for a window as long as the sequence is a global layer's
// S²/2. A chunked layer (Spec.Chunked) attends its chunk's keys
// (chunkKeys).
func (s Spec) attentionKeys(seq int, causal bool) float64 {
	g := s.Global()
	full := float64(seq)
	if causal {
		full /= 2
	}
	n := float64(s.GlobalLayers()) * g.attentionWidth() * full
	if s.Windowed() {
		w := float64(min(seq, s.SlidingWindow))
		local := w
		if causal {
			local = (AttendedPairs(0, seq, s.SlidingWindow) - w/2) / float64(seq)
		}
		n += float64(s.LocalLayers()) * s.attentionWidth() * local
	}
	if s.Chunked() {
		// a chunked layer's keys stop at its chunk (model/chunk.go)
		k := float64(s.ChunkedLayers()) * g.attentionWidth()
		n += k * (chunkKeys(seq, s.AttentionChunk, causal) - full)
	}
	return n
}

// CausalAttentionFLOPsPerToken is the forward FLOPs of the attention
// core per token over the (query, key) pairs a causal mask keeps, as
// MaxText counts them (attentionKeys): half of AttentionFLOPsPerToken
// without a window; with one, a local layer's keys stop at the window,
// and a chunked layer's at its chunk. It is the work of a kernel that
// skips the masked blocks, as MaxText's splash attention does for its
// causal, local and chunked masks (layers/attention_op.py: CHUNK hands
// splash ChunkedCausalMask, @e591f30c).
func (s Spec) CausalAttentionFLOPsPerToken(seq int) float64 {
	if s.Windowed() || s.Chunked() {
		return 4 * s.attentionKeys(seq, true)
	}
	return s.AttentionFLOPsPerToken(seq) / 2
}

// globalAttentionMatmul is one global layer's attention projection
// parameters: Global's, less the value projection when its keys serve
// as values. Without a window, every layer's (attentionMatmul).
func (s Spec) globalAttentionMatmul() int64 {
	g := s.Global()
	n := g.attentionMatmul()
	if s.Windowed() && s.GlobalKeyAsValue {
		n -= int64(g.DModel) * int64(g.KV()*g.Head()) // no value projection
	}
	return n
}

// KeyFLOPs is the forward FLOPs of the attention core (a score and a
// weighted sum, 4·H·(Q_k+Q_v)/2) of one (query, key) pair summed over
// the global layers and over the local layers (0 without a window):
// the per-pair terms of AttentionFLOPsPerToken, kept apart because a
// local layer's keys stop at the window.
func (s Spec) KeyFLOPs() (global, local float64) {
	global = 4 * float64(s.GlobalLayers()) * s.Global().attentionWidth()
	if s.Windowed() {
		local = 4 * float64(s.LocalLayers()) * s.attentionWidth()
	}
	return global, local
}
