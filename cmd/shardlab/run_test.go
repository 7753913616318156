package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"shardlab/internal/golden"
	"shardlab/mesh"
	"shardlab/plan"
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
		{"export_pytorch_multislice", []string{"export", "pytorch", "--model", "llama3-70b", "--tpu", "tpu7x-128", "--slices", "2", "--mesh", "data=2(dcn),fsdp=32,tensor=4", "--global-batch", "256"}},
		{"export_maxtext_flags_pipeline", []string{"export", "maxtext", "--model", "llama3-70b", "--tpu", "v5p-128", "--slices", "2",
			"--mesh", "fsdp=32,tensor=2,pipeline=2(dcn)", "--schedule", "gpipe", "--format", "flags"}},
		{"export_xpk", []string{"export", "xpk", "--model", "llama3-70b", "--tpu", "tpu7x-128", "--slices", "2", "--global-batch", "256",
			"--cluster", "ironwood", "--docker-image", "gcr.io/my-project/maxtext", "--reservation", "my-reservation", "--max-restarts", "3"}},
		{"mxu_ws_small", []string{"mxu", "--m", "1000", "--k", "300", "--n", "200", "--array", "128x128"}},
		{"mxu_os_json", []string{"mxu", "--m", "64", "--k", "100", "--n", "48", "--array", "16x16", "--dataflow", "os", "--json"}},
		{"mxu_compare", []string{"mxu", "compare"}},
		{"mxu_scalesim", []string{"mxu", "--m", "64", "--k", "64", "--n", "64", "--array", "128x128", "--compat", "scalesim"}},
		{"infeed_default", []string{"infeed", "--tpu", "tpu7x", "--vcpus", "224", "--example-cost", "2ms", "--batch", "256"}},
		{"infeed_node0_json", []string{"infeed", "--vcpus", "16", "--numa", "node0", "--steps", "20", "--json"}},
		{"plan_input_check", []string{"plan", "--model", "llama3-8b", "--tpu", "tpu7x-8", "--example-cost", "2ms", "--top", "1"}},
		{"capacity_8x256", []string{"capacity", "--model", "llama3-8b", "--tpu", "tpu7x-256", "--slices", "8", "--mode", "all-capacity", "--blocks", "1", "--spares", "2", "--days", "30"}},
		{"capacity_managed_json", []string{"capacity", "--model", "llama3-8b", "--tpu", "tpu7x-256", "--slices", "8", "--mode", "managed", "--days", "180", "--checkpoint-every", "20m", "--json"}},
		{"inference_70b_tpu7x-8", []string{"inference", "--model", "llama3-70b", "--tpu", "tpu7x-8", "--max-model-len", "8192"}},
		{"inference_70b_tpu7x-8_json", []string{"inference", "--model", "llama3-70b", "--tpu", "tpu7x-8", "--max-model-len", "8192", "--json"}},
		{"inference_mixtral_tpu7x-8", []string{"inference", "--model", "mixtral-8x7b", "--tpu", "tpu7x-8", "--num-requests", "200"}},
		{"inference_deepseek3_tpu7x-16_fp8", []string{"inference", "--model", "deepseek3-671b", "--tpu", "tpu7x-16", "--weights", "fp8", "--kv-cache-dtype", "fp8", "--num-requests", "200"}},
		// the tpu-inference daily benchmark's Gemma 4 servers (.buildkite/benchmark/cases/daily/Gemma4-*.json @b8692ff0)
		{"inference_gemma4-31b_tpu7x-8_fp8", []string{"inference", "--model", "gemma4-31b", "--tpu", "tpu7x-8", "--weights", "fp8", "--kv-cache-dtype", "fp8",
			"--max-model-len", "2048", "--prompt-len", "1024", "--output-len", "500", "--concurrency", "256", "--num-requests", "200"}},
		{"inference_gemma4-26b-a4b_v6e-8", []string{"inference", "--model", "gemma4-26b-a4b", "--tpu", "v6e-8", "--weights", "fp8", "--kv-cache-dtype", "fp8",
			"--max-model-len", "2048", "--prompt-len", "1024", "--output-len", "500", "--concurrency", "128", "--num-requests", "200"}},
		{"model_show_gemma4-26b-a4b", []string{"model", "show", "gemma4-26b-a4b"}},
		{"hw_list", []string{"hw", "list"}},
		{"hw_show_tpu7x", []string{"hw", "show", "tpu7x"}},
		{"hw_show_v5p-128", []string{"hw", "show", "v5p-128"}},
		{"hw_show_v6e_json", []string{"hw", "show", "v6e", "--json"}},
		{"model_list", []string{"model", "list"}},
		{"export_maxtext_deepseek-v3-like", []string{"export", "maxtext", "--model", "testdata/deepseek-v3-like.yaml", "--tpu", "tpu7x-512", "--mesh", "fsdp=32,expert=16", "--global-batch", "1024"}},
		{"export_maxtext_mixtral", []string{"export", "maxtext", "--model", "mixtral-8x7b", "--tpu", "v5p-128", "--mesh", "fsdp=8,expert=8", "--global-batch", "256", "--capacity-factor", "1.25"}},
		{"plan_mixtral_v5p-128", []string{"plan", "--model", "mixtral-8x7b", "--tpu", "v5p-128", "--top", "3"}},
		{"plan_mixtral_expert_mesh", []string{"plan", "--model", "mixtral-8x7b", "--tpu", "v5p-128", "--mesh", "fsdp=8,expert=8", "--global-batch", "256", "--capacity-factor", "1.25", "--top", "1"}},
		{"plan_deepseek-v3-like_tpu7x-512", []string{"plan", "--model", "testdata/deepseek-v3-like.yaml", "--tpu", "tpu7x-512", "--top", "3"}},
		{"plan_deepseek-v3-like_expert_json", []string{"plan", "--model", "testdata/deepseek-v3-like.yaml", "--tpu", "tpu7x-512", "--mesh", "fsdp=32,expert=16", "--global-batch", "1024", "--json", "--top", "1"}},
		{"model_show_llama3-8b", []string{"model", "show", "llama3-8b"}},
		{"validate_serving", []string{"validate", "--serving"}},
		{"validate_serving_json", []string{"validate", "--serving", "--json"}},
		{"validate_fit_json", []string{"validate", "--fit", "--json"}},
		{"validate_breakdown_json", []string{"validate", "--breakdown", "--json"}},
		{"budget_8b_v6e", []string{"budget", "--model", "llama3-8b", "--tokens", "100B", "--generations", "v6e,tpu7x", "--slice-chips", "16,32", "--slices", "1,2"}},
		{"budget_8b_v6e_json", []string{"budget", "--model", "llama3-8b", "--tokens", "100B", "--generations", "v6e", "--modes", "on-demand", "--slice-chips", "16", "--slices", "1,2", "--json"}},
		{"budget_8b_price_energy", []string{"budget", "--model", "llama3-8b", "--tokens", "100B", "--generations", "v6e,tpu7x", "--modes", "on-demand", "--slice-chips", "16", "--slices", "1,2",
			"--price", "tpu7x=5", "--chip-watts", "v6e=300,tpu7x=700"}},
		{"plan_mixtral_int8", []string{"plan", "--model", "mixtral-8x7b", "--tpu", "v5p-128", "--quantization", "int8", "--top", "1"}},
		{"budget_8b_v6e_show1", []string{"budget", "--model", "llama3-8b", "--tokens", "100B", "--generations", "v6e", "--modes", "on-demand", "--slice-chips", "16", "--slices", "1", "--show", "1"}},
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
	if len(axes) != mesh.NumAxes {
		t.Errorf("layout has %d axes, want %d", len(axes), mesh.NumAxes)
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

// TestNonsenseRefused: inputs issue 26 found accepted or misreported,
// each refused in one line naming the field at fault.
func TestNonsenseRefused(t *testing.T) {
	dir := t.TempDir()
	// JSON "layers": 1.5 was truncated to 1, and a name's NUL and U+202E
	// printed raw
	fraction := filepath.Join(dir, "fraction.json")
	if err := os.WriteFile(fraction, []byte(`{"name":"f","layers":1.5,"d_model":64,"heads":4,"d_ff":256,"vocab":1000,"seq_len":128}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rtl := filepath.Join(dir, "rtl.json")
	if err := os.WriteFile(rtl, []byte(`{"name":"evil\u0000\u202etxt.exe","layers":2,"d_model":64,"heads":4,"d_ff":256,"vocab":1000,"seq_len":128}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want []string // substrings of the one-line error
	}{
		{[]string{"model", "show", fraction}, []string{"model show " + fraction, `field layers = "1.5", want a whole number in decimal digits`}},
		{[]string{"plan", "--model", fraction, "--tpu", "v5p-8"}, []string{"--model", `field layers = "1.5", want a whole number`}},
		{[]string{"model", "show", rtl}, []string{"model show " + rtl, `field name = "evil\x00\u202etxt.exe", want printable text: U+0000 at byte 4 is a control character`}},
		{[]string{"export", "maxtext", "--model", rtl, "--tpu", "v5p-8"}, []string{"--model", `field name = "evil\x00\u202etxt.exe"`}},
		// a DCN factor on one slice was reported as "ICI factors = 1 (data 1 x fsdp 4 ...), want a product of 4"
		{[]string{"plan", "--tpu", "v5p-8", "--mesh", "data=2(dcn),fsdp=4"}, []string{"data DCN factor = 2", "there is 1 slice"}},
		{[]string{"run", "--tpu", "v5litepod-4", "--slices", "1", "--mesh", "data=2(dcn),fsdp=4"}, []string{"data DCN factor = 2", "there is 1 slice"}},
		// decimal only (strconv's base 0 read 0x10 as 16 and 1_000 as 1000)
		{[]string{"plan", "--seq", "0x10"}, []string{`--seq "0x10"`, "want a whole number"}},
		{[]string{"plan", "--seq", "1_000"}, []string{`--seq "1_000"`, "want a whole number"}},
		{[]string{"plan", "--tpu", "v5p-8", "--top", "0b1"}, []string{`--top "0b1"`, "want a whole number"}},
		{[]string{"run", "--seed", "0x1"}, []string{`--seed "0x1"`, "want a whole number"}},
		{[]string{"infeed", "--seed", "1_0"}, []string{`--seed "1_0"`, "want a whole number"}},
		{[]string{"plan", "--efficiency", "0x1p-1"}, []string{`--efficiency "0x1p-1"`, "want a finite number"}},
		{[]string{"plan", "--global-batch", "0x1p9"}, []string{"--global-batch", "0x1p9"}},
	} {
		fail(t, tt.args, tt.want...)
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
		{[]string{"plan", "--tpu", "tpu7x-8", "--mesh", "data=3"}, []string{"ICI factors = 3", "a product of 8, the JAX devices in one tpu7x-8 slice"}},
		{[]string{"plan", "--model", "llama3-70b", "--tpu", "tpu7x-128", "--slices", "2", "--mesh", "fsdp=64,tensor=2(dcn)"}, []string{"tensor parallelism over DCN"}},
		{[]string{"plan", "--model", "llama3-70b", "--tpu", "tpu7x-128", "--slices", "2", "--mesh", "fsdp=64,context=2(dcn)"}, []string{"context parallelism over DCN"}},
		{[]string{"export", "pytorch", "--model", "llama3-8b", "--tpu", "v5p-64", "--mesh", "fsdp=16,pipeline=2"}, []string{"pipeline 2", "data, fsdp and tensor only"}},
		{[]string{"plan", "--global-batch", "-4"}, []string{"--global-batch", "positive"}},
		{[]string{"plan", "--max-global-batch", "lots"}, []string{"--max-global-batch", "sequences"}},
		{[]string{"plan", "--model", malformed}, []string{"malformed spec"}},
		{[]string{"plan", "--model", misspelt}, []string{"d_modle"}},
		{[]string{"plan", "--tpu", "v3-32", "--slices", "2"}, []string{"Multislice"}},
		{[]string{"plan", "--remat", "some"}, []string{"minimal, minimal_offloaded, save_dot_except_mlpwi"}},
		{[]string{"plan", "--efficiency", "1.5"}, []string{"--efficiency"}},
		{[]string{"plan", "--bogus"}, []string{"bogus"}},
		{[]string{"plan", "--tpu", "v5p-128", "--topology", "4x4x6"}, []string{"topology", "multiple of 4"}},
		{[]string{"hw", "show", "v5p-7"}, []string{"v5p-8"}},
		{[]string{"model", "show", "nope"}, []string{"not a catalog model"}},
		{[]string{"frobnicate"}, []string{"unknown command"}},
		{[]string{"mxu", "--array", "0x128"}, []string{`array "0x128"`, "ROWSxCOLS"}},
		{[]string{"mxu", "--m", "-5"}, []string{`--m "-5"`, "from 1 to"}},
		{[]string{"mxu", "--dataflow", "rs"}, []string{`dataflow "rs"`, "ws, os or is"}},
		{[]string{"mxu", "--tpu", "v9"}, []string{"unknown TPU generation"}},
		{[]string{"mxu", "--trace", "/tmp/x.json"}, []string{"trace of", "too long"}},
		{[]string{"mxu", "--compat", "timeloop"}, []string{`--compat "timeloop"`, "shardlab or scalesim"}},
		{[]string{"mxu", "--compat", "scalesim", "--trace", "/tmp/x.json"}, []string{"--trace /tmp/x.json", "--compat scalesim"}},
		{[]string{"mxu", "compare", "--gpu-alus", "0"}, []string{`--gpu-alus "0"`, "from 1 to"}},
		{[]string{"infeed", "--numa", "far"}, []string{`--numa "far"`, "local, interleaved or node0"}},
		{[]string{"infeed", "--batch", "-3"}, []string{`--batch "-3"`}},
		{[]string{"infeed", "--example-cost", "soon"}, []string{"example-cost"}},
		{[]string{"infeed", "--vcpus", "1"}, []string{"at least one per NUMA node"}},
		{[]string{"plan", "--example-cost", "-1s"}, []string{"--example-cost"}},
		{[]string{"export", "vllm"}, []string{"export maxtext", "export xpk"}},
		{[]string{"export", "maxtext", "--format", "json"}, []string{`--format "json"`, "yaml or flags"}},
		{[]string{"export", "xpk", "--cluster", "c", "--capacity", "preemptible"}, []string{`--capacity "preemptible"`, "reservation, spot, on-demand or flex"}},
		{[]string{"export", "xpk", "--capacity", "spot"}, []string{"--cluster is required"}},
		{[]string{"export", "xpk", "--cluster", "c", "--capacity", "spot", "--reservation", "r"}, []string{"--reservation", "spot"}},
		{[]string{"export", "xpk", "--cluster", "c", "--capacity", "reservation"}, []string{"--reservation NAME"}},
		{[]string{"export", "xpk", "--cluster", "Bad_Name"}, []string{"--cluster", `"Bad_Name"`}},
		{[]string{"export", "xpk", "--cluster", "c", "--tpu", "v3-32"}, []string{"v3-4x4", "GKE does not offer"}},
		{[]string{"export", "xpk", "--cluster", "c", "--max-restarts", "-1"}, []string{`--max-restarts "-1"`}},
		{[]string{"export", "maxtext", "--model", "llama3-70b", "--tpu", "v5p-128", "--slices", "2", "--mesh", "fsdp=32,tensor=2,pipeline=2(dcn)", "--schedule", "1f1b"},
			[]string{"1f1b", "--schedule gpipe", "circular"}},
		{[]string{"export", "maxtext", "--tpu", "v5p-64", "--precision", "zero"}, []string{"precision zero", "--precision maxtext"}},
	}
	for _, tt := range tests {
		fail(t, tt.args, tt.want...)
	}
}

func TestNoPlanExitsOne(t *testing.T) {
	_, errOut, code := runCmd("plan", "--model", "llama3-405b", "--tpu", "v5litepod-4")
	if code != 1 || !strings.Contains(errOut, "no layout can run") {
		t.Errorf("exit %d, stderr %q; want 1 and 'no layout can run'", code, errOut)
	}
}

// TestPlanOptionsAreFlags: every option of a plan request is a flag of
// plan, spelt as flagName spells it in plan's reasons, warnings and
// errors.
func TestPlanOptionsAreFlags(t *testing.T) {
	fs := commandFlags["plan"]()
	for _, o := range plan.AllOptions() {
		if fs.Lookup(strings.TrimPrefix(flagName(o), "--")) == nil {
			t.Errorf("plan option %q has no flag %s", string(o), flagName(o))
		}
	}
}

// TestHBMHeadroomZero: --hbm-headroom 0 keeps no planning margin: the
// usable HBM is what XLA's compiler allows a TPU7x chip, 2 devices of
// 94.74 GiB (hw/xla_hbm.csv), not the whole 192 GiB.
func TestHBMHeadroomZero(t *testing.T) {
	out, errOut, code := runCmd("plan", "--model", "llama3-8b", "--tpu", "tpu7x-8", "--hbm-headroom", "0", "--top", "1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var v struct {
		HBM    int64 `json:"hbm_capacity_bytes"`
		Usable int64 `json:"hbm_usable_capacity_bytes"`
	}
	if want := int64(math.Round(2 * 94.74 * (1 << 30))); json.Unmarshal([]byte(out), &v) != nil || v.HBM != 192<<30 || v.Usable != want {
		t.Errorf("--hbm-headroom 0: %d of %d bytes usable, want %d of %d", v.Usable, v.HBM, want, int64(192<<30))
	}
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

// TestHelp: help is on stdout with exit 0 (issue 26: it went to stderr, so
// 'shardlab plan -h | less' showed nothing, and 'version --help' was an
// error), for every command the usage lists, with -h, -help, --help and
// 'shardlab help CMD'.
func TestHelp(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		usage string // the name after "usage of shardlab"
		lines int
	}{
		{[]string{"plan", "-h"}, "plan", 5},
		{[]string{"mxu", "-h"}, "mxu", 5},
		{[]string{"mxu", "compare", "-h"}, "mxu compare", 5},
		{[]string{"infeed", "--help"}, "infeed", 5},
		{[]string{"run", "-h"}, "run", 5},
		{[]string{"export", "-h"}, "export", 3},
		{[]string{"export", "--help", "maxtext"}, "export", 3},
		{[]string{"export", "maxtext", "-h"}, "export maxtext", 5},
		{[]string{"export", "xpk", "-h"}, "export xpk", 5},
		{[]string{"hw", "-h"}, "hw", 3},
		{[]string{"hw", "list", "-h"}, "hw", 3},
		{[]string{"hw", "show", "v5p", "-h"}, "hw", 3},
		{[]string{"model", "-h"}, "model", 3},
		{[]string{"model", "--help"}, "model", 3},
		{[]string{"model", "show", "-h"}, "model", 3},
		{[]string{"version", "--help"}, "version", 2},
		{[]string{"version", "-h"}, "version", 2},
		{[]string{"--version", "help"}, "version", 2},
		{[]string{"web", "--help"}, "web", 2},
		{[]string{"help", "plan"}, "plan", 5},
		{[]string{"help", "export", "xpk"}, "export xpk", 5},
		{[]string{"help", "mxu", "compare"}, "mxu compare", 5},
		{[]string{"help", "version"}, "version", 2},
	} {
		out, errOut, code := runCmd(tt.args...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage of shardlab "+tt.usage+":") || strings.Count(out, "\n") < tt.lines {
			t.Errorf("shardlab %s: exit %d, stdout %q, stderr %q; want exit 0 and the usage of %s on stdout", strings.Join(tt.args, " "), code, out, errOut, tt.usage)
		}
	}
	// every command the usage lists, and the usage itself
	for _, cmd := range commands(t) {
		for _, h := range []string{"-h", "-help", "--help"} {
			args := append(strings.Fields(cmd), h)
			out, errOut, code := runCmd(args...)
			if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage of shardlab "+strings.Fields(cmd)[0]) {
				t.Errorf("shardlab %s: exit %d, stdout %q, stderr %q; want exit 0 and its usage on stdout", strings.Join(args, " "), code, out, errOut)
			}
		}
	}
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"help", "-h"}, {"help", "help"}} {
		if out, errOut, code := runCmd(args...); code != 0 || errOut != "" || out != usage {
			t.Errorf("shardlab %s: exit %d, stdout %q, stderr %q; want exit 0 and the usage on stdout", strings.Join(args, " "), code, out, errOut)
		}
	}
	// no command, or an unknown one, is bad input: one line
	fail(t, nil, "no command, want plan, export", "run 'shardlab help'")
	fail(t, []string{"help", "frobnicate"}, `unknown command "frobnicate"`)
	// an export writes one layout, not a ranking: no --json, --top or --example-cost
	for _, target := range []string{"maxtext", "xpk"} {
		for _, fl := range []string{"--json", "--top", "--example-cost"} {
			out, _, _ := runCmd("export", target, "-h")
			if strings.Contains(out, "  -"+fl[2:]+" ") || strings.Contains(out, "  -"+fl[2:]+"\n") {
				t.Errorf("export %s -h lists %s", target, fl)
			}
		}
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version", "-version"} {
		out, errOut, code := runCmd(arg)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "shardlab ") || !strings.Contains(out, runtime.Version()) || strings.Count(out, "\n") != 1 {
			t.Errorf("shardlab %s: exit %d, stdout %q, stderr %q; want one line with the version and %s", arg, code, out, errOut, runtime.Version())
		}
	}
	if _, _, code := runCmd("version", "extra"); code != 2 {
		t.Errorf("shardlab version extra: exit %d, want 2", code)
	}
}

// TestIgnoredInput: input that one mode or another would silently ignore
// is refused, naming the flag; where it is harmless, a warning says so.
func TestIgnoredInput(t *testing.T) {
	dir := t.TempDir()
	planFile := func(name string, edit func(map[string]any)) string {
		out, errOut, code := runCmd("plan", "--model", "llama3-8b", "--tpu", "tpu7x-8", "--json")
		if code != 0 {
			t.Fatalf("plan --json: %s", errOut)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		edit(v)
		b, _ := json.Marshal(v)
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"plan", "--slices", "4"}, []string{"--slices 4 needs --tpu"}},
		{[]string{"export", "maxtext", "--slices", "2"}, []string{"--slices 2 needs --tpu"}},
		{[]string{"plan", "--tpu", "tpu7x", "--dcn-gbps", "25"}, []string{"--tpu tpu7x names no size", "--dcn-gbps"}},
		{[]string{"export", "maxtext", "--json"}, []string{"-json"}},
		{[]string{"export", "maxtext", "--top", "3"}, []string{"-top"}},
		{[]string{"run", "--every", "3"}, []string{"--every needs --checkpoint"}},
		{[]string{"run", "--plan-index", "1"}, []string{"--plan-index needs --plan"}},
		{[]string{"run", "--synthetic", "--data", "x"}, []string{"--data and --synthetic"}},
		{[]string{"run", "--kill-rank", "1", "--kill-step", "2"}, []string{"--kill-rank 1", "mpirun"}},
		{[]string{"run", "--kill-step", "3"}, []string{"--kill-step needs --kill-rank"}},
		{[]string{"run", "--hang"}, []string{"--hang needs --kill-rank"}},
		{[]string{"run", "--fail-link", "0-0"}, []string{`--fail-link "0-0"`, "two different devices"}},
		{[]string{"run", "--fail-link", "-1-2"}, []string{`--fail-link "-1-2"`, "A-B"}},
		{[]string{"run", "--mesh", "data=2(dcn),fsdp=4(slice)"}, []string{"fsdp", "N(dcn)"}},
		{[]string{"plan", "--tpu", "v5p-8", "--mesh", "data=4(tpu)"}, []string{"data", "N(dcn)"}},
		{[]string{"run", "--plan", planFile("neg.json", func(v map[string]any) { v["slices"] = -5 })}, []string{"--plan", "slices = -5", "1 to 4096"}},
		{[]string{"run", "--plan", planFile("zero.json", func(v map[string]any) { v["slices"] = 0 })}, []string{"slices = 0"}},
		{[]string{"run", "--plan", planFile("batch.json", func(v map[string]any) { v["global_batch_sequences"] = -1 })}, []string{"global_batch_sequences = -1"}},
		{[]string{"run", "--plan", planFile("micro.json", func(v map[string]any) { v["micro_batches"] = 0 })}, []string{"micro_batches = 0"}},
		{[]string{"run", "--plan", planFile("sched.json", func(v map[string]any) { v["schedule"] = "zigzag" })}, []string{`schedule "zigzag"`}},
		{[]string{"hw", "list", "v5p"}, []string{`hw list: unexpected argument "v5p"`}},
		{[]string{"model", "list", "llama3-8b"}, []string{`model list: unexpected argument "llama3-8b"`}},
	}
	for _, tt := range tests {
		fail(t, tt.args, tt.want...)
	}
	// harmless: a warning on stderr, and the command runs
	small := []string{"--synthetic", "--steps", "1", "--quiet", "--seq", "16", "--d-model", "32", "--d-ff", "64", "--batch", "8"}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{append([]string{"run", "--mpi-timeout", "1m"}, small...), "run: warning: --mpi-timeout has no effect outside mpirun"},
		{append([]string{"run", "--schedule", "gpipe"}, small...), "run: warning: --schedule has no effect"},
		{[]string{"mxu", "--dataflow", "os", "--double-buffer=false", "--m", "64", "--k", "64", "--n", "64"}, "mxu: warning: --double-buffer has no effect"},
		{[]string{"infeed", "--cross-numa", "2", "--steps", "4", "--sweep=false"}, "infeed: warning: --cross-numa has no effect"},
		{[]string{"infeed", "--seed", "7", "--steps", "4", "--sweep=false"}, "infeed: warning: --seed has no effect"},
	} {
		out, errOut, code := runCmd(tt.args...)
		if code != 0 || out == "" || !strings.Contains(errOut, "shardlab: "+tt.want) {
			t.Errorf("shardlab %s: exit %d, stderr %q; want exit 0 and %q", strings.Join(tt.args, " "), code, errOut, tt.want)
		}
	}
	// and no warning where the flag does something
	for _, args := range [][]string{
		{"infeed", "--cross-numa", "2", "--numa", "interleaved", "--steps", "4", "--sweep=false"},
		{"infeed", "--seed", "7", "--jitter", "0.5", "--steps", "4", "--sweep=false"},
		{"mxu", "--dataflow", "ws", "--double-buffer=false", "--m", "64", "--k", "64", "--n", "64"},
	} {
		if _, errOut, code := runCmd(args...); code != 0 || errOut != "" {
			t.Errorf("shardlab %s: exit %d, stderr %q; want exit 0 and no warning", strings.Join(args, " "), code, errOut)
		}
	}
}

// TestPlanGoodputBandJSON: the time to train's band in plan --goodput
// --json is the step's band scaled (the time to train is steps × step
// time over goodput, so its ends are the step's ends over the step).
func TestPlanGoodputBandJSON(t *testing.T) {
	out, errOut, code := runCmd("plan", "--model", "llama3-8b", "--tpu", "tpu7x-8", "--goodput", "--json", "--tokens", "1e11", "--top", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Step struct {
			S float64 `json:"total_s"`
		} `json:"step_time"`
		Band struct {
			Low  float64 `json:"low_step_time_s"`
			High float64 `json:"high_step_time_s"`
		} `json:"prediction_band"`
		Goodput struct {
			T    float64 `json:"time_to_train_s"`
			Low  float64 `json:"low_time_to_train_s"`
			High float64 `json:"high_time_to_train_s"`
		} `json:"goodput"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	g, b := got.Goodput, got.Band
	if g.T <= 0 || b.Low <= 0 || !(g.Low < g.T && g.T < g.High) {
		t.Fatalf("time to train %v, band %v to %v; step band %v to %v", g.T, g.Low, g.High, b.Low, b.High)
	}
	step := got.Step.S
	for _, c := range [][2]float64{{g.Low / g.T, b.Low / step}, {g.High / g.T, b.High / step}} {
		if math.Abs(c[0]-c[1]) > 1e-9 {
			t.Errorf("time to train's band ratio %v, the step's %v", c[0], c[1])
		}
	}
}

func TestPlanGoodput(t *testing.T) {
	out, errOut, code := runCmd("plan", "--model", "llama3-8b", "--tpu", "tpu7x-8", "--goodput", "--tokens", "1e9")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// review 140: it pointed to capacity for any reservation; capacity
	// simulates those of tpu7x and v6e only, and the line says so
	for _, want := range []string{"Goodput (expected; shardlab capacity simulates tpu7x and v6e reservations only, v6e with its sub-block and block sizes given):",
		"checkpoint every", "(Daly)", "goodput 9", "1e+09 tokens in"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan --goodput lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "days in the band)") && !strings.Contains(out, "hours in the band)") {
		t.Errorf("plan --goodput gives no band for the time to train:\n%s", out)
	}
	if _, errOut, code := runCmd("plan", "--tokens", "1e9"); code != 2 || !strings.Contains(errOut, "--tokens 1e+09 needs --goodput") {
		t.Errorf("--tokens without --goodput: exit %d, %q", code, errOut)
	}
}
