package model

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

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

// validateContext checks the lengths a spec may record about its
// context: max_position_embeddings (0: its seq_len) and
// attention_chunk_size (0: none), each at most limit.
func (s Spec) validateContext(bad func(field string, v int, want string) error, limit int) error {
	if s.MaxPositions < 0 || s.MaxPositions > limit {
		return bad("max_position_embeddings", s.MaxPositions, fmt.Sprintf("0 (= seq_len) or a positive integer up to %d", limit))
	}
	if s.AttentionChunk < 0 || s.AttentionChunk > limit {
		return bad("attention_chunk_size", s.AttentionChunk, fmt.Sprintf("0 (none) or a positive integer up to %d", limit))
	}
	return nil
}

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
	if err := s.validateContext(bad, limit); err != nil {
		return err
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
	if s.MTPLayers < 0 || s.MTPLayers > s.Layers {
		return bad("mtp_layers", s.MTPLayers, fmt.Sprintf("0 up to layers (%d)", s.Layers))
	}
	if s.MTPLayers > 0 && (s.Hybrid() || s.Windowed()) {
		return bad("mtp_layers", s.MTPLayers, "0 for a model with linear or local attention layers (shardlab does not model their MTP layer)")
	}
	for _, check := range []func(func(string, int, string) error) error{s.validateMoE, s.validateMLA, s.validateLinear, s.validateWindow, s.validateChunk, s.validateBlock} {
		if err := check(bad); err != nil {
			return err
		}
	}
	if err := s.validateSize(bad); err != nil {
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
	for _, f := range []struct{ name, v string }{{"name", s.Name}, {"source", s.Source}, {"hf_dtype_source", s.HFDtypeSource}} {
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
	if d := s.HFDtype; d != "" && (d != "bf16" && d != "fp8" && d != "int8" || s.HFModel == "" || s.HFDtypeSource == "") {
		return &FieldError{Model: s.Name, Field: "hf_dtype", Value: strconv.QuoteToASCII(d),
			Want: "empty (bf16), or bf16, fp8 or int8 with hf_model and hf_dtype_source (where the checkpoint's format is given)"}
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
		return allZero(bad, "in a dense model (set experts for a mixture of experts)",
			specField{"experts_per_token", s.ExpertsPerToken}, specField{"shared_experts", s.SharedExperts}, specField{"expert_d_ff", s.ExpertDFF},
			specField{"shared_expert_d_ff", s.SharedExpertDFF}, specField{"first_dense_layers", s.FirstDenseLayers}, specField{"moe_every", s.MoEEvery})
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
	case s.SharedExpertDFF < 0 || s.SharedExpertDFF > 1<<24 || s.SharedExpertDFF > 0 && s.SharedExperts == 0:
		return bad("shared_expert_d_ff", s.SharedExpertDFF, "0 (= expert_d_ff), or a positive integer with shared_experts")
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
		return allZero(bad, "without latent attention (set kv_lora_rank for it)",
			specField{"q_lora_rank", s.QLoRARank}, specField{"qk_rope_head_dim", s.QKRopeHeadDim}, specField{"v_head_dim", s.VHeadDim})
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

// specField is a spec field's name, as the spec file spells it, and value.
type specField struct {
	name string
	v    int
}

// allZero is bad's error for the first of fields that is not 0, wanting 0
// because the spec lacks the feature they belong to (why); nil when all are.
func allZero(bad func(string, int, string) error, why string, fields ...specField) error {
	for _, f := range fields {
		if f.v != 0 {
			return bad(f.name, f.v, "0 "+why)
		}
	}
	return nil
}

// MaxParams bounds a spec's parameter count: 2^50, about 1.1e15, some 500
// times the largest published model, so that its bytes (16 a parameter
// with fp32 Adam) and every count cost multiplies from it stay far inside
// int64. MaxSequenceValues bounds one sequence's activations, layers x
// seq_len x d_model values: 2^44, 64 times Llama 3.1 405B's at 128k tokens,
// so that a device's batch of them stays countable too.
const (
	MaxParams         = 1 << 50
	MaxSequenceValues = 1 << 44
)

// validateSize refuses a spec whose fields are each in range but whose
// products are not: an attention wider than 2^24 (heads x head_dim), more
// than MaxParams parameters, or a sequence of more than MaxSequenceValues
// activations. The parameter bound is worked out in float64 from the
// per-layer counts (each a product of two bounded fields, exact in int64),
// every layer taken as the widest kind, so that it cannot overflow itself.
func (s Spec) validateSize(refuse func(string, int, string) error) error {
	const width = 1 << 24
	for _, g := range []Spec{s, s.Global()} {
		if float64(g.Heads)*float64(g.QKHead()+g.VHead()) > 2*width {
			return refuse("head_dim", g.Head(), fmt.Sprintf("heads (%d) x head_dim at most %d", g.Heads, width))
		}
	}
	p := s.ParamCount()
	layer := float64(p.Attention) + float64(p.GlobalAttention) + float64(p.LinearAttention) + float64(p.MLP) + float64(p.Norms) +
		float64(p.Router) + float64(s.Experts)*float64(p.Expert) + float64(p.Shared)
	if n := float64(p.Embedding) + float64(p.Output) + float64(s.Layers+s.MTPLayers)*layer; n > MaxParams {
		return refuse("layers", s.Layers, fmt.Sprintf("a model of at most 2^50 (%.3g) parameters; with these widths it has about %.3g", float64(MaxParams), n))
	}
	if want := sequenceWant(s.Layers, s.DModel, s.SeqLen); want != "" {
		return refuse("seq_len", s.SeqLen, want)
	}
	return nil
}

// CheckSequence refuses a sequence of seq tokens whose activations, layers
// x seq x dModel values, pass MaxSequenceValues; the error names seq_len.
func CheckSequence(model string, layers, dModel, seq int) error {
	if want := sequenceWant(layers, dModel, seq); want != "" {
		return &FieldError{Model: model, Field: "seq_len", Value: fmt.Sprint(seq), Want: want}
	}
	return nil
}

// sequenceWant is what CheckSequence wants of seq, "" when it passes.
func sequenceWant(layers, dModel, seq int) string {
	if float64(layers)*float64(dModel)*float64(seq) <= MaxSequenceValues {
		return ""
	}
	return fmt.Sprintf("at most %d tokens with %d layers of width %d (layers x seq_len x d_model at most 2^44 activation values)",
		MaxSequenceValues/(int64(layers)*int64(dModel)), layers, dModel)
}
