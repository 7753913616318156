package web

import (
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"shardlab/plan"
)

// TestNoPlanInWords: a job that cannot run is refused in words, most
// common reason first, never as "×count"; the API's JSON says the same.
func TestNoPlanInWords(t *testing.T) {
	h := New(testConfig)
	code, body := get(t, h, "/?model=llama3-405b&tpu=v5e-4")
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("GET = %d, want 422", code)
	}
	i := strings.Index(body, `id="error"`)
	if i < 0 {
		t.Fatalf("no general error: %.1000s", body)
	}
	line, _, _ := strings.Cut(body[i:], "</p>")
	if !strings.Contains(line, "no layout can run this job on v5litepod-4") || !strings.Contains(line, " layouts do not fit in HBM") || strings.Contains(line, "×") {
		t.Errorf("error %q, want the rejected layouts counted in words", line)
	}
	code, body = post(t, h, `{"model": "llama3-405b", "tpu": "v5e-4"}`)
	var e apiError
	if err := json.Unmarshal([]byte(body), &e); err != nil || code != http.StatusUnprocessableEntity || !strings.Contains(e.Error, "layouts do not fit in HBM") || strings.Contains(e.Error, "×") {
		t.Errorf("POST = %d %s, want 422 in words", code, body)
	}
	// the fixes plan finds keep plan's wording
	o := plan.DefaultOptions()
	o.Model, o.TPU = "llama3-70b", "tpu7x-8"
	r, err := plan.ParseRequest(o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = plan.Search(r)
	none, ok := err.(*plan.NoPlanError)
	if !ok {
		t.Fatalf("llama3-70b on tpu7x-8: %v, want a NoPlanError", err)
	}
	got := none.Phrase(label)
	if !strings.HasPrefix(got, "no layout can run this job on ") || strings.Contains(got, "×") {
		t.Errorf("in words: %q", got)
	}
}

// TestAllBadFieldsAtOnce: a request with several mistakes flags each of
// them, on the page (an error next to each field) and in the API (one
// entry per key in "errors"), where before only the first was named.
func TestAllBadFieldsAtOnce(t *testing.T) {
	h := New(testConfig)
	bad := map[string]string{ // option: a part of its error
		"slices": "want a whole number", "seq": "-1", "remat": "bogus", "hbm_headroom": "fraction", "top": "want a whole number",
		"attention": "want flash or dot_product", "dcn_gbps": "want a decimal number", "example_cost": "duration",
	}
	code, body := get(t, h, "/?model=llama3-8b&slices=x&seq=-1&remat=bogus&hbm_headroom=2&top=1.5&attention=slow&dcn_gbps=0x10&example_cost=soon")
	if code != http.StatusBadRequest {
		t.Errorf("GET = %d, want 400", code)
	}
	for opt, want := range bad {
		i := strings.Index(body, `id="error-`+opt+`"`)
		if i < 0 {
			t.Errorf("no error next to %s", opt)
			continue
		}
		line, _, _ := strings.Cut(body[i:], "</p>")
		if !strings.Contains(line, want) {
			t.Errorf("error next to %s: %q, want %q", opt, line, want)
		}
		if !strings.Contains(body, `id="field-`+opt+`" `) || !strings.Contains(body, `class="field bad" id="field-`+opt+`"`) {
			t.Errorf("field %s not marked bad", opt)
		}
	}
	if n := strings.Count(body, `class="field bad"`); n != len(bad) {
		t.Errorf("%d fields marked bad, want %d", n, len(bad))
	}
	code, body = post(t, h, `{"slices": "x", "seq": -1, "remat": "bogus", "hbm_headroom": 2, "top": 1.5, "attention": "slow", "dcn_gbps": "fast", "example_cost": "soon"}`)
	var e apiError
	if err := json.Unmarshal([]byte(body), &e); err != nil || code != http.StatusBadRequest {
		t.Fatalf("POST = %d %s, want 400", code, body)
	}
	got := map[string]bool{}
	for _, fe := range e.Errors {
		got[fe.Option] = true
	}
	for opt := range bad {
		if !got[opt] {
			t.Errorf("API errors %+v lack %s", e.Errors, opt)
		}
	}
	if len(e.Errors) != len(bad) || e.Option != e.Errors[0].Option {
		t.Errorf("API: %d errors, option %q; want %d, the first's", len(e.Errors), e.Option, len(bad))
	}
	// a good request still plans
	if code, body := post(t, h, `{"seq": 2048}`); code != http.StatusOK {
		t.Errorf("POST good = %d %.300s", code, body)
	}
}

// TestFormHasEveryOption: the form has a field for each of plan's options
// and nothing else but the pasted spec, of the option's type, starting at
// plan.DefaultOptions: what the form shows is plan's request definition.
func TestFormHasEveryOption(t *testing.T) {
	seen := map[plan.Option]bool{}
	for _, f := range planForm.fields {
		if seen[f.Option] {
			t.Errorf("option %s twice on the form", f.Option)
		}
		seen[f.Option] = true
		if f.Option != optionModelSpec && f.index == nil {
			t.Errorf("field %s sets no option of plan.Options", f.Option)
		}
		if f.Label == "" || f.Group == "" || f.Kind == "" {
			t.Errorf("field %s: label %q, group %q, kind %q", f.Option, f.Label, f.Group, f.Kind)
		}
	}
	for _, o := range plan.AllOptions() {
		if !seen[o] {
			t.Errorf("plan option %s has no field on the form", o)
		}
	}
	if len(seen) != len(plan.AllOptions())+1 {
		t.Errorf("%d fields, want plan's %d options and the pasted spec", len(seen), len(plan.AllOptions()))
	}
	// the defaults read back as plan.DefaultOptions
	o, _, bad := planForm.options("", DefaultConfig(), nil)
	if len(bad) > 0 {
		t.Fatalf("defaults refused: %v", bad)
	}
	if got, want := valuesOf(o), valuesOf(plan.DefaultOptions()); !equalValues(got, want) {
		t.Errorf("an empty form reads %v, want plan's defaults %v", got, want)
	}
	// every option's value round-trips through the form
	x := plan.DefaultOptions()
	x.Slices, x.DCNGbps, x.OptimizerOffload, x.CausalFLOPs, x.ExampleCost, x.Topology = 2, 12.5, true, false, 3e6, "4x4"
	q := url.Values{}
	for k, v := range valuesOf(x) {
		q.Set(string(k), v)
	}
	back, _, bad := planForm.options(q.Encode(), DefaultConfig(), nil)
	if len(bad) > 0 || !equalValues(valuesOf(back), valuesOf(x)) {
		t.Errorf("round trip: %v (%v), want %v", valuesOf(back), bad, valuesOf(x))
	}
}

func equalValues(a, b formValues) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestScalingLater: the script's page (header X-Shardlab-Scaling: later)
// has the plan and its bars but leaves the scaling charts, which search
// the plan again, to GET /charts, which gives them for the same query.
func TestScalingLater(t *testing.T) {
	h := New(testConfig)
	q := "model=llama3-8b&tpu=tpu7x-8"
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/?"+q, nil)
	r.Header.Set(headerScaling, "later")
	h.ServeHTTP(rec, r)
	body := rec.Body.String()
	if rec.Code != http.StatusOK || !strings.Contains(body, `id="layout"`) || !strings.Contains(body, `data-src="/charts?`) {
		t.Fatalf("later page = %d, want the plan and a slot for the scaling charts: %.500s", rec.Code, body)
	}
	for _, name := range []string{"memory", "phases", "step", "mfu"} {
		if !strings.Contains(body, `data-chart="`+name+`"`) {
			t.Errorf("later page lacks the %s chart", name)
		}
	}
	if strings.Contains(body, `data-chart="slices"`) {
		t.Error("later page drew the scaling charts")
	}
	code, frag := get(t, h, "/charts?"+q)
	if code != http.StatusOK || !strings.Contains(frag, `data-chart="slices"`) || !strings.Contains(frag, `data-chart="batch"`) || strings.Contains(frag, "<html") {
		t.Errorf("GET /charts = %d, want a fragment with the slices and batch charts: %.300s", code, frag)
	}
	if code, msg := get(t, h, "/charts?slices=x"); code != http.StatusBadRequest || !strings.Contains(msg, "Slices") {
		t.Errorf("GET /charts with a bad field = %d %q, want 400 naming it", code, msg)
	}
}

// TestComparePins: pinned plans show side by side, each its column and a
// bar in each overlaid chart, its figures those of its own plan; a pin
// that cannot plan shows its error in its column; more than MaxPins is a
// 400 naming the limit.
func TestComparePins(t *testing.T) {
	h := New(testConfig)
	q1, q2 := "model=llama3-8b&tpu=tpu7x-8", "model=llama3-8b&tpu=v5p-8&remat=full"
	pins := "&pin=" + url.QueryEscape(q1) + "&pin=" + url.QueryEscape(q2)
	code, body := get(t, h, "/?"+q1+pins)
	if code != http.StatusOK {
		t.Fatalf("GET with pins = %d", code)
	}
	if n := strings.Count(body, `class="pin-head"`); n != 2 {
		t.Errorf("%d pinned columns, want 2", n)
	}
	for _, q := range []string{q1, q2} {
		_, api := post(t, h, `{"model": "llama3-8b", "tpu": "`+map[string]string{q1: "tpu7x-8", q2: "v5p-8"}[q]+`"`+map[string]string{q1: "", q2: `, "remat": "full"`}[q]+`}`)
		var j plan.JSON
		if err := json.Unmarshal([]byte(api), &j); err != nil {
			t.Fatal(err)
		}
		// the page escapes the tier's apostrophe ("each chip's 2 JAX devices")
		if !strings.Contains(body, "<code>"+j.Layout.Spec+"</code> ["+html.EscapeString(j.Tier)+"]") {
			t.Errorf("the compare table lacks %s's layout %s", q, j.Layout.Spec)
		}
	}
	for _, c := range []string{"compare-memory", "compare-step", "compare-mfu"} {
		i := strings.Index(body, `data-chart="`+c+`"`)
		if i < 0 {
			t.Errorf("no %s chart", c)
			continue
		}
		fig, _, _ := strings.Cut(body[i:], "</figure>")
		if n := strings.Count(fig, `class="value"`); n != 2 {
			t.Errorf("%s: %d bars, want 2", c, n)
		}
	}
	code, body = get(t, h, "/?"+q1+"&pin="+url.QueryEscape("model=nope"))
	if code != http.StatusOK || !strings.Contains(body, "Model &#34;nope&#34;: want a catalog model") {
		t.Errorf("a bad pin: %d, want its error in its column", code)
	}
	many := strings.Repeat("&pin="+url.QueryEscape(q1), MaxPins+1)
	if code, body := get(t, h, "/?"+q1+many); code != http.StatusBadRequest || !strings.Contains(body, "5 plans pinned, want at most 4") {
		t.Errorf("5 pins = %d, want 400 naming the limit", code)
	}
}

// TestComparePinsShareTheDeadline: pins whose searches outlast the
// request's deadline show the timeout in their columns, and the page
// answers within about one deadline, not one per pin.
func TestComparePinsShareTheDeadline(t *testing.T) {
	h := New(Config{Timeout: time.Millisecond})
	pin := "&pin=" + url.QueryEscape("model=llama3-70b&tpu=v5p-128&slices=4")
	start := time.Now()
	_, body := get(t, h, "/?model=llama3-8b"+strings.Repeat(pin, MaxPins))
	if n := strings.Count(body, "was abandoned"); n < MaxPins {
		t.Errorf("%d pins abandoned at the deadline, want %d", n, MaxPins)
	}
	t.Logf("answered in %v", time.Since(start))
}
