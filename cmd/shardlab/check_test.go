package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyThenCheck runs what plan --verify prints, with a compile log
// standing in for MaxText's train_compile: the export writes the config
// the compile command names, check reads a memory analysis whose
// temporaries are twice the plan's, writes that factor, and plan
// --calibration plans with the temporaries doubled.
func TestVerifyThenCheck(t *testing.T) {
	dir := t.TempDir()
	job := []string{"--model", "llama3-8b", "--tpu", "v5p-8"}
	out, errOut, code := runCmd(append([]string{"plan", "--verify"}, job...)...)
	if code != 0 {
		t.Fatalf("plan --verify: exit %d: %s", code, errOut)
	}
	i := strings.Index(out, "Verify before renting TPUs")
	if i < 0 {
		t.Fatalf("plan --verify printed no verification:\n%s", out)
	}
	lines := strings.Split(out[i:], "\n")
	if len(lines) < 4 || !strings.Contains(lines[2], "train_compile shardlab-llama3-8b.yml") || !strings.Contains(lines[2], "compile_topology=v5p-8 compile_topology_num_slices=1") {
		t.Fatalf("the compile command:\n%s", out[i:])
	}
	// the export line: its flags, then "> FILE"
	exportArgs := strings.Fields(strings.ReplaceAll(strings.TrimSpace(strings.Split(lines[1], ">")[0]), "'", ""))[1:]
	cfg, errOut, code := runCmd(exportArgs...)
	if code != 0 || !strings.Contains(cfg, "base_config: 'base.yml'") {
		t.Fatalf("%v: exit %d %s\n%s", exportArgs, code, errOut, cfg)
	}
	checkArgs := strings.Fields(strings.ReplaceAll(strings.TrimSpace(lines[3]), "'", ""))[1:]
	if checkArgs[0] != "check" || checkArgs[1] != "--compile-log" {
		t.Fatalf("the check line: %v", checkArgs)
	}
	// the plan's own split, per device (v5p: one device a chip)
	js, _, _ := runCmd(append([]string{"check", "--compile-log", writeLog(t, dir, "seed.log", "Used 200G of 95.74G hbm"), "--json"}, checkArgs[3:len(checkArgs)-2]...)...)
	var seed struct {
		Result struct {
			Arguments int64  `json:"predicted_argument_bytes"`
			Temp      int64  `json:"predicted_temp_bytes"`
			Gen       string `json:"generation"`
			Accel     string `json:"accelerator_type"`
			Model     string `json:"model"`
		} `json:"comparison"`
	}
	var keys struct {
		Comparison map[string]any `json:"comparison"`
	}
	if err := errors.Join(json.Unmarshal([]byte(js), &seed), json.Unmarshal([]byte(js), &keys)); err != nil || seed.Result.Temp <= 0 {
		t.Fatalf("check --json: %v\n%s", err, js)
	}
	// the comparison names the plan it is of, and no memory-table case
	_, id := keys.Comparison["id"]
	_, source := keys.Comparison["source"]
	if r := seed.Result; r.Gen != "v5p" || r.Accel != "v5p-8" || r.Model == "" || id || source {
		t.Errorf("check --json comparison: generation %q, accelerator %q, model %q, want the plan's (and no empty case id or source)\n%s", r.Gen, r.Accel, r.Model, js)
	}
	a, tmp := seed.Result.Arguments, seed.Result.Temp
	log := writeLog(t, dir, "compile.log", fmt.Sprintf("Memory analysis: CompiledMemoryStats(generated_code_size_in_bytes=1, argument_size_in_bytes=%d, output_size_in_bytes=%d, alias_size_in_bytes=%d, temp_size_in_bytes=%d)", a, a, a, 2*tmp))
	cal := filepath.Join(dir, "calibration.json")
	args := append([]string{"check", "--compile-log", log}, checkArgs[3:len(checkArgs)-2]...)
	out, errOut, code = runCmd(append(args, "--write-calibration", cal)...)
	if code != 0 || !strings.Contains(out, "temporaries factor 2.000") || !strings.Contains(out, "-50.0%") {
		t.Fatalf("check: exit %d %s\n%s", code, errOut, out)
	}
	base, _, _ := runCmd(append([]string{"plan", "--json"}, checkArgs[3:len(checkArgs)-2]...)...)
	scaled, errOut, code := runCmd(append([]string{"plan", "--json", "--calibration", cal}, checkArgs[3:len(checkArgs)-2]...)...)
	if code != 0 && code != 1 {
		t.Fatalf("plan --calibration: exit %d %s", code, errOut)
	}
	temp := func(out string) int64 {
		var v struct {
			M struct {
				G int64 `json:"gradients_bytes"`
				A int64 `json:"activations_bytes"`
				T int64 `json:"transient_bytes"`
			} `json:"hbm_used_per_chip"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%v\n%.300s", err, out)
		}
		return v.M.G + v.M.A + v.M.T
	}
	if b, s := temp(base), temp(scaled); s < 2*b-4 || s > 2*b+4 {
		t.Errorf("plan --calibration: temporaries %d, want twice %d", s, b)
	}
}

func writeLog(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// predicted is the plan of job's arguments and temporaries a JAX device,
// as check --json compares a log with them: read from the comparison of
// a compile that failed (exit 1, the comparison printed).
func predicted(t *testing.T, job []string) (arguments, temp int64) {
	t.Helper()
	seed := writeLog(t, t.TempDir(), "seed.log", "Used 900G of 95.74G hbm")
	js, errOut, code := runCmd(append([]string{"check", "--compile-log", seed, "--json"}, job...)...)
	var doc struct {
		R struct {
			A int64 `json:"predicted_argument_bytes"`
			T int64 `json:"predicted_temp_bytes"`
		} `json:"comparison"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil || code != 1 || doc.R.A <= 0 || doc.R.T <= 0 {
		t.Fatalf("check --json of %v: exit %d %s %v\n%s", job, code, errOut, err, js)
	}
	return doc.R.A, doc.R.T
}

// TestCheckRefuses: bad input is a usage error (exit 2), with nothing on
// stdout.
func TestCheckRefuses(t *testing.T) {
	dir := t.TempDir()
	job := []string{"--model", "llama3-8b", "--tpu", "v5p-8", "--mesh", "fsdp=4", "--global-batch", "8"}
	fail(t, append([]string{"check"}, job...), "--compile-log is required")
	fail(t, append([]string{"check", "--compile-log", writeLog(t, dir, "empty.log", "step 1 loss 2.1\n")}, job...), "--compile-log", "no memory report")
	fail(t, append([]string{"check", "--compile-log", writeLog(t, dir, "bad.log", "Used 1.2.3G of 30G hbm")}, job...), "--compile-log", "size")
	tiny := writeLog(t, dir, "tiny.log", "CompiledMemoryStats(argument_size_in_bytes=1, output_size_in_bytes=1, alias_size_in_bytes=1, temp_size_in_bytes=1)")
	fail(t, append([]string{"check", "--compile-log", tiny, "--write-calibration", dir}, job...), "--write-calibration")
	fail(t, append([]string{"check", "--compile-log", dir}, job...), "--compile-log")
	fail(t, []string{"plan", "--calibration", tiny}, "--calibration", "memory calibration")
	fail(t, []string{"plan", "--calibration", tiny, "--temp-scale", "2"}, "--calibration and --temp-scale")
	fail(t, []string{"plan", "--temp-scale", "9"}, "--temp-scale")
}

// TestCheckHostTemp: a compile whose memory analysis gives host
// temporaries (what XLA put in pinned host memory) is held against the
// plan's offloaded activations, on a plan that offloads its layer inputs:
// reported at twice the plan's bytes, the row says -50.0 %.
func TestCheckHostTemp(t *testing.T) {
	dir := t.TempDir()
	job := []string{"--model", "llama3-8b", "--tpu", "v5p-8", "--mesh", "fsdp=4", "--global-batch", "8", "--remat", "custom", "--remat-custom", "decoder_layer_input=offload"}
	js, errOut, code := runCmd(append([]string{"plan", "--json"}, job...)...)
	if code != 0 {
		t.Fatalf("plan: exit %d %s", code, errOut)
	}
	var p struct {
		Host int64 `json:"host_offloaded_per_chip_bytes"`
		RAM  int64 `json:"host_ram_per_chip_bytes"`
	}
	if err := json.Unmarshal([]byte(js), &p); err != nil || p.Host <= 0 || p.RAM != 112e9 {
		t.Fatalf("plan --json: offloaded %d, RAM %d (%v), want some offloaded and ct5p-hightpu-4t's 448 GB / 4", p.Host, p.RAM, err)
	}
	a, tmp := predicted(t, job)
	log := writeLog(t, dir, "compile.log", fmt.Sprintf("CompiledMemoryStats(argument_size_in_bytes=%d, output_size_in_bytes=%[1]d, alias_size_in_bytes=%[1]d, temp_size_in_bytes=%d, host_temp_size_in_bytes=%d)", a, tmp, 2*p.Host))
	out, errOut, code := runCmd(append([]string{"check", "--compile-log", log}, job...)...)
	if code != 0 {
		t.Fatalf("check: exit %d %s", code, errOut)
	}
	var row string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "host temporaries") {
			row = l
		}
	}
	if !strings.HasSuffix(strings.TrimSpace(row), "-50.0%") {
		t.Errorf("check: host row %q, want the plan's offload at -50.0%% of the compile's\n%s", row, out)
	}
}

// TestPlanNamesWhatStopsTheBatch: a plan says whether HBM, host memory or
// the batch limit stops one more sequence per chip per micro-batch, in
// text and JSON. Llama 3 8B on v5p-8 offloading every tagged tensor and
// the optimizer state fits 4 sequences a chip and overflows the chip's
// 112 GB of host RAM with a fifth, with HBM to spare.
func TestPlanNamesWhatStopsTheBatch(t *testing.T) {
	job := []string{"--model", "llama3-8b", "--tpu", "v5p-8", "--mesh", "fsdp=4", "--remat", "custom", "--remat-custom",
		"decoder_layer_input=offload,query_proj=offload,key_proj=offload,value_proj=offload,out_proj=offload,mlpwi_0=offload,mlpwi_1=offload",
		"--precision", "bf16", "--optimizer-offload", "--max-global-batch", "4096"}
	out, errOut, code := runCmd(append([]string{"plan"}, job...)...)
	if code != 0 || !strings.Contains(out, "at most 4 sequences per chip per micro-batch fit this layout (host memory stops one more)") {
		t.Errorf("plan: exit %d %s\n%s", code, errOut, out)
	}
	js, _, _ := runCmd(append([]string{"plan", "--json"}, job...)...)
	var p struct {
		Most  int    `json:"max_fitting_sequences_per_chip_per_micro_batch"`
		Bound string `json:"max_fitting_bound"`
	}
	if err := json.Unmarshal([]byte(js), &p); err != nil || p.Most != 4 || p.Bound != "host_memory" {
		t.Errorf("plan --json: %d sequences bound by %q (%v), want 4 by host_memory", p.Most, p.Bound, err)
	}
}

// TestCheckAtTheLimit: where the plan's needed peak fits the log's
// capacity but its laid-out peak does not, XLA recomputes down to the
// capacity, so a memory report there says how XLA squeezed the step, not
// how far the temporaries' model is off: check compares with the capacity
// and writes no calibration. Llama 3 8B on v5p-8 at fsdp=4, 28 sequences
// and full remat needs about 73.3 GiB a chip and lays out 95.7. An
// out-of-memory message there ("Used 101G of 95.74G") is what XLA could
// not squeeze below: the plan said it fits, so its needed peak was short,
// and check calibrates against it (it declined before, and with
// --write-calibration printed nothing and exited 2: the one verdict the
// user most needed was hidden). The calibrated plan refuses the layout.
func TestCheckAtTheLimit(t *testing.T) {
	dir := t.TempDir()
	// the log is of one pass; calibrated, the planner would accumulate
	job := []string{"--model", "llama3-8b", "--tpu", "v5p-8", "--mesh", "fsdp=4", "--global-batch", "28", "--remat", "full", "--gradient-accumulation-steps", "1"}
	js, errOut, code := runCmd(append([]string{"plan", "--json"}, job...)...)
	var p struct {
		M struct {
			Total  int64 `json:"total_bytes"`
			Report int64 `json:"xla_report_bytes_per_jax_device"`
		} `json:"hbm_used_per_chip"`
	}
	if err := json.Unmarshal([]byte(js), &p); code != 0 || err != nil || !(float64(p.M.Total) < 95.74*(1<<30) && float64(p.M.Report) > 95.74*(1<<30)) {
		t.Fatalf("plan --json: exit %d %s, needed %d, laid out %d (%v): want 95.74 GiB between them", code, errOut, p.M.Total, p.M.Report, err)
	}
	cal := filepath.Join(dir, "c.json")
	oom := writeLog(t, dir, "oom.log", "Ran out of memory in memory space hbm. Used 101G of 95.74G hbm.")
	// the compile failed: exit 1, and the factor is written
	out, errOut, code := runCmd(append([]string{"check", "--compile-log", oom, "--write-calibration", cal}, job...)...)
	if code != 1 || !strings.HasPrefix(out, "the compile failed:") || !strings.Contains(out, "out of memory at 101.00 GiB of 95.74 GiB: the plan said it fits") || !strings.Contains(out, "temporaries factor") {
		t.Errorf("check of the OOM: exit %d %s\n%s", code, errOut, out)
	}
	if js, errOut, code = runCmd(append([]string{"plan", "--json", "--calibration", cal}, job...)...); code != 1 || !strings.Contains(errOut, "the --mesh layout does not fit") {
		t.Errorf("plan --calibration of the OOM's factor: exit %d %s, want the layout refused:\n%.400s", code, errOut, js)
	}
	report := writeLog(t, dir, "report.log", "Memory analysis: Total memory size: 95.7 GB, Output size: 22.4 GB, Temp size: 73.3 GB, Argument size: 22.4 GB, Host temp size: 0.0 GB.")
	os.Remove(cal)
	out, errOut, code = runCmd(append([]string{"check", "--compile-log", report, "--write-calibration", cal}, job...)...)
	// a compile that succeeded at the limit passes the gate, with no factor
	// and no file (review 137 #1: it exited 1, stopping the verify recipe)
	if _, err := os.Stat(cal); code != 0 || err == nil || !strings.Contains(out, "no temporaries factor: the prediction is XLA's limit, 95.74 GiB a JAX device") || errOut != "" {
		t.Errorf("check of a report at the limit: exit %d (want 0 after the comparison, no file; %v)\nstdout %s\nstderr %s", code, err, out, errOut)
	}
}

// TestVerifyOnTPU7x: on a chip of two JAX devices, the export and check
// plan --verify prints give --mesh in devices, as those commands take it:
// the export writes the plan's own config, the check accepts the layout
// (it printed the chips' 'data=4', which both refused).
func TestVerifyOnTPU7x(t *testing.T) {
	job := []string{"--model", "llama3-8b", "--tpu", "tpu7x-8"}
	out, errOut, code := runCmd(append([]string{"plan", "--verify"}, job...)...)
	i := strings.Index(out, "Verify before renting TPUs")
	if code != 0 || i < 0 {
		t.Fatalf("plan --verify: exit %d %s\n%s", code, errOut, out)
	}
	lines := strings.Split(out[i:], "\n")
	exportArgs := strings.Fields(strings.ReplaceAll(strings.TrimSpace(strings.Split(lines[1], ">")[0]), "'", ""))[1:]
	got, errOut, code := runCmd(exportArgs...)
	want, _, _ := runCmd(append([]string{"export", "maxtext"}, job...)...)
	if code != 0 || got != want {
		t.Errorf("%v: exit %d %s; the config differs from export's own: %v", exportArgs, code, errOut, got != want)
	}
	checkArgs := strings.Fields(strings.ReplaceAll(strings.TrimSpace(lines[3]), "'", ""))[1:]
	log := writeLog(t, t.TempDir(), "compile.log", "Used 200G of 94.75G hbm")
	args := append([]string{"check", "--compile-log", log}, checkArgs[3:len(checkArgs)-2]...)
	// accepted: compared, and the compile failed (exit 1), not refused (2)
	if out, errOut, code := runCmd(args...); code != 1 || !strings.HasPrefix(out, "the compile failed: XLA ran out of memory at 200.00 GiB of 94.75 GiB") {
		t.Errorf("%v: exit %d %s\n%s", args, code, errOut, out)
	}
}

// TestCheckRefusesAnotherChipsLog: a log whose capacity is another chip's
// (v6e's 31.25 GiB checked as v5p's), or an out-of-memory message below
// its own capacity, cannot be of the plan: check refuses it, naming both,
// after the comparison (exit 1: the log is read, and not this plan's).
func TestCheckRefusesAnotherChipsLog(t *testing.T) {
	dir := t.TempDir()
	job := []string{"--model", "llama3-8b", "--tpu", "v5p-8", "--mesh", "fsdp=4", "--global-batch", "8", "--remat", "minimal"}
	for log, want := range map[string]string{
		"Used 40.1G of 31.25G hbm": "the capacity it prints is 31.25 GiB a JAX device, v5p's is 95.74 GiB",
		"Used 50G of 95.74G hbm":   "an out-of-memory message at 50.00 GiB of 95.74 GiB: XLA prints one only above its capacity",
	} {
		out, errOut, code := runCmd(append([]string{"check", "--compile-log", writeLog(t, dir, "c.log", log)}, job...)...)
		if code != 1 || !strings.HasPrefix(out, "not this plan's compile: ") || !strings.Contains(errOut, "is not this plan's compile: ") || !strings.Contains(errOut, want) {
			t.Errorf("check of %q: exit %d %s, want 1 saying %q\n%s", log, code, errOut, want, out)
		}
	}
}

// TestCheckOOMCalibrationRefuses: an out-of-memory message reports what XLA
// squeezed the step to, so the factor check writes is against the needed
// peak's temporaries, and the plan calibrated with it refuses the layout
// that failed (it said 91.4 GiB, fits, calibrated against the laid-out
// temporaries); the needed peak is then the reported one.
func TestCheckOOMCalibrationRefuses(t *testing.T) {
	dir := t.TempDir()
	// the log is of one pass; calibrated, the planner would accumulate
	job := []string{"--model", "llama3-8b", "--tpu", "v5p-8", "--mesh", "fsdp=4", "--global-batch", "8", "--remat", "minimal", "--gradient-accumulation-steps", "1"}
	cal := filepath.Join(dir, "cal.json")
	log := writeLog(t, dir, "oom.log", "Ran out of memory in memory space hbm. Used 100.5G of 95.74G hbm")
	if _, errOut, code := runCmd(append([]string{"check", "--compile-log", log, "--write-calibration", cal}, job...)...); code != 1 {
		t.Fatalf("check: exit %d %s, want 1: the compile failed", code, errOut)
	}
	js, _, _ := runCmd(append([]string{"plan", "--json", "--calibration", cal}, job...)...)
	var p struct {
		M struct {
			Total int64 `json:"total_bytes"`
		} `json:"hbm_used_per_chip"`
		Fits bool `json:"fits"`
	}
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, js)
	}
	if want := int64(100.5 * (1 << 30)); p.Fits || p.M.Total < want-want/1000 || p.M.Total > want+want/1000 {
		t.Errorf("calibrated plan: fits %v, needed %d bytes, want refused at the reported %d", p.Fits, p.M.Total, want)
	}
}

// TestCheckJSONErrorAndCalibration: check --json on a job that cannot run
// wrote nothing on stdout (plan and budget write an error document); and
// a check given --temp-scale compared the log with the scaled prediction
// without saying so. Now the error is a document as plan's, and the
// factor is named as plan names it (text and JSON).
func TestCheckJSONErrorAndCalibration(t *testing.T) {
	dir := t.TempDir()
	log := writeLog(t, dir, "oom.log", "Ran out of memory in memory space hbm. Used 40.1G of 31.25G hbm")
	out, errOut, code := runCmd("check", "--json", "--compile-log", log, "--model", "llama3-70b", "--tpu", "v6e-32", "--seq", "8192", "--max-global-batch", "524288tok")
	var doc struct {
		Error string   `json:"error"`
		Fixes []string `json:"fixes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 1 || err != nil || doc.Error == "" || len(doc.Fixes) == 0 {
		t.Fatalf("check --json of a job that cannot run: exit %d (want 1), %v, %+v\nstdout %.300s\nstderr %s", code, err, doc, out, errOut)
	}
	if line := strings.TrimPrefix(strings.TrimSuffix(errOut, "\n"), "shardlab: "); doc.Error != line {
		t.Errorf("error %q, want stderr's line %q", doc.Error, line)
	}
	job := []string{"--compile-log", writeLog(t, dir, "v5p.log", "Ran out of memory in memory space hbm. Used 100.5G of 95.74G hbm"),
		"--model", "llama3-8b", "--tpu", "v5p-8", "--mesh", "fsdp=4", "--global-batch", "8", "--remat", "minimal", "--temp-scale", "1.5",
		"--gradient-accumulation-steps", "1"} // one pass: scaled, the planner would accumulate
	text, errOut, code := runCmd(append([]string{"check"}, job...)...)
	if code != 1 || !strings.Contains(text, "Calibration: --temp-scale 1.5 scales") {
		t.Errorf("check --temp-scale 1.5: exit %d %s, want its Calibration line:\n%s", code, errOut, text)
	}
	out, errOut, code = runCmd(append([]string{"check", "--json"}, job...)...)
	var js struct {
		Given struct {
			TempScale float64 `json:"temp_scale"`
			Flag      string  `json:"flag"`
		} `json:"temporaries_calibration"`
	}
	if err := json.Unmarshal([]byte(out), &js); code != 1 || err != nil || js.Given.Flag != "--temp-scale" || js.Given.TempScale != 1.5 {
		t.Errorf("check --json --temp-scale 1.5: exit %d %v %s, temporaries_calibration %+v", code, err, errOut, js.Given)
	}
}

// TestCheckWarnsOfOtherArguments: a compile whose arguments are far from
// the plan's parameters and optimizer state was calibrated on its
// temporaries alone without a word. The plan's 22.44 GiB against 24.0 GB
// is -6.5 % ((predicted - reported) / reported, the table's error: review
// 135 #9, the warning and refusal said (log - plan) / plan) and warned
// of; against 30.0 GB (-25.2 %) and review 128 #4's 44.5 GB (-49.6 %) it
// is beyond validate.ArgumentBound's 10 %: not this plan's compile, exit
// 1, with no file and no --temp-scale advice.
func TestCheckWarnsOfOtherArguments(t *testing.T) {
	dir := t.TempDir()
	job := []string{"--model", "llama3-8b", "--tpu", "v5p-8", "--mesh", "fsdp=4", "--global-batch", "8", "--remat", "minimal"}
	for _, c := range []struct {
		arg, off string
		code     int
		warn     bool
	}{{"24.0", "-6.5%", 0, true}, {"22.5", "", 0, false}, {"30.0", "-25.2%", 1, false}, {"44.5", "-49.6%", 1, false}} {
		log := writeLog(t, dir, "m.log", "Memory analysis: Total memory size: 80.0 GB, Output size: "+c.arg+" GB, Temp size: 50.0 GB, Argument size: "+c.arg+" GB, Host temp size: 0.0 GB.")
		cal := filepath.Join(dir, "cal.json")
		os.Remove(cal)
		out, errOut, code := runCmd(append([]string{"check", "--compile-log", log, "--write-calibration", cal}, job...)...)
		_, statErr := os.Stat(cal)
		if got := strings.Contains(out, "warning: the plan's parameters and optimizer state, 22.44 GiB, are "+c.off+" against the compile's arguments, "); code != c.code || got != c.warn || (statErr == nil) != (c.code == 0) || !strings.Contains(out, c.off) {
			t.Errorf("arguments %s GB: exit %d %s, warned %v, file %v, want exit %d, warned %v, %s:\n%s", c.arg, code, errOut, got, statErr, c.code, c.warn, c.off, out)
		}
		if c.code == 1 && (strings.Contains(out, "--temp-scale") || !strings.Contains(errOut, "22.44 GiB, are "+c.off+" against the compile's arguments, "+c.arg+"0 GiB (error = (predicted - reported) / reported), beyond the 10%")) {
			t.Errorf("arguments %s GB: a refusal must name both figures and give no factor:\nstderr %s\n%s", c.arg, errOut, out)
		}
		js, _, _ := runCmd(append([]string{"check", "--json", "--compile-log", log}, job...)...)
		var doc struct {
			Warnings []string `json:"warnings"`
			Error    string   `json:"error"`
			Cal      any      `json:"calibration"`
		}
		if err := json.Unmarshal([]byte(js), &doc); err != nil || (len(doc.Warnings) == 1) != c.warn || doc.Warnings == nil || (doc.Error != "") != (c.code == 1) || (doc.Cal == nil) != (c.code == 1) {
			t.Errorf("arguments %s GB: check --json warnings %q, error %q, calibration %v (%v), want the text's", c.arg, doc.Warnings, doc.Error, doc.Cal, err)
		}
	}
}

// TestCheckOOMNeverLowers: an out-of-memory message is what XLA's
// rematerialization squeezed the failed step to, so it gives a factor that
// raises the plan's temporaries, never one that lowers them (review 123
// #6). Llama 3 8B on v4-16 at fsdp=8, 32 sequences, full remat needs about
// 40.6 GiB a device against v4's 30.75: "Used 33.27G of 30.75G" is below
// that, and check offered --temp-scale 0.751, which would make later plans
// accept what failed. It now prints the comparison and no factor, and
// with --write-calibration writes no file; a message above the needed
// peak (45G) still calibrates, by a factor above 1. Each exits 1: the
// compile failed.
func TestCheckOOMNeverLowers(t *testing.T) {
	dir := t.TempDir()
	// one pass, as the log compiled (the planner would accumulate)
	job := []string{"--model", "llama3-8b", "--tpu", "v4-16", "--mesh", "fsdp=8", "--global-batch", "32", "--remat", "full", "--gradient-accumulation-steps", "1"}
	js, errOut, code := runCmd(append([]string{"plan", "--json"}, job...)...)
	var p struct {
		M struct {
			Total int64 `json:"total_bytes"`
		} `json:"hbm_used_per_chip"`
	}
	if err := json.Unmarshal([]byte(js), &p); code != 1 || err != nil || !(float64(p.M.Total) > 33.27*(1<<30) && float64(p.M.Total) < 45*(1<<30)) {
		t.Fatalf("plan --json: exit %d %s, needed %d (%v): want refused, between 33.27 and 45 GiB", code, errOut, p.M.Total, err)
	}
	oom := writeLog(t, dir, "oom.log", "Ran out of memory in memory space hbm. Used 33.27G of 30.75G hbm. Exceeded hbm capacity by 2.52G.")
	out, errOut, code := runCmd(append([]string{"check", "--compile-log", oom}, job...)...)
	if code != 1 || !strings.Contains(out, "total  33.27 GiB") || strings.Contains(out, "--temp-scale") ||
		!strings.Contains(out, "no temporaries factor: the plan's needed peak") || !strings.Contains(out, "recompile at a batch that fits") {
		t.Errorf("check of an OOM below the needed peak: exit %d %s\n%s", code, errOut, out)
	}
	cal := filepath.Join(dir, "c.json")
	out, errOut, code = runCmd(append([]string{"check", "--compile-log", oom, "--write-calibration", cal}, job...)...)
	if _, err := os.Stat(cal); code != 1 || err == nil || !strings.Contains(out, "out of memory at 33.27 GiB of 30.75 GiB") ||
		!strings.Contains(errOut, "--write-calibration "+cal+": nothing written: the plan's needed peak") {
		t.Errorf("check --write-calibration of an OOM below the needed peak: exit %d (want 1, no file; %v)\nstdout %s\nstderr %s", code, err, out, errOut)
	}
	above := writeLog(t, dir, "above.log", "Ran out of memory in memory space hbm. Used 45G of 30.75G hbm.")
	if out, errOut, code = runCmd(append([]string{"check", "--compile-log", above, "--write-calibration", cal}, job...)...); code != 1 {
		t.Fatalf("check of an OOM above the needed peak: exit %d %s\n%s", code, errOut, out)
	}
	b, err := os.ReadFile(cal)
	var c struct {
		TempScale float64 `json:"temp_scale"`
	}
	if err != nil || json.Unmarshal(b, &c) != nil || c.TempScale <= 1 {
		t.Errorf("calibration of an OOM above the needed peak: %v %s, want a factor above 1", err, b)
	}
}

// checkExitRow is one row of TestCheckExitTable: a compile log (or none)
// checked against a job, the exit status, the text's first line, and
// with --json the document's top-level compiled and fits (absent: a
// document without them) and whether it holds a factor; mismatch is a log
// that is not the plan's compile, whose document says so
// (this_plans_compile false, with the reason) and has no compiled, fits
// or comparison verdict (review 135 #5: its compiled false beside fits
// true read MISSED).
type checkExitRow struct {
	name, log string
	job       []string
	code      int
	first     string
	compiled  *bool
	fits      *bool
	factor    bool
	mismatch  bool
}

// TestCheckExitTable holds check to its exit table (checkExits, README's
// Memory section), a row at a time, in text and JSON, and its usage to
// the table. Llama 3 8B on v5p-8 at fsdp=4, 8 sequences, remat minimal,
// fits (89.53 GiB laid out, 22.44 GiB of arguments a device); on v4-16 at
// 32 sequences, full remat, it needs 40.6 GiB of v4's 30.75 (refused);
// at 28 sequences, full remat, the laid-out step is XLA's limit on v5p.
func TestCheckExitTable(t *testing.T) {
	fits := []string{"--model", "llama3-8b", "--tpu", "v5p-8", "--mesh", "fsdp=4", "--global-batch", "8", "--remat", "minimal"}
	refused := []string{"--model", "llama3-8b", "--tpu", "v4-16", "--mesh", "fsdp=8", "--global-batch", "32", "--remat", "full", "--gradient-accumulation-steps", "1"}
	limit := []string{"--model", "llama3-8b", "--tpu", "v5p-8", "--mesh", "fsdp=4", "--global-batch", "28", "--remat", "full", "--gradient-accumulation-steps", "1"}
	far := []string{"--model", "llama3-8b", "--tpu", "v5p-8", "--mesh", "fsdp=4", "--global-batch", "4", "--remat", "full"}
	a, tmp := predicted(t, fits)
	stats := func(arg, temp int64) string {
		return fmt.Sprintf("Memory analysis: CompiledMemoryStats(argument_size_in_bytes=%d, output_size_in_bytes=%[1]d, alias_size_in_bytes=%[1]d, temp_size_in_bytes=%d)", arg, temp)
	}
	yes, no := true, false
	for _, row := range []checkExitRow{
		{"compiled, a factor", stats(a, tmp*6/5), fits, 0, "the compile succeeded at ", &yes, &yes, true, false},
		// review 128 #5: 115.23 GiB against v5p's 95.74, warned of (MaxText's own doc shows such a run)
		{"compiled, above the device", stats(a, 99634149376), fits, 0, "the compile succeeded at 115.23 GiB, 19.49 GiB above the 95.74 GiB a JAX device holds: it may fail when the program loads", &yes, &yes, true, false},
		{"failed where the plan fits (MISSED)", "Ran out of memory in memory space hbm. Used 101.2G of 95.74G hbm.", fits, 1, "the compile failed: XLA ran out of memory at 101.20 GiB of 95.74 GiB a JAX device (the plan said it fits: verdict MISSED): do not launch this plan as it is; plan with the compiler's temporaries (plan --temp-scale 1.329", &no, &yes, true, false},
		{"failed as the plan said", "Ran out of memory in memory space hbm. Used 45G of 30.75G hbm.", refused, 1, "the compile failed: XLA ran out of memory at 45.00 GiB of 30.75 GiB a JAX device (as the plan said: it does not fit)", &no, &no, true, false},
		{"failed, no factor", "Ran out of memory in memory space hbm. Used 33.27G of 30.75G hbm.", refused, 1, "the compile failed: XLA ran out of memory at 33.27 GiB of 30.75 GiB a JAX device (as the plan said: it does not fit): do not launch this plan as it is; compile a smaller --global-batch", &no, &no, false, false},
		// review 137 #1: a compile of a plan at XLA's limit that succeeded is compared and passes the gate (exit 0), with no factor and no file
		{"no factor: at XLA's limit", "Memory analysis: Total memory size: 95.7 GB, Output size: 22.4 GB, Temp size: 73.3 GB, Argument size: 22.4 GB, Host temp size: 0.0 GB.", limit, 0, "the compile succeeded at 95.70 GiB of 95.74 GiB a JAX device (0.04 GiB free): the plan fits\n", &yes, &yes, false, false},
		// review 135 #9: the first line's error is the table's, (22.44 - 44.50) / 44.50
		{"not this plan's: arguments", "Total memory size: 70.0 GB, Output size: 44.5 GB, Temp size: 25.5 GB, Argument size: 44.5 GB", fits, 1, "not this plan's compile: the job's parameters and optimizer state, 22.44 GiB, are -49.6% against the compile's arguments, 44.50 GiB", nil, nil, false, true},
		{"not this plan's: temporaries", "CompiledMemoryStats(argument_size_in_bytes=0, temp_size_in_bytes=5)", fits, 1, "not this plan's compile: the log's temporaries are 0.00 times the prediction's, want 0.25 to 8", nil, nil, false, true},
		{"not this plan's: another chip", "Used 40.1G of 31.25G hbm", fits, 1, "not this plan's compile: the capacity it prints is 31.25 GiB", nil, nil, false, true},
		// review 135 #5: TPU7x's 94.74 GiB a device, checked as v5p
		{"not this plan's: tpu7x's capacity", "Ran out of memory in memory space hbm. Used 99.50G of 94.74G hbm.", fits, 1, "not this plan's compile: the capacity it prints is 94.74 GiB a JAX device, v5p's is 95.74 GiB", nil, nil, false, true},
		{"not this plan's: below capacity", "Used 60.2G of 95.74G hbm", fits, 1, "not this plan's compile: an out-of-memory message at 60.20 GiB of 95.74 GiB", nil, nil, false, true},
		// review 135 #5: XLA's message at v5p's own capacity is this
		// plan's failed compile, however far off: at 4 sequences, full
		// remat, the plan needs 37.79 GiB, 22.44 of arguments, so the
		// message's temporaries are (160 - 22.44) / (37.79 - 22.44) = 8.96
		// times the plan's, beyond cost.MaxTempScale's 8 (it read "not
		// this plan's compile" and dropped "do not launch")
		{"failed, far off", "Ran out of memory in memory space hbm. Used 160.00G of 95.74G hbm.", far, 1, "the compile failed: XLA ran out of memory at 160.00 GiB of 95.74 GiB a JAX device (the plan said it fits: verdict MISSED): do not launch this plan as it is; the log's temporaries are 8.96 times the plan's needed peak's, beyond the 8", &no, &yes, false, false},
		{"the flags' plan cannot run", "Used 101.2G of 95.74G hbm", []string{"--model", "llama3-70b", "--tpu", "v6e-32", "--seq", "8192", "--max-global-batch", "524288tok"}, 1, "", nil, nil, false, false},
		{"usage: no memory report", "step 1 loss 2.1", fits, 2, "", nil, nil, false, false},
		{"usage: a bad flag", "Used 101.2G of 95.74G hbm", append([]string{"--global-batch", "x"}, fits...), 2, "", nil, nil, false, false},
		{"usage: no log", "", fits, 2, "", nil, nil, false, false},
	} {
		checkExit(t, row)
	}
	help, _, code := runCmd("check", "-h")
	_, table, _ := strings.Cut(help, "\nexit status:\n")
	if code != 0 || !strings.Contains(table, "  0  the log is of a compile of this plan that succeeded") || !strings.Contains(table, "\n  1  ") || !strings.Contains(table, "\n  2  bad input") {
		t.Errorf("check -h: exit %d, want the exit table:\n%s", code, help)
	}
}

// checkExit runs row's check as text and as JSON.
func checkExit(t *testing.T, row checkExitRow) {
	t.Helper()
	args := append([]string{"check"}, row.job...)
	if row.log != "" {
		args = append(args, "--compile-log", writeLog(t, t.TempDir(), "c.log", row.log))
	}
	out, errOut, code := runCmd(args...)
	if code != row.code || !strings.HasPrefix(out, row.first) || (code == 0) != (errOut == "") || code == 2 && out != "" {
		t.Errorf("%s: exit %d, want %d, stdout starting %q:\nstderr %s\n%s", row.name, code, row.code, row.first, errOut, out)
	}
	js, _, code := runCmd(append(args, "--json")...)
	if row.mismatch {
		checkMismatchJSON(t, row, js, code)
		return
	}
	if code == 2 || row.compiled == nil {
		if code != row.code || code == 2 && js != "" {
			t.Errorf("%s --json: exit %d, want %d\n%s", row.name, code, row.code, js)
		}
		return
	}
	var doc struct {
		Compiled, Fits *bool
		ThisPlans      *bool  `json:"this_plans_compile"`
		Mismatch       string `json:"mismatch"`
		Error          string
		Calibration    *struct{ TempScale float64 } `json:"calibration"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil || code != row.code || doc.Compiled == nil || *doc.Compiled != *row.compiled ||
		doc.Fits == nil || *doc.Fits != *row.fits || (doc.Error == "") != (code == 0) || (doc.Calibration != nil) != row.factor ||
		doc.ThisPlans == nil || !*doc.ThisPlans || doc.Mismatch != "" {
		t.Errorf("%s --json: exit %d (%v), want %d, this_plans_compile true, compiled %v, fits %v, an error %v, a factor %v:\n%.600s", row.name, code, err, row.code, *row.compiled, *row.fits, code != 0, row.factor, js)
	}
}

// checkMismatchJSON holds the --json document of a log that is not the
// plan's compile to the text: this_plans_compile false and mismatch the
// reason the text's first line gives, no verdict (neither compiled nor
// fits, and the comparison's verdict none), no factor, exit 1.
func checkMismatchJSON(t *testing.T, row checkExitRow, js string, code int) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(js), &doc); err != nil || code != row.code {
		t.Fatalf("%s --json: exit %d (%v), want %d:\n%s", row.name, code, err, row.code, js)
	}
	_, compiled := doc["compiled"]
	_, fits := doc["fits"]
	_, factor := doc["calibration"]
	comparison, _ := doc["comparison"].(map[string]any)
	mismatch, _ := doc["mismatch"].(string)
	want := strings.TrimPrefix(row.first, "not this plan's compile: ")
	if doc["this_plans_compile"] != false || !strings.HasPrefix(mismatch, want) || compiled || fits || factor ||
		comparison["verdict"] != "none: not this plan's compile" || doc["error"] == nil {
		t.Errorf("%s --json: want this_plans_compile false, mismatch %q..., no compiled, fits or calibration, the comparison's verdict none, an error:\n%.900s", row.name, want, js)
	}
}

// TestCheckVerdictWithoutCapacity: jax's memory analysis states no
// capacity, and check held it to none, so a compile of a plan that said
// it would not fit got no verdict ("-", review 137). It is held to the
// chip's XLA capacity a device: Llama 3 70B on v5p-64 at 96 sequences,
// remat save_qkv_proj, predicts 116 GiB a device against v5p's 95.74, and a
// log of 80.5 GiB that compiled reads "over capacity, but it compiled",
// exit 0.
func TestCheckVerdictWithoutCapacity(t *testing.T) {
	job := []string{"--model", "llama3-70b", "--tpu", "v5p-64", "--mesh", "fsdp=32", "--global-batch", "96", "--remat", "save_qkv_proj", "--gradient-accumulation-steps", "1"}
	log := writeLog(t, t.TempDir(), "c.log", "Memory analysis: CompiledMemoryStats(argument_size_in_bytes=26457639936, output_size_in_bytes=26457639936, alias_size_in_bytes=26457639936, temp_size_in_bytes=60000000000)")
	js, errOut, code := runCmd(append([]string{"check", "--json", "--compile-log", log}, job...)...)
	var d struct {
		Fits *bool `json:"fits"`
		C    struct {
			Verdict  string `json:"verdict"`
			Capacity int64  `json:"xla_capacity_bytes"`
		} `json:"comparison"`
	}
	if err := json.Unmarshal([]byte(js), &d); err != nil || code != 0 || d.Fits == nil || *d.Fits || d.C.Verdict != "over capacity, but it compiled" || d.C.Capacity != 102800042230 {
		t.Errorf("check --json: exit %d %s %v: fits %v, verdict %q, capacity %d; want exit 0, false, over capacity but compiled, v5p's 95.74 GiB\n%.600s", code, errOut, err, d.Fits, d.C.Verdict, d.C.Capacity, js)
	}
}
