// Package model describes decoder-only transformers: their shape, parameter
// count and training FLOPs per token, with a catalog of published models and a
// parser for user specs written in YAML or JSON.
package model

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

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
	Experts          int `yaml:"experts,omitempty" json:"experts,omitempty"`
	ExpertsPerToken  int `yaml:"experts_per_token,omitempty" json:"experts_per_token,omitempty"`
	SharedExperts    int `yaml:"shared_experts,omitempty" json:"shared_experts,omitempty"`
	ExpertDFF        int `yaml:"expert_d_ff,omitempty" json:"expert_d_ff,omitempty"`
	FirstDenseLayers int `yaml:"first_dense_layers,omitempty" json:"first_dense_layers,omitempty"`
	MoEEvery         int `yaml:"moe_every,omitempty" json:"moe_every,omitempty"`

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
}

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid model spec")

// FieldError names the spec field that is wrong, its value and what is
// accepted.
type FieldError struct {
	Model string
	Field string
	Value string
	Want  string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("model: %s: field %s = %s, want %s", e.Model, e.Field, e.Value, e.Want)
}

func (e *FieldError) Unwrap() error { return ErrInvalid }

// Validate checks that the spec describes a buildable transformer, named
// in printable text.
func (s Spec) Validate() error {
	if err := s.validateText(); err != nil {
		return err
	}
	name := s.Name
	if name == "" {
		name = "(unnamed)"
	}
	bad := func(field string, v int, want string) error {
		return &FieldError{Model: name, Field: field, Value: fmt.Sprint(v), Want: want}
	}
	const limit = 1 << 24
	for _, f := range []struct {
		name string
		v    int
	}{{"layers", s.Layers}, {"d_model", s.DModel}, {"heads", s.Heads}, {"d_ff", s.DFF}, {"vocab", s.Vocab}, {"seq_len", s.SeqLen}} {
		if f.v <= 0 || f.v > limit {
			return bad(f.name, f.v, fmt.Sprintf("a positive integer up to %d", limit))
		}
	}
	if s.KVHeads < 0 || s.KVHeads > s.Heads || (s.KVHeads > 0 && s.Heads%s.KVHeads != 0) {
		return bad("kv_heads", s.KVHeads, fmt.Sprintf("0 (= heads) or a divisor of heads (%d)", s.Heads))
	}
	if s.HeadDim < 0 || s.HeadDim > limit {
		return bad("head_dim", s.HeadDim, "0 (= d_model/heads) or a positive integer")
	}
	if s.HeadDim == 0 && s.DModel%s.Heads != 0 {
		return bad("head_dim", s.HeadDim, fmt.Sprintf("a value, since d_model (%d) is not a multiple of heads (%d)", s.DModel, s.Heads))
	}
	if s.NormsPerLayer < 0 || s.NormsPerLayer > 8 {
		return bad("norms_per_layer", s.NormsPerLayer, "0 (= 2) up to 8")
	}
	if err := s.validateMoE(bad); err != nil {
		return err
	}
	if err := s.validateMLA(bad); err != nil {
		return err
	}
	if err := s.validateLinear(bad); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"published_params", s.Published}, {"published_active_params", s.PublishedActive}} {
		if f.v < 0 {
			return &FieldError{Model: name, Field: f.name, Value: fmt.Sprint(f.v), Want: "0 or a positive count"}
		}
	}
	return nil
}

// validateText checks the text fields, name and source: what a terminal
// or a page prints must be text, not control characters (NUL, escape
// sequences), format characters (U+202E, the right-to-left override, which
// turns what follows around; zero-width ones), line or paragraph
// separators, or bytes that are not UTF-8.
func (s Spec) validateText() error {
	model := s.Name
	for _, f := range []struct{ name, v string }{{"name", s.Name}, {"source", s.Source}} {
		if f.name == "name" {
			model = strconv.QuoteToASCII(s.Name) // not printed raw while refused
		}
		if why := NotText(f.v); why != "" {
			return &FieldError{Model: model, Field: f.name, Value: strconv.QuoteToASCII(f.v), Want: "printable text: " + why}
		}
		model = s.Name
	}
	if s.HFModel != "" && !hfRepo(s.HFModel) || strings.Contains(s.HFModel, "--") || strings.Contains(s.HFModel, "..") {
		return &FieldError{Model: strconv.QuoteToASCII(s.Name), Field: "hf_model", Value: strconv.QuoteToASCII(s.HFModel),
			Want: "a Hugging Face repository id owner/name (letters, digits, '-', '_' and '.', each part 1 to 96 long, starting and ending with a letter or digit, no '--' or '..')"}
	}
	return nil
}

// hfRepo reports whether id is a Hugging Face repository id as
// huggingface_hub's validate_repo_id accepts it (REPO_ID_REGEX in
// utils/_validators.py: word characters, '-' and '.', a name of 1 to 96,
// no '--' or '..', which the caller checks), with the owner required and
// ASCII letters only: owner/name, each part 1 to 96 of letters, digits,
// '.', '_' and '-', starting and ending with a letter or digit. (A loop,
// not a regular expression: Validate runs on every estimate.)
func hfRepo(id string) bool {
	owner, name, ok := strings.Cut(id, "/")
	return ok && hfPart(owner) && hfPart(name)
}

func hfPart(s string) bool {
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
	if len(s) < 1 || len(s) > 96 || !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// NotText says why s is not printable text ("U+202E at byte 3 is a format
// character"), or is "": control characters, format characters (U+202E,
// the right-to-left override; zero-width ones), line or paragraph
// separators, and bytes that are not UTF-8. Spec names are held to it, and
// the CLI holds every flag value and argument to it.
func NotText(s string) string {
	ascii := true
	for i := 0; i < len(s) && ascii; i++ {
		ascii = s[i] >= 0x20 && s[i] < 0x7f
	}
	if ascii {
		return "" // printable ASCII: the common case, checked without decoding (Validate runs on every estimate)
	}
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], string(utf8.RuneError)):
			return fmt.Sprintf("byte %d (%#02x) is not UTF-8", i, s[i])
		case unicode.IsControl(r):
			return fmt.Sprintf("%U at byte %d is a control character", r, i)
		case unicode.Is(unicode.Cf, r):
			return fmt.Sprintf("%U at byte %d is a format character", r, i)
		case unicode.In(r, unicode.Zl, unicode.Zp):
			return fmt.Sprintf("%U at byte %d is a line or paragraph separator", r, i)
		}
	}
	return ""
}

// validateMoE checks the mixture-of-experts fields: all zero for a dense
// model.
func (s Spec) validateMoE(bad func(string, int, string) error) error {
	const limit = 1 << 16
	if s.Experts == 0 {
		for _, f := range []struct {
			name string
			v    int
		}{{"experts_per_token", s.ExpertsPerToken}, {"shared_experts", s.SharedExperts}, {"expert_d_ff", s.ExpertDFF},
			{"first_dense_layers", s.FirstDenseLayers}, {"moe_every", s.MoEEvery}} {
			if f.v != 0 {
				return bad(f.name, f.v, "0 in a dense model (set experts for a mixture of experts)")
			}
		}
		return nil
	}
	switch {
	case s.Experts < 0 || s.Experts > limit:
		return bad("experts", s.Experts, fmt.Sprintf("0 (dense) or 1 to %d routed experts", limit))
	case s.ExpertsPerToken < 1 || s.ExpertsPerToken > s.Experts:
		return bad("experts_per_token", s.ExpertsPerToken, fmt.Sprintf("1 to experts (%d)", s.Experts))
	case s.SharedExperts < 0 || s.SharedExperts > limit:
		return bad("shared_experts", s.SharedExperts, fmt.Sprintf("0 to %d", limit))
	case s.ExpertDFF < 0 || s.ExpertDFF > 1<<24:
		return bad("expert_d_ff", s.ExpertDFF, "0 (= d_ff) or a positive integer")
	case s.FirstDenseLayers < 0 || s.FirstDenseLayers >= s.Layers:
		return bad("first_dense_layers", s.FirstDenseLayers, fmt.Sprintf("0 to layers - 1 (%d), leaving an MoE layer", s.Layers-1))
	case s.MoEEvery < 0 || s.MoEEvery > s.Layers-s.FirstDenseLayers:
		return bad("moe_every", s.MoEEvery, fmt.Sprintf("0 or 1 (every layer) up to the layers after the dense ones (%d)", s.Layers-s.FirstDenseLayers))
	}
	return nil
}

// validateMLA checks the latent-attention fields: all zero without it.
func (s Spec) validateMLA(bad func(string, int, string) error) error {
	if s.KVLoRARank == 0 {
		for _, f := range []struct {
			name string
			v    int
		}{{"q_lora_rank", s.QLoRARank}, {"qk_rope_head_dim", s.QKRopeHeadDim}, {"v_head_dim", s.VHeadDim}} {
			if f.v != 0 {
				return bad(f.name, f.v, "0 without latent attention (set kv_lora_rank for it)")
			}
		}
		return nil
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"kv_lora_rank", s.KVLoRARank}, {"q_lora_rank", s.QLoRARank}, {"qk_rope_head_dim", s.QKRopeHeadDim}, {"v_head_dim", s.VHeadDim}} {
		if f.v < 0 || f.v > 1<<16 {
			return bad(f.name, f.v, "0 to 65536")
		}
	}
	if s.KVHeads != 0 && s.KVHeads != s.Heads {
		return bad("kv_heads", s.KVHeads, "0 (= heads) with latent attention, whose keys and values are per head")
	}
	return nil
}

// MoE reports whether the model has mixture-of-experts layers.
func (s Spec) MoE() bool { return s.Experts > 0 }

// MLA reports whether attention is multi-head latent attention.
func (s Spec) MLA() bool { return s.KVLoRARank > 0 }

// ExpertFF is the width of one expert's MLP.
func (s Spec) ExpertFF() int {
	if s.ExpertDFF == 0 {
		return s.DFF
	}
	return s.ExpertDFF
}

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
func (s Spec) KV() int {
	if s.KVHeads == 0 {
		return s.Heads
	}
	return s.KVHeads
}

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
	return int64(p.DenseLayers())*p.PerLayer() + int64(p.MoELayers)*p.PerMoELayer() + p.linearDelta()
}

// linearDelta is what the linear-attention layers' attention adds to a
// count that gave every layer softmax attention.
func (p Params) linearDelta() int64 { return int64(p.LinearLayers) * (p.LinearAttention - p.Attention) }

// Total is the model's parameter count.
func (p Params) Total() int64 {
	return p.Embedding + p.Output + p.FinalNorm + p.Blocks()
}

// Active is the parameters one token uses: Total with only the routed
// experts it runs (the count MoE papers publish as "activated").
func (p Params) Active() int64 {
	return p.Embedding + p.Output + p.FinalNorm + int64(p.DenseLayers())*p.PerLayer() + int64(p.MoELayers)*p.ActivePerMoELayer() + p.linearDelta()
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

// mlpMatmul is the matmul parameters of one MLP (or expert) of width f.
func (s Spec) mlpMatmul(f int) int64 {
	if s.GatedMLP {
		return 3 * int64(s.DModel) * int64(f)
	}
	return 2 * int64(s.DModel) * int64(f)
}

// mlpBiases is the bias parameters of one MLP (or expert) of width f.
func (s Spec) mlpBiases(f int) int64 {
	if !s.Biases {
		return 0
	}
	if s.GatedMLP {
		return 2*int64(f) + int64(s.DModel)
	}
	return int64(f) + int64(s.DModel)
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
		p.Shared = int64(s.SharedExperts) * p.Expert
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
		m = max(m, d*int64(s.ExpertFF()))
	}
	if s.MLA() {
		m = max(m, int64(max(s.QLoRARank, s.KVLoRARank))*h*int64(max(s.QKHead(), s.Head()+s.VHead())))
	}
	if s.Hybrid() {
		m = max(m, d*int64(s.LinearConvChannels())) // the queries, keys and values of a linear-attention layer
	}
	return m
}

// MatmulParams counts the weights that take part in a matrix multiply per
// token: every block's projection matrices (for an MoE layer the router,
// the routed experts a token runs and the shared experts) and the output
// (unembedding) projection, tied or not. Embedding lookups, norms and
// biases are not matmuls.
func (s Spec) MatmulParams() int64 {
	d, v := int64(s.DModel), int64(s.Vocab)
	moe := int64(s.MoELayers())
	dense := int64(s.Layers) - moe
	n := int64(s.AttentionLayers())*s.attentionMatmul() + int64(s.LinearLayers())*s.linearMatmul() + dense*s.mlpMatmul(s.DFF) + v*d
	if s.MoE() {
		n += moe * (d*int64(s.Experts) + int64(s.ExpertsPerToken+s.SharedExperts)*s.mlpMatmul(s.ExpertFF()))
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
// Of a hybrid model only the softmax layers attend over the sequence;
// the linear-attention layers add 3 × LinearAttentionFLOPsPerToken
// (forward and backward).
func (s Spec) FLOPsPerToken(seq int, causal bool) float64 {
	attn := 12 * float64(s.AttentionLayers()) * s.attentionWidth() * float64(seq)
	if causal {
		attn /= 2
	}
	return 6*float64(s.MatmulParams()) + attn + 3*s.LinearAttentionFLOPsPerToken()
}

// AttentionFLOPsPerToken is the forward FLOPs of the attention core
// (scores and weighted sum, 4·H·Q·T per softmax layer) per token, the
// work that selective rematerialisation repeats.
func (s Spec) AttentionFLOPsPerToken(seq int) float64 {
	return 4 * float64(s.AttentionLayers()) * s.attentionWidth() * float64(seq)
}

// Parse reads a spec written in YAML or JSON (JSON is YAML). Unknown fields
// are errors, so a misspelt field is not silently ignored.
func Parse(data []byte) (Spec, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil {
		if err == io.EOF {
			return Spec{}, fmt.Errorf("model: empty spec: %w; want fields name, layers, d_model, heads, d_ff, vocab, seq_len", ErrInvalid)
		}
		msg := strings.ReplaceAll(err.Error(), "\n", "; ")
		return Spec{}, fmt.Errorf("model: malformed spec: %s: %w", strings.TrimPrefix(msg, "yaml: "), ErrInvalid)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		return Spec{}, fmt.Errorf("model: spec holds more than one document: %w; want one", ErrInvalid)
	}
	if err := s.validateText(); err != nil {
		return Spec{}, err
	}
	// The decoder truncates 1.5 to 1 and reads 0x10, 0o10, 010 (as 8) and
	// 1_000 into an int: the counts are checked as written.
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Spec{}, fmt.Errorf("model: malformed spec: %s: %w", strings.TrimPrefix(err.Error(), "yaml: "), ErrInvalid)
	}
	if err := wholeNumbers(s.Name, &doc, intFields()); err != nil {
		return Spec{}, err
	}
	if err := s.Validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// decimal is a whole number as a count is written: decimal digits, an
// optional sign, no leading zero (YAML reads 010 as octal).
var decimal = regexp.MustCompile(`^[-+]?(0|[1-9][0-9]*)$`)

// intFields are the spec's integer fields by their YAML names.
func intFields() map[string]bool {
	ints := map[string]bool{}
	t := reflect.TypeFor[Spec]()
	for i := range t.NumField() {
		f := t.Field(i)
		switch f.Type.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			ints[name] = true
		}
	}
	return ints
}

// wholeNumbers checks that every integer field of the document n is
// written as a whole decimal number (or left null), through aliases and
// merge keys.
func wholeNumbers(model string, n *yaml.Node, ints map[string]bool) error {
	if model == "" {
		model = "(unnamed)"
	}
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			if err := wholeNumbers(model, c, ints); err != nil {
				return err
			}
		}
	case yaml.AliasNode:
		return wholeNumbers(model, n.Alias, ints)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			for v.Kind == yaml.AliasNode && v.Alias != nil {
				v = v.Alias
			}
			switch {
			case k.Tag == "!!merge":
				if err := wholeNumbers(model, v, ints); err != nil {
					return err
				}
			case ints[k.Value] && v.Kind == yaml.ScalarNode && v.Tag != "!!null" && !decimal.MatchString(v.Value):
				return &FieldError{Model: model, Field: k.Value, Value: strconv.QuoteToASCII(v.Value), Want: "a whole number in decimal digits"}
			}
		}
	}
	return nil
}

// Lookup finds a catalog model by name, ignoring case, dashes, dots and
// underscores ("Llama-3-8B" = "llama3-8b").
func Lookup(name string) (Spec, bool) {
	key := normalize(name)
	for _, s := range catalog {
		if normalize(s.Name) == key {
			return s, true
		}
	}
	return Spec{}, false
}

// Names lists the catalog's model names, sorted.
func Names() []string {
	var out []string
	for _, s := range catalog {
		out = append(out, s.Name)
	}
	sort.Strings(out)
	return out
}

// Catalog returns the built-in models.
func Catalog() []Spec { return append([]Spec(nil), catalog[:]...) }

func normalize(s string) string {
	r := strings.NewReplacer("-", "", "_", "", ".", "", " ", "")
	return strings.ToLower(r.Replace(strings.TrimSpace(s)))
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
	LinearLayers            int     `json:"linear_attention_layers,omitempty"`
	LinearAttentionPerLayer int64   `json:"linear_attention_params_per_layer,omitempty"`
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
