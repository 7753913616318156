package inference

// The prompts' attention as tpu-inference's ragged paged attention
// kernel computes it. Source, cited as [ti-rpa3]:
//
//	vllm-project/tpu-inference:tpu_inference/kernels/ragged_paged_attention/v3/kernel.py
//	@b8692ff01fa1: for a sequence of q_len new tokens after kv_len − q_len computed ones,
//	process() loops over query blocks of bq_sz tokens (the last one computed whole, its
//	shape static); the i-th attends effective_kv_len = min(kv_len, kv_q_gap + (i+1)·bq_sz)
//	keys (the causal mask skips the KV blocks after it), fetched from HBM for that query
//	block (_fetch_bkv: the KV of the context is streamed again for every query block), and
//	computed in sub-blocks of bkv_csz keys (attention_loop: cdiv(effective_bkv_sz,
//	bkv_csz) of them, each bkv_csz wide, the keys past the causal edge masked, not
//	skipped). get_default_block_sizes (no block sizes are passed: layers/jax/attention/
//	attention.py gives envs.RPA_V3_*_BLOCK_SIZES, unset by default) for a prefill or mixed
//	batch: bq_sz = min(1024 // q_heads_per_kv_head, max_q // 2) on v5 and v6,
//	min(2048 // q_heads_per_kv_head, max_q // 2) on v7, with q_heads_per_kv_head rounded up
//	to a power of two and max_q the step's padded tokens (a power of two); bkv_csz =
//	min(512, align(max_kv // 2, page_size)), max_kv the pages of a sequence times the page.

import (
	"shardlab/hw"
	"shardlab/model"
)

// kernelBlocks is the query block base and the key compute block
// tpu-inference's attention kernel uses for prompts on generation g, for
// tp devices of m, pages of page tokens and sequences of maxModelLen
// [ti-rpa3]; zeros where the kernel has no default (before v5).
func kernelBlocks(g hw.Generation, m model.Spec, tp, page, maxModelLen int) (query, keys int) {
	base := 0
	switch g {
	case hw.V5e, hw.V5p, hw.V6e:
		base = 1024
	case hw.TPU7x:
		base = 2048
	default:
		return 0, 0
	}
	qh := nextPow2(max(max(m.Heads/tp, 1)/kvPerDevice(m, tp), 1))
	maxKV := ceilDiv(maxModelLen, page) * page
	return max(base/qh, 1), min(512, ceilDiv(maxKV/2, page)*page)
}

// prefillKernel is what the kernel does for one sequence's chunk of n
// new tokens after c computed ones, in query blocks of bq tokens and key
// sub-blocks of bkv [ti-rpa3]: the (query, key) pairs it computes (every
// block whole) and the KV tokens it reads (each query block's causal
// prefix, again for every block). In a layer with a sliding window of w
// tokens (0: none) a query block's keys start at the key block of its
// first query's window [ti-swa].
func prefillKernel(c, n, bq, bkv, w int) (pairs, kvTokens float64) {
	for end := bq; ; end += bq {
		eff, lo := c+min(n, end), 0
		if w > 0 {
			lo = max(0, c+end-bq-w+1) / bkv * bkv
		}
		pairs += float64(bq) * float64(ceilDiv(eff, bkv)*bkv-lo)
		kvTokens += float64(eff - lo)
		if end >= n {
			return pairs, kvTokens
		}
	}
}
