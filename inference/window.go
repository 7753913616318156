package inference

// Models with sliding-window (local) and global attention layers, as
// tpu-inference serves Gemma 4. Source, cited as [ti-swa]:
//
//	vllm-project/tpu-inference @b8692ff01fa1:
//	tpu_inference/runner/kv_cache_manager.py get_kv_cache_spec: on the JAX path every layer
//	gets a page spec of its own KV heads and head width (common_utils.get_layer_kv_params:
//	a Gemma 4 global layer's num_global_key_value_heads of global_head_dim, a local layer's
//	num_key_value_heads of head_dim; heads padded to the TP size, head widths to 128), and
//	"sliding_window = None" ("TODO: Re-enable sliding_window once mixed dims with
//	sliding_window is supported"): a local layer's pages are a FullAttentionSpec's, held
//	for the sequence's whole length, not freed past the window; the torchax path drops the
//	window too when the layers' head widths differ (disable_sliding_window).
//	tpu_inference/kernels/experimental/batched_rpa/schedule.py (USE_BATCHED_RPA_KERNEL=1,
//	as .buildkite/benchmark/cases/daily/Gemma4-31B-*.json sets it): a query block's keys
//	start at the KV block of its first query's window, start_k_idx = max(0, k_len − q_len
//	+ q_idx·bq_sz − sliding_window + 1) // bkv_sz: a local layer reads and computes at most
//	the window's keys, in whole KV blocks. Its cache layout (batched_rpa/wrapper.py
//	get_kv_cache_shape, HEAD_ALONG_SUBLANE unless USE_BATCHED_RPA_SEQ_ON_LANE) is RPA v3's
//	[ti-kv]; its query and key blocks (tuned_params.py) are not modelled: the prompts'
//	kernel is costed with RPA v3's default blocks [ti-rpa3], as for every model, each
//	layer kind's query block from its own query heads a KV head.
//	tpu_inference/models/jax/gemma4.py Gemma4Attention: with attention_k_eq_v a global
//	layer's value is its key (v = k), and both are written to its cache: a global layer
//	caches keys and values like any other; only its weights lack a value projection.

import (
	"fmt"

	"shardlab/model"
	"shardlab/unit"
)

// layerKind is one kind of softmax layer: a spec whose heads and head
// width are the layer's, how many such layers there are, the keys it
// attends (0: the whole context), one layer's attention parameters and
// its key and value projections (1 when a global layer's keys are its
// values [ti-swa]).
type layerKind struct {
	m              model.Spec
	layers, window int
	attn           int64
	kvProj         int
}

// layerKinds are m's softmax layers by kind: the global ones, then,
// with a sliding window, the local ones.
func layerKinds(m model.Spec) []layerKind {
	p := m.ParamCount()
	if !m.Windowed() {
		return []layerKind{{m: m, layers: m.AttentionLayers(), attn: p.Attention, kvProj: 2}}
	}
	global := layerKind{m: m.Global(), layers: m.GlobalLayers(), attn: p.GlobalAttention, kvProj: 2}
	if m.GlobalKeyAsValue {
		global.kvProj = 1
	}
	return []layerKind{global, {m: m, layers: m.LocalLayers(), window: m.SlidingWindow, attn: p.Attention, kvProj: 2}}
}

// kvRow is what one token's keys and values take in one layer of kind m
// on one device holding h KV heads, in the kernel's layout [ti-kv]: a
// page row of align(2·h, p)/p words of p packed elements, each
// align(head_dim, 128) wide.
func kvRow(m model.Spec, h int, kv Dtype) int {
	p := kv.packing()
	return ceilDiv(2*h, p) * p * ceilDiv(m.Head(), 128) * 128 * kv.Bytes()
}

// KVBytes is the KV one sequence of n tokens has its attention read on
// one device of a tp-way replica: in each global layer every token's
// row, in each local layer the last window tokens' only (a sliding-window
// layer never looks further back) [ti-swa]. It is n ×
// KVBytesPerToken while n is within the window, and past it the local
// layers' share stays at the window's. tpu-inference still holds the
// local layers' pages for all n tokens (their KVBytesPerToken, which
// sizes the cache), so this is what a step reads, not what it holds.
func KVBytes(m model.Spec, tp int, kv Dtype, n int) unit.Bytes {
	var b unit.Bytes
	for _, k := range kindsPerToken(m, tp, kv, DPAttention(m)) {
		b += k.bytes * unit.Bytes(model.AttendedKeys(n-1, k.window))
	}
	return b
}

// kindBytes is one layer kind's KV bytes a token on one device, all its
// layers, and the keys the kind attends.
type kindBytes struct {
	bytes  unit.Bytes
	window int
}

// kindsPerToken is kvBytesPerToken by layer kind.
func kindsPerToken(m model.Spec, tp int, kv Dtype, dp bool) []kindBytes {
	if dp {
		tp = 1
	}
	var out []kindBytes
	for _, k := range layerKinds(m) {
		out = append(out, kindBytes{unit.Bytes(k.layers * kvRow(k.m, kvPerDevice(k.m, tp), kv)), k.window})
	}
	return out
}

// localKVShare is the share of a token's KV bytes (kvBytesPerToken) that
// the local layers hold: 0 without a window.
func localKVShare(m model.Spec, tp int, kv Dtype, dp bool) float64 {
	if !m.Windowed() || m.MLA() {
		return 0
	}
	ks := kindsPerToken(m, tp, kv, dp)
	return float64(ks[1].bytes) / float64(ks[0].bytes+ks[1].bytes)
}

// WindowWork is a step's attention work over the local layers of a
// model with a sliding window, counted as Batch counts it over every
// layer but with each sequence's keys limited to the window [ti-swa];
// zero without one.
type WindowWork struct {
	ContextTokens  int
	AttendedPairs  float64
	DecodeKeys     int
	PrefillPairs   float64
	KernelPairs    float64
	KernelKVTokens float64
	PrefillContext int
}

// windowKeys is the keys a local layer of window w reads for n new
// tokens after c computed ones: from c−w+1 (or 0) to c+n−1.
func windowKeys(c, n, w int) int { return c + n - max(0, c-w+1) }

// add counts n new tokens after c computed ones in a local layer of
// window w, as prefill when the kernel computes them (kernel) with
// query blocks of bq and key blocks of bkv.
func (ww *WindowWork) add(c, n, w int, kernel bool, bq, bkv int) {
	keys, pairs := windowKeys(c, n, w), model.AttendedPairs(c, n, w)
	ww.ContextTokens += keys
	ww.AttendedPairs += pairs
	if n == 1 {
		ww.DecodeKeys += keys
	}
	if kernel && n > 1 {
		kp, kv := prefillKernel(c, n, bq, bkv, w)
		ww.PrefillPairs += pairs
		ww.PrefillContext += keys
		ww.KernelPairs, ww.KernelKVTokens = ww.KernelPairs+kp, ww.KernelKVTokens+kv
	}
}

// windowReason says how a model with a sliding window is served on
// layout b: each kind's KV heads per device and its share of a token's
// KV, all of it held in pages for the whole sequence, while a step reads
// and computes at most the window of the local layers [ti-swa].
func windowReason(r Request, b Layout) string {
	m, g := r.Model, r.Model.Global()
	ks := kindsPerToken(m, b.TP, r.KVCache, r.AttentionDP())
	rep := replicated(g, b.TP)
	if r.AttentionDP() {
		rep = "" // each device every KV head of its own sequences
	}
	return fmt.Sprintf("sliding window of %d tokens in %d of %d layers, global attention in %d (%d KV heads of %d, %d per device%s): a token's KV is %v in the global layers and %v in the local ones; tpu-inference holds the local layers' pages for the whole sequence too (no sliding-window pages with mixed head widths), but a step reads and computes only their window",
		m.SlidingWindow, m.LocalLayers(), m.Layers, m.GlobalLayers(), g.KV(), g.Head(), max(g.KV()/b.TP, 1), rep, ks[0].bytes, ks[1].bytes)
}
