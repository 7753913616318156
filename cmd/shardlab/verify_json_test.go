package main

import (
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"shardlab/export"
	"shardlab/unit"
)

// verifyDoc is a plan --json document's verify steps, with the plan's
// figures they are held to.
type verifyDoc struct {
	Verify *export.Steps `json:"verify"`
	Memory struct {
		XLAReport     int64 `json:"xla_report_bytes_per_jax_device"`
		XLARecomputes bool  `json:"xla_recomputes"`
	} `json:"hbm_used_per_chip"`
	Remat string `json:"remat"`
}

// TestVerifyJSONIsTheText: plan --json had no verify steps (--verify and
// --json were refused together), so a script could not get them. With
// both, the document's verify key holds the lines plan --verify prints,
// each command's args as sh splits its line, the files they name, and
// the report the text names held to the plan's own; without --verify the
// document has no such key.
func TestVerifyJSONIsTheText(t *testing.T) {
	args := []string{"--model", "llama3-8b", "--tpu", "v5p-8", "--seq", "4096", "--causal-flops=false"}
	out, _, _ := runCmd(append([]string{"plan", "--json", "--verify"}, args...)...)
	var d verifyDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.Verify == nil {
		t.Fatalf("plan --json --verify: %v, no verify\n%.400s", err, out)
	}
	s := *d.Verify
	text, _, _ := runCmd(append([]string{"plan", "--verify"}, args...)...)
	lines := strings.Split(text[strings.Index(text, "Verify before renting TPUs"):], "\n")
	if !s.Available || s.UnavailableReason != "" || len(s.Commands) != 3 {
		t.Fatalf("verify %+v, want three commands", s)
	}
	for i, c := range s.Commands {
		if want := strings.TrimSpace(lines[i+1]); c.Line != want {
			t.Errorf("%s line %q, the text prints %q", c.Step, c.Line, want)
		}
		// sh's words up to the redirection (shellWords reads none of "2>&1")
		line, _, _ := strings.Cut(c.Line, " 2>&1")
		if words := shellWords(t, line); !slices.Equal(c.Args, words) {
			t.Errorf("%s args %q, its line as sh splits it %q", c.Step, c.Args, words)
		}
	}
	if c := s.Commands; c[0].Step != export.StepExport || c[0].Stdout != s.ConfigFile || !slices.Contains(c[1].Args, s.ConfigFile) ||
		c[1].Stdout != s.CompileLog || !slices.Contains(c[2].Args, s.CompileLog) || (s.Calibration == "") != s.Expected.Recomputes ||
		s.Calibration != "" && !slices.Contains(c[2].Args, s.Calibration) {
		t.Errorf("the commands do not pass their files on: %+v", s)
	}
	e := s.Expected
	if e == nil || e.PerDevice != d.Memory.XLAReport || e.Recomputes != d.Memory.XLARecomputes || e.Remat != d.Remat ||
		e.Capacity < e.PerDevice || !strings.Contains(lines[0], "about "+unit.Bytes(e.PerDevice).String()) {
		t.Errorf("expected report %+v, want the plan's %+v under remat %s, within the capacity, as the text says: %s", e, d.Memory, d.Remat, lines[0])
	}
	plain, _, _ := runCmd(append([]string{"plan", "--json"}, args...)...)
	if strings.Contains(plain, `"verify"`) {
		t.Errorf("plan --json without --verify has a verify key")
	}
}

// TestVerifyJSONUnavailable: where there is nothing to compile, the verify
// key says why, in words and as a reason a script can branch on, with no
// commands: a layout that does not fit, a slice MaxText has no compile
// target for, a plan MaxText refuses (in the words the text prints).
func TestVerifyJSONUnavailable(t *testing.T) {
	for _, c := range []struct {
		args   []string
		reason string
	}{
		{[]string{"--model", "llama3-405b", "--tpu", "tpu7x-256", "--mesh", "fsdp=64,tensor=4", "--global-batch", "256", "--remat", "save_qkv_proj", "--gradient-accumulation-steps", "1"}, export.WhyUnfit},
		{[]string{"--model", "gemma-2b", "--tpu", "v3-8"}, export.WhyNoCompileTopology},
		{[]string{"--model", "llama3-8b", "--tpu", "v5p-8", "--slices", "2", "--mesh", "fsdp=4,pipeline=2(dcn)", "--global-batch", "32", "--schedule", "1f1b"}, export.WhyRefused},
	} {
		out, _, _ := runCmd(append([]string{"plan", "--json", "--verify"}, c.args...)...)
		var d verifyDoc
		if err := json.Unmarshal([]byte(out), &d); err != nil || d.Verify == nil {
			t.Errorf("%v: %v, no verify\n%.300s", c.args, err, out)
			continue
		}
		s := d.Verify
		text, _, _ := runCmd(append([]string{"plan", "--verify"}, c.args...)...)
		if s.Available || s.UnavailableReason != c.reason || len(s.Commands) != 0 || s.Expected != nil || !strings.Contains(text, "Verify: "+s.Unavailable+"\n") {
			t.Errorf("%v: verify %+v, want reason %s, no commands, the text's words\n%s", c.args, s, c.reason, text)
		}
	}
}

// TestVerifyJSONEveryPlan: every plan a document holds carries its steps:
// plan --goodput's, and each of the built-in examples' (plans).
func TestVerifyJSONEveryPlan(t *testing.T) {
	out, _, code := runCmd("plan", "--json", "--verify", "--goodput", "--model", "llama3-8b", "--tpu", "v5p-8")
	if code != 0 || !strings.Contains(out, `"goodput"`) || !strings.Contains(out, `"verify"`) {
		t.Errorf("plan --goodput --json --verify: exit %d\n%.300s", code, out)
	}
	out, _, _ = runCmd("plan", "--json", "--verify")
	var doc struct {
		Plans []verifyDoc `json:"plans"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Plans) < 2 {
		t.Fatalf("plan --json --verify: %v, %d plans", err, len(doc.Plans))
	}
	for i, p := range doc.Plans {
		if p.Verify == nil || !p.Verify.Available {
			t.Errorf("plans[%d]: verify %+v, want the steps", i, p.Verify)
		}
	}
}

// TestVerifyHTMLReport: plan --html's report left the verify steps out, so
// a shared report could not carry them. With --verify it has the three
// lines the text prints; without, no such section.
func TestVerifyHTMLReport(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--model", "llama3-8b", "--tpu", "v5p-8"}
	with, without := filepath.Join(dir, "with.html"), filepath.Join(dir, "without.html")
	text, errOut, code := runCmd(append([]string{"plan", "--verify", "--html", with}, args...)...)
	if _, errOut2, code2 := runCmd(append([]string{"plan", "--html", without}, args...)...); code != 0 || code2 != 0 {
		t.Fatalf("plan --html: exit %d %s, %d %s", code, errOut, code2, errOut2)
	}
	page, err := os.ReadFile(with)
	if err != nil {
		t.Fatal(err)
	}
	got := html.UnescapeString(string(page))
	lines := strings.Split(text[strings.Index(text, "Verify before renting TPUs"):], "\n")
	for _, l := range lines[1:4] {
		if !strings.Contains(got, strings.TrimSpace(l)) {
			t.Errorf("the report lacks %q", strings.TrimSpace(l))
		}
	}
	if strings.Contains(got, "Download the MaxText YAML above") {
		t.Errorf("the report points at a download it does not have")
	}
	if page, _ := os.ReadFile(without); strings.Contains(string(page), "Verify before renting TPUs") {
		t.Errorf("plan --html without --verify has the verify steps")
	}
}
