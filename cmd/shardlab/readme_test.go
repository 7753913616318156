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
