package web

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserServing drives the serving page in headless Chromium: the
// first visit plans the defaults; a changed input changes the plan and
// the address without a click; the charts and the vllm serve line show;
// two bad fields are flagged at once, each beside itself, and fixing
// them brings the plan back.
func TestBrowserServing(t *testing.T) {
	ctx := newBrowser(t, browserDeadline)
	srv := httptest.NewServer(New(browserConfig))
	t.Cleanup(srv.Close)
	summary := `(document.getElementById("serving-summary") ? document.getElementById("serving-summary").textContent : "")`
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/serving"), chromedp.WaitVisible(chromedp.CSS("#in-prompt_len"))); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, "the default serving plan", `!!document.getElementById("layout") && document.getElementById("layout").textContent.indexOf("llama3-70b on tpu7x-8") >= 0`); err != nil {
		t.Fatal(err)
	}
	if err := choose(ctx, "in-weights", "fp8"); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, retype("#in-prompt_len", "2048")); err != nil {
		t.Fatal(err)
	}
	// the page answers each keystroke: wait for the answer to the whole
	// prompt length, which the simulation's lengths show
	sim := `(document.getElementById("serving-sim") || {textContent: ""}).textContent.indexOf("fixed 2048+1024 lengths") >= 0`
	if err := waitFor(ctx, "the plan with fp8 weights and 2048-token prompts", summary+`.indexOf("weights fp8") >= 0 && `+sim); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](summary))
		t.Fatalf("%v; summary %q", err, got)
	}
	url, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/serving?", "weights=fp8", "prompt_len=2048"} {
		if !strings.Contains(url, want) {
			t.Errorf("the address %q lacks %s", url, want)
		}
	}
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[document.querySelectorAll("figure.chart svg").length + " charts",
		document.getElementById("vllm-serve").textContent.indexOf("--quantization") >= 0 || document.getElementById("vllm-serve").textContent.indexOf("vllm serve") === 0 ? "serve line" : "no serve line",
		document.querySelectorAll("#serving-layouts tbody tr").length > 0 ? "layouts" : "no layouts",
		document.getElementById("serving-sim").textContent.indexOf("simulated (vllm scheduler, fixed 2048+1024 lengths") === 0 ? "simulation" : "no simulation"]`))
	if err != nil || strings.Join(shown, ",") != "2 charts,serve line,layouts,simulation" {
		t.Errorf("the serving plan shows %v (%v), want 2 charts, the serve line, the layouts and the simulation", shown, err)
	}
	screenshot(t, ctx, "serving")
	if got := download(t, ctx, "#dl-serving-json"); !strings.Contains(got, `"vllm_serve_command"`) {
		t.Errorf("#dl-serving-json: the download %.200q lacks %s", got, `"vllm_serve_command"`)
	}

	if err := chromedp.Do(ctx, retype("#in-prompt_len", "-1"), retype("#in-gpu_memory_utilization", "2")); err != nil {
		t.Fatal(err)
	}
	flaggedJS := `Array.from(document.querySelectorAll(".field.bad")).map(function (f) {
		var input = f.querySelector("input, select"), e = f.querySelector("p.error");
		return f.id + (input.getAttribute("aria-invalid") === "true" && e ? " " + e.textContent : " unmarked");
	})`
	// the page answers each keystroke, and an answer to a value half
	// typed (the utilization field empty) also flags two fields: wait
	// for the answer to the whole values, which names the 2
	if err := waitFor(ctx, "two fields flagged", flaggedJS+`.length === 2 && `+flaggedJS+`[1].indexOf("utilization 2,") >= 0`); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](flaggedJS))
		t.Fatalf("%v; flagged %q", err, got)
	}
	flagged, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](flaggedJS))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"field-prompt_len Prompt length -1, want 1 to", "field-gpu_memory_utilization Memory utilization 2, want a number in (0, 1]"}
	for i, w := range want {
		if i >= len(flagged) || !strings.HasPrefix(flagged[i], w) {
			t.Errorf("flagged %q, want each of %q in form order", flagged, want)
			break
		}
	}
	if err := chromedp.Do(ctx, retype("#in-prompt_len", "1024"), retype("#in-gpu_memory_utilization", "0.9")); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, "the flags cleared and a plan", `document.querySelectorAll(".field.bad").length === 0 && !!document.getElementById("serving-summary")`); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserServingMixLeavesLengths: a length mix other than fixed
// disables the prompt and output lengths, and the form sends them only
// without one: the form sent its lengths always, and the server replaced
// them with the mix's mean request in silence (review of dcd4fab #3; the
// server now refuses both, TestServingLengthsBesideMix). Back to fixed,
// the typed length is sent and planned again.
func TestBrowserServingMixLeavesLengths(t *testing.T) {
	ctx := newBrowser(t, browserDeadline)
	srv := httptest.NewServer(New(browserConfig))
	t.Cleanup(srv.Close)
	sim := func(lengths string) string {
		return `(document.getElementById("serving-sim") || {textContent: ""}).textContent.indexOf("simulated (vllm scheduler, ` + lengths + ` lengths") === 0 && document.querySelectorAll(".field.bad").length === 0`
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/serving?model=llama3-8b&tpu=v6e-8&num_requests=50&prompt_len=2048"), chromedp.WaitVisible(chromedp.CSS("#serving-sim"))); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, "the plan of 2048-token prompts", sim("fixed 2048+1024")); err != nil {
		t.Fatal(err)
	}
	state := `[location.search, String(document.getElementById("in-prompt_len").disabled), String(document.getElementById("in-output_len").disabled)]`
	for _, c := range []struct {
		mix, lengths string
		sent         bool // prompt_len=2048 in the address
	}{{"uniform:100-300", "uniform 100-300", false}, {"fixed", "fixed 2048+1024", true}} {
		if err := chromedp.Do(ctx, retype("#in-length_mix", c.mix)); err != nil {
			t.Fatal(err)
		}
		if err := waitFor(ctx, "the plan of length mix "+c.mix, sim(c.lengths)); err != nil {
			got, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(".field.bad p.error")).map(function (e) { return e.textContent; })`))
			t.Fatalf("%v; flagged %q", err, got)
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](state))
		if err != nil {
			t.Fatal(err)
		}
		disabled := strconv.FormatBool(!c.sent)
		if len(got) != 3 || strings.Contains(got[0], "prompt_len=2048") != c.sent || got[1] != disabled || got[2] != disabled {
			t.Errorf("length mix %s: address, prompt and output lengths disabled = %q; want prompt_len=2048 sent %v, lengths disabled %s", c.mix, got, c.sent, disabled)
		}
	}
}

// TestBrowserServingBudgetLayout: the serving and budget pages at 1280
// and 1920 px wide: no chart text outside its SVG, nothing overflowing
// the page sideways.
func TestBrowserServingBudgetLayout(t *testing.T) {
	ctx := newBrowser(t, browserDeadline)
	srv := httptest.NewServer(New(browserConfig))
	t.Cleanup(srv.Close)
	for _, page := range []struct{ path, ready string }{
		{"/serving?model=llama3-70b&tpu=tpu7x-8&itl_slo=40ms", "#serving-summary"},
		{"/budget?" + smallBudget, "#budget-result"},
	} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 1000), chromedp.Navigate(srv.URL+page.path), chromedp.WaitVisible(chromedp.CSS(page.ready))); err != nil {
			t.Fatal(err)
		}
		for _, width := range []int64{1280, 1920} {
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 1000)); err != nil {
				t.Fatal(err)
			}
			if bad, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](chartTextsCut)); err != nil || len(bad) > 0 {
				t.Errorf("%s at %d px: chart texts outside their SVG: %q (%v)", page.path, width, bad, err)
			}
			if over, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](pageOverflow)); err != nil || len(over) > 0 {
				t.Errorf("%s at %d px: elements overflow the page: %v (%v)", page.path, width, over, err)
			}
		}
	}
}
