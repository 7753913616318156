package main

import (
	"flag"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"shardlab/model"
)

// unbounded lists the numeric flags allowed to keep the flag package's own
// (unbounded) Value, and why.
var unbounded = map[string]string{}

// commands lists the commands the usage text documents: "plan",
// "export maxtext", "mxu compare", "hw", ...
func commands(t *testing.T) []string {
	var out []string
	for _, line := range strings.Split(usage, "\n") {
		synopsis, _, _ := strings.Cut(strings.TrimSpace(line), "  ") // the description follows two spaces
		f := strings.Fields(synopsis)
		if len(f) < 2 || f[0] != "shardlab" {
			continue
		}
		cmd := f[1]
		if len(f) > 2 && f[2][0] >= 'a' && f[2][0] <= 'z' && !strings.Contains(f[2], "|") {
			cmd += " " + f[2] // export maxtext, mxu compare
		}
		out = append(out, cmd)
	}
	if len(out) < 8 {
		t.Fatalf("found only %v in the usage text", out)
	}
	return out
}

// eachFlag calls fn for every flag of every command.
func eachFlag(t *testing.T, fn func(cmd string, fl *flag.Flag)) {
	t.Helper()
	for _, cmd := range commands(t) {
		if cmd == "version" {
			continue // takes no flags
		}
		build, ok := commandFlags[cmd]
		if !ok {
			t.Errorf("command %q is in the usage but not in commandFlags, so its flags go unchecked", cmd)
			continue
		}
		build().VisitAll(func(fl *flag.Flag) { fn(cmd, fl) })
	}
}

// fail runs shardlab with args and checks that it refuses them: exit 2,
// nothing on stdout, one line on stderr holding every one of want.
func fail(t *testing.T, args []string, want ...string) {
	t.Helper()
	out, errOut, code := runWithin(t, time.Minute, args...)
	line := strings.TrimSuffix(errOut, "\n")
	switch {
	case code != 2:
		t.Errorf("shardlab %s: exit %d, want 2 (stderr %q)", strings.Join(args, " "), code, errOut)
	case out != "":
		t.Errorf("shardlab %s: wrote to stdout: %q", strings.Join(args, " "), out)
	case strings.Contains(line, "\n"):
		t.Errorf("shardlab %s: error spans lines: %q", strings.Join(args, " "), errOut)
	case model.NotText(line) != "":
		t.Errorf("shardlab %s: error is not printable text (%s): %q", strings.Join(args, " "), model.NotText(line), errOut)
	}
	if len(args) == 0 {
		return
	}
	if c := lookup(args[0]); c != nil {
		// every command's error line names the command first, whichever
		// layer made the error (named)
		if path := commandPath(c, args[1:]); !startsWith(strings.TrimPrefix(line, "shardlab: "), path) {
			t.Errorf("shardlab %s: error %q does not name %q first", strings.Join(args, " "), line, path)
		}
	}
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("shardlab %s: error %q lacks %q", strings.Join(args, " "), line, w)
		}
	}
}

// runWithin runs shardlab and fails the test if it takes longer than d: a
// hang is a failure, not a stuck test binary.
func runWithin(t *testing.T, d time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	type result struct {
		out, err string
		code     int
	}
	done := make(chan result, 1)
	go func() {
		o, e, c := runCmd(args...)
		done <- result{o, e, c}
	}()
	select {
	case r := <-done:
		return r.out, r.err, r.code
	case <-time.After(d):
		t.Fatalf("shardlab %s: no answer within %v", strings.Join(args, " "), d)
		return "", "", 0
	}
}

func cmdArgs(cmd, name, value string) []string {
	return append(strings.Fields(cmd), "--"+name+"="+value)
}

// TestNumericFlagsAreBounded walks every flag of every command: a numeric
// flag must be one of the bounded kinds, so that a new one cannot skip its
// range.
func TestNumericFlagsAreBounded(t *testing.T) {
	n := 0
	eachFlag(t, func(cmd string, fl *flag.Flag) {
		switch reflect.TypeOf(fl.Value).String() {
		case "*flag.float64Value", "*flag.intValue", "*flag.int64Value", "*flag.uintValue", "*flag.uint64Value", "*flag.durationValue", "*flag.textValue", "*flag.funcValue":
			if _, ok := unbounded[cmd+" --"+fl.Name]; !ok {
				t.Errorf("%s --%s is a %T with no range; define it with floatVar, intVar, int64Var or durationVar", cmd, fl.Name, fl.Value)
			}
		case "*main.floatFlag", "*main.intFlag[int]", "*main.intFlag[int64]", "*main.intFlag[uint64]", "*main.durationFlag":
			n++
			if !strings.Contains(fl.Usage, " from ") && !strings.Contains(fl.Usage, " in [") && !strings.Contains(fl.Usage, " in (") {
				t.Errorf("%s --%s: usage %q does not give the range", cmd, fl.Name, fl.Usage)
			}
		}
	})
	if n < 40 {
		t.Errorf("found %d bounded flags, want every numeric flag of every command (about 45)", n)
	}
}

// TestFloatFlags feeds NaN, infinities and values just outside the range
// to every float flag of every command: each is refused in one line that
// names the flag, the value and the range, with exit 2, before any work.
func TestFloatFlags(t *testing.T) {
	seen := 0
	eachFlag(t, func(cmd string, fl *flag.Flag) {
		f, ok := fl.Value.(*floatFlag)
		if !ok {
			return
		}
		seen++
		bad := []string{"NaN", "nan", "-NaN", "Inf", "+Inf", "-Inf", "infinity", "1e309", "-1e309", "", "two"}
		if f.loOpen {
			bad = append(bad, strconv.FormatFloat(f.lo, 'g', -1, 64))
		} else {
			bad = append(bad, strconv.FormatFloat(math.Nextafter(f.lo, math.Inf(-1)), 'g', -1, 64))
		}
		if f.hiOpen {
			bad = append(bad, strconv.FormatFloat(f.hi, 'g', -1, 64))
		} else {
			bad = append(bad, strconv.FormatFloat(math.Nextafter(f.hi, math.Inf(1)), 'g', -1, 64))
		}
		if f.zero != "" && f.lo > 0 {
			bad = append(bad, strconv.FormatFloat(f.lo/2, 'g', -1, 64)) // between 0 and the range
		}
		// issue 26: decimal only; ParseFloat reads Go's hexadecimal floats
		bad = append(bad, strconv.FormatFloat((f.lo+f.hi)/2, 'x', -1, 64), strings.ToUpper(strconv.FormatFloat((f.lo+f.hi)/2, 'x', -1, 64)))
		for _, v := range bad {
			fail(t, cmdArgs(cmd, fl.Name, v), "--"+fl.Name, strconv.Quote(v), "want a finite number in ")
		}
		// and the range's ends are accepted
		var good []float64
		if !f.loOpen {
			good = append(good, f.lo)
		}
		if !f.hiOpen {
			good = append(good, f.hi)
		}
		good = append(good, (f.lo+f.hi)/2)
		if f.zero != "" {
			good = append(good, 0)
		}
		for _, v := range good {
			s := strconv.FormatFloat(v, 'g', -1, 64)
			if err := f.Set(s); err != nil || *f.p != v {
				t.Errorf("%s --%s %s: %v, value %v", cmd, fl.Name, s, err, *f.p)
			}
		}
	})
	// plan: dcn-gbps, efficiency, hbm-headroom (and export's); run: lr;
	// infeed: jitter, cross-numa; mxu compare: cpu-ghz, gpu-ghz
	if seen < 10 {
		t.Errorf("checked %d float flags, want at least 10", seen)
	}
}

// TestIntAndDurationFlags feeds values just outside each range, and ones
// that overflow int64, to every integer and duration flag.
func TestIntAndDurationFlags(t *testing.T) {
	eachFlag(t, func(cmd string, fl *flag.Flag) {
		var bad []string
		switch f := fl.Value.(type) {
		case *intFlag[int]:
			bad = []string{strconv.Itoa(f.lo - 1), strconv.Itoa(f.hi + 1)}
		case *intFlag[int64]:
			bad = []string{strconv.FormatInt(f.lo-1, 10), strconv.FormatInt(f.hi+1, 10)}
		case *intFlag[uint64]:
			bad = []string{"-1", "18446744073709551616"}
			if f.lo > 0 {
				bad = append(bad, strconv.FormatUint(f.lo-1, 10))
			}
			if f.hi < math.MaxUint64 {
				bad = append(bad, strconv.FormatUint(f.hi+1, 10))
			}
		case *durationFlag:
			bad = []string{(f.lo - 1).String(), (f.hi + 1).String(), "1e308h", "-9223372036854775808ns"}
			if f.hi < math.MaxInt64 {
				bad = append(bad, "9223372036854775807ns")
			}
		default:
			return
		}
		if _, ok := fl.Value.(*intFlag[uint64]); !ok {
			bad = append(bad, "9223372036854775807")
		}
		bad = append(bad, "99999999999999999999", "NaN", "Inf", "1.5e3x", "")
		if _, ok := fl.Value.(*durationFlag); !ok {
			// issue 26: decimal only, though strconv's base 0 reads each
			// of these; the lowest value of the range in other bases,
			// and whole numbers written as floats
			lo := fl.Value.(interface{ lowest() int64 }).lowest()
			sign, abs := "", lo
			if lo < 0 {
				sign, abs = "-", -lo
			}
			bad = append(bad, fmt.Sprintf("%s0x%x", sign, abs), fmt.Sprintf("%s0X%X", sign, abs), fmt.Sprintf("%s0o%o", sign, abs),
				fmt.Sprintf("%s0b%b", sign, abs), fmt.Sprintf("%s0_%o", sign, abs), fmt.Sprintf("%s%d_0", sign, abs), fmt.Sprintf("%d.0", lo),
				fmt.Sprintf("%de0", lo), "0x10", "1_000")
		}
		for _, v := range bad {
			fail(t, cmdArgs(cmd, fl.Name, v), "--"+fl.Name, strconv.Quote(v), "want a ")
		}
	})
}

// TestEnumFlagsIgnoreCase: every enumerated flag accepts its values in
// any case, and refuses others naming the values.
func TestEnumFlagsIgnoreCase(t *testing.T) {
	seen := map[string]bool{}
	eachFlag(t, func(cmd string, fl *flag.Flag) {
		f, ok := fl.Value.(*choiceFlag)
		if !ok {
			return
		}
		seen[fl.Name] = true
		for _, c := range f.choices {
			for _, v := range []string{c, strings.ToUpper(c), strings.ToUpper(c[:1]) + c[1:], " " + c + " "} {
				if err := f.Set(v); err != nil || *f.p != c {
					t.Errorf("%s --%s %q: %v, value %q; want %q", cmd, fl.Name, v, err, *f.p, c)
				}
			}
		}
		fail(t, cmdArgs(cmd, fl.Name, "bogus"), "--"+fl.Name, `"bogus"`, f.want())
	})
	for _, name := range []string{"remat", "schedule", "precision", "dataflow", "numa", "compat"} {
		if !seen[name] {
			t.Errorf("--%s is not an enumerated (choiceFlag) flag", name)
		}
	}
	// and the commands run with them
	for _, args := range [][]string{
		{"plan", "--tpu", "tpu7x-8", "--precision", "MaxText", "--remat", "FULL", "--schedule", "GPipe", "--top", "1"},
		{"mxu", "--dataflow", "OS", "--m", "64", "--k", "64", "--n", "64"},
		{"mxu", "--compat", "SCALESim", "--dataflow", "is", "--m", "64", "--k", "64", "--n", "64"},
		{"infeed", "--numa", "Interleaved", "--steps", "4", "--sweep=false"},
	} {
		if _, errOut, code := runCmd(args...); code != 0 {
			t.Errorf("shardlab %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
	}
}

// TestTPUEverywhere: --tpu takes a generation or an accelerator type, in
// any case, in every command that has it.
func TestTPUEverywhere(t *testing.T) {
	runs := map[string][][]string{
		"plan":           {{"--tpu", "TPU7x", "--top", "1"}, {"--tpu", "tpu7x-8", "--top", "1"}},
		"export maxtext": {{"--tpu", "v5p"}, {"--tpu", "V5P-8"}},
		"export xpk":     {{"--tpu", "v5p", "--cluster", "c", "--docker-image", "img"}, {"--tpu", "V5P-8", "--cluster", "c", "--docker-image", "img"}},
		"export pytorch": {{"--tpu", "v5p"}, {"--tpu", "V5P-8"}},
		"mxu":            {{"--tpu", "v6e", "--m", "64", "--k", "64", "--n", "64"}, {"--tpu", "v6e-8", "--m", "64", "--k", "64", "--n", "64"}},
		"mxu compare":    {{"--tpu", "tpu7x", "--m", "64", "--k", "64", "--n", "64"}, {"--tpu", "tpu7x-8", "--m", "64", "--k", "64", "--n", "64"}},
		"inference":      {{"--tpu", "TPU7x"}, {"--tpu", "tpu7x-8"}},
		"infeed":         {{"--tpu", "Ironwood", "--steps", "4", "--sweep=false"}, {"--tpu", "tpu7x-8", "--steps", "4", "--sweep=false"}},
		"capacity":       {{"--tpu", "TPU7X-256", "--days", "1"}, {"--tpu", "tpu7x-128", "--days", "1"}},
		"check":          {{"--tpu", "v5p"}, {"--tpu", "V5P-8"}}, // with a compile log, below
		"run": {{"--tpu", "v5litepod", "--slices", "1", "--mesh", "data=4", "--steps", "1", "--synthetic", "--quiet"},
			{"--tpu", "V5LITEPOD-4", "--slices", "1", "--mesh", "data=4", "--steps", "1", "--synthetic", "--quiet"}},
	}
	eachFlag(t, func(cmd string, fl *flag.Flag) {
		if fl.Name == "tpu" && runs[cmd] == nil {
			t.Errorf("%s has --tpu but no case here", cmd)
		}
	})
	for cmd, cases := range runs {
		words := strings.Fields(cmd)
		if cmd == "check" {
			words = append(words, "--compile-log", "testdata/compile_memory_analysis.log", "--model", "llama3-8b")
		}
		for _, c := range cases {
			args := append(slices.Clone(words), c...)
			if _, errOut, code := runCmd(args...); code != 0 {
				t.Errorf("shardlab %s: exit %d: %s", strings.Join(args, " "), code, errOut)
			}
		}
		fail(t, append(slices.Clone(words), "--tpu", "v9"), "--tpu", `"v9"`, "unknown TPU generation", "v5p")
		fail(t, append(slices.Clone(words), "--tpu", "v5p-7"), "--tpu", `"v5p-7"`, "v5p-8")
	}
	// v5litepod-1 is a whole ct5lp-hightpu-1t VM and v6e-1 a whole
	// ct6e-standard-1t (cloud.google.com/tpu/docs/v5e and v6e), whose vCPUs
	// no stored source gives: infeed simulates the 1-chip VM with hw's
	// stand-in of 4 vCPUs a chip and says so (review 128 #9: it refused
	// v6e-1 as less than the 4-chip ct6e-standard-4t)
	if out, errOut, code := runCmd("infeed", "--tpu", "v5litepod-1"); code != 0 || !strings.Contains(out, "ct5lp-hightpu-1t): 1 chip, 24 of 24 vCPUs") {
		t.Errorf("shardlab infeed --tpu v5litepod-1: exit %d, want the 1-chip ct5lp-hightpu-1t VM:\n%s%s", code, out, errOut)
	}
	if out, errOut, code := runCmd("infeed", "--tpu", "v6e-1"); code != 0 || !strings.Contains(out, "ct6e-standard-1t): 1 chip, 4 of 4 vCPUs (assumed)") ||
		!strings.Contains(out, "not published for ct6e-standard-1t in the catalog's sources: vCPUs (4: shardlab's stand-in of 4 per chip)") {
		t.Errorf("shardlab infeed --tpu v6e-1: exit %d, want the 1-chip ct6e-standard-1t VM, its vCPUs assumed:\n%s%s", code, out, errOut)
	}
	// run on a generation alone takes one of its usual VMs
	// (hw.Chip.HostSlice), for v5e v5litepod-4, where the default mesh
	// (fsdp=2,tensor=2 a slice) runs (review 119 #1: v5litepod-1 refused it)
	args := []string{"run", "--tpu", "v5litepod", "--steps", "1", "--synthetic", "--quiet"}
	if out, errOut, code := runCmd(args...); code != 0 || !strings.Contains(out, "of v5litepod-4 (2x2, 4 chips") {
		t.Errorf("shardlab %s: exit %d, want v5litepod-4:\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
}

// TestFlagValueStrings: -h must not panic on the zero values.
func TestFlagValueStrings(t *testing.T) {
	for _, v := range []flag.Value{&floatFlag{}, &intFlag[int]{}, &intFlag[int64]{}, &intFlag[uint64]{}, &durationFlag{}, &choiceFlag{}, &addrFlag{}} {
		_ = v.String()
	}
	for cmd, build := range commandFlags {
		var b strings.Builder
		fs := build()
		fs.SetOutput(&b)
		fs.PrintDefaults()
		if strings.Contains(b.String(), "panic") {
			t.Errorf("%s -h: %s", cmd, b.String())
		}
	}
}

// TestParseWhole: decimal digits with an optional sign, inside the type.
func TestParseWhole(t *testing.T) {
	for _, tt := range []struct {
		in    string
		i64   int64
		i64OK bool
		u64   uint64
		u64OK bool
	}{
		{"0", 0, true, 0, true},
		{"-0", 0, true, 0, true},
		{"+7", 7, true, 7, true},
		{"-7", -7, true, 0, false},
		{"010", 10, true, 10, true}, // decimal, not octal
		{"9223372036854775807", math.MaxInt64, true, math.MaxInt64, true},
		{"9223372036854775808", 0, false, 1 << 63, true},
		{"-9223372036854775808", math.MinInt64, true, 0, false},
		{"-9223372036854775809", 0, false, 0, false},
		{"18446744073709551615", 0, false, math.MaxUint64, true},
		{"18446744073709551616", 0, false, 0, false},
		{"0x10", 0, false, 0, false},
		{"0o7", 0, false, 0, false},
		{"0b1", 0, false, 0, false},
		{"1_000", 0, false, 0, false},
		{"1e3", 0, false, 0, false},
		{"1.0", 0, false, 0, false},
		{"", 0, false, 0, false},
		{"-", 0, false, 0, false},
		{"+-1", 0, false, 0, false},
		{"--1", 0, false, 0, false},
		{" 1", 0, false, 0, false},
	} {
		if v, ok := parseWhole[int64](tt.in); v != tt.i64 && ok || ok != tt.i64OK {
			t.Errorf("parseWhole[int64](%q) = %d, %v; want %d, %v", tt.in, v, ok, tt.i64, tt.i64OK)
		}
		if v, ok := parseWhole[uint64](tt.in); v != tt.u64 && ok || ok != tt.u64OK {
			t.Errorf("parseWhole[uint64](%q) = %d, %v; want %d, %v", tt.in, v, ok, tt.u64, tt.u64OK)
		}
	}
}

// TestRepeatedFlags: a flag given twice is refused, naming it, rather
// than silently taking the last value (issue 26: --model a --model b
// planned b), in every kind of flag and in the catalog commands.
func TestRepeatedFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--model", "llama3-8b", "--model", "llama3-70b", "--tpu", "v5p-8"}, `plan: --model given twice ("llama3-8b", then "llama3-70b"), want it once`},
		{[]string{"plan", "--model=llama3-8b", "--tpu", "v5p-8", "--model=llama3-8b"}, `--model given twice ("llama3-8b", then "llama3-8b")`},
		{[]string{"plan", "--json", "--tpu", "v5p-8", "-json"}, "plan: --json given twice, want it once"},
		{[]string{"plan", "--top", "1", "--top", "2"}, `--top given twice ("1", then "2")`},
		{[]string{"plan", "--efficiency", "0.5", "--efficiency", "0.6"}, `--efficiency given twice`},
		{[]string{"plan", "--remat", "full", "--remat", "FULL"}, `--remat given twice`},
		{[]string{"plan", "--example-cost", "1ms", "--example-cost", "2ms"}, `--example-cost given twice`},
		{[]string{"export", "xpk", "--cluster", "a", "--cluster", "b"}, `export xpk: --cluster given twice ("a", then "b")`},
		{[]string{"run", "--seed", "1", "--seed", "2"}, `run: --seed given twice`},
		{[]string{"web", "--addr", "127.0.0.1:0", "--addr", "127.0.0.1:1"}, `web: --addr given twice`},
		{[]string{"hw", "show", "v5p", "--json", "--json"}, "hw: --json given twice"},
		{[]string{"model", "list", "--json", "--json"}, "model: --json given twice"},
	} {
		fail(t, tt.args, tt.want)
	}
}

// TestFlagValuesAreText: every flag of every command refuses a value with
// a control or format character (issue 26: a NUL or U+202E went through
// to the output), naming the flag and the character, before its own
// parser sees it; so do the catalog commands' arguments.
func TestFlagValuesAreText(t *testing.T) {
	n := 0
	eachFlag(t, func(cmd string, fl *flag.Flag) {
		if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			return
		}
		n++
		fail(t, cmdArgs(cmd, fl.Name, "a\u202eb"), "--"+fl.Name+` "a\u202eb", want printable text: U+202E at byte 1 is a format character`)
	})
	if n < 60 {
		t.Errorf("checked %d flags, want every flag with a value (about 100)", n)
	}
	for _, v := range []struct{ in, why string }{
		{"a\x00b", "U+0000 at byte 1 is a control character"},
		{"\x1b[2J", "U+001B at byte 0 is a control character"},
		{"a\u200bb", "U+200B at byte 1 is a format character"},
		{"a\u2029b", "U+2029 at byte 1 is a line or paragraph separator"},
		{"a\xffb", "byte 1 (0xff) is not UTF-8"},
	} {
		fail(t, []string{"export", "xpk", "--cluster", "c", "--docker-image", v.in}, "export xpk: --docker-image", v.why)
		fail(t, []string{"export", "xpk", "--cluster", "c", "--capacity", "reservation", "--reservation", v.in}, "--reservation", v.why)
		fail(t, []string{"inference", "--hf-model", v.in}, "--hf-model", v.why)
		fail(t, []string{"model", "show", v.in}, "model: argument", v.why)
		fail(t, []string{"hw", "show", v.in}, "hw: argument", v.why)
	}
	// printable text of any script passes the text check; the image's
	// own rule, Docker's reference grammar, is what refuses this one
	if _, errOut, _ := runCmd("export", "xpk", "--cluster", "c", "--docker-image", "registry/画像:v1", "--tpu", "v5p-8"); strings.Contains(errOut, "printable text") || !strings.Contains(errOut, "Docker's image reference grammar") {
		t.Errorf("export xpk --docker-image registry/画像:v1: %s, want the image grammar's refusal, not the text check's", errOut)
	}
}

// withFlags is args with each flag of extra set, replacing any value args
// gives it: a flag given twice is refused, so a test varies a flag of a
// common command line this way. Flags are written --name value or
// --name=value (a boolean: --name alone).
func withFlags(args []string, extra ...string) []string {
	out := append([]string{}, args...)
	for i := 0; i < len(extra); {
		n := flagTokens(extra, i)
		name, _, _ := strings.Cut(extra[i], "=")
		for j := 0; j < len(out); {
			if k, _, _ := strings.Cut(out[j], "="); k == name {
				out = append(out[:j], out[j+flagTokens(out, j):]...)
				continue
			}
			j++
		}
		out = append(out, extra[i:i+n]...)
		i += n
	}
	return out
}

// flagTokens is how many tokens the flag at args[i] takes: 2 for --name
// value, 1 for --name=value or a boolean --name followed by another flag
// or nothing.
func flagTokens(args []string, i int) int {
	if strings.Contains(args[i], "=") || i+1 == len(args) || strings.HasPrefix(args[i+1], "--") {
		return 1
	}
	return 2
}

func TestWithFlags(t *testing.T) {
	base := []string{"run", "--synthetic", "--steps", "2", "--seq=16", "--quiet"}
	for _, tt := range []struct {
		extra []string
		want  string
	}{
		{nil, "run --synthetic --steps 2 --seq=16 --quiet"},
		{[]string{"--steps", "3"}, "run --synthetic --seq=16 --quiet --steps 3"},
		{[]string{"--seq", "32", "--resume"}, "run --synthetic --steps 2 --quiet --seq 32 --resume"},
		{[]string{"--steps=4", "--kill-rank", "-1"}, "run --synthetic --seq=16 --quiet --steps=4 --kill-rank -1"},
		{[]string{"--quiet", "--bf16=false"}, "run --synthetic --steps 2 --seq=16 --quiet --bf16=false"},
	} {
		if got := strings.Join(withFlags(base, tt.extra...), " "); got != tt.want {
			t.Errorf("withFlags(%v, %v) = %q, want %q", base, tt.extra, got, tt.want)
		}
	}
}

// TestLongValueErrorIsClipped: an error echoes the user's value, and a
// 100 KB --model made a 100 KB error line. The line keeps its start (the
// flag and the value's beginning) and its end (what is accepted) within
// maxErrorLine bytes, saying how much is elided; a multi-byte value is cut
// at rune boundaries (fail checks the line is printable text).
func TestLongValueErrorIsClipped(t *testing.T) {
	for _, v := range []string{strings.Repeat("x", 100000), strings.Repeat("é", 50000)} {
		fail(t, []string{"plan", "--model", v}, `--model "`, "bytes elided]…", "nor a readable YAML/JSON file")
		_, errOut, _ := runCmd("plan", "--model", v)
		if n := len(errOut); n > maxErrorLine+len("shardlab: \n") {
			t.Errorf("a %d-byte --model: a %d-byte error line, want at most %d", len(v), n, maxErrorLine)
		}
	}
	if got := clipLine("short"); got != "short" {
		t.Errorf("clipLine(short) = %q", got)
	}
}
