// Package inference plans how to serve a decoder-only transformer with vLLM
// and its TPU backend, tpu-inference: the layouts it can run over the
// whole VM or slice (tensor parallelism counted in JAX devices as
// tpu-inference counts them, data parallelism of replicas, expert
// parallelism of a mixture of experts, attention data parallelism under
// latent attention), the HBM of one device (weights, the paged KV cache in
// the attention kernel's layout, activations, the share
// --gpu-memory-utilization leaves), the largest number of concurrent
// sequences at the maximum model length, the prefill (compute-bound) and
// decode (HBM-bound) rooflines with their collectives, and the choice of a
// layout by an objective (throughput or latency) under TTFT and ITL SLOs.
//
// Sources, cited as [tag] below:
//
//	[ti-kv]    vllm-project/tpu-inference:tpu_inference/kernels/ragged_paged_attention/v3/kernel.py
//	           get_kv_cache_shape, get_dtype_packing @b8692ff0
//	[ti-shard] vllm-project/tpu-inference:tpu_inference/runner/kv_cache.py get_kv_cache_shape_with_mesh;
//	           tpu_inference/layers/vllm/custom_ops/linear.py (KV heads replicated when TP > KV heads);
//	           tpu_inference/layers/common/sharding.py (the KV cache's useful split, 2·KV heads/packing) @b8692ff0
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
	"strconv"
	"strings"
	"time"

	"shardlab/hw"
	"shardlab/model"
	"shardlab/unit"
)

// Dtype is the storage format of the weights or of the KV cache.
type Dtype string

// The formats.
const (
	BF16 Dtype = "bf16"
	FP8  Dtype = "fp8"
	Int8 Dtype = "int8"
)

// Bytes is the size of one element.
func (d Dtype) Bytes() int {
	if d == BF16 {
		return 2
	}
	return 1
}

// packing is how many elements the attention kernel packs in one 32-bit
// word: 32 / bits [ti-kv].
func (d Dtype) packing() int { return 4 / d.Bytes() }

// ErrBadValue is wrapped by every error about a request's value.
var ErrBadValue = errors.New("bad value")

// FieldError names the request field that is wrong, its value and what is
// accepted.
type FieldError struct {
	Field string
	Value string
	Want  string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("inference: %s %s, want %s", e.Field, e.Value, e.Want)
}

func (e *FieldError) Unwrap() error { return ErrBadValue }

// ParseDtype reads a format for field ("weights" or "kv_cache"), in any
// case; weights accept bf16, fp8 and int8, the KV cache (field
// "kv_cache_dtype") bf16 and fp8.
func ParseDtype(field, s string) (Dtype, error) {
	v := Dtype(strings.ToLower(strings.TrimSpace(s)))
	ok := v == BF16 || v == FP8 || (v == Int8 && field != "kv_cache_dtype")
	if !ok {
		want := "bf16, fp8 or int8"
		if field == "kv_cache_dtype" {
			want = "bf16 or fp8"
		}
		return "", &FieldError{Field: field, Value: strconv.Quote(s), Want: want}
	}
	return v, nil
}

// KVCacheDtypes are the values of vLLM's --kv-cache-dtype that shardlab
// plans for, with the format each stores: auto (the model's dtype; the
// checkpoints shardlab models are bf16), bfloat16, and the fp8 formats
// tpu-inference maps to a TPU dtype. They are CacheDType's values in
// vllm/config/cache.py @002f10e0 that TPU_STR_DTYPE_TO_TORCH_DTYPE in
// tpu-inference's tpu_inference/layers/vllm/attention.py @d58a778e holds
// (testdata/vllm_kv_cache_dtypes.txt lists them all).
var KVCacheDtypes = []string{"auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"}

// ParseKVCacheDtype reads a value of vLLM's --kv-cache-dtype (one of
// KVCacheDtypes, as vLLM spells it) and returns the format of its
// elements: bf16 for auto and bfloat16, fp8 for the fp8 formats.
func ParseKVCacheDtype(s string) (Dtype, error) {
	switch s {
	case "auto", "bfloat16":
		return BF16, nil
	case "fp8", "fp8_e4m3", "fp8_e5m2":
		return FP8, nil
	}
	return "", &FieldError{Field: "kv_cache_dtype", Value: strconv.Quote(s), Want: "one of vLLM's " + strings.Join(KVCacheDtypes, ", ") + " (those tpu-inference stores on a TPU)"}
}

// vllmKVCacheDtype is the value of --kv-cache-dtype that stores d.
func vllmKVCacheDtype(d Dtype) string {
	if d == FP8 {
		return "fp8"
	}
	return "auto"
}

// Generations tpu-inference runs on and shardlab plans for.
var Generations = []hw.Generation{hw.V5e, hw.V6e, hw.TPU7x}

// Request is one serving question. NewRequest validates it.
type Request struct {
	Model model.Spec
	// Slice is the TPU: its chips are the most a plan may use.
	Slice       hw.Slice
	MaxModelLen int // tokens; 0: the model's
	// Concurrency is the number of sequences decoding together.
	Concurrency int
	// RequestRate, when positive, replaces Concurrency: requests arrive at
	// this rate per second and the concurrency is what Little's law gives,
	// the rate times a request's time in the server (TTFT plus its output
	// tokens at the inter-token latency), found per layout.
	RequestRate float64
	PromptLen   int // tokens per request
	OutputLen   int // tokens per request
	Weights     Dtype
	KVCache     Dtype
	// KVCacheDtype is vLLM's --kv-cache-dtype as given (one of
	// KVCacheDtypes). When set, NewRequest sets KVCache from it; when
	// empty, NewRequest sets it to the value that stores KVCache (auto
	// for bf16, fp8). The serving command passes it on unchanged.
	KVCacheDtype string
	// MaxNumSeqs is vLLM's max_num_seqs, the sequences one replica's
	// scheduler runs at once. When positive it replaces Concurrency:
	// each layout then serves MaxNumSeqs sequences a replica, MaxNumSeqs
	// times its replicas in all.
	MaxNumSeqs int
	// MemoryUtilization is vLLM's gpu_memory_utilization: the share of a
	// device's HBM vLLM may fill (weights, activations, KV cache).
	MemoryUtilization float64
	// MaxNumBatchedTokens is the scheduler's token budget per step: the
	// longest prefill chunk and the size of the activation buffers.
	MaxNumBatchedTokens int
	// TP fixes the tensor-parallel size (0: search).
	TP int
	// DP fixes the replicas (0: as many as fill the slice, TP·DP = its
	// devices). A DP that leaves devices idle is the caller's choice and
	// the plan says so.
	DP int
	// Objective is what the plan maximises among the layouts that meet
	// the SLOs: Throughput (the default) or Latency.
	Objective Objective
	// TTFTSLO and ITLSLO are the time-to-first-token and inter-token
	// latency targets at the offered load (0: none).
	TTFTSLO, ITLSLO time.Duration
	// DPAttention is tpu-inference's enable_dp_attention (its
	// --additional-config sharding_strategy) for a model without latent
	// attention, which always runs so: attention data parallel inside a
	// replica, each device the attention weights whole and its own
	// sequences' KV heads [ti-dpattn]. NewRequest accepts it only where
	// tpu-inference makes the whole replica attention-parallel (attn_dp =
	// the tensor-parallel size): one KV cache word holds a token's keys
	// and values of every KV head (2·KV heads ≤ the KV dtype's packing).
	DPAttention bool
}

// AttentionDP reports whether r's replicas run attention data parallel:
// latent attention always [ti-mla], other models when r.DPAttention asks.
func (r Request) AttentionDP() bool { return DPAttention(r.Model) || r.DPAttention }

// Objective is what a serving plan optimises.
type Objective string

// The objectives.
const (
	// Throughput: the most output tokens/s per chip whose TTFT and ITL
	// meet the SLOs at the offered concurrency or request rate.
	Throughput Objective = "throughput"
	// Latency: the least inter-token latency, then the least TTFT.
	Latency Objective = "latency"
)

// Objectives lists the accepted objectives.
var Objectives = []string{string(Throughput), string(Latency)}

// Limits on a request's counts.
const (
	MaxTokens      = 1 << 21 // 2Mi tokens: longer than any catalog model's context
	MaxConcurrency = 1 << 16
	MaxRequestRate = 1 << 20
)

// DefaultRequest is a request with shardlab inference's defaults: 64
// sequences decoding together, 1024-token prompts and outputs, bf16
// weights and KV cache, vLLM's default gpu_memory_utilization (0.92) and
// tpu-inference's daily benchmarks' 4096 batched tokens. Model and Slice
// are the caller's.
func DefaultRequest() Request {
	return Request{Concurrency: 64, PromptLen: 1024, OutputLen: 1024, Weights: "bf16", KVCache: "bf16",
		MemoryUtilization: 0.92, MaxNumBatchedTokens: 4096}
}

// NewRequest checks r and fills its defaults.
func NewRequest(r Request) (Request, error) {
	if err := r.Model.Validate(); err != nil {
		return Request{}, err
	}
	c := r.Slice.Chip
	ok := false
	for _, g := range Generations {
		ok = ok || c.Generation == g
	}
	if !ok {
		return Request{}, &FieldError{Field: "tpu", Value: string(c.Generation), Want: "v5e, v6e or tpu7x (the generations tpu-inference runs on)"}
	}
	if r.Slice.Chips() < 1 {
		return Request{}, &FieldError{Field: "tpu", Value: string(c.Generation), Want: "an accelerator type with chips, e.g. tpu7x-8"}
	}
	if r.MaxModelLen == 0 {
		r.MaxModelLen = r.Model.SeqLen
	}
	if r.MaxModelLen < 2 || r.MaxModelLen > r.Model.SeqLen {
		return Request{}, badInt("max_model_len", r.MaxModelLen, fmt.Sprintf("2 to %d (%s's context)", r.Model.SeqLen, r.Model.Name))
	}
	if err := r.concurrency(); err != nil {
		return Request{}, err
	}
	if r.PromptLen < 1 || r.PromptLen >= r.MaxModelLen {
		return Request{}, badInt("prompt_len", r.PromptLen, fmt.Sprintf("1 to %d (max_model_len less one output token)", r.MaxModelLen-1))
	}
	if r.OutputLen < 1 || r.PromptLen+r.OutputLen > r.MaxModelLen {
		return Request{}, badInt("output_len", r.OutputLen, fmt.Sprintf("1 to %d (max_model_len %d less prompt_len %d)", r.MaxModelLen-r.PromptLen, r.MaxModelLen, r.PromptLen))
	}
	if err := r.dtypes(); err != nil {
		return Request{}, err
	}
	if u := r.MemoryUtilization; math.IsNaN(u) || u <= 0 || u > 1 {
		return Request{}, &FieldError{Field: "gpu_memory_utilization", Value: strconv.FormatFloat(u, 'g', -1, 64), Want: "a number in (0, 1]"}
	}
	if r.MaxNumBatchedTokens < 1 || r.MaxNumBatchedTokens > MaxTokens {
		return Request{}, badInt("max_num_batched_tokens", r.MaxNumBatchedTokens, fmt.Sprintf("1 to %d", MaxTokens))
	}
	if err := r.goals(); err != nil {
		return Request{}, err
	}
	if err := r.parallelism(); err != nil {
		return Request{}, err
	}
	return r, nil
}

// goals checks the objective and the SLOs.
func (r *Request) goals() error {
	if r.Objective == "" {
		r.Objective = Throughput
	}
	if r.Objective != Throughput && r.Objective != Latency {
		return &FieldError{Field: "objective", Value: strconv.Quote(string(r.Objective)), Want: strings.Join(Objectives, " or ")}
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"ttft_slo", r.TTFTSLO}, {"itl_slo", r.ITLSLO}} {
		if d.v < 0 || d.v > time.Hour {
			return &FieldError{Field: d.field, Value: d.v.String(), Want: "0 (no target) or a duration up to 1h"}
		}
	}
	return nil
}

// parallelism checks a fixed tensor-parallel size and replica count.
func (r *Request) parallelism() error {
	c := r.Slice.Chip
	devices := r.Slice.Chips() * c.JAXDevicesPerChip
	if r.DPAttention && !r.Model.MLA() {
		// tpu-inference's attention data parallelism is TP / max(1,
		// 2·KV heads / packing) (head_dim 64: twice the packing)
		// [ti-dpattn]; shardlab models the whole replica attention-parallel
		p := r.KVCache.packing()
		if r.Model.Head() == 64 {
			p *= 2
		}
		if 2*r.Model.KV() > p {
			return &FieldError{Field: "enable_dp_attention", Value: "true", Want: fmt.Sprintf(
				"false for %s with a %s KV cache: tpu-inference would run attention data parallel over TP/%d devices with tensor parallelism of %d inside (2·%d KV heads / %d a word), which shardlab does not model",
				r.Model.Name, r.KVCache, 2*r.Model.KV()/p, 2*r.Model.KV()/p, r.Model.KV(), p)}
		}
	}
	if r.TP != 0 {
		sizes := tpSizes(r.Model, r.Slice, r.AttentionDP())
		found := false
		for _, t := range sizes {
			found = found || t == r.TP
		}
		if !found {
			rule := fmt.Sprintf("it must divide the %d attention heads and, as tpu-inference shards the KV cache by head, divide the %d KV heads", r.Model.Heads, r.Model.KV())
			if DPAttention(r.Model) {
				rule = "latent attention runs data-parallel inside a replica, so any size"
			} else if r.AttentionDP() {
				rule = "with enable_dp_attention the attention runs data-parallel inside a replica, so any size"
			}
			if r.Model.MoE() {
				rule += fmt.Sprintf("; for expert parallelism it divides the %d experts", r.Model.Experts)
			}
			return badInt("tensor_parallel_size", r.TP, fmt.Sprintf("one of %s: %s, and fit the %d devices of %s in part of a chip or whole chips",
				joinInts(sizes), rule, devices, r.Slice.AcceleratorType()))
		}
	}
	if r.DP < 0 || r.DP > devices || (r.TP > 0 && r.TP*r.DP > devices) {
		most := devices
		if r.TP > 0 {
			most = devices / r.TP
		}
		return badInt("data_parallel_size", r.DP, fmt.Sprintf("0 (fill the slice) or 1 to %d replicas (%d devices of %s)", most, devices, r.Slice.AcceleratorType()))
	}
	return nil
}

// concurrency checks the request rate, vLLM's max_num_seqs and the
// concurrency, and sets the concurrency the search starts from.
func (r *Request) concurrency() error {
	if rr := r.RequestRate; math.IsNaN(rr) || math.IsInf(rr, 0) || rr < 0 || rr > MaxRequestRate {
		return &FieldError{Field: "request_rate", Value: strconv.FormatFloat(rr, 'g', -1, 64), Want: fmt.Sprintf("0 (use concurrency) or a finite rate up to %d requests/s", MaxRequestRate)}
	}
	if r.MaxNumSeqs != 0 && r.RequestRate > 0 {
		return &FieldError{Field: "max_num_seqs", Value: strconv.Itoa(r.MaxNumSeqs), Want: "0 when request_rate is set (the rate sets the concurrency)"}
	}
	if r.MaxNumSeqs < 0 || r.MaxNumSeqs > MaxConcurrency {
		return badInt("max_num_seqs", r.MaxNumSeqs, fmt.Sprintf("0 (use concurrency) or 1 to %d sequences a replica", MaxConcurrency))
	}
	if r.MaxNumSeqs > 0 {
		r.Concurrency = r.MaxNumSeqs // one replica's; Estimate multiplies by the replicas
	}
	if r.RequestRate > 0 {
		r.Concurrency = 1 // a start; Search finds each layout's
	}
	if r.Concurrency < 1 || r.Concurrency > MaxConcurrency {
		return badInt("concurrency", r.Concurrency, fmt.Sprintf("1 to %d sequences", MaxConcurrency))
	}
	return nil
}

// dtypes checks and fills the weights' and the KV cache's formats, and
// the KV cache's dtype as vLLM spells it.
func (r *Request) dtypes() error {
	for _, d := range []struct {
		field string
		v     *Dtype
		def   Dtype
	}{{"weights", &r.Weights, BF16}, {"kv_cache_dtype", &r.KVCache, BF16}} {
		if *d.v == "" {
			*d.v = d.def
		}
		v, err := ParseDtype(d.field, string(*d.v))
		if err != nil {
			return err
		}
		*d.v = v
	}
	if r.KVCacheDtype == "" {
		r.KVCacheDtype = vllmKVCacheDtype(r.KVCache)
	} else {
		kv, err := ParseKVCacheDtype(r.KVCacheDtype)
		if err != nil {
			return err
		}
		r.KVCache = kv
	}
	return nil
}

// badInt is a FieldError for a whole number.
func badInt(field string, v int, want string) error {
	return &FieldError{Field: field, Value: strconv.Itoa(v), Want: want}
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

// TPSizes are the tensor-parallel sizes, in JAX devices, that s can run
// with shards holding whole KV heads: divisors of the KV heads (which also
// divide the attention heads) that fit in s's devices and take either part
// of one chip or whole chips that divide s's chips. tpu-inference would
// also replicate KV heads for a TP that is a multiple of them [ti-shard].
// Then every further shard holds a copy of the same KV cache, so the split
// stops at the KV heads.
//
// Under latent attention the heads are not split (attention runs
// data-parallel inside a replica [ti-mla]), so any size that fits whole
// chips and divides the routed experts (for expert parallelism) is one.
func TPSizes(m model.Spec, s hw.Slice) []int { return tpSizes(m, s, DPAttention(m)) }

// tpSizes is TPSizes with attention data parallel (dp) or not.
func tpSizes(m model.Spec, s hw.Slice, dp bool) []int {
	per := s.Chip.JAXDevicesPerChip
	limit := m.KV()
	if dp {
		limit = s.Chips() * per
	}
	var out []int
	for t := 1; t <= min(limit, s.Chips()*per); t++ {
		whole := t <= per || (t%per == 0 && s.Chips()%(t/per) == 0)
		heads := m.KV()%t == 0 && m.Heads%t == 0
		if dp {
			heads = !m.MoE() || m.Experts%t == 0
		}
		if heads && whole {
			out = append(out, t)
		}
	}
	return out
}

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
// a recurrent state per sequence instead (RecurrentStateBytes).
func KVBytesPerToken(m model.Spec, tp int, kv Dtype) unit.Bytes {
	return kvBytesPerToken(m, tp, kv, DPAttention(m))
}

// kvBytesPerToken is KVBytesPerToken with attention data parallel (dp)
// or not: under it a device holds every KV head of its own sequences.
func kvBytesPerToken(m model.Spec, tp int, kv Dtype, dp bool) unit.Bytes {
	if m.MLA() {
		return unit.Bytes(m.Layers * latentLanes(m) * kv.Bytes())
	}
	if dp {
		tp = 1
	}
	h := max(m.KV()/tp, 1)
	p := kv.packing()
	words := ceilDiv(2*h, p)
	head := ceilDiv(m.Head(), 128) * 128
	return unit.Bytes(m.AttentionLayers() * words * p * head * kv.Bytes())
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
	d, hd := int64(m.DModel), int64(m.Head())
	attn, linear := p.Attention, p.LinearAttention
	if !dp {
		kvProj := 2 * d * int64(max(m.KV()/tp, 1)) * hd
		attn = (p.Attention-2*d*int64(m.KV())*hd)/t + kvProj
		linear = p.LinearAttention / t // split by head [ti-gdn]
	}
	// the softmax layers' attention, and the linear-attention layers'
	n := int64(m.AttentionLayers())*attn + int64(p.LinearLayers)*linear +
		int64(p.DenseLayers())*(p.MLP/t+p.Norms) + (p.Embedding+p.Output)/t + p.FinalNorm
	if p.MoELayers > 0 {
		n += int64(p.MoELayers) * (p.Norms + p.Router + p.Shared/t)
	}
	return unit.Bytes(n*int64(w.Bytes())) + ExpertWeightBytes(m, tp, w)
}

// ActivationBytes estimates the activation buffers of one device for a
// step of tokens tokens and seqs sequences: the bf16 residual stream,
// attention input and output and the MLP's intermediate (split tp ways),
// and fp32 logits for each sequence's last token. An estimate, not
// vLLM's profile.
func ActivationBytes(m model.Spec, tp, tokens, seqs int) unit.Bytes {
	ff := m.DFF
	if m.MoE() {
		// each token's rows through its experts and the shared ones
		ff = max(ff, (m.ExpertsPerToken+m.SharedExperts)*m.ExpertFF())
	}
	if m.GatedMLP {
		ff *= 2
	}
	perTok := 2 * (3*m.DModel + ff/tp + (m.Heads+2*m.KV())*m.Head()/tp)
	return unit.Bytes(tokens*perTok + seqs*4*ceilDiv(m.Vocab, tp))
}

// Memory is one device's HBM.
type Memory struct {
	Capacity    unit.Bytes `json:"hbm_capacity_bytes"`
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
}

// Layout is one way to serve the model.
type Layout struct {
	TP int `json:"tensor_parallel_size"`
	DP int `json:"data_parallel_size"`
	// EP is the expert-parallel size (ExpertParallel; 1: none).
	EP int `json:"expert_parallel_size"`
	// AttentionDP is the attention data parallelism inside a replica
	// (latent attention: TP; else 1).
	AttentionDP int `json:"attention_data_parallel_size"`
	Chips       int `json:"chips"`
	SeqsEach    int `json:"sequences_per_replica"`
	// Concurrency is the sequences in the server across replicas: the
	// request's, or what its request rate comes to on this layout.
	Concurrency int    `json:"concurrency_sequences"`
	Memory      Memory `json:"memory"`
	// Fits: the requested concurrency fits in every replica's pages.
	Fits bool `json:"fits"`
	// Misses lists the SLOs the layout misses ("ITL 13.7ms > 9ms").
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
	PrefillAllReduce                                          time.Duration `json:"-"`
	// ActiveExperts is the routed experts a decode step's sequences touch
	// in one MoE layer (ActiveExperts), 0 for a dense model.
	ActiveExperts   float64 `json:"active_experts_per_moe_layer,omitempty"`
	TokensPerSecond float64 `json:"output_tokens_per_s"`
	PerChip         float64 `json:"output_tokens_per_s_per_chip"`
}

// Devices is the JAX devices the layout uses.
func (l Layout) Devices() int { return l.TP * l.DP }

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
	Reasons    []string
	Warnings   []string
}

// ErrNoFit is returned when no layout holds the requested concurrency.
var ErrNoFit = errors.New("no layout fits")

// Estimate costs one layout of tp devices a replica and dp replicas. tp
// must be one of TPSizes(r.Model, r.Slice) and tp·dp at most the slice's
// devices (NewRequest and Search see to it); anything else is a bug and
// panics.
func Estimate(r Request, tp, dp int) Layout {
	c := r.Slice.Chip
	per := c.JAXDevicesPerChip
	l := Layout{TP: tp, DP: dp, EP: ExpertParallel(r.Model, tp), AttentionDP: 1, Chips: ceilDiv(tp*dp, per)}
	if r.AttentionDP() {
		l.AttentionDP = tp
	}
	l.SeqsEach = ceilDiv(r.Concurrency, dp)
	l.Concurrency = r.Concurrency
	if r.MaxNumSeqs > 0 {
		l.SeqsEach, l.Concurrency = r.MaxNumSeqs, r.MaxNumSeqs*dp
	}
	m := &l.Memory
	m.Capacity = c.HBM / unit.Bytes(per)
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
	m.BlockSize = BlockSize(r.MaxModelLen, l.SeqsEach)
	if r.Model.MLA() {
		m.BlockSize = mlaPageSize
	}
	pages := int(m.KVCache / (m.KVPerToken * unit.Bytes(m.BlockSize)))
	perSeq := ceilDiv(r.MaxModelLen, m.BlockSize)
	// each attention shard holds whole sequences
	m.Pages, m.MaxSeqs = l.AttentionDP*pages, l.AttentionDP*(pages/perSeq)
	l.Fits = m.MaxSeqs >= l.SeqsEach

	rc := newReplicaCost(r, tp)
	// prefill of one prompt: compute-bound
	P := r.PromptLen
	l.DecodeOverhead = StepOverhead(VLLM)
	l.PrefillCompute = seconds(rc.flops(P, 1, float64(P)*float64(P)/2) / rc.peak) // causal: half the scores
	prefillMem := seconds(rc.weightsRead(P) / rc.bw)
	l.PrefillAllReduce = rc.allReduce(P)
	l.TTFT = max(l.PrefillCompute, prefillMem) + l.PrefillAllReduce + l.DecodeOverhead
	// decode step of SeqsEach sequences at their mean context: the
	// simulator's step (Simulate) of that batch, padded as tpu-inference
	// pads it, its terms kept apart
	ctx := r.PromptLen + r.OutputLen/2
	B := l.SeqsEach
	kv := float64(m.KVPerToken)
	b := Batch{Seqs: B, PaddedSeqs: paddedSeqs(B, max(r.MaxNumSeqs, B)), Tokens: B, PaddedTokens: paddedTokens(B),
		ContextTokens: B * ctx, AttendedPairs: float64(B) * float64(ctx), DecodeKeys: B * ctx}
	l.ActiveExperts = ActiveExperts(r.Model, B)
	l.DecodeKV = seconds(rc.kvShare(B) * float64(B*ctx) * kv / rc.bw)
	l.DecodeMemory = seconds(rc.weightsRead(B)/rc.bw) + l.DecodeKV
	l.DecodeCompute = seconds(rc.matmulFLOPs(b) / rc.peak)
	keyTime := rc.decodeKeyTime(VLLM)
	l.DecodeAttention = seconds(rc.kvShare(B) * float64(B*ctx) * keyTime)
	l.DecodeAllReduce = rc.allReduce(b.PaddedTokens)
	l.DecodeSampling = seconds(rc.sampling(b.PaddedSeqs))
	l.ITL = rc.step(kv, keyTime, l.DecodeOverhead, VLLM)(b)
	l.TokensPerSecond = float64(dp*B) / l.ITL.Seconds()
	l.PerChip = l.TokensPerSecond / float64(l.Chips)
	l.Misses = r.misses(l)
	return l
}

// misses lists the SLOs l misses.
func (r Request) misses(l Layout) []string {
	var out []string
	if r.TTFTSLO > 0 && l.TTFT > r.TTFTSLO {
		out = append(out, fmt.Sprintf("TTFT %v > %v", ms(l.TTFT), r.TTFTSLO))
	}
	if r.ITLSLO > 0 && l.ITL > r.ITLSLO {
		out = append(out, fmt.Sprintf("ITL %v > %v", ms(l.ITL), r.ITLSLO))
	}
	return out
}

// AtRate costs a layout at the concurrency Little's law gives for
// r.RequestRate: N = rate × (TTFT + OutputLen × ITL(N)). The ITL grows
// with N, so N is raised from 1 until it holds (at most MaxConcurrency;
// beyond that the layout does not fit). The layout's Concurrency field
// says what N came to.
func AtRate(r Request, tp, dp int) Layout {
	n := 1
	for {
		r.Concurrency = n
		l := Estimate(r, tp, dp)
		l.Concurrency = n
		inServer := l.TTFT.Seconds() + float64(r.OutputLen)*l.ITL.Seconds()
		need := int(math.Ceil(r.RequestRate * inServer))
		if need <= n {
			return l
		}
		if need > MaxConcurrency || !l.Fits {
			l.Fits = false
			return l
		}
		n = need
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * 1e9) }
