package export

import (
	"errors"
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
// under the rules package maxtext holds (maxtext.Ring.Check, which plan's
// search under the MaxText framework asks too); a plan that breaks one
// is refused with what to change. ctx and tensor are MaxText's context
// and tensor sizes in JAX devices (ici × dcn): the in-chip factor on
// context is context parallelism too.
func contextParallel(set func(string, any), c *MaxTextConfig, j cost.Job, block string, ctx, tensor int) error {
	if ctx <= 1 {
		return nil // no context axis: the strategy is never read
	}
	ring := maxtext.Ring{Context: ctx, Tensor: tensor, Seq: j.Seq, Attention: string(attentionKernel(j)), Model: j.Model, Block: block}
	var re *maxtext.RingError
	if err := ring.Check(); errors.As(err, &re) {
		return unsupported("maxtext", re.Key, re.Value, fmt.Sprintf("shardlab costs context parallelism as ring attention, and MaxText's ring (%s: %s) %s; %s", contextStrategyKey, contextStrategyRing, re.Why, ringFix(re.Key)))
	} else if err != nil {
		return err
	}
	set(contextStrategyKey, contextStrategyRing)
	set(contextLoadBalanceKey, true)
	set("use_tokamax_splash", true)
	c.Comments = append(c.Comments, fmt.Sprintf("context parallelism %d runs as ring attention, as costed (%s: %s; MaxText's default all_gather gathers whole K/V before attention)", ctx, contextStrategyKey, contextStrategyRing))
	if j.Model.MLA() {
		// [types.py] lines 4042-4044: the ring with latent attention does
		// not pack, and [base.yml] line 744 packs. A step is of
		// max_target_length-token sequences either way, as costed;
		// packing only decides how documents fill them.
		set("packing", false)
		c.Comments = append(c.Comments, "packing: false, since MaxText's ring does not pack with latent attention: each sequence is one document, padded to max_target_length; the step costs as planned, but padding is no training")
	}
	return nil
}

// flashBlocks refuses a job whose sequence MaxText's flash attention
// cannot cut into its splash kernel's blocks without context parallelism
// (maxtext.FlashBlocks: a multiple of 512 tokens, or 128, 256 or 384); ctx is
// MaxText's context size in JAX devices, whose ring contextParallel
// checks, blocks and all (maxtext.Ring.Check).
func flashBlocks(j cost.Job, ctx int) error {
	if ctx > 1 {
		return nil
	}
	var fe *maxtext.FlashError
	if err := maxtext.FlashBlocks(string(attentionKernel(j)), j.Seq, 1); errors.As(err, &fe) {
		return unsupported("maxtext", maxtext.MaxTargetLength, strconv.Itoa(j.Seq), fe.Why()+"; pass such a {seq}, or {attention} dot_product")
	} else if err != nil {
		return err
	}
	return nil
}

// ringFix is what to change where MaxText's ring refuses key
// (maxtext.RingError), in plan's words.
func ringFix(key string) string {
	const otherMesh = "plan with a {mesh} of another context size or none"
	switch key {
	case maxtext.MaxTargetLength:
		return "pass a {seq} that is, or " + otherMesh
	case maxtext.Attention:
		return "pass {attention} flash, or " + otherMesh
	case maxtext.ICIKey(maxtext.Name(mesh.Tensor)):
		return "plan with a {mesh} of another tensor size or no context"
	}
	return otherMesh
}

// attentionKernel is the attention MaxText runs j with: flash unless j
// asks for another (kernels writes it).
func attentionKernel(j cost.Job) cost.AttentionKind {
	if j.Attention == "" {
		return cost.AttentionFlash
	}
	return j.Attention
}
