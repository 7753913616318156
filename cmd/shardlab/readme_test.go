package main

import (
	"os"
	"strings"
	"testing"
)

// readmeBlock is the text of README.md between begin and end.
func readmeBlock(t *testing.T, begin, end string) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i := strings.Index(s, begin)
	j := strings.Index(s[max(i, 0):], end)
	if i < 0 || j < 0 {
		t.Fatalf("README.md has no block between %q and %q", begin, end)
	}
	return s[i+len(begin) : i+j]
}

// TestREADMEAccuracyIsTheCommand holds README.md's accuracy figures to what
// `shardlab validate` prints: a figure in the README comes from a command.
func TestREADMEAccuracyIsTheCommand(t *testing.T) {
	block := readmeBlock(t, "<!-- validate summary: go run ./cmd/shardlab validate -->\n```\n", "```\n<!-- end validate summary -->")
	out, errOut, code := runCmd("validate")
	if code != 0 {
		t.Fatalf("validate: exit %d: %s", code, errOut)
	}
	k := strings.Index(out, "MFU error")
	if k < 0 {
		t.Fatalf("validate printed no summary:\n%s", out)
	}
	if got := out[k:]; got != block {
		t.Errorf("README.md's validate summary differs from the command's; update it from go run ./cmd/shardlab validate\n--- command\n%s\n--- README\n%s", got, block)
	}
}

func TestREADMEMultisliceRuleIsTheCommand(t *testing.T) {
	block := readmeBlock(t, "<!-- multislice rule: go run ./cmd/shardlab plan --model llama3-8b --tpu v4-128 --slices 2, then --slices 4 -->\n```\n", "```\n<!-- end multislice rule -->")
	var want strings.Builder
	for _, n := range []string{"2", "4"} {
		out, errOut, code := runCmd("plan", "--model", "llama3-8b", "--tpu", "v4-128", "--slices", n)
		if code != 0 {
			t.Fatalf("plan --slices %s: exit %d: %s", n, code, errOut)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "Multislice batch rule") {
				want.WriteString(l + "\n")
			}
		}
	}
	if got := block; got != want.String() {
		t.Errorf("README.md's multislice rule lines differ from the command's\n--- command\n%s--- README\n%s", want.String(), got)
	}
	for _, fig := range []string{"176k tokens per slice break even and 352k in practice", "352k tokens per slice break even and 704k in practice"} {
		if !strings.Contains(want.String(), fig) {
			t.Errorf("the v4 rule no longer reproduces the guidance's figures: want %q in\n%s", fig, want.String())
		}
	}
}

func TestREADMEExampleIsTheCommand(t *testing.T) {
	example := readmeBlock(t, "$ go run ./cmd/shardlab plan --model llama3-70b --tpu tpu7x-128 --slices 2\n", "...\n```")
	out, errOut, code := runCmd("plan", "--model", "llama3-70b", "--tpu", "tpu7x-128", "--slices", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.HasPrefix(out, example) {
		t.Errorf("README.md's plan example is not the start of the command's output\n--- command\n%s--- README\n%s", out, example)
	}
}

// TestREADMECapacityExampleIsTheCommand holds README.md's capacity example
// to what the command it names prints.
func TestREADMECapacityExampleIsTheCommand(t *testing.T) { readmeExample(t, "capacity") }

// TestREADMEBudgetExampleIsTheCommand holds README.md's budget example to
// what the command it names prints.
func TestREADMEBudgetExampleIsTheCommand(t *testing.T) { readmeExample(t, "budget") }

// readmeExample checks README.md's block "<!-- NAME example: go run
// ./cmd/shardlab ARGS -->" against what shardlab ARGS prints.
func readmeExample(t *testing.T, name string) {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	begin, end := "<!-- "+name+" example: go run ./cmd/shardlab ", " -->\n```\n"
	s := string(readme)
	i := strings.Index(s, begin)
	if i < 0 {
		t.Fatalf("README.md has no %s example", name)
	}
	j := strings.Index(s[i:], end)
	args := strings.Fields(s[i+len(begin) : i+j])
	rest := s[i+j+len(end):]
	k := strings.Index(rest, "```\n<!-- end "+name+" example -->")
	if k < 0 {
		t.Fatalf("README.md's %s example has no end", name)
	}
	out, errOut, code := runCmd(args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut)
	}
	if got := rest[:k]; got != out {
		t.Errorf("README.md's %s example differs from 'shardlab %s'\n--- command\n%s\n--- README\n%s", name, strings.Join(args, " "), out, got)
	}
}

// TestREADMEExportIsTheCommand holds README.md's export example to what the
// command in its marker prints.
func TestREADMEExportIsTheCommand(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- export example: go run ./cmd/shardlab ", "```\n<!-- end export example -->"
	s := string(readme)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatal("README.md has no export example block")
	}
	cmd, block, ok := strings.Cut(s[i+len(begin):j], " -->\n```\n")
	if !ok {
		t.Fatal("README.md's export example has no code block after its marker")
	}
	out, errOut, code := runCmd(strings.Fields(cmd)...)
	if code != 0 {
		t.Fatalf("shardlab %s: exit %d: %s", cmd, code, errOut)
	}
	if out != block {
		t.Errorf("README.md's export example differs from shardlab %s\n--- command\n%s\n--- README\n%s", cmd, out, block)
	}
}

// TestREADMEInferenceIsTheCommand holds README.md's serving example to
// what `shardlab inference` prints.
func TestREADMEInferenceIsTheCommand(t *testing.T) {
	block := readmeBlock(t, "<!-- inference example: go run ./cmd/shardlab inference --model llama3-70b --tpu tpu7x-8 --max-model-len 8192 -->\n```\n", "```\n<!-- end inference example -->")
	out, errOut, code := runCmd("inference", "--model", "llama3-70b", "--tpu", "tpu7x-8", "--max-model-len", "8192")
	if code != 0 {
		t.Fatalf("inference: exit %d: %s", code, errOut)
	}
	if block != out {
		t.Errorf("README.md's inference example differs from the command's\n--- command\n%s\n--- README\n%s", out, block)
	}
}

// TestREADMETestCommandIsCI holds the test command README.md gives to the
// one .ci/run runs, and requires it to carry an explicit -timeout: go test's
// default stops a package at 10 minutes, which a busy 2-core machine
// reached under -race.
func TestREADMETestCommandIsCI(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	var cmd string
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "go test ") {
			cmd = strings.TrimSpace(strings.SplitN(line, "#", 2)[0])
			break
		}
	}
	if cmd == "" {
		t.Fatal("README.md gives no line starting with the test command go test")
	}
	if !strings.Contains(cmd, " -timeout ") || !strings.Contains(cmd, " -race ") {
		t.Errorf("README.md's test command %q lacks -race or an explicit -timeout", cmd)
	}
	if !strings.Contains(string(ci), cmd) {
		t.Errorf(".ci/run does not run README.md's test command %q", cmd)
	}
}

// TestREADMEMemoryTableIsTheCommand holds README.md's memory table to what
// `shardlab validate --memory` prints.
func TestREADMEMemoryTableIsTheCommand(t *testing.T) {
	block := readmeBlock(t, "<!-- memory table: go run ./cmd/shardlab validate --memory -->\n```\n", "```\n<!-- end memory table -->")
	out, errOut, code := runCmd("validate", "--memory")
	if code != 0 {
		t.Fatalf("validate --memory: exit %d: %s", code, errOut)
	}
	if out != block {
		t.Errorf("README.md's memory table differs from the command's; update it from go run ./cmd/shardlab validate --memory\n--- command\n%s\n--- README\n%s", out, block)
	}
}

// TestREADMEServingTableIsTheCommand holds README.md's serving table to
// what `shardlab validate --serving` prints.
func TestREADMEServingTableIsTheCommand(t *testing.T) {
	block := readmeBlock(t, "<!-- serving table: go run ./cmd/shardlab validate --serving -->\n```\n", "```\n<!-- end serving table -->")
	out, errOut, code := runCmd("validate", "--serving")
	if code != 0 {
		t.Fatalf("validate --serving: exit %d: %s", code, errOut)
	}
	if out != block {
		t.Errorf("README.md's serving table differs from the command's; update it from go run ./cmd/shardlab validate --serving\n--- command\n%s\n--- README\n%s", out, block)
	}
}
