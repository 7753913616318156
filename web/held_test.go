package web

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// yamlLayout is the layout a MaxText YAML download's comment names
// (export's layoutComment: "# layout SPEC, MFU …").
var yamlLayout = regexp.MustCompile(`(?m)^# layout (\S+), MFU`)

// pageLayout is the layout the page shows (its h2), and heldNote its note
// on the layout the downloads hold.
var (
	pageLayout = regexp.MustCompile(`<h2 id="layout" class="layout">[^<]*<code>([^<]+)</code>`)
	heldNote   = regexp.MustCompile(`<p class="note" id="dl-held">(.*)</p>`)
	tags       = regexp.MustCompile(`<[^>]+>`)
)

// TestMaxTextDownloadNamesItsLayout: the page's MaxText and xpk downloads
// plan as MaxText runs, so where the page's layout pipelines with 1F1B or
// interleaved 1F1B, which MaxText does not run, they hold MaxText's best,
// another layout, which the page gave under its own layout with no word
// (review of dcd4fab #9). The links and a note now name the layout the
// YAML holds, and say why MaxText cannot run the shown one; where MaxText
// runs the shown layout (no pipeline; a GPipe pipeline asked for) the
// YAML holds it and there is no note; where MaxText runs no layout of the
// job the note says there is no download, which is refused.
func TestMaxTextDownloadNamesItsLayout(t *testing.T) {
	h := New(testConfig)
	for _, c := range []struct {
		q    string
		held bool // the downloads hold another layout than the page's
		none bool // MaxText runs no layout of the job
	}{
		{"model=llama3-70b&tpu=v5p-32&global_batch=2Mitok", true, false}, // the page: fsdp=2,pipeline=2,context=4 under 1F1B
		{"model=llama3-8b&tpu=v5p-32&slices=2&global_batch=2Mitok", false, false},
		{"model=llama3-70b&tpu=v5p-32&global_batch=2Mitok&schedule=gpipe", false, false},
		{"model=llama3-405b&tpu=v4-128&slices=4&global_batch=2Mitok", false, true}, // the page: 1F1B over DCN; MaxText: none fits
	} {
		code, body := get(t, h, "/?"+c.q)
		m := pageLayout.FindStringSubmatch(body)
		if code != http.StatusOK || m == nil {
			t.Fatalf("GET /?%s = %d, no layout shown", c.q, code)
		}
		shown := html.UnescapeString(m[1])
		note := ""
		if n := heldNote.FindStringSubmatch(body); n != nil {
			note = html.UnescapeString(tags.ReplaceAllString(n[1], ""))
		}
		code, yaml := get(t, h, "/download/maxtext.yaml?"+c.q)
		if c.none {
			if code != http.StatusUnprocessableEntity || !strings.HasPrefix(note, "No MaxText YAML or xpk command: ") || !strings.Contains(note, "MaxText cannot compile this plan as it is") {
				t.Errorf("%s: download %d, note %q; want 422 and a note that there is no download and why the shown layout is not MaxText's", c.q, code, note)
			}
			continue
		}
		y := yamlLayout.FindStringSubmatch(yaml)
		if code != http.StatusOK || y == nil {
			t.Fatalf("GET /download/maxtext.yaml?%s = %d, no layout comment: %.300s", c.q, code, yaml)
		}
		held := y[1]
		switch {
		case (held != shown) != c.held:
			t.Errorf("%s: the page shows %s, the YAML holds %s; want them different: %v", c.q, shown, held, c.held)
		case !c.held && note != "":
			t.Errorf("%s: the YAML holds the layout shown, %s, and the page notes %q", c.q, shown, note)
		case c.held && (!strings.Contains(note, "hold MaxText's best layout, "+held+" (") || !strings.Contains(note, "not the layout shown: MaxText cannot compile this plan as it is") ||
			!strings.Contains(note, "1f1b")):
			t.Errorf("%s: the page shows %s, the YAML holds %s; the note %q does not name it and why", c.q, shown, held, note)
		case c.held && (!strings.Contains(body, "MaxText YAML of "+held+"</a>") || !strings.Contains(body, "xpk command of "+held+"</a>")):
			t.Errorf("%s: the download links do not name the layout they hold, %s", c.q, held)
		}
	}
}

// TestDownloadFramework: the MaxText and xpk downloads plan as MaxText
// runs, and a framework their query names that they cannot honour is
// refused, 400 naming it (by the form's label, as the downloads name
// their fields), the value and what is accepted: it was
// replaced by maxtext in silence (review of dcd4fab, the framework
// query). maxtext, any and none (the page's own values) download.
func TestDownloadFramework(t *testing.T) {
	h := New(testConfig)
	const q = "model=llama3-8b&tpu=v5p-8"
	for _, path := range []string{"/download/maxtext.yaml?" + q, "/download/xpk.sh?" + q + "&cluster=c"} {
		for _, c := range []struct {
			framework string
			code      int
		}{{"pytorch", http.StatusBadRequest}, {"MaxTexts", http.StatusBadRequest}, {"maxtext", http.StatusOK}, {"any", http.StatusOK}, {"", http.StatusOK}} {
			code, body := get(t, h, path+"&framework="+c.framework)
			want := `Framework "` + c.framework + `", want any, maxtext` // the form's label, as the downloads name their keys
			if code != c.code || c.code != http.StatusOK && !strings.Contains(body, want) {
				t.Errorf("GET %s&framework=%s = %d %.300q, want %d%s", path, c.framework, code, body, c.code, map[bool]string{true: " saying " + want}[c.code != http.StatusOK])
			}
		}
	}
}

// verifyJSON is plan.json's verify key, as far as the tests read it.
type verifyJSON struct {
	Available bool   `json:"available"`
	Held      string `json:"held_layout"`
	Notes     []string
	Commands  []struct {
		Args []string `json:"args"`
		Line string   `json:"line"`
	} `json:"commands"`
}

// planJSONVerify downloads plan.json for query q and reads its verify.
func planJSONVerify(t *testing.T, h http.Handler, q string) verifyJSON {
	t.Helper()
	code, body := get(t, h, "/download/plan.json?"+q)
	var j struct {
		Verify verifyJSON `json:"verify"`
	}
	if err := json.Unmarshal([]byte(body), &j); code != http.StatusOK || err != nil {
		t.Fatalf("GET /download/plan.json?%s = %d, %v: %.300s", q, code, err, body)
	}
	return j.Verify
}

// verifyHeld is the page's label over verify steps that are of the
// layout the MaxText YAML holds, not of the layout shown.
var verifyHeld = regexp.MustCompile(`<p class="note verify-held">(.*)</p>`)

// TestVerifyStepsAreOfTheDownload: where the page's MaxText YAML holds
// MaxText's best in place of the layout shown (a 1F1B pipeline), the
// verify section said only that MaxText cannot compile the shown plan,
// and gave no steps for the YAML the user downloads (review 119 #11). It
// now gives that layout's steps, labelled as such, and plan.json's verify
// has them with held_layout naming it: the same commands as the steps of
// the plan searched over what MaxText runs (framework maxtext, a second
// path to MaxText's best), whose page shows it with no label. Where the
// YAML holds the layout shown there is no label and no held_layout.
func TestVerifyStepsAreOfTheDownload(t *testing.T) {
	h := New(testConfig)
	for _, c := range []struct {
		q    string
		held bool
	}{
		{"model=llama3-70b&tpu=v5p-32&global_batch=2Mitok", true},
		{"model=llama3-70b&tpu=v5p-32&global_batch=2Mitok&schedule=gpipe", false},
	} {
		_, yaml := get(t, h, "/download/maxtext.yaml?"+c.q)
		y := yamlLayout.FindStringSubmatch(yaml)
		if y == nil {
			t.Fatalf("%s: the YAML names no layout: %.300s", c.q, yaml)
		}
		got, best := planJSONVerify(t, h, c.q), planJSONVerify(t, h, c.q+"&framework=maxtext")
		code, body := get(t, h, "/?"+c.q)
		label := ""
		if m := verifyHeld.FindStringSubmatch(body); m != nil {
			label = html.UnescapeString(tags.ReplaceAllString(m[1], ""))
		}
		lines := func(v verifyJSON) (l []string) {
			for _, c := range v.Commands {
				l = append(l, c.Line)
			}
			return l
		}
		switch {
		case code != http.StatusOK:
			t.Fatalf("GET /?%s = %d", c.q, code)
		case !c.held && (got.Held != "" || label != ""):
			t.Errorf("%s: the YAML holds the layout shown; verify's held_layout %q, label %q", c.q, got.Held, label)
		case !c.held:
		case !got.Available || got.Held != y[1] || !slices.Equal(lines(got), lines(best)) || best.Held != "":
			t.Errorf("%s: plan.json's verify: available %v, held_layout %q, commands %q; want the steps of the YAML's %s, those of framework maxtext's plan %q",
				c.q, got.Available, got.Held, lines(got), y[1], lines(best))
		case len(got.Notes) == 0 || !strings.Contains(got.Notes[0], "MaxText's best, "+y[1]+" ("):
			t.Errorf("%s: plan.json's verify notes %q do not say first whose steps they are", c.q, got.Notes)
		case !strings.Contains(label, "MaxText's best, "+y[1]+", not the layout shown: MaxText cannot compile this plan as it is") ||
			!strings.Contains(body, html.EscapeString(got.Commands[0].Line)) || !strings.Contains(strings.Join(got.Commands[0].Args, " "), " --mesh "+y[1]+" "):
			t.Errorf("%s: the page's verify section: label %q; want the YAML's %s named, and its export step %q", c.q, label, y[1], got.Commands[0].Line)
		}
	}
}

// frameworkSelect is the framework field's select on the page, whose
// options' values are what the form offers.
var frameworkSelect = regexp.MustCompile(`(?s)<select id="in-framework" name="framework"[^>]*>(.*?)</select>`)

// TestWebRefusesPyTorch: plan reads framework pytorch
// (plan.FrameworkPyTorch, for the command line's export pytorch), and the
// web, whose form offers any and maxtext, planned for it from the query:
// the page said the search kept to what the PyTorch export writes and
// linked MaxText and xpk downloads that refuse the query (review 135 #6).
// The page, plan.json and the API refuse it, 400 naming the field, the
// value and the form's choices; every choice the page's select offers
// (and any, in any case) plans.
func TestWebRefusesPyTorch(t *testing.T) {
	h := New(testConfig)
	const q = "model=llama3-8b&tpu=v5p-8"
	_, page := get(t, h, "/?"+q)
	m := frameworkSelect.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("GET /?%s: no framework select:\n%.300s", q, page)
	}
	var offered []string
	for _, v := range regexp.MustCompile(`<option value="([^"]*)"`).FindAllStringSubmatch(m[1], -1) {
		offered = append(offered, v[1])
	}
	if want := []string{"", "maxtext"}; !slices.Equal(offered, want) {
		t.Errorf("the form offers frameworks %q, want %q (README: the web form and its query take any and maxtext)", offered, want)
	}
	for _, f := range append(offered, "any", "MaxText") {
		if code, body := get(t, h, "/download/plan.json?"+q+"&framework="+url.QueryEscape(f)); code != http.StatusOK {
			t.Errorf("GET plan.json framework=%q = %d, want 200: %.300s", f, code, body)
		}
	}
	for _, f := range []string{"pytorch", "PyTorch"} {
		// the page names the field by its label, plan.json (JSON) by its key
		for path, name := range map[string]string{"/?": "Framework", "/download/plan.json?": "framework"} {
			want := name + ` "` + f + `", want any, maxtext or empty`
			code, body := get(t, h, path+q+"&framework="+url.QueryEscape(f))
			var doc struct{ Error string }
			if json.Unmarshal([]byte(body), &doc) == nil {
				body = doc.Error // plan.json's error is the API's document
			}
			body = html.UnescapeString(body)
			if code != http.StatusBadRequest || !strings.Contains(body, want) || strings.Contains(body, "PyTorch/XLA") {
				t.Errorf("GET %s%s&framework=%q = %d, want 400 saying %q and no PyTorch plan:\n%.400s", path, q, f, code, want, body)
			}
		}
		code, body := post(t, h, `{"model": "llama3-8b", "tpu": "v5p-8", "framework": "`+f+`"}`)
		var doc struct{ Option, Error string }
		if err := json.Unmarshal([]byte(body), &doc); err != nil || code != http.StatusBadRequest || doc.Option != "framework" ||
			!strings.HasPrefix(doc.Error, `framework "`+f+`", want any, maxtext or empty`) {
			t.Errorf("POST /api/plan framework %q = %d %v, want 400 naming framework:\n%s", f, code, err, body)
		}
	}
}
