package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"shardlab/cost"
)

// shellWords splits a command line as sh does for what plan --verify
// prints: words apart at blanks, single quotes kept together (with the
// quote, backslash, quote, quote of an escaped quote inside them), up to
// a redirection or pipe.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case quoted:
			w.WriteRune(r)
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case r == '>' || r == '|':
			if inWord {
				t.Fatalf("%q: a redirection inside a word", line)
			}
			return words
		case strings.ContainsRune("\\\"$`;&()<*?", r):
			t.Fatalf("%q: %q outside quotes, which sh would read", line, r)
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("%q: an unclosed quote", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// verifyLines are the export and check command lines plan --verify prints
// for args, as sh splits them (without "shardlab").
func verifyLines(t *testing.T, args ...string) (exportArgs, checkArgs []string) {
	t.Helper()
	out, errOut, code := runCmd(append([]string{"plan", "--verify"}, args...)...)
	i := strings.Index(out, "Verify before renting TPUs")
	if code != 0 || i < 0 {
		t.Fatalf("plan --verify %v: exit %d %s\n%s", args, code, errOut, out)
	}
	lines := strings.Split(out[i:], "\n")
	exportArgs, checkArgs = shellWords(t, strings.TrimSpace(lines[1])), shellWords(t, strings.TrimSpace(lines[3]))
	if exportArgs[0] != "shardlab" || checkArgs[0] != "shardlab" {
		t.Fatalf("the verify lines:\n%s", out[i:])
	}
	return exportArgs[1:], checkArgs[1:]
}

// jobOptions are the flags' options without what compileNote adds from the
// plan (layout, batch, remat, accumulation, schedule) and what only plan
// takes.
func jobOptions(f *planFlags) planFlags {
	g := *f
	g.Mesh, g.GlobalBatch, g.Remat, g.Schedule, g.Chunks, g.GradientAccumulationSteps = "", "", "", "", 0, 0
	g.Framework, g.Top, g.ExampleCost, g.verify, g.json, g.charts, g.goodput, g.tokens = "", 0, 0, false, false, chartFiles{}, false, 0
	return g
}

// TestVerifyLinesRoundTrip: every flag plan --verify passes on reads back
// through export maxtext's and check's own flag sets as the value plan
// took, with no argument left over; a bool flag, true or false, too (it
// printed "--optimizer-offload true", which the flag package reads as
// --optimizer-offload and an argument "true", and "--causal-flops false"
// as --causal-flops true).
func TestVerifyLinesRoundTrip(t *testing.T) {
	for _, bools := range [][]string{
		{"--optimizer-offload", "--parameter-offload", "--causal-flops=false"},
		{"--optimizer-offload=true", "--parameter-offload=false", "--causal-flops=true"},
		{"--optimizer-offload=false", "--causal-flops"},
	} {
		args := append([]string{"--model", "llama3-8b", "--tpu", "v5p-8", "--precision", "bf16", "--seq", "4096", "--hbm-headroom", "0.1"}, bools...)
		pfs, want := newPlanFlags("plan", false)
		if err := pfs.Parse(args); err != nil {
			t.Fatal(err)
		}
		exportArgs, checkArgs := verifyLines(t, args...)
		if exportArgs[0] != "export" || exportArgs[1] != "maxtext" || checkArgs[0] != "check" {
			t.Fatalf("export %v, check %v", exportArgs, checkArgs)
		}
		efs, ef, _ := newExportFlags("maxtext")
		cfs, cf, _ := newCheckFlags()
		for _, c := range []struct {
			name string
			fs   *flag.FlagSet
			f    *planFlags
			args []string
		}{{"export maxtext", efs, ef, exportArgs[2:]}, {"check", cfs, cf, checkArgs[1:]}} {
			if err := c.fs.Parse(c.args); err != nil || c.fs.NArg() != 0 {
				t.Errorf("%s %q: %v, arguments left %q", c.name, c.args, err, c.fs.Args())
				continue
			}
			if got, want := jobOptions(c.f), jobOptions(want); !reflect.DeepEqual(got, want) {
				t.Errorf("plan %q: %s reads its line %q as\n%+v, want\n%+v", args, c.name, c.args, got, want)
			}
		}
	}
}

// TestCheckCalibratesTheUncalibratedModel: the factor check writes is
// against the model without a factor, whatever --calibration or
// --temp-scale it is given, since plan --calibration applies the file's
// factor to that model. Worked by hand: a memory analysis whose
// temporaries are twice the uncalibrated prediction's T gives 2 (reported
// 2T, predicted T) checked bare, checked with the file that gave (it gave
// 1, 2T against the scaled 2T), and checked with --temp-scale 1.5 (it gave
// 1.333).
func TestCheckCalibratesTheUncalibratedModel(t *testing.T) {
	dir := t.TempDir()
	// the logs are of one pass; under --temp-scale 1.5 the planner would
	// accumulate (check then asks for the count)
	job := []string{"--model", "llama3-8b", "--tpu", "v5p-8", "--mesh", "fsdp=4", "--global-batch", "8", "--remat", "minimal", "--gradient-accumulation-steps", "1"}
	seed := writeLog(t, dir, "seed.log", "Used 200G of 95.74G hbm")
	js, errOut, code := runCmd(append([]string{"check", "--compile-log", seed, "--json"}, job...)...)
	var pred struct {
		R struct {
			A int64 `json:"predicted_argument_bytes"`
			T int64 `json:"predicted_temp_bytes"`
		} `json:"comparison"`
	}
	// an out-of-memory message: exit 1, the comparison printed
	if err := json.Unmarshal([]byte(js), &pred); err != nil || code != 1 || pred.R.T <= 0 {
		t.Fatalf("check --json: exit %d %s %v\n%s", code, errOut, err, js)
	}
	a, tmp := pred.R.A, pred.R.T
	log := writeLog(t, dir, "compile.log", fmt.Sprintf("Memory analysis: CompiledMemoryStats(argument_size_in_bytes=%d, output_size_in_bytes=%d, alias_size_in_bytes=%d, temp_size_in_bytes=%d)", a, a, a, 2*tmp))
	read := func(path string) cost.MemoryCalibration {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := cost.ParseMemoryCalibration(data)
		if err != nil {
			t.Fatal(err)
		}
		c.Source, _, _ = strings.Cut(c.Source, ", read ") // the date it was read
		return c
	}
	first := filepath.Join(dir, "first.json")
	if _, errOut, code := runCmd(append([]string{"check", "--compile-log", log, "--write-calibration", first}, job...)...); code != 0 {
		t.Fatalf("check: exit %d %s", code, errOut)
	}
	want := read(first)
	if want.TempScale != 2 || want.Reported != 2*tmp || want.Predicted != tmp {
		t.Fatalf("check: factor %g (reported %d, predicted %d), want 2 (%d over %d)", want.TempScale, want.Reported, want.Predicted, 2*tmp, tmp)
	}
	for _, tt := range []struct {
		given  []string
		factor string // the factor given, as the factor line spells it
	}{{[]string{"--calibration", first}, "2.000"}, {[]string{"--temp-scale", "1.5"}, "1.500"}} {
		again := filepath.Join(dir, "again.json")
		args := append(append([]string{"check", "--compile-log", log, "--write-calibration", again}, tt.given...), job...)
		out, errOut, code := runCmd(args...)
		if code != 0 {
			t.Fatalf("check %v: exit %d %s", tt.given, code, errOut)
		}
		if got := read(again); !reflect.DeepEqual(got, want) {
			t.Errorf("check %v wrote %+v, want what the check without it wrote, %+v", tt.given, got, want)
		}
		if !strings.Contains(out, "temporaries factor 2.000") || !strings.Contains(out, "without the factor "+tt.factor+" given; this factor replaces that one") {
			t.Errorf("check %v: the factor line\n%s", tt.given, out)
		}
	}
}

// TestVerifyNamesOnlyMaxTextsTopologies: plan --verify prints a
// train_compile line only for a compile_topology MaxText's
// accelerator_to_spec_map.py @e591f30c has; for v2 and v3 slices (no key
// there) and a v4 beyond v4-4096 (--topology 16x16x16 is a v4-8192) it
// says there is no ahead-of-time compile target instead of a command
// MaxText refuses.
func TestVerifyNamesOnlyMaxTextsTopologies(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		target string // the compile_topology printed, "" for none
	}{
		{[]string{"--model", "gemma-2b", "--tpu", "v3-8"}, ""},
		{[]string{"--model", "gemma-2b", "--tpu", "v2-8"}, ""},
		{[]string{"--model", "llama3-8b", "--tpu", "v4-4096", "--topology", "16x16x16", "--mesh", "fsdp=4096", "--global-batch", "4096"}, ""},
		{[]string{"--model", "llama3-8b", "--tpu", "v4-4096", "--mesh", "fsdp=2048", "--global-batch", "2048"}, "v4-4096"},
		{[]string{"--model", "gemma-2b", "--tpu", "v5litepod-8", "--mesh", "fsdp=8"}, "v5e-8"},
	} {
		out, errOut, code := runCmd(append([]string{"plan", "--verify"}, tt.args...)...)
		if code != 0 {
			t.Errorf("plan --verify %v: exit %d %s", tt.args, code, errOut)
			continue
		}
		compile, none := strings.Contains(out, "python3 -m maxtext"), strings.Contains(out, "Verify: MaxText has no ahead-of-time compile target for this slice")
		switch {
		case tt.target == "" && (compile || !none):
			t.Errorf("plan --verify %v: want no compile command and the note that there is no target:\n%s", tt.args, out)
		case tt.target != "" && (none || !strings.Contains(out, "compile_topology="+tt.target+" ")):
			t.Errorf("plan --verify %v: want compile_topology=%s:\n%s", tt.args, tt.target, out)
		}
	}
}

// TestVerifyCommandsNameTheJob: plan --verify without flags plans the two
// built-in examples, and the second's export and check commands carried
// only its layout (--mesh 'data=2(dcn),...'), so they planned the default
// job, which refused the DCN factor. The commands now name the job from
// the plan; each export runs and writes the file its compile names.
func TestVerifyCommandsNameTheJob(t *testing.T) {
	out, errOut, code := runCmd("plan", "--verify")
	if code != 0 {
		t.Fatalf("plan --verify: exit %d %s", code, errOut)
	}
	var exports int
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "shardlab export maxtext ") {
			continue
		}
		exports++
		cmdLine, file, ok := strings.Cut(line, " > ")
		if !ok {
			t.Fatalf("export line without a file: %s", line)
		}
		args := shellWords(t, cmdLine)[1:]
		if !slices.Contains(args, "--model") || !slices.Contains(args, "--tpu") {
			t.Errorf("%s: the job is not named", line)
		}
		cfg, errOut, code := runCmd(args...)
		if code != 0 || !strings.Contains(cfg, "run_name="+strings.TrimSuffix(file, ".yml")) {
			t.Errorf("%s: exit %d %s, config run_name not %s:\n%.300s", line, code, errOut, file, cfg)
		}
	}
	if exports != 2 {
		t.Errorf("%d export commands, want one for each of the 2 examples:\n%s", exports, out)
	}
}

// TestVerifyUnfitLayout: a --mesh layout that does not fit got the verify
// steps, whose export then refused to write the config ("the layout does
// not fit ... nothing exported"). It says there is nothing to compile.
// The layout is of one pass, given: the planner would run the batch as 2
// micro-batches, which fit.
func TestVerifyUnfitLayout(t *testing.T) {
	out, _, code := runCmd("plan", "--verify", "--model", "llama3-405b", "--tpu", "tpu7x-256", "--mesh", "fsdp=64,tensor=4", "--global-batch", "256", "--remat", "save_qkv_proj", "--gradient-accumulation-steps", "1")
	if code != 1 || !strings.Contains(out, "Verify: the layout does not fit (HBM by ") || strings.Contains(out, "shardlab export") {
		t.Errorf("plan --verify of a layout that does not fit: exit %d (want 1)\n%s", code, out)
	}
}

// TestVerifyRefusedSpellsFlags: where MaxText cannot run the plan, plan
// --verify said "pass pipeline schedule gpipe", no flag; it spells them.
func TestVerifyRefusedSpellsFlags(t *testing.T) {
	out, errOut, code := runCmd("plan", "--verify", "--model", "llama3-8b", "--tpu", "v5p-8", "--slices", "2", "--mesh", "fsdp=4,pipeline=2(dcn)", "--global-batch", "32", "--schedule", "1f1b")
	if code != 0 || !strings.Contains(out, "Verify: MaxText cannot compile this plan as it is (") || !strings.Contains(out, "pass --schedule gpipe") {
		t.Errorf("plan --verify of a 1F1B plan: exit %d %s\n%s", code, errOut, out)
	}
}

// TestVerifyRematNone: MaxText has no policy that keeps every
// activation, and export writes remat none as custom with every named
// tensor on device; plan --verify's check compared the compile with the
// plan's none (110 GiB for Llama 3 8B on tpu7x-8 at 8 sequences), and
// its expected report was none's, about 12 GiB above what that compile
// holds. The verify lines now carry the policy the export writes: the
// printed export writes the same file as exporting the plan, and a
// compile log at the printed report checks at 0 %.
func TestVerifyRematNone(t *testing.T) {
	job := []string{"--model", "llama3-8b", "--tpu", "tpu7x-8", "--mesh", "fsdp=8", "--global-batch", "8", "--remat", "none"}
	exportArgs, checkArgs := verifyLines(t, job...)
	if !slices.Contains(exportArgs, "custom") || !slices.Contains(checkArgs, "--remat-custom") {
		t.Fatalf("verify lines of a none plan: export %q, check %q", exportArgs, checkArgs)
	}
	printed, errOut, code := runCmd(exportArgs...)
	direct, _, _ := runCmd(append([]string{"export", "maxtext"}, job...)...)
	// the same settings; the comments carry each plan's own estimate
	settings := func(yml string) string {
		var keep []string
		for _, l := range strings.Split(yml, "\n") {
			if !strings.HasPrefix(l, "#") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	if code != 0 || settings(printed) != settings(direct) {
		t.Errorf("the printed export (exit %d %s) writes other settings than exporting the plan:\n%s\n--- against ---\n%s", code, errOut, printed, direct)
	}
	out, _, _ := runCmd(append([]string{"plan", "--verify"}, job...)...)
	_, rest, _ := strings.Cut(out, "by this plan about ")
	report, _, _ := strings.Cut(rest, " a JAX device")
	log := writeLog(t, t.TempDir(), "m.log", "Memory analysis: Total memory size: 51.2 GB, Output size: 11.2 GB, Temp size: 40.0 GB, Argument size: 11.2 GB, Host temp size: 0.0 GB.")
	args := slices.Clone(checkArgs[:len(checkArgs)-2]) // without --write-calibration
	args[slices.Index(args, "compile.log")] = log
	got, errOut, code := runCmd(args...)
	// check's prediction is the report the verify line printed (47.7 GiB
	// there, 47.74 GiB in check's table)
	var reported, predicted, want float64
	_, row, _ := strings.Cut(got, "\ntotal")
	if _, err := fmt.Sscanf(row, " %f GiB %f GiB", &reported, &predicted); err != nil || code != 0 {
		t.Fatalf("check: exit %d %s %v\n%s", code, errOut, err, got)
	}
	if _, err := fmt.Sscanf(report, "%f GiB", &want); err != nil || math.Abs(predicted-want) > 0.05 {
		t.Errorf("check predicts %.2f GiB, the verify line printed %s (%v)", predicted, report, err)
	}
}

// TestVerifyCalibrateAdvice: the closing advice said "plan --calibration
// calibration.json", which plan refuses beside the --temp-scale the
// commands carry, and for a plan without remat the file's factor is the
// named policy's (the commands' --remat custom), not none's.
func TestVerifyCalibrateAdvice(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		// a plan below XLA's limit (one at it gives no factor: no file)
		{[]string{"--temp-scale", "1.1", "--mesh", "fsdp=8", "--global-batch", "8", "--remat", "full"}, "(then plan --calibration calibration.json, in place of the temporaries' factor given"},
		{[]string{"--mesh", "fsdp=8", "--global-batch", "8", "--remat", "none"}, "with the commands' --remat custom --remat-custom (the policy it is measured under"},
	} {
		out, errOut, code := runCmd(append([]string{"plan", "--verify", "--model", "llama3-8b", "--tpu", "tpu7x-8"}, c.args...)...)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("plan --verify %v: exit %d %s, want %q in\n%s", c.args, code, errOut, c.want, out)
		}
	}
}
