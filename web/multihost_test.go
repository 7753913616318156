package web

import (
	"encoding/json"
	"html"
	"net/http"
	"slices"
	"strings"
	"testing"

	"shardlab/export"
)

// TestServingMultiHost: the serving page and its download carry the
// vllm serve line the CLI prints (export.VLLMServe): for a layout whose
// devices span hosts (llama3-405b at TP 64 on v6e-64, 16 VMs of 4
// chips) it starts `env TPU_MULTIHOST_BACKEND=ray`, which alone selects
// tpu-inference's Ray executor (platforms/tpu_platform.py 394-418
// @b8692ff0), and the warnings say that a Ray cluster over the slice's
// hosts must run first (scripts/multihost/run_cluster.sh); a one-host
// layout's line and warnings name neither.
func TestServingMultiHost(t *testing.T) {
	h := New(testConfig)
	for _, c := range []struct {
		q     string
		multi bool
	}{
		{"model=llama3-405b&tpu=v6e-64&num_requests=20", true},
		{"model=llama3-70b&tpu=tpu7x-8&num_requests=20", false},
	} {
		code, body := get(t, h, "/download/serving.json?"+c.q)
		var j export.ServingJSON
		if code != http.StatusOK || json.Unmarshal([]byte(body), &j) != nil || len(j.Command) < 3 {
			t.Fatalf("GET /download/serving.json?%s = %d %.300s, want the plan's JSON", c.q, code, body)
		}
		if env := j.Command[0] == "env" && slices.Contains(j.Command[:slices.Index(j.Command, "vllm")], "TPU_MULTIHOST_BACKEND=ray"); env != c.multi {
			t.Errorf("%s: vllm_serve_args %q: TPU_MULTIHOST_BACKEND=ray %v, want %v", c.q, j.Command, env, c.multi)
		}
		if strings.Contains(j.CommandLine, "TPU_MULTIHOST_BACKEND=ray") != c.multi {
			t.Errorf("%s: vllm_serve_command %q: TPU_MULTIHOST_BACKEND=ray there %v", c.q, j.CommandLine, !c.multi)
		}
		if warned := strings.Contains(strings.Join(j.Warnings, "\n"), "run_cluster.sh"); warned != c.multi {
			t.Errorf("%s: warnings %q: the Ray cluster named %v, want %v", c.q, j.Warnings, warned, c.multi)
		}
		code, page := get(t, h, "/serving?"+c.q)
		if code != http.StatusOK || !strings.Contains(page, html.EscapeString(j.CommandLine)) {
			t.Errorf("GET /serving?%s = %d: the page lacks the download's line %q", c.q, code, j.CommandLine)
		}
		if strings.Contains(page, "run_cluster.sh") != c.multi {
			t.Errorf("GET /serving?%s: the Ray cluster named %v, want %v", c.q, !c.multi, c.multi)
		}
	}
}
