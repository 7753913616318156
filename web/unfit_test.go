package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestUnfitMeshIs422: review 140 #4. llama3-70b under the fixed layout
// fsdp=4 on v5p-8 needs about 281 GiB a chip of 95 (its 70.55e9
// parameters' fp32 weights and two Adam moments, 12 B each, over 4 chips
// alone are 197.1 GiB), so shardlab plan --json prints the plan ("fits": false) and exits 1,
// while the API answered it 200, as if it ran. The API and the plan.json
// download answer 422 with the same plan, as the MaxText download answers
// 422; a layout that fits is still 200.
func TestUnfitMeshIs422(t *testing.T) {
	h := New(testConfig)
	const model, tpu = "llama3-70b", "v5p-8"
	query := "model=" + model + "&tpu=" + tpu + "&mesh=" + url.QueryEscape("fsdp=4")
	type answer struct {
		Schema string  `json:"schema"`
		Fits   *bool   `json:"fits"`
		Error  *string `json:"error"`
		Memory struct {
			Total int64 `json:"total_bytes"`
		} `json:"hbm_used_per_chip"`
		Usable int64            `json:"hbm_usable_capacity_bytes"`
		Verify *json.RawMessage `json:"verify"`
	}
	check := func(what string, code int, body string, verify bool) {
		t.Helper()
		var a answer
		if err := json.Unmarshal([]byte(body), &a); err != nil {
			t.Fatalf("%s: %d, not JSON: %v\n%.300s", what, code, err, body)
		}
		if code != http.StatusUnprocessableEntity || a.Fits == nil || *a.Fits || a.Error != nil || a.Schema != "shardlab/v4" {
			t.Errorf("%s = %d, fits %v, error %v; want 422 with the plan (schema shardlab/v4, fits false) and no error:\n%.400s", what, code, a.Fits, a.Error, body)
		}
		// the plan's own figures: over the usable HBM by more than the
		// 197 GiB of weights and moments above less the 95 GiB a v5p chip
		// has
		if over := a.Memory.Total - a.Usable; over < (197-95)<<30 {
			t.Errorf("%s: %d bytes used of %d usable, want over by at least 102 GiB", what, a.Memory.Total, a.Usable)
		}
		if (a.Verify != nil) != verify {
			t.Errorf("%s: verify given %v, want %v", what, a.Verify != nil, verify)
		}
	}
	code, body := post(t, h, `{"model": "`+model+`", "tpu": "`+tpu+`", "mesh": "fsdp=4"}`)
	check("POST /api/plan fsdp=4", code, body, false)
	code, body = get(t, h, "/download/plan.json?"+query)
	check("GET /download/plan.json fsdp=4", code, body, true)
	// the MaxText download refuses the same plan with 422, as before
	if code, body := get(t, h, "/download/maxtext.yaml?"+query); code != http.StatusUnprocessableEntity || !strings.Contains(body, "does not fit") {
		t.Errorf("GET /download/maxtext.yaml fsdp=4 = %d %q, want 422: does not fit", code, body)
	}
	// a fixed layout that fits: llama3-8b, 8.03e9 parameters
	if code, body := post(t, h, `{"model": "llama3-8b", "tpu": "`+tpu+`", "mesh": "fsdp=4"}`); code != http.StatusOK || !strings.Contains(body, `"fits": true`) {
		t.Errorf("POST /api/plan llama3-8b fsdp=4 = %d, want 200 and fits:\n%.300s", code, body)
	}
	if code, _ := get(t, h, "/download/plan.json?model=llama3-8b&tpu="+tpu+"&mesh="+url.QueryEscape("fsdp=4")); code != http.StatusOK {
		t.Errorf("GET /download/plan.json llama3-8b fsdp=4 = %d, want 200", code)
	}
}
