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
// of text (next to the form field they concern; a JSON object with the
// schema first for the API and the JSON downloads), never a stack trace. A
// mistake in a request is a 4xx that names the field at fault; only the
// server's own failures are 500s, and only they are logged. The page and
// its script and style are embedded: the page needs no network.
package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"shardlab/budget"
	"shardlab/chart"
	"shardlab/export"
	"shardlab/model"
	"shardlab/plan"
	"shardlab/validate"
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
	// MaxSimRequests bounds the requests a serving page simulates
	// (num_requests): the command line takes up to
	// inference.MaxSimRequests, minutes of work.
	MaxSimRequests int
	// Log receives one line per server error (never for a mistake in a
	// request); nil discards.
	Log *log.Logger
}

// DefaultConfig is what a zero Config means: two searches at once (the
// search is CPU-bound; a workstation has few cores to spare) and 256
// requests waiting up to DefaultQueueWait for them.
func DefaultConfig() Config {
	return Config{MaxBodyBytes: 64 << 10, MaxSpecBytes: 16 << 10, MaxChips: 1 << 16, Timeout: 30 * time.Second,
		MaxSearches: 2, MaxQueue: 256, QueueWait: DefaultQueueWait, MaxSimRequests: 1 << 16}
}

// DefaultQueueWait is how long a request waits for a search by default:
// long enough for a burst of small searches (a few milliseconds each) to
// drain, short enough that a client of a saturated server hears so soon.
const DefaultQueueWait = 5 * time.Second

// positive sets bound *p to d when it is not above zero: a zero (or
// negative) bound of Config means the default.
func positive[T int | int64 | time.Duration](p *T, d T) {
	if *p <= 0 {
		*p = d
	}
}

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
	positive(&c.MaxBodyBytes, d.MaxBodyBytes)
	positive(&c.MaxSpecBytes, d.MaxSpecBytes)
	positive(&c.MaxChips, d.MaxChips)
	positive(&c.Timeout, d.Timeout)
	positive(&c.MaxSearches, d.MaxSearches)
	positive(&c.MaxQueue, d.MaxQueue)
	positive(&c.QueueWait, d.QueueWait)
	positive(&c.MaxSimRequests, d.MaxSimRequests)
	if c.Log == nil {
		c.Log = log.New(io.Discard, "", 0)
	}
	h := &Handler{cfg: c, slots: make(chan struct{}, c.MaxSearches), queue: make(chan struct{}, c.MaxQueue),
		retryAfter: strconv.Itoa(max(1, int(math.Ceil(c.QueueWait.Seconds())))), mux: http.NewServeMux(), page: templates()}
	h.mux.HandleFunc("GET /{$}", h.servePage)
	h.mux.HandleFunc("GET /static/{name}", serveStatic)
	h.mux.HandleFunc("GET /download/maxtext.yaml", h.serveMaxText)
	h.jsonRoute(http.MethodGet, "/download/plan.json", h.servePlanJSON)
	h.mux.HandleFunc("GET /download/xpk.sh", h.serveXPK)
	servingQuestion.register(h)
	budgetQuestion.register(h)
	h.mux.HandleFunc("GET /charts", h.serveScaling)
	h.jsonRoute(http.MethodPost, "/api/plan", h.serveAPIPlan)
	h.jsonRoute(http.MethodGet, "/api/catalog", serveCatalog)
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

// timeoutError is errTimeout for one kind of work: what ran over the
// deadline, how it ended (stopped, or abandoned while it runs on), and
// what to ask instead.
type timeoutError struct{ what, ended, advice string }

func (e timeoutError) Error() string        { return e.what + " " + errTimeout.Error() }
func (e timeoutError) Is(target error) bool { return target == errTimeout }

// planLate is a plan search's timeout: plan.Search takes no stop, so the
// search runs on in its slot.
var planLate = timeoutError{what: "the search", ended: "was abandoned",
	advice: "ask for fewer chips or a fixed batch, or use shardlab plan on the command line"}

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

// work runs fn in a search slot (acquire) under the request's deadline,
// past which it answers late (a timeoutError, errTimeout): fn gets the
// deadline's Done as stop, closed at the deadline or when the client goes
// away, and work that heeds it ends there and frees its slot; work that
// does not keeps its slot until it ends.
func (h *Handler) work(ctx context.Context, late timeoutError, fn func(stop <-chan struct{}) error) error {
	if err := h.acquire(ctx); err != nil {
		return err
	}
	client := ctx
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() {
			if v := recover(); v != nil {
				h.cfg.Log.Printf("web: %s panicked: %v", late.what, v)
				err = fmt.Errorf("internal error while searching")
			}
			<-h.slots
			done <- err
		}()
		err = fn(ctx.Done())
	}()
	var err error
	select {
	case err = <-done:
		if err == nil || ctx.Err() == nil {
			return err // not stopped: its own answer
		}
	case <-ctx.Done():
	}
	if client.Err() != nil {
		return errGone
	}
	return late
}

// run searches the options, with the charts when withCharts, under the
// handler's bounds: options that plan refuses (all of them, with bad, the
// mistakes the front end found: parseAll) or the server does not search
// are refused before the queue; then a search slot and the request's
// deadline (work, which answers errTimeout past it). A search the deadline abandons
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
	var out outcome
	err = h.work(ctx, planLate, func(<-chan struct{}) error {
		var err error
		if out.plan, err = plan.Search(req); err != nil {
			return err
		}
		out.plan.WeighOffload()
		if out.plan.Published, err = validate.Beside(out.plan); err != nil {
			return err
		}
		if !withCharts {
			return nil
		}
		out.charts, out.skipped, err = scalingCharts(out.plan)
		return err
	})
	if err != nil {
		return outcome{}, err
	}
	return out, nil
}

// status is the HTTP status of an error of a request, and the error as
// fieldErrors (one or more). It is the one place that tells the user's
// mistakes from the server's failures, by the errors' types and the
// sentinels they wrap, as the packages that refuse a value define them: a
// mistake in the request (fieldErrors or a *fieldError of this package's
// own checks, an optionError of plan, budget or inference, an error
// wrapping plan.ErrRequest, budget.ErrRequest, model.ErrInvalid or
// export.ErrInvalid) is 400, naming its option when it has one; a job that cannot run, or not as its target runs it
// (*plan.NoPlanError, errUnfit, errCannotServe, export.ErrUnsupported),
// is 422; a busy server is 503. Anything else is the server's: 500,
// logged.
func (h *Handler) status(err error) (int, fieldErrors) {
	var fes fieldErrors
	var fe *fieldError
	named, isNamed := optionError(err)
	var none *plan.NoPlanError
	var unfit errUnfit
	var cannot errCannotServe
	var xe *export.Error
	late := planLate
	one := func(e *fieldError) fieldErrors { return fieldErrors{e} }
	switch {
	case errors.As(err, &fes) && len(fes) > 0:
		return http.StatusBadRequest, fes
	case errors.As(err, &fe):
		return http.StatusBadRequest, one(fe)
	case isNamed:
		return http.StatusBadRequest, one(named)
	case errors.As(err, &none):
		return http.StatusUnprocessableEntity, one(&fieldError{"", none.Phrase})
	case errors.As(err, &unfit):
		return http.StatusUnprocessableEntity, one(plain("%s", unfit.Error()))
	case errors.As(err, &cannot):
		return http.StatusUnprocessableEntity, one(plain("%s", cannot.Error()))
	case errors.Is(err, export.ErrUnsupported):
		msg := err.Error()
		if errors.As(err, &xe) {
			msg = xe.Phrase(label)
		}
		return http.StatusUnprocessableEntity, one(plain("%s", oneLine(msg)))
	case errors.Is(err, errQueueFull):
		return http.StatusServiceUnavailable, one(plain("busy: %d searches are running and %d more are waiting, the most this server holds; try again in a moment", h.cfg.MaxSearches, h.cfg.MaxQueue))
	case errors.Is(err, errWaited):
		return http.StatusServiceUnavailable, one(plain("busy: no search came free within %v (%d run at once); try again in a moment", h.cfg.QueueWait, h.cfg.MaxSearches))
	case errors.Is(err, errTimeout):
		errors.As(err, &late)
		return http.StatusServiceUnavailable, one(plain("%s took longer than %v and %s; %s", late.what, h.cfg.Timeout, late.ended, late.advice))
	case errors.Is(err, errGone):
		return http.StatusServiceUnavailable, one(plain("%s", errGone)) // no one reads it
	case errors.Is(err, export.ErrInvalid) && errors.As(err, &xe):
		// its fields in the front end's words (the xpk download's query keys)
		return http.StatusBadRequest, one(&fieldError{"", func(name func(plan.Option) string) string { return oneLine(xe.Phrase(name)) }})
	case errors.Is(err, plan.ErrRequest), errors.Is(err, budget.ErrRequest), errors.Is(err, model.ErrInvalid), errors.Is(err, export.ErrInvalid):
		return http.StatusBadRequest, one(plain("%s", oneLine(err.Error())))
	}
	h.cfg.Log.Printf("web: %v", err)
	return http.StatusInternalServerError, one(plain("internal error: %s", oneLine(err.Error())))
}

// fail answers a request that failed (a download, the charts fragment) in
// plain text: err's status and text, with options spelt by name.
func (h *Handler) fail(w http.ResponseWriter, err error, name func(plan.Option) string) {
	code, fes := h.status(err)
	h.setRetry(w, code)
	http.Error(w, fes.Phrase(name), code)
}

// setRetry tells a client answered 503 when to try again.
func (h *Handler) setRetry(w http.ResponseWriter, code int) {
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", h.retryAfter)
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// fixesOf are the changes under which err's job would run, each with the
// layout it would get, as their owners phrase them for shardlab's --json
// error document too (plan.NoPlanError.FixTexts,
// inference.NoFitError.FixTexts), options spelt by name; empty for any
// other error.
func fixesOf(err error, name func(plan.Option) string) []string {
	var none *plan.NoPlanError
	var cannot errCannotServe
	switch {
	case errors.As(err, &none):
		return none.FixTexts(name)
	case errors.As(err, &cannot) && cannot.unfit != nil:
		return cannot.unfit.FixTexts(func(f string) string { return name(plan.Option(f)) })
	}
	return []string{}
}
