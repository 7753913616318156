package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"shardlab/chart"
	"shardlab/export"
	"shardlab/inference"
	"shardlab/plan"
)

// servingLooks are the serving form's options, in the order it shows
// them: one for each field of inference.Options (its JSON key, which is
// also the field a *inference.FieldError names), and the pasted spec.
// TestServingFormHasEveryOption holds this list to inference.Options.
var servingLooks = withModel([]look{
	{"hf_model", "Job", "Hugging Face model", "what vllm serve loads: owner/name or a path; empty: the catalog model's repository", nil},
	{"max_model_len", "Job", "Max model length", "tokens, prompt and output; 0: the model's context", nil},
	{"prompt_len", "Job", "Prompt length", fmt.Sprintf("tokens per request, with a fixed length mix; 0: %d", inference.DefaultRequest().PromptLen), nil},
	{"output_len", "Job", "Output length", fmt.Sprintf("tokens per request, with a fixed length mix; 0: %d", inference.DefaultRequest().OutputLen), nil},
	{"tpu", "Hardware", "TPU type", "an accelerator type (tpu7x-8, v6e-8) or a generation alone: one VM of it", nil},
	{"concurrency", "Load", "Concurrency", "clients (a closed loop) across the replicas: the sequences decoding at once, or, with max_num_seqs, those above it a replica waiting in vLLM's queue; 0: 64, unless the request rate or max_num_seqs sets it", nil},
	{"request_rate", "Load", "Request rate", "requests/s; the concurrency is then what Little's law gives on each layout; 0: use the concurrency", nil},
	{"max_num_seqs", "Load", "Max sequences a scheduler", "vLLM's max_num_seqs, the sequences each scheduler runs at once (a replica's one, or each attention-DP rank's); 0: from the concurrency", nil},
	{"objective", "Layout", "Objective", "throughput: most output tokens/s per chip meeting the SLOs; latency: least ITL, then TTFT", objectiveChoices},
	{"ttft_slo", "Layout", "TTFT target", "time to first token at the offered load (500ms); 0: none", nil},
	{"itl_slo", "Layout", "ITL target", "inter-token latency at the offered load (40ms); 0: none", nil},
	{"tensor_parallel_size", "Layout", "Tensor-parallel size", "JAX devices a replica (TPU7x: 2 a chip); 0: search", nil},
	{"data_parallel_size", "Layout", "Replicas", "data-parallel size; 0: fill the slice", nil},
	{"enable_dp_attention", "Layout", "Data-parallel attention", "tpu-inference's enable_dp_attention: attention data-parallel across a replica's devices", nil},
	{"weights", "Memory", "Weights", "the weights' format, as served", weightChoices},
	{"checkpoint_dtype", "Memory", "Checkpoint format", "the format the checkpoint vllm serve loads (the Hugging Face model) stores its weights in; shardlab reads no checkpoint", checkpointChoices},
	{"kv_cache_dtype", "Memory", "KV cache dtype", "vLLM's --kv-cache-dtype: auto and bfloat16 store bf16, the fp8 formats 1 byte", kvChoices},
	{"gpu_memory_utilization", "Memory", "Memory utilization", "vLLM's gpu_memory_utilization: the share of a device's HBM it may fill", nil},
	{"max_num_batched_tokens", "Memory", "Batched tokens", "vLLM's max_num_batched_tokens: the prefill chunk and activation buffers", nil},
	{"length_mix", "Simulation", "Length mix", "the requests' lengths, planned at their mean and longest request and simulated: fixed (the prompt and output lengths) or uniform:A-B, which sets them (a histogram file: the CLI)", nil},
	{"seed", "Simulation", "Seed", "seed of the simulation's lengths and arrivals", nil},
	{optionNumRequests, "Simulation", "Requests", "requests the simulation serves", nil},
})

// optionNumRequests is the serving form's num_requests, which the web
// bounds below the command line's (Config.MaxSimRequests).
const optionNumRequests plan.Option = "num_requests"

func objectiveChoices() []choice { return stringChoices(inference.Objectives) }
func weightChoices() []choice {
	return append([]choice{{"", "the checkpoint's"}}, stringChoices([]string{"bf16", "fp8", "int8"})...)
}
func checkpointChoices() []choice {
	return append([]choice{{"", "the catalog's"}}, stringChoices([]string{"bf16", "fp8", "int8"})...)
}
func kvChoices() []choice { return stringChoices(inference.KVCacheDtypes) }

func stringChoices(v []string) []choice {
	out := make([]choice, len(v))
	for i, s := range v {
		out[i] = choice{s, s}
	}
	return out
}

// servingForm is the serving form: its fields over the struct fields of
// inference.Options, by JSON key.
var servingForm = newOptionsForm(servingLooks, inference.DefaultOptions, inference.DefaultModel).withUnset(optionMaxNumBatchedTokens).withAccepted(inference.Accepted)

// optionMaxNumBatchedTokens is vLLM's token budget, unset (the default,
// not given) where a query leaves it out (withUnset).
const optionMaxNumBatchedTokens plan.Option = "max_num_batched_tokens"

// servingQuestion is the serving page (GET /serving) and its JSON download
// (GET /download/serving.json, as shardlab inference --json prints it
// without the simulation): the layouts, latency and throughput against
// concurrency and the vllm serve line.
var servingQuestion = question[inference.Options, servingView]{
	optionsForm: servingForm,
	answer:      (*Handler).servingRun,
	name:        "serving",
	json:        func(w io.Writer, v *servingView) error { return writeJSON(w, v.Download) },
}

// parseServing checks the options with inference.ParseOptions and finds
// every option at fault (parseEach), as parseAll does for plans.
func parseServing(o inference.Options, bad fieldErrors) (inference.Question, error) {
	return parseEach(servingForm.form, o, bad, inference.ParseOptions)
}

// maxCurves is how many layouts the serving charts draw: the chosen and
// the next best, so that the lines stay readable.
const maxCurves = 4

// servingView is a serving plan as the page shows it.
type servingView struct {
	Plan    inference.Plan
	J       export.ServingJSON
	Command string
	Charts  []chartView
	Skipped string
	// Sim is the simulation as shardlab inference prints it.
	Sim string
	// Download is J with the options its notes name spelt as flags, as
	// shardlab inference --json spells them; J spells them as the form
	// labels them.
	Download export.ServingJSON
}

// servingLate is a serving plan's timeout: its simulation stops at the
// deadline.
var servingLate = timeoutError{what: "the serving plan and its simulation", ended: "were stopped",
	advice: "ask for fewer simulated requests (num_requests), or use shardlab inference on the command line"}

// servingRun is the serving plan of the options, with its simulation,
// under the handler's bounds: at most MaxSimRequests simulated requests
// (more are refused, naming num_requests, before any work), a search
// slot and the request's deadline (work), as plans have; the search takes
// milliseconds, the simulation up to seconds for many requests, and it
// stops at the deadline, freeing its slot. Its memory does not grow with
// its steps (inference keeps the latencies in bounded memory), so a long
// one costs its slot's time to the deadline and no more; the requests are
// not refused by an estimate of their steps beforehand, which depends on
// the batch the load settles at and on the machine's speed.
func (h *Handler) servingRun(ctx context.Context, o inference.Options, bad fieldErrors) (*servingView, error) {
	q, err := parseServing(o, h.boundRequests(&o, bad))
	if err != nil {
		return nil, err
	}
	req, id := q.Request, q.ModelID
	var p inference.Plan
	var sim inference.SimResult
	err = h.work(ctx, servingLate, func(stop <-chan struct{}) error {
		var err error
		if p, err = inference.Search(req); err != nil {
			return err
		}
		sim, err = inference.Simulate(req, p.Best, inference.SimOptions{Engine: inference.VLLM, Stop: stop, Load: inference.Load{Mix: q.Mix, Concurrency: p.Best.Concurrency, RequestRate: req.RequestRate, Requests: q.Requests}}, rand.New(rand.NewPCG(q.Seed, 0)))
		return err
	})
	if err != nil {
		return nil, cannotServe(err)
	}
	p.Warnings = append(append(p.Warnings, p.BandWarnings()...), p.SimMisses(sim)...) // as the CLI's
	v := newServingView(p, id)
	v.J.Simulation = export.Simulation(sim, q.Mix, q.Seed)
	v.Download.Simulation = v.J.Simulation
	var st strings.Builder
	if err := q.WriteSim(&st, sim, p.Best.Concurrency); err != nil {
		return nil, err
	}
	v.Sim = st.String()
	curves := inference.SweepConcurrency(req, p.Layouts[:min(maxCurves, len(p.Layouts))])
	labels := make([]string, len(curves))
	for i, c := range curves {
		labels[i] = chart.CurveLabel(c)
		if i == 0 {
			labels[i] += " chosen"
		}
	}
	charts, err := chart.Serving(p, curves, labels)
	switch {
	case errors.Is(err, chart.ErrNotApplicable):
		v.Skipped = oneLine(err.Error())
	case err != nil:
		return nil, err
	}
	for _, c := range charts {
		sv, err := inlineSVG(c)
		if err != nil {
			return nil, err
		}
		v.Charts = append(v.Charts, chartView{Name: c.Name, Title: c.Title, SVG: sv})
	}
	return v, nil
}

// newServingView is plan p served as id: its JSON with the options its
// notes name spelt as the form labels them (the page's) and as flags (the
// download's), and its vllm serve line.
func newServingView(p inference.Plan, id string) *servingView {
	cmd := export.VLLMServe(p, id)
	asLabel := func(f string) string { return servingForm.keyLabel(plan.Option(f)) }
	asFlag := func(f string) string { return plan.Option(f).Flag() }
	return &servingView{Plan: p, J: export.Serving(p.Phrase(asLabel), cmd), Download: export.Serving(p.Phrase(asFlag), cmd), Command: export.ShellQuote(cmd)}
}

// boundRequests refuses a simulation of more requests than
// Config.MaxSimRequests, naming num_requests and the range, and sets
// them to the default (parseEach checks no refused option again).
func (h *Handler) boundRequests(o *inference.Options, bad fieldErrors) fieldErrors {
	if n := o.NumRequests; (n < 1 || n > h.cfg.MaxSimRequests) && !bad.has(optionNumRequests) {
		bad = append(bad, textOf(optionNumRequests, "%d, want 1 to %d simulated requests on the web (the command line takes up to %d)", n, h.cfg.MaxSimRequests, inference.MaxSimRequests))
		o.NumRequests = inference.DefaultOptions().NumRequests
	}
	return bad
}

// errCannotServe is a serving question no layout can answer: a job that
// cannot run, 422 as plan's NoPlanError is; unfit is inference's error
// where it says what would fit (its Fits), else nil.
type errCannotServe struct {
	msg   string
	unfit *inference.NoFitError
}

func (e errCannotServe) Error() string { return e.msg }

// cannotServe is err as errCannotServe where it says that no layout
// serves the question (inference.ErrNoFit, or no scheduler's pages), else
// err.
func cannotServe(err error) error {
	var fe *inference.FieldError
	if errors.Is(err, inference.ErrNoFit) || errors.As(err, &fe) && fe.Field == "pages" {
		var unfit *inference.NoFitError
		errors.As(err, &unfit)
		return errCannotServe{strings.TrimPrefix(oneLine(err.Error()), "inference: "), unfit}
	}
	return err
}
