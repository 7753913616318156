package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCorePackagesArePure enforces the architecture: core packages import
// no os, net or flag (I/O lives in cmd), depend on nothing under cmd/, and
// read no wall clock.
func TestCorePackagesArePure(t *testing.T) {
	core := []string{"unit", "hw", "model", "mesh", "collective", "schedule", "systolic", "infeed", "trace", "cost", "plan", "inference", "export", "emu"}
	for _, pkg := range core {
		path := "shardlab/" + pkg
		out, err := exec.Command("go", "list", "-f", "{{join .Imports \" \"}}", path).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, imp := range strings.Fields(string(out)) {
			if imp == "os" || imp == "net" || imp == "flag" {
				t.Errorf("core package %s imports %s", pkg, imp)
			}
		}
		out, err = exec.Command("go", "list", "-deps", path).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "shardlab/cmd") {
				t.Errorf("core package %s depends on %s", pkg, dep)
			}
		}
		files, _ := filepath.Glob(filepath.Join("..", "..", pkg, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(src), "time.Now(") {
				t.Errorf("%s calls time.Now", f)
			}
		}
	}
}

// TestEmulatorIsIndependentOfCost keeps the emulator an independent check
// of the cost model: emu must not depend on cost or plan.
func TestEmulatorIsIndependentOfCost(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "shardlab/emu").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "shardlab/cost" || dep == "shardlab/plan" {
			t.Errorf("emu depends on %s", dep)
		}
	}
}
