package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"shardlab/plan"
)

// smallBudget is a budget that sweeps in well under a second: one
// generation, one mode, one slice size, two counts.
const smallBudget = "model=llama3-8b&tokens=100B&generations=v6e&modes=on-demand&slice_chips=16&slices=1,2"

// TestBudgetPage: the budget page shows the budget package's own table
// and the time-against-dollars chart; every bad field is flagged at once,
// each beside itself, with a 400.
func TestBudgetPage(t *testing.T) {
	h := New(Config{})
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
	if code, body := get(t, h, "/budget?model=llama9&tokens=1T"); code != http.StatusBadRequest || !strings.Contains(body, `id="error-model"`) {
		t.Errorf("GET /budget?model=llama9 = %d, want the model flagged", code)
	}
}

// TestBudgetJSON: the download is shardlab budget --json's result.
func TestBudgetJSON(t *testing.T) {
	h := New(Config{})
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
