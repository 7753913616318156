package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunDefault(t *testing.T) {
	out, errOut, code := runCmd("run", "--steps", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"8 virtual chips", "2 slices of v5litepod-4 (2x2, 4 chips each; 8 chips in all)", "data=2(dcn),fsdp=2,tensor=2", "Go sources under",
		"data×context all-reduce", "tensor all-reduce", "fsdp all-gather", "peak memory per chip", "simulated"} {
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
	runJSONOut(t, append(common, "--steps", "4", "--checkpoint", dir, "--every", "2")...)
	resumed := runJSONOut(t, append(common, "--steps", "6", "--checkpoint", dir, "--resume")...)
	if len(resumed.Losses) != 2 || resumed.Losses[0] != straight.Losses[4] || resumed.Losses[1] != straight.Losses[5] {
		t.Errorf("resumed losses %v, uninterrupted %v", resumed.Losses, straight.Losses)
	}
	// corrupt it: refused with a clear error
	path := filepath.Join(dir, "checkpoint.bin")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/3] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCmd(append(common, "--steps", "6", "--checkpoint", dir, "--resume")...)
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
		{[]string{"run", "--mesh", "expert=8"}, 2, `axis = "expert"`},
		{[]string{"run", "--tpu", "v5litepod-4", "--slices", "1", "--mesh", "context=4", "--seq", "10"}, 2, "context=4 must divide the sequence length 10"},
		{[]string{"run", "--mesh", "tensor=2(dcn),fsdp=4"}, 2, "tensor parallelism over DCN"},
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
// the array of the defaults too (one picked with --plan-index), and the
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
	var plans []map[string]any
	if err := json.Unmarshal([]byte(out), &plans); err != nil {
		t.Fatal(err)
	}
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
}
