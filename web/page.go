package web

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"

	"shardlab/capacity"
	"shardlab/chart"
	"shardlab/export"
	"shardlab/plan"
	"shardlab/unit"
)

//go:embed static
var static embed.FS

// pageTemplates is the page and the report, which share the results.
type pageTemplates struct{ t *template.Template }

func templates() *pageTemplates {
	funcs := template.FuncMap{
		"pct":      func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
		"bytes":    func(b int64) string { return unit.Bytes(b).String() },
		"secs":     func(s float64) string { return unit.Seconds(s).String() },
		"num":      func(f float64) string { return fmt.Sprintf("%.0f", f) },
		"fixed":    func(f float64) string { return fmt.Sprintf("%g", f) },
		"inc":      func(i int) int { return i + 1 },
		"mul100":   func(f float64) float64 { return 100 * f },
		"signed":   func(f float64) string { return fmt.Sprintf("%+.1f%%", 100*f) },
		"rejected": plan.RejectedWords,
		"count":    unit.Count,
		"join":     func(s []string) string { return strings.Join(s, "; ") },
		"int64":    func(b unit.Bytes) int64 { return int64(b) },
		"atLimit":  func() string { return export.AtLimitNote },
		// what shardlab capacity simulates, which the goodput line points to
		"capacitySimulates": capacity.Simulated,
	}
	return &pageTemplates{template.Must(template.New("").Funcs(funcs).ParseFS(static, "static/*.html"))}
}

// fieldView is a form field with its value and error.
type fieldView struct {
	field
	Key   string // the query parameter
	Value string
	Error string
}

// DefaultText is the field's default as the field shows it: a choice's
// label, yes or no, or the value ("empty" for none).
func (f fieldView) DefaultText() string {
	for _, c := range f.Choices {
		if c.Value == f.Default {
			return c.Label
		}
	}
	switch {
	case f.Kind == "bool" && f.Default == "true":
		return "yes"
	case f.Kind == "bool":
		return "no"
	case f.Default == "":
		return "empty"
	}
	return f.Default
}

// groupView is a group of the form's fields.
type groupView struct {
	Name   string
	Fields []fieldView
	// Open is whether a group shown folded starts open: a field differs
	// from its default or is at fault.
	Open bool
}

// chartView is a chart drawn as inline SVG, with its values as a table
// when the page draws it.
type chartView struct {
	Name, Title string
	SVG         template.HTML
	Table       template.HTML
}

// resultView is a plan as the page shows it.
type resultView struct {
	J      plan.JSON
	Charts []chartView
	// Scaling are package chart's charts, which search the plan again;
	// with ScalingLater the page leaves them to GET /charts, which the
	// script asks while the user reads the plan.
	Scaling      []chartView
	ScalingLater bool
	Skipped      []string
	// Tiers are the chosen layout and the best of each other tier.
	Tiers []plan.RankJSON
	// Verify is how to verify the plan before renting TPUs; in plan
	// --html's report, only with --verify (Report.Verify).
	Verify *verifyView
	// MaxText, on the page, is the layout its MaxText and xpk downloads
	// hold where it is not the one shown (nil: the one shown).
	MaxText *heldView
	// Goodput is the chosen layout's expected goodput.
	Goodput goodputView
}

// pageData is what the page and the report templates take.
type pageData struct {
	Report  bool // plan --html: no form, style and script inline
	CSS     template.CSS
	JS      template.JS
	Groups  []groupView
	TPUs    []string
	Error   string // an error that concerns no field
	Results []resultView
	Query   template.URL // the form's query, for the link to the page
	// PlanQuery is the form's query without the pins, for the downloads
	// and the scaling charts, which read no pins.
	PlanQuery template.URL
	// Pins are the pinned plans' queries; Compare shows them.
	Pins    []string
	Compare *compareView
}

// result is the view of an outcome, with options spelt by name.
func result(out outcome, name func(plan.Option) string) (resultView, error) {
	v := resultView{J: out.plan.JSON(name), Skipped: out.skipped, Goodput: goodputOf(out.plan)}
	if len(v.J.Top) > 0 {
		v.Tiers = append(v.Tiers, v.J.Top[0])
	}
	v.Tiers = append(v.Tiers, v.J.Alternatives...)
	for _, c := range planBars(out.plan) {
		v.Charts = append(v.Charts, chartView{Name: c.Name, Title: c.Title, SVG: c.SVG(), Table: c.Table()})
	}
	for _, c := range out.charts {
		if drawnHere[c.Name] {
			continue // the page's own bars above
		}
		svg, err := inlineSVG(c)
		if err != nil {
			return v, err
		}
		v.Scaling = append(v.Scaling, chartView{Name: c.Name, Title: c.Title, SVG: svg})
	}
	return v, nil
}

// servePage shows the form and, when the URL asks a question, its plan;
// every field at fault is flagged at once.
func (h *Handler) servePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	o, vals, bad := planForm.options(r.URL.RawQuery, h.cfg, pageKeys)
	d := pageData{TPUs: tpuNames()}
	code := http.StatusOK
	var err error = bad
	if len(bad) == 0 {
		err = nil
	}
	if len(q) > 0 {
		// the script, planning as the user types, asks for the scaling
		// charts apart (GET /charts): the plan answers sooner
		later := r.Header.Get(headerScaling) == "later"
		var out outcome
		if out, err = h.run(r.Context(), o, bad, !later); err == nil {
			var v resultView
			if v, err = result(out, label); err == nil {
				v.ScalingLater = later
				vv := verifyOf(out.plan, o)
				var held *export.Held
				if v.MaxText, held = h.maxTextHeld(r.Context(), o, out.plan); held != nil {
					vv = heldVerifyOf(held, o) // the steps of what the YAML holds
				}
				v.Verify = &vv
				d.Results = []resultView{v}
				d.Query = queryURL(q)
				pq := maps.Clone(q)
				pq.Del(optionPin)
				d.PlanQuery = queryURL(pq)
			}
		}
	}
	var fes fieldErrors
	if err != nil {
		code, fes = h.status(err)
		h.setRetry(w, code)
	}
	d.Pins = q[optionPin]
	if c, err := h.compare(r.Context(), d.Pins); err != nil {
		_, pfes := h.status(err)
		fes = append(fes, pfes...)
		if code == http.StatusOK {
			code = http.StatusBadRequest
		}
	} else {
		d.Compare = c
	}
	d.Groups, d.Error = planForm.view(vals, fes, label)
	h.render(w, code, "page.html", "page", d)
}

// queryURL is query q as the query part of a link, which html/template
// writes as it is: a string there is escaped whole ("a=1&b=2" becomes
// a%3d1%26b%3d2, one key with no value), so the links asked for the
// defaults.
func queryURL(q url.Values) template.URL { return template.URL(q.Encode()) }

// pageKeys are the query keys the page reads besides its form's: the
// pinned plans, each its own pin.
var pageKeys = queryKeys{optionPin: true}

// headerScaling is the request header with which the page's script asks
// for a page without its scaling charts ("later").
const headerScaling = "X-Shardlab-Scaling"

// serveScaling writes the scaling charts of the query's plan, the part of
// the page the script asks for after the plan: an HTML fragment.
func (h *Handler) serveScaling(w http.ResponseWriter, r *http.Request) {
	o, _, bad := planForm.options(r.URL.RawQuery, h.cfg, nil)
	out, err := h.run(r.Context(), o, bad, true)
	var v resultView
	if err == nil {
		v, err = result(out, label)
	}
	if err != nil {
		h.fail(w, err, label)
		return
	}
	h.render(w, http.StatusOK, "scaling", "charts", v)
}

// serveStatic serves the page's script and style.
func serveStatic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	types := map[string]string{"app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8"}
	ct, ok := types[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	b, err := static.ReadFile("static/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Write(b)
}

// Report is one plan of an HTML report, with its charts (chart.All) and
// its verify steps as the caller spells them (nil: none).
type Report struct {
	Plan    plan.Plan
	Charts  []chart.Chart
	Skipped []string
	Verify  *export.Steps
}

// WriteReport writes the plans as one self-contained HTML page (shardlab
// plan --html): the results the web page shows, with the charts inline
// and the style and script in the page, so it opens offline, and the
// verify steps of a report that has them. Options are spelt as flags, as
// the CLI prints them.
func WriteReport(w io.Writer, reports ...Report) error {
	css, err := static.ReadFile("static/style.css")
	if err != nil {
		return err
	}
	js, err := static.ReadFile("static/app.js")
	if err != nil {
		return err
	}
	d := pageData{Report: true, CSS: template.CSS(css), JS: template.JS(js)}
	for _, r := range reports {
		v, err := result(outcome{plan: r.Plan, charts: r.Charts, skipped: r.Skipped}, plan.Option.Flag)
		if err != nil {
			return err
		}
		if r.Verify != nil {
			vv := viewOf(*r.Verify, "")
			v.Verify = &vv
		}
		d.Results = append(d.Results, v)
	}
	return templates().t.ExecuteTemplate(w, "page.html", d)
}

// inlineSVG is a chart of package chart as inline SVG (no XML prolog),
// named for assistive technology as the page's own charts are.
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
