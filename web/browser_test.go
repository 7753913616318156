package web

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"shardlab/chart"
	"shardlab/plan"
)

// The browser tests drive Debian's chromium, headless, through chromedp.
// Without a browser they skip, unless SHARDLAB_REQUIRE_BROWSER=1 (which
// .ci/run sets) or CI is set: then they fail. SHARDLAB_CHROME names the
// browser's path. Screenshots go to testdata/artifacts (git-ignored).

// browserPath finds a Chromium, or fails or skips the test.
func browserPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SHARDLAB_CHROME"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium found (chromium, chromium-browser, google-chrome or headless-shell on PATH, or SHARDLAB_CHROME): " +
		"install Debian's chromium (apt-get install chromium), as .ci/run does"
	if os.Getenv("SHARDLAB_REQUIRE_BROWSER") == "1" || os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg + "; set SHARDLAB_REQUIRE_BROWSER=1 to fail instead")
	return ""
}

// browserDeadline bounds everything one browser test does: a guard
// against a hang, not a measure of speed (a loaded CI machine running
// -race takes seconds for one budget sweep), so it is generous.
const browserDeadline = 3 * time.Minute

// browserConfig is the server the browser tests drive: the default but
// for its waits. A live form sends a request a keystroke, and the
// searches its earlier keystrokes started keep their slots until they
// end; on a loaded machine under -race a budget sweep takes seconds, so
// the default five-second queue wait would answer a later request (a
// download) 503. The queue's own behaviour is tested in queue_test.go.
var browserConfig = Config{QueueWait: time.Minute, Timeout: 2 * time.Minute}

// testConfig is the server the other tests ask, but for those of the
// bounds themselves: the default but for its waits, browserConfig's. A
// plan of llama3-70b on two tpu7x-128 slices takes well under a second
// alone and took over the default 30 s Timeout (503) on a CI machine
// running some fifty jobs on two cores.
var testConfig = browserConfig

// newBrowser starts a headless Chromium for the test, with a deadline for
// everything the test does in it.
func newBrowser(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	path := browserPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-extensions", true),
		chromedp.WindowSize(1280, 1600),
	)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return bctx
}

// screenshot saves the whole page as testdata/artifacts/name.png.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	dir := filepath.Join("testdata", "artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), b, 0o644); err != nil {
		t.Error(err)
	}
}

// readmeShot saves the top of the page (the form, the layout and the
// first charts), scaled down, as testdata/artifacts/readme.png: README.md's
// screenshot (docs/web.png) is a copy of it.
func readmeShot(t *testing.T, ctx context.Context) {
	t.Helper()
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		r, err := chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{
			Format: page.CaptureScreenshotFormatPng, CaptureBeyondViewport: ptr(true),
			Clip: &page.Viewport{X: 0, Y: 0, Width: 1280, Height: 1580, Scale: 0.6}})
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join("testdata", "artifacts", "readme.png"), r.Data, 0o644)
	}))
	if err != nil {
		t.Errorf("README screenshot: %v", err)
	}
}

// drawnCharts counts the charts drawn on the page: an SVG laid out at a
// visible size with its paths.
const drawnCharts = `Array.from(document.querySelectorAll("figure.chart svg")).filter(function (s) {
	var b = s.getBoundingClientRect();
	return b.width > 100 && b.height > 100 && s.querySelectorAll("path, rect").length > 5;
}).length`

// foreign lists the resources the page loaded from anywhere but origin.
const foreign = `performance.getEntriesByType("resource").map(function (e) { return e.name; }).filter(function (n) {
	return n.indexOf(location.origin + "/") !== 0;
})`

// TestBrowser drives the page in headless Chromium: the default job and its
// charts, sorting, hover, the MaxText download, a shared URL, a bad spec,
// and the offline report. It is over 80 lines because it is one browser
// session whose steps each start from the page the previous one left.
func TestBrowser(t *testing.T) {
	ctx := newBrowser(t, browserDeadline)
	h := New(browserConfig)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	// load the page and submit the default job
	var layout, shared string
	t.Run("default job", func(t *testing.T) {
		err := chromedp.Do(ctx,
			chromedp.Navigate(srv.URL+"/"),
			chromedp.WaitVisible(chromedp.CSS("#submit")),
			clickJS("#submit"),
			chromedp.WaitVisible(chromedp.CSS("#layout")),
		)
		if err != nil {
			t.Fatal(err)
		}
		// the first visit plans the defaults and the click plans them
		// again: wait for the answer to settle rather than read a #layout
		// the second answer is replacing
		if err := waitFor(ctx, "the plan after the click", `document.getElementById("busy").textContent === "plan updated" && !!document.getElementById("layout")`); err != nil {
			t.Fatal(err)
		}
		if layout, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#layout"))); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(layout, "llama3-8b") || !strings.Contains(layout, "data=4") {
			t.Errorf("layout %q, want llama3-8b with data=4", layout)
		}
		// the scaling charts follow the plan (GET /charts)
		waitFor(ctx, "the scaling charts", "("+drawnCharts+") === 6")
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](drawnCharts))
		if err != nil {
			t.Fatal(err)
		}
		if n != 6 {
			t.Errorf("%d charts drawn, want 6 (memory, phases, step, MFU, slices, batch)", n)
		}
		if ext, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](foreign)); err != nil || len(ext) > 0 {
			t.Errorf("the page loaded %v from elsewhere (%v); want nothing", ext, err)
		}
		spec, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("in-model_spec").offsetParent === null`))
		if err != nil || !spec {
			t.Errorf("with a catalog model the spec box shows (hidden %v, %v)", spec, err)
		}
		if shared, err = chromedp.Run(ctx, chromedp.Location()); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(shared, "model=llama3-8b") || !strings.Contains(shared, "tpu=tpu7x-8") {
			t.Errorf("the URL %q does not hold the form's state", shared)
		}
		screenshot(t, ctx, "default-job")
		readmeShot(t, ctx)
	})

	t.Run("sort", func(t *testing.T) {
		mfus := `Array.from(document.querySelectorAll("table.top tbody tr")).map(function (r) { return parseFloat(r.cells[6].dataset.v); })`
		err := chromedp.Do(ctx, clickJS("table.top th:nth-child(7)"))
		if err != nil {
			t.Fatal(err)
		}
		vs, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](mfus))
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(vs); i++ {
			if vs[i] < vs[i-1] {
				t.Errorf("after a click on MFU the column reads %v, want ascending", vs)
				break
			}
		}
		if len(vs) < 2 {
			t.Errorf("top table has %d rows, want several to sort", len(vs))
		}
	})

	// hover: the tip reads a bar's value off the chart's axis
	t.Run("hover", func(t *testing.T) {
		const hover = `(function () {
			var bar = document.querySelector('figure[data-chart="memory"] svg rect.seg');
			var b = bar.getBoundingClientRect();
			bar.dispatchEvent(new MouseEvent("mousemove", {bubbles: true, clientX: b.left + b.width / 2, clientY: b.top + b.height / 2}));
			var tip = document.getElementById("tip");
			return tip.hidden ? "" : tip.textContent;
		})()`
		text, err := chromedp.Run(ctx, chromedp.Evaluate[string](hover))
		if err != nil {
			t.Fatal(err)
		}
		// the chosen layout's weights, in GiB, as the API gives them
		_, body := post(t, h, `{}`)
		var j plan.JSON
		if err := json.Unmarshal([]byte(body), &j); err != nil {
			t.Fatal(err)
		}
		want := float64(j.Memory.Weights) / (1 << 30)
		t.Logf("hover tip %q; weights %.4g GiB", text, want)
		var got float64
		if _, err := fmt.Sscanf(strings.TrimPrefix(text, "weights: "), "%g", &got); err != nil || math.Abs(got-want) > 0.03*want {
			t.Errorf("hover on the chosen layout's weights shows %q, want about %.3g (GiB)", text, want)
		}
	})

	t.Run("download each export", func(t *testing.T) {
		for _, dl := range []struct{ id, path, want string }{
			{"#dl-maxtext", "/download/maxtext.yaml?", "ici_data_parallelism: 4"},
			{"#dl-xpk", "/download/xpk.sh?", "xpk workload create"},
			{"#dl-json", "/download/plan.json?", `"schema": "shardlab/v4"`},
		} {
			got := download(t, ctx, dl.id)
			code, want := get(t, h, dl.path+strings.SplitN(shared, "?", 2)[1])
			if code != http.StatusOK || got != want {
				t.Errorf("%s: downloaded %q, want %q (%d)", dl.id, got, want, code)
			}
			if !strings.Contains(got, dl.want) {
				t.Errorf("%s: %q lacks %q", dl.id, got, dl.want)
			}
		}
	})

	t.Run("shared URL", func(t *testing.T) {
		err := chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(shared), chromedp.WaitVisible(chromedp.CSS("#layout")))
		if err != nil {
			t.Fatal(err)
		}
		again, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#layout")))
		if err != nil {
			t.Fatal(err)
		}
		if again != layout {
			t.Errorf("the shared URL shows %q, want %q", again, layout)
		}
	})

	t.Run("bad model", func(t *testing.T) {
		err := chromedp.Do(ctx,
			chromedp.Navigate(srv.URL+"/"),
			chromedp.WaitVisible(chromedp.CSS("#in-model")),
			chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
				_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(function () { var m = document.getElementById("in-model");
					m.value = "spec"; m.dispatchEvent(new Event("change")); return true; })()`))
				return err
			}),
			chromedp.WaitVisible(chromedp.CSS("#in-model_spec")),
			typeInto("#in-model_spec", "layers: -1\n"),
			clickJS("#submit"),
			chromedp.WaitVisible(chromedp.CSS("#field-model #error-model")),
		)
		if err != nil {
			t.Fatal(err)
		}
		// the page checks the form as it is typed: wait for the answer to
		// the whole spec, not one to a keystroke of it
		if err := waitFor(ctx, "the error for the whole spec", `(function () { var e = document.getElementById("error-model");
			return e !== null && e.textContent.indexOf("layers") >= 0; })()`); err != nil {
			t.Fatal(err)
		}
		msg, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#error-model")))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(msg, "Model ") || !strings.Contains(msg, "layers") {
			t.Errorf("error next to Model: %q, want the spec's fault", msg)
		}
		screenshot(t, ctx, "bad-model")
	})

	t.Run("report offline", func(t *testing.T) {
		r, err := plan.ParseRequest(plan.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.Search(r)
		if err != nil {
			t.Fatal(err)
		}
		charts, skipped, err := chart.All(p)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "out.html")
		f, err := os.Create(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteReport(f, Report{Plan: p, Charts: charts, Skipped: skipped}); err != nil {
			t.Fatal(err)
		}
		f.Close()
		srv.Close() // offline: nothing serves the page
		if err := chromedp.Do(ctx, chromedp.Navigate("file://"+file), chromedp.WaitVisible(chromedp.CSS("#layout"))); err != nil {
			t.Fatal(err)
		}
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](drawnCharts))
		if err != nil {
			t.Fatal(err)
		}
		if n != len(charts)+2 || n != 6 {
			t.Errorf("report: %d charts drawn, want %d (the page's memory, phases, step and MFU bars, and chart's slices and batch)", n, len(charts)+2)
		}
		if ext, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`performance.getEntriesByType("resource").map(function (e) { return e.name; })`)); err != nil || len(ext) > 0 {
			t.Errorf("the report loaded %v (%v); want nothing", ext, err)
		}
		screenshot(t, ctx, "report")
	})
}

func ptr[T any](v T) *T { return &v }

// download clicks the link sel and returns the file the browser saved.
func download(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	dir := t.TempDir()
	progress := chromedp.Events(ctx, browser.DownloadProgress)
	err := chromedp.Do(ctx,
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
				Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: ptr(true)})
			return err
		}),
		chromedp.Click(chromedp.CSS(sel)),
	)
	if err != nil {
		t.Fatal(err)
	}
	for ev, err := range progress {
		if err != nil {
			t.Fatal(err)
		}
		if ev.State == browser.DownloadProgressStateCanceled {
			t.Fatalf("%s: download canceled", sel)
		}
		if ev.State == browser.DownloadProgressStateCompleted {
			b, err := os.ReadFile(filepath.Join(dir, ev.GUID))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
	t.Fatalf("%s: no download", sel)
	return ""
}
