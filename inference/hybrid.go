package inference

// Hybrid models (softmax and linear attention) and attention data
// parallelism for models without latent attention, as tpu-inference
// serves them. Sources, cited as [tag]:
//
//	[ti-gdn]   vllm-project/tpu-inference @b8692ff0, linear attention (Gated DeltaNet) of hybrid
//	           models: tpu_inference/runner/kv_cache_manager.py update_mamba_page_size_padded and
//	           _maybe_set_compact_mamba_num_blocks_override (each linear-attention layer's state
//	           array gets max_num_reqs + 1 slots, one a running request whatever its length, and
//	           the rest of the budget goes to the softmax layers' pages);
//	           tpu_inference/kernels/gdn/reference/ragged_gated_delta_rule_chunked.py (a step
//	           reads each scheduled sequence's state (n_v, d_k, d_v) by its slot and writes it
//	           back). The state's shapes and dtypes are vLLM's (vllm/model_executor/layers/mamba/
//	           mamba_utils.py MambaStateShapeCalculator.gated_delta_net_state_shape, as secondary
//	           sources quote it; commit not read): the convolution's (conv_dim/tp, kernel − 1) in
//	           the model's dtype, the recurrent (n_v/tp, d_v, d_k) in mamba_ssm_cache_dtype, which
//	           vLLM sets for Qwen3.5 from its config's mamba_ssm_dtype, float32.
//	[ti-dpattn] vllm-project/tpu-inference:tpu_inference/layers/common/sharding.py
//	           ShardingConfigManager.from_vllm_config @b8692ff0: with enable_dp_attention,
//	           attn_dp = TP // max(1, 2·KV heads / packing) (packing 4 / the KV dtype's bytes,
//	           twice that for head_dim 64) and the attention's tensor parallelism TP / attn_dp;
//	           the attention layers' weights are sharded over the attention's tensor axis only
//	           (whole when it is 1), the sequences over attn_dp, the MLP and experts over all
//	           devices (MLP_TENSOR, EXPERT hold attn_dp), as for latent attention [ti-mla].

import (
	"shardlab/model"
	"shardlab/unit"
)

// RecurrentStateBytes is what one sequence's linear-attention state
// takes on one device of a tp-way replica, over all linear-attention
// layers [ti-gdn]: per layer its convolution's last taps − 1 inputs of
// its channels split tp ways, in bf16 (the model's dtype), and the gated
// delta rule's value heads' key dim × value dim state, split tp ways by
// head, in fp32. 0 without linear attention.
//
// Under attention data parallelism pass tp 1: a device holds the whole
// state of each of its own sequences.
func RecurrentStateBytes(m model.Spec, tp int) unit.Bytes {
	if !m.Hybrid() {
		return 0
	}
	conv := ceilDiv(m.LinearConvChannels(), tp) * (m.LinearConvKernel - 1) * 2
	state := max(m.LinearValueHeads/tp, 1) * m.LinearKeyHeadDim * m.LinearValueHeadDim * 4
	return unit.Bytes(m.LinearLayers() * (conv + state))
}
