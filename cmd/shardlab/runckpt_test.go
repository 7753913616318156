package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunCheckpointDirUnwritable: a --checkpoint directory that cannot be
// written is refused before the run (exit 2, one line), not at the first
// checkpoint --every steps in (exit 1), nor never when the run is shorter
// (exit 0). /proc refuses mkdir even to root.
func TestRunCheckpointDirUnwritable(t *testing.T) {
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("no procfs:", err)
	}
	for _, args := range [][]string{
		{"--steps", "2", "--every", "10"}, // the run ends before its first checkpoint
		{"--steps", "4", "--every", "2"},
	} {
		out, errOut, code := runCmd(append([]string{"run", "--synthetic", "--quiet", "--checkpoint", "/proc/shardlab-no-such-dir"}, args...)...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "--checkpoint /proc/shardlab-no-such-dir: cannot create the directory") {
			t.Errorf("run %v --checkpoint /proc/…: exit %d, stdout %q, stderr %q; want exit 2 before the run with one line naming --checkpoint", args, code, out, errOut)
		}
	}
	// a directory that does not exist yet is created, and the probe's file
	// is gone
	dir := filepath.Join(t.TempDir(), "a", "b")
	if _, errOut, code := runCmd("run", "--synthetic", "--quiet", "--steps", "1", "--checkpoint", dir); code != 0 {
		t.Fatalf("run --checkpoint %s: exit %d, %s", dir, code, errOut)
	}
	if names, err := os.ReadDir(dir); err != nil || len(names) != 0 {
		t.Errorf("checkpoint directory after a run too short to checkpoint: %v, %v; want it empty", names, err)
	}
}
