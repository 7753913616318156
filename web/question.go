package web

import (
	"bytes"
	"context"
	"html/template"
	"io"
	"net/http"

	"shardlab/plan"
)

// question is a page whose form, over options O, asks one question, and
// that shows the answer, a V, with a download of it as JSON: the serving
// and budget pages. (The plan page, with its pins, comparison and charts,
// is servePage.)
type question[O, V any] struct {
	optionsForm[O]
	// answer answers the options under the handler's bounds; bad are the
	// options the form refused already.
	answer func(h *Handler, ctx context.Context, o O, bad fieldErrors) (*V, error)
	// name names the page once: GET /name shows it from the template
	// name.html, GET /download/name.json downloads the answer as JSON.
	name string
	json func(w io.Writer, v *V) error
	// status is the download's status for answer v, nil for 200 always:
	// 422 where the answer is written but says the job cannot run, as the
	// command line writes it and exits 1 (planStatus for plans).
	status func(v *V) int
}

// register serves the question's page and its JSON download on h.
func (qn question[O, V]) register(h *Handler) {
	h.mux.HandleFunc("GET /"+qn.name, qn.serve(h))
	h.jsonRoute(http.MethodGet, "/download/"+qn.file(), qn.serveJSON(h))
}

// file is the JSON download's name.
func (qn question[O, V]) file() string { return qn.name + ".json" }

// questionPage is what a question's page template takes.
type questionPage[V any] struct {
	Groups []groupView
	TPUs   []string // the TPU field's suggestions, on a form that has one
	Error  string
	Query  template.URL
	R      *V
}

// serve shows the form and, when the URL asks a question, its answer;
// every field at fault is flagged at once.
func (qn question[O, V]) serve(h *Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		o, vals, bad := qn.options(r.URL.RawQuery, h.cfg, nil)
		var d questionPage[V]
		if qn.has(plan.OptionTPU) {
			d.TPUs = tpuNames()
		}
		code := http.StatusOK
		var err error
		if len(bad) > 0 {
			err = bad
		}
		if len(q) > 0 {
			if d.R, err = qn.answer(h, r.Context(), o, bad); err == nil {
				d.Query = queryURL(q)
			}
		}
		var fes fieldErrors
		if err != nil {
			code, fes = h.status(err)
			h.setRetry(w, code)
		}
		d.Groups, d.Error = qn.view(vals, fes, qn.keyLabel)
		h.render(w, code, qn.name+".html", "page", d)
	}
}

// serveJSON downloads the query's answer as JSON; an error is the API's
// JSON error object (writeErrorJSON), options spelt as their keys.
func (qn question[O, V]) serveJSON(h *Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		o, _, bad := qn.options(r.URL.RawQuery, h.cfg, nil)
		v, err := qn.answer(h, r.Context(), o, bad)
		if err != nil {
			h.writeErrorJSON(w, err)
			return
		}
		var b bytes.Buffer
		if err := qn.json(&b, v); err != nil {
			h.cfg.Log.Printf("web: %s: %v", qn.file(), err)
			http.Error(w, "internal error writing the JSON", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Disposition", `attachment; filename="`+qn.file()+`"`)
		if qn.status != nil {
			w.WriteHeader(qn.status(v))
		}
		w.Write(b.Bytes())
	}
}
