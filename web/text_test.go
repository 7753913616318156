package web

import (
	"net/http"
	"strings"
	"testing"
)

// TestBadValuesGiveTheCLIsReason: a value that is no printable text is
// refused for that, in the words the CLI uses for every flag
// (model.NotText), and a whole number past what its field holds for its
// range, as plan words it; the web said "no slice of this size" for a
// TPU type ending in U+202E and "want a whole number" for example_cost
// 1e30 (review 2, item 10).
func TestBadValuesGiveTheCLIsReason(t *testing.T) {
	h := New(testConfig)
	for _, tc := range []struct{ target, want string }{
		{"/download/plan.json?model=llama3-8b&tpu=v5p-8%E2%80%AE", `tpu: "v5p-8\u202e", want printable text: U+202E at byte 5 is a format character`},
		{"/download/budget.json?" + smallBudget + "&region=us-central1%E2%80%AE", `region: "us-central1\u202e", want printable text: U+202E at byte 11 is a format character`},
		{"/download/serving.json?model=llama3-8b&tpu=v6e-8%00", `tpu: "v6e-8\x00", want printable text: U+0000 at byte 5 is a control character`},
		{"/?model=llama3-8b&tpu=v5p-8%E2%80%AE", `TPU type: "v5p-8\u202e", want printable text: U+202E at byte 5 is a format character`},
		{"/download/xpk.sh?model=llama3-8b&tpu=v5p-8&cluster=c%E2%80%AE", `cluster: "c\u202e", want printable text: U+202E at byte 1 is a format character`},
	} {
		code, body := get(t, h, tc.target)
		text := unquote(body)
		if strings.Contains(tc.target, ".json?") {
			text = errorOf(t, tc.target, body)
		}
		if code != http.StatusBadRequest || !strings.Contains(text, tc.want) || strings.Contains(text, "no slice") {
			t.Errorf("GET %s = %d %.400s, want 400 with %q", tc.target, code, text, tc.want)
		}
	}
	for _, tc := range []struct{ body, want, lack string }{
		{`{"tpu": "v5p-8\u202e"}`, `tpu: \"v5p-8\\u202e\", want printable text: U+202E at byte 5 is a format character`, "no slice"},
		{`{"example_cost": 1e30}`, `example_cost 1e30, want 0s to 1h0m0s`, "whole number"},
		{`{"example_cost": -1e30}`, `example_cost -1e30, want 0s to 1h0m0s`, "whole number"},
		{`{"example_cost": 1.5}`, `want a whole number (nanoseconds)`, "1h0m0s"},
		{`{"slices": 1e30}`, `slices 1e30, want 1 to`, "whole number"},
	} {
		code, answer := post(t, h, tc.body)
		if code != http.StatusBadRequest || !strings.Contains(answer, tc.want) || strings.Contains(answer, tc.lack) {
			t.Errorf("POST %s = %d %.400s, want 400 with %q, without %q", tc.body, code, answer, tc.want, tc.lack)
		}
	}
}
