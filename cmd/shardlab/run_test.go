package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shardlab/internal/golden"
)

func runCmd(args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return o.String(), e.String(), code
}

func TestGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"plan_default", []string{"plan"}},
		{"plan_default_json", []string{"plan", "--json"}},
		{"plan_70b_2slices_json", []string{"plan", "--model", "llama3-70b", "--tpu", "tpu7x-128", "--slices", "2", "--json", "--top", "3"}},
		{"plan_pipeline_dcn", []string{"plan", "--model", "llama3-70b", "--tpu", "tpu7x-128", "--slices", "2", "--seq", "1024",
			"--max-global-batch", "256", "--dcn-gbps", "25", "--top", "3"}},
		{"plan_mesh_v5p", []string{"plan", "--model", "llama2-13b", "--tpu", "v5p-256", "--mesh", "fsdp=32,tensor=4", "--global-batch", "1Mitok"}},
		{"export_maxtext", []string{"export", "maxtext", "--model", "llama3-70b", "--tpu", "tpu7x-128", "--slices", "2"}},
		{"mxu_ws_small", []string{"mxu", "--m", "1000", "--k", "300", "--n", "200", "--array", "128x128"}},
		{"mxu_os_json", []string{"mxu", "--m", "64", "--k", "100", "--n", "48", "--array", "16x16", "--dataflow", "os", "--json"}},
		{"mxu_compare", []string{"mxu", "compare"}},
		{"infeed_default", []string{"infeed", "--tpu", "tpu7x", "--vcpus", "224", "--example-cost", "2ms", "--batch", "256"}},
		{"infeed_node0_json", []string{"infeed", "--vcpus", "16", "--numa", "node0", "--steps", "20", "--json"}},
		{"plan_input_check", []string{"plan", "--model", "llama3-8b", "--tpu", "tpu7x-8", "--example-cost", "2ms", "--top", "1"}},
		{"hw_list", []string{"hw", "list"}},
		{"hw_show_tpu7x", []string{"hw", "show", "tpu7x"}},
		{"hw_show_v5p-128", []string{"hw", "show", "v5p-128"}},
		{"hw_show_v6e_json", []string{"hw", "show", "v6e", "--json"}},
		{"model_list", []string{"model", "list"}},
		{"model_show_llama3-8b", []string{"model", "show", "llama3-8b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCmd(tt.args...)
			if code != 0 {
				t.Fatalf("shardlab %s: exit %d: %s", strings.Join(tt.args, " "), code, errOut)
			}
			golden.Compare(t, tt.name, []byte(out))
		})
	}
}

func TestPlanJSONFields(t *testing.T) {
	out, errOut, code := runCmd("plan", "--model", "llama3-70b", "--tpu", "tpu7x-128", "--slices", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"layout", "hbm_used_per_chip", "hbm_capacity_bytes", "hbm_usable_capacity_bytes", "step_time", "mfu_fraction",
		"tokens_per_s_per_chip", "dcn_bytes_per_step", "reasons", "rejected"} {
		if _, ok := v[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	step := v["step_time"].(map[string]any)
	for _, k := range []string{"compute_s", "ici_exposed_s", "dcn_exposed_s", "bubble_s", "total_s"} {
		if _, ok := step[k]; !ok {
			t.Errorf("step_time lacks %q", k)
		}
	}
	axes := v["layout"].(map[string]any)["axes"].([]any)
	if len(axes) != 5 {
		t.Errorf("layout has %d axes, want 5", len(axes))
	}
	for _, a := range axes {
		m := a.(map[string]any)
		if _, ok := m["ici"]; !ok {
			t.Errorf("axis %v lacks ici", m)
		}
		if _, ok := m["dcn"]; !ok {
			t.Errorf("axis %v lacks dcn", m)
		}
	}
	mem := v["hbm_used_per_chip"].(map[string]any)
	for _, k := range []string{"weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "transient_bytes", "total_bytes"} {
		if _, ok := mem[k]; !ok {
			t.Errorf("hbm_used_per_chip lacks %q", k)
		}
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	malformed := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(malformed, []byte("layers: [1, 2\nd_model: x"), 0o644); err != nil {
		t.Fatal(err)
	}
	misspelt := filepath.Join(dir, "misspelt.yaml")
	if err := os.WriteFile(misspelt, []byte("name: m\nlayers: 2\nd_modle: 64\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want []string // substrings of the one-line error
	}{
		{[]string{"plan", "--model", "llama4"}, []string{`model "llama4"`, "llama3-8b"}},
		{[]string{"plan", "--tpu", "v5p-7"}, []string{`"v5p-7"`, "v5p-8, v5p-16"}},
		{[]string{"plan", "--tpu", "v9-8"}, []string{"unknown TPU generation", "tpu7x"}},
		{[]string{"plan", "--tpu", "tpu7x-8", "--mesh", "data=3"}, []string{"ICI factors = 3", "a product of 4"}},
		{[]string{"plan", "--model", "llama3-70b", "--tpu", "tpu7x-128", "--slices", "2", "--mesh", "fsdp=64,tensor=2(dcn)"}, []string{"tensor parallelism over DCN"}},
		{[]string{"plan", "--global-batch", "-4"}, []string{"--global-batch", "positive"}},
		{[]string{"plan", "--max-global-batch", "lots"}, []string{"--max-global-batch", "sequences"}},
		{[]string{"plan", "--model", malformed}, []string{"malformed spec"}},
		{[]string{"plan", "--model", misspelt}, []string{"d_modle"}},
		{[]string{"plan", "--tpu", "v3-32", "--slices", "2"}, []string{"Multislice"}},
		{[]string{"plan", "--remat", "some"}, []string{"none, selective or full"}},
		{[]string{"plan", "--efficiency", "1.5"}, []string{"--efficiency"}},
		{[]string{"plan", "--bogus"}, []string{"bogus"}},
		{[]string{"plan", "--tpu", "v5p-128", "--topology", "4x4x6"}, []string{"topology", "multiple of 4"}},
		{[]string{"hw", "show", "v5p-7"}, []string{"v5p-8"}},
		{[]string{"model", "show", "nope"}, []string{"not a catalog model"}},
		{[]string{"frobnicate"}, []string{"unknown command"}},
		{[]string{"mxu", "--array", "0x128"}, []string{`array "0x128"`, "ROWSxCOLS"}},
		{[]string{"mxu", "--m", "-5"}, []string{"gemm m = -5", "want 1 to"}},
		{[]string{"mxu", "--dataflow", "rs"}, []string{`dataflow "rs"`, "ws, os or is"}},
		{[]string{"mxu", "--tpu", "v9"}, []string{"unknown TPU generation"}},
		{[]string{"mxu", "--trace", "/tmp/x.json"}, []string{"trace of", "too long"}},
		{[]string{"mxu", "compare", "--gpu-alus", "0"}, []string{"positive"}},
		{[]string{"infeed", "--numa", "far"}, []string{`placement "far"`, "local, interleaved or node0"}},
		{[]string{"infeed", "--batch", "-3"}, []string{"batch = -3"}},
		{[]string{"infeed", "--example-cost", "soon"}, []string{"example-cost"}},
		{[]string{"infeed", "--vcpus", "1"}, []string{"at least one per NUMA node"}},
		{[]string{"plan", "--example-cost", "-1s"}, []string{"--example-cost"}},
		{[]string{"export", "vllm"}, []string{"export maxtext"}},
	}
	for _, tt := range tests {
		out, errOut, code := runCmd(tt.args...)
		if code != 2 {
			t.Errorf("shardlab %s: exit %d, want 2 (stderr %q)", strings.Join(tt.args, " "), code, errOut)
			continue
		}
		if out != "" {
			t.Errorf("shardlab %s: wrote to stdout: %q", strings.Join(tt.args, " "), out)
		}
		line := strings.TrimSuffix(errOut, "\n")
		if strings.Contains(line, "\n") {
			t.Errorf("shardlab %s: error spans lines: %q", strings.Join(tt.args, " "), errOut)
		}
		for _, w := range tt.want {
			if !strings.Contains(line, w) {
				t.Errorf("shardlab %s: error %q lacks %q", strings.Join(tt.args, " "), line, w)
			}
		}
	}
}

func TestNoPlanExitsOne(t *testing.T) {
	_, errOut, code := runCmd("plan", "--model", "llama3-405b", "--tpu", "v5litepod-4")
	if code != 1 || !strings.Contains(errOut, "no layout can run") {
		t.Errorf("exit %d, stderr %q; want 1 and 'no layout can run'", code, errOut)
	}
}

func TestParseBatch(t *testing.T) {
	tests := []struct {
		in    string
		exact bool
		want  int
	}{
		{"512", true, 512},
		{"512seq", true, 512},
		{"4Mitok", true, 512},
		{"4194304tok", true, 512},
		{"4Mtok", false, 488},
		{"1Ki", true, 1024},
	}
	for _, tt := range tests {
		got, err := parseBatch("--b", tt.in, 8192, tt.exact)
		if err != nil || got != tt.want {
			t.Errorf("parseBatch(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "0", "-1", "1.5", "4Mtok", "100tok", "NaN", "Inf", "1e3", "tok", "2x"} {
		if _, err := parseBatch("--b", in, 8192, true); err == nil {
			t.Errorf("parseBatch(%q) accepted", in)
		}
	}
}

func FuzzParseBatch(f *testing.F) {
	for _, s := range []string{"512", "4Mitok", "1Kiseq", "-3", "0.5Mtok", "9e99"} {
		f.Add(s, 8192, true)
	}
	f.Fuzz(func(t *testing.T, s string, seq int, exact bool) {
		if seq < 1 || seq > 1<<20 {
			return
		}
		n, err := parseBatch("--b", s, seq, exact)
		if err == nil && (n < 1 || n > 1<<30) {
			t.Fatalf("parseBatch(%q) = %d", s, n)
		}
	})
}

func TestMXUTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mxu.json")
	_, errOut, code := runCmd("mxu", "--m", "8", "--k", "8", "--n", "8", "--array", "4x4", "--trace", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || len(doc.TraceEvents) < 10 {
		t.Errorf("trace: %v, %d events", err, len(doc.TraceEvents))
	}
}

func TestHelp(t *testing.T) {
	for _, sub := range []string{"plan", "mxu", "infeed"} {
		out, errOut, code := runCmd(sub, "-h")
		if code != 0 || out != "" || !strings.Contains(errOut, "usage of shardlab "+sub) || strings.Count(errOut, "\n") < 5 {
			t.Errorf("%s -h: exit %d, stderr %q", sub, code, errOut)
		}
	}
}
