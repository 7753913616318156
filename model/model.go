// Package model describes decoder-only transformers: their shape, parameter
// count and training FLOPs per token, with a catalog of published models and a
// parser for user specs written in YAML or JSON.
package model

import "cmp"

// Spec is a decoder-only transformer.
type Spec struct {
	Name   string `yaml:"name" json:"name"`
	Layers int    `yaml:"layers" json:"layers"`
	DModel int    `yaml:"d_model" json:"d_model"`
	Heads  int    `yaml:"heads" json:"heads"`
	// KVHeads is the number of key/value heads (grouped-query attention);
	// 0 means Heads (multi-head attention).
	KVHeads int `yaml:"kv_heads,omitempty" json:"kv_heads,omitempty"`
	// HeadDim is the width of one head; 0 means DModel/Heads.
	HeadDim int `yaml:"head_dim,omitempty" json:"head_dim,omitempty"`
	DFF     int `yaml:"d_ff" json:"d_ff"`
	Vocab   int `yaml:"vocab" json:"vocab"`
	SeqLen  int `yaml:"seq_len" json:"seq_len"`
	// MaxPositions is the longest sequence the released checkpoint
	// serves: its config.json's max_position_embeddings (or the context
	// its model card gives), which vLLM's max_model_len may not exceed.
	// SeqLen, the length the model is described and trained at, may be
	// shorter. 0 where it is not recorded: MaxContext is then SeqLen.
	MaxPositions int `yaml:"max_position_embeddings,omitempty" json:"max_position_embeddings,omitempty"`
	// AttentionChunk is Llama 4's chunked attention (HF config.json
	// attention_chunk_size): its RoPE layers, 3 in 4, attend only within
	// aligned chunks of that many tokens (model/chunk.go). Training costs
	// those layers at the chunk (FLOPsPerToken); inference does not
	// model it, and warns beyond one chunk. 0: none.
	AttentionChunk int `yaml:"attention_chunk_size,omitempty" json:"attention_chunk_size,omitempty"`
	// GatedMLP: SwiGLU/GeGLU with three d_model x d_ff matrices instead of two.
	GatedMLP bool `yaml:"gated_mlp" json:"gated_mlp"`
	// TiedEmbeddings: the output projection reuses the input embedding.
	TiedEmbeddings bool `yaml:"tied_embeddings" json:"tied_embeddings"`
	// LearnedPositions: a learned SeqLen x DModel position embedding (GPT-3).
	LearnedPositions bool `yaml:"learned_positions,omitempty" json:"learned_positions,omitempty"`
	// Biases: linear layers carry biases (GPT-3).
	Biases bool `yaml:"biases,omitempty" json:"biases,omitempty"`
	// LayerNorm: norms carry a bias as well as a scale; otherwise RMSNorm.
	LayerNorm bool `yaml:"layer_norm,omitempty" json:"layer_norm,omitempty"`
	// NormsPerLayer is 2 (pre-attention, pre-MLP) unless a model adds
	// post-norms (Gemma 2 has 4); 0 means 2.
	NormsPerLayer int `yaml:"norms_per_layer,omitempty" json:"norms_per_layer,omitempty"`
	// ParallelBlock: attention and the MLP read the same normed input and
	// both outputs are added to the residual stream at once, x + Attn(n(x))
	// + MLP(n(x)) (GPT-J; PaLM, Chowdhery et al. 2022 §2, "Parallel
	// Layers"; MaxText's default decoder layer in 2023, MaxText/layers.py),
	// instead of the MLP reading the attention's output. Such a layer has
	// one norm (NormsPerLayer 1).
	ParallelBlock bool `yaml:"parallel_block,omitempty" json:"parallel_block,omitempty"`

	// Mixture of experts. Experts > 0 makes the MLP of the MoE layers a
	// routed mixture: a router (a d_model x Experts matmul), Experts routed
	// experts of width ExpertDFF (0 means DFF), of which ExpertsPerToken run
	// for each token, and SharedExperts experts of the same width that every
	// token runs. The first FirstDenseLayers layers keep a dense MLP of width
	// DFF; after them every MoEEvery-th layer is MoE (0 or 1: every layer;
	// 2: every second, as Llama 4 Maverick) and the others dense.
	Experts         int `yaml:"experts,omitempty" json:"experts,omitempty"`
	ExpertsPerToken int `yaml:"experts_per_token,omitempty" json:"experts_per_token,omitempty"`
	SharedExperts   int `yaml:"shared_experts,omitempty" json:"shared_experts,omitempty"`
	ExpertDFF       int `yaml:"expert_d_ff,omitempty" json:"expert_d_ff,omitempty"`
	// SharedExpertDFF is the width of each shared expert when it is not
	// the routed experts' (0: ExpertDFF): Gemma 4 26B-A4B runs a dense
	// MLP of d_ff beside its routed experts (MaxText's
	// get_shared_expert_mlp_dim).
	SharedExpertDFF  int `yaml:"shared_expert_d_ff,omitempty" json:"shared_expert_d_ff,omitempty"`
	FirstDenseLayers int `yaml:"first_dense_layers,omitempty" json:"first_dense_layers,omitempty"`
	MoEEvery         int `yaml:"moe_every,omitempty" json:"moe_every,omitempty"`
	// ScanBlock is the decoder layers MaxText scans and rematerialises as
	// one unit when they are not all alike: its llama4 block runs
	// inhomogeneous_layer_cycle_interval layers (4: dense and MoE, RoPE
	// and NoPE interleaved) inside one jax.checkpoint, and its qwen3_5
	// block 4 (three Gated DeltaNet layers, then one of softmax
	// attention; model/block.go). 0 or 1: each layer is its own unit.
	ScanBlock int `yaml:"scan_block,omitempty" json:"scan_block,omitempty"`
	// UntaggedLayerInput says MaxText's decoder layers of the model name
	// no decoder_layer_input (checkpoint_name), the name a remat policy
	// keeps each layer's input by: Qwen 3.5's (TagsLayerInput).
	UntaggedLayerInput bool `yaml:"untagged_layer_input,omitempty" json:"untagged_layer_input,omitempty"`
	// MTPLayers is the modules of multi-token prediction trained beside
	// the model (DeepSeek-AI 2024, arXiv 2412.19437 §2.2; MaxText's
	// mtp_num_layers, 0 by default): each predicts one token further
	// through its own decoder layer of the model's last layer type and
	// the shared output layer (MaxText layers/multi_token_prediction.py
	// @e591f30c). Training only: serving ignores it.
	MTPLayers int `yaml:"mtp_layers,omitempty" json:"mtp_layers,omitempty"`

	// Multi-head latent attention (DeepSeek-V2 and V3: DeepSeek-AI 2024,
	// arXiv 2405.04434 §2.1) when KVLoRARank > 0: keys and values are
	// projected down to a KVLoRARank latent (plus a QKRopeHeadDim rotary
	// key shared by the heads), normed, and up to Heads keys of HeadDim +
	// QKRopeHeadDim and values of VHeadDim; queries likewise through a
	// QLoRARank latent (0: a direct d_model projection). HeadDim is then
	// the no-rope part of a query/key head (MaxText's qk_nope_head_dim).
	QLoRARank     int `yaml:"q_lora_rank,omitempty" json:"q_lora_rank,omitempty"`
	KVLoRARank    int `yaml:"kv_lora_rank,omitempty" json:"kv_lora_rank,omitempty"`
	QKRopeHeadDim int `yaml:"qk_rope_head_dim,omitempty" json:"qk_rope_head_dim,omitempty"`
	VHeadDim      int `yaml:"v_head_dim,omitempty" json:"v_head_dim,omitempty"`

	// Hybrid linear attention (Qwen3-Next and Qwen3.5: Gated DeltaNet,
	// Yang et al. 2024, arXiv 2412.06464) when FullAttentionEvery > 1: of
	// each FullAttentionEvery layers the last has softmax attention (the
	// Heads, KVHeads and HeadDim above, with a KV cache) and the others a
	// gated delta rule over LinearKeyHeads key heads of LinearKeyHeadDim
	// and LinearValueHeads value heads of LinearValueHeadDim, after a
	// causal convolution of LinearConvKernel taps: a fixed-size recurrent
	// state per sequence instead of keys and values per token. Such a
	// layer projects d_model to queries and keys (2·key heads·key dim),
	// values and their output gate (2·value heads·value dim) and the
	// decay and update rates (2 a value head), and its value heads back
	// to d_model. AttentionOutputGate: the softmax layers' query
	// projection also yields a gate for each head's output (twice as
	// wide). HF config.json: full_attention_interval, linear_num_key_heads,
	// linear_key_head_dim, linear_num_value_heads, linear_value_head_dim,
	// linear_conv_kernel_dim, attn_output_gate.
	FullAttentionEvery  int  `yaml:"full_attention_every,omitempty" json:"full_attention_every,omitempty"`
	LinearKeyHeads      int  `yaml:"linear_key_heads,omitempty" json:"linear_key_heads,omitempty"`
	LinearKeyHeadDim    int  `yaml:"linear_key_head_dim,omitempty" json:"linear_key_head_dim,omitempty"`
	LinearValueHeads    int  `yaml:"linear_value_heads,omitempty" json:"linear_value_heads,omitempty"`
	LinearValueHeadDim  int  `yaml:"linear_value_head_dim,omitempty" json:"linear_value_head_dim,omitempty"`
	LinearConvKernel    int  `yaml:"linear_conv_kernel,omitempty" json:"linear_conv_kernel,omitempty"`
	AttentionOutputGate bool `yaml:"attention_output_gate,omitempty" json:"attention_output_gate,omitempty"`

	// Local and global attention (Gemma 2, 3 and 4) when SlidingWindow >
	// 0: of each GlobalAttentionEvery layers the last attends over the
	// whole context (global) and the others over the last SlidingWindow
	// positions (local: a query at position p sees keys p−window+1 … p).
	// Heads, KVHeads and HeadDim above are the local layers'; the global
	// layers have GlobalKVHeads KV heads (0: KVHeads) of GlobalHeadDim
	// (0: HeadDim), queries included, and with GlobalKeyAsValue one
	// projection whose output serves as both key and value (no value
	// projection). HF config.json: sliding_window, layer_types,
	// num_global_key_value_heads, global_head_dim, attention_k_eq_v
	// (MaxText: sliding_window_size, global_num_kv_heads,
	// global_head_dim, share_kv_projections).
	SlidingWindow        int  `yaml:"sliding_window,omitempty" json:"sliding_window,omitempty"`
	GlobalAttentionEvery int  `yaml:"global_attention_every,omitempty" json:"global_attention_every,omitempty"`
	GlobalKVHeads        int  `yaml:"global_kv_heads,omitempty" json:"global_kv_heads,omitempty"`
	GlobalHeadDim        int  `yaml:"global_head_dim,omitempty" json:"global_head_dim,omitempty"`
	GlobalKeyAsValue     bool `yaml:"global_key_as_value,omitempty" json:"global_key_as_value,omitempty"`
	// Published is the parameter count its authors give (0 if none), and
	// Source where it is given; PublishedActive the parameters a token
	// uses, for a mixture of experts.
	Published       int64  `yaml:"published_params,omitempty" json:"published_params,omitempty"`
	PublishedActive int64  `yaml:"published_active_params,omitempty" json:"published_active_params,omitempty"`
	Source          string `yaml:"source,omitempty" json:"source,omitempty"`
	// HFModel is the Hugging Face repository that holds the model's
	// weights, owner/name, as vllm serve and transformers name it (e.g.
	// meta-llama/Meta-Llama-3-70B); empty when there is no official one.
	HFModel string `yaml:"hf_model,omitempty" json:"hf_model,omitempty"`
	// HFDtype is the format HFModel's checkpoint stores its weights in
	// where it is not bf16 (fp8), and HFDtypeSource where that is
	// given; empty: bf16, or not recorded.
	HFDtype       string `yaml:"hf_dtype,omitempty" json:"hf_dtype,omitempty"`
	HFDtypeSource string `yaml:"hf_dtype_source,omitempty" json:"hf_dtype_source,omitempty"`
}

// MoE reports whether the model has mixture-of-experts layers.
func (s Spec) MoE() bool { return s.Experts > 0 }

// MLA reports whether attention is multi-head latent attention.
func (s Spec) MLA() bool { return s.KVLoRARank > 0 }

// ExpertFF is the width of one expert's MLP.
func (s Spec) ExpertFF() int { return cmp.Or(s.ExpertDFF, s.DFF) }

// SharedFF is the width of one shared expert's MLP.
func (s Spec) SharedFF() int { return cmp.Or(s.SharedExpertDFF, s.ExpertFF()) }

func (s Spec) moeEvery() int { return max(s.MoEEvery, 1) }

// IsMoELayer reports whether layer i (from 0) is a mixture of experts:
// after the first dense layers, every MoEEvery-th one, counting so that
// with MoEEvery 2 the second, fourth, … are (Hugging Face's Llama 4
// moe_layers: range(step-1, layers, step)).
func (s Spec) IsMoELayer(i int) bool {
	if !s.MoE() || i < s.FirstDenseLayers || i >= s.Layers {
		return false
	}
	k := s.moeEvery()
	return (i-s.FirstDenseLayers)%k == k-1
}

// MTPLayer is the decoder layer of one multi-token prediction module, as
// a one-layer model: MaxText builds it from the blueprint of the model's
// last layer (models/models.py, layer_types[-1], @e591f30c), a mixture of
// experts when the last layer is one.
func (s Spec) MTPLayer() Spec {
	l := s
	moe := s.IsMoELayer(s.Layers - 1)
	l.Layers, l.FirstDenseLayers, l.MoEEvery, l.MTPLayers, l.ScanBlock = 1, 0, 1, 0, 0
	if !moe {
		l.Experts, l.ExpertsPerToken, l.SharedExperts, l.ExpertDFF, l.SharedExpertDFF = 0, 0, 0, 0, 0
	}
	return l
}

// MTPProjection is the parameters of a multi-token prediction module
// beside its decoder layer: the projection of the normed embedding and
// hidden state, concatenated, back to d_model (2·d_model × d_model, no
// bias) and the two RMSNorm scales (layers/multi_token_prediction.py,
// MultiTokenPredictionLayer.__init__, @e591f30c).
func (s Spec) MTPProjection() int64 {
	d := int64(s.DModel)
	return 2*d*d + 2*d
}

// MTPMatmulParams is the matmul parameters a training token uses in the
// multi-token prediction modules: each module's decoder layer (the active
// ones of a mixture of experts, with its router), its projection
// (2·d_model × d_model) and the shared output layer, which each module
// runs again (layers/multi_token_prediction.py @e591f30c,
// MultiTokenPredictionLayer.__call__ and MultiTokenPredictionBlock.
// __call__: decoder.apply_output_head). 0 without MTP.
func (s Spec) MTPMatmulParams() int64 {
	if s.MTPLayers == 0 {
		return 0
	}
	d := int64(s.DModel)
	return int64(s.MTPLayers) * (s.MTPLayer().MatmulParams() + 2*d*d)
}

// MTPFLOPsPerToken is the model FLOPs a training token adds through the
// multi-token prediction modules as MaxText counts them
// (utils/maxtext_utils.py calculate_tflops_training_per_device
// @e591f30c): each module's decoder layer, its matmuls and its attention,
// forward and backward; not the projection nor the shared output layer
// it runs again. 0 without MTP.
func (s Spec) MTPFLOPsPerToken(seq int, causal bool) float64 {
	if s.MTPLayers == 0 {
		return 0
	}
	out := float64(s.OutputMatmulParams())
	return float64(s.MTPLayers) * (s.MTPLayer().FLOPsPerToken(seq, causal) - 6*out)
}

// MoELayers counts the mixture-of-experts layers.
func (s Spec) MoELayers() int {
	if !s.MoE() {
		return 0
	}
	return (s.Layers - s.FirstDenseLayers) / s.moeEvery()
}

// QKHead is the width of one query/key head: Head, plus the rotary part
// under latent attention.
func (s Spec) QKHead() int { return s.Head() + s.QKRopeHeadDim }

// VHead is the width of one value head: Head unless latent attention sets
// its own.
func (s Spec) VHead() int {
	if s.VHeadDim > 0 {
		return s.VHeadDim
	}
	return s.Head()
}

// KV is the number of key/value heads.
func (s Spec) KV() int { return cmp.Or(s.KVHeads, s.Heads) }

// MaxContext is the longest sequence the model serves: MaxPositions, or
// SeqLen where that is not recorded.
func (s Spec) MaxContext() int { return cmp.Or(s.MaxPositions, s.SeqLen) }

// Head is the width of one attention head.
func (s Spec) Head() int {
	if s.HeadDim == 0 {
		return s.DModel / s.Heads
	}
	return s.HeadDim
}

// Norms is the number of norms per layer.
func (s Spec) Norms() int {
	if s.NormsPerLayer == 0 {
		return 2
	}
	return s.NormsPerLayer
}

// Params breaks the parameter count down by where the parameters live.
type Params struct {
	Embedding int64 // input token embedding (and learned positions)
	Output    int64 // untied output projection; 0 when tied
	Attention int64 // per layer: Q, K, V, O (and their biases; MLA's latent norms)
	// LinearAttention is one linear-attention layer's attention
	// parameters (projections, convolution, decay, norm), LinearLayers
	// how many there are; their blocks count these instead of Attention.
	LinearAttention int64
	LinearLayers    int
	// GlobalAttention is one global layer's attention parameters and
	// GlobalLayers how many there are, when some layers attend over a
	// sliding window (Attention is then the local layers'); their blocks
	// count these instead of Attention.
	GlobalAttention int64
	GlobalLayers    int
	MLP             int64 // per dense layer
	Norms           int64 // per layer
	FinalNorm       int64
	Layers          int

	// A mixture of experts, per MoE layer: the router, one routed expert,
	// how many there are and how many a token runs, and the shared experts
	// (all of them).
	MoELayers     int
	Router        int64
	Expert        int64
	Experts       int
	ActiveExperts int
	Shared        int64
}

// DenseLayers counts the layers with a dense MLP.
func (p Params) DenseLayers() int { return p.Layers - p.MoELayers }

// PerLayer is the parameter count of one dense transformer block.
func (p Params) PerLayer() int64 { return p.Attention + p.MLP + p.Norms }

// PerMoELayer is the parameter count of one MoE block, every expert in.
func (p Params) PerMoELayer() int64 {
	return p.Attention + p.Norms + p.Router + int64(p.Experts)*p.Expert + p.Shared
}

// ActivePerMoELayer is the parameters of one MoE block that a token uses.
func (p Params) ActivePerMoELayer() int64 {
	return p.Attention + p.Norms + p.Router + int64(p.ActiveExperts)*p.Expert + p.Shared
}

// Blocks is the parameter count of all transformer blocks.
func (p Params) Blocks() int64 {
	return int64(p.DenseLayers())*p.PerLayer() + int64(p.MoELayers)*p.PerMoELayer() + p.linearDelta() + p.globalDelta()
}

// linearDelta is what the linear-attention layers' attention adds to a
// count that gave every layer softmax attention.
func (p Params) linearDelta() int64 { return int64(p.LinearLayers) * (p.LinearAttention - p.Attention) }

// globalDelta is what the global layers' attention adds to a count that
// gave every layer the local layers' attention.
func (p Params) globalDelta() int64 { return int64(p.GlobalLayers) * (p.GlobalAttention - p.Attention) }

// Total is the model's parameter count.
func (p Params) Total() int64 {
	return p.Embedding + p.Output + p.FinalNorm + p.Blocks()
}

// Active is the parameters one token uses: Total with only the routed
// experts it runs (the count MoE papers publish as "activated").
func (p Params) Active() int64 {
	return p.Embedding + p.Output + p.FinalNorm + int64(p.DenseLayers())*p.PerLayer() + int64(p.MoELayers)*p.ActivePerMoELayer() + p.linearDelta() + p.globalDelta()
}

// attentionMatmul is one block's attention projection parameters (all
// matmuls).
func (s Spec) attentionMatmul() int64 {
	d, h := int64(s.DModel), int64(s.Heads)
	if !s.MLA() {
		q, kv := h*int64(s.Head()), int64(s.KV()*s.Head())
		if s.AttentionOutputGate {
			return 3*d*q + 2*d*kv // the query projection yields the gate too
		}
		return 2*d*q + 2*d*kv
	}
	qk, v := h*int64(s.QKHead()), h*int64(s.VHead())
	query := d * qk
	if s.QLoRARank > 0 {
		query = d*int64(s.QLoRARank) + int64(s.QLoRARank)*qk
	}
	kvl := int64(s.KVLoRARank)
	keyValue := d*(kvl+int64(s.QKRopeHeadDim)) + kvl*h*int64(s.Head()+s.VHead())
	return query + keyValue + v*d
}

// MLPInputs is the d_model × d_ff matrices an MLP (or expert) reads its
// input through: gate and up in a gated MLP (SwiGLU, GeGLU), up alone
// otherwise. One down projection follows them.
func (s Spec) MLPInputs() int {
	if s.GatedMLP {
		return 2
	}
	return 1
}

// mlpMatmul is the matmul parameters of one MLP (or expert) of width f.
func (s Spec) mlpMatmul(f int) int64 {
	return int64(s.MLPInputs()+1) * int64(s.DModel) * int64(f)
}

// mlpBiases is the bias parameters of one MLP (or expert) of width f.
func (s Spec) mlpBiases(f int) int64 {
	if !s.Biases {
		return 0
	}
	return int64(s.MLPInputs())*int64(f) + int64(s.DModel)
}

// ParamCount counts the parameters of the spec.
func (s Spec) ParamCount() Params {
	d, v := int64(s.DModel), int64(s.Vocab)
	p := Params{Layers: s.Layers}
	p.Embedding = v * d
	if s.LearnedPositions {
		p.Embedding += int64(s.SeqLen) * d
	}
	if !s.TiedEmbeddings {
		p.Output = v * d
	}
	p.Attention = s.attentionMatmul()
	if s.MLA() {
		p.Attention += int64(s.QLoRARank + s.KVLoRARank) // the latents' RMSNorm scales
	}
	if s.Biases {
		p.Attention += int64(s.Heads*s.QKHead()+2*s.KV()*s.Head()) + d
	}
	if s.Hybrid() {
		// projections, the convolution's taps, each value head's decay
		// and its time-step bias, the gated output norm's scale
		p.LinearLayers = s.LinearLayers()
		p.LinearAttention = s.linearMatmul() + int64(s.LinearConvKernel*s.LinearConvChannels()) +
			int64(2*s.LinearValueHeads) + int64(s.LinearValueHeadDim)
	}
	if s.Windowed() {
		p.GlobalLayers, p.GlobalAttention = s.GlobalLayers(), s.globalAttentionMatmul()
		if s.Biases {
			g := s.Global()
			p.GlobalAttention += int64(g.Heads*g.QKHead()+2*g.KV()*g.Head()) + d
		}
	}
	p.MLP = s.mlpMatmul(s.DFF) + s.mlpBiases(s.DFF)
	norm := d
	if s.LayerNorm {
		norm = 2 * d
	}
	p.Norms = int64(s.Norms()) * norm
	p.FinalNorm = norm
	if s.MoE() {
		f := s.ExpertFF()
		p.MoELayers = s.MoELayers()
		p.Router = d * int64(s.Experts)
		if s.Biases {
			p.Router += int64(s.Experts)
		}
		p.Expert = s.mlpMatmul(f) + s.mlpBiases(f)
		p.Experts, p.ActiveExperts = s.Experts, s.ExpertsPerToken
		p.Shared = int64(s.SharedExperts) * (s.mlpMatmul(s.SharedFF()) + s.mlpBiases(s.SharedFF()))
	}
	return p
}

// LargestMatrix is the parameter count of a block's largest weight matrix
// (Q, K, V, O or one MLP or expert projection; MaxText keeps them separate
// unless fused_qkv or fused_mlp is set): the granularity at which XLA
// gathers FSDP-sharded weights and reduce-scatters their gradients. An MoE
// layer's experts are stacked into one tensor per projection; this counts
// one expert's matrix, and the cost model scales it by the experts a chip
// holds.
func (s Spec) LargestMatrix() int64 {
	d := int64(s.DModel)
	h := int64(s.Heads)
	m := d * max(h*int64(s.QKHead()), int64(s.KV()*s.Head()), h*int64(s.VHead()))
	if !s.MoE() || s.MoELayers() < s.Layers {
		m = max(m, d*int64(s.DFF))
	}
	if s.MoE() {
		m = max(m, d*int64(s.ExpertFF()), d*int64(s.SharedFF()))
	}
	if s.Windowed() {
		g := s.Global()
		m = max(m, d*max(h*int64(g.QKHead()), int64(g.KV()*g.Head()), h*int64(g.VHead())))
	}
	if s.MLA() {
		m = max(m, int64(max(s.QLoRARank, s.KVLoRARank))*h*int64(max(s.QKHead(), s.Head()+s.VHead())))
	}
	if s.Hybrid() {
		m = max(m, d*int64(s.LinearConvChannels())) // the queries, keys and values of a linear-attention layer
	}
	return m
}

// OutputMatmulParams is the output (unembedding) projection's weights
// that a token multiplies, vocab × d_model, whether the projection is its
// own matrix or the tied embedding's.
func (s Spec) OutputMatmulParams() int64 { return int64(s.Vocab) * int64(s.DModel) }

// MatmulParams counts the weights that take part in a matrix multiply per
// token: every block's projection matrices (for an MoE layer the router,
// the routed experts a token runs and the shared experts) and the output
// (unembedding) projection, tied or not. Embedding lookups, norms and
// biases are not matmuls.
func (s Spec) MatmulParams() int64 {
	d := int64(s.DModel)
	moe := int64(s.MoELayers())
	dense := int64(s.Layers) - moe
	n := int64(s.LocalLayers())*s.attentionMatmul() + int64(s.GlobalLayers())*s.globalAttentionMatmul() +
		int64(s.LinearLayers())*s.linearMatmul() + dense*s.mlpMatmul(s.DFF) + s.OutputMatmulParams()
	if s.MoE() {
		n += moe * (d*int64(s.Experts) + int64(s.ExpertsPerToken)*s.mlpMatmul(s.ExpertFF()) + int64(s.SharedExperts)*s.mlpMatmul(s.SharedFF()))
	}
	return n
}

// attentionWidth is H·(Q_k + Q_v)/2 summed over the heads: the PaLM
// formula's H·Q when keys and values are as wide as each other.
func (s Spec) attentionWidth() float64 {
	return float64(s.Heads) * float64(s.QKHead()+s.VHead()) / 2
}

// FLOPsPerToken is the model FLOPs of one training token (forward and
// backward, no rematerialisation) at sequence length seq: 6 per matmul
// parameter a token uses (for a mixture of experts, the active ones, as
// MaxText counts MFU) plus the attention scores and weighted sum,
// 12·L·H·Q·T (PaLM, Chowdhery et al. 2022, App. B; with latent attention
// Q is the mean of the key and value head widths, 6·L·H·(Q_k+Q_v)·T).
// With causal set the attention term is halved, as MaxText counts it since
// its PR 2031.
//
// A local layer's keys stop at its window (attentionKeys), a chunked
// layer's at its chunk (chunkKeys), as MaxText counts them.
//
// Of a hybrid model only the softmax layers attend over the sequence;
// the linear-attention layers add 3 × LinearAttentionFLOPsPerToken
// (forward and backward). Multi-token prediction adds MTPFLOPsPerToken.
func (s Spec) FLOPsPerToken(seq int, causal bool) float64 {
	attn := 12 * float64(s.AttentionLayers()) * s.attentionWidth() * float64(seq)
	if causal {
		attn /= 2
	}
	if s.Windowed() || s.Chunked() {
		attn = 12 * s.attentionKeys(seq, causal)
	}
	return 6*float64(s.MatmulParams()) + attn + 3*s.LinearAttentionFLOPsPerToken() + s.MTPFLOPsPerToken(seq, causal)
}

// AttentionFLOPsPerToken is the forward FLOPs of the attention core
// (scores and weighted sum, 4·H·Q·T per softmax layer) per token, the
// work that selective rematerialisation repeats.
func (s Spec) AttentionFLOPsPerToken(seq int) float64 {
	if s.Windowed() || s.Chunked() {
		return 4 * s.attentionKeys(seq, false)
	}
	return 4 * float64(s.AttentionLayers()) * s.attentionWidth() * float64(seq)
}

// Summary is a spec with what shardlab computes from it: the parameter
// count by place and the training FLOPs per token, next to the count its
// authors publish.
type Summary struct {
	Spec
	Params            int64 `json:"params"`
	ActiveParams      int64 `json:"active_params"`
	MoELayers         int   `json:"moe_layers,omitempty"`
	ParamsPerMoELayer int64 `json:"params_per_moe_layer,omitempty"`
	RouterPerLayer    int64 `json:"router_params_per_moe_layer,omitempty"`
	ExpertParams      int64 `json:"params_per_expert,omitempty"`
	EmbeddingParams   int64 `json:"embedding_params"`
	OutputParams      int64 `json:"output_params"`
	ParamsPerLayer    int64 `json:"params_per_layer"`
	AttentionPerLayer int64 `json:"attention_params_per_layer"`
	MLPPerLayer       int64 `json:"mlp_params_per_layer"`
	NormsPerLayerP    int64 `json:"norm_params_per_layer"`
	// LinearLayers and LinearAttentionPerLayer are a hybrid model's
	// linear-attention layers and the attention parameters of each (they
	// count these instead of AttentionPerLayer).
	LinearLayers            int   `json:"linear_attention_layers,omitempty"`
	LinearAttentionPerLayer int64 `json:"linear_attention_params_per_layer,omitempty"`
	// GlobalLayers and GlobalAttentionPerLayer are the global layers of a
	// model with a sliding window and the attention parameters of each
	// (they count these instead of AttentionPerLayer, then the local
	// layers').
	GlobalLayers            int     `json:"global_attention_layers,omitempty"`
	GlobalAttentionPerLayer int64   `json:"global_attention_params_per_layer,omitempty"`
	MatmulParams            int64   `json:"matmul_params"`
	FLOPsPerToken           float64 `json:"training_flops_per_token"`
	FLOPsPerTokenCaus       float64 `json:"training_flops_per_token_causal"`
	// PublishedError is (computed − published) / published, when a count
	// is published; PublishedActiveError likewise for the active count.
	PublishedError       *float64 `json:"published_params_error,omitempty"`
	PublishedActiveError *float64 `json:"published_active_params_error,omitempty"`
}

// Summarize computes the summary at the spec's sequence length.
func (s Spec) Summarize() Summary {
	p := s.ParamCount()
	out := Summary{
		Spec: s, Params: p.Total(), ActiveParams: p.Active(), EmbeddingParams: p.Embedding,
		MoELayers: p.MoELayers, RouterPerLayer: p.Router, ExpertParams: p.Expert, OutputParams: p.Output,
		ParamsPerLayer: p.PerLayer(), AttentionPerLayer: p.Attention, MLPPerLayer: p.MLP, NormsPerLayerP: p.Norms,
		LinearLayers: p.LinearLayers, LinearAttentionPerLayer: p.LinearAttention,
		GlobalLayers: p.GlobalLayers, GlobalAttentionPerLayer: p.GlobalAttention,
		MatmulParams: s.MatmulParams(), FLOPsPerToken: s.FLOPsPerToken(s.SeqLen, false), FLOPsPerTokenCaus: s.FLOPsPerToken(s.SeqLen, true),
	}
	if p.MoELayers > 0 {
		out.ParamsPerMoELayer = p.PerMoELayer()
	}
	if s.Published > 0 {
		e := float64(p.Total()-s.Published) / float64(s.Published)
		out.PublishedError = &e
	}
	if s.PublishedActive > 0 {
		e := float64(p.Active()-s.PublishedActive) / float64(s.PublishedActive)
		out.PublishedActiveError = &e
	}
	return out
}
