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

// TestREADMECapacityExampleIsTheCommand holds README.md's capacity example
// to what the command it names prints.
func TestREADMECapacityExampleIsTheCommand(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- capacity example: go run ./cmd/shardlab ", " -->\n```\n"
	s := string(readme)
	i := strings.Index(s, begin)
	if i < 0 {
		t.Fatal("README.md has no capacity example")
	}
	j := strings.Index(s[i:], end)
	args := strings.Fields(s[i+len(begin) : i+j])
	rest := s[i+j+len(end):]
	k := strings.Index(rest, "```\n<!-- end capacity example -->")
	if k < 0 {
		t.Fatal("README.md's capacity example has no end")
	}
	out, errOut, code := runCmd(args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut)
	}
	if got := rest[:k]; got != out {
		t.Errorf("README.md's capacity example differs from 'shardlab %s'\n--- command\n%s\n--- README\n%s", strings.Join(args, " "), out, got)
	}
}
