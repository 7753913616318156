package web

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io"
	"net/http"

	"shardlab/chart"
	"shardlab/plan"
	"shardlab/unit"
)

//go:embed static
var static embed.FS

// pageTemplates is the page and the report, which share the results.
type pageTemplates struct{ t *template.Template }

func templates() *pageTemplates {
	funcs := template.FuncMap{
		"pct":    func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
		"bytes":  func(b int64) string { return unit.Bytes(b).String() },
		"secs":   func(s float64) string { return unit.Seconds(s).String() },
		"num":    func(f float64) string { return fmt.Sprintf("%.0f", f) },
		"fixed":  func(f float64) string { return fmt.Sprintf("%g", f) },
		"inc":    func(i int) int { return i + 1 },
		"mul100": func(f float64) float64 { return 100 * f },
		"signed": func(f float64) string { return fmt.Sprintf("%+.1f%%", 100*f) },
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

// chartView is a chart drawn as inline SVG.
type chartView struct {
	Name, Title string
	SVG         template.HTML
}

// resultView is a plan as the page shows it.
type resultView struct {
	J       plan.JSON
	Charts  []chartView
	Skipped []string
	// Tiers are the chosen layout and the best of each other tier.
	Tiers []plan.RankJSON
	// Goodput is the chosen layout's expected goodput.
	Goodput goodputView
}

// pageData is what the page and the report templates take.
type pageData struct {
	Report  bool // plan --html: no form, style and script inline
	CSS     template.CSS
	JS      template.JS
	Fields  []fieldView
	TPUs    []string
	Error   string // an error that concerns no field
	Results []resultView
	Query   string // the form's query, for downloads
}

// result is the view of an outcome, with options spelt by name.
func result(out outcome, name func(plan.Option) string) (resultView, error) {
	v := resultView{J: out.plan.JSON(name), Skipped: out.skipped, Goodput: goodputOf(out.plan)}
	if len(v.J.Top) > 0 {
		v.Tiers = append(v.Tiers, v.J.Top[0])
	}
	v.Tiers = append(v.Tiers, v.J.Alternatives...)
	for _, c := range out.charts {
		b, err := c.SVG()
		if err != nil {
			return v, err
		}
		if i := bytes.Index(b, []byte("<svg")); i > 0 {
			b = b[i:] // inline: no XML prolog
		}
		v.Charts = append(v.Charts, chartView{Name: c.Name, Title: c.Title, SVG: template.HTML(b)})
	}
	return v, nil
}

// servePage shows the form and, when the URL asks a question, its plan.
func (h *Handler) servePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	o, vals, err := optionsFrom(q, h.cfg)
	d := pageData{TPUs: tpuNames()}
	code := http.StatusOK
	if err == nil && len(q) > 0 {
		var out outcome
		if out, err = h.run(r.Context(), o, true); err == nil {
			var v resultView
			if v, err = result(out, label); err == nil {
				d.Results = []resultView{v}
				d.Query = q.Encode()
			}
		}
	}
	var fe *fieldError
	if err != nil {
		code, fe = h.status(err)
		h.setRetry(w, code)
	}
	for _, f := range fields() {
		fv := fieldView{field: f, Key: string(f.Option), Value: vals[f.Option]}
		if fe != nil && fe.Option == f.Option {
			fv.Error, fe = fe.Phrase(label), nil
		}
		d.Fields = append(d.Fields, fv)
	}
	if fe != nil {
		d.Error = fe.Phrase(label)
	}
	var b bytes.Buffer
	if err := h.page.t.ExecuteTemplate(&b, "page.html", d); err != nil {
		h.cfg.Log.Printf("web: page: %v", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write(b.Bytes())
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

// Report is one plan of an HTML report, with its charts (chart.All).
type Report struct {
	Plan    plan.Plan
	Charts  []chart.Chart
	Skipped []string
}

// WriteReport writes the plans as one self-contained HTML page (shardlab
// plan --html): the results the web page shows, with the charts inline
// and the style and script in the page, so it opens offline. Options are
// spelt as flags, as the CLI prints them.
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
		d.Results = append(d.Results, v)
	}
	return templates().t.ExecuteTemplate(w, "page.html", d)
}
