package main

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEAccuracyIsTheCommand holds README.md's accuracy figures to what
// `shardlab validate` prints: a figure in the README comes from a command.
func TestREADMEAccuracyIsTheCommand(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- validate summary: go run ./cmd/shardlab validate -->\n```\n", "```\n<!-- end validate summary -->"
	s := string(readme)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatal("README.md has no validate summary block")
	}
	block := s[i+len(begin) : j]
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
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- multislice rule: go run ./cmd/shardlab plan --model llama3-8b --tpu v4-128 --slices 2, then --slices 4 -->\n```\n", "```\n<!-- end multislice rule -->"
	s := string(readme)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatal("README.md has no multislice rule block")
	}
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
	if got := s[i+len(begin) : j]; got != want.String() {
		t.Errorf("README.md's multislice rule lines differ from the command's\n--- command\n%s--- README\n%s", want.String(), got)
	}
	for _, fig := range []string{"176k tokens per slice break even and 352k in practice", "352k tokens per slice break even and 704k in practice"} {
		if !strings.Contains(want.String(), fig) {
			t.Errorf("the v4 rule no longer reproduces the guidance's figures: want %q in\n%s", fig, want.String())
		}
	}
}

func TestREADMEExampleIsTheCommand(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin = "$ go run ./cmd/shardlab plan --model llama3-70b --tpu tpu7x-128 --slices 2\n"
	s := string(readme)
	i := strings.Index(s, begin)
	if i < 0 {
		t.Fatal("README.md has no plan example")
	}
	j := strings.Index(s[i:], "...\n```")
	if j < 0 {
		t.Fatal("README.md's plan example has no end")
	}
	example := s[i+len(begin) : i+j]
	out, errOut, code := runCmd("plan", "--model", "llama3-70b", "--tpu", "tpu7x-128", "--slices", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.HasPrefix(out, example) {
		t.Errorf("README.md's plan example is not the start of the command's output\n--- command\n%s--- README\n%s", out, example)
	}
}

// TestREADMEInferenceIsTheCommand holds README.md's serving example to
// what `shardlab inference` prints.
func TestREADMEInferenceIsTheCommand(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- inference example: go run ./cmd/shardlab inference --model llama3-70b --tpu tpu7x-8 --max-model-len 8192 -->\n```\n", "```\n<!-- end inference example -->"
	s := string(readme)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatal("README.md has no inference example block")
	}
	out, errOut, code := runCmd("inference", "--model", "llama3-70b", "--tpu", "tpu7x-8", "--max-model-len", "8192")
	if code != 0 {
		t.Fatalf("inference: exit %d: %s", code, errOut)
	}
	if got := s[i+len(begin) : j]; got != out {
		t.Errorf("README.md's inference example differs from the command's\n--- command\n%s\n--- README\n%s", out, got)
	}
}
