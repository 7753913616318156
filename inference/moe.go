package inference

// Mixture-of-experts and latent-attention serving as tpu-inference runs
// them. Sources, cited as [tag] (tpu-inference @b8692ff01fa1, vLLM as
// given):
//
//	[ti-ep]     tpu_inference/layers/common/fused_moe_gmm.py expert_parallel_gmm, moe_gmm_local:
//	            the routed experts' stacked weights are split on their leading (expert) axis
//	            over the mesh's EXPERT axes, num_experts // ep_size a device; the tokens are
//	            not split on that axis, each device runs its own experts over them, and the
//	            outputs are summed with a psum over the EXPERT axes: an all-reduce, as tensor
//	            parallelism's after the MLP. tpu_inference/layers/common/sharding.py: EXPERT is
//	            'model' in the default 2-D mesh (ShardingAxisName2D) and ('attn_dp',
//	            'attn_dp_expert', 'expert', 'model', 'dcp', 'pcp') in the base mesh; 'data' (the
//	            replicas) is in neither, so EP = the tensor-parallel size. envs.py:
//	            USE_MOE_EP_KERNEL (the fused all-to-all kernel) is off by default.
//	            tpu_inference/layers/jax/moe/moe.py _compute_use_ep: EP is on when
//	            enable_expert_parallel and DP·PCP·TP > 1.
//	[ti-ep-rows] tpu_inference/layers/common/fused_moe_gmm.py @2f7640057816 (the tpu-inference of
//	            the Qwen3-Coder rows' image, vllm-tpu:nightly-20260330-2f76400-8c0b626), before
//	            PR #2294 (e81c94b5, 2026-04-16, which gathers only the device's own experts' rows,
//	            ragged_gather): fused_moe_func's _process_tokens_locally gathers all tokens·k
//	            routed rows on every device (x = hidden_states_local[token_indices_sorted]; its
//	            in_spec is replicated on the EXPERT axis), expert_parallel_gmm's gmm_v2 computes
//	            only its own experts' groups (group_offset), and moe_gmm_local gathers every row
//	            back (gmm2_res[topk_argsort_revert_indices]), masks the others' and sums each
//	            token's k: XLA ops over all tokens·k rows. The SparseCore gather_reduce is taken
//	            only above SC_KERNEL_THRESHOLD, 16,777,216 rows (envs.py), which no step reaches.
//	[v-ep]      vllm-project/vllm:vllm/engine/arg_utils.py @99d7eb5d6a51: enable_expert_parallel
//	            is a bool engine arg, so _compute_kwargs gives it argparse.BooleanOptionalAction:
//	            --enable-expert-parallel takes no value.
//	[ti-mla]    tpu_inference/platforms/tpu_platform.py check_and_update_config: an MLA model
//	            needs NEW_MODEL_DESIGN=1 and --additional_config
//	            {"sharding": {"sharding_strategy": {"enable_dp_attention": true}}}; with it
//	            tpu_inference/layers/common/sharding.py from_vllm_config counts one KV head for
//	            MLA and turns the tensor-parallel size into attention data parallelism
//	            (attn_dp = TP, tensor_parallelism 1): attention weights whole on every device,
//	            each device attending its own sequences, the MLP and experts split over all of
//	            them (MLP_TENSOR, EXPERT hold attn_dp), tokens gathered before the MLP and the
//	            output reduce-scattered back (psum_scatter over ATTN_DATA in moe_gmm_local).
//	            tpu_inference/runner/kv_cache.py create_kv_caches: the MLA cache is sharded on
//	            BATCH (which holds attn_dp), not on heads. tpu_inference/runner/kv_cache_manager.py:
//	            a token's latent is align(kv_lora_rank, 128) + align(qk_rope_head_dim, 128) wide
//	            (MLA_TRANSPOSE_KV_CACHE off by default, envs.py), tpu_inference/kernels/mla/v2/kernel.py
//	            get_kv_cache_shape pads it to 128 lanes. flash_attn_mla.py get_page_size: 1024
//	            tokens a page.
//	[v-mla]     vllm-project/vllm:vllm/model_executor/layers/mla.py @11080c8e655b: the cached
//	            latent is kv_c (kv_lora_rank) and k_pe (qk_rope_head_dim), one "head" for all.
//	[v-block]   vllm-project/vllm:vllm/config/cache.py @002f10e0cfa1: CacheConfig.block_size is
//	            `int = Field(default=None, gt=0)`, any positive size; left unset, its
//	            _apply_block_size_default leaves user_specified_block_size false, and tpu-inference's
//	            check_and_update_config (platforms/tpu_platform.py 367-373 @b8692ff0) then takes the
//	            MLA backend's page size, 1024 (flash_attn_mla.py get_page_size). An MLA plan leaves
//	            --block-size out so that tpu-inference chooses the page it costs.
//	[ti-gmm]    tpu_inference/kernels/megablox/gmm_v2.py @2f7640057816 (the tpu-inference of the
//	            Qwen3-Coder rows' image, vllm-tpu:nightly-20260330-2f76400-8c0b626) and @c539adc31ae9
//	            (the Qwen3.5 rows'): the routed experts' matmuls (moe_gmm_local's two gmm_wrapper
//	            calls, fused_moe_gmm.py) run over the step's rows sorted by expert. fill_metadata
//	            gives each non-empty group of the device's experts cdiv(group_size + local_offset,
//	            tile_m) tiles, local_offset its first row's place in a sublane (the lhs's sublane
//	            tiling, 16 rows of bf16, at most the rows); inner_kernel multiplies every tile whole,
//	            tile_m rows of lhs (the rows past the group masked after the matmul, not skipped).
//	            calculate_tiling: tile_m = min(128 · lhs_mod // rhs_mod, rows), 128 when lhs and
//	            rhs are as wide (bf16 weights; 8-bit weights with the lhs quantized in the kernel,
//	            make_gmm_configs, on a TPU with fp8 ops). fp8 MoE weights are requantized per
//	            channel at load (process_fp8_moe_weights, MOE_REQUANTIZE_BLOCK_SIZE unset), so the
//	            lhs is quantized to fp8 and tile_m is 128.
//	[dsv2]      DeepSeek-AI 2024, DeepSeek-V2 (arXiv 2405.04434) Table 1: MLA caches
//	            (d_c + d_h^R)·l elements a token, d_c the KV compression (kv_lora_rank) and d_h^R
//	            the decoupled rotary key (qk_rope_head_dim); Zhao et al. 2025, "Insights into
//	            DeepSeek-V3" (arXiv 2505.09343) Table 1: 70.272 KB a token for DeepSeek-V3 in bf16.

import (
	"math"

	"shardlab/model"
	"shardlab/unit"
)

// ExpertParallel is the expert-parallel size tpu-inference runs a replica
// of tp devices with when vLLM is given --enable-expert-parallel: the
// routed experts split on the replica's tensor axis [ti-ep], which needs
// tp to divide the experts (num_experts // ep_size a device). 1 for a dense
// model, one device, or experts that tp does not divide: the experts are
// then split along their width as tensor parallelism splits an MLP.
func ExpertParallel(m model.Spec, tp int) int {
	if !m.MoE() || tp < 2 || m.Experts%tp != 0 {
		return 1
	}
	return tp
}

// DPAttention reports whether tpu-inference serves m with attention data
// parallelism inside a replica: latent attention needs it [ti-mla].
func DPAttention(m model.Spec) bool { return m.MLA() }

// LatentElements is what latent attention caches for one token in one
// layer, as vLLM and DeepSeek-V2 count it: kv_lora_rank + qk_rope_head_dim
// [v-mla, dsv2]. DeepSeek-V3: 512 + 64 = 576. 0 without latent attention.
func LatentElements(m model.Spec) int {
	if !m.MLA() {
		return 0
	}
	return m.KVLoRARank + m.QKRopeHeadDim
}

// latentLanes is the latent as tpu-inference's MLA kernel stores it: the
// compressed KV and the rotary key each padded to 128 lanes [ti-mla].
// DeepSeek-V3: 512 + 128 = 640.
func latentLanes(m model.Spec) int {
	return ceilDiv(m.KVLoRARank, 128)*128 + ceilDiv(m.QKRopeHeadDim, 128)*128
}

// mlaPageSize is the page tpu-inference's MLA backend uses [ti-mla],
// which it sets where the serve line gives no --block-size [v-block].
const mlaPageSize = 1024

// ActiveExperts is the expected number of distinct routed experts that
// tokens tokens touch in one MoE layer, when each token picks top-k of E
// experts and the router spreads them evenly: an expert is missed by one
// token with probability 1 − k/E, by all of them with (1 − k/E)^tokens,
// so E·(1 − (1 − k/E)^tokens) are touched. It is k for one token, never
// more than min(E, tokens·k) (the union bound), and tends to E. A decode
// step reads only these experts' weights from HBM.
func ActiveExperts(m model.Spec, tokens int) float64 {
	if !m.MoE() || tokens < 1 {
		return 0
	}
	e, k := float64(m.Experts), float64(m.ExpertsPerToken)
	return e * (1 - math.Pow(1-k/e, float64(tokens)))
}

// expertBytes is one routed expert's weights.
func expertBytes(m model.Spec, w Dtype) float64 {
	return float64(m.ParamCount().Expert) * float64(w.Bytes())
}

// ExpertWeightBytes is the routed experts of all MoE layers that one
// device of a tp-way replica holds: E/EP whole experts a layer under
// expert parallelism, or a 1/tp slice of each when tp splits their width;
// the same bytes either way [ti-ep].
func ExpertWeightBytes(m model.Spec, tp int, w Dtype) unit.Bytes {
	p := m.ParamCount()
	return unit.Bytes(int64(p.MoELayers) * int64(p.Experts) * p.Expert / int64(tp) * int64(w.Bytes()))
}

// attentionSplit is the share of a step's attention work (its matmuls,
// its scores and the KV it reads) that the busiest device of a tp-way
// replica does for seqs sequences: 1/tp when tensor parallelism splits
// the heads; under attention data parallelism (dp) each sequence lives
// on one device, so the busiest holds ⌈seqs/tp⌉ of them [ti-mla].
func attentionSplit(dp bool, tp, seqs int) float64 {
	if !dp || seqs < 1 {
		return 1 / float64(tp)
	}
	return float64(ceilDiv(seqs, tp)) / float64(seqs)
}

// attentionCoreFLOPs is the forward FLOPs of the attention scores and
// weighted sum for one (query, key) pair over the layers that attend the
// whole context, and over the local layers of a model with a sliding
// window (0 without). Latent attention on tpu-inference attends over the
// cached latent itself (the up-projections absorbed into the query and
// output): per head a score over kv_lora_rank + qk_rope_head_dim and a
// sum over kv_lora_rank [ti-mla]; other models as the model package
// counts it (model.Spec.KeyFLOPs).
func attentionCoreFLOPs(m model.Spec) (global, local float64) {
	if !m.MLA() {
		return m.KeyFLOPs()
	}
	return 2 * float64(m.Layers) * float64(m.Heads) * float64(LatentElements(m)+m.KVLoRARank), 0
}

// gmmTileM is the rows of one tile of tpu-inference's grouped matmul
// [ti-gmm].
const gmmTileM = 128

// gmmSublane is the sublane tiling of its bf16 lhs: a group's first tile
// starts at the sublane its first row is in [ti-gmm].
const gmmSublane = 16

// groupRows is the rows tpu-inference's grouped matmul computes, on
// average, for one expert's group when each of tokens tokens routes to it
// with probability p, of rows sorted rows in all [ti-gmm]: a group of n > 0
// rows is computed in ⌈(n + o)/tm⌉ whole tiles of tm = min(128, rows),
// o its first row's place in a sublane of min(16, rows); o is taken as
// uniform over the sublane (it is the sum of the groups before it, modulo
// the sublane), n as binomial(tokens, p), the router spreading the tokens
// evenly (as ActiveExperts). An empty group costs nothing.
func groupRows(tokens int, p float64, rows int) float64 {
	if tokens < 1 || p <= 0 || rows < 1 {
		return 0
	}
	tm, sub := min(gmmTileM, rows), min(gmmSublane, rows)
	group := func(n int) float64 { // whole tiles over the sublane offsets
		var t int
		for o := range sub {
			t += ceilDiv(n+o, tm) * tm
		}
		return float64(t) / float64(sub)
	}
	if p >= 1 {
		return group(tokens)
	}
	// the binomial's terms within 12 standard deviations of its mean
	n := float64(tokens)
	mean, sd := n*p, math.Sqrt(n*p*(1-p))
	lo, hi := max(1, int(mean-12*sd)-1), min(tokens, int(mean+12*sd)+2)
	ln, _ := math.Lgamma(n + 1)
	var sum float64
	for i := lo; i <= hi; i++ {
		x := float64(i)
		li, _ := math.Lgamma(x + 1)
		lr, _ := math.Lgamma(n - x + 1)
		sum += math.Exp(ln-li-lr+x*math.Log(p)+(n-x)*math.Log1p(-p)) * group(i)
	}
	return sum
}

// ExpertRows is the rows the grouped matmuls of one device of a tp-way
// replica compute for a step of tokens tokens of m, each token's top-k
// experts one row each [ti-gmm]: its E/EP experts' groups (under expert
// parallelism; else all E, each 1/tp wide), each in whole tiles
// (groupRows). At least tokens·k/EP; 0 for a dense model.
func ExpertRows(m model.Spec, tp, tokens int) float64 {
	if !m.MoE() || tokens < 1 {
		return 0
	}
	ep := ExpertParallel(m, tp)
	k, e := m.ExpertsPerToken, m.Experts
	return float64(e/ep) * groupRows(tokens, float64(k)/float64(e), tokens*k)
}
