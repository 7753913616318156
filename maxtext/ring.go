package maxtext

import (
	"errors"
	"fmt"
	"strconv"

	"shardlab/mesh"
	"shardlab/model"
)

// Ring is a job as MaxText's ring attention on TPU sees it: the context
// axis a MaxText config of it has, and what the ring's rules read. shardlab
// costs context parallelism as ring attention, so a config with a context
// axis runs as costed only where Check passes. export writes the ring's
// keys where it does, and plan's search under the MaxText framework keeps
// to the layouts it passes.
type Ring struct {
	// Context and Tensor are MaxText's context and tensor sizes in JAX
	// devices (ici x dcn): the in-chip factor on context is context
	// parallelism too.
	Context, Tensor int
	// Seq is max_target_length.
	Seq int
	// Attention is the attention kernel, as MaxText's attention key
	// spells it ("flash", "dot_product"); the ring on TPU runs only
	// Tokamax Splash, flash.
	Attention string
	// Model is the model, and Block its config's decoder_block (""
	// for a model MaxText ships no config of: its sliding-window layers,
	// if any, are refused as a block's would be).
	Model model.Spec
	Block string
}

// RingError is MaxText's refusal to run a context axis as ring
// attention: the key and value it refuses, and why.
type RingError struct {
	Key, Value, Why string
}

func (e *RingError) Error() string {
	return fmt.Sprintf("maxtext: ring attention: %s %s: MaxText's ring %s", e.Key, e.Value, e.Why)
}

// The keys a RingError names beyond the mesh's: MaxText's
// context_parallel_size (ici x dcn context, [types.py] line 4004), and
// those of the config.
const (
	ContextParallelSize = "context_parallel_size"
	MaxTargetLength     = "max_target_length"
	Attention           = "attention"
	DecoderBlock        = "decoder_block"
	MTPNumLayers        = "mtp_num_layers"
)

// Check is nil when MaxText runs r's context axis as ring attention, or
// r has none (Context at most 1: the strategy is never read); else a
// *RingError. The rules are those [types.py] applies on TPU (lines
// 4020-4066 @e591f30c) with context_parallel_load_balance on, as costed,
// and layers/attention_op.py's per layer (line 625); the first broken
// is named, the even size asked first (as export always has), then in
// [types.py]'s order:
//   - load balancing needs an even context_parallel_size (line 4049);
//   - max_target_length a multiple of context_parallel_size squared
//     (lines 4030-4033);
//   - attention=flash (line 4035);
//   - attention_type global or mla (line 4041; attention_op.py 625,
//     where each layer's own type is checked: a block with sliding-window
//     or chunked layers is refused there);
//   - no multi-token prediction under load balancing (line 4051);
//   - the key/value heads split evenly over tensor
//     (tokamax_ring_attention.validate_head_sharding: activation_kv_heads
//     shard on tensor, [base.yml] line 553);
//   - each device's share of the sequence cut into the kernel's blocks
//     (FlashBlocks: a multiple of 512 tokens, or 128, 256 or 384), which
//     the kernel checks when it is built, after the config's rules.
func (r Ring) Check() error {
	if r.Context <= 1 {
		return nil
	}
	refuse := func(key, value, why string) error { return &RingError{Key: key, Value: value, Why: why} }
	if r.Context%2 != 0 {
		return refuse(ContextParallelSize, strconv.Itoa(r.Context), "balances causal attention over the ring (context_parallel_load_balance) only for an even size")
	}
	if r.Seq%(r.Context*r.Context) != 0 {
		return refuse(MaxTargetLength, strconv.Itoa(r.Seq), fmt.Sprintf("needs it a multiple of context_parallel_size squared (%d x %d = %d)", r.Context, r.Context, r.Context*r.Context))
	}
	if r.Attention != "flash" {
		return refuse(Attention, r.Attention, "runs only with attention flash (Tokamax Splash)")
	}
	if kind, ok := localAttention(r.Block, r.Model); ok {
		what := "the model has " + kind + " layers"
		if r.Block != "" {
			what = fmt.Sprintf("MaxText's %s block has %s layers", r.Block, kind)
		}
		return refuse(DecoderBlock, r.Block, fmt.Sprintf("runs only global or latent attention layers (configs/types.py line 4041, layers/attention_op.py line 625 @e591f30c), and %s", what))
	}
	if r.Model.MTPLayers > 0 {
		return refuse(MTPNumLayers, strconv.Itoa(r.Model.MTPLayers), "does not run multi-token prediction under load balancing")
	}
	if kv := r.Model.KV(); kv%max(r.Tensor, 1) != 0 {
		return refuse(ICIKey(Name(mesh.Tensor)), strconv.Itoa(r.Tensor), fmt.Sprintf("needs it to divide the %d key/value heads", kv))
	}
	var fe *FlashError
	if errors.As(FlashBlocks(r.Attention, r.Seq, r.Context), &fe) {
		return refuse(MaxTargetLength, strconv.Itoa(r.Seq), fe.ringWhy())
	}
	return nil
}

// localBlocks are MaxText's decoder blocks with layers of another
// attention_type than global or mla (common_types.py AttentionType), by
// that type: gemma2's, gemma3's and gemma4's local layers attend over a
// sliding window, llama4's RoPE layers in chunks (models/gemma2.py,
// gemma3.py, gemma4.py, llama4.py line 386 @e591f30c).
var localBlocks = map[string]string{"gemma2": "local_sliding", "gemma3": "local_sliding", "gemma4": "local_sliding", "llama4": "chunk"}

// localAttention is the attention type of block's layers that attend
// locally, and whether it has any; a model of no such block has them
// when some of its layers attend over a sliding window (model.Spec
// SlidingWindow), as MaxText's local_sliding layers do.
func localAttention(block string, m model.Spec) (string, bool) {
	if kind, ok := localBlocks[block]; ok {
		return kind, true
	}
	if m.Windowed() {
		return "local_sliding", true
	}
	return "", false
}
