package export

import (
	"fmt"
	"strconv"

	"shardlab/cost"
	"shardlab/maxtext"
	"shardlab/mesh"
)

// The context-parallel strategy MaxText runs, [types.py] lines 1127-1135
// and 4004-4066 and [base.yml] lines 1200-1202: context_parallel_strategy
// is one of all_gather (the default), ring, ulysses or usp.
const (
	contextStrategyKey    = "context_parallel_strategy"
	contextStrategyRing   = "ring"
	contextLoadBalanceKey = "context_parallel_load_balance"
)

// contextParallel writes the context-parallel strategy shardlab costs:
// ring attention (cost's tally.context: every chip's K and V blocks pass
// around the ring, three passes a layer and four under remat, overlapped
// with the attention of the blocks already there). MaxText's default,
// all_gather, gathers the whole sequence's K and V before the attention
// (MaxText docs/guides/optimization/sharding.md line 259 @e591f30c: "the
// KV all gathers are probably exposed"), which is not what was costed.
// On TPU MaxText runs the ring through Tokamax Splash ([types.py] lines
// 4011-4066, layers/attention_op.py lines 1642-2030 @e591f30c), and only
// under the rules checked here, in [types.py]'s order; a plan that breaks
// one is refused with what to change. ctx and tensor are MaxText's
// context and tensor sizes in JAX devices (ici × dcn): the in-chip factor
// on context is context parallelism too.
func contextParallel(set func(string, any), c *MaxTextConfig, j cost.Job, block string, ctx, tensor int) error {
	if ctx <= 1 {
		return nil // no context axis: the strategy is never read
	}
	const otherMesh = "plan with a {mesh} of another context size or none"
	refuse := func(field, value, why, fix string) error {
		return unsupported("maxtext", field, value, fmt.Sprintf("shardlab costs context parallelism as ring attention, and MaxText's ring (%s: %s) %s; %s", contextStrategyKey, contextStrategyRing, why, fix))
	}
	if ctx%2 != 0 {
		// load balancing is what makes causal attention's work even over
		// the ring, as cost divides it
		return refuse("context_parallel_size", strconv.Itoa(ctx), "balances causal attention over the ring (context_parallel_load_balance) only for an even size", otherMesh)
	}
	if j.Seq%(ctx*ctx) != 0 {
		return refuse("max_target_length", strconv.Itoa(j.Seq), fmt.Sprintf("needs it a multiple of context_parallel_size squared (%d x %d = %d)", ctx, ctx, ctx*ctx), "pass a {seq} that is, or "+otherMesh)
	}
	if att := attentionKernel(j); att != cost.AttentionFlash {
		return refuse("attention", string(att), "runs only with attention flash (Tokamax Splash)", "pass {attention} flash, or "+otherMesh)
	}
	if kind, ok := localAttentionBlocks[block]; ok {
		return refuse("decoder_block", block, fmt.Sprintf("runs only global or latent attention layers (layers/attention_op.py line 625 @e591f30c), and MaxText's %s block has %s layers", block, kind), otherMesh)
	}
	m := j.Model
	if m.MTPLayers > 0 {
		return refuse("mtp_num_layers", strconv.Itoa(m.MTPLayers), "does not run multi-token prediction under load balancing", otherMesh)
	}
	// tokamax_ring_attention.validate_head_sharding: the K/V heads
	// (activation_kv_heads -> tensor, [base.yml] line 553) split evenly
	if m.KV()%tensor != 0 {
		return refuse(maxtext.ICIKey(maxtext.Name(mesh.Tensor)), strconv.Itoa(tensor), fmt.Sprintf("needs it to divide the %d key/value heads", m.KV()), "plan with a {mesh} of another tensor size or no context")
	}
	set(contextStrategyKey, contextStrategyRing)
	set(contextLoadBalanceKey, true)
	set("use_tokamax_splash", true)
	c.Comments = append(c.Comments, fmt.Sprintf("context parallelism %d runs as ring attention, as costed (%s: %s; MaxText's default all_gather gathers whole K/V before attention)", ctx, contextStrategyKey, contextStrategyRing))
	if m.MLA() {
		// [types.py] lines 4042-4044: the ring with latent attention does
		// not pack, and [base.yml] line 744 packs. A step is of
		// max_target_length-token sequences either way, as costed;
		// packing only decides how documents fill them.
		set("packing", false)
		c.Comments = append(c.Comments, "packing: false, since MaxText's ring does not pack with latent attention: each sequence is one document, padded to max_target_length; the step costs as planned, but padding is no training")
	}
	return nil
}

// localAttentionBlocks are MaxText's decoder blocks with layers of another
// attention_type than global or mla (common_types.py AttentionType), by
// that type: gemma2's, gemma3's and gemma4's local layers attend over a
// sliding window, llama4's RoPE layers in chunks (models/gemma2.py,
// gemma3.py, gemma4.py, llama4.py line 386 @e591f30c).
var localAttentionBlocks = map[string]string{"gemma2": "local_sliding", "gemma3": "local_sliding", "gemma4": "local_sliding", "llama4": "chunk"}

// attentionKernel is the attention MaxText runs j with: flash unless j
// asks for another (kernels writes it).
func attentionKernel(j cost.Job) cost.AttentionKind {
	if j.Attention == "" {
		return cost.AttentionFlash
	}
	return j.Attention
}
