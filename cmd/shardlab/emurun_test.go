package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shardlab/emu"
)

func TestRunDefault(t *testing.T) {
	out, errOut, code := runCmd("run", "--steps", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"8 virtual chips", "2 slices of v5litepod-4 (2x2, 4 chips each; 8 chips in all)", "data=2(dcn),fsdp=2,tensor=2", "Go sources under",
		"data all-reduce", "tensor all-reduce", "fsdp all-gather", "peak memory per chip", "simulated"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "step 3/3") {
		t.Errorf("no progress bar on stderr: %q", errOut)
	}
}

func runJSONOut(t *testing.T, args ...string) runOut {
	t.Helper()
	out, errOut, code := runCmd(append(args, "--json")...)
	if code != 0 {
		t.Fatalf("shardlab %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	var o runOut
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestRunCheckpointResume(t *testing.T) {
	dir := t.TempDir()
	common := []string{"run", "--synthetic", "--seq", "16", "--d-model", "32", "--d-ff", "64", "--batch", "8", "--mesh", "data=2(dcn),fsdp=4"}
	straight := runJSONOut(t, append(common, "--steps", "6")...)
	// a killed write's temporary file is removed at the next start
	stale := filepath.Join(dir, ".checkpoint-123456")
	if err := os.WriteFile(stale, make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCmd(append(common, "--steps", "4", "--checkpoint", dir, "--every", "2", "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(stale); err == nil || !strings.Contains(errOut, "removed 1 temporary checkpoint file") {
		t.Errorf("the temporary file of a killed write is still there (stderr %q)", errOut)
	}
	// once step 4 is written, step 2's file goes
	if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 1 || filepath.Base(names[0]) != "checkpoint.step-4.bin" {
		t.Errorf("checkpoint directory holds %v, want checkpoint.step-4.bin alone", names)
	}
	resumed := runJSONOut(t, append(common, "--steps", "6", "--checkpoint", dir, "--resume")...)
	if resumed.ResumedFrom != 4 || len(resumed.Losses) != 2 || resumed.Losses[0] != straight.Losses[4] || resumed.Losses[1] != straight.Losses[5] {
		t.Errorf("resumed from step %d with losses %v, uninterrupted %v", resumed.ResumedFrom, resumed.Losses, straight.Losses)
	}
	if resumed.ParamsSHA256 != straight.ParamsSHA256 {
		t.Errorf("resumed run ends with params %s, uninterrupted %s", resumed.ParamsSHA256, straight.ParamsSHA256)
	}
	// the resumed run wrote no checkpoint (--every is 10), so step 4 is
	// still the newest: resuming it needs more steps and the same settings
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--steps", "4"}, "--steps 4 is not past the checkpoint's step 4"},
		{[]string{"--steps", "3"}, "--steps 3 is not past the checkpoint's step 4"},
		{[]string{"--steps", "6", "--bf16=false"}, "bf16_compute (--bf16) is true in the checkpoint, false in this run"},
		{[]string{"--steps", "6", "--lr", "0.01", "--seed", "2"}, "seed (--seed) is 1 in the checkpoint, 2 in this run; lr (--lr) is 0.003 in the checkpoint, 0.01 in this run"},
		{[]string{"--steps", "6", "--d-ff", "128"}, "model.d_ff (--d-ff) is 64 in the checkpoint, 128 in this run"},
	} {
		_, errOut, code := runCmd(withFlags(append(common, "--checkpoint", dir, "--resume", "--quiet"), tt.args...)...)
		if code != 2 || !strings.Contains(errOut, tt.want) {
			t.Errorf("resume with %v: exit %d, %q; want exit 2 with %q", tt.args, code, errOut, tt.want)
		}
	}
	if _, errOut, code := runCmd(append(common, "--steps", "6", "--checkpoint", t.TempDir(), "--resume")...); code != 2 || !strings.Contains(errOut, "no checkpoint in") {
		t.Errorf("resume from an empty directory: exit %d, %q", code, errOut)
	}
	// corrupt it: refused with a clear error
	path := filepath.Join(dir, "checkpoint.step-4.bin")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/3] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCmd(append(common, "--steps", "6", "--checkpoint", dir, "--resume")...)
	if code != 2 || !strings.Contains(errOut, "checksum") {
		t.Errorf("corrupt checkpoint: exit %d, %q", code, errOut)
	}
}

func TestRunTraceAndPlan(t *testing.T) {
	dir := t.TempDir()
	tracePath := filepath.Join(dir, "run.json")
	if _, errOut, code := runCmd("run", "--synthetic", "--steps", "2", "--quiet", "--tpu", "v5litepod-4", "--slices", "1",
		"--mesh", "pipeline=2,data=2", "--trace", tracePath); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	data, _ := os.ReadFile(tracePath)
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	tracks, cats := map[float64]bool{}, map[string]bool{}
	for _, e := range doc.TraceEvents {
		if e["ph"] == "X" {
			tracks[e["tid"].(float64)] = true
			cats[e["cat"].(string)] = true
		}
	}
	if len(tracks) != 4 || !cats["compute"] || !cats["collective"] || !cats["bubble"] {
		t.Errorf("trace has %d tracks and categories %v; want 4 chips with compute, collective and bubble", len(tracks), cats)
	}
	// a planner's layout runs as is
	planPath := filepath.Join(dir, "plan.json")
	out, _, code := runCmd("plan", "--model", "llama3-8b", "--tpu", "tpu7x-8", "--json")
	if code != 0 {
		t.Fatal("plan failed")
	}
	os.WriteFile(planPath, []byte(out), 0o644)
	o := runJSONOut(t, "run", "--synthetic", "--steps", "1", "--plan", planPath)
	if o.Layout != "data=4" || o.Devices != 4 {
		t.Errorf("run --plan used %s on %d devices, want data=4 on 4", o.Layout, o.Devices)
	}
}

func TestRunFailures(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--fail-link", "0-1"}, 1, "link 0-1 is down"},
		{[]string{"run", "--fail-link", "3-4"}, 2, "share no ring"},
		{[]string{"run", "--mesh", "data=2(dcn),fsdp=2"}, 2, "ICI factors = 2"},
		{[]string{"run", "--mesh", "pod=8"}, 2, `axis = "pod"`},
		{[]string{"run", "--tpu", "v5litepod-4", "--slices", "1", "--mesh", "expert=4"}, 2, "splits experts 4 ways, and the emulated model is dense: give it experts with --experts N"},
		{[]string{"run", "--tpu", "v5litepod-4", "--slices", "1", "--mesh", "expert=4", "--experts", "6"}, 2, "expert=4 must divide the 6 experts"},
		{[]string{"run", "--capacity-factor", "2"}, 2, "--capacity-factor needs --experts N"},
		{[]string{"run", "--experts", "4", "--capacity-factor", "NaN"}, 2, "capacity-factor"},
		{[]string{"run", "--experts", "4", "--experts-per-token", "5"}, 2, "experts_per_token = 5, want 1 to experts (4)"},
		{[]string{"run", "--tpu", "v5litepod-4", "--slices", "1", "--mesh", "context=4", "--seq", "10"}, 2, "context=4 must divide the sequence length 10"},
		{[]string{"run", "--mesh", "tensor=2(dcn),fsdp=4"}, 2, "tensor parallelism over DCN"},
		{[]string{"run", "--mesh", "context=2(dcn),fsdp=4"}, 2, "context parallelism over DCN"},
		{[]string{"run", "--heads", "3"}, 2, "heads"},
		{[]string{"run", "--fail-link", "x"}, 2, "want A-B"},
		{[]string{"run", "--resume"}, 2, "--resume needs --checkpoint"},
		{[]string{"run", "--data", "/nonexistent"}, 2, "--data /nonexistent"},
	}
	for _, tt := range tests {
		_, errOut, code := runCmd(append(tt.args, "--quiet")...)
		if code != tt.code || !strings.Contains(errOut, tt.want) {
			t.Errorf("shardlab %s: exit %d %q; want exit %d with %q", strings.Join(tt.args, " "), code, errOut, tt.code, tt.want)
		}
	}
}

// TestRunPlanFromPlanJSON: run --plan takes what 'plan --json' prints,
// the plans of the defaults too (one picked with --plan-index), and the
// plan's global batch, micro-batches, schedule and, when the emulator can
// train it, sequence length, unless the flags set them.
func TestRunPlanFromPlanJSON(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	out, errOut, code := runCmd("plan", "--json")
	if code != 0 {
		t.Fatalf("plan --json: %s", errOut)
	}
	array := write("defaults.json", []byte(out))
	fail(t, []string{"run", "--plan", array}, "--plan "+array, "holds 2 plans", "--plan-index 0 to 1")
	fail(t, []string{"run", "--plan", array, "--plan-index", "2"}, "--plan-index 2", "want 0 to 1")

	// the first default: llama3-8b on tpu7x-8, data=4, sequences of 8192
	// tokens; the emulator keeps --seq and says so
	small := []string{"--synthetic", "--steps", "1", "--quiet"}
	report, errOut, code := runCmd(append([]string{"run", "--plan", array, "--plan-index", "0"}, small...)...)
	if code != 0 {
		t.Fatalf("run --plan %s --plan-index 0: exit %d: %s", array, code, errOut)
	}
	var doc struct {
		Plans []map[string]any `json:"plans"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	plans := doc.Plans
	batch := int(plans[0]["global_batch_sequences"].(float64))
	for _, want := range []string{"layout data=4", "seq 64:", fmt.Sprintf("%d sequences per step", batch)} {
		if !strings.Contains(report, want) {
			t.Errorf("run --plan-index 0: report lacks %q:\n%s", want, report)
		}
	}
	if !strings.Contains(errOut, fmt.Sprintf("the plan's %d sequences of 8192 tokens", batch)) || !strings.Contains(errOut, "--seq") {
		t.Errorf("run --plan-index 0: stderr %q does not say the plan's sequence length was not taken", errOut)
	}

	// one plan object, edited to a sequence length the emulator trains
	p := plans[0]
	p["seq_len"], p["global_batch_sequences"] = 128, 8
	b, _ := json.Marshal(p)
	one := write("one.json", b)
	o := runJSONOut(t, append([]string{"run", "--plan", one}, small...)...)
	if o.Model.Seq != 128 || o.Layout != "data=4" {
		t.Errorf("run --plan with seq_len 128: seq %d, layout %s; want 128 and data=4", o.Model.Seq, o.Layout)
	}
	report, _, _ = runCmd(append([]string{"run", "--plan", one}, small...)...)
	if !strings.Contains(report, "8 sequences per step") {
		t.Errorf("run --plan with global_batch_sequences 8: report\n%s", report)
	}
	// flags set on the command line win
	report, errOut, code = runCmd(append([]string{"run", "--plan", one, "--batch", "12", "--seq", "32"}, small...)...)
	if code != 0 || !strings.Contains(report, "12 sequences per step") || !strings.Contains(report, "seq 32:") {
		t.Errorf("run --plan --batch 12 --seq 32: exit %d %s\n%s", code, errOut, report)
	}
	fail(t, []string{"run", "--plan", one, "--plan-index", "1"}, "--plan-index 1", "holds one plan")
	fail(t, []string{"run", "--plan", write("junk.json", []byte(`{"layout": 3}`))}, "--plan", "not what 'shardlab plan --json' prints")
	fail(t, []string{"run", "--plan", write("pod.json", []byte(`{"accelerator_type": "v5litepod-4", "slices": 1, "layout": {"axes": [{"name": "pod", "ici": 4, "dcn": 1}]}}`))},
		"--plan", `axis = "pod"`, "want one of data, fsdp, tensor, pipeline, context, expert")
	// another schema's plan is refused by name; a file without one is read
	p["schema"] = "shardlab/v0"
	b, _ = json.Marshal(p)
	fail(t, []string{"run", "--plan", write("v0.json", b)}, "--plan", `schema "shardlab/v0", want shardlab/v4`)
	b, _ = json.Marshal([]any{plans[0], plans[1]})
	fail(t, []string{"run", "--plan", write("bare.json", b)}, "--plan", "not what 'shardlab plan --json' prints")
}

// TestRunPlanPipelinedLayers: a pipelined plan runs as it stands (the
// defects67 item 11 case, pipeline=8 circular with 2 chunks, stopped at
// --layers' default 4): without --layers, run trains the fewest layers
// from that default up that pipeline x chunks split, and says so; an
// explicit --layers that does not split is refused, naming the flag.
func TestRunPlanPipelinedLayers(t *testing.T) {
	out, errOut, code := runCmd("plan", "--model", "llama3-8b", "--tpu", "v5p-32", "--mesh", "data=2,pipeline=8", "--schedule", "circular", "--chunks", "2", "--json")
	if code != 0 {
		t.Fatalf("plan: exit %d: %s", code, errOut)
	}
	path := filepath.Join(t.TempDir(), "pp.json")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--plan", path, "--synthetic", "--steps", "1", "--quiet", "--d-model", "32", "--d-ff", "64", "--seq", "16"}
	out, errOut, code = runCmd(append(args, "--json")...)
	if code != 0 {
		t.Fatalf("run --plan of a pipeline=8 circular plan with 2 chunks: exit %d: %s", code, errOut)
	}
	var o runOut
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatal(err)
	}
	// 8 stages x 2 chunks: 16 pieces, so 16 layers
	if o.Model.Layers != 16 || o.Schedule != "circular" || o.Chunks != 2 || o.Layout != "data=2,pipeline=8" {
		t.Errorf("run --plan: %d layers, %s with %d chunks on %s; want 16 layers, circular with 2 chunks on data=2,pipeline=8",
			o.Model.Layers, o.Schedule, o.Chunks, o.Layout)
	}
	for _, want := range []string{"pipeline=8 x 2 chunks", "training 16 layers", "--layers"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("run --plan: stderr %q lacks %q", errOut, want)
		}
	}
	// the command line's schedule wins and its chunks count: 1f1b has 1,
	// so 8 layers
	if o := runJSONOut(t, append(args, "--schedule", "1f1b")...); o.Model.Layers != 8 {
		t.Errorf("run --plan --schedule 1f1b over pipeline=8: %d layers, want 8", o.Model.Layers)
	}
	fail(t, append(args, "--layers", "4"), "--layers 4", "pipeline=8 x 2 chunks", "want a multiple of 16 layers")
	fail(t, append(args, "--layers", "24"), "--layers 24", "want a multiple of 16 layers")
	// 64 stages x 32 chunks: no layer count run takes splits 2048 ways
	deep := filepath.Join(t.TempDir(), "deep.json")
	plan := `{"accelerator_type": "v5p-128", "slices": 1, "global_batch_sequences": 64, "micro_batches": 64, "seq_len": 16,
		"schedule": "circular", "chunks_per_device": 32, "layout": {"axes": [{"name": "pipeline", "ici": 64, "dcn": 1}]}}`
	if err := os.WriteFile(deep, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	fail(t, []string{"run", "--plan", deep, "--synthetic"}, "--plan "+deep, "pipeline=64 x 32 chunks", "2048 ways", "1024 layers")
}

// TestRunDiverges: a learning rate far too high makes the loss explode;
// the run stops there, still reports (text and JSON), and exits 1.
func TestRunDiverges(t *testing.T) {
	args := []string{"run", "--synthetic", "--lr", "1", "--steps", "10", "--quiet", "--seq", "16", "--d-model", "32", "--d-ff", "64"}
	out, errOut, code := runCmd(append(args, "--json")...)
	if code != 1 || !strings.Contains(errOut, "training diverged: the loss at step 3") || !strings.Contains(errOut, "lower --lr") {
		t.Errorf("exit %d, stderr %q; want exit 1 naming the step and --lr", code, errOut)
	}
	var o runOut
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatalf("no JSON report: %v\n%s", err, out)
	}
	if o.Diverged == nil || o.Diverged.Step != 3 || len(o.Losses) != 3 || o.Diverged.Reason == "" || !(o.Diverged.Loss > o.Diverged.LossLimit) {
		t.Errorf("diverged %+v with losses %v; want step 3 with a reason", o.Diverged, o.Losses)
	}
	out, _, code = runCmd(args...)
	if code != 1 || !strings.Contains(out, "diverged") || !strings.Contains(out, "stopped after step 3 of 10") || !strings.Contains(out, "peak memory per chip") {
		t.Errorf("text report (exit %d):\n%s", code, out)
	}
}

// TestRunJSONNonFinite: NaN and ±Inf, which JSON cannot hold, encode as
// null instead of failing the whole report.
func TestRunJSONNonFinite(t *testing.T) {
	o := runOut{Losses: []emu.Number{5.5, emu.Number(math.Inf(1)), emu.Number(math.NaN())}, SimStep: emu.Number(math.Inf(-1)),
		Diverged: &emu.DivergedReport{Step: 2, Loss: emu.Number(math.Inf(1)), LossLimit: 16.6, Reason: "the loss at step 2 is +Inf"}}
	var b strings.Builder
	if err := writeJSON(&b, o); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal([]byte(b.String()), &back); err != nil {
		t.Fatal(err)
	}
	losses := back["losses"].([]any)
	if losses[0] != 5.5 || losses[1] != nil || losses[2] != nil || back["simulated_step_seconds"] != nil {
		t.Errorf("losses %v, simulated step %v; want 5.5, null, null and null", losses, back["simulated_step_seconds"])
	}
	if d := back["diverged"].(map[string]any); d["loss_nats"] != nil || d["loss_limit_nats"] != 16.6 || d["reason"] == "" {
		t.Errorf("diverged = %v", d)
	}
}

// TestRunMemoryCheck: a run that will not fit in the available memory is
// refused before it starts, naming the estimate and what is available.
func TestRunMemoryCheck(t *testing.T) {
	defer func(f func() (int64, bool)) { memAvailable = f }(memAvailable)
	memAvailable = func() (int64, bool) { return 8 << 30, true }
	for _, args := range [][]string{{"--d-model", "4096", "--layers", "64"}, {"--seq", "65536"}} {
		_, errOut, code := runCmd(append([]string{"run", "--synthetic", "--quiet"}, args...)...)
		if code != 2 || !strings.Contains(errOut, "the emulator would need about") || !strings.Contains(errOut, "8.00 GiB available") {
			t.Errorf("run %v with 8 GiB available: exit %d, %q", args, code, errOut)
		}
	}
	// the default run needs tens of MiB: refused with 1 MiB, run with 8 GiB
	memAvailable = func() (int64, bool) { return 1 << 20, true }
	if _, errOut, code := runCmd("run", "--synthetic", "--quiet", "--steps", "1"); code != 2 || !strings.Contains(errOut, "1.00 MiB available") {
		t.Errorf("default run with 1 MiB available: exit %d, %q", code, errOut)
	}
	memAvailable = func() (int64, bool) { return 8 << 30, true }
	if _, errOut, code := runCmd("run", "--synthetic", "--quiet", "--steps", "1"); code != 0 {
		t.Errorf("default run with 8 GiB available: exit %d, %q", code, errOut)
	}
}

func TestParseMemAvailable(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"MemTotal:       24576000 kB\nMemFree:        23000000 kB\nMemAvailable:   23500000 kB\n", 23500000 * 1024, true},
		{"MemTotal: 1 kB\n", 0, false},
		{"MemAvailable: 99999999999999999999 kB\n", 0, false},
		{"MemAvailable: -5 kB\n", 0, false},
		{"", 0, false},
	} {
		if got, ok := parseMemAvailable([]byte(tt.in)); got != tt.want || ok != tt.ok {
			t.Errorf("parseMemAvailable(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestCgroupAvailable(t *testing.T) {
	stat := "anon 1073741824\nfile 3221225472\nkernel 1000\n"
	for _, tt := range []struct {
		limit, stat string
		want        int64
		ok          bool
	}{
		{"4294967296\n", stat, 3 << 30, true}, // 4 GiB limit, 1 GiB anonymous: the 3 GiB of page cache does not count
		{"max\n", stat, 0, false},
		{"536870912\n", stat, 0, true},
		{"4294967296\n", "file 5\n", 0, false},
	} {
		if got, ok := cgroupAvailable([]byte(tt.limit), []byte(tt.stat)); got != tt.want || ok != tt.ok {
			t.Errorf("cgroupAvailable(%q, %q) = %d, %v; want %d, %v", tt.limit, tt.stat, got, ok, tt.want, tt.ok)
		}
	}
}

// TestRunCountLimits: counts past what one emulator run can do are
// refused up front, naming the flag, the value and the range.
func TestRunCountLimits(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--steps", "2000000"}, `--steps "2000000", want a whole number from 1 to 1000000`},
		{[]string{"--steps", "0"}, `--steps "0", want a whole number from 1 to 1000000`},
		{[]string{"--layers", "5000"}, `--layers "5000", want a whole number from 1 to 1024`},
		{[]string{"--seq", "100000"}, `--seq "100000", want a whole number from 1 to 65536`},
		{[]string{"--batch", "0"}, `--batch "0", want a whole number from 1 to 1048576`},
		{[]string{"--micro-batches", "5000"}, `--micro-batches "5000", want a whole number from 0 to 4096`},
		{[]string{"--heads", "-1"}, `--heads "-1", want a whole number from 1 to 4096`},
		{[]string{"--slices", "4096", "--mesh", "data=4096(dcn),fsdp=2,tensor=2"}, "16384 chips, more virtual chips than one process runs (at most 4096)"},
		// a mesh that does not cover the slices names the flags that set them
		{[]string{"--tpu", "tpu7x-8", "--mesh", "fsdp=4"}, "run: --mesh fsdp=4 on --slices 2 of --tpu tpu7x-8: mesh: DCN factors = 1"},
		// an expert axis on the dense default model points to --experts
		{[]string{"--mesh", "expert=2,fsdp=2,data=2(dcn)"}, "splits experts 2 ways, and the emulated model is dense: give it experts with --experts N (a multiple of 2)"},
	} {
		_, errOut, code := runCmd(append([]string{"run", "--synthetic", "--quiet"}, tt.args...)...)
		if code != 2 || !strings.Contains(errOut, tt.want) {
			t.Errorf("run %v: exit %d, %q; want exit 2 with %q", tt.args, code, errOut, tt.want)
		}
	}
}

// TestRunChunkedSchedules: run trains interleaved 1F1B and circular
// pipelines, the same bytes for the same seed; --plan carries a plan's
// schedule and chunks; bad combinations are refused in one line naming the
// flag, the value and what is accepted; and a checkpoint resumes only under
// its own schedule.
func TestRunChunkedSchedules(t *testing.T) {
	common := []string{"run", "--tpu", "v5litepod-4", "--slices", "1", "--mesh", "pipeline=2,data=2", "--synthetic", "--steps", "2", "--quiet"}
	inter := runJSONOut(t, append(common, "--schedule", "interleaved", "--chunks", "2")...)
	if inter.Schedule != "interleaved" || inter.Chunks != 2 {
		t.Errorf("--schedule interleaved --chunks 2: JSON schedule %q, chunks %d", inter.Schedule, inter.Chunks)
	}
	if again := runJSONOut(t, append(common, "--schedule", "interleaved", "--chunks", "2")...); again.ParamsSHA256 != inter.ParamsSHA256 {
		t.Errorf("the same interleaved run twice: parameters %s, then %s", inter.ParamsSHA256, again.ParamsSHA256)
	}
	circ := runJSONOut(t, append(common, "--schedule", "circular", "--chunks", "2")...)
	if circ.Schedule != "circular" || circ.Chunks != 2 || len(circ.Losses) != 2 {
		t.Errorf("--schedule circular --chunks 2: JSON schedule %q, chunks %d, losses %v", circ.Schedule, circ.Chunks, circ.Losses)
	}
	if def := runJSONOut(t, append(common, "--schedule", "interleaved")...); def.Chunks != 2 {
		t.Errorf("--schedule interleaved without --chunks: %d chunks, want the default 2", def.Chunks)
	}

	fail(t, append(common, "--schedule", "interleaved", "--chunks", "4"), "--layers 4", "pipeline=2 x 4 chunks", "want a multiple of 8 layers")
	fail(t, append(common, "--schedule", "interleaved", "--micro-batches", "3"), "--micro-batches 3", "interleaved", "want a multiple of 2")
	fail(t, append(common, "--schedule", "circular", "--micro-batches", "5"), "--micro-batches 5", "circular", "want a multiple of 2")
	fail(t, append(common, "--schedule", "interleaved", "--chunks", "1"), "--chunks 1", "want 2 to 64")
	fail(t, append(common, "--schedule", "gpipe", "--chunks", "2"), "--chunks 2", "--schedule gpipe", "want 1")
	fail(t, []string{"run", "--tpu", "v5litepod-4", "--slices", "1", "--mesh", "data=4", "--synthetic", "--schedule", "circular"},
		"--schedule circular", "layout data=4 has none", "want gpipe or 1f1b")

	// a plan's schedule and chunks
	plan := `{"accelerator_type": "v5litepod-4", "slices": 1, "global_batch_sequences": 8, "micro_batches": 4, "seq_len": 32,
		"schedule": "interleaved", "chunks_per_device": 2,
		"layout": {"axes": [{"name": "data", "ici": 2, "dcn": 1}, {"name": "pipeline", "ici": 2, "dcn": 1}]}}`
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	o := runJSONOut(t, "run", "--plan", path, "--synthetic", "--steps", "1", "--quiet")
	if o.Schedule != "interleaved" || o.Chunks != 2 || o.Layout != "data=2,pipeline=2" {
		t.Errorf("run --plan with an interleaved plan: schedule %q, chunks %d, layout %s", o.Schedule, o.Chunks, o.Layout)
	}

	// checkpoints record the schedule and its chunks
	dir := t.TempDir()
	if _, errOut, code := runCmd(append(common, "--schedule", "interleaved", "--checkpoint", dir, "--every", "1")...); code != 0 {
		t.Fatalf("interleaved run with checkpoints: exit %d: %s", code, errOut)
	}
	fail(t, withFlags(common, "--steps", "3", "--schedule", "circular", "--chunks", "2", "--checkpoint", dir, "--resume"),
		`schedule (--schedule) is "interleaved" in the checkpoint, "circular" in this run`)
	fail(t, withFlags(common, "--steps", "3", "--schedule", "circular", "--chunks", "1", "--checkpoint", dir, "--resume"),
		"chunks (--chunks) is 2 in the checkpoint, 1 in this run")
}

// TestRunFlashAttention runs --flash-attention: the report and the JSON say
// so, the model trains, and a checkpoint of it refuses a resume without the
// flag, naming it.
func TestRunFlashAttention(t *testing.T) {
	out, errOut, code := runCmd("run", "--flash-attention", "--synthetic", "--steps", "2", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "attention  flash") {
		t.Errorf("report lacks the attention line:\n%s", out)
	}
	if o := runJSONOut(t, "run", "--flash-attention", "--synthetic", "--steps", "2", "--quiet"); !o.Model.FlashAttention {
		t.Errorf("JSON model = %+v, want flash_attention true", o.Model)
	}
	dir := t.TempDir()
	if _, errOut, code := runCmd("run", "--flash-attention", "--synthetic", "--steps", "2", "--quiet", "--checkpoint", dir, "--every", "2"); code != 0 {
		t.Fatalf("checkpointed run: exit %d: %s", code, errOut)
	}
	_, errOut, code = runCmd("run", "--synthetic", "--steps", "3", "--quiet", "--checkpoint", dir, "--resume")
	if code == 0 || !strings.Contains(errOut, "--flash-attention") {
		t.Errorf("resume without --flash-attention: exit %d, stderr %q; want a refusal naming the flag", code, errOut)
	}
}

// TestRunFaultFlags: a fault-injection flag that would do nothing is bad
// input (exit 2, one line naming it), whichever it is: --kill-point
// without --kill-rank exited 0 silently while --hang was refused. The
// checks come before the one that asks for mpirun, so they hold in one
// process too.
func TestRunFaultFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--kill-point", "write"}, []string{"--kill-point needs --kill-rank"}},
		{[]string{"run", "--kill-point", "written", "--checkpoint", dir}, []string{"--kill-point needs --kill-rank"}},
		{[]string{"run", "--kill-point", "step"}, []string{"--kill-point needs --kill-rank"}},
		{[]string{"run", "--kill-step", "2", "--hang"}, []string{"--kill-step and --hang need --kill-rank"}},
		// the rank dies writing a checkpoint: there must be one to write
		{[]string{"run", "--kill-rank", "1", "--kill-step", "2", "--kill-point", "write"}, []string{"--kill-point write needs --checkpoint"}},
		// a rank hangs after a step; at a checkpoint it dies
		{[]string{"run", "--kill-rank", "1", "--kill-step", "2", "--kill-point", "written", "--checkpoint", dir, "--hang"},
			[]string{"--hang and --kill-point written", "--kill-point step"}},
	} {
		fail(t, tt.args, tt.want...)
	}
}
