package web

import (
	"encoding/json"
	"html"
	"math"
	"net/http"
	"strings"
	"testing"
)

// TestBudgetTermBill: a commitment job longer than its term (Llama 3 8B,
// 10T tokens on one v6e-16 at cud-1y: 2.87 years) is billed whole terms
// on the budget page and in its JSON download. By hand: 3 terms × 16
// chips × 8760 h × $1.89 (budget/prices.csv's v6e cud-1y) = $794,707.20.
func TestBudgetTermBill(t *testing.T) {
	h := New(testConfig)
	q := "model=llama3-8b&tokens=10T&generations=v6e&modes=cud-1y&slice_chips=16&slices=1"
	code, body := get(t, h, "/budget?"+q)
	body = html.UnescapeString(body)
	for _, want := range []string{"<th>bill (whole terms)</th>", "bill (whole terms): what a commitment bills, its chips for every whole term the job takes",
		"1 × v6e-16 cud-1y: takes 2.87y, past one 1-year term: the commitment bills 3 whole terms, $795k"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET /budget?%s = %d, lacks %q", q, code, want)
		}
	}
	code, body = get(t, h, "/download/budget.json?"+q)
	var j struct {
		Rows []struct {
			Terms float64 `json:"commitment_terms"`
			Bill  float64 `json:"commitment_usd"`
			USD   float64 `json:"usd"`
		} `json:"rows"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &j) != nil || len(j.Rows) != 1 {
		t.Fatalf("GET /download/budget.json?%s = %d %.300s, want one row", q, code, body)
	}
	if r := j.Rows[0]; r.Terms != 3 || math.Abs(r.Bill-794707.20) > 0.01 || r.Bill < r.USD {
		t.Errorf("row: %g terms, $%.2f against the job's $%.2f; want 3 terms, $794707.20", r.Terms, r.Bill, r.USD)
	}
}

// TestBudgetWeighsTheBill is review 178's finding 3 on the page and in
// its download: under a $2M budget, the cud-3y and cud-1y rows of Llama 3
// 70B on 2T tokens on one v6e-256, whose job's chip-hours are under $2M,
// bill their whole terms, $8.21M and $4.24M (budget's
// TestBudgetWeighsTheBill by hand), and are dropped saying so; the page
// says which column the budget weighs.
func TestBudgetWeighsTheBill(t *testing.T) {
	h := New(testConfig)
	q := "model=llama3-70b&tokens=2T&generations=v6e&slices=1&modes=cud-1y,on-demand,cud-3y&budget=2M"
	code, body := get(t, h, "/budget?"+q)
	body = html.UnescapeString(body)
	for _, want := range []string{"the ranking, a budget and the Pareto front weigh what a row costs: a commitment's bill (whole terms), used or not, else its dollars",
		"dropped: 1 × v6e-256 cud-3y: bills $8.21M for a 3-year term, over the $2.00M budget",
		"dropped: 1 × v6e-256 cud-1y: bills $4.24M for a 1-year term, over the $2.00M budget"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET /budget?%s = %d, lacks %q", q, code, want)
		}
	}
	code, body = get(t, h, "/download/budget.json?"+q)
	var j struct {
		Rows []struct {
			Mode string `json:"mode"`
		} `json:"rows"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &j) != nil || len(j.Rows) != 1 || j.Rows[0].Mode != "on-demand" {
		t.Errorf("GET /download/budget.json?%s = %d %.300s, want the on-demand row alone", q, code, body)
	}
}
