package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"shardlab/export"
	"shardlab/plan"
	"shardlab/schema"
	"shardlab/unit"
)

// get serves a GET and returns its status and body.
func get(t *testing.T, h http.Handler, target string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec.Code, rec.Body.String()
}

// post serves a POST of body to /api/plan.
func post(t *testing.T, h http.Handler, body string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/api/plan", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, r)
	return rec.Code, rec.Body.String()
}

// noTrace fails if a body shows Go internals.
func noTrace(t *testing.T, what, body string) {
	t.Helper()
	for _, s := range []string{"goroutine ", ".go:", "panic", "runtime."} {
		if strings.Contains(body, s) {
			t.Errorf("%s: body shows %q: %.300s", what, s, body)
		}
	}
}

func TestPageEmpty(t *testing.T) {
	code, body := get(t, New(testConfig), "/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d, want 200", code)
	}
	for _, want := range []string{`<form id="job"`, `name="model"`, `name="tpu"`, `name="slices"`, `name="max_global_batch"`, `value="tpu7x-8"`, `/static/app.js`} {
		if !strings.Contains(body, want) {
			t.Errorf("GET / lacks %q", want)
		}
	}
	if strings.Contains(body, `<svg`) {
		t.Error("GET / without a question draws charts")
	}
}

func TestPageDefaultJob(t *testing.T) {
	q := queryOf(plan.DefaultOptions())
	code, body := get(t, New(testConfig), "/?"+q)
	if code != http.StatusOK {
		t.Fatalf("GET /?%s = %d, want 200: %.500s", q, code, body)
	}
	if got := strings.Count(body, "<svg"); got != 6 {
		t.Errorf("default job: %d charts, want 6 (memory, phases, step, MFU, slices, batch)", got)
	}
	for _, want := range []string{`id="layout"`, "data=4", "Reasons", `id="dl-maxtext"`, "Batch limit"} {
		if !strings.Contains(body, want) {
			t.Errorf("default job's page lacks %q", want)
		}
	}
	// the page spells options by the form's labels, never as flags
	if strings.Contains(body, "--max-global-batch") {
		t.Error("the page spells an option as a flag")
	}
	// the same URL gives the same page: a link shares the plan
	if _, again := get(t, New(testConfig), "/?"+q); again != body {
		t.Error("the same URL gave two different pages")
	}
}

func TestPageBadInput(t *testing.T) {
	for _, tc := range []struct {
		query  string
		code   int
		option string
		want   string
	}{
		{"model=nope&tpu=tpu7x-8", 400, "model", "Model &#34;nope&#34;: want a catalog model"},
		{"model=llama3-8b&tpu=v9z-8", 400, "tpu", "TPU type"},
		{"model=llama3-8b&slices=many", 400, "slices", "Slices: &#34;many&#34;, want a whole number"},
		{"model=llama3-8b&tpu=v6e-256&slices=4096", 400, "slices", "more than this server searches"},
		{"model=spec&model_spec=", 400, "model_spec", "Model spec: empty"},
		{"model=spec&model_spec=layers%3A+-1", 400, "model", ""},
		{"model=llama3-8b&max_global_batch=lots", 400, "max_global_batch", "Batch limit"},
	} {
		code, body := get(t, New(testConfig), "/?"+tc.query)
		if code != tc.code {
			t.Errorf("GET /?%s = %d, want %d", tc.query, code, tc.code)
		}
		noTrace(t, tc.query, body)
		i := strings.Index(body, `id="error-`+tc.option+`"`)
		if i < 0 {
			t.Errorf("GET /?%s: no error next to the %s field: %.2000s", tc.query, tc.option, body)
			continue
		}
		line, _, _ := strings.Cut(body[i:], "</p>")
		if !strings.Contains(line, tc.want) {
			t.Errorf("GET /?%s: error %q lacks %q", tc.query, line, tc.want)
		}
	}
}

func TestAPIPlan(t *testing.T) {
	code, body := post(t, New(testConfig), `{"model": "llama3-8b", "tpu": "tpu7x-8"}`)
	if code != http.StatusOK {
		t.Fatalf("POST /api/plan = %d: %s", code, body)
	}
	var j plan.JSON
	if err := json.Unmarshal([]byte(body), &j); err != nil {
		t.Fatal(err)
	}
	if j.Model != "llama3-8b" || j.Accelerator != "tpu7x-8" || j.Layout.Spec == "" {
		t.Errorf("POST /api/plan: model %q on %q, layout %q", j.Model, j.Accelerator, j.Layout.Spec)
	}
}

func TestAPIRefuses(t *testing.T) {
	h := New(Config{MaxBodyBytes: 1 << 10, MaxSpecBytes: 256})
	for _, tc := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"oversized body", `{"model": "` + strings.Repeat("x", 2000) + `"}`, 413, "body larger than 1024 bytes"},
		{"malformed", `{"model": `, 400, "malformed request"},
		{"not an object", `[1, 2]`, 400, "malformed request"},
		{"two values", `{} {}`, 400, "data after the JSON object"},
		{"unknown field", `{"modle": "llama3-8b"}`, 400, `unknown field \"modle\"`},
		{"wrong type", `{"slices": "two"}`, 400, `field \"slices\": want a whole number`},
		{"bad option", `{"slices": 0}`, 400, "slices 0, want 1 to 4096"},
		{"huge search", `{"tpu": "v6e-256", "slices": 4096}`, 400, "more than this server searches"},
		{"oversized spec", `{"model_spec": "` + strings.Repeat("#", 300) + `"}`, 400, "model_spec: 300 bytes, want at most 256"},
		{"bad spec", `{"model_spec": "layers: [1"}`, 400, "model"},
		{"no layout", `{"model": "llama3-405b", "tpu": "v5e-1"}`, 422, "no layout can run this job"},
	} {
		code, body := post(t, h, tc.body)
		if code != tc.code {
			t.Errorf("%s: POST /api/plan = %d, want %d: %s", tc.name, code, tc.code, body)
		}
		if !strings.Contains(body, tc.want) {
			t.Errorf("%s: body %s lacks %q", tc.name, body, tc.want)
		}
		noTrace(t, tc.name, body)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/plan", strings.NewReader("model=x")))
	if rec.Code != http.StatusUnsupportedMediaType {
		t.Errorf("POST /api/plan as a form = %d, want 415", rec.Code)
	}
	if code, _ := get(t, h, "/api/plan"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /api/plan = %d, want 405", code)
	}
	if code, _ := get(t, h, "/static/../web.go"); code == http.StatusOK {
		t.Errorf("GET /static/../web.go = %d, want no file", code)
	}
	if code, _ := get(t, h, "/static/page.html"); code != http.StatusNotFound {
		t.Errorf("GET /static/page.html = %d, want 404 (only the script and style are served)", code)
	}
}

func TestCatalog(t *testing.T) {
	code, body := get(t, New(testConfig), "/api/catalog")
	if code != http.StatusOK {
		t.Fatalf("GET /api/catalog = %d", code)
	}
	var c catalog
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range c.Models {
		names[m.Name] = true
	}
	if !names["llama3-8b"] || len(c.TPUs) == 0 {
		t.Errorf("catalog: models %v, %d TPUs", names, len(c.TPUs))
	}
}

func TestTimeout(t *testing.T) {
	h := New(Config{Timeout: time.Nanosecond})
	code, body := post(t, h, `{"model": "llama3-70b", "tpu": "tpu7x-128", "slices": 2}`)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "took longer than 1ns") {
		t.Errorf("POST /api/plan past its deadline = %d %s, want 503", code, body)
	}
}

func TestDownloads(t *testing.T) {
	h := New(testConfig)
	q := queryOf(plan.DefaultOptions())
	code, body := get(t, h, "/download/maxtext.yaml?"+q)
	if code != http.StatusOK || !strings.Contains(body, "ici_data_parallelism:") {
		t.Errorf("GET /download/maxtext.yaml = %d %.200s", code, body)
	}
	code, body = get(t, h, "/download/plan.json?"+q)
	if code != http.StatusOK || !strings.Contains(body, `"layout"`) {
		t.Errorf("GET /download/plan.json = %d %.200s", code, body)
	}
	code, body = get(t, h, "/download/xpk.sh?"+q+"&cluster=tpu-east")
	if code != http.StatusOK || !strings.Contains(body, "xpk workload create") || !strings.Contains(body, "--cluster tpu-east") ||
		!strings.Contains(body, "--base-docker-image maxtext_base_image") {
		t.Errorf("GET /download/xpk.sh = %d %.300s, want MaxText's base image by default (xpk's own has no MaxText)", code, body)
	}
	code, body = get(t, h, "/download/xpk.sh?"+q+"&docker_image=gcr.io/p/maxtext")
	if code != http.StatusOK || !strings.Contains(body, "--docker-image gcr.io/p/maxtext") || strings.Contains(body, "--base-docker-image") {
		t.Errorf("GET /download/xpk.sh?docker_image= = %d %.300s", code, body)
	}
	// xpk makes v5litepod-8 of two 4-chip VMs where the plan has one 8-chip
	// VM (export.XPKWarnings): the downloaded script says so, as export xpk does
	o := plan.DefaultOptions()
	o.Model, o.TPU = "gemma-2b", "v5litepod-8"
	code, body = get(t, h, "/download/xpk.sh?"+queryOf(o)+"&cluster=c")
	if code != http.StatusOK || !strings.Contains(body, "\n# warning: xpk (AI-Hypercomputer/xpk@367c8382) makes v5litepod-8 of 2 ct5lp-hightpu-4t VMs") {
		t.Errorf("GET /download/xpk.sh for v5litepod-8 = %d %.400s, want the VMs warning", code, body)
	}
	code, body = get(t, h, "/download/xpk.sh?"+q+"&docker_image=a&base_docker_image=b")
	if code != http.StatusBadRequest {
		t.Errorf("GET /download/xpk.sh with both images = %d %.300s, want 400 (xpk refuses the two together)", code, body)
	}
	// MaxText reads a config file only by a name ending in .yml.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/download/maxtext.yaml?"+q, nil))
	if cd := rec.Header().Get("Content-Disposition"); !strings.HasSuffix(cd, `.yml"`) {
		t.Errorf("the MaxText download is named by %q, want a .yml file", cd)
	}
	if code, body := get(t, h, "/download/maxtext.yaml?model=nope"); code != http.StatusBadRequest {
		t.Errorf("GET /download/maxtext.yaml?model=nope = %d %s, want 400", code, body)
	}
}

func TestReport(t *testing.T) {
	r, err := plan.ParseRequest(plan.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Search(r)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteReport(&b, Report{Plan: p}); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, bad := range []string{`src="/`, `href="/`, "http://", "https://"} {
		if strings.Contains(s, bad) {
			t.Errorf("report refers to %q: not self-contained", bad)
		}
	}
	if !strings.Contains(s, "<style>") || !strings.Contains(s, "<script>") || strings.Contains(s, "<form") {
		t.Error("report: want inline style and script and no form")
	}
	// two plans (plan --html with no flags): two results, ids once
	b.Reset()
	if err := WriteReport(&b, Report{Plan: p}, Report{Plan: p}); err != nil {
		t.Fatal(err)
	}
	if n, ids := strings.Count(b.String(), `class="layout"`), strings.Count(b.String(), `id="layout"`); n != 2 || ids != 1 {
		t.Errorf("report of two plans: %d layouts and %d id=layout, want 2 and 1", n, ids)
	}
}

// TestPageNoPlan: a job no layout can run is an error above the results,
// in the page's words, with the form kept.
func TestPageNoPlan(t *testing.T) {
	code, body := get(t, New(testConfig), "/?model=llama3-405b&tpu=v5e-1")
	if code != http.StatusUnprocessableEntity {
		t.Errorf("GET a job that cannot run = %d, want 422", code)
	}
	i := strings.Index(body, `id="error"`)
	if i < 0 {
		t.Fatalf("no general error on the page: %.1000s", body)
	}
	line, _, _ := strings.Cut(body[i:], "</p>")
	if !strings.Contains(line, "no layout can run this job on v5litepod-1") {
		t.Errorf("error %q, want no layout can run this job", line)
	}
	if !strings.Contains(body, `value="v5e-1"`) {
		t.Error("the form lost the TPU type asked for")
	}
	noTrace(t, "no plan", body)
}

// queryOf is the page's URL query for options: what the form submits.
func queryOf(o plan.Options) string {
	q := url.Values{}
	for opt, v := range valuesOf(o) {
		q.Set(string(opt), v)
	}
	return q.Encode()
}

// TestAPISpecName: a pasted spec is named by its own name, else by
// "model", else "custom" — never by the catalog default.
func TestAPISpecName(t *testing.T) {
	const spec = `layers: 16\nd_model: 2048\nheads: 16\nd_ff: 8192\nvocab: 32000\nseq_len: 2048`
	for _, tc := range []struct{ body, want string }{
		{`{"model_spec": "` + spec + `"}`, "custom"},
		{`{"model": "tiny", "model_spec": "` + spec + `"}`, "tiny"},
		{`{"model": "tiny", "model_spec": "name: mine\n` + spec + `"}`, "mine"},
		{`{}`, plan.DefaultModel},
	} {
		code, body := post(t, New(testConfig), tc.body)
		var j plan.JSON
		if err := json.Unmarshal([]byte(body), &j); code != http.StatusOK || err != nil {
			t.Errorf("POST %s = %d %v: %.300s", tc.body, code, err, body)
			continue
		}
		if j.Model != tc.want {
			t.Errorf("POST %s: model %q, want %q", tc.body, j.Model, tc.want)
		}
	}
}

// TestServingPage: the serving page shows the chosen layout, the vllm
// serve line with the model's Hugging Face id, the layouts table and the
// latency and throughput charts; a bad field is flagged beside itself,
// every bad field at once, with a 400.
func TestServingPage(t *testing.T) {
	h := New(testConfig)
	code, body := get(t, h, "/serving?model=llama3-70b&tpu=tpu7x-8&max_model_len=8192")
	for _, want := range []string{"vllm serve meta-llama/Meta-Llama-3-70B", `id="serving-layouts"`, `data-chart="latency"`, `data-chart="throughput"`,
		"/download/serving.json?", "Time to first token", `id="serving-sim"`, "simulated (vllm scheduler, fixed 1024&#43;1024 lengths"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET /serving = %d, lacks %q", code, want)
		}
	}
	// TP 1 × DP 8 does not fit (all 141 GB of weights a replica): its
	// TTFT, ITL and tokens/s are n/a, with no number to sort on.
	if i := strings.Index(body, `<td data-v="1">1</td><td data-v="8">8</td><td data-v="1">1</td><td data-v="4">4</td>`); i < 0 {
		t.Errorf("GET /serving: no TP 1 × DP 8 row")
	} else if row, _, _ := strings.Cut(body[i:], "</tr>"); strings.Count(row, "<td>n/a</td>") != 4 {
		t.Errorf("GET /serving: TP 1 × DP 8 (does not fit) row has %d n/a cells, want 4 (TTFT, ITL, tokens/s, per chip):\n%s", strings.Count(row, "<td>n/a</td>"), row)
	}
	for _, c := range []struct{ q, field string }{
		{"model=nope&tpu=tpu7x-8", "model"},
		{"model=llama3-70b&tpu=v4-8", "tpu"},
		{"model=llama3-70b&tpu=tpu7x-8&max_model_len=999999", "max_model_len"},
		{"model=llama3-70b&tpu=tpu7x-8&max_model_len=x", "max_model_len"},
		{"model=llama3-70b&tpu=tpu7x-8&concurrency=8&request_rate=2", "concurrency"},
	} {
		code, body := get(t, h, "/serving?"+c.q)
		if code != http.StatusBadRequest || !strings.Contains(body, `id="error-`+c.field+`"`) {
			t.Errorf("GET /serving?%s = %d, want 400 with field %s flagged:\n%.300s", c.q, code, c.field, body)
		}
	}
	// a job no layout can serve is 422, in words
	if code, body := get(t, h, "/serving?model=llama3-405b&tpu=v5e-4"); code != http.StatusUnprocessableEntity || !strings.Contains(body, `id="error"`) || !strings.Contains(body, "no layout fits") {
		t.Errorf("GET /serving for llama3-405b on v5e-4 = %d, want 422 saying no layout fits:\n%.300s", code, body)
	}
	// every bad field at once
	code, body = get(t, h, "/serving?model=llama3-70b&tpu=tpu7x-8&prompt_len=-1&weights=fp4&gpu_memory_utilization=2&ttft_slo=x&length_mix=zipf&seed=-1")
	for _, f := range []string{"prompt_len", "weights", "gpu_memory_utilization", "ttft_slo", "length_mix", "seed"} {
		if code != http.StatusBadRequest || !strings.Contains(body, `id="error-`+f+`"`) {
			t.Errorf("GET /serving with six bad fields = %d, %s not flagged", code, f)
		}
	}
}

// TestServingJSON: the download is shardlab inference --json's plan.
func TestServingJSON(t *testing.T) {
	h := New(testConfig)
	code, body := get(t, h, "/download/serving.json?model=llama3-8b&tpu=v6e-8")
	var j export.ServingJSON
	if code != http.StatusOK || json.Unmarshal([]byte(body), &j) != nil || j.Model != "llama3-8b" || len(j.Command) == 0 || len(j.Layouts) == 0 || j.Simulation == nil {
		t.Errorf("GET /download/serving.json = %d %.300s, want the plan's JSON", code, body)
	}
	if code, _ := get(t, h, "/download/serving.json?model=llama3-8b&tpu=v6e-8&prompt_len=-1"); code != http.StatusBadRequest {
		t.Errorf("GET /download/serving.json with a bad prompt length = %d, want 400", code)
	}
}

// TestServingLengthsBesideMix: the serving JSON and page refuse a prompt
// or output length beside a length mix (400 naming the length and the
// mix), which replaced them with its mean request in silence (review of
// dcd4fab #3); the lengths unset (0, the form's default, which a form
// sent without its script carries) take the mix's.
func TestServingLengthsBesideMix(t *testing.T) {
	h := New(testConfig)
	const q = "model=llama3-8b&tpu=v6e-8&num_requests=50&length_mix=uniform:100-300"
	for _, c := range []struct{ extra, field, value string }{{"&prompt_len=500", "prompt_len", "500"}, {"&output_len=1024", "output_len", "1024"}} {
		target := "/download/serving.json?" + q + c.extra
		code, body := get(t, h, target)
		var e struct{ Option string }
		json.Unmarshal([]byte(body), &e)
		if msg := errorOf(t, target, body); code != http.StatusBadRequest || e.Option != c.field || !strings.Contains(msg, c.field+" "+c.value+", want it unset beside length_mix (uniform 100-300)") {
			t.Errorf("GET %s = %d, option %q, %q; want 400 naming %s %s and length_mix", target, code, e.Option, msg, c.field, c.value)
		}
		code, body = get(t, h, "/serving?"+q+c.extra)
		if code != http.StatusBadRequest || !strings.Contains(body, `id="error-`+c.field+`"`) || !strings.Contains(body, "want it unset beside Length mix") {
			t.Errorf("GET /serving?%s%s = %d, want 400 with %s flagged, naming the length mix by its label", q, c.extra, code, c.field)
		}
	}
	code, body := get(t, h, "/serving?"+q+"&prompt_len=0&output_len=0")
	if code != http.StatusOK || !strings.Contains(body, "simulated (vllm scheduler, uniform 100-300 lengths") {
		t.Errorf("GET /serving with the mix and the lengths unset = %d, want 200 and the mix simulated:\n%.300s", code, body)
	}
}

// TestServingFormHasEveryOption: the serving form has a field for every
// option of inference.Options, and nothing else but the pasted spec.
func TestServingFormHasEveryOption(t *testing.T) {
	have := map[plan.Option]bool{}
	for _, l := range servingLooks {
		have[l.option] = true
	}
	for o := range servingForm.index {
		if !have[o] {
			t.Errorf("inference.Options has %s; the serving form has no field for it", o)
		}
	}
	for o := range have {
		if _, ok := servingForm.index[o]; !ok && o != optionModelSpec {
			t.Errorf("the serving form has %s, which inference.Options lacks", o)
		}
	}
}

func TestPageShowsGoodput(t *testing.T) {
	h := New(testConfig)
	code, body := get(t, h, "/?"+queryOf(plan.DefaultOptions()))
	if code != http.StatusOK || !strings.Contains(body, `id="goodput"`) || !strings.Contains(body, "(Daly)") {
		t.Errorf("GET / = %d; no goodput section", code)
	}
	// review 140: it said capacity simulates "a reservation"; it
	// simulates those of tpu7x and v6e only, as plan --goodput now says
	if want := "<code>shardlab capacity</code> simulates tpu7x and v6e reservations only, v6e with its sub-block and block sizes given."; !strings.Contains(body, want) {
		t.Errorf("GET /: the goodput section lacks %q", want)
	}
}

// TestUserMistakes: every mistake in a request is a 4xx that names the
// field at fault, in the body and in the API's "option", and none is
// logged as a server error (issue 26: a layout over DCN and a bad xpk
// cluster were 500 "internal error", logged).
func TestUserMistakes(t *testing.T) {
	var logged bytes.Buffer
	h := New(Config{Log: log.New(&logged, "", 0)})
	for _, tc := range []struct {
		name, body string
		code       int
		option     string // the API's "option"
		want       string
	}{
		{"tensor over DCN", `{"mesh": "tensor=2(dcn)"}`, 400, "mesh", "mesh: tensor = 2 over DCN: tensor parallelism over DCN is not supported"},
		{"context over DCN", `{"mesh": "context=2(dcn)"}`, 400, "mesh", "mesh: context = 2 over DCN: context parallelism over DCN is not supported"},
		{"mesh of the wrong size", `{"mesh": "data=3"}`, 400, "mesh", "mesh: ICI factors = 3"},
		{"mesh on a bare generation", `{"tpu": "tpu7x", "mesh": "data=3"}`, 400, "mesh", "mesh: ICI factors = 3"},
		{"mesh over DCN on one slice", `{"tpu": "v5p-8", "mesh": "data=2(dcn),fsdp=4"}`, 400, "mesh", "mesh: data DCN factor = 2, want 1"},
		// review 145 #5: hw's reason in its own words, not "slices: hw: slices"
		{"two 1-chip TPU7x slices", `{"tpu": "tpu7x-2", "slices": 2}`, 400, "slices", `slices: slices "tpu7x-2": does not join a Multislice`},
	} {
		code, body := post(t, h, tc.body)
		var e apiError
		if err := json.Unmarshal([]byte(body), &e); err != nil || code != tc.code || e.Option != tc.option || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%s: POST %s = %d %s, want %d naming option %q with %q", tc.name, tc.body, code, body, tc.code, tc.option, tc.want)
		}
	}
	q := queryOf(plan.DefaultOptions())
	o := plan.DefaultOptions()
	// 12 one-token sequences on 8 TPU7x devices: whatever layout the plan
	// picks, MaxText cannot give each device a whole number of tokens
	// (with dot_product attention: flash refuses a one-token sequence
	// first, as an input error, 400, for its block rule)
	o.Seq, o.GlobalBatch, o.Attention = 1, "12", "dot_product"
	seq1 := queryOf(o)
	for _, tc := range []struct {
		name, target string
		code         int
		want         string
	}{
		{"bad xpk cluster", "/download/xpk.sh?" + q + "&cluster=Bad_Name", 400, `cluster: "Bad_Name", want at most 40 lower-case letters`},
		{"xpk cluster too long", "/download/xpk.sh?" + q + "&cluster=" + strings.Repeat("a", 41), 400, "cluster: "},
		{"a plan MaxText cannot run", "/download/maxtext.yaml?" + seq1, 422, "export: maxtext: num_vocab_tiling 1; MaxText needs per_device_batch_size x max_target_length (1.5 x 1 = 1.5 tokens a device)"},
		{"a plan xpk cannot run", "/download/xpk.sh?" + seq1, 422, "whole number of tokens"},
		{"a sequence flash cannot block", "/download/maxtext.yaml?" + strings.Replace(seq1, "attention=dot_product", "attention=flash", 1), 400, "Sequence length 1: MaxText's flash attention"},
	} {
		code, body := get(t, h, tc.target)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s: GET %s = %d %s, want %d with %q", tc.name, tc.target, code, body, tc.code, tc.want)
		}
	}
	if logged.Len() > 0 {
		t.Errorf("mistakes in requests were logged as server errors:\n%s", logged.String())
	}
}

// TestAPIMediaType: POST /api/plan takes application/json in any case
// (RFC 9110 section 8.3.1), with at most charset=utf-8, and refuses other
// types and charsets with 415 rather than reading them as UTF-8 JSON.
func TestAPIMediaType(t *testing.T) {
	h := New(testConfig)
	for _, tc := range []struct {
		contentType []string
		code        int
		want        string
	}{
		{[]string{"application/json"}, 200, ""},
		{[]string{"APPLICATION/JSON"}, 200, ""},
		{[]string{"Application/Json; Charset=UTF-8"}, 200, ""},
		{[]string{"application/json;charset=utf-8"}, 200, ""},
		{[]string{`application/json; charset="utf-8"`}, 200, ""},
		{[]string{"application/jsonx"}, 415, `content type \"application/jsonx\", want application/json`},
		{[]string{"application/json-patch+json"}, 415, "want application/json"},
		{[]string{"text/json"}, 415, "want application/json"},
		{[]string{"application/json; charset=utf-16"}, 415, `charset \"utf-16\", want utf-8`},
		{[]string{"application/json; charset=latin1"}, 415, `charset \"latin1\", want utf-8`},
		{[]string{"application/json; boundary=x"}, 415, `parameter \"boundary\", want none but charset=utf-8`},
		{[]string{"application/json; charset"}, 415, "want application/json"},
		{[]string{""}, 415, "want application/json"},
		{nil, 415, "0 Content-Type headers"},
		{[]string{"application/json", "text/plain"}, 415, "2 Content-Type headers"},
	} {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/api/plan", strings.NewReader(`{"model": "llama3-8b", "tpu": "v5p-8", "global_batch": "8"}`))
		r.Header["Content-Type"] = tc.contentType
		h.ServeHTTP(rec, r)
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("Content-Type %q: %d %.300s, want %d with %q", tc.contentType, rec.Code, rec.Body.String(), tc.code, tc.want)
		}
	}
}

// TestAPIExactJSON: the body is one JSON object whose keys are spelt
// exactly as documented, each once: encoding/json alone matches keys in
// any case (so "Model" set model past the unknown-field rule), takes the
// last of a repeated key and decodes null as an empty request.
func TestAPIExactJSON(t *testing.T) {
	h := New(testConfig)
	for _, tc := range []struct {
		name, body string
		option     string
		want       string
	}{
		{"key in the wrong case", `{"Model": "llama3-70b"}`, "model", `unknown field \"Model\"; keys are case-sensitive, want \"model\"`},
		{"spec key in capitals", `{"MODEL_SPEC": "layers: 2"}`, "model_spec", `unknown field \"MODEL_SPEC\"; keys are case-sensitive, want \"model_spec\"`},
		{"key twice", `{"model": "llama3-8b", "model": "llama3-70b"}`, "model", `field \"model\" given twice, want it once`},
		{"null", `null`, "", "malformed request: null, want a JSON object"},
		{"empty", ``, "", "malformed request: empty body, want a JSON object"},
		{"a string", `"llama3-8b"`, "", "malformed request: a string, want a JSON object"},
		{"an array", `[{}]`, "", "malformed request: an array, want a JSON object"},
		{"a bracket after", `{"model": "llama3-8b"} ]`, "", "data after the JSON object"},
		{"a brace after", `{"model": "llama3-8b"}}`, "", "data after the JSON object"},
		{"a second object", `{"model": "llama3-8b"}{"model": "llama3-70b"}`, "", "data after the JSON object"},
		{"unterminated", `{"model": "llama3-8b"`, "", "malformed request"},
		{"a fraction for a whole number", `{"slices": 1.5}`, "slices", `field \"slices\": want a whole number`},
		{"not UTF-8", "{\"model\": \"llama\xff\"}", "", "the body is not UTF-8"},
		{"a byte-order mark", "\xef\xbb\xbf{\"model\": \"llama3-8b\"}", "", "malformed request: the body starts with a byte-order mark (U+FEFF), want UTF-8 JSON without one"},
	} {
		code, body := post(t, h, tc.body)
		var e apiError
		if err := json.Unmarshal([]byte(body), &e); err != nil || code != http.StatusBadRequest || e.Option != tc.option || !strings.Contains(body, tc.want) {
			t.Errorf("%s: POST %q = %d %s, want 400 naming option %q with %q", tc.name, tc.body, code, body, tc.option, tc.want)
		}
	}
	// exact keys with spaces around them and a newline after the object are one object
	if code, body := post(t, h, " {\"model\" : \"llama3-8b\", \"tpu\": \"v5p-8\", \"global_batch\": \"8\"}\n"); code != http.StatusOK {
		t.Errorf("POST a valid object with white space = %d %.300s, want 200", code, body)
	}
}

// TestAPIRefusesNull: a key whose value is null is refused, naming the
// key and what it takes: encoding/json alone leaves the field as it was,
// so {"slices": null} planned the default one slice with a 200 (review of
// the web API: the README promises null is refused). Every key the API
// has is checked, and a null is found among other bad values.
func TestAPIRefusesNull(t *testing.T) {
	h := New(testConfig)
	for _, tc := range []struct {
		name, body string
		options    []string // the options of the errors, in the form's order
		want       string
	}{
		{"model", `{"model": null}`, []string{"model"}, `model: null, want a string; leave \"model\" out for its default`},
		{"slices", `{"tpu": "v5p-8", "slices": null}`, []string{"slices"}, "slices: null, want a whole number"},
		{"tpu", `{"tpu": null}`, []string{"tpu"}, "tpu: null, want a string"},
		{"efficiency", `{"efficiency": null}`, []string{"efficiency"}, "efficiency: null, want a number"},
		{"optimizer_offload", `{"optimizer_offload": null}`, []string{"optimizer_offload"}, "optimizer_offload: null, want true or false"},
		{"model_spec", `{"model_spec": null}`, []string{"model_spec"}, "model_spec: null, want a string"},
		{"example_cost", `{"example_cost": null}`, []string{"example_cost"}, "example_cost: null, want a whole number (nanoseconds)"},
		{"white space around null", "{\"seq\" :\n null }", []string{"seq"}, "seq: null, want a whole number"},
		{"with other bad values", `{"slices": "two", "tpu": null, "top": null}`, []string{"tpu", "slices", "top"}, "tpu: null, want a string"},
	} {
		code, body := post(t, h, tc.body)
		var e apiError
		if err := json.Unmarshal([]byte(body), &e); err != nil || code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("%s: POST %s = %d %s, want 400 with %q", tc.name, tc.body, code, body, tc.want)
			continue
		}
		var got []string
		for _, fe := range e.Errors {
			got = append(got, fe.Option)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.options) {
			t.Errorf("%s: POST %s: errors about %q, want %q", tc.name, tc.body, got, tc.options)
		}
	}
	for key := range apiKeys {
		body := fmt.Sprintf(`{%q: null}`, key)
		code, answer := post(t, h, body)
		var e apiError
		if err := json.Unmarshal([]byte(answer), &e); err != nil || code != http.StatusBadRequest || e.Option != key || !strings.Contains(e.Error, key+": null, want ") {
			t.Errorf("POST %s = %d %s, want 400 naming %q", body, code, answer, key)
		}
	}
}

// TestQueryRefuses: every address that reads a query refuses, naming the
// key, a key it does not read and a key given twice, before any search:
// they were ignored, so /download/plan.json?...&slicez=4 planned one
// slice and slices=2&slices=4 planned 2 with a 200 (review of the web
// API). A malformed pair, which url.Values drops, is refused too.
func TestQueryRefuses(t *testing.T) {
	var logged bytes.Buffer
	h := New(Config{Log: log.New(&logged, "", 0)})
	q := "model=llama3-8b&tpu=v5p-8"
	serving := "model=llama3-8b&tpu=v6e-8"
	for _, tc := range []struct {
		name, target string
		want         string
	}{
		{"misspelt key", "/download/plan.json?" + q + "&slicez=4", `unknown query key "slicez", want one of model, model_spec, seq,`},
		{"key twice", "/download/plan.json?" + q + "&slices=2&slices=4", `query key "slices" given 2 times ("2", "4"), want it once`},
		{"key in capitals", "/download/plan.json?" + q + "&Slices=2", `unknown query key "Slices"; keys are case-sensitive, want "slices"`},
		{"malformed pair", "/download/plan.json?" + q + "&slices=%zz", `malformed query: invalid URL escape "%zz"`},
		{"semicolon", "/download/plan.json?" + q + ";slices=2", "malformed query: invalid semicolon separator in query"},
		{"empty key", "/download/plan.json?" + q + "&=4", `unknown query key ""`},
		{"maxtext: a pin", "/download/maxtext.yaml?" + q + "&pin=" + url.QueryEscape(q), `unknown query key "pin"`},
		{"maxtext: an xpk key", "/download/maxtext.yaml?" + q + "&cluster=c", `unknown query key "cluster"`},
		{"xpk: unknown key", "/download/xpk.sh?" + q + "&zone=us-east5", `unknown query key "zone", want one of model,`},
		{"xpk: cluster twice", "/download/xpk.sh?" + q + "&cluster=a&cluster=b", `query key "cluster" given 2 times ("a", "b"), want it once`},
		{"xpk: bad capacity", "/download/xpk.sh?" + q + "&capacity=spoot", `capacity: "spoot", want reservation, spot, on-demand, flex`},
		{"xpk: bad workload", "/download/xpk.sh?" + q + "&workload=W1", `workload: "W1", want at most 40 lower-case letters`},
		{"xpk: bad max_restarts", "/download/xpk.sh?" + q + "&max_restarts=three", `max_restarts: "three", want a whole number from 0 to 1000`},
		{"xpk: negative max_restarts", "/download/xpk.sh?" + q + "&max_restarts=-1", `max_restarts: "-1", want a whole number from 0 to 1000`},
		{"xpk: every bad option at once", "/download/xpk.sh?" + q + "&cluster=A&workload=B&capacity=x&max_restarts=y&slices=0",
			`Slices 0, want 1 to 4096; cluster: "A", want at most 40`},
		// export's XPK checks name fields; the web spells them as its query keys, not the CLI's flags
		{"xpk: a reservation under spot", "/download/xpk.sh?" + q + "&capacity=spot&reservation=foo", `xpk: reservation "foo"; only with capacity reservation, not "spot"`},
		{"xpk: reservation mode without one", "/download/xpk.sh?" + q + "&capacity=reservation", "xpk: capacity reservation; want reservation NAME too"},
		{"xpk: a bad reservation", "/download/xpk.sh?" + q + "&reservation=r%3Bid", `reservation: "r;id", want`},
		{"xpk: a bad image", "/download/xpk.sh?" + q + "&docker_image=gcr.io/p/MaxText", `docker_image: "gcr.io/p/MaxText", want the repository path in lower-case`},
		{"xpk: a bad base image", "/download/xpk.sh?" + q + "&base_docker_image=img%60x%60", "base_docker_image: \"img`x`\", want an image by Docker's image reference grammar"},
		{"xpk: both images", "/download/xpk.sh?" + q + "&docker_image=a&base_docker_image=b", `xpk: docker_image and base_docker_image "a" and "b"; want one of them`},
		{"budget: unknown key", "/download/budget.json?" + smallBudget + "&prices=/etc/passwd", `unknown query key "prices"`},
		{"budget: key twice", "/download/budget.json?" + smallBudget + "&tokens=1T", `query key "tokens" given 2 times ("100B", "1T"), want it once`},
		{"serving: unknown key", "/download/serving.json?" + serving + "&max_len=8192", `unknown query key "max_len"`},
		{"serving: a plan key", "/download/serving.json?" + serving + "&slices=2", `unknown query key "slices"`},
		{"charts: unknown key", "/charts?" + q + "&slicez=4", `unknown query key "slicez"`},
		{"charts: a pin", "/charts?" + q + "&pin=" + url.QueryEscape(q), `unknown query key "pin"`},
		{"page: unknown key", "/?" + q + "&slicez=4", `unknown query key &#34;slicez&#34;`},
		{"page: key twice", "/?" + q + "&tpu=v5p-16", `query key &#34;tpu&#34; given 2 times`},
		{"serving page: unknown key", "/serving?" + serving + "&tpus=v6e-8", `unknown query key &#34;tpus&#34;`},
		{"budget page: key twice", "/budget?" + smallBudget + "&modes=spot", `query key &#34;modes&#34; given 2 times`},
	} {
		code, body := get(t, h, tc.target)
		text := body
		if strings.HasPrefix(tc.target, "/download/") && strings.Contains(tc.target, ".json?") {
			// a JSON download's error is the API's JSON error object
			text = errorOf(t, tc.target, body)
		}
		if code != http.StatusBadRequest || !strings.Contains(text, tc.want) {
			t.Errorf("%s: GET %s = %d %.400s, want 400 with %q", tc.name, tc.target, code, body, tc.want)
		}
		noTrace(t, tc.name, body)
	}
	// a key twice on the page is flagged at its field
	if _, body := get(t, h, "/?"+q+"&slices=2&slices=4"); !strings.Contains(body, `id="error-slices"`) {
		t.Errorf("GET /?...&slices=2&slices=4: the Slices field is not flagged")
	}
	// a pin's own query is checked as the page's: its error in its column
	code, body := get(t, h, "/?"+q+"&pin="+url.QueryEscape(q+"&slicez=4"))
	if code != http.StatusOK || !strings.Contains(body, `unknown query key &#34;slicez&#34;`) {
		t.Errorf("a pin with an unknown key: %d, want its error in its column", code)
	}
	if logged.Len() > 0 {
		t.Errorf("mistakes in queries were logged as server errors:\n%s", logged.String())
	}
}

// TestXPKOptions: the xpk download takes export xpk's own options by
// their keys (workload, capacity, reservation, max_restarts besides the
// cluster and the image), each written into the command as the CLI
// writes it; they were ignored with a 200 (review of the web API).
func TestXPKOptions(t *testing.T) {
	h := New(testConfig)
	q := "/download/xpk.sh?model=llama3-8b&tpu=v5p-8"
	for _, tc := range []struct {
		query      string
		want, lack []string
	}{
		{"", []string{"--cluster my-cluster", "--workload shardlab", "run_name=shardlab", "--max-restarts 0"}, []string{"--spot", "--reservation"}},
		{"&capacity=spot&max_restarts=3&workload=w1", []string{"--workload w1", "run_name=w1", "--spot", "--max-restarts 3"}, []string{"--reservation"}},
		{"&capacity=On-Demand", []string{"--on-demand"}, nil},
		{"&capacity=flex", []string{"--flex"}, nil},
		{"&capacity=reservation&reservation=res-1", []string{"--reservation res-1"}, []string{"--spot"}},
		// a reservation alone asks for reservation capacity, as export xpk --reservation does
		{"&reservation=res-1", []string{"--reservation res-1"}, nil},
	} {
		code, body := get(t, h, q+tc.query)
		if code != http.StatusOK {
			t.Errorf("GET %s = %d %.300s, want 200", q+tc.query, code, body)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s lacks %q:\n%s", q+tc.query, w, body)
			}
		}
		for _, l := range tc.lack {
			if strings.Contains(body, l) {
				t.Errorf("GET %s has %q:\n%s", q+tc.query, l, body)
			}
		}
	}
}

// TestPageLinksAskThePagesQuestion: every link of a page that answered
// (its downloads, its scaling charts, the link to it) asks for what the
// page shows, and is taken. html/template escaped the query whole in an
// href (model%3dllama3-8b%26tpu%3dv5p-8, one key with no value), so the
// downloads, the charts and the shared link were the default job's.
func TestPageLinksAskThePagesQuestion(t *testing.T) {
	h := New(testConfig)
	q := "model=llama3-8b&slices=2&tpu=v5p-8" // as url.Values.Encode sorts it
	pin := "pin=" + url.QueryEscape("model=llama3-8b&tpu=tpu7x-8")
	links := regexp.MustCompile(`(?:href|data-src)="(/(?:download/[a-z.]+|charts)\?[^"]*)"`)
	share := regexp.MustCompile(`id="share" href="([^"]*)"`)
	for _, tc := range []struct {
		path, query string
		links       int    // downloads and charts
		json        string // the JSON download
		want        []string
	}{
		{"/", q + "&" + pin, 4, "/download/plan.json", []string{`"accelerator_type": "v5p-8"`, `"slices": 2,`}},
		{"/", q, 4, "/download/plan.json", []string{`"accelerator_type": "v5p-8"`, `"slices": 2,`}},
		{"/serving", "model=llama3-8b&tpu=v6e-4", 1, "/download/serving.json", []string{`"accelerator_type": "v6e-4"`}},
		{"/budget", smallBudget + "&region=us-central1", 1, "/download/budget.json", []string{`"region": "us-central1"`, `"tokens": 100000000000`}},
	} {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, tc.path+"?"+tc.query, nil)
		r.Header.Set(headerScaling, "later") // as the script asks: the charts by their link
		h.ServeHTTP(rec, r)
		page := rec.Body.String()
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s?%s = %d", tc.path, tc.query, rec.Code)
		}
		asked, _ := url.ParseQuery(tc.query)
		if m := share.FindStringSubmatch(page); m == nil || html.UnescapeString(m[1]) != tc.path+"?"+asked.Encode() {
			t.Errorf("GET %s?%s: the link to it is %q, want %s", tc.path, tc.query, m, tc.path+"?"+asked.Encode())
		}
		asked.Del("pin") // the downloads and charts read no pins
		ms := links.FindAllStringSubmatch(page, -1)
		if len(ms) != tc.links {
			t.Errorf("GET %s?%s: %d downloads and charts, want %d", tc.path, tc.query, len(ms), tc.links)
		}
		for _, m := range ms {
			link := html.UnescapeString(m[1])
			path, query, _ := strings.Cut(link, "?")
			if query != asked.Encode() {
				t.Errorf("GET %s?%s: its link %s asks %q, want %q", tc.path, tc.query, link, query, asked.Encode())
			}
			code, body := get(t, h, link)
			if code != http.StatusOK {
				t.Errorf("GET %s?%s: its link %s = %d %.300s", tc.path, tc.query, link, code, body)
			}
			for _, w := range tc.want {
				if path == tc.json && !strings.Contains(body, w) {
					t.Errorf("GET %s?%s: its download %s lacks %s: %.300s", tc.path, tc.query, link, w, body)
				}
			}
		}
	}
}

// TestAPIKeysAreTheOptions: the keys the API takes are plan's options by
// their JSON keys and the pasted spec, which is what jsonKeys reads off
// the request type.
func TestAPIKeysAreTheOptions(t *testing.T) {
	for _, k := range []string{"model", "tpu", "slices", "mesh", "global_batch", "example_cost", "model_spec"} {
		if _, ok := apiKeys[k]; !ok {
			t.Errorf("API keys lack %q: %v", k, apiKeys)
		}
	}
	for _, k := range []string{"Model", "ModelSpec", "Options", ""} {
		if _, ok := apiKeys[k]; ok {
			t.Errorf("API keys hold %q", k)
		}
	}
}

// TestJSONAnswersStartWithTheSchema checks that every JSON body the API
// serves, an error's too, is an object whose first key is the schema
// version, as every --json output of the CLI.
func TestJSONAnswersStartWithTheSchema(t *testing.T) {
	h := New(testConfig)
	answers := map[string]func() (int, string){
		"POST /api/plan":          func() (int, string) { return post(t, h, `{"model": "llama3-8b", "tpu": "v5p-8"}`) },
		"POST /api/plan (error)":  func() (int, string) { return post(t, h, `{"tpu": "v9z-8"}`) },
		"GET /api/catalog":        func() (int, string) { return get(t, h, "/api/catalog") },
		"GET /download/plan.json": func() (int, string) { return get(t, h, "/download/plan.json?model=llama3-8b&tpu=v5p-8") },
	}
	for name, answer := range answers {
		code, body := answer()
		dec := json.NewDecoder(strings.NewReader(body))
		var toks []any
		for range 3 {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			toks = append(toks, tok)
		}
		if len(toks) != 3 || toks[0] != json.Delim('{') || toks[1] != schema.Key || toks[2] != schema.Version {
			t.Errorf("%s: %d, starts %v, want {, %q, %q:\n%.300s", name, code, toks, schema.Key, schema.Version, body)
		}
	}
}

// TestPageNamesTheMFUPeak checks that the page says which peak its MFU is
// against, and that the report of an int8 plan (plan --html; the form has
// no quantization field) gives its MFU against the int8 peak besides.
func TestPageNamesTheMFUPeak(t *testing.T) {
	o := plan.DefaultOptions()
	o.Model, o.TPU = "llama3-8b", "v5p-8"
	code, body := get(t, New(testConfig), "/?"+queryOf(o))
	if code != http.StatusOK {
		t.Fatalf("GET / = %d %.300s", code, body)
	}
	for _, w := range []string{"</b> of the bf16 peak ·", "MFU (bf16 peak)</th>"} {
		if !strings.Contains(body, w) {
			t.Errorf("page lacks %q", w)
		}
	}
	o.Quantization = "int8"
	r, err := plan.ParseRequest(o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Search(r)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteReport(&b, Report{Plan: p}); err != nil {
		t.Fatal(err)
	}
	q := fmt.Sprintf("%.1f%%", 100*p.Best.Estimate.QuantizedMFU)
	for _, w := range []string{"</b> of the bf16 peak (<b>" + q + "</b> of the int8 peak)", "MFU (bf16 peak)</th>", "MFU (int8 peak)</th>"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("int8 report lacks %q", w)
		}
	}
}

// TestPageShowsBand: the plan view carries the error band of the step,
// MFU, tokens/s and time to train, from the plan's own band (issue 29).
func TestPageShowsBand(t *testing.T) {
	h := New(testConfig)
	o := plan.DefaultOptions()
	code, body := get(t, h, "/?"+queryOf(o))
	req, err := plan.ParseRequest(o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Search(req)
	if err != nil {
		t.Fatal(err)
	}
	j := p.JSON(nil).Band
	if j == nil {
		t.Fatal("the default plan has no band")
	}
	want := fmt.Sprintf("step %s to %s", unit.Seconds(j.StepLow), unit.Seconds(j.StepHigh))
	if code != http.StatusOK || !strings.Contains(body, `id="band"`) || !strings.Contains(body, want) || !strings.Contains(body, "in the band)") ||
		!strings.Contains(body, "band for "+j.Runs) {
		t.Errorf("GET / = %d; want the band section with %q, its runs (%s) and the days to train in the band", code, want, j.Runs)
	}
}

// TestPageShowsHostMemory: a plan that offloads shows what it offloads
// beside the host memory it is held to (plan JSON's
// host_offloaded_per_chip_bytes and host_ram_per_chip_bytes); on a VM
// whose RAM the catalog does not publish (v4's ct4p-hightpu-4t) it says
// that this is not checked, and lists the plan's warning of it (review
// 119 #3: the page showed only "host memory N offloaded").
func TestPageShowsHostMemory(t *testing.T) {
	h := New(testConfig)
	for _, c := range []struct{ tpu, unchecked string }{{"v5p-8", ""}, {"v4-8", " (its VM's RAM is not published: not checked)"}} {
		o := plan.DefaultOptions()
		o.Model, o.TPU, o.Mesh, o.Remat, o.RematCustom = "llama3-8b", c.tpu, "fsdp=4", "custom", "decoder_layer_input=offload"
		req, err := plan.ParseRequest(o)
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.Search(req)
		if err != nil {
			t.Fatal(err)
		}
		j := p.JSON(nil)
		want := fmt.Sprintf("host memory %s offloaded of %s", unit.Bytes(j.HostOffloaded), unit.Bytes(j.HostRAM))
		warned := false
		if c.unchecked != "" {
			want = fmt.Sprintf("host memory %s offloaded%s", unit.Bytes(j.HostOffloaded), c.unchecked)
			for _, w := range j.Warnings {
				warned = warned || strings.HasPrefix(w, "host RAM not checked: ")
			}
			if !warned || j.HostRAM != 0 {
				t.Fatalf("%s: the case does not hold: host RAM %v, warnings %q", c.tpu, j.HostRAM, j.Warnings)
			}
		}
		code, body := get(t, h, "/?"+queryOf(o))
		if code != http.StatusOK || j.HostOffloaded == 0 || !strings.Contains(body, want) {
			t.Errorf("%s: GET / = %d; want %q in the summary", c.tpu, code, want)
		}
		for _, w := range j.Warnings {
			if !strings.Contains(body, "<li>"+html.EscapeString(w)+"</li>") {
				t.Errorf("%s: GET / does not list the warning %q", c.tpu, w)
			}
		}
	}
}

// errorOf is the error of body, a JSON error object of the API, which
// starts with the schema version; a body that is none fails the test.
func errorOf(t *testing.T, target, body string) string {
	t.Helper()
	var e struct {
		Schema string `json:"schema"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Schema != schema.Version || e.Error == "" || !strings.HasPrefix(strings.TrimSpace(body), `{
  "schema"`) {
		t.Errorf("GET %s: %.300q is no JSON error object (%v)", target, body, err)
	}
	return e.Error
}

// TestServingPageLatenciesAtLoad: under a request rate the serving page
// shows the latencies the plan ranks the layouts and checks the SLOs by,
// at the load (inference.Request.Seen; the CLI's table heads them "at
// load"), not the idle server's: llama3-8b on v6e-8 at 20 requests/s of
// 2000+300 tokens, whose chosen layout's mean step is longer than its
// idle decode step.
func TestServingPageLatenciesAtLoad(t *testing.T) {
	code, body := get(t, New(testConfig), "/serving?model=llama3-8b&tpu=v6e-8&request_rate=20&prompt_len=2000&output_len=300&num_requests=50")
	if code != http.StatusOK {
		t.Fatalf("GET /serving at 20/s: %d\n%.500s", code, body)
	}
	_, js := get(t, New(testConfig), "/download/serving.json?model=llama3-8b&tpu=v6e-8&request_rate=20&prompt_len=2000&output_len=300&num_requests=50")
	var p struct {
		Layout struct {
			ITL     float64 `json:"inter_token_latency_s"`
			ITLSeen float64 `json:"itl_seen_s"`
			Step    float64 `json:"mean_step_s"`
		} `json:"layout"`
	}
	if err := json.Unmarshal([]byte(js), &p); err != nil || p.Layout.ITLSeen != p.Layout.Step || p.Layout.ITLSeen <= p.Layout.ITL {
		t.Fatalf("serving.json at 20/s: itl_seen_s %g, mean_step_s %g, inter_token_latency_s %g (%v); want the mean step, above the idle step",
			p.Layout.ITLSeen, p.Layout.Step, p.Layout.ITL, err)
	}
	seen := unit.Seconds(p.Layout.ITLSeen).String()
	if !strings.Contains(body, "ITL at load <b>"+seen+"</b>") || !strings.Contains(body, ">ITL at load</th>") {
		t.Errorf("the page does not show the ITL at the load (%s) in its summary and table header", seen)
	}
}

// TestPageNamesInChipLayout: review 163 #2 and #4 on the page. The
// default job, llama3-8b on tpu7x-8, is pure DP across chips with FSDP
// over each chip's two JAX devices (its tier says so, as plan's text and
// JSON do), and the tables give each row's layout in JAX devices,
// data=4,fsdp=2 for the chosen one, as export writes it.
func TestPageNamesInChipLayout(t *testing.T) {
	q := queryOf(plan.DefaultOptions())
	code, body := get(t, New(testConfig), "/?"+q)
	if code != http.StatusOK {
		t.Fatalf("GET /?%s = %d, want 200: %.500s", q, code, body)
	}
	for _, want := range []string{"[pure DP across chips, FSDP over each chip&#39;s 2 JAX devices]", "(data=4,fsdp=2 in JAX devices)", "in-chip collectives not costed"} {
		if !strings.Contains(body, want) {
			t.Errorf("default job's page lacks %q", want)
		}
	}
}
