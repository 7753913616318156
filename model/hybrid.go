package model

// Hybrid linear attention: the layers of a model such as Qwen3-Next and
// Qwen3.5 that run a gated delta rule instead of softmax attention
// (Spec.FullAttentionEvery and the Linear* fields).

import "fmt"

// validateLinear checks the linear-attention fields: all zero without
// it, each 1 to 65536 with it, the value heads a multiple of the key
// heads (the gated delta rule's value heads share key heads), and a
// softmax attention layer among the layers.
func (s Spec) validateLinear(bad func(string, int, string) error) error {
	fields := []specField{{"linear_key_heads", s.LinearKeyHeads}, {"linear_key_head_dim", s.LinearKeyHeadDim}, {"linear_value_heads", s.LinearValueHeads},
		{"linear_value_head_dim", s.LinearValueHeadDim}, {"linear_conv_kernel", s.LinearConvKernel}}
	switch {
	case s.FullAttentionEvery < 0 || s.FullAttentionEvery > s.Layers:
		return bad("full_attention_every", s.FullAttentionEvery, fmt.Sprintf("0 or 1 (every layer softmax attention) up to layers (%d)", s.Layers))
	case s.FullAttentionEvery <= 1:
		return allZero(bad, "without linear attention (set full_attention_every above 1 for it)", fields...)
	case s.MLA():
		return bad("full_attention_every", s.FullAttentionEvery, "0 or 1 with latent attention")
	}
	for _, f := range fields {
		if f.v < 1 || f.v > 1<<16 {
			return bad(f.name, f.v, "1 to 65536 with linear attention")
		}
	}
	if s.LinearValueHeads%s.LinearKeyHeads != 0 {
		return bad("linear_value_heads", s.LinearValueHeads, fmt.Sprintf("a multiple of linear_key_heads (%d)", s.LinearKeyHeads))
	}
	return nil
}

// Hybrid reports whether some layers have linear attention.
func (s Spec) Hybrid() bool { return s.FullAttentionEvery > 1 }

// AttentionLayers counts the layers with softmax attention (and a KV
// cache): every FullAttentionEvery-th layer of a hybrid model, else all.
func (s Spec) AttentionLayers() int {
	if !s.Hybrid() {
		return s.Layers
	}
	return s.Layers / s.FullAttentionEvery
}

// LinearLayers counts the layers with linear attention.
func (s Spec) LinearLayers() int { return s.Layers - s.AttentionLayers() }

// LinearConvChannels is the channels of a linear-attention layer's
// causal convolution: its queries, keys and values.
func (s Spec) LinearConvChannels() int {
	return 2*s.LinearKeyHeads*s.LinearKeyHeadDim + s.LinearValueHeads*s.LinearValueHeadDim
}

// linearMatmul is one linear-attention layer's projection parameters:
// d_model to queries, keys, values, the output gate and the decay and
// update rates, and the value heads back to d_model.
func (s Spec) linearMatmul() int64 {
	d, v := int64(s.DModel), int64(s.LinearValueHeads*s.LinearValueHeadDim)
	return d*(int64(2*s.LinearKeyHeads*s.LinearKeyHeadDim)+2*v+int64(2*s.LinearValueHeads)) + v*d
}

// LinearAttentionFLOPsPerToken is the forward FLOPs a token's gated delta
// rule takes over all linear-attention layers, outside the projections:
// per value head, the state's product with the key, its rank-one update
// and its product with the query, each 2·key dim·value dim (Yang et al.
// 2024, arXiv 2412.06464, eq. 10, in its recurrent form), and the
// convolution's 2·taps a channel. 0 without linear attention.
func (s Spec) LinearAttentionFLOPsPerToken() float64 {
	if !s.Hybrid() {
		return 0
	}
	state := 3 * 2 * float64(s.LinearValueHeads) * float64(s.LinearKeyHeadDim) * float64(s.LinearValueHeadDim)
	conv := 2 * float64(s.LinearConvKernel) * float64(s.LinearConvChannels())
	return float64(s.LinearLayers()) * (state + conv)
}
