package main

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// accumPlan is what plan --json says of a plan's gradient accumulation and
// of the memory XLA's report should read.
type accumPlan struct {
	Steps int `json:"gradient_accumulation_steps"`
	HBM   struct {
		Weights    int64 `json:"weights_bytes"`
		Optimizer  int64 `json:"optimizer_bytes"`
		Report     int64 `json:"xla_report_bytes_per_jax_device"`
		Recomputes bool  `json:"xla_recomputes"`
	} `json:"hbm_used_per_chip"`
}

// TestVerifyCommandsReproduceAccumulation: for a plan that accumulates
// gradients, plan --verify printed export and check commands with --mesh
// and no accumulation, which cost one pass of the whole batch: the export
// of gemma2-27b on v6e-64 at 256 sequences (fsdp=64, 4 micro-batches,
// 29.1 GiB) exited 1, 46.7 GiB over HBM, and the check held the
// compiler's report of the 4 micro-batches against that pass (a factor
// ~0.35). The printed commands now carry --gradient-accumulation-steps:
// the export runs and writes the config the search's own export writes,
// and check, given a log that reads what the plan predicts (its
// arguments, weights and optimizer state, and its XLA report), finds no
// error, and, where the report is not XLA's limit, a factor of 1.
func TestVerifyCommandsReproduceAccumulation(t *testing.T) {
	for _, tt := range []struct {
		job, planOnly []string
	}{
		{[]string{"--model", "gemma2-27b", "--tpu", "v6e-64", "--global-batch", "256"}, nil},
		{[]string{"--model", "llama3-70b", "--tpu", "v6e-256", "--global-batch", "2048"}, []string{"--framework", "maxtext"}},
	} {
		args := append(slices.Clone(tt.job), tt.planOnly...)
		js, errOut, code := runCmd(append([]string{"plan", "--json"}, args...)...)
		var p accumPlan
		if err := json.Unmarshal([]byte(js), &p); err != nil || code != 0 || p.Steps < 2 {
			t.Fatalf("plan --json %v: exit %d %s %v, gradient_accumulation_steps %d, want an accumulating plan", args, code, errOut, err, p.Steps)
		}
		exportArgs, checkArgs := verifyLines(t, args...)
		if i := slices.Index(exportArgs, "--gradient-accumulation-steps"); i < 0 || exportArgs[i+1] != strconv.Itoa(p.Steps) {
			t.Errorf("plan --verify %v: export %q, want --gradient-accumulation-steps %d", args, exportArgs, p.Steps)
		}
		cfg, errOut, code := runCmd(exportArgs...)
		searched, _, _ := runCmd(append([]string{"export", "maxtext"}, tt.job...)...)
		if code != 0 || cfg != searched || !strings.Contains(cfg, fmt.Sprintf("\ngradient_accumulation_steps: %d\n", p.Steps)) {
			t.Errorf("%q: exit %d %s; its config differs from the searched export's or lacks gradient_accumulation_steps %d:\n%.400s", exportArgs, code, errOut, p.Steps, cfg)
		}
		checkPrinted(t, checkArgs, p)
	}
}

// checkPrinted runs plan --verify's check line checkArgs on a compile log
// that reads plan p's prediction.
func checkPrinted(t *testing.T, checkArgs []string, p accumPlan) {
	t.Helper()
	dir := t.TempDir()
	a := p.HBM.Weights + p.HBM.Optimizer
	log := writeLog(t, dir, "compile.log", fmt.Sprintf("Memory analysis: CompiledMemoryStats(argument_size_in_bytes=%d, output_size_in_bytes=%d, alias_size_in_bytes=%d, temp_size_in_bytes=%d)", a, a, a, p.HBM.Report-a))
	cal := filepath.Join(dir, "calibration.json")
	args := slices.Clone(checkArgs)
	i, j := slices.Index(args, "compile.log"), slices.Index(args, "--write-calibration")
	// a plan at XLA's limit gives no factor: its check writes no file
	if i < 0 || (j < 0) != p.HBM.Recomputes || j >= 0 && j+1 >= len(args) {
		t.Fatalf("check line %q: want --compile-log compile.log, and --write-calibration FILE unless the plan is at XLA's limit (%v)", checkArgs, p.HBM.Recomputes)
	}
	args[i] = log
	noCal := args
	if j >= 0 {
		args[j+1] = cal
		noCal = slices.Concat(args[:j], args[j+2:])
	}
	js, errOut, code := runCmd(append(noCal, "--json")...)
	var got struct {
		C struct {
			Err float64 `json:"relative_error"`
		} `json:"comparison"`
	}
	// a report at XLA's limit gives no factor, and passes the gate
	if err := json.Unmarshal([]byte(js), &got); err != nil || code != 0 || math.Abs(got.C.Err) > 1e-4 {
		t.Errorf("%q --json: exit %d (want 0) %s %v, relative error %g, want 0 on a log of the plan's prediction", args, code, errOut, err, got.C.Err)
	}
	if p.HBM.Recomputes {
		return // the report is XLA's limit: there is no factor to take
	}
	if _, errOut, code := runCmd(args...); code != 0 {
		t.Fatalf("%q: exit %d %s", args, code, errOut)
	}
	text, err := readFile("--write-calibration", cal, 1<<20)
	var c struct {
		Scale float64 `json:"temp_scale"`
	}
	if err == nil {
		err = json.Unmarshal(text, &c)
	}
	if err != nil || math.Abs(c.Scale-1) > 1e-3 {
		t.Errorf("%q wrote temp_scale %g (%v), want 1 on a log of the plan's prediction", args, c.Scale, err)
	}
}

// TestMeshPlansItsAccumulation: review 123 #3. plan with --mesh and
// --global-batch and no --gradient-accumulation-steps (its help: "0: the
// planner chooses") costed llama3-70b's 768 sequences on 4 x v5p-128 as
// data=4(dcn),fsdp=64 in one pass and exited 1, "HBM by 34.6 GiB", though
// 3 micro-batches fit (34.1 GiB left). It now plans 3 (768/g splits over
// the 256 batch shards for g = 1 and 3 only), says why, and the printed
// export carries the count and writes the config of the count given;
// --gradient-accumulation-steps 1 is kept and misses, exit 1.
func TestMeshPlansItsAccumulation(t *testing.T) {
	job := []string{"--model", "llama3-70b", "--tpu", "v5p-128", "--slices", "4", "--mesh", "data=4(dcn),fsdp=64", "--remat", "save_dot_except_mlp", "--global-batch", "768"}
	out, errOut, code := runCmd(append([]string{"plan"}, job...)...)
	for _, want := range []string{"gradient accumulation 3 micro-batches", "fits, 34.1 GiB left", "gradient accumulation, chosen by the planner", "misses HBM by 34.6 GiB", "gradient_accumulation_steps 3"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("plan %v: exit %d %s, want exit 0 and %q in:\n%s", job, code, errOut, want, out)
		}
	}
	exportArgs, checkArgs := verifyLines(t, job...)
	for _, args := range [][]string{exportArgs, checkArgs} {
		if i := slices.Index(args, "--gradient-accumulation-steps"); i < 0 || args[i+1] != "3" {
			t.Errorf("plan --verify: %q, want --gradient-accumulation-steps 3", args)
		}
	}
	cfg, errOut, code := runCmd(exportArgs...)
	chosen, _, _ := runCmd(append([]string{"export", "maxtext"}, job...)...)
	if code != 0 || cfg != chosen || !strings.Contains(cfg, "\ngradient_accumulation_steps: 3\n") {
		t.Errorf("%q: exit %d %s; want the config of 3 micro-batches that export of the plan's flags writes:\n%.400s", exportArgs, code, errOut, cfg)
	}
	_, errOut, code = runCmd(append([]string{"plan", "--gradient-accumulation-steps", "1"}, job...)...)
	if code != 1 || !strings.Contains(errOut, "does not fit: HBM by 34.6 GiB") {
		t.Errorf("plan --gradient-accumulation-steps 1: exit %d %q, want 1 and the one pass's miss", code, errOut)
	}
	// a compile log does not say its count: check asks for it
	log := writeLog(t, t.TempDir(), "compile.log", "Ran out of memory in memory space hbm. Used 130G of 95.74G hbm")
	if _, errOut, code = runCmd(append([]string{"check", "--compile-log", log}, job...)...); code != 2 || !strings.Contains(errOut, "give --gradient-accumulation-steps as the compiled config's") {
		t.Errorf("check without --gradient-accumulation-steps: exit %d %q, want 2 asking for it", code, errOut)
	}
	// the compile failed: exit 1 after the comparison
	if out, errOut, code = runCmd(append([]string{"check", "--compile-log", log, "--gradient-accumulation-steps", "1"}, job...)...); code != 1 || !strings.Contains(out, "out of memory at 130.00 GiB") {
		t.Errorf("check --gradient-accumulation-steps 1: exit %d %s\n%s", code, errOut, out)
	}
}
