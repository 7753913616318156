package inference

import (
	"fmt"
	"time"

	"shardlab/collective"
	"shardlab/hw"
	"shardlab/mesh"
	"shardlab/model"
	"shardlab/unit"
)

// replicaCost is what one device of a tp-way replica offers and holds,
// the terms every step time here is built from: the device's share of
// its chip's MXU peak and HBM bandwidth, the weights it holds and reads
// each step (of a mixture of experts only the experts the step's tokens
// touch), the split of the attention work, and the ICI ring its
// collectives run on. Estimate's rooflines and Simulate's steps both use
// it.
type replicaCost struct {
	m    model.Spec
	tp   int
	dp   bool    // attention data parallel (Request.AttentionDP)
	peak float64 // bf16 FLOP/s of one device
	// wPeak is the FLOP/s of one device for the quantized weights'
	// matmuls: fp8 weights are multiplied by activations quantized to fp8
	// on the fly, so at the chip's fp8 peak where it publishes one
	// (tpu-inference @2f7640057816: VllmFp8Config.get_quant_method gives
	// every linear layer and fused MoE of an fp8 checkpoint its fp8
	// method, layers/common/linear.py sharded_quantized_matmul
	// quantizes x to the weights' dtype, kernels/quantized_matmul/util.py
	// xla_quantized_matmul; the output projection, a ParallelLMHead, is
	// no LinearBase and stays unquantized). Otherwise peak: the output
	// projection, the attention core and linear attention always.
	wPeak float64
	bw    float64 // HBM bytes/s of one device
	// mxuIn is the elements a second the device's MXUs take into the
	// operand they hold, a row of width elements a cycle each: its peak
	// over the 2·width² FLOPs of an MXU's cycle, times width.
	mxuIn float64
	chips int // chips of the replica: the all-reduce's ring
	link  collective.Link
	// weights is the bytes a device holds, experts the routed experts'
	// share of them, expert one routed expert.
	weights, experts, expert float64
	// matmul and attnMatmul are the matmul FLOPs of one token, all of
	// them and the attention projections'; logits the output
	// projection's; core the attention FLOPs of one (query, key) pair
	// over the layers that attend the whole context, coreLocal over the
	// local layers of a model with a sliding window (0 without).
	matmul, attnMatmul, logits, core, coreLocal float64
	// kvCopies is the key and value projections' FLOPs of one token
	// that a device adds, above its 1/tp share of attnMatmul, by
	// computing a replicated KV head (replicatedKVFLOPs); 0 without.
	kvCopies float64
	// kvLocal is the share of a token's KV bytes the local layers hold
	// (localKVShare; 0 without a window).
	kvLocal float64
	// routed is the routed experts' share of matmul (a token's top-k
	// experts over the MoE layers), expertRow the FLOPs of one row of
	// a device's grouped matmuls (one token in one expert, over the MoE
	// layers, at the device's width of the expert); 0 for a dense model.
	// rows caches ExpertRows by a step's tokens.
	routed, expertRow float64
	rows              map[int]float64
	// allRows: every device dispatches all the routed rows
	// (Request.MoEAllRows [ti-ep-rows]).
	allRows bool
}

// newReplicaCost builds the cost terms of one tp-way replica on r's
// slice. tp must be one of TPSizes(r.Model, r.Slice); anything else is a
// bug and panics.
func newReplicaCost(r Request, tp int) replicaCost {
	c := r.Slice.Chip
	per := c.JAXDevicesPerChip
	m := r.Model
	rc := replicaCost{m: m, tp: tp, dp: r.AttentionDP(), allRows: r.MoEAllRows, peak: float64(c.PeakBF16) / float64(per), bw: float64(c.HBMBandwidth) / float64(per),
		chips: ceilDiv(tp, per), link: collective.Link{HopLatency: hw.ICIHopLatency},
		weights: float64(weightBytes(m, tp, r.Weights, r.AttentionDP())), experts: float64(ExpertWeightBytes(m, tp, r.Weights)), expert: expertBytes(m, r.Weights),
		matmul: 2 * float64(m.MatmulParams()), attnMatmul: attentionMatmulFLOPs(m),
		logits: 2 * float64(m.Vocab) * float64(m.DModel), kvLocal: localKVShare(m, tp, r.KVCache, r.AttentionDP())}
	rc.core, rc.coreLocal = attentionCoreFLOPs(m)
	if !rc.dp {
		rc.kvCopies = replicatedKVFLOPs(m, tp)
	}
	rc.wPeak = rc.peak
	if p, ok := c.Peak(hw.FP8); ok && r.Weights == FP8 {
		rc.wPeak = float64(p) / float64(per)
	}
	if m.MoE() {
		row := 2 * float64(m.MoELayers()) * float64(m.ParamCount().Expert)
		rc.routed = float64(m.ExpertsPerToken) * row
		rc.expertRow = row * float64(ExpertParallel(m, tp)) / float64(tp)
		rc.rows = map[int]float64{}
	}
	rc.mxuIn = rc.peak / (2 * float64(c.MXUDim))
	if rc.chips > 1 {
		// the ICI ring of a TP group is where package mesh places a
		// tensor axis of that many chips on the slice
		ms, err := hw.NewMultislice(r.Slice, 1, 0)
		if err == nil {
			var m mesh.Mesh
			m, err = mesh.New(ms, mesh.Degree{Axis: mesh.Tensor, ICI: rc.chips, DCN: 1}, mesh.Degree{Axis: mesh.Data, ICI: r.Slice.Chips() / rc.chips, DCN: 1})
			if err == nil {
				rc.link = m.Link(mesh.Tensor).Collective()
			}
		}
		if err != nil {
			panic(fmt.Sprintf("inference: TP %d is not one of TPSizes on %s: %v", tp, r.Slice.AcceleratorType(), err))
		}
	}
	return rc
}

// allReduce is the collectives of one forward pass over tokens tokens,
// of the bf16 residual stream, over the ICI ring of the replica's chips.
// The devices of one chip (a TPU7x chip's two TensorCores, each with its
// own HBM) also exchange it, over the chip's die-to-die link, which is
// not costed: no rate or latency for it is published beyond "six times
// faster than a 1D ICI link", and package hw holds none (inchip.go;
// the plan warns, inChipWarning). Under tensor parallelism
// two all-reduces a layer, after the attention output and after the MLP
// down projection (or the experts' psum over the expert axis [ti-ep]).
// Under attention data parallelism the attention needs none; the MLP's
// tokens are all-gathered before it and reduce-scattered after [ti-mla].
func (rc replicaCost) allReduce(tokens int) time.Duration {
	size := unit.Bytes(tokens * rc.m.DModel * 2)
	var t time.Duration
	for _, c := range passCollectives(rc.m, rc.dp) {
		t += time.Duration(c.n) * collective.Time(c.op, rc.chips, size, rc.link)
	}
	return t
}

// opCount is n collectives of kind op.
type opCount struct {
	op collective.Op
	n  int
}

// passCollectives is the collectives a forward pass of model m runs over
// a replica's devices, each of the bf16 residual stream of the pass's
// tokens (replicaCost.allReduce): two all-reduces a layer, or, under
// attention data parallelism (dp), an all-gather and a reduce-scatter a
// layer. The one list the cost and the in-chip warning count.
func passCollectives(m model.Spec, dp bool) []opCount {
	if dp {
		return []opCount{{collective.AllGather, m.Layers}, {collective.ReduceScatter, m.Layers}}
	}
	return []opCount{{collective.AllReduce, 2 * m.Layers}}
}

// weightsRead is the weight bytes a device reads from HBM in a step of
// tokens tokens: all it holds but the routed experts, and of those only
// its share of the ones the tokens touch (ActiveExperts: under expert
// parallelism the device's experts among them, else a 1/tp slice of
// each; the same bytes on average). Load imbalance between the devices
// of an expert-parallel replica is not modelled.
func (rc replicaCost) weightsRead(tokens int) float64 {
	if rc.experts == 0 {
		return rc.weights
	}
	active := float64(rc.m.MoELayers()) * ActiveExperts(rc.m, tokens) * rc.expert / float64(rc.tp)
	return rc.weights - rc.experts + min(active, rc.experts)
}

// kvShare is the share of the step's KV context (counted in KVPerToken)
// that the busiest device reads: all of it under tensor parallelism,
// where KVPerToken is already the device's heads, its own sequences'
// under attention data parallelism.
func (rc replicaCost) kvShare(seqs int) float64 {
	if !rc.dp {
		return 1
	}
	return attentionSplit(rc.dp, rc.tp, seqs)
}

// expertFLOPs is the FLOPs of the routed experts' grouped matmuls on one
// device for a step of tokens tokens: the rows its groups compute in
// whole tiles (ExpertRows [ti-gmm]) at expertRow each. 0 for a dense
// model.
func (rc replicaCost) expertFLOPs(tokens int) float64 {
	if rc.rows == nil || tokens < 1 {
		return 0
	}
	r, ok := rc.rows[tokens]
	if !ok {
		r = ExpertRows(rc.m, rc.tp, tokens)
		rc.rows[tokens] = r
	}
	return r * rc.expertRow
}

// decodeKeyTime is the MXU time, in seconds, of one key that decode
// queries attend, on one device: over every layer, the key and the value
// each pass the MXU once for every group of query rows the engine
// computes together. A decode query is a few rows (one token, or
// JetStream's 2 [jsp-gqa], times the query heads of a group), far fewer
// than the MXU's width, so its scores and weighted sum are
// matrix-vector products: the keys and values are the operand the
// systolic MXU holds, and it takes that operand in one row of width
// elements a cycle whatever the rows of the query. A device's MXUs so
// take peak / (2·width) elements a second, head_dim of them a key-head
// (v5e: one key a cycle of each 128-wide MXU; v6e and TPU7x: two on
// their 256-wide ones). vLLM's ragged paged attention computes the
// query heads of one KV head together [ti-rpa]: a pass a KV head of the
// device. jetstream-pytorch expands the cache to the query heads first
// (repeat_kv [jsp-gqa]): a pass a query head. Latent attention on
// tpu-inference attends over the cached latent itself, every query head
// at once [ti-mla]: a pass a key of its scores' kv_lora_rank +
// qk_rope_head_dim elements and one of its sum's kv_lora_rank.
//
// Of a model with a sliding window, each layer kind with its own KV heads
// and head width: keyTimes gives the global layers' and the local
// layers' apart, decodeKeyTime their sum.
func (rc replicaCost) decodeKeyTime(e Engine) float64 {
	global, local := rc.keyTimes(e)
	return global + local
}

// keyLocal is the local layers' share of decodeKeyTime(e): 0 without a
// window.
func (rc replicaCost) keyLocal(e Engine) float64 {
	if g, l := rc.keyTimes(e); l > 0 {
		return l / (g + l)
	}
	return 0
}

// keyTimes is decodeKeyTime over the layers that attend the whole
// context and over the local layers (0 without a window).
func (rc replicaCost) keyTimes(e Engine) (global, local float64) {
	if rc.m.MLA() {
		return float64(rc.m.Layers) * float64(LatentElements(rc.m)+rc.m.KVLoRARank) / rc.mxuIn, 0
	}
	var t [2]float64
	for i, k := range layerKinds(rc.m) {
		heads := max(k.m.KV()/rc.tp, 1)
		if rc.dp {
			heads = k.m.KV() // every KV head of the device's own sequences
		}
		if e == JetStream {
			heads = max(k.m.Heads/rc.tp, 1)
		}
		t[i] = float64(k.layers) * 2 * float64(heads) * float64(k.m.Head()) / rc.mxuIn
	}
	return t[0], t[1]
}

// attentionMatmulFLOPs is the attention projections' matmul FLOPs of one
// token over all layers: the softmax layers' (kind by kind) and, of a
// hybrid model, the linear-attention layers'.
func attentionMatmulFLOPs(m model.Spec) float64 {
	p := m.ParamCount()
	n := float64(p.LinearLayers) * float64(p.LinearAttention)
	for _, k := range layerKinds(m) {
		n += float64(k.layers) * float64(k.attn)
	}
	return 2 * n
}

// replicatedKVFLOPs is the matmul FLOPs of one token that each device
// of a tp-way replica computes beyond its 1/tp share of the attention
// projections, where tp is above a layer kind's KV heads: tpu-inference
// replicates the K and V projections' weights so that each device holds
// one KV head [ti-shard], and computes that head's key and value, 2 ×
// d_model × head_dim each a layer, where its share would be KV/tp of
// one. 0 where tp does not exceed the KV heads.
func replicatedKVFLOPs(m model.Spec, tp int) float64 {
	var n float64
	for _, k := range layerKinds(m) {
		if kv := k.m.KV(); tp > kv {
			n += float64(k.layers) * 2 * float64(k.kvProj) * float64(m.DModel) * float64(k.m.Head()) * (1 - float64(kv)/float64(tp))
		}
	}
	return n
}

// moeDispatch is the seconds the busiest device spends moving the routed
// rows of a step of tokens (padded) tokens, in the ops that only move
// them [ti-ep]: tpu-inference's fused_moe_func sorts the tokens' top-k
// rows by expert and gathers the rows of the device's own experts
// (ragged_gather: each bf16 row read and written), the grouped matmuls
// work on them, and ragged_gather_reduce reads each output row back into
// its token. Under expert parallelism a device holds 1/EP of the rows
// (tokens·k/EP on average), else all tokens·k; per row 3 × 2·d_model
// bytes over every MoE layer, at the HBM roofline (the grouped matmuls'
// own reads and writes overlap their MXU work). Before tpu-inference's
// PR #2294 (Request.MoEAllRows) every device gathered all tokens·k rows
// and gathered all of them back, XLA gathers of the same 3 × 2·d_model
// bytes a row (the gather read and written, the gather back read and
// summed into its token in one fusion) [ti-ep-rows]. 0 for a dense model.
func (rc replicaCost) moeDispatch(tokens int) float64 {
	if !rc.m.MoE() {
		return 0
	}
	rows := float64(tokens) * float64(rc.m.ExpertsPerToken)
	if !rc.allRows {
		rows /= float64(ExpertParallel(rc.m, rc.tp))
	}
	return float64(rc.m.MoELayers()) * rows * 3 * 2 * float64(rc.m.DModel) / rc.bw
}

// linearAttention is the seconds a hybrid model's linear-attention
// recurrences take over batch b on one device, as an op of their own
// [ti-gdn]: every scheduled sequence's state read and written back, or
// the gated delta rule's FLOPs of the batch's tokens (split tp ways by
// head), whichever is longer. 0 without linear attention.
func (rc replicaCost) linearAttention(b Batch) float64 {
	if !rc.m.Hybrid() {
		return 0
	}
	if rc.dp {
		// the whole states of the busiest device's own sequences
		share := attentionSplit(true, rc.tp, b.Seqs)
		state := 2 * share * float64(b.Seqs) * float64(RecurrentStateBytes(rc.m, 1)) / rc.bw
		return max(state, share*float64(b.Tokens)*rc.m.LinearAttentionFLOPsPerToken()/rc.peak)
	}
	state := 2 * float64(b.Seqs) * float64(RecurrentStateBytes(rc.m, rc.tp)) / rc.bw
	return max(state, float64(b.Tokens)*rc.m.LinearAttentionFLOPsPerToken()/float64(rc.tp)/rc.peak)
}

// matmulFLOPs is the FLOPs the busiest device computes for batch b at
// its padding: the padded tokens' matmuls but the output projection (of a
// mixture of experts the routed experts' in whole tiles: expertFLOPs), the
// output projection of the padded sequences (whose logits are sampled),
// and the attention scores of its (query, key) pairs, the attention
// split by attentionSplit.
func (rc replicaCost) matmulFLOPs(b Batch) float64 {
	w, r := rc.matmulByPeak(b)
	return w + r
}

// matmulByPeak is matmulFLOPs split by the peak they run at: the
// weights' matmuls (at wPeak) and the rest, the output projection and
// the attention scores (at peak).
func (rc replicaCost) matmulByPeak(b Batch) (weights, rest float64) {
	tp := float64(rc.tp)
	s := attentionSplit(rc.dp, rc.tp, b.Seqs)
	pairs, window := b.AttendedPairs, b.Window.AttendedPairs
	if b.KernelPairs > 0 {
		pairs -= b.PrefillPairs // the kernel's own op: prefillKernel
		window -= b.Window.PrefillPairs
	}
	t := float64(b.PaddedTokens)
	weights = t*(rc.matmul-rc.attnMatmul-rc.logits-rc.routed)/tp + rc.expertFLOPs(b.PaddedTokens) + s*t*rc.attnMatmul + t*rc.kvCopies
	return weights, float64(b.PaddedSeqs)*rc.logits/tp + s*(pairs*rc.core+window*rc.coreLocal)
}

// matmulTime is the seconds matmulFLOPs takes, each part at its peak.
func (rc replicaCost) matmulTime(b Batch) float64 {
	w, r := rc.matmulByPeak(b)
	return w/rc.wPeak + r/rc.peak
}

// prefillKernel is the seconds the attention kernel takes over batch b's
// prompt chunks on the busiest device, as an op of its own after the
// matmuls [ti-rpa3]: the MXU time of the (query, key) pairs it computes
// in whole blocks, or the HBM time of the KV it reads (kv bytes a token
// on the device) once a query block, whichever is longer (the kernel
// streams the KV through two buffers while it computes [ti-rpa]). 0
// without the kernel's blocks.
func (rc replicaCost) prefillKernel(b Batch, kv float64) float64 {
	if b.KernelPairs == 0 {
		return 0
	}
	s := attentionSplit(rc.dp, rc.tp, b.Seqs)
	compute := s*b.KernelPairs*rc.core + s*b.Window.KernelPairs*rc.coreLocal
	return max(compute/rc.peak, rc.kvShare(b.Seqs)*rc.byKind(b.KernelKVTokens, b.Window.KernelKVTokens, rc.kvLocal)*kv/rc.bw)
}

// byKind weighs a count over the layers that attend the whole context
// (all) and over the local layers (window) by the local layers' share
// of the quantity it multiplies: all without a window.
func (rc replicaCost) byKind(all, window, local float64) float64 {
	return (1-local)*all + local*window
}

// samplingBytes is the HBM bytes a logit costs tpu-inference's greedy
// sampling: the bf16 logits converted to fp32 (2 read, 4 written), the
// copy XLA inserts to materialise sample()'s aliased output (4 and 4),
// and the argmax over the fp32 copy (4). Measured by XProf on v5e-1 for
// f32[512, 256000]: convert 1,237 µs, copy 1,562 µs, argmax 696 µs, each
// near the HBM roofline of its bytes (vllm-project/tpu-inference issue
// #3127, 2026-08-09, tpu-inference 0.24 and 0.26; PR #3363: "about 3.5 ms
// of a 28 ms decode step"). Every device of a tensor-parallel replica
// samples the whole vocabulary: the logits are sharded over attention
// data parallelism only (tpu_inference/layers/jax/sample/sampling.py
// sample, P(ATTN_DATA, None), @b8692ff0).
const samplingBytes = 2 + 4 + 4 + 4 + 4

// sampling is the seconds tpu-inference's sampling of seqs padded
// sequences takes on one device (samplingBytes a logit).
func (rc replicaCost) sampling(seqs int) float64 {
	return float64(seqs) * float64(rc.m.Vocab) * samplingBytes / rc.bw
}

// stepOverhead is each engine's fixed time a step that no roofline gives:
// the host's scheduling and input preparation, the transfers to and from
// the TPU, and the dispatch of the step's programs. No engine publishes
// it (tpu-inference's own profiles show gaps of 11.4 to 14.6 ms between
// consecutive steps with speculative decoding, PR #2581), so it is
// fitted, one value an engine, on the calibration rows of
// validate/serving.yaml only (validate.FitStepOverhead, held to these
// values by validate's TestStepOverheadIsFitted), never on the rows it is
// tested on:
//
//	vLLM (tpu-inference): 7.7 ms, on recipes-v6e8-llama3.3-70b-c64.
//	JetStream: 0, on jsp-llama3-8b-bf16-b128, jsp-llama2-7b-bf16-b96 and
//	jsp-llama2-13b-bf16-b48, which the model under-predicts with none
//	(a fixed time is not negative).
var stepOverhead = [...]time.Duration{
	VLLM:      7700 * time.Microsecond,
	JetStream: 0,
}

// StepOverhead is engine e's fixed time a step (stepOverhead).
func StepOverhead(e Engine) time.Duration {
	if e < 0 || int(e) >= len(stepOverhead) {
		return 0
	}
	return stepOverhead[e]
}
