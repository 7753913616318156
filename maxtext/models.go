package maxtext

import (
	"slices"

	"shardlab/model"
)

// Model is what MaxText's config of a catalog model says of how MaxText
// builds it, where that differs from the catalog's spec.
type Model struct {
	// Name is the model_name MaxText accepts: one of [types.py]'s
	// ModelName.
	Name string
	// Block is the config's decoder_block.
	Block string
	// Pairs is the catalog's layers in one MaxText decoder layer (Gemma
	// 2's pair a local and a global attention layer).
	Pairs int
	// FusedQKV is fused_qkv: Q, K and V come from one projection.
	FusedQKV bool
}

// models are the catalog models MaxText ships a config of
// (src/maxtext/configs/models/NAME.yml @e591f30c), under the model_name
// MaxText accepts ([types.py] ModelName, lines 216-297), with what differs
// in how MaxText builds them. export's tests hold each to the name list
// and to its config's dimensions and decoder_block, read from MaxText at
// that commit.
var models = map[string]Model{
	"gpt3-175b":  {"gpt3-175b", "gpt3", 1, true},
	"llama2-7b":  {"llama2-7b", "llama2", 1, false},
	"llama2-13b": {"llama2-13b", "llama2", 1, false},
	"llama2-70b": {"llama2-70b", "llama2", 1, false},
	"llama3-8b":  {"llama3-8b", "llama2", 1, false},
	"llama3-70b": {"llama3-70b", "llama2", 1, false},
	// models/llama3-405b.yml exists, but ModelName lists only
	// llama3.1-405b, whose config is the same
	"llama3-405b":           {"llama3.1-405b", "llama2", 1, false},
	"gemma-7b":              {"gemma-7b", "gemma", 1, false},
	"gemma-2b":              {"gemma-2b", "gemma", 1, false},
	"gemma2-9b":             {"gemma2-9b", "gemma2", 2, false},
	"gemma2-27b":            {"gemma2-27b", "gemma2", 2, false},
	"gemma4-31b":            {"gemma4-31b", "gemma4", 1, false},
	"gemma4-26b-a4b":        {"gemma4-26b", "gemma4", 1, false},
	"mixtral-8x7b":          {"mixtral-8x7b", "mixtral", 1, false},
	"mixtral-8x22b":         {"mixtral-8x22b", "mixtral", 1, false},
	"deepseek3-671b":        {"deepseek3-671b", "deepseek", 1, false},
	"qwen3-32b":             {"qwen3-32b", "qwen3", 1, false},
	"qwen3-235b-a22b":       {"qwen3-235b-a22b", "qwen3_moe", 1, false},
	"qwen3-coder-480b-a35b": {"qwen3-480b-a35b", "qwen3_moe", 1, false},
	"qwen3.5-397b-a17b":     {"qwen3.5-397b-a17b", "qwen3_5", 1, false},
	"llama4-maverick":       {"llama4-17b-128e", "llama4", 1, false},
}

// ModelNamed is MaxText's config of the catalog model named name, and
// whether MaxText ships one.
func ModelNamed(name string) (Model, bool) {
	m, ok := models[name]
	return m, ok
}

// ModelOf is MaxText's config of spec m, where m is the catalog's model
// of its name, unchanged, and MaxText ships a config of it; else false
// (a spec, or a catalog model changed, which MaxText's config of that
// name would not train).
func ModelOf(m model.Spec) (Model, bool) {
	mt, ok := models[m.Name]
	if !ok {
		return Model{}, false
	}
	cat, ok := model.Lookup(m.Name)
	return mt, ok && cat == m
}

// CatalogNames is the catalog models MaxText ships a config of, sorted.
func CatalogNames() []string {
	out := make([]string, 0, len(models))
	for n := range models {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
