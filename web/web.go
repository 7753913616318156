// Package web serves shardlab in a browser: an http.Handler with a form
// (model, TPU type, slices, sequence length, batch and batch limit, remat,
// precision, schedule) whose state lives in the page's URL, the plan with
// its reasons and warnings, the charts of package chart drawn on the
// server as SVG, the ranked layouts, and downloads (MaxText YAML, plan
// JSON); and a JSON API (POST /api/plan prints what shardlab plan --json
// prints, GET /api/catalog the models and TPU types). Requests parse
// through plan.ParseRequest, as the CLI's do.
//
// The handler is safe to expose to a browser on a workstation: bodies,
// pasted specs and the searched chips are bounded, each request has a
// deadline, at most a few searches run at once (503 when full), nothing in
// a request reaches the file system, and errors are one line of text
// (next to the form field they concern), never a stack trace. The page and
// its script and style are embedded: the page needs no network.
package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"shardlab/chart"
	"shardlab/export"
	"shardlab/hw"
	"shardlab/model"
	"shardlab/plan"
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
	// MaxSearches is how many requests may search at once; more get 503.
	MaxSearches int
	// Log receives one line per failed search; nil discards.
	Log *log.Logger
}

// DefaultConfig is what a zero Config means.
func DefaultConfig() Config {
	return Config{MaxBodyBytes: 64 << 10, MaxSpecBytes: 16 << 10, MaxChips: 1 << 16, Timeout: 30 * time.Second, MaxSearches: 2}
}

// Handler serves the page, its downloads and the JSON API.
type Handler struct {
	cfg  Config
	sem  chan struct{}
	mux  *http.ServeMux
	page *pageTemplates
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
	if c.Log == nil {
		c.Log = log.New(io.Discard, "", 0)
	}
	h := &Handler{cfg: c, sem: make(chan struct{}, c.MaxSearches), mux: http.NewServeMux(), page: templates()}
	h.mux.HandleFunc("GET /{$}", h.servePage)
	h.mux.HandleFunc("GET /static/{name}", serveStatic)
	h.mux.HandleFunc("GET /download/maxtext.yaml", h.serveMaxText)
	h.mux.HandleFunc("GET /download/plan.json", h.servePlanJSON)
	h.mux.HandleFunc("GET /download/xpk.sh", h.serveXPK)
	h.mux.HandleFunc("GET /serving", h.serveServing)
	h.mux.HandleFunc("POST /api/plan", h.serveAPIPlan)
	h.mux.HandleFunc("GET /api/catalog", serveCatalog)
	return h
}

// ServeHTTP serves GET / (the page, and with a query its plan), GET
// /static/app.js and /static/style.css, GET /download/maxtext.yaml and
// /download/plan.json (for the page's query), POST /api/plan and GET
// /api/catalog.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'")
	h.mux.ServeHTTP(w, r)
}

// Errors of the work a request asks for, by HTTP status.
var (
	errBusy    = errors.New("busy")
	errTimeout = errors.New("timeout")
)

// outcome is a search with its charts.
type outcome struct {
	plan    plan.Plan
	charts  []chart.Chart
	skipped []string
}

// run searches the options, with the charts when withCharts, under the
// handler's bounds: a free search slot (errBusy when there is none) and
// the request's deadline (errTimeout). A search the deadline abandons
// keeps its slot until it ends, so abandoned work still counts against
// MaxSearches.
func (h *Handler) run(ctx context.Context, o plan.Options, withCharts bool) (outcome, error) {
	req, err := plan.ParseRequest(o)
	if err != nil {
		return outcome{}, err
	}
	if err := checkSize(req, h.cfg); err != nil {
		return outcome{}, err
	}
	select {
	case h.sem <- struct{}{}:
	default:
		return outcome{}, errBusy
	}
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
			<-h.sem // free the slot before answering, so the next request finds it
			done <- res
		}()
		res.out.plan, res.err = plan.Search(req)
		if res.err == nil && withCharts {
			res.out.charts, res.out.skipped, res.err = chart.All(res.out.plan)
		}
	}()
	select {
	case res := <-done:
		return res.out, res.err
	case <-ctx.Done():
		return outcome{}, errTimeout
	}
}

// status is the HTTP status of an error of run, and the error as a
// fieldError.
func (h *Handler) status(err error) (int, *fieldError) {
	var fe *fieldError
	var oe *plan.OptionError
	var none *plan.NoPlanError
	switch {
	case errors.As(err, &fe):
		return http.StatusBadRequest, fe
	case errors.As(err, &oe):
		return http.StatusBadRequest, &fieldError{oe.Option, oe.Phrase}
	case errors.As(err, &none):
		return http.StatusUnprocessableEntity, &fieldError{"", none.Phrase}
	case errors.Is(err, errBusy):
		return http.StatusServiceUnavailable, plain("busy: %d searches are running, the most this server runs at once; try again in a moment", h.cfg.MaxSearches)
	case errors.Is(err, errTimeout):
		return http.StatusServiceUnavailable, plain("the search took longer than %v and was abandoned; ask for fewer chips or a fixed batch, or use shardlab plan on the command line", h.cfg.Timeout)
	case errors.Is(err, plan.ErrRequest), errors.Is(err, model.ErrInvalid):
		return http.StatusBadRequest, plain("%s", oneLine(err.Error()))
	}
	h.cfg.Log.Printf("web: %v", err)
	return http.StatusInternalServerError, plain("internal error: %s", oneLine(err.Error()))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// apiRequest is the body of POST /api/plan: plan's options by their JSON
// keys, over plan.DefaultOptions, and a pasted spec (named by "model", or
// "custom" when neither names it).
type apiRequest struct {
	plan.Options
	ModelSpec *string `json:"model_spec"`
}

// apiError is the body of an API error.
type apiError struct {
	Error  string `json:"error"`
	Option string `json:"option,omitempty"`
}

// writeAPIError writes an error with options spelt as JSON keys.
func writeAPIError(w http.ResponseWriter, code int, fe *fieldError) {
	w.Header().Set("Content-Type", "application/json")
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(code)
	writeJSON(w, apiError{Error: fe.Phrase(func(o plan.Option) string { return string(o) }), Option: string(fe.Option)})
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// serveAPIPlan plans a JSON request and writes what shardlab plan --json
// prints for it.
func (h *Handler) serveAPIPlan(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		writeAPIError(w, http.StatusUnsupportedMediaType, plain("content type %q, want application/json", ct))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeAPIError(w, http.StatusRequestEntityTooLarge, plain("body larger than %d bytes", h.cfg.MaxBodyBytes))
		return
	case err != nil:
		writeAPIError(w, http.StatusBadRequest, plain("reading the body: %v", err))
		return
	}
	req := apiRequest{Options: plan.DefaultOptions()}
	req.Model = "" // set below: the catalog default, or the name of a pasted spec
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeAPIError(w, http.StatusBadRequest, plain("malformed request: %s", jsonError(err)))
		return
	}
	if dec.More() {
		writeAPIError(w, http.StatusBadRequest, plain("malformed request: more than one JSON value"))
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
		if err := checkSpec(*req.ModelSpec, h.cfg); err != nil {
			writeAPIError(w, http.StatusBadRequest, err.(*fieldError))
			return
		}
		o.ModelSpec = []byte(*req.ModelSpec)
	}
	out, err := h.run(r.Context(), o, false)
	if err != nil {
		code, fe := h.status(err)
		writeAPIError(w, code, fe)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	out.plan.WriteJSON(w, plan.Option.Flag)
}

// jsonError is a decoding error in a line, without Go's type names.
func jsonError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := map[reflect.Kind]string{reflect.Int: "a whole number", reflect.Int64: "a whole number (nanoseconds)", reflect.Float64: "a number",
			reflect.String: "a string", reflect.Bool: "true or false"}[te.Type.Kind()]
		if want == "" {
			want = "a " + te.Type.Kind().String()
		}
		return fmt.Sprintf("field %q: want %s", strings.TrimPrefix(te.Field, "Options."), want)
	}
	return err.Error()
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
	h.download(w, r, "maxtext.yaml", "application/yaml", func(w io.Writer, p plan.Plan) error {
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

// serveXPK plans the query and downloads the xpk command that launches
// it, for the cluster the query's cluster names (my-cluster when none).
func (h *Handler) serveXPK(w http.ResponseWriter, r *http.Request) {
	cluster := r.URL.Query().Get("cluster")
	if cluster == "" {
		cluster = "my-cluster"
	}
	h.download(w, r, "xpk.sh", "text/x-shellscript", func(w io.Writer, p plan.Plan) error {
		if mem := p.Best.Estimate.Memory; !mem.Fits() {
			return errUnfit{mem.Total() - mem.Usable}
		}
		return export.XPK(w, p, export.XPKOptions{Cluster: cluster, Workload: "shardlab"})
	})
}

// servePlanJSON plans the query and downloads what plan --json prints.
func (h *Handler) servePlanJSON(w http.ResponseWriter, r *http.Request) {
	h.download(w, r, "plan.json", "application/json", func(w io.Writer, p plan.Plan) error {
		return p.WriteJSON(w, plan.Option.Flag)
	})
}

// errUnfit refuses to export a layout that does not fit in HBM.
type errUnfit struct{ over unit.Bytes }

func (e errUnfit) Error() string {
	return fmt.Sprintf("the layout does not fit in HBM by %v; nothing exported", e.over)
}

func (h *Handler) download(w http.ResponseWriter, r *http.Request, name, ctype string, write func(io.Writer, plan.Plan) error) {
	o, _, err := optionsFrom(r.URL.Query(), h.cfg)
	var out outcome
	if err == nil {
		out, err = h.run(r.Context(), o, false)
	}
	var b strings.Builder
	if err == nil {
		err = write(&b, out.plan)
	}
	var unfit errUnfit
	switch {
	case errors.As(err, &unfit):
		http.Error(w, unfit.Error(), http.StatusUnprocessableEntity)
		return
	case err != nil:
		code, fe := h.status(err)
		http.Error(w, fe.Phrase(label), code)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	io.WriteString(w, b.String())
}
