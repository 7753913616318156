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
	"shardlab/internal/errtext"
	"shardlab/model"
)

// Options are a serving question as a user states it, in the words and
// units a front end takes (shardlab inference's flags, the web page's
// form). ParseOptions checks them once and turns them into a Request and
// the model's name for vllm serve. Each JSON key is the field name that
// a FieldError about the option carries, so that a front end can flag
// the option at fault. Start from DefaultOptions.
type Options struct {
	// Model is a catalog model name (llama3-70b), or, with ModelSpec, the
	// name of the spec (its file), used when the spec names no model.
	Model string `json:"model"`
	// ModelSpec is a YAML or JSON model spec, as model.Parse reads it; the
	// front end reads it (this package reads no files).
	ModelSpec []byte `json:"-"`
	// TPU is an accelerator type (tpu7x-8, v6e-8), or a generation alone
	// (tpu7x), which serves on one VM of it.
	TPU string `json:"tpu"`
	// HFModel is the model as vllm serve names it: a Hugging Face
	// repository or a path; "" takes the catalog model's repository.
	HFModel string `json:"hf_model"`
	// MaxModelLen is the longest sequence, prompt and output, in tokens;
	// 0 takes the catalog's sequence length for the model.
	MaxModelLen int `json:"max_model_len"`
	// Concurrency is the clients of a closed loop across the replicas:
	// the sequences decoding at once, or, beside MaxNumSeqs, the clients
	// whose requests each replica runs at most MaxNumSeqs of at once, the
	// rest waiting in its scheduler's queue (Request.Clients). 0 takes
	// DefaultRequest's unless RequestRate or MaxNumSeqs is set, which
	// then set it (giving it with a rate is an error).
	Concurrency int `json:"concurrency"`
	// RequestRate, when positive, is the requests arriving per second.
	RequestRate float64 `json:"request_rate"`
	// PromptLen and OutputLen are every request's tokens; 0 (unset) takes
	// DefaultRequest's, or with a length mix its mean request's. Giving
	// one beside a mix is an error (NewRequest), as the mix would
	// replace it.
	PromptLen int `json:"prompt_len"`
	OutputLen int `json:"output_len"`
	// Weights is the weights' format, the serving precision: bf16, fp8 or
	// int8; "" takes the checkpoint's (Request.Checkpoint: CheckpointDtype,
	// else the catalog's record of the model's own repository, else bf16).
	Weights string `json:"weights"`
	// CheckpointDtype is the format the checkpoint vllm serve loads
	// (HFModel, or the model's own repository) stores its weights in:
	// bf16, fp8 or int8; "" takes the catalog's record of the model's own
	// repository (model.Spec.HFDtype), else bf16. shardlab reads no
	// checkpoint, so this is how a local copy or another repository
	// states its format (Request.CheckpointGiven).
	CheckpointDtype string `json:"checkpoint_dtype"`
	// MaxNumSeqs is vLLM's max_num_seqs (0: unset).
	MaxNumSeqs int `json:"max_num_seqs"`
	// KVCacheDtype is vLLM's --kv-cache-dtype, one of KVCacheDtypes.
	KVCacheDtype      string  `json:"kv_cache_dtype"`
	MemoryUtilization float64 `json:"gpu_memory_utilization"`
	// MaxNumBatchedTokens is vLLM's max_num_batched_tokens; 0 (unset)
	// takes DefaultRequest's, and any other value is the caller's
	// (Request.MaxNumBatchedTokensGiven).
	MaxNumBatchedTokens int `json:"max_num_batched_tokens"`
	// TP and DP fix the tensor-parallel size and the replicas; 0 searches
	// (TP) or fills the slice (DP).
	TP int `json:"tensor_parallel_size"`
	DP int `json:"data_parallel_size"`
	// EnableDPAttention is tpu-inference's enable_dp_attention: attention
	// data-parallel across the replica's devices (latent-attention models
	// always run so).
	EnableDPAttention bool `json:"enable_dp_attention"`
	// Objective is throughput or latency.
	Objective string `json:"objective"`
	// TTFTSLO and ITLSLO are latency targets at the offered load; 0: none.
	TTFTSLO time.Duration `json:"ttft_slo"`
	ITLSLO  time.Duration `json:"itl_slo"`
	// LengthMix is the requests' lengths, which the plan and the
	// simulation both take: fixed (PromptLen and OutputLen), uniform:A-B,
	// or, with Histogram, the histogram's name (its file). A mix replaces
	// PromptLen and OutputLen with its mean request (Request.Mix).
	LengthMix string `json:"length_mix"`
	// Histogram is a length histogram (ParseHistogram); the front end
	// reads it. When set, LengthMix only names it.
	Histogram []byte `json:"-"`
	// Seed seeds the simulation's lengths and arrivals: 0 to MaxSeed.
	Seed uint64 `json:"seed"`
	// NumRequests is the requests the simulation serves.
	NumRequests int `json:"num_requests"`
}

// Question is a serving question ParseOptions has checked: the request,
// the model's name for vllm serve, and the simulation's lengths, seed and
// requests.
type Question struct {
	Request  Request
	ModelID  string
	Mix      LengthMix
	Seed     uint64
	Requests int
}

// MaxSeed is the largest seed a serving question takes, 2^63 − 1: the
// largest the front ends echo as a JSON integer every reader holding it
// in an int64 reads back (the web form has always refused more), so that
// the seed printed is the seed run.
const MaxSeed = math.MaxInt64

// What a serving question plans when it names no model or TPU: Llama 3
// 70B on one TPU7x VM.
const (
	DefaultModel = "llama3-70b"
	DefaultTPU   = "tpu7x-8"
)

// DefaultOptions are the options of a question that sets nothing but its
// model and TPU: DefaultRequest's values, as the front ends show them,
// with the lengths and the concurrency unset (0), as a length mix, a
// request rate or max_num_seqs would set them.
func DefaultOptions() Options {
	d := DefaultRequest()
	return Options{Model: DefaultModel, TPU: DefaultTPU,
		Weights: "", KVCacheDtype: "auto", MemoryUtilization: d.MemoryUtilization,
		MaxNumBatchedTokens: d.MaxNumBatchedTokens, Objective: string(Throughput),
		LengthMix: "fixed", Seed: 1, NumRequests: 1000}
}

// ParseOptions checks o and returns the question: the request
// (NewRequest's, planned at the length mix when one is given: its mean
// request and its longest, Request.Mix), the model's name for vllm
// serve and the simulation's load. The first option at fault is a
// *FieldError naming it by its JSON key.
func ParseOptions(o Options) (Question, error) {
	mix, err := o.mix()
	if err != nil {
		return Question{}, err
	}
	r, id, err := o.request(mix)
	if fe := (*FieldError)(nil); errors.As(err, &fe) && fe.Field == "length_mix" {
		fe.Value = strconv.Quote(o.LengthMix) // as the option names it
	}
	if err != nil {
		return Question{}, err
	}
	q := Question{Request: r, ModelID: id, Mix: r.Lengths(), Seed: o.Seed, Requests: o.NumRequests}
	if o.Seed > MaxSeed {
		return Question{}, &FieldError{Field: "seed", Value: strconv.FormatUint(o.Seed, 10), Want: fmt.Sprintf("a whole number from 0 to %d", uint64(MaxSeed))}
	}
	if o.NumRequests < 1 || o.NumRequests > MaxSimRequests {
		return Question{}, badInt("num_requests", o.NumRequests, fmt.Sprintf("1 to %d", MaxSimRequests))
	}
	return q, nil
}

// mix reads the requests' length mix: the zero LengthMix for fixed
// (prompt_len and output_len), else a uniform range or a histogram.
func (o Options) mix() (LengthMix, error) {
	var m LengthMix
	var err error
	switch {
	case o.Histogram != nil:
		m, err = ParseHistogram(o.Histogram)
	case o.LengthMix == "fixed":
		return LengthMix{}, nil
	default:
		m, err = ParseLengthMix(o.LengthMix)
	}
	if err != nil {
		return m, &FieldError{Field: "length_mix", Value: strconv.Quote(o.LengthMix), Want: "fixed, uniform:A-B or a length histogram: " + braces.Literal(errtext.Detail(err))}
	}
	return m, nil
}

// request reads the serving request of the requests' lengths mix and
// the model's name for vllm serve.
func (o Options) request(mix LengthMix) (Request, string, error) {
	spec, err := o.model()
	if err != nil {
		return Request{}, "", err
	}
	slice, err := ParseTPU(o.TPU)
	if err != nil {
		return Request{}, "", err
	}
	r := DefaultRequest()
	switch {
	case o.Concurrency != 0 && o.RequestRate != 0:
		return Request{}, "", &FieldError{Field: "concurrency", Value: strconv.Itoa(o.Concurrency),
			Want: "no {request_rate} beside it: give one of the two (a rate sets the concurrency)"}
	case o.Concurrency != 0 && o.MaxNumSeqs != 0:
		r.Clients = o.Concurrency // the clients, max_num_seqs the scheduler's cap
	case o.Concurrency != 0:
		r.Concurrency = o.Concurrency
	}
	r.Model, r.Slice, r.MaxModelLen = spec, slice, o.MaxModelLen
	if !mix.zero() {
		r.PromptLen, r.OutputLen = 0, 0 // the mix's mean request (NewRequest)
	}
	if o.PromptLen != 0 {
		r.PromptLen = o.PromptLen // beside a mix, refused by NewRequest
	}
	if o.OutputLen != 0 {
		r.OutputLen = o.OutputLen
	}
	r.RequestRate, r.MaxNumSeqs = o.RequestRate, o.MaxNumSeqs
	r.Weights, r.KVCacheDtype = Dtype(o.Weights), o.KVCacheDtype
	r.MemoryUtilization, r.TP, r.DP = o.MemoryUtilization, o.TP, o.DP
	if o.MaxNumBatchedTokens != 0 {
		r.MaxNumBatchedTokens, r.MaxNumBatchedTokensGiven = o.MaxNumBatchedTokens, true
	}
	r.DPAttention, r.Mix = o.EnableDPAttention, mix
	r.HFModel = o.HFModel
	if r.Checkpoint, r.CheckpointGiven, err = o.checkpoint(spec); err != nil {
		return Request{}, "", err
	}
	r.Objective, r.TTFTSLO, r.ITLSLO = Objective(strings.ToLower(o.Objective)), o.TTFTSLO, o.ITLSLO
	if r, err = NewRequest(r); err != nil {
		return Request{}, "", err
	}
	id := o.HFModel
	if id == "" {
		id = spec.HFModel
	}
	if id == "" {
		return Request{}, "", &FieldError{Field: "hf_model", Value: `""`,
			Want: fmt.Sprintf("a Hugging Face id owner/name or a path for the vllm serve line (model %s names no Hugging Face repository)", braces.Literal(spec.Name))}
	}
	return r, id, nil
}

// checkpoint is the format the checkpoint vllm serve loads stores its
// weights in, and whether it was given: CheckpointDtype, else the model's
// record of its own repository's, whatever repository is served
// (shardlab reads no checkpoint, and the plan warns when it serves
// another of a format not given: checkpointWarning).
func (o Options) checkpoint(spec model.Spec) (Dtype, bool, error) {
	if o.CheckpointDtype == "" {
		return Dtype(spec.HFDtype), false, nil
	}
	d, err := ParseDtype("checkpoint_dtype", o.CheckpointDtype)
	if err != nil {
		return "", false, &FieldError{Field: "checkpoint_dtype", Value: strconv.Quote(o.CheckpointDtype),
			Want: "bf16, fp8 or int8, the format the checkpoint vllm serve loads ({hf_model}) stores its weights in, or empty for the catalog's record of the model's own repository"}
	}
	return d, true, nil
}

// model finds the catalog model, or parses the spec.
func (o Options) model() (model.Spec, error) {
	if o.ModelSpec != nil {
		s, err := model.Parse(o.ModelSpec)
		if err != nil {
			return s, &FieldError{Field: "model", Value: o.Model, Want: "a valid YAML or JSON spec: " + braces.Literal(err.Error())}
		}
		if s.Name == "" {
			s.Name = o.Model
		}
		return s, nil
	}
	s, ok := model.Lookup(o.Model)
	if !ok {
		return s, &FieldError{Field: "model", Value: strconv.Quote(o.Model), Want: "a catalog model (" + strings.Join(model.Names(), ", ") + ") or a YAML/JSON spec"}
	}
	return s, nil
}

// ParseTPU reads the TPU of a serving question: an accelerator type
// (tpu7x-8, v6e-8), or a generation alone, which is one of its usual VMs
// (hw.Chip.HostSlice: tpu7x-8, v6e-4, v5litepod-4).
func ParseTPU(s string) (hw.Slice, error) {
	slice, err := hw.ParseTPU(s)
	if err != nil {
		return hw.Slice{}, &FieldError{Field: "tpu", Value: strconv.Quote(s), Want: "an accelerator type (tpu7x-8, v6e-8) or a generation (tpu7x): " + braces.Literal(err.Error())}
	}
	if slice.Chips() > 0 {
		return slice, nil
	}
	one, err := slice.Chip.HostSlice()
	if err != nil {
		return hw.Slice{}, &FieldError{Field: "tpu", Value: strconv.Quote(s), Want: "an accelerator type: " + braces.Literal(err.Error())}
	}
	return one, nil
}
