package web

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"reflect"
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
	{"prompt_len", "Job", "Prompt length", "tokens per request", nil},
	{"output_len", "Job", "Output length", "tokens per request", nil},
	{"tpu", "Hardware", "TPU type", "an accelerator type (tpu7x-8, v6e-8) or a generation alone: one VM of it", nil},
	{"concurrency", "Load", "Concurrency", "sequences decoding at once across the replicas; 0: 64, unless the request rate or max_num_seqs sets it", nil},
	{"request_rate", "Load", "Request rate", "requests/s; the concurrency is then what Little's law gives on each layout; 0: use the concurrency", nil},
	{"max_num_seqs", "Load", "Max sequences a replica", "vLLM's max_num_seqs; 0: from the concurrency", nil},
	{"objective", "Layout", "Objective", "throughput: most output tokens/s per chip meeting the SLOs; latency: least ITL, then TTFT", objectiveChoices},
	{"ttft_slo", "Layout", "TTFT target", "time to first token at the offered load (500ms); 0: none", nil},
	{"itl_slo", "Layout", "ITL target", "inter-token latency at the offered load (40ms); 0: none", nil},
	{"tensor_parallel_size", "Layout", "Tensor-parallel size", "JAX devices a replica (TPU7x: 2 a chip); 0: search", nil},
	{"data_parallel_size", "Layout", "Replicas", "data-parallel size; 0: fill the slice", nil},
	{"enable_dp_attention", "Layout", "Data-parallel attention", "tpu-inference's enable_dp_attention: attention data-parallel across a replica's devices", nil},
	{"weights", "Memory", "Weights", "the weights' format", weightChoices},
	{"kv_cache_dtype", "Memory", "KV cache dtype", "vLLM's --kv-cache-dtype: auto and bfloat16 store bf16, the fp8 formats 1 byte", kvChoices},
	{"gpu_memory_utilization", "Memory", "Memory utilization", "vLLM's gpu_memory_utilization: the share of a device's HBM it may fill", nil},
	{"max_num_batched_tokens", "Memory", "Batched tokens", "vLLM's max_num_batched_tokens: the prefill chunk and activation buffers", nil},
	{"length_mix", "Simulation", "Length mix", "the simulated requests' lengths: fixed (the prompt and output lengths) or uniform:A-B (a histogram file: the CLI)", nil},
	{"seed", "Simulation", "Seed", "seed of the simulation's lengths and arrivals", nil},
	{"num_requests", "Simulation", "Requests", "requests the simulation serves", nil},
})

func objectiveChoices() []choice { return stringChoices(inference.Objectives) }
func weightChoices() []choice    { return stringChoices([]string{"bf16", "fp8", "int8"}) }
func kvChoices() []choice        { return stringChoices(inference.KVCacheDtypes) }

func stringChoices(v []string) []choice {
	out := make([]choice, len(v))
	for i, s := range v {
		out[i] = choice{s, s}
	}
	return out
}

// servingLabel spells a serving option as the form labels it.
func servingLabel(o plan.Option) string { return keyLabel(servingForm, o) }

// servingForm is the serving form: its fields over the struct fields of
// inference.Options, by JSON key.
var servingForm = newForm(reflect.TypeFor[inference.Options](), servingLooks, reflect.ValueOf(inference.DefaultOptions()))

// servingOptions reads the serving form's query over
// inference.DefaultOptions, with the pasted spec.
func (h *Handler) servingOptions(q url.Values) (inference.Options, formValues, fieldErrors) {
	o := inference.DefaultOptions()
	vals, bad := servingForm.read(q, reflect.ValueOf(&o))
	if err := usePastedSpec(vals, h.cfg, inference.DefaultModel, &o.Model, &o.ModelSpec); err != nil {
		bad = append(bad, err)
	}
	return o, vals, bad
}

// parseServing checks the options with inference.ParseOptions and finds
// every option at fault (parseEach), as parseAll does for plans.
func parseServing(o inference.Options, bad fieldErrors) (inference.Question, error) {
	return parseEach(servingForm, o, bad, inference.ParseOptions, servingFieldError)
}

// servingFieldError is an error of inference.ParseOptions as the form
// shows it, and whether it names a field.
func servingFieldError(err error) (*fieldError, bool) {
	var fe *inference.FieldError
	if !errors.As(err, &fe) {
		return nil, false
	}
	opt := plan.Option(fe.Field)
	return &fieldError{opt, func(name func(plan.Option) string) string {
		return fmt.Sprintf("%s %s, want %s", name(opt), fe.Value, fe.Want)
	}}, true
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
}

// servingRun is the serving plan of the options, with its simulation,
// under the handler's bounds: a search slot and the request's deadline
// (work), as plans have; the search takes milliseconds, the simulation
// up to seconds for many requests.
func (h *Handler) servingRun(r *http.Request, o inference.Options, bad fieldErrors) (*servingView, error) {
	q, err := parseServing(o, bad)
	if err != nil {
		return nil, err
	}
	req, id := q.Request, q.ModelID
	var p inference.Plan
	var sim inference.SimResult
	err = h.work(r.Context(), func() error {
		var err error
		if p, err = inference.Search(req); err != nil {
			return err
		}
		load := inference.Load{Mix: q.Mix, Concurrency: p.Best.Concurrency, RequestRate: req.RequestRate, Requests: q.Requests}
		sim, err = inference.Simulate(req, p.Best, inference.SimOptions{Engine: inference.VLLM, Load: load}, rand.New(rand.NewPCG(q.Seed, 0)))
		return err
	})
	if err != nil {
		var fe *inference.FieldError
		if errors.Is(err, inference.ErrNoFit) || errors.As(err, &fe) && fe.Field == "pages" {
			return nil, errCannotServe{strings.TrimPrefix(oneLine(err.Error()), "inference: ")}
		}
		return nil, err
	}
	cmd := export.VLLMServe(p, id)
	v := &servingView{Plan: p, J: export.Serving(p, cmd), Command: export.ShellQuote(cmd)}
	v.J.Simulation = export.Simulation(sim, q.Mix, q.Seed)
	what := fmt.Sprintf("%s lengths, %d concurrent clients", q.Mix, p.Best.Concurrency)
	if req.RequestRate > 0 {
		what = fmt.Sprintf("%s lengths, Poisson arrivals at %g requests/s, seed %d", q.Mix, req.RequestRate, q.Seed)
	}
	var st strings.Builder
	if err := sim.WriteText(&st, what); err != nil {
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

// inlineSVG is a chart of package chart as inline SVG, named for
// assistive technology.
func inlineSVG(c chart.Chart) (template.HTML, error) {
	b, err := c.SVG()
	if err != nil {
		return "", err
	}
	if i := bytes.Index(b, []byte("<svg")); i > 0 {
		b = b[i:]
	}
	b = bytes.Replace(b, []byte("<svg"), []byte(`<svg role="img" aria-label="`+template.HTMLEscapeString(c.Title)+`"`), 1)
	return template.HTML(b), nil
}

// servingData is what the serving page's template takes.
type servingData struct {
	Groups []groupView
	TPUs   []string
	Error  string
	Query  string
	R      *servingView
}

// serveServing shows the serving form and, when the URL asks a question,
// its plan: the layouts, latency and throughput against concurrency, the
// vllm serve line and the JSON download. Every field at fault is flagged
// at once.
func (h *Handler) serveServing(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	o, vals, bad := h.servingOptions(q)
	d := servingData{TPUs: tpuNames()}
	code := http.StatusOK
	var err error
	if len(bad) > 0 {
		err = bad
	}
	if len(q) > 0 {
		if d.R, err = h.servingRun(r, o, bad); err == nil {
			d.Query = q.Encode()
		}
	}
	var fes fieldErrors
	if err != nil {
		code, fes = h.status(servingStatus(err))
		h.setRetry(w, code)
	}
	d.Groups, d.Error = servingForm.view(vals, fes, servingLabel)
	h.render(w, code, "serving.html", "page", d)
}

// errCannotServe is a serving question no layout can answer: a job that
// cannot run, 422 as plan's NoPlanError is.
type errCannotServe struct{ msg string }

func (e errCannotServe) Error() string { return e.msg }

// servingStatus is an error of the serving search as status reads it:
// the inference package's bad values are the request's mistakes.
func servingStatus(err error) error {
	var fe *inference.FieldError
	if errors.As(err, &fe) {
		opt := plan.Option(fe.Field)
		return &fieldError{opt, func(name func(plan.Option) string) string {
			return fmt.Sprintf("%s %s, want %s", name(opt), fe.Value, fe.Want)
		}}
	}
	return err
}

// render writes template name with d and status code, or, when it fails,
// a 500 saying it could not render what (the page, the charts).
func (h *Handler) render(w http.ResponseWriter, code int, name, what string, d any) {
	var b bytes.Buffer
	if err := h.page.t.ExecuteTemplate(&b, name, d); err != nil {
		h.cfg.Log.Printf("web: %s: %v", name, err)
		http.Error(w, "internal error rendering the "+what, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write(b.Bytes())
}

// serveServingJSON downloads the query's serving plan as JSON, as
// shardlab inference --json prints it without the simulation.
func (h *Handler) serveServingJSON(w http.ResponseWriter, r *http.Request) {
	o, _, bad := h.servingOptions(r.URL.Query())
	v, err := h.servingRun(r, o, bad)
	if err != nil {
		code, fes := h.status(servingStatus(err))
		h.setRetry(w, code)
		http.Error(w, fes.Phrase(servingLabel), code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="serving.json"`)
	var b bytes.Buffer
	if err := writeJSON(&b, v.J); err != nil {
		h.cfg.Log.Printf("web: serving.json: %v", err)
		http.Error(w, "internal error writing the JSON", http.StatusInternalServerError)
		return
	}
	io.Copy(w, &b)
}
