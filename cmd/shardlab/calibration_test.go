package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"shardlab/cost"
	"strings"
	"testing"
)

// TestCalibrationSourceRoundTrip: the job check writes in a calibration's
// source reads back, whatever the log's path holds; a source it did not
// write names no job.
func TestCalibrationSourceRoundTrip(t *testing.T) {
	for _, c := range []struct{ path, model, accel, layout string }{
		{"compile.log", "llama3-8b", "v5p-8", "fsdp=4"},
		{"/logs/a, against b on c d, read e.log", "llama3-70b", "tpu7x-128", "data=2(dcn),fsdp=128"},
		{"x.log", "my model on v5p", "v5litepod-1", "single chip"},
	} {
		got, ok := parseCalibrationSource(calibrationSource(c.path, c.model, c.accel, c.layout, "2026-12-07"))
		if want := (measuredJob{c.model, c.accel, layoutSpec{c.layout}, "", "", 0, 0}); !ok || got != want {
			t.Errorf("parseCalibrationSource(calibrationSource(%q, %q, %q, %q)) = %+v, %v, want %+v", c.path, c.model, c.accel, c.layout, got, ok, want)
		}
	}
	for _, src := range []string{"", "measured by hand", "x.log, against llama3-8b, read 2026-12-07"} {
		if got, ok := parseCalibrationSource(src); ok {
			t.Errorf("parseCalibrationSource(%q) = %+v, want no job", src, got)
		}
	}
}

// TestPlanNamesCalibration: a temporaries' factor changed plan's answer
// and the output did not say so. With --calibration the text's first line
// and the JSON's temporaries_calibration name the file, what it scales and
// the job it was measured on, and warn where the plan's model or TPU
// generation is another; --temp-scale other than 1 is named too.
func TestPlanNamesCalibration(t *testing.T) {
	dir := t.TempDir()
	cal := filepath.Join(dir, "cal.json")
	job := []string{"--model", "llama3-8b", "--tpu", "v5p-8"}
	if _, errOut, code := runCmd(append([]string{"check", "--compile-log", "testdata/compile_memory_analysis.log", "--write-calibration", cal}, job...)...); code != 0 {
		t.Fatalf("check: exit %d %s", code, errOut)
	}
	out, errOut, code := runCmd(append([]string{"plan", "--calibration", cal}, job...)...)
	first, _, _ := strings.Cut(out, "\n")
	if code != 0 || !strings.HasPrefix(first, "Calibration: --calibration "+cal+" scales the estimate of the step's temporaries") ||
		!strings.Contains(first, "by 0.883, measured by a compile of llama3-8b on v5p-8, layout fsdp=4") || strings.Contains(out, "warning:") {
		t.Errorf("plan --calibration (its own job): exit %d %s\n%.600s", code, errOut, out)
	}
	other := []string{"plan", "--calibration", cal, "--model", "llama3-70b", "--tpu", "v6e-256", "--mesh", "fsdp=256"}
	out, _, _ = runCmd(other...)
	for _, w := range []string{"warning: the calibration was measured on llama3-8b, this plan is of llama3-70b", "warning: the calibration was measured on v5p-8 (v5p), this plan is on v6e",
		"warning: the calibration was measured under remat minimal, this plan's layout uses "} {
		if !strings.Contains(out, w) {
			t.Errorf("plan --calibration (another model and TPU): no %q in\n%.800s", w, out)
		}
	}
	js, _, _ := runCmd(append(other, "--json")...)
	var p struct {
		C *calibrationJSON `json:"temporaries_calibration"`
	}
	if err := json.Unmarshal([]byte(js), &p); err != nil || p.C == nil {
		t.Fatalf("plan --calibration --json: %v, no temporaries_calibration\n%.300s", err, js)
	}
	if c := p.C; c.Flag != "--calibration" || c.File != cal || c.MeasuredOn == nil || *c.MeasuredOn != (measuredJob{"llama3-8b", "v5p-8", layoutSpec{"fsdp=4"}, cost.RematMinimal, "", 8, 1}) || len(c.Warnings) != 5 || c.TempScale < 0.88 || c.TempScale > 0.89 {
		t.Errorf("plan --calibration --json: temporaries_calibration %+v, want the file, its job llama3-8b on v5p-8 fsdp=4 under remat minimal at 8 sequences in 1 micro-batch, 0.883 and five warnings (model, generation, remat, layout, batch)", c)
	}
	out, _, _ = runCmd(append([]string{"plan", "--temp-scale", "1.5"}, job...)...)
	if !strings.HasPrefix(out, "Calibration: --temp-scale 1.5 scales the estimate of the step's temporaries") {
		t.Errorf("plan --temp-scale 1.5: %.300s", out)
	}
	for _, s := range []string{"1", "0"} {
		if out, _, _ := runCmd(append([]string{"plan", "--temp-scale", s}, job...)...); strings.Contains(out, "Calibration") {
			t.Errorf("plan --temp-scale %s (no change) names a calibration: %.300s", s, out)
		}
	}
}

// TestCalibrationWarnsOtherProgram: a factor measured on one layout's
// program was taken for another's without a word. A file measured on
// llama3-8b on v5p-8, fsdp=4, 8 sequences in one pass under remat
// minimal, held to a plan of the same model, generation and policy: its
// own job warns of nothing; another layout, another global batch, or the
// same batch in two micro-batches each warn of that, and only that.
func TestCalibrationWarnsOtherProgram(t *testing.T) {
	cal := filepath.Join(t.TempDir(), "cal.json")
	job := []string{"--model", "llama3-8b", "--tpu", "v5p-8", "--remat", "minimal"}
	measured := append([]string{"--mesh", "fsdp=4", "--global-batch", "8"}, job...)
	if _, errOut, code := runCmd(append([]string{"check", "--compile-log", "testdata/compile_memory_analysis.log", "--write-calibration", cal}, measured...)...); code != 0 {
		t.Fatalf("check: exit %d %s", code, errOut)
	}
	for _, c := range []struct {
		args []string
		want string // the one warning, "" for none
	}{
		{[]string{"--mesh", "fsdp=4", "--global-batch", "8"}, ""},
		{[]string{"--mesh", "fsdp=2,tensor=2", "--global-batch", "8"}, "the calibration was measured on layout fsdp=4, this plan's is fsdp=2,tensor=2: a factor measured on one layout's program is a guess for another's"},
		{[]string{"--mesh", "fsdp=4", "--global-batch", "4"}, "the calibration was measured at a global batch of 8 sequences in 1 micro-batch, this plan's layout runs 4 sequences in 1 micro-batch"},
		{[]string{"--mesh", "fsdp=4", "--global-batch", "8", "--gradient-accumulation-steps", "2"}, "the calibration was measured at a global batch of 8 sequences in 1 micro-batch, this plan's layout runs 8 sequences in 2 micro-batches"},
	} {
		args := append(append([]string{"plan", "--json", "--calibration", cal}, job...), c.args...)
		js, errOut, code := runCmd(args...)
		var p struct {
			C *calibrationJSON `json:"temporaries_calibration"`
		}
		if err := json.Unmarshal([]byte(js), &p); code != 0 || err != nil || p.C == nil {
			t.Fatalf("%v: exit %d %s %v\n%.300s", args, code, errOut, err, js)
		}
		switch w := p.C.Warnings; {
		case c.want == "" && len(w) != 0:
			t.Errorf("%v: warnings %q, want none (the job measured)", c.args, w)
		case c.want != "" && (len(w) != 1 || !strings.HasPrefix(w[0], c.want)):
			t.Errorf("%v: warnings %q, want one starting %q", c.args, w, c.want)
		}
	}
}

// TestCheckRematNone: export writes --remat none as MaxText's custom
// policy with every named tensor on device (cost.NamedNone), and that is
// what a compile of the export ran. check given --remat none compares
// the log with that policy, not with none's costing (they differ by
// 27 % on this log), says so, and its calibration file records the
// custom policy: the same factor and file as check given the policy.
func TestCheckRematNone(t *testing.T) {
	dir := t.TempDir()
	job := []string{"--model", "llama3-8b", "--tpu", "v5p-8", "--mesh", "fsdp=4", "--global-batch", "4"}
	run := func(name string, remat ...string) (string, string) {
		t.Helper()
		cal := filepath.Join(dir, name)
		args := append(append([]string{"check", "--compile-log", "testdata/compile_memory_analysis.log", "--write-calibration", cal}, job...), remat...)
		out, errOut, code := runCmd(args...)
		if code != 0 {
			t.Fatalf("check %v: exit %d %s", remat, code, errOut)
		}
		data, err := os.ReadFile(cal)
		if err != nil {
			t.Fatal(err)
		}
		return out, string(data)
	}
	noneOut, noneFile := run("none.json", "--remat", "none")
	customOut, customFile := run("custom.json", "--remat", "custom", "--remat-custom", cost.NamedNone().String())
	factor := func(out string) string {
		_, rest, _ := strings.Cut(out, "temporaries factor ")
		f, _, _ := strings.Cut(rest, " ")
		return f
	}
	if factor(noneOut) == "" || factor(noneOut) != factor(customOut) || noneFile != customFile {
		t.Errorf("check --remat none: factor %q, file\n%s\nwant check --remat custom's: %q, file\n%s", factor(noneOut), noneFile, factor(customOut), customFile)
	}
	// the verdict first, then the note
	if first, rest, _ := strings.Cut(noneOut, "\n"); !strings.HasPrefix(first, "the compile succeeded at ") || !strings.HasPrefix(rest, "note: --remat none: MaxText has no policy that keeps every activation") || strings.Contains(customOut, "note: --remat none") {
		t.Errorf("check --remat none does not say what it compared (or check --remat custom does):\n%.300s\n%.300s", noneOut, customOut)
	}
	js, _, _ := runCmd(append(append([]string{"check", "--compile-log", "testdata/compile_memory_analysis.log", "--json"}, job...), "--remat", "none")...)
	if !strings.Contains(js, `"warnings": [`+"\n"+`    "--remat none: MaxText has no policy`) {
		t.Errorf("check --remat none --json: the translation is not among the warnings:\n%.2000s", js)
	}
}
