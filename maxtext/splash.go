package maxtext

import (
	"fmt"
	"strconv"

	"shardlab/internal/errtext"
)

// MaxText runs attention flash on TPU through a splash kernel, which cuts
// the sequence into blocks and refuses one that does not divide it. The
// rule is held here, once; export refuses a config that breaks it and
// plan warns of it, or refuses it under the MaxText framework.
//
// Sources, beside [base.yml] and [types.py]:
//
//	[attention_op.py] AI-Hypercomputer/maxtext:src/maxtext/layers/attention_op.py @e591f30c
//	[mask_info.py]    jax-ml/jax:jax/experimental/pallas/ops/tpu/splash_attention/splash_attention_mask_info.py @02338e28ae07e12e373069cb2d87b463a852fcca
//	[ring.py]         AI-Hypercomputer/maxtext:src/maxtext/kernels/attention/tokamax_ring_attention.py @e591f30c
//	[tokamax_mask_info.py] AI-Hypercomputer/maxtext:src/maxtext/kernels/tokamax_splash_attention/splash_attention_mask_info.py @e591f30c
//	[kernel.py]       jax-ml/jax:jax/experimental/pallas/ops/tpu/splash_attention/splash_attention_kernel.py @cec06d116c05f0d52adfceee3d3b730fdbcb0ce5 (the same lines @047c691c8f31fe00f68c335cf818d1a96b8c7c17)

// SplashBlock is the tokens of a block of MaxText's splash kernels:
// sa_block_q, sa_block_kv and every other sa_block_* key ([base.yml]
// lines 1159-1166), which the local_sa_block_* keys of sliding-window
// layers inherit ([types.py] lines 3662-3677); no model config sets
// them, nor does export.
const SplashBlock = 512

// splashLanes is the splash kernels' NUM_LANES, JAX's ([kernel.py] line
// 39) and Tokamax Splash's
// (kernels/tokamax_splash_attention/splash_attention_kernel.py line 43
// @e591f30c) alike: JAX's kernel needs its key/value compute block a
// multiple of it ([kernel.py] _splash_attention_forward, lines 969-970;
// and the dq backward's key/value block, lines 1463-1464), and under
// context_parallel_load_balance the ring's dkv query block must be one
// ([ring.py] lines 226-230).
const splashLanes = 128

// FlashError is MaxText's flash attention refusing a sequence its splash
// kernel cannot cut into blocks: the sequence (max_target_length) and
// the context-parallel size it is split over (1: none, no ring).
type FlashError struct {
	Seq, Context int
}

func (e *FlashError) Error() string {
	return fmt.Sprintf("maxtext: flash attention: %s %d: %s", MaxTargetLength, e.Seq, e.Why())
}

// Why says what the kernel does with the sequence and what it needs, to
// follow the key and its value: "MaxText's flash attention cuts ...".
func (e *FlashError) Why() string {
	if e.Context <= 1 {
		return fmt.Sprintf("MaxText's flash attention (JAX's splash kernel) cuts the sequence into blocks of min(%d, max_target_length) tokens (sa_block_q and the other sa_block_* keys, base.yml), pads none, and needs its key/value blocks a multiple of %d (the kernel's lanes), so it needs it a multiple of %d, or exactly %s (%s)",
			SplashBlock, splashLanes, SplashBlock, smallShares(), nearBlocks(e.Seq))
	}
	return "MaxText's ring attention (Tokamax Splash) " + e.ringWhy()
}

// ringWhy is Why for a sequence split over a ring, to follow "MaxText's
// ring" (a RingError's Why).
func (e *FlashError) ringWhy() string {
	if e.Seq%e.Context != 0 {
		return fmt.Sprintf("splits it over context_parallel_size %d, which does not divide it", e.Context)
	}
	var small []string
	for n := splashLanes; n < SplashBlock; n += splashLanes {
		small = append(small, strconv.Itoa(n*e.Context))
	}
	return fmt.Sprintf("cuts each device's share of it, max_target_length / context_parallel_size = %d / %d = %d tokens, into blocks of min(%d, share), and balances the load only for blocks that are multiples of %d: it needs it a multiple of %d x %d = %d, or exactly %s (shares of %s)",
		e.Seq, e.Context, e.Seq/e.Context, SplashBlock, splashLanes, e.Context, SplashBlock, e.Context*SplashBlock, errtext.OrList(small), smallShares())
}

// FlashBlocks is nil when MaxText's flash attention runs a sequence of
// seq tokens split over context JAX devices (MaxText's
// context_parallel_size; at most 1: none), or attention is not flash
// (dot_product has no blocks); else a *FlashError.
//
// Without context parallelism MaxText runs JAX's splash kernel with
// blocks of min(512, seq) tokens ([attention_op.py] lines 1780-1788),
// padding the sequence to a block only for compressed attention (lines
// 1840-1850). The kernel raises "q_block_size should divide q_seq_len"
// ([mask_info.py] _process_mask), and "bkv_compute=... must be a
// multiple of 128" ([kernel.py] lines 969-970; the dq backward's
// "bkv=...", lines 1463-1464): seq is a multiple of 512, or 128, 256 or
// 384. The kernel checks its query block against no sublane count
// (NUM_SUBLANES, 8, shapes only its segment-id and logsumexp buffers),
// and a multiple of 128 is one of 8 anyway. attention autoselected would
// fall back to dot_product below 128 tokens ([attention_op.py] line
// 1416), but flash, as export writes it, runs the kernel (line 1439).
//
// With context parallelism, as export writes it (ring, load-balanced,
// Tokamax Splash), the blocks are of min(512, seq/context) tokens
// ([ring.py] build_splash_config, lines 218-225), each shard's length
// must be a multiple of its block ([tokamax_mask_info.py] _process_mask,
// lines 429-443: "q_block_size should divide q_seq_len_per_shard"), and
// the load balance needs the dkv block a multiple of 128 (lines
// 226-230): the share is a multiple of 512, or 128, 256 or 384, the rule
// without context for the whole sequence.
func FlashBlocks(attention string, seq, context int) error {
	if attention != "flash" {
		return nil
	}
	context = max(context, 1)
	share := seq / context
	if seq%context != 0 || share < 1 {
		return &FlashError{Seq: seq, Context: context}
	}
	block := min(SplashBlock, share)
	if share%block != 0 || block%splashLanes != 0 {
		return &FlashError{Seq: seq, Context: context}
	}
	return nil
}

// nearBlocks names the sequences the kernel takes without context
// nearest seq, a length it refuses: the one below it, if any, and the
// one above ("such as 256 or 384", "such as 11776 or 12288"), or the two
// smallest ("such as 128 or 256").
func nearBlocks(seq int) string {
	var near []string
	for n := seq - 1; n > 0 && len(near) == 0; n-- {
		if FlashBlocks("flash", n, 1) == nil {
			near = append(near, strconv.Itoa(n))
		}
	}
	for n := seq + 1; len(near) < 2; n++ {
		if FlashBlocks("flash", n, 1) == nil {
			near = append(near, strconv.Itoa(n))
		}
	}
	return "such as " + errtext.OrList(near)
}

// smallShares are the lengths below SplashBlock whose blocks the kernels
// take, a sequence without context or a share of one over the ring:
// "128, 256 or 384".
func smallShares() string {
	var s []string
	for n := splashLanes; n < SplashBlock; n += splashLanes {
		s = append(s, strconv.Itoa(n))
	}
	return errtext.OrList(s)
}
