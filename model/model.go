// Package model describes decoder-only transformers: their shape, parameter
// count and training FLOPs per token, with a catalog of published models and a
// parser for user specs written in YAML or JSON.
package model

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

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

	// Published is the parameter count its authors give (0 if none), and
	// Source where it is given.
	Published int64  `yaml:"published_params,omitempty" json:"published_params,omitempty"`
	Source    string `yaml:"source,omitempty" json:"source,omitempty"`
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

// Validate checks that the spec describes a buildable transformer.
func (s Spec) Validate() error {
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
	if s.Published < 0 {
		return &FieldError{Model: name, Field: "published_params", Value: fmt.Sprint(s.Published), Want: "0 or a positive count"}
	}
	return nil
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
	Attention int64 // per layer: Q, K, V, O (and their biases)
	MLP       int64 // per layer
	Norms     int64 // per layer
	FinalNorm int64
	Layers    int
}

// PerLayer is the parameter count of one transformer block.
func (p Params) PerLayer() int64 { return p.Attention + p.MLP + p.Norms }

// Total is the model's parameter count.
func (p Params) Total() int64 {
	return p.Embedding + p.Output + p.FinalNorm + int64(p.Layers)*p.PerLayer()
}

// ParamCount counts the parameters of the spec.
func (s Spec) ParamCount() Params {
	d, f, v := int64(s.DModel), int64(s.DFF), int64(s.Vocab)
	q := int64(s.Heads * s.Head())
	kv := int64(s.KV() * s.Head())
	p := Params{Layers: s.Layers}
	p.Embedding = v * d
	if s.LearnedPositions {
		p.Embedding += int64(s.SeqLen) * d
	}
	if !s.TiedEmbeddings {
		p.Output = v * d
	}
	p.Attention = d*q + 2*d*kv + q*d
	if s.GatedMLP {
		p.MLP = 3 * d * f
	} else {
		p.MLP = 2 * d * f
	}
	if s.Biases {
		p.Attention += q + 2*kv + d
		p.MLP += f + d
		if s.GatedMLP {
			p.MLP += f
		}
	}
	norm := d
	if s.LayerNorm {
		norm = 2 * d
	}
	p.Norms = int64(s.Norms()) * norm
	p.FinalNorm = norm
	return p
}

// LargestMatrix is the parameter count of a block's largest weight matrix
// (Q, K, V, O or one MLP projection; MaxText keeps them separate unless
// fused_qkv or fused_mlp is set): the granularity at which XLA gathers
// FSDP-sharded weights and reduce-scatters their gradients.
func (s Spec) LargestMatrix() int64 {
	d := int64(s.DModel)
	return d * max(int64(s.Heads*s.Head()), int64(s.KV()*s.Head()), int64(s.DFF))
}

// MatmulParams counts the weights that take part in a matrix multiply per
// token: every block's projection matrices and the output (unembedding)
// projection, tied or not. Embedding lookups, norms and biases are not
// matmuls.
func (s Spec) MatmulParams() int64 {
	d, f, v := int64(s.DModel), int64(s.DFF), int64(s.Vocab)
	q := int64(s.Heads * s.Head())
	kv := int64(s.KV() * s.Head())
	mlp := 2 * d * f
	if s.GatedMLP {
		mlp = 3 * d * f
	}
	return int64(s.Layers)*(2*d*q+2*d*kv+mlp) + v*d
}

// FLOPsPerToken is the model FLOPs of one training token (forward and
// backward, no rematerialisation) at sequence length seq: 6 per matmul
// parameter plus the attention scores and weighted sum, 12·L·H·Q·T
// (PaLM, Chowdhery et al. 2022, App. B). With causal set the attention term
// is halved, as MaxText counts it since its PR 2031.
func (s Spec) FLOPsPerToken(seq int, causal bool) float64 {
	attn := 12 * float64(s.Layers) * float64(s.Heads*s.Head()) * float64(seq)
	if causal {
		attn /= 2
	}
	return 6*float64(s.MatmulParams()) + attn
}

// AttentionFLOPsPerToken is the forward FLOPs of the attention core
// (scores and weighted sum, 4·H·Q·T per layer) per token, the work that
// selective rematerialisation repeats.
func (s Spec) AttentionFLOPsPerToken(seq int) float64 {
	return 4 * float64(s.Layers) * float64(s.Heads*s.Head()) * float64(seq)
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
	if err := s.Validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
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
	Params            int64   `json:"params"`
	EmbeddingParams   int64   `json:"embedding_params"`
	OutputParams      int64   `json:"output_params"`
	ParamsPerLayer    int64   `json:"params_per_layer"`
	AttentionPerLayer int64   `json:"attention_params_per_layer"`
	MLPPerLayer       int64   `json:"mlp_params_per_layer"`
	NormsPerLayerP    int64   `json:"norm_params_per_layer"`
	MatmulParams      int64   `json:"matmul_params"`
	FLOPsPerToken     float64 `json:"training_flops_per_token"`
	FLOPsPerTokenCaus float64 `json:"training_flops_per_token_causal"`
	// PublishedError is (computed − published) / published, when a count
	// is published.
	PublishedError *float64 `json:"published_params_error,omitempty"`
}

// Summarize computes the summary at the spec's sequence length.
func (s Spec) Summarize() Summary {
	p := s.ParamCount()
	out := Summary{
		Spec: s, Params: p.Total(), EmbeddingParams: p.Embedding, OutputParams: p.Output,
		ParamsPerLayer: p.PerLayer(), AttentionPerLayer: p.Attention, MLPPerLayer: p.MLP, NormsPerLayerP: p.Norms,
		MatmulParams: s.MatmulParams(), FLOPsPerToken: s.FLOPsPerToken(s.SeqLen, false), FLOPsPerTokenCaus: s.FLOPsPerToken(s.SeqLen, true),
	}
	if s.Published > 0 {
		e := float64(p.Total()-s.Published) / float64(s.Published)
		out.PublishedError = &e
	}
	return out
}
