package inference

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"shardlab/hw"
	"shardlab/internal/braces"
	"shardlab/model"
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

func (e *FieldError) Error() string { return e.Phrase(nil) }

// Phrase is the error with its field, and the fields Want names as
// {field} (the JSON key in braces: {length_mix}), spelt by name (the
// CLI's flags, the web form's labels) as Plan.Phrase spells a note; nil
// spells them as the package does (length_mix).
func (e *FieldError) Phrase(name func(field string) string) string {
	if name == nil {
		name = func(f string) string { return f }
	}
	want := braces.Spell(e.Want, name, isOptionKey)
	return fmt.Sprintf("inference: %s %s, want %s", name(e.Field), e.Value, want)
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

// Generations tpu-inference runs on and shardlab plans for: those its
// README recommends (v7x, v5e, v6e) and, of those it lists as
// experimental (v3, v4, v5p: README.md "Compatible TPU Generations"
// @b8692ff0), v5p, whose every number a serving plan takes is known
// (HBM per device in hw/xla_hbm.csv, one JAX device a chip, its ICI and
// the attention kernel's v5 block sizes, [ti-rpa3]). v4 and v3 are left
// out: the attention kernel has no default block sizes for them
// (ragged_paged_attention/v3/kernel.py get_default_block_sizes raises
// NotImplementedError for any tpu_version but 5 to 8 @b8692ff0).
// Experimental says which of them tpu-inference calls experimental.
var Generations = []hw.Generation{hw.V5e, hw.V5p, hw.V6e, hw.TPU7x}

// Experimental reports whether tpu-inference lists generation g as
// experimental rather than recommended (README.md @b8692ff0, lines
// 62-64: "Recommended: v7x, v5e, v6e", "Experimental: v3, v4, v5p").
func Experimental(g hw.Generation) bool {
	return g == hw.V3 || g == hw.V4 || g == hw.V5p
}

// Request is one serving question. NewRequest validates it.
type Request struct {
	Model model.Spec
	// Slice is the TPU: its chips are the most a plan may use.
	Slice hw.Slice
	// MaxModelLen is the longest sequence, in tokens; 0 takes the
	// catalog's sequence length for the model (model.Spec.SeqLen). It is
	// at most the model's context (model.Spec.MaxContext: its
	// max_position_embeddings), which may be longer.
	MaxModelLen int
	// Concurrency is the number of sequences decoding together.
	Concurrency int
	// RequestRate, when positive, replaces Concurrency: requests arrive at
	// this rate per second and the concurrency is what Little's law gives,
	// the rate times a request's time in the server (TTFT plus its output
	// tokens at the mean step, the arriving prompts' chunks counted),
	// found per layout; each
	// replica's max_num_seqs is then the cap that admits AdmitQuantile of
	// the arrivals at once (AtRate).
	RequestRate float64
	// PromptLen and OutputLen are every request's tokens, or, with Mix,
	// its mean request's (NewRequest sets them): the plan's prefill,
	// decode context, Little's law and throughput take them.
	PromptLen int
	OutputLen int
	// Mix, when set, is the requests' lengths when they vary: a uniform
	// mix or a histogram (ParseLengthMix, UniformMix, ParseHistogram).
	// PromptLen and OutputLen are then unset (0: NewRequest refuses
	// lengths given beside a mix, which it would replace) and NewRequest
	// sets them to its mean lengths, rounded; the pages are checked for
	// preemption (holds) at its longest request. The zero value: every
	// request PromptLen + OutputLen tokens (Lengths).
	Mix LengthMix
	// meanOfMix says that NewRequest set PromptLen and OutputLen from
	// Mix, so that a request it returned is accepted again.
	meanOfMix bool
	// Weights is the weights' format; "" takes Checkpoint's.
	Weights Dtype
	KVCache Dtype
	// Checkpoint is the format the checkpoint vllm serve loads stores its
	// weights in: as the caller gives it (CheckpointGiven), else as the
	// model catalog records it for the model's own repository
	// (model.Spec.HFDtype, which ParseOptions sets whatever HFModel
	// names); "" is bf16, the format of the checkpoints the catalog
	// records nothing for. vLLM reads a quantized checkpoint's format
	// from its config.json, so weights other than it need a conversion or
	// tpu-inference's quantization rules (modelWarnings).
	Checkpoint Dtype
	// CheckpointGiven says that Checkpoint is the caller's word for the
	// checkpoint's format (Options.CheckpointDtype), not the catalog's.
	CheckpointGiven bool
	// HFModel is the repository or path vllm serve loads when the caller
	// names one ("": the model's own, model.Spec.HFModel; Hugging Face
	// ids are case-insensitive, so a case variant of it is it). Another
	// than the model's own is a checkpoint shardlab cannot read: unless
	// CheckpointGiven, the plan takes the catalog's format for it and
	// warns so (checkpointWarning).
	HFModel string
	// KVCacheDtype is vLLM's --kv-cache-dtype as given (one of
	// KVCacheDtypes). When set, NewRequest sets KVCache from it; when
	// empty, NewRequest sets it to the value that stores KVCache (auto
	// for bf16, fp8). The serving command passes it on unchanged.
	KVCacheDtype string
	// MaxNumSeqs is vLLM's max_num_seqs, the sequences one scheduler
	// runs at once: a replica's one scheduler, or under attention data
	// parallelism each of its ranks' (Schedulers), as tpu-inference's
	// DPScheduler and runner take it (max_num_reqs = dp_size ×
	// max_num_seqs [ti-dps]). When positive it replaces Concurrency:
	// each layout then serves MaxNumSeqs × Schedulers sequences a
	// replica (Layout.SeqsEach), that times its replicas in all, unless
	// Clients says how many there are.
	MaxNumSeqs int
	// Clients, beside MaxNumSeqs, is a closed loop's clients across the
	// replicas, as a benchmark's --max-concurrency sends them against a
	// server started with --max-num-seqs (tpu-recipes' Llama 3.3 70B
	// runs 64 clients against 256): each replica runs its share of them,
	// at most its schedulers' MaxNumSeqs at once, and the rest wait in its scheduler's
	// queue [v-sched] (Layout.RunningEach, Layout.QueueWait). 0: every
	// replica full, MaxNumSeqs clients each. Refused without MaxNumSeqs,
	// where Concurrency is the clients.
	Clients int
	// MemoryUtilization is vLLM's gpu_memory_utilization: the share of a
	// device's HBM vLLM may fill (weights, activations, KV cache).
	MemoryUtilization float64
	// MaxNumBatchedTokens is the scheduler's token budget per step: the
	// longest prefill chunk and the size of the activation buffers.
	MaxNumBatchedTokens int
	// MaxNumBatchedTokensGiven says that MaxNumBatchedTokens is the
	// caller's, not left at DefaultRequest's: a message calls it "the
	// default" only when it is not given.
	MaxNumBatchedTokensGiven bool
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
	// MoEAllRows is a mixture of experts served by tpu-inference before
	// PR #2294 (e81c94b5, 2026-04-16): under expert parallelism every
	// device gathers all the step's routed rows, not only its own
	// experts', and gathers all of them back [ti-ep-rows]. For published
	// runs of such an engine; NewRequest refuses it for a dense model.
	MoEAllRows bool
}

// AttentionDP reports whether r's replicas run attention data parallel:
// latent attention always [ti-mla], other models when r.DPAttention asks.
func (r Request) AttentionDP() bool { return DPAttention(r.Model) || r.DPAttention }

// Schedulers is the vLLM schedulers a replica of tp devices runs for r,
// each with its own max_num_seqs (Request.MaxNumSeqs): under attention
// data parallelism one a device, tpu-inference's DPScheduler building
// one Scheduler a DP rank from the same scheduler config [ti-dps]; else
// one.
func (r Request) Schedulers(tp int) int {
	if r.AttentionDP() {
		return max(tp, 1)
	}
	return 1
}

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

// MinRequestRate is the least request rate the front ends take (a
// request an hour is 0.00028/s): a lower one is a mistake for 0.
const MinRequestRate = 0.001

// DefaultRequest is a request with shardlab inference's defaults: 64
// sequences decoding together, 1024-token prompts and outputs, the
// checkpoint's weights (Weights ""), a bf16 KV cache, vLLM's default gpu_memory_utilization (0.92) and
// tpu-inference's daily benchmarks' 4096 batched tokens. Model and Slice
// are the caller's.
func DefaultRequest() Request {
	return Request{Concurrency: 64, PromptLen: 1024, OutputLen: 1024, KVCache: "bf16",
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
		return Request{}, &FieldError{Field: "tpu", Value: string(c.Generation), Want: "v5e, v6e or tpu7x (the generations tpu-inference recommends) or v5p (one it lists as experimental; its v3 and v4 have no default block sizes in its attention kernel)"}
	}
	if r.Slice.Chips() < 1 {
		return Request{}, &FieldError{Field: "tpu", Value: string(c.Generation), Want: "an accelerator type with chips, e.g. tpu7x-8"}
	}
	if r.MaxModelLen == 0 {
		// the model's sequence length, within its positions (a spec
		// may give fewer positions than its seq_len)
		r.MaxModelLen = min(r.Model.SeqLen, r.Model.MaxContext())
	}
	if most := r.Model.MaxContext(); r.MaxModelLen < 2 || r.MaxModelLen > most {
		why := fmt.Sprintf("%s's max_position_embeddings", braces.Literal(r.Model.Name))
		if r.Model.MaxPositions == 0 {
			why = fmt.Sprintf("the catalog's sequence length for %s, which records no max_position_embeddings", braces.Literal(r.Model.Name))
		}
		return Request{}, badInt("max_model_len", r.MaxModelLen, fmt.Sprintf("2 to %d (%s)", most, why))
	}
	if err := r.concurrency(); err != nil {
		return Request{}, err
	}
	if err := r.lengthMix(); err != nil {
		return Request{}, err
	}
	if r.PromptLen < 1 || r.PromptLen >= r.MaxModelLen {
		return Request{}, badInt("prompt_len", r.PromptLen, fmt.Sprintf("1 to %d ({max_model_len} less one output token)", r.MaxModelLen-1))
	}
	if r.OutputLen < 1 || r.PromptLen+r.OutputLen > r.MaxModelLen {
		return Request{}, badInt("output_len", r.OutputLen, fmt.Sprintf("1 to %d ({max_model_len} %d less {prompt_len} %d)", r.MaxModelLen-r.PromptLen, r.MaxModelLen, r.PromptLen))
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

// lengthMix checks that r.Mix comes without lengths of its own (unless
// NewRequest set them from it) and that its requests fit in
// max_model_len, and sets PromptLen and OutputLen to its mean request,
// rounded (to the whole tokens below its means if rounding up would pass
// max_model_len).
func (r *Request) lengthMix() error {
	if r.Mix.zero() {
		return nil
	}
	for _, l := range []struct {
		field string
		v     int
	}{{"prompt_len", r.PromptLen}, {"output_len", r.OutputLen}} {
		if l.v != 0 && !r.meanOfMix {
			return &FieldError{Field: l.field, Value: strconv.Itoa(l.v),
				Want: fmt.Sprintf("it unset beside {length_mix} (%s): the mix gives the requests' lengths, and the plan takes its mean request", braces.Literal(r.Mix.String()))}
		}
	}
	if n := r.Mix.Longest(); n > r.MaxModelLen {
		return &FieldError{Field: "length_mix", Value: strconv.Quote(r.Mix.String()), Want: fmt.Sprintf("requests of at most max_model_len %d tokens; it has requests of %d", r.MaxModelLen, n)}
	}
	p, o := r.Mix.Means()
	r.PromptLen, r.OutputLen = max(int(math.Round(p)), 1), max(int(math.Round(o)), 1)
	if r.PromptLen+r.OutputLen > r.MaxModelLen {
		r.PromptLen, r.OutputLen = max(int(p), 1), max(int(o), 1)
	}
	r.meanOfMix = true
	return nil
}

// Lengths is the requests' lengths: Mix, or every request PromptLen +
// OutputLen tokens. The plan and the simulation both take them.
func (r Request) Lengths() LengthMix {
	if r.Mix.zero() {
		return FixedMix(r.PromptLen, r.OutputLen)
	}
	return r.Mix
}

// decodeContext is the mean context of a decoding sequence, the KV a
// decode step reads a sequence: of fixed lengths PromptLen + OutputLen/2;
// of a mix, its sequences weighted by the steps they decode in
// (LengthMix.MeanContext), as a step finds them.
func (r Request) decodeContext() int {
	if r.Mix.zero() {
		return r.PromptLen + r.OutputLen/2
	}
	return int(math.Round(r.Mix.MeanContext()))
}

// meanOutput is the mean output tokens of a request: what each brings
// to the throughput of a request rate.
func (r Request) meanOutput() float64 {
	if r.Mix.zero() {
		return float64(r.OutputLen)
	}
	return r.Mix.meanOutput()
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
	if r.MoEAllRows && !r.Model.MoE() {
		return &FieldError{Field: "moe_all_rows", Value: "true", Want: fmt.Sprintf("false for %s, which has no experts", braces.Literal(r.Model.Name))}
	}
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
				braces.Literal(r.Model.Name), r.KVCache, 2*r.Model.KV()/p, 2*r.Model.KV()/p, r.Model.KV(), p)}
		}
	}
	if r.TP != 0 {
		sizes := tpSizes(r.Model, r.Slice, r.AttentionDP())
		found := false
		for _, t := range sizes {
			found = found || t == r.TP
		}
		if !found {
			rule := headsRule(r.Model)
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
		return &FieldError{Field: "max_num_seqs", Value: strconv.Itoa(r.MaxNumSeqs), Want: "no {request_rate} beside it: give one of the two (a rate sets max_num_seqs)"}
	}
	if r.MaxNumSeqs < 0 || r.MaxNumSeqs > MaxConcurrency {
		return badInt("max_num_seqs", r.MaxNumSeqs, fmt.Sprintf("0 (use concurrency) or 1 to %d sequences a scheduler", MaxConcurrency))
	}
	if r.Clients < 0 || r.Clients > MaxConcurrency || r.Clients > 0 && r.MaxNumSeqs == 0 {
		return badInt("concurrency", r.Clients, fmt.Sprintf("0, or with max_num_seqs 1 to %d clients (without it the concurrency is the clients)", MaxConcurrency))
	}
	if r.MaxNumSeqs > 0 {
		r.Concurrency = r.MaxNumSeqs // one scheduler's; Estimate multiplies by the schedulers and replicas
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
	if r.Checkpoint == "" {
		r.Checkpoint = BF16
	}
	v, err := ParseDtype("weights", string(r.Checkpoint))
	if err != nil {
		return &FieldError{Field: "checkpoint", Value: strconv.Quote(string(r.Checkpoint)), Want: "bf16, fp8 or int8 (the model's hf_dtype)"}
	}
	r.Checkpoint = v
	for _, d := range []struct {
		field string
		v     *Dtype
		def   Dtype
	}{{"weights", &r.Weights, r.Checkpoint}, {"kv_cache_dtype", &r.KVCache, BF16}} {
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
