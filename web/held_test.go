package web

import (
	"html"
	"net/http"
	"regexp"
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
			want := `Framework "` + c.framework + `", want any or maxtext or empty` // the form's label, as the downloads name their keys
			if code != c.code || c.code != http.StatusOK && !strings.Contains(body, want) {
				t.Errorf("GET %s&framework=%s = %d %.300q, want %d%s", path, c.framework, code, body, c.code, map[bool]string{true: " saying " + want}[c.code != http.StatusOK])
			}
		}
	}
}
