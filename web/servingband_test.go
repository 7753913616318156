package web

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strings"
	"testing"

	"shardlab/export"
	"shardlab/unit"
)

// TestServingPageShowsBand: the serving page shows the held-out band of
// its download (inference.ServingBand, as shardlab inference --json
// gives it): the roofline's in the summary, the simulation's under it,
// and the prompt-heavy warning where the requests are prompt-heavy and
// only there.
func TestServingPageShowsBand(t *testing.T) {
	h := New(testConfig)
	for _, c := range []struct {
		q     string
		heavy bool
	}{
		{"prompt_len=6144&output_len=1024&num_requests=64", true},
		{"prompt_len=1024&output_len=1024&num_requests=64", false},
	} {
		code, body := get(t, h, "/download/serving.json?"+c.q)
		if code != http.StatusOK {
			t.Fatalf("GET serving.json?%s = %d: %.300s", c.q, code, body)
		}
		var j struct {
			export.ServingJSON
			Simulation export.SimJSON `json:"simulation"`
		}
		if err := json.Unmarshal([]byte(body), &j); err != nil {
			t.Fatal(err)
		}
		roof, sim := j.HeldOutBand, j.Simulation.HeldOutBand
		if roof == nil || roof.TokensPerSecond == nil || sim == nil || sim.TokensPerSecond == nil {
			t.Fatalf("serving.json?%s: no held-out band: %+v, %+v", c.q, roof, sim)
		}
		code, page := get(t, h, "/serving?"+c.q)
		if code != http.StatusOK {
			t.Fatalf("GET /serving?%s = %d", c.q, code)
		}
		page = html.UnescapeString(page)
		var want []string
		r, s := roof.TokensPerSecond, sim.TokensPerSecond
		want = append(want, fmt.Sprintf(`>%.0f-%.0f in the held-out band of %s requests</span>`, r.Low, r.High, roof.Class),
			fmt.Sprintf("in the held-out band: %.0f-%.0f output tokens/s", s.Low, s.High))
		if f := sim.TTFT; f != nil {
			want = append(want, fmt.Sprintf("TTFT mean %v", unit.Seconds(f.Low)))
		}
		for _, w := range want {
			if !strings.Contains(page, w) {
				t.Errorf("/serving?%s lacks %q", c.q, w)
			}
		}
		if got := strings.Contains(page, "prompt-heavy requests: the mean prompt"); got != c.heavy {
			t.Errorf("/serving?%s: prompt-heavy warning shown %v, want %v", c.q, got, c.heavy)
		}
	}
}
