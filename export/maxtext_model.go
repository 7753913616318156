package export

// MaxText's model config as the export writes it: the block a model
// spec maps to and the keys that size it.

import (
	"fmt"
	"strings"

	"shardlab/cost"
	"shardlab/maxtext"
	"shardlab/model"
)

// maxTextArch is what the export needs of MaxText's model config: that
// of a catalog model MaxText ships (maxtext.ModelOf), or of the block a
// spec is written on.
type maxTextArch = maxtext.Model

// pairsNote says how MaxText's decoder layers pair the model's.
func pairsNote(a maxTextArch) string {
	if a.Pairs == 1 {
		return ""
	}
	return fmt.Sprintf(": each pairs %d of the model's layers", a.Pairs)
}

// maxTextModel writes the model. A catalog model MaxText ships is named
// (model_name) and nothing else: its config sets the architecture (RoPE
// base, norms, routing, QK-norm, ...), and none of the keys the export
// writes, so nothing overrides it (the tests hold the written keys to
// the configs' keys). A spec of one of MaxText's decoder blocks is
// written by its dimensions; any other is refused.
func maxTextModel(set func(string, any), c *MaxTextConfig, m model.Spec) (maxTextArch, error) {
	if a, ok := maxtext.ModelOf(m); ok {
		set("model_name", a.Name)
		if a.Name != m.Name {
			c.Comments = append(c.Comments, fmt.Sprintf("MaxText names %s %s", m.Name, a.Name))
		}
		return a, nil
	}
	var a maxTextArch
	var err error
	if m.MoE() || m.MLA() {
		a, err = maxTextMoEModel(set, m)
	} else {
		a, err = maxTextDenseModel(set, m)
	}
	if err != nil {
		return a, err
	}
	// shardlab costs no dropout; base.yml's enable_dropout is true, and
	// every MaxText config of these blocks sets it false
	set("enable_dropout", false)
	unset := blockUnset[a.Block]
	parts := make([]string, len(unset))
	for i, s := range unset {
		parts[i] = s.Key + " " + s.Value.(string)
	}
	c.Comments = append(c.Comments,
		fmt.Sprintf("%s: written by its dimensions on MaxText's %s decoder block. The spec does not give these keys of the block's configs, so base.yml's values stand; set them to the model's (MaxText's models/%s.yml @e591f30c has that model's):",
			notMaxTextModel(m), a.Block, blockExample[a.Block]),
		"  "+strings.Join(parts, ", "))
	return a, nil
}

// notMaxTextModel says why spec m is not written as a MaxText model:
// none has its name, or it is one MaxText ships (model_name) changed,
// so that MaxText's config of that name would train another model.
func notMaxTextModel(m model.Spec) string {
	if a, ok := maxtext.ModelNamed(m.Name); ok {
		return fmt.Sprintf("%s is not MaxText's %s: its dimensions differ from the catalog's model of that name, which MaxText's models/%s.yml trains", m.Name, a.Name, a.Name)
	}
	return m.Name + " is no MaxText model"
}

// blockUnset are, for each decoder block a spec is written on, the keys
// MaxText's own configs of that block set (configs/models/*.yml
// @e591f30c: the llama2 block's llama2-*, llama3-*, llama3.1-* and
// llama3.3-70b; mixtral-8x7b and 8x22b; the deepseek block's
// deepseek2-16b, deepseek2-236b, deepseek3-671b and kimi-k2-1t) that a
// spec does not give, with base.yml's values, which stand unless the user
// sets them. The tests hold the lists to the configs and the values to
// base.yml. (llama2-7b, 13b and 70b also set logical_axis_rules: a
// sharding rule for the norms' weights, not the architecture.)
var blockUnset = map[string][]Setting{
	"llama2":  {{"mlp_activations", `["silu","linear"]`}, {"normalization_layer_epsilon", "1e-05"}, {"rope_max_timescale", "10000"}},
	"mixtral": {{"mlp_activations", `["silu","linear"]`}, {"normalization_layer_epsilon", "1e-05"}, {"rope_max_timescale", "10000"}},
	"deepseek": {{"mlp_activations", `["silu","linear"]`}, {"normalization_layer_epsilon", "1e-05"},
		{"routed_scaling_factor", "1.0"}, {"routed_score_func", `""`}, {"routed_bias", "false"},
		{"rope_type", `"default"`}, {"rope_max_timescale", "10000"}, {"max_position_embeddings", "163840"},
		{"original_max_position_embeddings", "4096"}, {"rope_factor", "40"}, {"beta_fast", "32"}, {"beta_slow", "1"},
		{"mscale", "1.0"}, {"rope_interleave", "true"}, {"rope_truncate", "true"}, {"rope_attention_scaling", "false"}},
}

// blockExample is a MaxText config of each block, named in the comment.
var blockExample = map[string]string{"llama2": "llama3-8b", "mixtral": "mixtral-8x7b", "deepseek": "deepseek3-671b"}

// maxTextDenseModel writes a dense spec by its dimensions on MaxText's
// llama2 decoder block (gated MLP, RMSNorm, rotary positions, no
// biases; models/llama2-7b.yml), refusing any other.
func maxTextDenseModel(set func(string, any), m model.Spec) (maxTextArch, error) {
	if !m.GatedMLP || m.Biases || m.LayerNorm || m.LearnedPositions || m.NormsPerLayer > 2 || m.ParallelBlock || m.Windowed() {
		return maxTextArch{}, unsupported("maxtext", "model", m.Name,
			"it is no MaxText model config, and only a sequential gated-MLP model without biases, LayerNorm, learned positions, extra norms or sliding-window layers is MaxText's llama2 decoder block (it attends globally in every layer); set model_name in MaxText yourself")
	}
	setDecoder(set, "llama2", m)
	set("head_dim", m.Head())
	set("vocab_size", m.Vocab)
	set("logits_via_embedding", m.TiedEmbeddings)
	return maxTextArch{Block: "llama2", Pairs: 1}, nil
}

// setDecoder writes the decoder block and the dimensions every block
// takes: width, query and KV heads, layers and MLP width. The MLP width,
// base_mlp_dim, is the dense layers' d_ff; a model of MoE layers only
// has none, and MaxText refuses one whose base_mlp_dim differs from
// base_moe_mlp_dim ([types.py] lines 3896-3911: "For a fully MoE model,
// base_mlp_dim must equal base_moe_mlp_dim"; its mixtral block builds the
// experts base_mlp_dim wide, models/mixtral.py line 115 @e591f30c), so
// there it is the experts' width.
func setDecoder(set func(string, any), block string, m model.Spec) {
	set("decoder_block", block)
	set("base_emb_dim", m.DModel)
	set("base_num_query_heads", m.Heads)
	set("base_num_kv_heads", m.KV())
	set("base_num_decoder_layers", m.Layers)
	if m.MoE() && m.FirstDenseLayers == 0 {
		set("base_mlp_dim", m.ExpertFF())
	} else {
		set("base_mlp_dim", m.DFF)
	}
	if m.MTPLayers > 0 {
		// [base.yml] mtp_num_layers: the multi-token prediction modules
		// (layers/multi_token_prediction.py), 0 by default
		set("mtp_num_layers", m.MTPLayers)
	}
}

// maxTextMoEModel writes a mixture of experts or a latent-attention model
// by its dimensions on MaxText's decoder blocks for them: deepseek (MLA,
// shared experts, first dense layers; models/deepseek3-671b.yml) or
// mixtral (models/mixtral-8x7b.yml) — [base.yml] lines 213-226 and
// 284-290 for the MoE keys, 393 and 448-452 for MLA's. MaxText's deepseek
// block runs latent attention and its mixtral block grouped-query
// attention, so MLA without experts, an MoE model with MLA on the mixtral
// block, or a spec with interleaved dense layers is refused.
func maxTextMoEModel(set func(string, any), m model.Spec) (maxTextArch, error) {
	refuse := func(why string) (maxTextArch, error) {
		return maxTextArch{}, unsupported("maxtext", "model", m.Name, why+"; set model_name in MaxText yourself")
	}
	switch {
	case !m.GatedMLP || m.Biases || m.LayerNorm || m.LearnedPositions || m.NormsPerLayer > 2 || m.TiedEmbeddings || m.ParallelBlock || m.Windowed():
		return refuse("MaxText's MoE decoder blocks (mixtral, deepseek) are sequential gated-MLP models without biases, LayerNorm, learned positions, extra norms, tied embeddings or sliding-window layers")
	case !m.MoE():
		return refuse("latent attention without experts is no MaxText decoder block shardlab writes")
	case m.MoEEvery > 1:
		return refuse("interleaved MoE layers (moe_every > 1) are Llama 4's decoder block, which shardlab does not write")
	case !m.MLA() && (m.SharedExperts > 0 || m.FirstDenseLayers > 0):
		return refuse("shared experts and first dense layers are MaxText's deepseek decoder block, which runs latent attention")
	}
	block := "mixtral"
	if m.MLA() {
		block = "deepseek"
	}
	setDecoder(set, block, m)
	set("base_moe_mlp_dim", m.ExpertFF())
	set("vocab_size", m.Vocab)
	set("logits_via_embedding", false)
	set("num_experts", m.Experts)
	set("num_experts_per_tok", m.ExpertsPerToken)
	if m.MLA() {
		set("first_num_dense_layers", m.FirstDenseLayers)
		set("shared_experts", m.SharedExperts)
		set("attention_type", "mla")
		set("q_lora_rank", m.QLoRARank)
		set("kv_lora_rank", m.KVLoRARank)
		set("qk_nope_head_dim", m.Head())
		set("qk_rope_head_dim", m.QKRopeHeadDim)
		set("v_head_dim", m.VHead())
	} else {
		set("head_dim", m.Head())
	}
	return maxTextArch{Block: block, Pairs: 1}, nil
}

// maxTextMoE writes how the experts run, as costed: dropless with
// MaxText's defaults (sparse_matmul and megablox: ragged grouped GEMMs,
// capacity_factor -1) or with the capacity factor's token dropping
// (capacity_factor, dense dispatch masks: sparse_matmul false); the
// expert weights' exp dimension on the expert axis (shard_exp_on_fsdp
// false, MaxText's default) and the dispatch the plan costed: all-to-all,
// or the ring of experts (use_ring_of_experts, a sparse_matmul path).
// [base.yml] lines 213-230 and 284.
func maxTextMoE(set func(string, any), j cost.Job) {
	if !j.Model.MoE() {
		return
	}
	dropless := j.CapacityFactor <= 0
	set("sparse_matmul", dropless)
	set("megablox", dropless)
	if dropless {
		set("capacity_factor", -1.0)
	} else {
		set("capacity_factor", j.CapacityFactor)
	}
	set("shard_exp_on_fsdp", false)
	set("use_ring_of_experts", j.RingOfExperts)
}
