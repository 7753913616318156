package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"shardlab/web"
)

// webTest is the server the tests ask: the default but for its waits (a
// loaded CI machine outlasts the default 30 s Timeout; web's testConfig).
var webTest = web.Config{QueueWait: time.Minute, Timeout: 2 * time.Minute}

// TestAPIEqualsPlanJSON: POST /api/plan prints what plan --json prints for
// the same request, and answers 422 where plan exits 1: a fixed layout
// that does not fit (review 140 #4), which plan prints and exits 1 on.
func TestAPIEqualsPlanJSON(t *testing.T) {
	h := web.New(webTest)
	for _, tc := range []struct {
		body string
		args []string
	}{
		{`{"model": "llama3-70b", "tpu": "v5p-8", "mesh": "fsdp=4"}`, []string{"--model", "llama3-70b", "--tpu", "v5p-8", "--mesh", "fsdp=4"}},
		{`{"model": "llama3-8b", "tpu": "tpu7x-8"}`, []string{"--model", "llama3-8b", "--tpu", "tpu7x-8"}},
		{`{"model": "llama3-70b", "tpu": "tpu7x-128", "slices": 2, "top": 3}`, []string{"--model", "llama3-70b", "--tpu", "tpu7x-128", "--slices", "2", "--top", "3"}},
		{`{"model": "llama3-70b", "tpu": "tpu7x-128", "slices": 2, "seq": 1024, "max_global_batch": "256", "dcn_gbps": 25, "top": 3}`,
			[]string{"--model", "llama3-70b", "--tpu", "tpu7x-128", "--slices", "2", "--seq", "1024", "--max-global-batch", "256", "--dcn-gbps", "25", "--top", "3"}},
	} {
		want, errOut, code := runCmd(append([]string{"plan", "--json"}, tc.args...)...)
		status := map[int]int{0: http.StatusOK, 1: http.StatusUnprocessableEntity}[code]
		if status == 0 || code == 1 && !strings.Contains(errOut, "does not fit") {
			t.Fatalf("plan --json %s: exit %d: %s", strings.Join(tc.args, " "), code, errOut)
		}
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/api/plan", strings.NewReader(tc.body))
		r.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, r)
		if rec.Code != status {
			t.Fatalf("POST /api/plan %s = %d, want %d as plan --json exits %d: %s", tc.body, rec.Code, status, code, rec.Body)
		}
		if got := rec.Body.String(); got != want {
			t.Errorf("POST /api/plan %s differs from plan --json %s:\n%s\nwant\n%s", tc.body, strings.Join(tc.args, " "), got, want)
		}
	}
}

func TestPlanChartFiles(t *testing.T) {
	dir := t.TempDir()
	html, svg, pngPath := filepath.Join(dir, "out.html"), filepath.Join(dir, "out.svg"), filepath.Join(dir, "out.png")
	// two slices: the Multislice batch rule's reason names --max-global-batch
	stdout, errOut, code := runCmd("plan", "--tpu", "tpu7x-8", "--slices", "2", "--html", html, "--svg", svg, "--png", pngPath)
	if code != 0 {
		t.Fatalf("plan --html --svg --png: exit %d: %s", code, errOut)
	}
	if want, _, _ := runCmd("plan", "--tpu", "tpu7x-8", "--slices", "2"); stdout != want {
		t.Error("plan --html changed what plan prints")
	}
	h, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	// the page's bars (HBM by component and by phase, step time, MFU),
	// the two scaling charts, and a pipeline's timeline when the chosen
	// layout has one
	want := 6
	if strings.Contains(stdout, "Layout: ") && strings.Contains(strings.SplitN(strings.SplitN(stdout, "Layout: ", 2)[1], "\n", 2)[0], "pipeline=") {
		want = 7
	}
	if got := strings.Count(string(h), "<svg"); got != want {
		t.Errorf("plan --html: %d charts, want %d", got, want)
	}
	if !strings.Contains(string(h), "--max-global-batch") {
		t.Error("plan --html: reasons should spell options as flags, as the CLI does")
	}
	s, err := os.ReadFile(svg)
	if err != nil || !bytes.Contains(s, []byte("<svg")) {
		t.Errorf("plan --svg: %v, %.100s", err, s)
	}
	p, err := os.ReadFile(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(p)); err != nil {
		t.Errorf("plan --png: %v", err)
	}
}

func TestPlanChartFilesRefused(t *testing.T) {
	dir := t.TempDir()
	fail(t, []string{"plan", "--tpu", "tpu7x-8", "--html", filepath.Join(dir, "no", "out.html")}, "--html", "does not exist")
	fail(t, []string{"plan", "--tpu", "tpu7x-8", "--svg", dir}, "--svg", "is a directory")
	fail(t, []string{"plan", "--tpu", "tpu7x-8", "--png", "/dev/null"}, "--png", "is a character device")
	// a name for another of the three formats (review 152: --png c/a.svg wrote a PNG into it)
	fail(t, []string{"plan", "--tpu", "tpu7x-8", "--png", filepath.Join(dir, "a.svg")}, "--png", "a .svg name for --png, which writes PNG", "--svg")
	fail(t, []string{"plan", "--tpu", "tpu7x-8", "--svg", filepath.Join(dir, "a.HTM")}, "--svg", "a .htm name", "--html")
	fail(t, []string{"plan", "--tpu", "tpu7x-8", "--html", filepath.Join(dir, "a.png")}, "--html", "a .png name", "--png")
	fail(t, []string{"export", "maxtext", "--html", filepath.Join(dir, "x.html")}, "-html", "not defined")
	if _, err := os.Stat(filepath.Join(dir, "no")); err == nil {
		t.Error("a refused plan --html created a directory")
	}
	if _, err := os.Stat(filepath.Join(dir, "a.svg")); err == nil {
		t.Error("a refused plan --png wrote its file")
	}
}

func TestWebFlags(t *testing.T) {
	fail(t, []string{"web", "--addr", "nope"}, "--addr", `"nope"`, "want host:port")
	fail(t, []string{"web", "--addr", "127.0.0.1:70000"}, "--addr", "want host:port")
	fail(t, []string{"web", "extra"}, "unexpected argument")
	// issue 26: exit 1 and two lines (a warning, then a DNS lookup of
	// 999.999.999.999); the address is read before listening
	for _, a := range []string{"999.999.999.999:1", "256.0.0.1:80", "1.2.3:80", "-host:80", "host_name:80", "[::1]:0x50", "127.0.0.1:+80", "127.0.0.1:1_0"} {
		fail(t, []string{"web", "--addr", a}, "web: --addr", strconv.Quote(a), "want host:port with an IP address or a host name")
	}
	// an address not on this machine (RFC 5737's TEST-NET-1) is bad
	// input too, in one line, with no warning before it
	fail(t, []string{"web", "--addr", "192.0.2.1:0"}, "web: --addr 192.0.2.1:0", "assign requested address")
	// an address in use is not bad input: exit 1
	ln := httptest.NewServer(http.NotFoundHandler())
	defer ln.Close()
	addr := strings.TrimPrefix(ln.URL, "http://")
	if _, errOut, code := runCmd("web", "--addr", addr); code != 1 || !strings.Contains(errOut, "--addr "+addr) {
		t.Errorf("web --addr %s (in use): exit %d, %q; want 1 naming the address", addr, code, errOut)
	}
}

// TestWebDownloadsEqualJSON: the serving and budget pages' JSON downloads
// are what inference --json and budget --json print for the same options,
// byte for byte: one parser (inference.ParseOptions, budget.ParseOptions)
// and one renderer behind both.
func TestWebDownloadsEqualJSON(t *testing.T) {
	h := web.New(webTest)
	for _, tc := range []struct {
		path string
		args []string
	}{
		{"/download/serving.json?model=llama3-8b&tpu=v6e-8&request_rate=5&weights=int8&kv_cache_dtype=fp8",
			[]string{"inference", "--model", "llama3-8b", "--tpu", "v6e-8", "--request-rate", "5", "--weights", "int8", "--kv-cache-dtype", "fp8"}},
		{"/download/serving.json?model=llama3-70b&tpu=tpu7x-8&max_model_len=8192&length_mix=uniform:100-2000&seed=7&num_requests=200",
			[]string{"inference", "--model", "llama3-70b", "--tpu", "tpu7x-8", "--max-model-len", "8192", "--length-mix", "uniform:100-2000", "--seed", "7", "--num-requests", "200"}},
		{"/download/budget.json?model=llama3-8b&tokens=100B&generations=v6e&modes=on-demand,spot&slice_chips=16&slices=1,2&spot_preemptions_per_hour=0.1",
			[]string{"budget", "--model", "llama3-8b", "--tokens", "100B", "--generations", "v6e", "--modes", "on-demand,spot", "--slice-chips", "16", "--slices", "1,2", "--spot-preemptions-per-hour", "0.1"}},
		// a configuration dropped with the planner's fixes: both say them in shardlab plan's flags
		{"/download/budget.json?model=llama3-8b&tokens=10B&generations=v6e,tpu7x&modes=on-demand&slice_chips=4&slices=1&price=tpu7x%3D5",
			[]string{"budget", "--model", "llama3-8b", "--tokens", "10B", "--generations", "v6e,tpu7x", "--modes", "on-demand", "--slice-chips", "4", "--slices", "1", "--price", "tpu7x=5"}},
		// review 152 #8: where budget exits 1 with its table empty, the
		// download answers 422 with the same document, "error" and
		// "fixes" included: over a deadline, with an unpriced
		// configuration that meets it, and with nothing priced
		{"/download/budget.json?model=llama3-8b&tokens=10B&generations=v6e&modes=on-demand&slice_chips=16&slices=1&deadline=20h",
			[]string{"budget", "--model", "llama3-8b", "--tokens", "10B", "--generations", "v6e", "--modes", "on-demand", "--slice-chips", "16", "--slices", "1", "--deadline", "20h"}},
		{"/download/budget.json?model=llama3-8b&tokens=10B&generations=v6e,tpu7x&modes=on-demand&slice_chips=16&slices=1&deadline=20h",
			[]string{"budget", "--model", "llama3-8b", "--tokens", "10B", "--generations", "v6e,tpu7x", "--modes", "on-demand", "--slice-chips", "16", "--slices", "1", "--deadline", "20h"}},
		{"/download/budget.json?model=llama3-8b&generations=v4&modes=cud-3y&slice_chips=16&slices=1",
			[]string{"budget", "--model", "llama3-8b", "--generations", "v4", "--modes", "cud-3y", "--slice-chips", "16", "--slices", "1"}},
	} {
		downloadIsCommand(t, h, tc.path, append(tc.args, "--json"))
	}
}

// downloadIsCommand checks that GET path on h answers what the command
// args prints, byte for byte: 200 where it exits 0, 422 where it exits 1
// (the job cannot run) with the document it prints, whose "error" is the
// line it prints on stderr.
func downloadIsCommand(t *testing.T, h http.Handler, path string, args []string) {
	t.Helper()
	want, errOut, code := runCmd(args...)
	status := map[int]int{0: http.StatusOK, 1: http.StatusUnprocessableEntity}[code]
	if status == 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut)
	}
	if code == 1 {
		var doc struct {
			Error string   `json:"error"`
			Fixes []string `json:"fixes"`
		}
		if err := json.Unmarshal([]byte(want), &doc); err != nil || doc.Fixes == nil || "shardlab: "+doc.Error+"\n" != errOut {
			t.Errorf("%v: exit 1, stderr %q; the document's error %q and fixes %v (%v), want the same line and a list", args, errOut, doc.Error, doc.Fixes, err)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != status || rec.Body.String() != want {
		t.Errorf("GET %s = %d, differs from %v (exit %d, want %d):\n%.600s\nwant:\n%.600s", path, rec.Code, args, code, status, rec.Body.String(), want)
	}
}

// TestWebExportDownloadsEqualExport: the plan page's MaxText and xpk
// downloads are what export maxtext and export xpk print for the same
// options, byte for byte: both plan as an export to MaxText does
// (export.MaxTextOptions, only what MaxText runs). Review defects100 #10:
// for llama3-8b on 2 × v5p-32 at 2 Mi tokens a step the page's search
// (every schedule) chose an interleaved pipeline and the download
// answered 422, while export maxtext wrote fsdp=2(dcn),fsdp=16.
//
// For llama3-70b on v5p-32 at 2 Mi tokens plan chooses a 1F1B pipeline,
// which MaxText cannot run: both hold MaxText's best, with the comment
// that says so (review 119 #11), the same in each.
func TestWebExportDownloadsEqualExport(t *testing.T) {
	h := web.New(webTest)
	for _, c := range []struct {
		q   string
		job []string
	}{
		{"model=llama3-8b&tpu=v5p-32&slices=2&global_batch=2Mitok", []string{"--model", "llama3-8b", "--tpu", "v5p-32", "--slices", "2", "--global-batch", "2Mitok"}},
		{"model=llama3-70b&tpu=v5p-32&global_batch=2Mitok", []string{"--model", "llama3-70b", "--tpu", "v5p-32", "--global-batch", "2Mitok"}},
	} {
		for _, tc := range []struct {
			path string
			args []string
		}{
			{"/download/maxtext.yaml?" + c.q, append([]string{"export", "maxtext"}, c.job...)},
			{"/download/xpk.sh?" + c.q + "&cluster=c&workload=w&base_docker_image=img",
				append([]string{"export", "xpk", "--cluster", "c", "--workload", "w", "--base-docker-image", "img"}, c.job...)},
		} {
			downloadIsCommand(t, h, tc.path, tc.args)
		}
	}
}
