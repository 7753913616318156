package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"shardlab/inference"
	"shardlab/internal/braces"
	"shardlab/web"
)

// TestServingRangesAreOneText: a serving option's value that is no
// number is refused in the words of its range as inference.Accepted
// gives it, by the CLI's flag and by the web page's query alike
// (review171: the web said only "want a whole number" where the CLI
// said "a whole number from 1 to 65536"); each front end spells the
// options a note names its own way.
func TestServingRangesAreOneText(t *testing.T) {
	h := web.New(webTest)
	for f := range reflect.TypeFor[inference.Options]().Fields() {
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		r, ok := inference.Accepted(key)
		if !ok {
			continue
		}
		_, errOut, code := runCmd("inference", fieldFlag(key), "1e400x")
		if want := "want " + braces.Spell(r.Want(), fieldFlag, nil); code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("%s 1e400x: exit %d, %q; want 2 and %q", fieldFlag(key), code, errOut, want)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/download/serving.json?"+key+"=1e400x", nil))
		var e struct{ Error string }
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Code != http.StatusBadRequest {
			t.Errorf("web %s=1e400x: %d %v %.200s", key, rec.Code, err, rec.Body)
			continue
		}
		// the download names options by their keys
		if want := key + `: "1e400x", want ` + braces.Spell(r.Want(), func(k string) string { return k }, nil); !strings.Contains(e.Error, want) {
			t.Errorf("web %s=1e400x: %q, want %q", key, e.Error, want)
		}
	}
}
