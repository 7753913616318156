//go:build linux

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPseudoFilesystemInputs: a file on procfs or sysfs looks regular (of
// size 0) but is not data, and /proc/kmsg blocks its reader forever (issue
// 26). Every flag that reads a file refuses one by what it is, in one line
// naming the flag and the path, without reading it; through a symbolic
// link too.
func TestPseudoFilesystemInputs(t *testing.T) {
	link := filepath.Join(t.TempDir(), "model.json")
	if err := os.Symlink("/proc/self/status", link); err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{"/proc/self/status": "procfs", link: "procfs", "/sys/devices/system/cpu/online": "sysfs"}
	for path := range paths {
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s: %v (procfs and sysfs are mounted on Linux)", path, err)
		}
	}
	for _, cmd := range []struct{ args, what string }{
		{"plan --model", "--model"},
		{"export maxtext --model", "--model"},
		{"inference --model", "--model"},
		{"capacity --model", "--model"},
		{"model show", "model show"},
		{"run --plan", "--plan"},
		{"run --data", "--data"},
	} {
		for path, fs := range paths {
			args := append(strings.Fields(cmd.args), path)
			t.Run(strings.Join(args, " "), func(t *testing.T) { fail(t, args, cmd.what+" "+path, "is on "+fs) })
		}
	}
	// the case: reading /proc/kmsg blocks until the kernel logs
	if _, err := os.Lstat("/proc/kmsg"); err == nil {
		fail(t, []string{"plan", "--model", "/proc/kmsg"}, "--model /proc/kmsg", "is on procfs")
		fail(t, []string{"model", "show", "/proc/kmsg"}, "model show /proc/kmsg", "is on procfs")
	}
	// a directory on procfs is no corpus either
	fail(t, []string{"run", "--data", "/proc"}, "--data /proc", "is on procfs")
}

// TestPseudoFilesystemOutputs: an output path on procfs or sysfs is
// refused before any work (issue 26: plan --html /proc/x.html failed after
// the search), for every output flag. The existing file is one no write
// can change: a code that wrote there would not harm the machine.
func TestPseudoFilesystemOutputs(t *testing.T) {
	gemm := []string{"--m", "8", "--k", "8", "--n", "8"}
	for _, path := range []string{"/proc/x.html", "/proc/self/status", "/sys/x.svg"} {
		fs := "procfs"
		if strings.HasPrefix(path, "/sys") {
			fs = "sysfs"
		}
		for _, args := range [][]string{
			{"plan", "--tpu", "v5p-8", "--html", path},
			{"plan", "--tpu", "v5p-8", "--svg", path},
			{"plan", "--tpu", "v5p-8", "--png", path},
			{"plan", "--html", path},
			append([]string{"mxu", "--trace", path}, gemm...),
			{"run", "--trace", path},
		} {
			flag := args[slices.IndexFunc(args, func(a string) bool { return a == path })-1]
			t.Run(strings.Join(args, " "), func(t *testing.T) { fail(t, args, flag+" "+path, "is on "+fs) })
		}
	}
}
