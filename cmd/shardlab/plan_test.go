package main

import (
	"path/filepath"
	"testing"
)

// TestPlanRefusesContradictions: flags that other flags make meaningless
// or that contradict each other are refused with exit 2, naming both:
// --dcn-gbps on one slice (no DCN; it was ignored), and two chart files
// at one path (the SVG was silently overwritten by the PNG).
func TestPlanRefusesContradictions(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "p.png")
	fail(t, []string{"plan", "--model", "llama3-8b", "--tpu", "v5p-8", "--dcn-gbps", "100"}, "--dcn-gbps 100 with --slices 1", "--slices 2 or more")
	fail(t, []string{"plan", "--svg", p, "--png", p}, "--svg "+p+" and --png "+p+" name one file")
	fail(t, []string{"plan", "--html", p, "--png", filepath.Join(dir, ".", "x", "..", "p.png")}, "--html "+p+" and --png", "name one file")
}
