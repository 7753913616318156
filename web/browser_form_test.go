package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// pollTimeout is how long waitFor waits for the page: a guard against a
// hang, generous for a loaded machine running -race.
const pollTimeout = 60 * time.Second

// waitFor polls a JavaScript predicate in the page until it holds or
// pollTimeout passes.
func waitFor(ctx context.Context, what, expr string) error {
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(pollTimeout), chromedp.WithPollingInterval(20*time.Millisecond)))
	if err != nil {
		return &waitError{what, err}
	}
	return nil
}

type waitError struct {
	what string
	err  error
}

func (e *waitError) Error() string { return "waiting for " + e.what + ": " + e.err.Error() }

// retype empties a text field (as selecting its text does) and types s
// into it, as a user does: each key fires the field's input event.
func retype(sel, s string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelector(`+jsString(sel)+`).value = "", true)`))
			return err
		}),
		typeInto(sel, s))
}

// clickJS clicks the element sel with the page's own element.click(),
// waiting until there is one. chromedp.Click resolves the node first and
// clicks it by its id after: when the page redraws the element in between
// (a plan arriving redraws the pin button and the table) the id is gone
// and the click fails ("Could not find node with given id"), so a test
// flakes. Found and clicked in one evaluation, the click cannot race.
func clickJS(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		expr := `(function () { var e = document.querySelector(` + jsString(sel) + `); if (!e) { return false; } e.click(); return true; })()`
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(pollTimeout), chromedp.WithPollingInterval(20*time.Millisecond)))
		return err
	})
}

// typeInto focuses the field sel and types s into it as key events.
// chromedp.SendKeys is not used: it reads the node's attributes without
// the node's lock (chromedp v0.23.1 query.go, SendKeys) while the target's
// event loop writes them, a data race that -race reports whenever the
// page flags the field it types into.
func typeInto(sel, s string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.WaitVisible(chromedp.CSS(sel)),
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelector(`+jsString(sel)+`).focus(), true)`))
			return err
		}),
		chromedp.KeyEvent(s))
}

// choose picks an option of a select as the keyboard does, firing change.
func choose(ctx context.Context, id, value string) error {
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(function () { var s = document.getElementById(`+jsString(id)+`);
		s.focus(); s.value = `+jsString(value)+`; s.dispatchEvent(new Event("change", {bubbles: true})); return s.value === `+jsString(value)+`; })()`))
	return err
}

func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// TestBrowserForm drives the form in headless Chromium: it plans as the
// user types, without a click; the address holds the whole form and a
// reload brings it back; several bad fields are flagged at once; every
// control has a label and the keyboard reaches each.
// It is over 80 lines because it is one browser session whose steps each
// start from the page the previous one left.
func TestBrowserForm(t *testing.T) {
	ctx := newBrowser(t, browserDeadline)
	var pages, submits atomic.Int64
	h := New(browserConfig)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			pages.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	layout := `(document.getElementById("layout") ? document.getElementById("layout").textContent : "")`

	var url string
	t.Run("plans as the user types", func(t *testing.T) {
		// the first visit plans the defaults without a click
		err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#in-slices")))
		if err != nil {
			t.Fatal(err)
		}
		if err := waitFor(ctx, "the default plan", layout+`.indexOf("llama3-8b on 1 × tpu7x-8") >= 0`); err != nil {
			t.Fatal(err)
		}
		// change inputs: the plan follows, with no click on Plan
		before := pages.Load()
		if err := chromedp.Do(ctx, retype("#in-slices", "2")); err != nil {
			t.Fatal(err)
		}
		if err := choose(ctx, "in-remat", "full"); err != nil {
			t.Fatal(err)
		}
		if err := choose(ctx, "in-optimizer_offload", "true"); err != nil {
			t.Fatal(err)
		}
		if err := waitFor(ctx, "the plan on 2 slices with full remat", layout+`.indexOf("on 2 × tpu7x-8") >= 0 &&
			document.querySelector(".summary").textContent.indexOf("remat full") >= 0`); err != nil {
			got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](layout))
			t.Fatalf("%v; layout %q", err, got)
		}
		if pages.Load() == before {
			t.Error("the plan changed without a request to the server")
		}
		if submits.Load() != 0 {
			t.Error("the form was submitted")
		}
		var err2 error
		if url, err2 = chromedp.Run(ctx, chromedp.Location()); err2 != nil {
			t.Fatal(err2)
		}
		for _, want := range []string{"slices=2", "remat=full", "optimizer_offload=true", "model=llama3-8b", "tpu=tpu7x-8"} {
			if !strings.Contains(url, want) {
				t.Errorf("the address %q lacks %s", url, want)
			}
		}
		screenshot(t, ctx, "live-form")
	})

	t.Run("address round trip", func(t *testing.T) {
		was, err := chromedp.Run(ctx, chromedp.Evaluate[string](layout))
		if err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#layout"))); err != nil {
			t.Fatal(err)
		}
		state, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`["in-slices", "in-remat", "in-optimizer_offload", "in-tpu"].map(function (id) { return document.getElementById(id).value; })`))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(state, " ") != "2 full true tpu7x-8" {
			t.Errorf("after a reload the form holds %v, want [2 full true tpu7x-8]", state)
		}
		again, err := chromedp.Run(ctx, chromedp.Evaluate[string](layout))
		if err != nil || again != was {
			t.Errorf("after a reload the plan is %q, want %q (%v)", again, was, err)
		}
	})

	t.Run("every bad field at once", func(t *testing.T) {
		err := chromedp.Do(ctx, retype("#in-slices", "two"), retype("#in-seq", "-5"), retype("#in-hbm_headroom", "1.5"))
		if err != nil {
			t.Fatal(err)
		}
		if err := choose(ctx, "in-attention", "dot_product"); err != nil { // a good change among the bad
			t.Fatal(err)
		}
		// The answer to the last keystroke is the one to read: an answer to
		// an earlier one (a field half typed) can flag three fields too.
		const flaggedJS = `Array.from(document.querySelectorAll(".field.bad")).map(function (f) {
			var input = f.querySelector("input, select, textarea"), e = f.querySelector("p.error");
			return f.id + (input.getAttribute("aria-invalid") === "true" && e && input.getAttribute("aria-errormessage") === e.id ? " " + e.textContent : " unmarked");
		})`
		if err := waitFor(ctx, "the headroom of 1.5 flagged", `document.getElementById("in-hbm_headroom").value === "1.5" &&
			(document.getElementById("error-hbm_headroom") || {textContent: ""}).textContent.indexOf("1.5") >= 0`); err != nil {
			n, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](flaggedJS))
			t.Fatalf("%v; flagged %v", err, n)
		}
		flagged, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](flaggedJS))
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"field-seq Sequence length -5", "field-slices Slices: \"two\", want a whole number", "field-hbm_headroom HBM headroom 1.5, want a fraction"}
		if len(flagged) != len(want) {
			t.Errorf("flagged %q, want the three of %q", flagged, want)
		}
		for i, w := range want {
			if i >= len(flagged) || !strings.HasPrefix(flagged[i], w) {
				t.Errorf("flagged %q, want each of %q in form order", flagged, want)
				break
			}
		}
		if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#layout").length`)); err != nil || n != 0 {
			t.Errorf("a plan shows beside the errors (%d, %v)", n, err)
		}
		screenshot(t, ctx, "bad-fields")
		// fixing them clears every flag
		if err := chromedp.Do(ctx, retype("#in-slices", "1"), retype("#in-seq", "0"), retype("#in-hbm_headroom", "0.1")); err != nil {
			t.Fatal(err)
		}
		if err := waitFor(ctx, "the flags cleared and a plan", `document.querySelectorAll(".field.bad, [aria-invalid]").length === 0 && !!document.getElementById("layout")`); err != nil {
			state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.search + " | " + Array.from(document.querySelectorAll(".field.bad, [aria-invalid]")).map(function (f) { return f.id; }).join(",") + " | " + document.getElementById("results").textContent.slice(0, 300)`))
			t.Fatalf("%v: %s", err, state)
		}
	})

	t.Run("labels and keyboard", func(t *testing.T) {
		// every control has a visible label tied to it, and help text
		unlabelled, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("input:not([type=hidden]), select, textarea, button")).filter(function (c) {
			if (c.tagName === "BUTTON") { return c.textContent.trim() === ""; }
			var l = c.id && document.querySelector('label[for="' + c.id + '"]');
			var help = c.getAttribute("aria-describedby") && document.getElementById(c.getAttribute("aria-describedby"));
			return !(l && l.textContent.trim() !== "" && c.labels.length === 1 && help && help.textContent.indexOf("default: ") >= 0);
		}).map(function (c) { return c.name || c.id || c.outerHTML.slice(0, 60); })`))
		if err != nil {
			t.Fatal(err)
		}
		if len(unlabelled) > 0 {
			t.Errorf("controls without a label or help naming the default: %v", unlabelled)
		}

		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#job input, #job select, #job textarea").length`))
		if err != nil || n < 29 {
			t.Errorf("%d controls on the form (%v), want one per plan option (28) and the spec", n, err)
		}
		// Tab walks every enabled control of the form (open the folded
		// group first, as a keyboard user does with Enter on its summary)
		// from the top of a freshly loaded page
		if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#layout"))); err != nil {
			t.Fatal(err)
		}
		// every chart, the page's and package chart's, is an image with a name
		unnamed, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("figure.chart svg")).filter(function (s) {
			return s.getAttribute("role") !== "img" || !s.getAttribute("aria-label"); }).map(function (s) { return s.closest("figure").dataset.chart; })`))
		if err != nil || len(unnamed) > 0 {
			t.Errorf("charts without role img and a name: %v (%v)", unnamed, err)
		}
		if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("figure.chart svg").length`)); err != nil || n < 6 {
			t.Errorf("%d charts on the reloaded page (%v), want the bars and the scaling charts", n, err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.getElementById("group-Advanced").open = true)`)); err != nil {
			t.Fatal(err)
		}
		want, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#job input, #job select, #job textarea, #job button")).filter(function (c) {
			return !c.disabled && c.offsetParent !== null; }).map(function (c) { return c.id; })`))
		if err != nil {
			t.Fatal(err)
		}
		reached := map[string]bool{}
		for range len(want) + 4 {
			if err := chromedp.Do(ctx, chromedp.KeyEvent("\t")); err != nil {
				t.Fatal(err)
			}
			id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id`))
			if err != nil {
				t.Fatal(err)
			}
			reached[id] = true
		}
		for _, id := range want {
			if !reached[id] {
				t.Errorf("Tab never reaches #%s", id)
			}
		}
		if ext, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](foreign)); err != nil || len(ext) > 0 {
			t.Errorf("the page loaded %v from elsewhere (%v); want nothing", ext, err)
		}
	})
}

// chartTextsCut lists the chart texts outside their SVG's box.
const chartTextsCut = `(function () {
		var out = [];
		document.querySelectorAll("figure.chart svg").forEach(function (svg) {
			var box = svg.getBoundingClientRect(), name = svg.closest("figure").dataset.chart;
			svg.querySelectorAll("text").forEach(function (t) {
				var b = t.getBoundingClientRect();
				if (t.textContent.trim() === "") { return; }
				if (b.left < box.left - 0.5 || b.right > box.right + 0.5 || b.top < box.top - 0.5 || b.bottom > box.bottom + 0.5) {
					out.push(name + ": " + t.textContent);
				}
			});
		});
		return out;
	})()`

// pageOverflow lists the elements that overflow the page sideways.
const pageOverflow = `Array.from(document.querySelectorAll("body *")).filter(function (e) {
		var b = e.getBoundingClientRect();
		return b.width > 0 && b.right > document.documentElement.clientWidth + 0.5;
	}).map(function (e) { return e.tagName + "#" + e.id + "." + e.className; }).slice(0, 5)`

// TestBrowserCharts: on a multislice plan with long layout names, at 1280
// and 1920 px wide, every text of every chart lies inside its SVG's box
// (no label cut), the page's own bars write their values and the
// usable-HBM line's label, and nothing overflows the page sideways.
func TestBrowserCharts(t *testing.T) {
	ctx := newBrowser(t, browserDeadline)
	srv := httptest.NewServer(New(browserConfig))
	t.Cleanup(srv.Close)
	// one page, laid out at each width
	err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 1000),
		chromedp.Navigate(srv.URL+"/?model=llama3-8b&tpu=v6e-16&slices=2"), chromedp.WaitVisible(chromedp.CSS("#layout")))
	if err != nil {
		t.Fatal(err)
	}
	for _, width := range []int64{1280, 1920} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 1000)); err != nil {
			t.Fatal(err)
		}
		bad, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](chartTextsCut))
		if err != nil {
			t.Fatal(err)
		}
		if len(bad) > 0 {
			t.Errorf("at %d px, chart texts outside their SVG: %q", width, bad)
		}
		over, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](pageOverflow))
		if err != nil || len(over) > 0 {
			t.Errorf("at %d px, elements overflow the page: %v (%v)", width, over, err)
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`["memory", "phases", "step", "mfu"].map(function (n) {
			var s = document.querySelector('figure[data-chart="' + n + '"] svg');
			return s ? n + " " + s.querySelectorAll("text.value").length + " " + (s.querySelector("text.ref-label") ? s.querySelector("text.ref-label").textContent : "") : n + " missing";
		})`))
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range got {
			f := strings.Fields(g)
			if len(f) < 2 || f[1] == "missing" || f[1] == "0" || (f[0] == "memory" || f[0] == "phases") && !strings.Contains(g, "usable HBM") {
				t.Errorf("at %d px: %q, want values on the bars (and the usable HBM line labelled)", width, g)
			}
		}
		screenshot(t, ctx, fmt.Sprintf("charts-%d", width))
	}
}

// TestBrowserCompare: pin a plan, change the TPU, pin the second; the two
// show side by side (a column each, a bar each in the overlaid charts),
// the address carries the pins across a reload, and unpin removes one.
func TestBrowserCompare(t *testing.T) {
	ctx := newBrowser(t, browserDeadline)
	srv := httptest.NewServer(New(browserConfig))
	t.Cleanup(srv.Close)
	heads := `Array.from(document.querySelectorAll("#compare th.pin-head")).map(function (h) { return h.textContent; })`
	bars := `document.querySelectorAll('#compare figure[data-chart="compare-step"] text.value').length`
	err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/?model=llama3-8b&tpu=tpu7x-8"), chromedp.WaitVisible(chromedp.CSS("#pin")),
		clickJS("#pin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, "one pinned plan", `document.querySelectorAll("#compare th.pin-head").length === 1`); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, retype("#in-tpu", "v5p-8")); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, "the plan on v5p-8", `(document.getElementById("layout") || {textContent: ""}).textContent.indexOf("v5p-8") >= 0`); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, clickJS("#pin")); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, "two pinned plans", `document.querySelectorAll("#compare th.pin-head").length === 2`); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		// the pins are planned again and drawn after the page shows: wait
		// for both heads and both bars before reading them
		if err := waitFor(ctx, when+": two pins drawn", `document.querySelectorAll("#compare th.pin-head").length === 2 && `+bars+` === 2`); err != nil {
			t.Fatal(err)
		}
		hs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](heads))
		if err != nil {
			t.Fatal(err)
		}
		if len(hs) != 2 || !strings.Contains(hs[0], "tpu7x-8") || !strings.Contains(hs[1], "v5p-8") {
			t.Errorf("%s: pinned %q, want the tpu7x-8 plan then the v5p-8 one", when, hs)
		}
		if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](bars)); err != nil || n != 2 {
			t.Errorf("%s: the overlaid step chart has %d bars (%v), want 2", when, n, err)
		}
	}
	check("after pinning")
	screenshot(t, ctx, "compare")
	url, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(url, "pin=") != 2 {
		t.Errorf("the address %q does not carry two pins", url)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#compare"))); err != nil {
		t.Fatal(err)
	}
	check("after a reload")
	if err := chromedp.Do(ctx, clickJS(`button.unpin[data-index="1"]`)); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, "one pin left", `document.querySelectorAll("#compare th.pin-head").length === 1 && document.querySelector("#compare th.pin-head").textContent.indexOf("v5p-8") >= 0`); err != nil {
		t.Fatal(err)
	}
}
