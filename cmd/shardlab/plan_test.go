package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanRefusesContradictions: flags that other flags make meaningless
// or that contradict each other are refused with exit 2, naming both:
// --dcn-gbps on one slice (no DCN; it was ignored), and two chart files
// at one path (the SVG was silently overwritten by the PNG).
func TestPlanRefusesContradictions(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "p.png")
	fail(t, []string{"plan", "--model", "llama3-8b", "--tpu", "v5p-8", "--dcn-gbps", "100"}, "--dcn-gbps 100 with --slices 1", "--slices 2 or more")
	fail(t, []string{"plan", "--svg", p, "--png", p}, "--svg "+p+" and --png "+p+" name one file")
	fail(t, []string{"plan", "--html", p, "--png", filepath.Join(dir, ".", "x", "..", "p.png")}, "--html "+p+" and --png", "name one file")
}

// TestShownModelIsNoSpec: what 'model show --json' prints, given back as
// --model, is refused saying what it is and which command prints the spec
// (it listed every spec field after `field "schema" is not a spec field`);
// what that command prints plans.
func TestShownModelIsNoSpec(t *testing.T) {
	dir := t.TempDir()
	shown, errOut, code := runCmd("model", "show", "llama3-8b", "--json")
	if code != 0 {
		t.Fatalf("model show --json: exit %d %s", code, errOut)
	}
	path := writeLog(t, dir, "m.json", shown)
	want := "--model " + path + `: holds "schema": it is what 'shardlab model show --json' prints, not a spec; 'shardlab model show llama3-8b --spec' prints the model as a spec`
	fail(t, []string{"plan", "--model", path}, want)
	spec, errOut, code := runCmd("model", "show", "llama3-8b", "--spec")
	if code != 0 {
		t.Fatalf("model show --spec: exit %d %s", code, errOut)
	}
	if _, errOut, code := runCmd("plan", "--model", writeLog(t, dir, "m.yaml", spec), "--tpu", "v5p-8", "--mesh", "fsdp=4"); code != 0 {
		t.Errorf("plan --model (model show --spec): exit %d %s", code, errOut)
	}
}

// TestPlanChunksAgainstFixedMesh: with one layout fixed, chunks that do not
// split the layers over its pipeline contradict the user's own flags: exit
// 2 naming --chunks and the values that work (it exited 1 with "16 layouts
// where pipeline does not divide the layers").
func TestPlanChunksAgainstFixedMesh(t *testing.T) {
	fail(t, []string{"plan", "--model", "llama3-8b", "--tpu", "v5p-8", "--schedule", "circular", "--chunks", "3", "--mesh", "pipeline=4"},
		`--chunks 3 with --mesh "pipeline=4"`, "want 1, 2, 4 or 8")
}

// TestPlanPipelineAgainstLayers: a fixed layout whose pipeline does not
// divide the model's layers is the user's own contradiction: exit 2 naming
// --mesh and the pipeline degrees that work (it exited 1 with "16 layouts
// where pipeline does not divide the layers").
func TestPlanPipelineAgainstLayers(t *testing.T) {
	fail(t, []string{"plan", "--model", "llama3-8b", "--tpu", "v5p-384", "--mesh", "pipeline=3,fsdp=64"},
		`--mesh "pipeline=3,fsdp=64": pipeline 3 does not divide llama3-8b's 32 layers`, "want a pipeline degree of 1, 2, 4, 8, 16 or 32")
}

// TestPlanNotesTopology: --topology that is not the accelerator type's
// own planned another slice silently (--tpu v5p-128 --topology 4x4x8 is a
// v5p-256); plan says what it replaced and what it plans, and says
// nothing of the type's own topology.
func TestPlanNotesTopology(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tpu", "v5p-128", "--topology", "4x4x8"}, "Note: --topology 4x4x8 replaced the default topology of v5p-128 (4x4x4, 64 chips): the plan's slice is a v5p-256 (4x4x8, 128 chips)\n\n"},
		{[]string{"--topology", "4x4x8"}, "Note: --topology 4x4x8 replaced the default topology of tpu7x-8, --tpu's default (2x2x1, 4 chips): the plan's slice is a tpu7x-256 (4x4x8, 128 chips)\n\n"},
		{[]string{"--tpu", "v5p-128", "--topology", "4x4x4"}, ""},
	} {
		args := append([]string{"plan", "--model", "llama3-8b"}, c.args...)
		out, errOut, code := runCmd(args...)
		got, _, _ := strings.Cut(out, "llama3-8b (")
		if code != 0 || got != c.want {
			t.Errorf("shardlab %s: exit %d %s, before the plan %q, want %q", strings.Join(args, " "), code, errOut, got, c.want)
		}
	}
}
