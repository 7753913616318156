package web

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strings"
	"testing"

	"shardlab/plan"
)

// TestPagePublishedRuns is review 163's finding 3 on the web: the plan
// page lists validate's published run of the plan's very job beside the
// pick (llama3-405b on 2 × v6e-256: tpu-recipes' 149.482 tokens/s per
// device, trillium/Llama3.1-405B-MaxText/README.md @c8cfe2f6) and its
// error, as plan --json gives them (validate.Beside, which owns them; its
// tests hold the numbers to validate's table), and marks Llama 4
// Maverick's on v5p-256 outside the band; a job with none (llama3-8b on
// v5p-32) shows no list, and plan.json then has no published_runs. Each
// run gives the pick against its prediction and its published rate.
func TestPagePublishedRuns(t *testing.T) {
	h := New(testConfig)
	for _, c := range []struct {
		q, id   string
		outside bool
	}{
		{"model=llama3-405b&tpu=v6e-256&slices=2", "v6e-llama3.1-405b-2x256", false},
		{"model=llama4-maverick&tpu=v5p-256", "v5p-llama4-maverick-256", true},
		{"model=llama3-8b&tpu=v5p-32", "", false},
	} {
		code, body := get(t, h, "/?"+c.q)
		if code != http.StatusOK {
			t.Fatalf("GET /?%s = %d", c.q, code)
		}
		code, raw := get(t, h, "/download/plan.json?"+c.q)
		var doc struct {
			Published []plan.PublishedRunJSON `json:"published_runs"`
		}
		if err := json.Unmarshal([]byte(raw), &doc); code != http.StatusOK || err != nil {
			t.Fatalf("GET plan.json?%s = %d, %v", c.q, code, err)
		}
		page := html.UnescapeString(tags.ReplaceAllString(body, ""))
		if c.id == "" {
			if doc.Published != nil || strings.Contains(body, `class="published"`) {
				t.Errorf("%s: a job with no published run shows %+v", c.q, doc.Published)
			}
			continue
		}
		if len(doc.Published) != 1 || doc.Published[0].ID != c.id || doc.Published[0].OutsideBand != c.outside {
			t.Fatalf("%s: plan.json published_runs = %+v, want %s (outside the band %v)", c.q, doc.Published, c.id, c.outside)
		}
		r := doc.Published[0]
		want := c.id + ": " + r.Layout + ", remat " + r.Remat
		if !strings.Contains(page, want) || !strings.Contains(page, "error "+signed(r.Error)) || strings.Contains(page, "outside the band above") != c.outside {
			t.Errorf("%s: the page does not list %q with error %s (outside the band: %v):\n%s", c.q, want, signed(r.Error), c.outside, page)
		}
		// Review 166 #2: the pick against the run as predicted, then as
		// published, and why the search did not pick it, as plan.json says.
		cmp := signed(r.PickAgainstPredicted) + " against this run's predicted, " + signed(r.PickAgainstPublished) + " against its published"
		if !strings.Contains(page, cmp) || (len(r.NotPicked) > 0) != strings.Contains(page, "the search did not pick it: "+strings.Join(r.NotPicked, "; ")) {
			t.Errorf("%s: the page lacks %q or the reasons %q:\n%s", c.q, cmp, r.NotPicked, page)
		}
	}
}

// signed is a fraction as the page spells it signed: +39.4%.
func signed(f float64) string { return fmt.Sprintf("%+.1f%%", 100*f) }
