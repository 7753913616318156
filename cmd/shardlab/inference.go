package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"

	"shardlab/export"
	"shardlab/inference"
	"shardlab/internal/accept"
	"shardlab/internal/braces"
	"shardlab/model"
	"shardlab/unit"
)

// inferenceFlags are the options of shardlab inference: the serving
// question (inference.Options, which inference.ParseOptions checks, as
// the web page's form does) and the simulation's.
type inferenceFlags struct {
	opt  inference.Options
	json bool
}

// newInferenceFlags defines the flags of inference. The defaults are
// vLLM's where it has one: gpu_memory_utilization 0.92 (vllm/config/cache.py
// @002f10e0); the token budget 4096 is what tpu-inference's daily
// benchmarks pass (.buildkite/benchmark/cases/daily/daily_qwen_llama_tpu7x_2.json @b8692ff0).
// A flag is named for its option's JSON key (tensor_parallel_size →
// --tensor-parallel-size), so that inferenceError spells the option a
// FieldError names as its flag.
func newInferenceFlags() (*flag.FlagSet, *inferenceFlags) {
	fs := flag.NewFlagSet("inference", flag.ContinueOnError)
	f := &inferenceFlags{}
	o := &f.opt
	d := inference.DefaultOptions()
	fs.StringVar(&o.Model, "model", d.Model, "catalog model name or a YAML/JSON spec file of at most 1 MiB")
	fs.StringVar(&o.TPU, "tpu", d.TPU, "accelerator type, e.g. tpu7x-8 (one VM), v6e-8, tpu7x-16, tpu7x-2 (one chip);\na generation alone (tpu7x) is its usual VM (tpu7x-8, v6e-4, v5litepod-4, v5p-8), not the smallest that serves")
	fs.StringVar(&o.HFModel, "hf-model", "", "the model as vllm serve names it: a Hugging Face repository or a path (default: the catalog model's repository)")
	a := inference.Accepts
	wholeVar(fs, &o.MaxModelLen, "max-model-len", 0, a.MaxModelLen, "longest sequence, prompt and output, in tokens: by default the catalog's sequence length (seq_len: the training length or the native context, whichever the catalog describes the model at), at most the model's max_position_embeddings as the catalog records it from its config.json or model card (seq_len where it records none)")
	wholeVar(fs, &o.Concurrency, "concurrency", inference.DefaultRequest().Concurrency, a.Concurrency, "clients (a closed loop) across the replicas: the sequences decoding at once, or, with --max-num-seqs, those above it a replica waiting in vLLM's queue")
	floatVar(fs, &o.RequestRate, "request-rate", 0, decimalFlag(a.RequestRate),
		fmt.Sprintf("arrival rate of requests; the concurrency is then what Little's law gives on each layout, and max-num-seqs the cap that admits %g%% of Poisson arrivals at once", 100*inference.AdmitQuantile))
	wholeVar(fs, &o.PromptLen, "prompt-len", inference.DefaultRequest().PromptLen, a.PromptLen, "prompt tokens per request (not with --length-mix other than fixed)")
	wholeVar(fs, &o.OutputLen, "output-len", inference.DefaultRequest().OutputLen, a.OutputLen, "output tokens per request (not with --length-mix other than fixed)")
	choiceVar(fs, &o.Weights, "weights", d.Weights, []string{"bf16", "fp8", "int8"}, nil,
		"weight precision served (default: the checkpoint's, --checkpoint-dtype)")
	choiceVar(fs, &o.CheckpointDtype, "checkpoint-dtype", d.CheckpointDtype, []string{"bf16", "fp8", "int8"}, nil,
		"the format the checkpoint vllm serve loads (--hf-model) stores its weights in; shardlab reads no checkpoint (default: the model catalog's record of the model's own repository: "+checkpointDtypes()+")")
	wholeVar(fs, &o.MaxNumSeqs, "max-num-seqs", 0, a.MaxNumSeqs,
		"vLLM's max_num_seqs: sequences each scheduler runs at once, a replica's one or, with attention data parallelism, each of its devices' (without --concurrency, the clients are this times the schedulers and replicas)")
	choiceVar(fs, &o.KVCacheDtype, "kv-cache-dtype", d.KVCacheDtype, inference.KVCacheDtypes, nil, "vLLM's KV cache dtype: auto and bfloat16 store bf16, the fp8 formats 1 byte")
	floatVar(fs, &o.MemoryUtilization, "gpu-memory-utilization", d.MemoryUtilization, decimalFlag(a.MemoryUtilization), "share of a device's HBM vLLM may fill (vllm's default 0.92)")
	wholeVar(fs, &o.MaxNumBatchedTokens, "max-num-batched-tokens", d.MaxNumBatchedTokens, a.MaxNumBatchedTokens, "the scheduler's tokens per step: the prefill chunk and activation buffers")
	wholeVar(fs, &o.TP, "tensor-parallel-size", 0, a.TP, "fix the tensor-parallel size, in JAX devices (TPU7x: 2 a chip)")
	wholeVar(fs, &o.DP, "data-parallel-size", 0, a.DP,
		"fix the replicas; with --tensor-parallel-size, TP × DP below the slice's devices leaves chips idle (the plan says so)")
	fs.BoolVar(&o.EnableDPAttention, "enable-dp-attention", false,
		"tpu-inference's enable_dp_attention: attention data-parallel across each replica's devices (latent-attention models always: false is refused for them)")
	choiceVar(fs, &o.Objective, "objective", d.Objective, inference.Objectives, nil,
		"throughput: the most output tokens/s per chip that meets the SLOs; latency: the least inter-token latency, then TTFT")
	durationVar(fs, &o.TTFTSLO, "ttft-slo", 0, a.TTFTSLO.Lo, a.TTFTSLO.Hi, a.TTFTSLO.Note, "time-to-first-token target at the offered load")
	durationVar(fs, &o.ITLSLO, "itl-slo", 0, a.ITLSLO.Lo, a.ITLSLO.Hi, a.ITLSLO.Note, "inter-token latency target at the offered load")
	fs.StringVar(&o.LengthMix, "length-mix", d.LengthMix, "the requests' lengths: fixed (--prompt-len, --output-len), uniform:A-B (prompt and output each drawn from A to B tokens), or a histogram file ("+inference.HistogramLayout+"); a mix is planned at its mean request and its longest, and simulated")
	uint64Var(fs, &o.Seed, "seed", d.Seed, a.Seed.Lo, a.Seed.Hi, a.Seed.Note, "seed of the simulation's lengths and arrivals")
	wholeVar(fs, &o.NumRequests, "num-requests", d.NumRequests, a.NumRequests, "requests the simulation serves")
	fs.BoolVar(&f.json, "json", false, "print JSON")
	return fs, f
}

// wholeVar defines an int flag of the serving option's range r
// (inference.Accepts), the options its note names spelt as flags.
func wholeVar(fs *flag.FlagSet, p *int, name string, value int, r accept.Whole[int], usage string) {
	intVar(fs, p, name, value, r.Lo, r.Hi, braces.Spell(r.Note, fieldFlag, nil), usage)
}

// decimalFlag is a float flag of the serving option's range r, the
// options its zero names spelt as flags.
func decimalFlag(r accept.Decimal) floatFlag {
	return floatFlag{lo: r.Lo, hi: r.Hi, loOpen: r.LoOpen, hiOpen: r.HiOpen, zero: braces.Spell(r.Zero, fieldFlag, nil), unit: r.Unit}
}

// checkpointDtypes lists the catalog models whose checkpoints are not
// bf16, with their formats: "fp8 for deepseek3-671b, else bf16".
func checkpointDtypes() string {
	var s []string
	for _, name := range model.Names() {
		if m, ok := model.Lookup(name); ok && m.HFDtype != "" && m.HFDtype != "bf16" {
			s = append(s, m.HFDtype+" for "+name)
		}
	}
	return strings.Join(append(s, "else bf16"), ", ")
}

func runInference(args []string, stdout, stderr io.Writer) error {
	fs, f := newInferenceFlags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	o := f.opt
	unsetDefaults(fs, &o)
	spec, err := specFile("--model", o.Model)
	if err != nil {
		return err
	}
	o.ModelSpec = spec
	if o.Histogram, err = readMix(o.LengthMix); err != nil {
		return err
	}
	q, err := inference.ParseOptions(o)
	if err != nil {
		return inferenceError(err)
	}
	if err := dpAttentionOff(fs, q.Request); err != nil {
		return err
	}
	r, id, mix := q.Request, q.ModelID, q.Mix
	p, err := inference.Search(r)
	if err != nil {
		return f.searchError(stdout, err)
	}
	load := inference.Load{Mix: mix, Concurrency: p.Best.Concurrency, RequestRate: r.RequestRate, Requests: q.Requests}
	sim, err := inference.Simulate(r, p.Best, inference.SimOptions{Engine: inference.VLLM, Load: load}, rand.New(rand.NewPCG(q.Seed, 0)))
	var fe *inference.FieldError
	if errors.As(err, &fe) && fe.Field == "pages" {
		return err // the KV cache holds no single request: not a flag's fault
	} else if err != nil {
		return inferenceError(err)
	}
	p.Warnings = append(append(p.Warnings, p.BandWarnings()...), p.SimMisses(sim)...)
	p = p.Phrase(fieldFlag) // the options its notes name, as flags
	cmd := export.VLLMServe(p, id)
	if f.json {
		out := export.Serving(p, cmd)
		out.Simulation = export.Simulation(sim, mix, q.Seed)
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
		return unborne(p, sim)
	}
	if err := writeInference(stdout, p, cmd); err != nil {
		return err
	}
	if err := writeSim(stdout, sim, q, load.Concurrency); err != nil {
		return err
	}
	return unborne(p, sim)
}

// writeSim writes sim, the simulation of q's plan at concurrency
// clients (or q's request rate), after a blank line (Question.WriteSim).
func writeSim(w io.Writer, sim inference.SimResult, q inference.Question, concurrency int) error {
	fmt.Fprintln(w)
	return q.WriteSim(w, sim, concurrency)
}

// unsetDefaults sets the options whose flags were not given, and whose
// defaults others replace, to 0 (unset): the concurrency, which a rate
// or max_num_seqs sets, the lengths, which a length mix sets, and the
// token budget, so that a message calls it the default only when it is.
func unsetDefaults(fs *flag.FlagSet, o *inference.Options) {
	set := setFlags(fs)
	for _, v := range []struct {
		flag string
		to   *int
	}{{"concurrency", &o.Concurrency}, {"prompt-len", &o.PromptLen}, {"output-len", &o.OutputLen},
		{"max-num-batched-tokens", &o.MaxNumBatchedTokens}} {
		if !set[v.flag] {
			*v.to = 0
		}
	}
}

// unborne is the error of a plan that misses its SLOs (bestEffort) or
// that its own simulation sim does not bear out (inference's
// Plan.SimMisses, printed among the plan's warnings): exit 1 either way,
// so that a script sees it.
func unborne(p inference.Plan, sim inference.SimResult) error {
	misses := p.SimMisses(sim)
	if err := bestEffort(p); err != nil || len(misses) == 0 {
		return err
	}
	// count only the simulation's warnings: the plan's own are above too
	return fmt.Errorf("inference: the simulation does not bear the plan out (the simulation's %s above): its steady state does not hold for these requests", unit.Plural(len(misses), "warning"))
}

// bestEffort is the error of a plan no layout of which meets the SLOs:
// the best effort is printed, and the exit status is 1, as when no
// layout fits, so that a script sees the miss.
func bestEffort(p inference.Plan) error {
	if !p.BestEffort {
		return nil
	}
	return fmt.Errorf("inference: no layout meets the SLOs (%s): the best effort is shown above", strings.Join(p.Best.Misses, ", "))
}

// dpAttentionOff refuses --enable-dp-attention=false for a model with
// latent attention, which the plan can only serve attention data
// parallel: tpu-inference raises "MLA models require ... DP attention"
// when enable_dp_attention is not in --additional-config
// (tpu_inference/platforms/tpu_platform.py
// TpuPlatform.check_and_update_config @0021b4ac53aa), so the flag cannot
// turn it off, and the serving command always sets it.
func dpAttentionOff(fs *flag.FlagSet, r inference.Request) error {
	if !setFlags(fs)["enable-dp-attention"] || r.DPAttention || !inference.DPAttention(r.Model) {
		return nil
	}
	return bad("inference: --enable-dp-attention false, want true or unset for %s: its latent attention runs data parallel inside a replica, and tpu-inference refuses a latent-attention model without enable_dp_attention (tpu_platform.py check_and_update_config)", r.Model.Name)
}

// readMix reads the histogram file --length-mix names; nil for fixed and
// uniform:A-B.
func readMix(mix string) ([]byte, error) {
	if mix == "fixed" || strings.HasPrefix(mix, "uniform:") {
		return nil, nil
	}
	if _, err := os.Stat(mix); errors.Is(err, os.ErrNotExist) {
		return nil, bad("--length-mix %q: no such file, want fixed, uniform:A-B or a histogram file (%s)", mix, inference.HistogramLayout)
	}
	h, err := readFile("--length-mix", mix, maxMixBytes)
	if err == nil && h == nil {
		h = []byte{} // an empty file is an empty histogram
	}
	return h, err
}

// maxMixBytes bounds a --length-mix histogram file.
const maxMixBytes = 1 << 20

// inferenceError spells the request field an error of package inference
// names as its flag: tensor_parallel_size → --tensor-parallel-size.
// searchError is a search's error as the flags name it, written on stdout
// as JSON too with --json when the request cannot be served (failJSON).
func (f *inferenceFlags) searchError(stdout io.Writer, err error) error {
	err = inferenceError(err) // a token budget the chosen layout's vLLM refuses names its flag
	if f.json {
		return failJSON(stdout, err)
	}
	return err
}

func inferenceError(err error) error {
	var fe *inference.FieldError
	var ne *inference.NoFitError
	switch {
	case errors.As(err, &fe):
		return usageError{errors.New(fe.Phrase(fieldFlag))}
	case errors.As(err, &ne):
		// what would fit, named by its flag (exit 1: a question with no answer)
		return phrasedError{ne.Phrase(fieldFlag), err}
	}
	return err
}

// fieldFlag is the flag of an inference field: max_model_len is
// --max-model-len.
func fieldFlag(field string) string { return "--" + strings.ReplaceAll(field, "_", "-") }

func writeInference(w io.Writer, p inference.Plan, cmd []string) error {
	return p.WriteText(w, export.ShellQuote(cmd))
}
