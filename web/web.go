// Package web serves shardlab in a browser: an http.Handler with a form
// that has a field for every option of plan.Options (grouped: job,
// hardware, layout, memory, advanced; each showing its default) and plans
// as the user types, whose state lives in the page's URL; the plan with
// its reasons and warnings, the charts of package chart drawn on the
// server as SVG, the ranked layouts, and downloads (MaxText YAML, xpk,
// plan JSON); a serving page (GET /serving: every option of shardlab
// inference through inference.ParseOptions, the layouts, latency and
// throughput against concurrency, the vllm serve line, the JSON) and a
// budget page (GET /budget: every option of shardlab budget through
// budget.ParseOptions, the budget package's own table and Pareto front,
// the time-against-dollars chart, the JSON), built the same way; and a
// JSON API (POST /api/plan prints what shardlab plan --json prints, GET
// /api/catalog the models and TPU types). Requests parse through the
// parser the CLI uses (plan.ParseRequest, inference.ParseOptions,
// budget.ParseOptions); every option at fault is named at once
// (parseAll, parseServing, parseBudget), and a job that cannot run says
// in words how many layouts failed and why.
//
// The handler is safe to expose to a browser on a workstation: bodies,
// pasted specs and the searched chips are bounded, each request has a
// deadline, at most a few searches run at once and a bounded queue of
// requests waits a few seconds for them (then 503 with Retry-After),
// nothing in a request reaches the file system, and errors are one line
// of text (next to the form field they concern), never a stack trace. A
// mistake in a request is a 4xx that names the field at fault; only the
// server's own failures are 500s, and only they are logged. The page and
// its script and style are embedded: the page needs no network.
package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"math"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"shardlab/chart"
	"shardlab/export"
	"shardlab/hw"
	"shardlab/model"
	"shardlab/plan"
	"shardlab/schema"
	"shardlab/unit"
)

// Config bounds what the handler accepts; a zero field takes the default
// that DefaultConfig gives.
type Config struct {
	// MaxBodyBytes bounds a request body (POST /api/plan).
	MaxBodyBytes int64
	// MaxSpecBytes bounds a pasted model spec.
	MaxSpecBytes int
	// MaxChips bounds the chips a request searches, in all slices.
	MaxChips int
	// Timeout bounds one request's work: its search and its charts.
	Timeout time.Duration
	// MaxSearches is how many requests may search at once; more wait in
	// the queue.
	MaxSearches int
	// MaxQueue is how many requests may wait for a search at once; more
	// get 503 at once. It bounds the memory that waiting requests hold
	// (each at most MaxBodyBytes, parsed).
	MaxQueue int
	// QueueWait is how long a request waits in the queue for a search
	// before it gets 503, with a Retry-After of as many seconds.
	QueueWait time.Duration
	// Log receives one line per server error (never for a mistake in a
	// request); nil discards.
	Log *log.Logger
}

// DefaultConfig is what a zero Config means: two searches at once (the
// search is CPU-bound; a workstation has few cores to spare) and 256
// requests waiting up to DefaultQueueWait for them.
func DefaultConfig() Config {
	return Config{MaxBodyBytes: 64 << 10, MaxSpecBytes: 16 << 10, MaxChips: 1 << 16, Timeout: 30 * time.Second,
		MaxSearches: 2, MaxQueue: 256, QueueWait: DefaultQueueWait}
}

// DefaultQueueWait is how long a request waits for a search by default:
// long enough for a burst of small searches (a few milliseconds each) to
// drain, short enough that a client of a saturated server hears so soon.
const DefaultQueueWait = 5 * time.Second

// Handler serves the page, its downloads and the JSON API.
type Handler struct {
	cfg Config
	// slots holds a token per running search; queue a token per request
	// waiting for a slot.
	slots, queue chan struct{}
	retryAfter   string // the Retry-After of a 503, in seconds
	mux          *http.ServeMux
	page         *pageTemplates
}

// New returns the handler with c's bounds (defaults for zero fields).
func New(c Config) *Handler {
	d := DefaultConfig()
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = d.MaxBodyBytes
	}
	if c.MaxSpecBytes <= 0 {
		c.MaxSpecBytes = d.MaxSpecBytes
	}
	if c.MaxChips <= 0 {
		c.MaxChips = d.MaxChips
	}
	if c.Timeout <= 0 {
		c.Timeout = d.Timeout
	}
	if c.MaxSearches <= 0 {
		c.MaxSearches = d.MaxSearches
	}
	if c.MaxQueue <= 0 {
		c.MaxQueue = d.MaxQueue
	}
	if c.QueueWait <= 0 {
		c.QueueWait = d.QueueWait
	}
	if c.Log == nil {
		c.Log = log.New(io.Discard, "", 0)
	}
	h := &Handler{cfg: c, slots: make(chan struct{}, c.MaxSearches), queue: make(chan struct{}, c.MaxQueue),
		retryAfter: strconv.Itoa(max(1, int(math.Ceil(c.QueueWait.Seconds())))), mux: http.NewServeMux(), page: templates()}
	h.mux.HandleFunc("GET /{$}", h.servePage)
	h.mux.HandleFunc("GET /static/{name}", serveStatic)
	h.mux.HandleFunc("GET /download/maxtext.yaml", h.serveMaxText)
	h.mux.HandleFunc("GET /download/plan.json", h.servePlanJSON)
	h.mux.HandleFunc("GET /download/xpk.sh", h.serveXPK)
	h.mux.HandleFunc("GET /serving", h.serveServing)
	h.mux.HandleFunc("GET /download/serving.json", h.serveServingJSON)
	h.mux.HandleFunc("GET /budget", h.serveBudget)
	h.mux.HandleFunc("GET /download/budget.json", h.serveBudgetJSON)
	h.mux.HandleFunc("GET /charts", h.serveScaling)
	h.mux.HandleFunc("POST /api/plan", h.serveAPIPlan)
	h.mux.HandleFunc("GET /api/catalog", serveCatalog)
	return h
}

// ServeHTTP serves GET / (the page, and with a query its plan), GET
// /serving and /budget (the serving and budget pages, likewise), GET
// /static/app.js and /static/style.css, GET /download/maxtext.yaml,
// /download/xpk.sh, /download/plan.json, /download/serving.json and
// /download/budget.json (for the page's query), GET /charts, POST
// /api/plan and GET /api/catalog.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'")
	h.mux.ServeHTTP(w, r)
}

// Errors of the work a request asks for that are no mistake in it.
var (
	errQueueFull = errors.New("queue full")
	errWaited    = errors.New("no search slot came free")
	errTimeout   = errors.New("timeout")
	errGone      = errors.New("the client went away")
)

// outcome is a search with its charts.
type outcome struct {
	plan    plan.Plan
	charts  []chart.Chart
	skipped []string
}

// acquire takes a search slot: at once when one is free, else after
// waiting in the queue for at most QueueWait (errWaited), unless the
// queue is full (errQueueFull) or ctx ends first (errGone: the client
// went away). A slot freed goes to the longest waiter: blocked senders on
// a channel are woken in order.
func (h *Handler) acquire(ctx context.Context) error {
	select {
	case h.slots <- struct{}{}:
		return nil
	default:
	}
	select {
	case h.queue <- struct{}{}:
	default:
		return errQueueFull
	}
	defer func() { <-h.queue }()
	wait := time.NewTimer(h.cfg.QueueWait)
	defer wait.Stop()
	select {
	case h.slots <- struct{}{}:
		return nil
	case <-wait.C:
		return errWaited
	case <-ctx.Done():
		return errGone
	}
}

// run searches the options, with the charts when withCharts, under the
// handler's bounds: options that plan refuses (all of them, with bad, the
// mistakes the front end found: parseAll) or the server does not search
// are refused before the queue; then a search slot (acquire) and
// the request's deadline (errTimeout). A search the deadline abandons
// keeps its slot until it ends, so abandoned work still counts against
// MaxSearches.
func (h *Handler) run(ctx context.Context, o plan.Options, bad fieldErrors, withCharts bool) (outcome, error) {
	req, err := parseAll(o, bad)
	if err != nil {
		return outcome{}, err
	}
	if err := checkSize(req, h.cfg); err != nil {
		return outcome{}, err
	}
	if err := h.acquire(ctx); err != nil {
		return outcome{}, err
	}
	client := ctx
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	type searched struct {
		out outcome
		err error
	}
	done := make(chan searched, 1)
	go func() {
		var res searched
		defer func() {
			if v := recover(); v != nil {
				h.cfg.Log.Printf("web: search %+v panicked: %v", o, v)
				res.err = fmt.Errorf("internal error while searching")
			}
			<-h.slots // free the slot before answering, so the next request finds it
			done <- res
		}()
		res.out.plan, res.err = plan.Search(req)
		if res.err == nil && withCharts {
			res.out.charts, res.out.skipped, res.err = scalingCharts(res.out.plan)
		}
	}()
	select {
	case res := <-done:
		return res.out, res.err
	case <-ctx.Done():
		if client.Err() != nil {
			return outcome{}, errGone
		}
		return outcome{}, errTimeout
	}
}

// status is the HTTP status of an error of a request, and the error as
// fieldErrors (one or more). It is the one place that tells the user's
// mistakes from the server's failures, by the errors' types and the
// sentinels they wrap, as the packages that refuse a value define them: a
// mistake in the request (fieldErrors or a *fieldError of this package's
// own checks, a *plan.OptionError, an error wrapping plan.ErrRequest,
// model.ErrInvalid or export.ErrInvalid) is 400, naming its option when
// it has one; a job that cannot run, or not as its target runs it
// (*plan.NoPlanError, errUnfit, errCannotServe, export.ErrUnsupported),
// is 422; a busy server is 503. Anything else is the server's: 500,
// logged.
func (h *Handler) status(err error) (int, fieldErrors) {
	var fes fieldErrors
	var fe *fieldError
	var oe *plan.OptionError
	var none *plan.NoPlanError
	var unfit errUnfit
	var cannot errCannotServe
	one := func(e *fieldError) fieldErrors { return fieldErrors{e} }
	switch {
	case errors.As(err, &fes) && len(fes) > 0:
		return http.StatusBadRequest, fes
	case errors.As(err, &fe):
		return http.StatusBadRequest, one(fe)
	case errors.As(err, &oe):
		return http.StatusBadRequest, one(&fieldError{oe.Option, oe.Phrase})
	case errors.As(err, &none):
		return http.StatusUnprocessableEntity, one(&fieldError{"", none.Phrase})
	case errors.As(err, &unfit):
		return http.StatusUnprocessableEntity, one(plain("%s", unfit.Error()))
	case errors.As(err, &cannot):
		return http.StatusUnprocessableEntity, one(plain("%s", cannot.Error()))
	case errors.Is(err, export.ErrUnsupported):
		msg := err.Error()
		if xe := (*export.Error)(nil); errors.As(err, &xe) {
			msg = xe.Phrase(label)
		}
		return http.StatusUnprocessableEntity, one(plain("%s", oneLine(msg)))
	case errors.Is(err, errQueueFull):
		return http.StatusServiceUnavailable, one(plain("busy: %d searches are running and %d more are waiting, the most this server holds; try again in a moment", h.cfg.MaxSearches, h.cfg.MaxQueue))
	case errors.Is(err, errWaited):
		return http.StatusServiceUnavailable, one(plain("busy: no search came free within %v (%d run at once); try again in a moment", h.cfg.QueueWait, h.cfg.MaxSearches))
	case errors.Is(err, errTimeout):
		return http.StatusServiceUnavailable, one(plain("the search took longer than %v and was abandoned; ask for fewer chips or a fixed batch, or use shardlab plan on the command line", h.cfg.Timeout))
	case errors.Is(err, errGone):
		return http.StatusServiceUnavailable, one(plain("%s", errGone)) // no one reads it
	case errors.Is(err, plan.ErrRequest), errors.Is(err, model.ErrInvalid), errors.Is(err, export.ErrInvalid):
		return http.StatusBadRequest, one(plain("%s", oneLine(err.Error())))
	}
	h.cfg.Log.Printf("web: %v", err)
	return http.StatusInternalServerError, one(plain("internal error: %s", oneLine(err.Error())))
}

// setRetry tells a client answered 503 when to try again.
func (h *Handler) setRetry(w http.ResponseWriter, code int) {
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", h.retryAfter)
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// apiRequest is the body of POST /api/plan: plan's options by their JSON
// keys, over plan.DefaultOptions, and a pasted spec (named by "model", or
// "custom" when neither names it).
type apiRequest struct {
	plan.Options
	ModelSpec *string `json:"model_spec"`
}

// apiError is the body of an API error: every mistake found, joined in
// Error, and each with its option in Errors; Option is the first's.
type apiError struct {
	Error  string          `json:"error"`
	Option string          `json:"option,omitempty"`
	Errors []apiFieldError `json:"errors"`
}

// apiFieldError is one mistake of a request and the option (JSON key) it
// concerns, "" for none.
type apiFieldError struct {
	Option string `json:"option"`
	Error  string `json:"error"`
}

// writeAPIError writes errors with options spelt as JSON keys.
func (h *Handler) writeAPIError(w http.ResponseWriter, code int, fes fieldErrors) {
	w.Header().Set("Content-Type", "application/json")
	h.setRetry(w, code)
	w.WriteHeader(code)
	key := func(o plan.Option) string { return string(o) }
	e := apiError{Error: fes.Phrase(key), Errors: []apiFieldError{}}
	for _, fe := range fes {
		e.Errors = append(e.Errors, apiFieldError{Option: string(fe.Option), Error: fe.Phrase(key)})
	}
	if len(fes) > 0 {
		e.Option = string(fes[0].Option)
	}
	writeJSON(w, e)
}

// writeJSON writes v, a JSON object, with its schema version first, as
// every JSON document shardlab prints.
func writeJSON(w io.Writer, v any) error { return schema.Write(w, v) }

// serveAPIPlan plans a JSON request and writes what shardlab plan --json
// prints for it.
func (h *Handler) serveAPIPlan(w http.ResponseWriter, r *http.Request) {
	if fe := checkMediaType(r.Header); fe != nil {
		h.writeAPIError(w, http.StatusUnsupportedMediaType, fieldErrors{fe})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		h.writeAPIError(w, http.StatusRequestEntityTooLarge, fieldErrors{plain("body larger than %d bytes", h.cfg.MaxBodyBytes)})
		return
	case err != nil:
		h.writeAPIError(w, http.StatusBadRequest, fieldErrors{plain("reading the body: %v", err)})
		return
	}
	req := apiRequest{Options: plan.DefaultOptions()}
	req.Model = "" // set below: the catalog default, or the name of a pasted spec
	bad, malformed := decodeAPI(body, &req)
	if malformed != nil {
		h.writeAPIError(w, http.StatusBadRequest, fieldErrors{malformed})
		return
	}
	o := req.Options
	switch {
	case o.Model == "" && req.ModelSpec != nil:
		o.Model = "custom"
	case o.Model == "":
		o.Model = plan.DefaultModel
	}
	if req.ModelSpec != nil {
		if fe := checkSpec(*req.ModelSpec, h.cfg); fe != nil {
			bad = append(bad, fe)
			o.Model = plan.DefaultModel
		} else {
			o.ModelSpec = []byte(*req.ModelSpec)
		}
	}
	out, err := h.run(r.Context(), o, bad, false)
	if err != nil {
		code, fes := h.status(err)
		h.writeAPIError(w, code, fes)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	out.plan.WriteJSON(w, plan.Option.Flag)
}

// checkMediaType accepts one Content-Type, application/json, whose type,
// subtype and parameter names match in any case (RFC 9110 section 8.3.1)
// and whose only parameter, if any, is charset=utf-8 in any case: JSON
// exchanged between systems is UTF-8 (RFC 8259 section 8.1), so a body
// in another charset is refused rather than read as UTF-8.
func checkMediaType(hd http.Header) *fieldError {
	cts := hd.Values("Content-Type")
	if len(cts) != 1 {
		return plain("%d Content-Type headers, want one: application/json", len(cts))
	}
	ct := cts[0]
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return plain("content type %q, want application/json", ct)
	}
	for k, v := range params {
		if k != "charset" {
			return plain("content type %q: parameter %q, want none but charset=utf-8", ct, k)
		}
		if !strings.EqualFold(v, "utf-8") {
			return plain("content type %q: charset %q, want utf-8 (JSON is UTF-8, RFC 8259)", ct, v)
		}
	}
	return nil
}

// apiKeys are the JSON keys of apiRequest, which a body must spell
// exactly: encoding/json alone matches keys in any case, so "Model" would
// set model past DisallowUnknownFields.
var apiKeys = jsonKeys(reflect.TypeFor[apiRequest]())

// jsonKeys are the keys encoding/json decodes into struct type t,
// with those of its embedded structs.
func jsonKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported() && !f.Anonymous:
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			maps.Copy(keys, jsonKeys(f.Type))
		case name == "":
			keys[f.Name] = true
		default:
			keys[name] = true
		}
	}
	return keys
}

// decodeAPI reads body into req: one UTF-8 JSON object, nothing after it,
// whose keys are apiKeys spelt exactly, each at most once. A body that is
// not such an object is malformed (one error); a value of the wrong type
// is an error about its key, among bad (every such key), and leaves its
// field as it was, so that the others can be checked.
func decodeAPI(body []byte, req *apiRequest) (bad fieldErrors, malformed *fieldError) {
	fail := func(format string, a ...any) (fieldErrors, *fieldError) {
		return nil, plain("malformed request: "+format, a...)
	}
	if !utf8.Valid(body) {
		return fail("the body is not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	switch tok, err := dec.Token(); {
	case err == io.EOF:
		return fail("empty body, want a JSON object")
	case err != nil:
		return nil, jsonError(err)
	case tok != json.Delim('{'):
		return fail("%s, want a JSON object", jsonKind(tok))
	}
	seen := map[string]bool{}
	var keys []string
	values := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonError(err)
		}
		key := tok.(string) // an object's keys are strings, or Token fails
		if !apiKeys[key] {
			for k := range apiKeys {
				if strings.EqualFold(k, key) {
					return nil, &fieldError{plan.Option(k), func(func(plan.Option) string) string {
						return fmt.Sprintf("malformed request: unknown field %q; keys are case-sensitive, want %q", key, k)
					}}
				}
			}
			return fail("unknown field %q", key)
		}
		if seen[key] {
			return nil, &fieldError{plan.Option(key), func(func(plan.Option) string) string {
				return fmt.Sprintf("malformed request: field %q given twice, want it once", key)
			}}
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, jsonError(err)
		}
		keys, values[key] = append(keys, key), v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail("data after the JSON object, want one object")
	}
	// the keys are checked: decode each value into its field, so that
	// every value of the wrong type is found
	for _, key := range keys {
		one, err := json.Marshal(map[string]json.RawMessage{key: values[key]})
		if err != nil {
			return nil, jsonError(err)
		}
		dec := json.NewDecoder(bytes.NewReader(one))
		dec.DisallowUnknownFields()
		if err := dec.Decode(req); err != nil {
			fe := jsonError(err)
			if fe.Option == "" {
				return nil, fe
			}
			bad = append(bad, fe)
		}
	}
	return bad, nil
}

// jsonKind names the JSON value that tok starts.
func jsonKind(tok json.Token) string {
	switch tok.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case string:
		return "a string"
	case json.Delim:
		return "an array"
	}
	return fmt.Sprintf("%v", tok)
}

// jsonError is a decoding error in a line, without Go's type names, naming
// the field it concerns.
func jsonError(err error) *fieldError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := map[reflect.Kind]string{reflect.Int: "a whole number", reflect.Int64: "a whole number (nanoseconds)", reflect.Float64: "a number",
			reflect.String: "a string", reflect.Bool: "true or false"}[te.Type.Kind()]
		if want == "" {
			want = "a " + te.Type.Kind().String()
		}
		field := strings.TrimPrefix(te.Field, "Options.")
		return &fieldError{plan.Option(field), func(func(plan.Option) string) string {
			return fmt.Sprintf("malformed request: field %q: want %s", field, want)
		}}
	}
	if err == io.ErrUnexpectedEOF {
		return plain("malformed request: the body ends inside the JSON object")
	}
	return plain("malformed request: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// catalog is the body of GET /api/catalog.
type catalog struct {
	Models []model.Summary `json:"models"`
	TPUs   []catalogTPU    `json:"tpus"`
}

type catalogTPU struct {
	Generation       string   `json:"generation"`
	Name             string   `json:"name"`
	AcceleratorTypes []string `json:"accelerator_types"`
}

func serveCatalog(w http.ResponseWriter, r *http.Request) {
	var c catalog
	for _, s := range model.Catalog() {
		c.Models = append(c.Models, s.Summarize())
	}
	for _, chip := range hw.Chips() {
		c.TPUs = append(c.TPUs, catalogTPU{Generation: string(chip.Generation), Name: chip.Name, AcceleratorTypes: chip.AcceleratorTypes()})
	}
	w.Header().Set("Content-Type", "application/json")
	writeJSON(w, c)
}

// serveMaxText plans the query and downloads the chosen layout as a
// MaxText config.
func (h *Handler) serveMaxText(w http.ResponseWriter, r *http.Request) {
	// MaxText reads a config file only by a name ending in .yml.
	fileName := func(p plan.Plan) string {
		if cfg, err := export.MaxText(p); err == nil {
			return cfg.File()
		}
		return "shardlab.yml"
	}
	h.download(w, r, fileName, "application/yaml", func(w io.Writer, p plan.Plan) error {
		if mem := p.Best.Estimate.Memory; !mem.Fits() {
			return errUnfit{mem.Total() - mem.Usable}
		}
		cfg, err := export.MaxText(p)
		if err != nil {
			return err
		}
		return cfg.WriteYAML(w)
	})
}

// The query parameters of the xpk download: the cluster, and the image
// that has MaxText (one of the two).
const (
	optionCluster         plan.Option = "cluster"
	optionDockerImage     plan.Option = "docker_image"
	optionBaseDockerImage plan.Option = "base_docker_image"
)

// defaultBaseDockerImage is the xpk download's image when the query names
// none: the local image MaxText's build_maxtext_docker_image makes, to
// which xpk adds the working directory (MaxText's documented xpk flow, run
// from a MaxText checkout). xpk's own default, python:3.10, has no MaxText.
const defaultBaseDockerImage = "maxtext_base_image"

// serveXPK plans the query and downloads the xpk command that launches
// it, for the cluster the query's cluster names (my-cluster when none) and
// the image it names (docker_image, or base_docker_image; when neither,
// defaultBaseDockerImage).
func (h *Handler) serveXPK(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cluster := q.Get(string(optionCluster))
	if cluster == "" {
		cluster = "my-cluster"
	}
	xo := export.XPKOptions{Cluster: cluster, Workload: "shardlab",
		DockerImage: q.Get(string(optionDockerImage)), BaseDockerImage: q.Get(string(optionBaseDockerImage))}
	if xo.DockerImage == "" && xo.BaseDockerImage == "" {
		xo.BaseDockerImage = defaultBaseDockerImage
	}
	var ee *export.Error
	if err := export.ValidName(string(optionCluster), cluster); errors.As(err, &ee) {
		// checked before the search, which a bad name would waste
		fe := textOf(optionCluster, "%s, %s", ee.Value, ee.Want)
		http.Error(w, fe.Phrase(label), http.StatusBadRequest)
		return
	}
	h.download(w, r, fixedName("xpk.sh"), "text/x-shellscript", func(w io.Writer, p plan.Plan) error {
		if mem := p.Best.Estimate.Memory; !mem.Fits() {
			return errUnfit{mem.Total() - mem.Usable}
		}
		return export.XPK(w, p, xo)
	})
}

// servePlanJSON plans the query and downloads what plan --json prints.
func (h *Handler) servePlanJSON(w http.ResponseWriter, r *http.Request) {
	h.download(w, r, fixedName("plan.json"), "application/json", func(w io.Writer, p plan.Plan) error {
		return p.WriteJSON(w, plan.Option.Flag)
	})
}

// errUnfit refuses to export a layout that does not fit in HBM.
type errUnfit struct{ over unit.Bytes }

func (e errUnfit) Error() string {
	return fmt.Sprintf("the layout does not fit in HBM by %v; nothing exported", e.over)
}

// fixedName names a download the same whatever the plan.
func fixedName(name string) func(plan.Plan) string { return func(plan.Plan) string { return name } }

func (h *Handler) download(w http.ResponseWriter, r *http.Request, name func(plan.Plan) string, ctype string, write func(io.Writer, plan.Plan) error) {
	o, _, bad := optionsFrom(r.URL.Query(), h.cfg)
	out, err := h.run(r.Context(), o, bad, false)
	var b strings.Builder
	if err == nil {
		err = write(&b, out.plan)
	}
	if err != nil {
		code, fes := h.status(err)
		h.setRetry(w, code)
		http.Error(w, fes.Phrase(label), code)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Disposition", `attachment; filename="`+name(out.plan)+`"`)
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	io.WriteString(w, b.String())
}
