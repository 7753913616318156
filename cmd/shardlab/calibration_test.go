package main

import (
	"encoding/json"
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
		if want := (measuredJob{c.model, c.accel, layoutSpec{c.layout}, "", ""}); !ok || got != want {
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
	if c := p.C; c.Flag != "--calibration" || c.File != cal || c.MeasuredOn == nil || *c.MeasuredOn != (measuredJob{"llama3-8b", "v5p-8", layoutSpec{"fsdp=4"}, cost.RematMinimal, ""}) || len(c.Warnings) != 3 || c.TempScale < 0.88 || c.TempScale > 0.89 {
		t.Errorf("plan --calibration --json: temporaries_calibration %+v, want the file, its job llama3-8b on v5p-8 fsdp=4 under remat minimal, 0.883 and three warnings", c)
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
