package web

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserBudget drives the budget page in headless Chromium with a
// small sweep (one generation, one mode): a changed input sweeps again
// without a click and the address follows; the chart and the ranked
// table show; a bad field is flagged beside itself.
func TestBrowserBudget(t *testing.T) {
	ctx := newBrowser(t, browserDeadline)
	srv := httptest.NewServer(New(browserConfig))
	t.Cleanup(srv.Close)
	heading := `(document.querySelector("#budget-result h1") ? document.querySelector("#budget-result h1").textContent : "")`
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/budget?"+smallBudget), chromedp.WaitVisible(chromedp.CSS("#budget-result"))); err != nil {
		t.Fatal(err)
	}
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[string](heading)); err != nil || got != "llama3-8b on 1e+11 tokens" {
		t.Fatalf("the budget is titled %q (%v), want llama3-8b on 1e+11 tokens", got, err)
	}
	if err := chromedp.Do(ctx, retype("#in-tokens", "200B")); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, "the budget for 200B tokens", heading+` === "llama3-8b on 2e+11 tokens"`); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](heading))
		t.Fatalf("%v; heading %q", err, got)
	}
	url, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.Contains(url, "/budget?") || !strings.Contains(url, "tokens=200B") {
		t.Errorf("the address %q (%v) lacks tokens=200B", url, err)
	}
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`[document.querySelectorAll("#budget-result figure.chart svg").length,
		document.querySelectorAll("#budget-result tr.pareto").length]`))
	if err != nil || len(shown) != 2 || shown[0] != 1 || shown[1] < 1 {
		t.Errorf("the budget shows %v charts and Pareto rows (%v), want 1 chart and at least one Pareto row", shown, err)
	}
	screenshot(t, ctx, "budget")
	if got := download(t, ctx, "#dl-budget-json"); !strings.Contains(got, `"schema": "shardlab/v4"`) {
		t.Errorf("#dl-budget-json: the download %.200q lacks %s", got, `"schema": "shardlab/v4"`)
	}

	if err := chromedp.Do(ctx, retype("#in-deadline", "30")); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, "the deadline flagged", `!!document.querySelector("#field-deadline.bad #error-deadline") &&
		document.getElementById("in-deadline").getAttribute("aria-invalid") === "true" && !document.getElementById("budget-result")`); err != nil {
		t.Fatal(err)
	}
	msg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("error-deadline").textContent`))
	if err != nil || !strings.Contains(msg, "in d, h or m") {
		t.Errorf("the deadline's error reads %q (%v), want what is accepted", msg, err)
	}
}
