package web

import (
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"

	"shardlab/capacity"
	"shardlab/export"
	"shardlab/hw"
	"shardlab/inference"
	"shardlab/model"
	"shardlab/plan"
)

// goodputView is a plan's expected goodput (capacity.Expect) as the page
// shows it.
type goodputView struct {
	FailuresPerDay          float64
	SaveS, RestartS, EveryS float64
	Goodput                 float64
	Tokens, DaysToTrain     float64
	// DaysLow and DaysHigh are the time to train at the ends of the
	// plan's error band (it scales with the step); 0 without a band.
	DaysLow, DaysHigh float64
}

// goodputOf is the analytic goodput of p's chosen layout for 1e12 tokens.
func goodputOf(p plan.Plan) goodputView {
	m := p.Best.Estimate.Mesh
	chips := m.Chips()
	e := capacity.Expect(capacity.JobOf(p), chips, chips/m.Multislice.Slice.Chip.Host.Chips, 1e12)
	v := goodputView{FailuresPerDay: 24 * e.FailuresPerHour, SaveS: e.Save.Seconds(), RestartS: e.Restart.Seconds(),
		EveryS: e.Interval.Seconds(), Goodput: e.Goodput, Tokens: e.Tokens, DaysToTrain: e.TimeToTrain.Hours() / 24}
	if p.Band.Rows > 0 {
		v.DaysLow, v.DaysHigh = p.Band.Step(v.DaysToTrain)
	}
	return v
}

// servingPage is the serving view: a small form and the serving plan as
// shardlab inference prints it.
var servingPage = template.Must(template.New("serving").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>shardlab: serving</title><link rel="stylesheet" href="/static/style.css"></head>
<body><h1>Serving with vLLM tpu-inference</h1>
<p><a href="/">training plans</a></p>
<form method="get" action="/serving" id="serving-form">
<label>Model <input name="model" value="{{.Model}}"></label>
<label>TPU <input name="tpu" value="{{.TPU}}"></label>
<label>Max model len <input name="max_model_len" value="{{.MaxLen}}"></label>
<button type="submit">Plan serving</button>
</form>
{{with .Error}}<p class="error general" role="alert" id="error">{{.}}</p>{{end}}
{{with .Text}}<pre id="serving">{{.}}</pre>{{end}}
</body></html>
`))

type servingData struct {
	Model, TPU, MaxLen string
	Error, Text        string
}

// maxServingSpec bounds the model name of the serving form.
const maxServingField = 256

// serveServing plans serving for the query's model, TPU and max model
// length, with shardlab inference's defaults for the rest.
func (h *Handler) serveServing(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := servingData{Model: q.Get("model"), TPU: q.Get("tpu"), MaxLen: q.Get("max_model_len")}
	if d.Model == "" && d.TPU == "" && d.MaxLen == "" {
		d.Model, d.TPU, d.MaxLen = "llama3-70b", "tpu7x-8", "8192"
	} else {
		text, err := servingText(d)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			d.Error = err.Error()
		}
		d.Text = text
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	servingPage.Execute(w, d)
}

// servingText is shardlab inference's text for the form's values.
func servingText(d servingData) (string, error) {
	for _, f := range []string{d.Model, d.TPU, d.MaxLen} {
		if len(f) > maxServingField {
			return "", fmt.Errorf("a field of %d bytes, want at most %d", len(f), maxServingField)
		}
	}
	spec, ok := model.Lookup(d.Model)
	if !ok {
		return "", fmt.Errorf("model %q: want a catalog model (%s)", d.Model, strings.Join(model.Names(), ", "))
	}
	slice, err := hw.ParseTPU(d.TPU)
	if err != nil {
		return "", fmt.Errorf("TPU: %w", err)
	}
	if slice.Chips() == 0 {
		return "", fmt.Errorf("TPU %q names no size; want a host or slice such as tpu7x-8", d.TPU)
	}
	n, err := strconv.Atoi(d.MaxLen)
	if err != nil {
		return "", fmt.Errorf("max model len %q: want a number of tokens", d.MaxLen)
	}
	req := inference.DefaultRequest()
	req.Model, req.Slice, req.MaxModelLen = spec, slice, n
	if req, err = inference.NewRequest(req); err != nil {
		return "", err
	}
	p, err := inference.Search(req)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := p.WriteText(&b, export.ShellQuote(export.VLLMServe(p, servingModelID(spec)))); err != nil {
		return "", err
	}
	return b.String(), nil
}

// servingModelID is the model as vllm serve names it: its Hugging Face
// repository where the catalog knows one, else its name (a pasted spec,
// which the page cannot give a repository for).
func servingModelID(spec model.Spec) string {
	if spec.HFModel != "" {
		return spec.HFModel
	}
	return spec.Name
}
