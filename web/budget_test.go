package web

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"shardlab/budget"
	"shardlab/plan"
)

// smallBudget is a budget that sweeps in well under a second: one
// generation, one mode, one slice size, two counts.
const smallBudget = "model=llama3-8b&tokens=100B&generations=v6e&modes=on-demand&slice_chips=16&slices=1,2"

// TestBudgetPage: the budget page shows the budget package's own table
// and the time-against-dollars chart; every bad field is flagged at once,
// each beside itself, with a 400.
func TestBudgetPage(t *testing.T) {
	h := New(testConfig)
	code, body := get(t, h, "/budget?"+smallBudget)
	for _, want := range []string{`id="budget-result"`, "<svg", "time against dollars", "on the Pareto front", "v6e-16", "/download/budget.json?"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET /budget = %d, lacks %q", code, want)
		}
	}
	code, body = get(t, h, "/budget?"+strings.Replace(smallBudget, "tokens=100B", "tokens=-1", 1)+"&deadline=30&region=mars&seq=x")
	for _, f := range []string{"tokens", "deadline", "region", "seq"} {
		if code != http.StatusBadRequest || !strings.Contains(body, `id="error-`+f+`"`) {
			t.Errorf("GET /budget with four bad fields = %d, %s not flagged", code, f)
		}
	}
	if strings.Contains(body, `id="budget-result"`) {
		t.Error("a budget shows beside the errors")
	}
	code, body = get(t, h, "/budget?"+smallBudget+"&price=tpu7x%3D-1&chip_watts=NaN")
	for _, f := range []string{"price", "chip_watts"} {
		if code != http.StatusBadRequest || !strings.Contains(body, `id="error-`+f+`"`) {
			t.Errorf("GET /budget with a bad price and chip power = %d, %s not flagged", code, f)
		}
	}
	if code, body := get(t, h, "/budget?model=llama9&tokens=1T"); code != http.StatusBadRequest || !strings.Contains(body, `id="error-model"`) {
		t.Errorf("GET /budget?model=llama9 = %d, want the model flagged", code)
	}
}

// TestBudgetJSON: the download is shardlab budget --json's result.
func TestBudgetJSON(t *testing.T) {
	h := New(testConfig)
	code, body := get(t, h, "/download/budget.json?"+smallBudget)
	var j struct {
		Model string            `json:"model"`
		Rows  []json.RawMessage `json:"rows"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &j) != nil || j.Model != "llama3-8b" || len(j.Rows) == 0 {
		t.Errorf("GET /download/budget.json = %d %.300s, want the budget's JSON", code, body)
	}
}

// TestBudgetFormHasEveryOption: the budget form has a field for every
// option of budget.Options, and nothing else but the pasted spec.
func TestBudgetFormHasEveryOption(t *testing.T) {
	have := map[plan.Option]bool{}
	for _, l := range budgetLooks {
		have[l.option] = true
	}
	for o := range budgetForm.index {
		if !have[o] {
			t.Errorf("budget.Options has %s; the budget form has no field for it", o)
		}
	}
	for o := range have {
		if _, ok := budgetForm.index[o]; !ok && o != optionModelSpec {
			t.Errorf("the budget form has %s, which budget.Options lacks", o)
		}
	}
}

// TestBudgetRowLinksToItsPlan: each row's number links to the plan page
// for its configuration, and that page's best layout and step are the
// row's (one click from a point to the plan behind it); a pasted spec
// travels with the link.
func TestBudgetRowLinksToItsPlan(t *testing.T) {
	h := New(testConfig)
	for _, q := range []string{
		smallBudget + "&seq=4096&max_global_batch=256",
		"model=spec&model_spec=" + url.QueryEscape("name: tiny\nlayers: 4\nd_model: 1024\nheads: 8\nd_ff: 4096\nvocab: 32000\nseq_len: 2048\n") +
			"&tokens=10B&generations=v6e&modes=on-demand&slice_chips=16&slices=1",
	} {
		var res budget.Result
		code, body := get(t, h, "/download/budget.json?"+q)
		if code != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil || len(res.Rows) == 0 {
			t.Fatalf("GET /download/budget.json?%s = %d %.300s", q, code, body)
		}
		_, page := get(t, h, "/budget?"+q)
		links := regexp.MustCompile(`<a href="(/\?[^"]+)" title="the plan behind this row">1</a>`).FindStringSubmatch(page)
		if links == nil {
			t.Fatalf("GET /budget?%s: row 1 has no plan link", q)
		}
		link := html.UnescapeString(links[1])
		row := res.Rows[0]
		if code, page := get(t, h, link); code != http.StatusOK || !strings.Contains(page, row.Layout) {
			t.Errorf("GET %s = %d, lacks row 1's layout %s", link, code, row.Layout)
		}
		var p struct {
			AcceleratorTyp string `json:"accelerator_type"`
			Slices         int    `json:"slices"`
			Top            []struct {
				Layout string  `json:"layout"`
				StepS  float64 `json:"step_time_s"`
			} `json:"top"`
		}
		code, body = get(t, h, "/download/plan.json"+strings.TrimPrefix(link, "/"))
		if code != http.StatusOK || json.Unmarshal([]byte(body), &p) != nil || len(p.Top) == 0 {
			t.Fatalf("GET /download/plan.json for %s = %d %.300s", link, code, body)
		}
		if best := p.Top[0]; best.Layout != row.Layout || p.AcceleratorTyp != row.AcceleratorType || p.Slices != row.Slices || best.StepS != row.StepS {
			t.Errorf("%s: the plan is %s on %d × %s, step %g s; row 1 is %s on %d × %s, step %g s",
				link, best.Layout, p.Slices, p.AcceleratorTyp, best.StepS, row.Layout, row.Slices, row.AcceleratorType, row.StepS)
		}
	}
}

// TestBudgetDroppedNamesPlanPage: a configuration dropped for want of a
// layout is said with the planner's fixes in the plan page's words, its
// fields' labels, since the budget form has none of those options; the
// JSON download says them as budget --json does, shardlab plan's flags
// (defects100 #13).
func TestBudgetDroppedNamesPlanPage(t *testing.T) {
	h := New(Config{})
	const q = "model=llama3-8b&tokens=10B&generations=v6e&modes=on-demand&slice_chips=4&slices=1"
	_, body := get(t, h, "/budget?"+q)
	if want := "the plan page would run it with options budget does not sweep: " + label(plan.OptionPrecision) + " bf16: "; !strings.Contains(html.UnescapeString(body), want) {
		t.Errorf("GET /budget?%s lacks %q", q, want)
	}
	_, body = get(t, h, "/download/budget.json?"+q)
	if want := "shardlab plan would run it with options budget does not sweep: --precision bf16: "; !strings.Contains(body, want) {
		t.Errorf("GET /download/budget.json?%s lacks %q:\n%.2000s", q, want, body)
	}
}
