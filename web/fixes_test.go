package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// apiDoc is the API's JSON error object as a client reads it, with each
// error's keys as given (to tell a missing option from an empty one).
type apiDoc struct {
	Error  string           `json:"error"`
	Fixes  []string         `json:"fixes"`
	Option *string          `json:"option"`
	Errors []map[string]any `json:"errors"`
}

func decodeAPIDoc(t *testing.T, what, body string) apiDoc {
	t.Helper()
	var d apiDoc
	if err := json.Unmarshal([]byte(body), &d); err != nil || d.Fixes == nil || d.Errors == nil {
		t.Fatalf("%s: body %.300s (%v), want the API's error object with fixes and errors", what, body, err)
	}
	return d
}

// TestNoLayoutJSONFixes: a job no layout runs is answered 422 with the
// changes under which it would run as `fixes`, as shardlab's --json error
// document lists them (README, JSON schema) but spelt as the web spells
// options, by their JSON keys (request_rate, not --request-rate); each
// fix is the one the error's own text gives after "it fits with" / "it
// would run with", and the error concerns no one option, so its entry in
// errors has no option key (it was ""). The fixes' starts are the CLI's
// for the same jobs (cmd/shardlab's TestJSONErrorDocument and review 128
// #11: --request-rate 4.76, --precision bf16, --optimizer-offload) with
// flags spelt as keys.
func TestNoLayoutJSONFixes(t *testing.T) {
	h := New(Config{})
	for _, c := range []struct {
		what  string
		serve func() (int, string)
		fixes []string
	}{
		{"serving.json at 5 requests/s", func() (int, string) {
			return get(t, h, "/download/serving.json?model=llama3-8b&tpu=v5e&request_rate=5")
		}, []string{"request_rate 4.76 (TP 4 × DP 1)", "tpu v5litepod-8 (TP 8"}},
		{"POST /api/plan with a batch limit", func() (int, string) {
			return post(t, h, `{"model":"llama3-70b","tpu":"v6e-32","max_global_batch":"524288tok"}`)
		}, []string{"precision bf16: ", "optimizer_offload: ", "precision bf16 remat minimal_offloaded: "}},
		{"plan.json with a batch limit", func() (int, string) {
			return get(t, h, "/download/plan.json?model=llama3-70b&tpu=v6e-32&max_global_batch=524288tok")
		}, []string{"precision bf16: ", "optimizer_offload: ", "precision bf16 remat minimal_offloaded: "}},
	} {
		code, body := c.serve()
		if code != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d, want 422", c.what, code)
			continue
		}
		d := decodeAPIDoc(t, c.what, body)
		if len(d.Fixes) != len(c.fixes) {
			t.Errorf("%s: fixes %q, want %d starting %q", c.what, d.Fixes, len(c.fixes), c.fixes)
			continue
		}
		for i, f := range d.Fixes {
			if !strings.HasPrefix(f, c.fixes[i]) || !strings.Contains(d.Error, f) || strings.Contains(f, "--") {
				t.Errorf("%s: fixes[%d] = %q, want it to start %q, spelt by keys, and to be in the error %q", c.what, i, f, c.fixes[i], d.Error)
			}
		}
		if len(d.Errors) != 1 || d.Option != nil {
			t.Errorf("%s: errors %v, option %v; want one error and no option", c.what, d.Errors, d.Option)
		} else if o, ok := d.Errors[0]["option"]; ok {
			t.Errorf("%s: errors[0].option = %q, want none (the error concerns no one option)", c.what, o)
		}
	}
}

// TestBadInputJSONNoFixes: a mistake in the request (400) has no fixes,
// an empty list, and its errors still name their option.
func TestBadInputJSONNoFixes(t *testing.T) {
	code, body := post(t, New(Config{}), `{"model":"llama3-8b","tpu":"v5p-8","slices":0}`)
	d := decodeAPIDoc(t, "slices 0", body)
	if code != http.StatusBadRequest || len(d.Fixes) != 0 || d.Option == nil || *d.Option != "slices" || d.Errors[0]["option"] != "slices" {
		t.Errorf("slices 0: %d, fixes %q, option %v, errors %v; want 400, no fixes, slices named", code, d.Fixes, d.Option, d.Errors)
	}
}

// TestBudgetDefaultLeftOut (review 149 #4): a serving query that leaves
// max_num_batched_tokens out is refused with its default named "(the
// default)", as shardlab inference says it where the flag was not given
// (cmd/shardlab TestInferenceBadInput: "--max-num-batched-tokens 4096 (the
// default), want 8192 to"); the key given, even at the default 4096, is
// named as given. The form still shows the default it planned with.
func TestBudgetDefaultLeftOut(t *testing.T) {
	h := New(Config{})
	const q = "model=llama3-8b&tpu=v6e-8&max_num_seqs=8192"
	for _, c := range []struct{ query, want string }{
		{q, "max_num_batched_tokens 4096 (the default), want 8192 to 2097152: "},
		{q + "&max_num_batched_tokens=4096", "max_num_batched_tokens 4096, want 8192 to 2097152: "},
	} {
		code, body := get(t, h, "/download/serving.json?"+c.query)
		d := decodeAPIDoc(t, c.query, body)
		if code != http.StatusBadRequest || !strings.HasPrefix(d.Error, c.want) {
			t.Errorf("serving.json?%s: %d %q, want 400 and %q", c.query, code, d.Error, c.want)
		}
	}
	code, page := get(t, h, "/serving?"+q)
	if code != http.StatusBadRequest || !strings.Contains(page, "4096 (the default), want 8192") || !strings.Contains(page, `value="4096"`) {
		t.Errorf("/serving?%s: %d; want 400, the error with (the default) and the field showing 4096:\n%.600s", q, code, page)
	}
}
