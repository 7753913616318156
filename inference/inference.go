// Package inference plans how to serve a decoder-only transformer with vLLM
// and its TPU backend, tpu-inference: the layouts it can run over the
// whole VM or slice (tensor parallelism counted in JAX devices as
// tpu-inference counts them, data parallelism of replicas, expert
// parallelism of a mixture of experts, attention data parallelism under
// latent attention), the HBM of one device (weights, the paged KV cache in
// the attention kernel's layout, activations, the share
// --gpu-memory-utilization leaves), whether vLLM starts a layout (its
// pages hold one sequence of the maximum model length) and whether they
// hold its sequences at the requests' lengths without preemption, the
// prefill (in chunks of the token budget, one a step) and decode
// rooflines with their collectives, and the choice of a layout by an
// objective (throughput or latency) under TTFT and ITL SLOs.
//
// Sources, cited as [tag] below:
//
//	[ti-kv]    vllm-project/tpu-inference:tpu_inference/kernels/ragged_paged_attention/v3/kernel.py
//	           get_kv_cache_shape, get_dtype_packing @b8692ff0
//	[ti-shard] vllm-project/tpu-inference @b8692ff0: tpu_inference/utils.py 240-246 get_padded_num_heads
//	           (heads below the sharding size are padded to it, which must be a multiple of them;
//	           above it they must be a multiple of it), used for the KV cache by
//	           runner/kv_cache_manager.py get_kv_cache_spec 531-533 ("Pad num_kv_heads to multiple
//	           of TP size") and for the weights by models/jax/llama3.py and qwen3.py;
//	           runner/kv_cache.py get_kv_cache_shape_with_mesh 91-100 (each device's cache is
//	           get_kv_cache_shape of padded KV heads / TP: one head a device above the KV heads);
//	           layers/common/attention_interface.py 393-406 (keys and values repeated TP/KV times,
//	           "We replicate KV heads to match tp_size", a ValueError unless TP is a multiple);
//	           layers/vllm/custom_ops/linear.py 73-115 (the K and V projections' weights
//	           replicated likewise, one KV head a device); layers/common/sharding.py (the KV
//	           cache's useful split, 2·KV heads/packing)
//	[ti-info]  vllm-project/tpu-inference:tpu_inference/tpu_info.py get_num_cores_per_chip
//	           (1 on v5litepod and v6e, else 2) @b8692ff0
//	[ti-page]  vllm-project/tpu-inference:tpu_inference/layers/vllm/backends/flash_attn.py
//	           get_page_size, get_min_page_size @b8692ff0
//	[ti-par]   vllm-project/tpu-inference:docs/includes/parallelism.md @b8692ff0
//	           (single-host TP, DP: passing; multi-host TP, DP: untested; PP: passing on both)
//	[ti-bench] vllm-project/tpu-inference:.buildkite/benchmark/cases/daily/Llama-3.3-70B-dataset_mmlu-inlen_1800-outlen_128.json
//	           (tensor-parallel-size 8 on v7x-8) and daily_qwen_llama_tpu7x_2.json (2 on v7x-2) @b8692ff0
//
// Hardware numbers come from package hw. The ICI ring of a TP group comes
// from package mesh, and collective times come from package collective.
// Nothing here declares any of them.
package inference

import (
	"errors"
	"fmt"
	"math"
	"time"

	"shardlab/hw"
	"shardlab/model"
	"shardlab/unit"
)

// TPSizes are the tensor-parallel sizes, in JAX devices, that s can run:
// sizes that divide the attention heads (and a hybrid model's
// linear-attention key heads, split by head [ti-gdn]) and are a divisor
// or a multiple of the KV heads of every layer kind, that fit in s's
// devices and take either part of one chip or whole chips that divide
// s's chips. Above the KV heads tpu-inference replicates them, TP/KV
// copies of each, so that each device holds one [ti-shard]; a size
// neither a divisor nor a multiple of them it refuses.
//
// Under latent attention the heads are not split (attention runs
// data-parallel inside a replica [ti-mla]), so any size that fits whole
// chips and divides the routed experts (for expert parallelism) is one.
func TPSizes(m model.Spec, s hw.Slice) []int { return tpSizes(m, s, DPAttention(m)) }

// tpSizes is TPSizes with attention data parallel (dp) or not.
func tpSizes(m model.Spec, s hw.Slice, dp bool) []int {
	per := s.Chip.JAXDevicesPerChip
	var out []int
	for t := 1; t <= s.Chips()*per; t++ {
		whole := t <= per || (t%per == 0 && s.Chips()%(t/per) == 0)
		heads := headsSplit(m, t)
		if dp {
			heads = !m.MoE() || m.Experts%t == 0
		}
		if heads && whole {
			out = append(out, t)
		}
	}
	return out
}

// headsSplit reports whether tensor parallelism tp splits m's heads as
// tpu-inference can: tp divides the attention heads (and a hybrid
// model's linear-attention key heads, whose value heads are a multiple
// of them), and each layer kind's KV heads are a multiple of tp or
// divide it, when tpu-inference replicates them tp/KV times
// (get_padded_num_heads [ti-shard]).
func headsSplit(m model.Spec, tp int) bool {
	if m.Hybrid() && m.LinearKeyHeads%tp != 0 {
		return false
	}
	for _, k := range layerKinds(m) {
		kv := k.m.KV()
		if k.m.Heads%tp != 0 || (kv%tp != 0 && tp%kv != 0) {
			return false
		}
	}
	return true
}

// headsRule says in words what headsSplit holds tensor parallelism to,
// for an error that refuses a size.
func headsRule(m model.Spec) string {
	kv := fmt.Sprintf("the %d KV heads", m.KV())
	if g := m.Global(); m.Windowed() && g.KV() != m.KV() {
		kv = fmt.Sprintf("the %d KV heads of the local layers and the %d of the global ones", m.KV(), g.KV())
	}
	rule := fmt.Sprintf("it must divide the %d attention heads", m.Heads)
	if m.Hybrid() {
		rule += fmt.Sprintf(" and the %d linear-attention key heads", m.LinearKeyHeads)
	}
	return rule + fmt.Sprintf(" and be a divisor or a multiple of %s, as tpu-inference shards the KV cache by head and above the KV heads replicates each, TP/KV copies (utils.py get_padded_num_heads)", kv)
}

// kvHeadsPerDevice says how a tp-way replica holds kind m's KV heads:
// its share of them, or, above them, each replicated tp/KV times, one a
// device [ti-shard].
func kvHeadsPerDevice(m model.Spec, tp int) string {
	if n := kvReplicas(m, tp); n > 1 {
		return fmt.Sprintf("the %d KV heads replicated ×%d (TP/KV), one per device, as tpu-inference pads KV heads to the TP size", m.KV(), n)
	}
	return fmt.Sprintf("%d of %d KV heads per device", kvPerDevice(m, tp), m.KV())
}

// replicated is ", each replicated ×n (TP/KV)" where a tp-way replica
// holds n copies of kind m's KV heads, else "".
func replicated(m model.Spec, tp int) string {
	if n := kvReplicas(m, tp); n > 1 {
		return fmt.Sprintf(", each replicated ×%d (TP/KV)", n)
	}
	return ""
}

// kvReplicas is how many copies of each KV head of kind m tpu-inference
// holds in a tp-way replica: tp/KV above the KV heads, else 1
// [ti-shard].
func kvReplicas(m model.Spec, tp int) int { return max(tp/m.KV(), 1) }

// kvPerDevice is how many of kind m's KV heads one device of a tp-way
// replica holds: its share, KV/tp, or, above the KV heads, one
// (replicated: kvReplicas) [ti-shard]. Its keys and values, in the KV
// cache and in a step's activations alike, are that many heads wide.
func kvPerDevice(m model.Spec, tp int) int { return max(m.KV()/tp, 1) }

// BlockSize is the page size tpu-inference picks when --block-size is not
// given [ti-page]: 16 above 8192 tokens, else max-model-len rounded up to a
// power of two over 16, held in [16, 256]; raised to the smallest page that
// keeps maxNumSeqs sequences' page tables in SMEM.
func BlockSize(maxModelLen, maxNumSeqs int) int {
	page := 16
	if maxModelLen <= 8192 {
		page = min(max(nextPow2(maxModelLen)/16, 16), 256)
	}
	perReq := (1 << 20) / 2 / max(maxNumSeqs, 1) / 4
	minPage := nextPow2(ceilDiv(maxModelLen, max(perReq, 1)))
	return max(page, minPage)
}

func nextPow2(x int) int {
	p := 1
	for p < x {
		p <<= 1
	}
	return p
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// KVBytesPerToken is what one token's keys and values take in one device's
// KV cache with tensor parallelism tp, across all layers, in the kernel's
// layout [ti-kv]: per layer a page row of align(2·h, p)/p words of p
// packed elements, each align(head_dim, 128) wide, where h is the KV heads
// of the shard (KV/tp, at least one) and p the dtype's packing.
//
// Under latent attention a token's latent is cached whole on the one
// device that holds its sequence, whatever tp: per layer
// align(kv_lora_rank, 128) + align(qk_rope_head_dim, 128) elements
// [ti-mla], LatentElements padded to the kernel's lanes.
//
// Of a hybrid model only the softmax-attention layers cache keys and
// values (model.Spec.AttentionLayers); the linear-attention layers hold
// a recurrent state per sequence instead (RecurrentStateBytes). Of a
// model with a sliding window each layer kind has its own heads and head
// width, and tpu-inference holds the local layers' pages for the whole
// sequence too [ti-swa]: every layer counts here (KVBytes is what a
// step reads of them).
func KVBytesPerToken(m model.Spec, tp int, kv Dtype) unit.Bytes {
	return kvBytesPerToken(m, tp, kv, DPAttention(m))
}

// kvBytesPerToken is KVBytesPerToken with attention data parallel (dp)
// or not: under it a device holds every KV head of its own sequences.
func kvBytesPerToken(m model.Spec, tp int, kv Dtype, dp bool) unit.Bytes {
	if m.MLA() {
		return unit.Bytes(m.Layers * latentLanes(m) * kv.Bytes())
	}
	var b unit.Bytes
	for _, k := range kindsPerToken(m, tp, kv, dp) {
		b += k.bytes
	}
	return b
}

// KVUsefulSplit is the tensor-parallel size beyond which the KV cache of
// one device stops shrinking: 2·KV heads / packing [ti-shard].
func KVUsefulSplit(m model.Spec, kv Dtype) int { return kvUsefulSplit(m, kv, DPAttention(m)) }

func kvUsefulSplit(m model.Spec, kv Dtype, dp bool) int {
	if dp {
		return math.MaxInt // the KV is split by sequence, never by tp
	}
	return max(1, 2*m.KV()/kv.packing())
}

// WeightBytes is the weights one device of a tp-way replica holds: the
// attention and MLP matrices and the vocabulary split tp ways, the key and
// value projections of the shard's KV heads, norms replicated. Of a
// mixture of experts' layers: the routed experts split tp ways
// (ExpertWeightBytes), the shared experts split as an MLP, the router
// (d_model × experts) whole. Under latent attention the attention weights
// are whole on every device [ti-mla].
func WeightBytes(m model.Spec, tp int, w Dtype) unit.Bytes {
	return weightBytes(m, tp, w, DPAttention(m))
}

// weightBytes is WeightBytes with attention data parallel (dp) or not:
// under it every attention weight, softmax and linear, is whole on each
// device [ti-dpattn].
func weightBytes(m model.Spec, tp int, w Dtype, dp bool) unit.Bytes {
	p := m.ParamCount()
	t := int64(tp)
	d := int64(m.DModel)
	linear := p.LinearAttention
	if !dp {
		linear = p.LinearAttention / t // split by head [ti-gdn]
	}
	// the softmax layers' attention, kind by kind, and the
	// linear-attention layers'
	n := int64(p.LinearLayers)*linear + int64(p.DenseLayers())*(p.MLP/t+p.Norms) + (p.Embedding+p.Output)/t + p.FinalNorm
	for _, k := range layerKinds(m) {
		attn := k.attn
		if !dp {
			hd, proj := int64(k.m.Head()), int64(k.kvProj)
			attn = (k.attn-proj*d*int64(k.m.KV())*hd)/t + proj*d*int64(kvPerDevice(k.m, tp))*hd
		}
		n += int64(k.layers) * attn
	}
	if p.MoELayers > 0 {
		n += int64(p.MoELayers) * (p.Norms + p.Router + p.Shared/t)
	}
	return unit.Bytes(n*int64(w.Bytes())) + ExpertWeightBytes(m, tp, w)
}

// ActivationBytes estimates the activation buffers of one device for a
// step of tokens tokens and seqs sequences: the bf16 residual stream,
// attention input and output and the MLP's intermediate (split tp ways),
// and fp32 logits for each sequence's last token. A device holds its share
// of the query heads and, above the KV heads, one KV head (kvPerDevice).
// An estimate, not vLLM's profile.
func ActivationBytes(m model.Spec, tp, tokens, seqs int) unit.Bytes {
	ff := m.DFF
	if m.MoE() {
		// each token's rows through its experts and the shared ones
		ff = max(ff, (m.ExpertsPerToken+m.SharedExperts)*m.ExpertFF())
	}
	ff *= m.MLPInputs()
	qkv := 0 // the widest layer's queries, keys and values on a device
	for _, k := range layerKinds(m) {
		qkv = max(qkv, (k.m.Heads/tp+2*kvPerDevice(k.m, tp))*k.m.Head())
	}
	perTok := 2 * (3*m.DModel + ff/tp + qkv)
	return unit.Bytes(tokens*perTok + seqs*4*ceilDiv(m.Vocab, tp))
}

// Memory is one device's HBM.
type Memory struct {
	// Capacity is what the runtime lets one device hold (bytes_limit:
	// hw.Chip.XLACapacity per JAX device), below the published HBM.
	Capacity    unit.Bytes `json:"xla_capacity_bytes"`
	Budget      unit.Bytes `json:"budget_bytes"` // capacity × gpu_memory_utilization
	Weights     unit.Bytes `json:"weights_bytes"`
	Activations unit.Bytes `json:"activations_bytes"`
	// Recurrent is a hybrid model's linear-attention states: max_num_seqs
	// + 1 slots of RecurrentStateBytes [ti-gdn]; 0 without.
	Recurrent unit.Bytes `json:"recurrent_state_bytes,omitempty"`
	KVCache   unit.Bytes `json:"kv_cache_bytes"` // what is left for pages
	// KVPerToken is one token's KV on this device.
	KVPerToken unit.Bytes `json:"kv_per_token_bytes"`
	BlockSize  int        `json:"block_size_tokens"`
	// Pages is the replica's pages: one device's under tensor
	// parallelism (each holds its heads of every page), all its devices'
	// under attention data parallelism (each holds its own sequences).
	Pages int `json:"pages"`
	// MaxSeqs is the most sequences of max-model-len tokens whose pages
	// fit in one replica.
	MaxSeqs int `json:"max_seqs_at_max_model_len"`
	// HeldSeqs is the most sequences of the requests' full length,
	// prompt_len + output_len tokens (or a length mix's longest request,
	// Request.Mix), whose pages fit in one replica at once (holds).
	HeldSeqs int `json:"held_seqs_at_request_len"`
}

// Layout is one way to serve the model.
type Layout struct {
	TP int `json:"tensor_parallel_size"`
	DP int `json:"data_parallel_size"`
	// EP is the expert-parallel size (ExpertParallel; 1: none).
	EP int `json:"expert_parallel_size"`
	// AttentionDP is the attention data parallelism inside a replica,
	// its vLLM schedulers (Request.Schedulers: under attention data
	// parallelism TP; else 1).
	AttentionDP int `json:"attention_data_parallel_size"`
	Chips       int `json:"chips"`
	// SeqsEach is the sequences each replica runs at once, its
	// schedulers' max_num_seqs together (SchedulerSeqs each), at which
	// its memory and latencies are costed.
	SeqsEach int `json:"sequences_per_replica"`
	// Concurrency is the sequences in the server across replicas: the
	// request's, or what its request rate comes to on this layout on
	// average (Little's law, AtRate; SeqsEach is then the cap above it),
	// or its clients (Request.Clients), queued ones included.
	Concurrency int `json:"concurrency_sequences"`
	// RunningEach is, with Request.Clients, the sequences each replica
	// runs at once, at which its latencies and preemption are costed:
	// its share of the clients, at most SeqsEach, its schedulers'
	// max_num_seqs together, which its memory is sized for. The clients
	// above it wait in the schedulers' queues. 0 without Clients:
	// SeqsEach (Running).
	RunningEach int `json:"running_sequences_per_replica,omitempty"`
	// QueueWait is a request's wait in that queue in a closed loop of
	// the clients (queueWait), which Seen adds to its TTFT; 0 when they
	// are no more than the replicas run.
	QueueWait time.Duration `json:"-"`
	// Under a request rate (AtRate): MeanSeqs is a replica's mean
	// sequences (Little's law), SeqsEach the cap that admits
	// AdmitQuantile of the arrivals at once (or what the pages hold,
	// ShortOfCap), and FullOnArrival the probability that an arrival
	// finds all SeqsEach taken and waits. Zero without a rate.
	MeanSeqs float64 `json:"mean_sequences_per_replica,omitempty"`
	// MeanStep is, under a request rate, a replica's mean step with
	// the arriving prompts' chunks in it (steadyState): the ITL a
	// decoding sequence sees on average, and what MeanSeqs comes from.
	// ITL is the decode-only step at SeqsEach.
	MeanStep      time.Duration `json:"-"`
	FullOnArrival float64       `json:"full_on_arrival_fraction,omitempty"`
	ShortOfCap    bool          `json:"short_of_cap,omitempty"`
	Memory        Memory        `json:"memory"`
	// Fits: vLLM starts the layout: a scheduler's pages hold one
	// sequence of max_model_len tokens (fitsOne). max_num_seqs is a cap
	// of the scheduler, not pages reserved.
	Fits bool `json:"fits"`
	// Preempts: the layout fits but its pages do not hold its
	// sequences at their full length at once (holds), so vLLM preempts
	// running sequences to recompute them later when the pages run out.
	Preempts bool `json:"preempts,omitempty"`
	// Misses lists the SLOs the layout misses ("ITL 13.7 ms > 9 ms").
	Misses []string `json:"misses_slo"`
	// The rooflines of one replica at its share of the concurrency.
	TTFT            time.Duration `json:"-"`
	ITL             time.Duration `json:"-"`
	PrefillCompute  time.Duration `json:"-"`
	DecodeMemory    time.Duration `json:"-"`
	DecodeCompute   time.Duration `json:"-"`
	DecodeAllReduce time.Duration `json:"-"`
	// DecodeKV is the part of DecodeMemory that reads the KV cache,
	// DecodeAttention the MXU passes of the decode queries over it
	// (decodeKeyTime), DecodeSampling the sampling of the logits
	// (samplingBytes), DecodeOverhead vLLM's fixed time a step
	// (StepOverhead).
	DecodeKV, DecodeAttention, DecodeSampling, DecodeOverhead time.Duration `json:"-"`
	// DecodeLinear is a hybrid model's linear-attention recurrences in a
	// decode step (each sequence's state read and written back, or their
	// FLOPs: replicaCost.linearAttention), DecodeDispatch a mixture of
	// experts' moving of the routed rows (replicaCost.moeDispatch); 0
	// for models without. The ITL is max(DecodeMemory − DecodeKV,
	// DecodeCompute) + max(DecodeKV, DecodeAttention) + DecodeLinear +
	// DecodeDispatch + DecodeSampling + DecodeAllReduce + DecodeOverhead.
	DecodeLinear, DecodeDispatch time.Duration `json:"-"`
	PrefillAllReduce             time.Duration `json:"-"`
	// PrefillWeights is the HBM time of the weights the prompt's chunks
	// read, PrefillRoofline what the chunks take, each the longer of its
	// MXU time (PrefillCompute) and its weights' read; the TTFT is
	// PrefillRoofline + PrefillAllReduce + PrefillSteps × DecodeOverhead.
	PrefillWeights, PrefillRoofline time.Duration `json:"-"`
	// PrefillSteps is the steps a prompt's prefill takes: ⌈prompt_len /
	// max_num_batched_tokens⌉ chunks, one a step. PrefillCompute,
	// PrefillWeights, PrefillRoofline and PrefillAllReduce are summed
	// over them, and the TTFT pays DecodeOverhead once a step.
	PrefillSteps int `json:"-"`
	// ActiveExperts is the routed experts a decode step's sequences touch
	// in one MoE layer (ActiveExperts), 0 for a dense model.
	ActiveExperts   float64 `json:"active_experts_per_moe_layer,omitempty"`
	TokensPerSecond float64 `json:"output_tokens_per_s"`
	PerChip         float64 `json:"output_tokens_per_s_per_chip"`

	// LoadTTFT is, under a request rate, the time to the first token of
	// an arriving prompt in a replica's steady state (steadyState): its
	// wait for the step in progress, then its prompt's chunks in the
	// steps beside the decodes and the other prompts that arrived with
	// it; its mean is what Little's law and the TTFT SLO take. TTFT is a
	// lone prompt's on an idle replica. Zero without a rate.
	LoadTTFT Percentiles `json:"-"`
}

// Devices is the JAX devices the layout uses.
func (l Layout) Devices() int { return l.TP * l.DP }

// Running is the sequences each replica runs at once: RunningEach, or
// SeqsEach without clients of their own.
func (l Layout) Running() int {
	if l.RunningEach > 0 {
		return l.RunningEach
	}
	return l.SeqsEach
}

// SchedulerSeqs is the max_num_seqs of each vLLM scheduler of l, what
// the serving command gives: a replica's sequences split over its
// attention-DP ranks, each of which tpu-inference runs its own scheduler
// for [ti-dps]; Request.MaxNumSeqs when given.
func (l Layout) SchedulerSeqs() int { return ceilDiv(l.SeqsEach, max(l.AttentionDP, 1)) }

// MeetsSLO reports whether the layout fits and meets every SLO.
func (l Layout) MeetsSLO() bool { return l.Fits && len(l.Misses) == 0 }

// Plan is the chosen layout, the others considered, and why.
type Plan struct {
	Request Request
	Best    Layout
	Layouts []Layout
	// BestEffort: no layout meets the SLOs; Best is the one that comes
	// closest by the objective, and Warnings say what it misses.
	BestEffort bool
	// Reasons and Warnings name the options they concern as {key} (the
	// Options field's JSON key: {checkpoint_dtype}), with braces of their
	// own doubled, until Phrase spells them.
	Reasons  []string
	Warnings []string
	// spelt says that Phrase has spelt Reasons and Warnings.
	spelt bool
}

// ErrNoFit is returned when vLLM would start no layout (the weights leave
// no room, or no scheduler's pages hold one sequence of max_model_len
// tokens), or, under a request rate, none keeps up with it.
var ErrNoFit = errors.New("no layout fits")

// Estimate costs one layout of tp devices a replica and dp replicas. tp
// must be one of TPSizes(r.Model, r.Slice) and tp·dp at most the slice's
// devices (NewRequest and Search see to it); anything else is a bug and
// panics.
func Estimate(r Request, tp, dp int) Layout {
	c := r.Slice.Chip
	per := c.JAXDevicesPerChip
	l := Layout{TP: tp, DP: dp, EP: ExpertParallel(r.Model, tp), AttentionDP: r.Schedulers(tp), Chips: ceilDiv(tp*dp, per)}
	l.SeqsEach = ceilDiv(r.Concurrency, dp)
	l.Concurrency = r.Concurrency
	if r.MaxNumSeqs > 0 {
		// max_num_seqs is each scheduler's [ti-dps]
		l.SeqsEach = r.MaxNumSeqs * l.AttentionDP
		l.Concurrency = l.SeqsEach * dp
		if r.Clients > 0 {
			l.Concurrency, l.RunningEach = r.Clients, min(l.SeqsEach, ceilDiv(r.Clients, dp))
		}
	}
	r.memory(&l)
	r.rooflines(&l)
	l.QueueWait = r.queueWait(l)
	l.Misses = r.misses(l)
	return l
}

// queueWait is how long a request of r's clients waits in a replica's
// scheduler queue on l when they are more than its replicas run
// (Request.Clients above max_num_seqs a replica): in a closed loop each
// of a replica's c clients sends its next request when its last one
// finishes, and the replica runs B of them at once, each S = TTFT +
// (OutputLen − 1) × ITL, so B/S requests a second. A client's cycle is
// then c·S/B (Little's law [little]): S served and (c/B − 1)·S waited.
// 0 when the clients are no more than run.
func (r Request) queueWait(l Layout) time.Duration {
	c, b := ceilDiv(r.Clients, l.DP), l.Running()
	if r.Clients == 0 || c <= b {
		return 0
	}
	s := l.TTFT + time.Duration(r.OutputLen-1)*l.ITL
	return time.Duration(float64(s) * (float64(c)/float64(b) - 1))
}

// memory fills in l.Memory, one device's HBM for l's replicas of
// l.SeqsEach sequences, and whether they fit in its pages.
func (r Request) memory(l *Layout) {
	c, tp := r.Slice.Chip, l.TP
	per := c.JAXDevicesPerChip
	m := &l.Memory
	// tpu-inference sizes the KV cache from what the runtime says a
	// device may hold (jax Device.memory_stats()["bytes_limit"],
	// tpu_inference/utils.py hbm_usage_bytes @007cbee0), XLA's capacity,
	// not the published HBM
	m.Capacity = c.XLACapacity() / unit.Bytes(per)
	m.Budget = unit.Bytes(float64(m.Capacity) * r.MemoryUtilization)
	m.Weights = weightBytes(r.Model, tp, r.Weights, r.AttentionDP())
	m.Activations = ActivationBytes(r.Model, tp, r.MaxNumBatchedTokens, l.SeqsEach)
	m.Recurrent = unit.Bytes(l.SeqsEach+1) * RecurrentStateBytes(r.Model, tp)
	if r.AttentionDP() {
		// each device the whole states of its own sequences' slots
		m.Recurrent = unit.Bytes(ceilDiv(l.SeqsEach+1, tp)) * RecurrentStateBytes(r.Model, 1)
	}
	m.KVCache = max(m.Budget-m.Weights-m.Activations-m.Recurrent, 0)
	m.KVPerToken = kvBytesPerToken(r.Model, tp, r.KVCache, r.AttentionDP())
	m.BlockSize = BlockSize(r.MaxModelLen, l.SchedulerSeqs()) // the scheduler config's max_num_seqs [ti-page]
	if r.Model.MLA() {
		m.BlockSize = mlaPageSize
	}
	// a scheduler's pages: the device's, each attention shard holding
	// whole sequences [ti-dps]
	pages := int(m.KVCache / (m.KVPerToken * unit.Bytes(m.BlockSize)))
	perSeq := ceilDiv(r.MaxModelLen, m.BlockSize)
	m.Pages, m.MaxSeqs = l.AttentionDP*pages, l.AttentionDP*(pages/perSeq)
	m.HeldSeqs = l.AttentionDP * (pages / ceilDiv(r.heldTokens(), m.BlockSize))
	l.Fits = fitsOne(pages, perSeq)
	// the sequences a scheduler runs: its max_num_seqs, or fewer clients
	l.Preempts = l.Fits && !holds(pages, m.BlockSize, ceilDiv(l.Running(), max(l.AttentionDP, 1)), r.heldTokens())
}

// rooflines fills in l's prefill and decode times, the TTFT and the ITL
// of its busiest replica at its share of the concurrency, and the
// throughput of its DP replicas, each replica's sequences (Spread) over
// its own step, the idle ones none; l.Memory is filled in.
func (r Request) rooflines(l *Layout) {
	m := &l.Memory
	rc := newReplicaCost(r, l.TP)
	l.DecodeOverhead = StepOverhead(VLLM)
	w := r.Model.SlidingWindow
	l.TTFT = r.prefill(rc, l)
	// decode step of the busiest replica's sequences at their mean
	// context: the simulator's step (Simulate) of that batch, padded as
	// tpu-inference pads it, its terms kept apart
	ctx := r.decodeContext()
	B := l.Running()
	kv := float64(m.KVPerToken)
	b := r.decodeBatch(B, max(l.SeqsEach, B))
	wctx := 0 // the keys a local layer's decode query reads [ti-swa]
	if w > 0 {
		wctx = model.AttendedKeys(ctx-1, w)
	}
	l.ActiveExperts = ActiveExperts(r.Model, B)
	l.DecodeKV = seconds(rc.kvShare(B) * rc.byKind(float64(B*ctx), float64(B*wctx), rc.kvLocal) * kv / rc.bw)
	l.DecodeMemory = seconds(rc.weightsRead(B)/rc.bw) + l.DecodeKV
	l.DecodeCompute = seconds(rc.matmulTime(b))
	keyTime := rc.decodeKeyTime(VLLM)
	l.DecodeAttention = seconds(rc.kvShare(B) * rc.byKind(float64(B*ctx), float64(B*wctx), rc.keyLocal(VLLM)) * keyTime)
	l.DecodeAllReduce = rc.allReduce(b.PaddedTokens)
	l.DecodeSampling = seconds(rc.sampling(b.PaddedSeqs))
	l.DecodeLinear = seconds(rc.linearAttention(b))
	l.DecodeDispatch = seconds(rc.moeDispatch(b.PaddedTokens))
	step := rc.step(kv, keyTime, l.DecodeOverhead, VLLM)
	l.ITL = step(b)
	l.TokensPerSecond = 0
	for _, g := range Spread(l.RunningSeqs(), l.DP) {
		itl := l.ITL
		if g.Seqs != B {
			itl = step(r.decodeBatch(g.Seqs, max(l.SeqsEach, B)))
		}
		l.TokensPerSecond += float64(g.Replicas*g.Seqs) / itl.Seconds()
	}
	l.PerChip = l.TokensPerSecond / float64(l.Chips)
}

// decodeBatch is a decode step of n sequences at their mean context on
// a replica whose max_num_seqs is maxNumSeqs, padded as tpu-inference
// pads it [ti-pad]; a local layer's decode queries read at most its
// window's keys [ti-swa].
func (r Request) decodeBatch(n, maxNumSeqs int) Batch {
	ctx := r.decodeContext()
	b := Batch{Seqs: n, PaddedSeqs: paddedSeqs(n, maxNumSeqs), Tokens: n, PaddedTokens: paddedTokens(n),
		ContextTokens: n * ctx, AttendedPairs: float64(n) * float64(ctx), DecodeKeys: n * ctx}
	if w := r.Model.SlidingWindow; w > 0 {
		wctx := model.AttendedKeys(ctx-1, w)
		b.Window = WindowWork{ContextTokens: n * wctx, AttendedPairs: float64(n) * float64(wctx), DecodeKeys: n * wctx}
	}
	return b
}

// prefill fills in l's prefill of one prompt and returns its TTFT. The
// scheduler gives a prompt at most max_num_batched_tokens tokens a step
// [v-sched], so it runs in ⌈prompt / budget⌉ chunks, one a step, each
// step bound by its chunk's MXU compute or the weights it reads, then
// its all-reduces, then the engine's fixed step time (l.DecodeOverhead).
// A chunk's queries attend causally within it and every key of the
// chunks before it (half the scores of its own square; a local layer's
// up to its window), and the output projection runs on every token
// (matmulTime's padded sequences). It is a lone prompt's: the decode
// tokens that share the budget in a loaded server are Simulate's.
func (r Request) prefill(rc replicaCost, l *Layout) time.Duration {
	P, w, budget := r.PromptLen, r.Model.SlidingWindow, max(r.MaxNumBatchedTokens, 1)
	l.PrefillCompute, l.PrefillWeights, l.PrefillRoofline, l.PrefillAllReduce, l.PrefillSteps = 0, 0, 0, 0, 0
	for c := 0; c < P; c += budget {
		n := min(budget, P-c)
		chunk := Batch{Seqs: 1, PaddedSeqs: n, PaddedTokens: n, AttendedPairs: model.AttendedPairs(c, n, 0) - float64(n)/2,
			Window: WindowWork{AttendedPairs: model.AttendedPairs(c, n, w) - float64(n)/2}}
		compute, read := seconds(rc.matmulTime(chunk)), seconds(rc.weightsRead(n)/rc.bw)
		l.PrefillCompute += compute
		l.PrefillWeights += read
		l.PrefillRoofline += max(compute, read)
		l.PrefillAllReduce += rc.allReduce(n)
		l.PrefillSteps++
	}
	return l.PrefillRoofline + l.PrefillAllReduce + time.Duration(l.PrefillSteps)*l.DecodeOverhead
}

// Seen is the TTFT and ITL a request sees on l: under a request rate,
// at the offered load (AtRate): the mean TTFT of an arriving prompt,
// behind the step in progress and the prompts that arrived with it, and
// the mean step with the arriving prompts' chunks, the ITL a decoding
// sequence sees on average; else, or where AtRate found no steady state,
// a lone prompt's TTFT on an idle replica, after its wait in the queue
// when the clients are more than the replicas run (QueueWait), and the
// decode-only step at the layout's concurrency. The SLOs, the objective
// and the layouts table all take these.
func (r Request) Seen(l Layout) (ttft, itl time.Duration) {
	ttft, itl = l.TTFT+l.QueueWait, l.ITL
	if r.RequestRate > 0 {
		if l.LoadTTFT.Mean > 0 {
			ttft = l.LoadTTFT.Mean
		}
		if l.MeanStep > 0 {
			itl = l.MeanStep
		}
	}
	return ttft, itl
}

// misses lists the SLOs l misses.
func (r Request) misses(l Layout) []string {
	var out []string
	ttft, itl := r.Seen(l)
	if r.TTFTSLO > 0 && ttft > r.TTFTSLO {
		out = append(out, fmt.Sprintf("TTFT %v > %v", secs(ttft), secs(r.TTFTSLO)))
	}
	if r.ITLSLO > 0 && itl > r.ITLSLO {
		out = append(out, fmt.Sprintf("ITL %v > %v", secs(itl), secs(r.ITLSLO)))
	}
	return out
}

func seconds(s float64) time.Duration { return time.Duration(s * 1e9) }
