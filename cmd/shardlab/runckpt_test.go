package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"shardlab/emu"
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

// ckptArgs is a small run for the checkpoint tests.
var ckptArgs = []string{"run", "--synthetic", "--quiet", "--seq", "16", "--d-model", "32", "--d-ff", "64", "--batch", "8", "--mesh", "data=2(dcn),fsdp=4"}

// writeCheckpoint runs ckptArgs for steps steps, checkpointing the last,
// in a new directory, and returns the file.
func writeCheckpoint(t *testing.T, steps string) string {
	t.Helper()
	dir := t.TempDir()
	if _, errOut, code := runCmd(append(ckptArgs, "--steps", steps, "--every", steps, "--checkpoint", dir)...); code != 0 {
		t.Fatalf("checkpointing run: exit %d, %s", code, errOut)
	}
	return filepath.Join(dir, "checkpoint.step-"+steps+".bin")
}

// TestRunResumeSparseCheckpoint: a checkpoint extended to 2 GiB (a sparse
// file, so the test is cheap) is refused from its header and size, without
// reading its body: the run read it whole (4.4 GB RSS) first.
func TestRunResumeSparseCheckpoint(t *testing.T) {
	path := writeCheckpoint(t, "2")
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 2<<30); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, errOut, code := runCmd(append(ckptArgs, "--steps", "4", "--checkpoint", filepath.Dir(path), "--resume")...)
	runtime.ReadMemStats(&after)
	want := fmt.Sprintf("checkpoint of step 2 is %d bytes, want %d for this run's devices", 2<<30, info.Size())
	if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, want) {
		t.Errorf("resume from a 2 GiB checkpoint: exit %d, %q; want exit 2 with one line saying %q", code, errOut, want)
	}
	// the run itself allocates a few MiB; reading the file would be 2 GiB
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("refusing a 2 GiB checkpoint allocated %d bytes, want at most 64 MiB (the header, not the body)", got)
	}
}

// TestRunResumeFallsBack: with a corrupt newest checkpoint and an intact
// older one, the run resumes from the older one, warning which it skipped
// and why, and ends as the uninterrupted run does.
func TestRunResumeFallsBack(t *testing.T) {
	older, newer := writeCheckpoint(t, "2"), writeCheckpoint(t, "4")
	dir := filepath.Dir(older)
	data, err := os.ReadFile(newer)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(newer)), data, 0o644); err != nil {
		t.Fatal(err)
	}
	straight := runJSONOut(t, append(ckptArgs, "--steps", "6")...)
	out, errOut, code := runCmd(append(ckptArgs, "--steps", "6", "--checkpoint", dir, "--resume", "--json")...)
	if code != 0 {
		t.Fatalf("resume with a corrupt newest checkpoint: exit %d, %s", code, errOut)
	}
	var resumed runOut
	if err := json.Unmarshal([]byte(out), &resumed); err != nil {
		t.Fatal(err)
	}
	if resumed.ResumedFrom != 2 || resumed.ParamsSHA256 != straight.ParamsSHA256 {
		t.Errorf("resumed from step %d, params %s; want step 2 and the uninterrupted run's %s", resumed.ResumedFrom, resumed.ParamsSHA256, straight.ParamsSHA256)
	}
	for _, want := range []string{"warning: skipped the checkpoint of step 4", "checksum mismatch", "resuming from the checkpoint of step 2"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}
	// both corrupt: refused, naming both
	data, err = os.ReadFile(older)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(older, data[:len(data)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCmd(append(ckptArgs, "--steps", "6", "--checkpoint", dir, "--resume")...)
	if code != 2 || !strings.Contains(errOut, "checksum mismatch") || !strings.Contains(errOut, "no older checkpoint is usable either (step 2: ") {
		t.Errorf("resume with every checkpoint corrupt: exit %d, %q", code, errOut)
	}
	// another run's newest checkpoint is not skipped: the older ones are of
	// that run too
	other := t.TempDir()
	if _, errOut, code := runCmd(append(ckptArgs, "--steps", "2", "--every", "2", "--checkpoint", other, "--seed", "2")...); code != 0 {
		t.Fatalf("exit %d, %s", code, errOut)
	}
	if _, errOut, code := runCmd(append(ckptArgs, "--steps", "6", "--checkpoint", other, "--resume")...); code != 2 || !strings.Contains(errOut, "seed (--seed) is 2 in the checkpoint, 1 in this run") {
		t.Errorf("resume from another run's checkpoint: exit %d, %q", code, errOut)
	}
}

// TestRunResumeOtherProcesses: a directory of an MPI run's checkpoints
// resumed in one process (or under mpirun with another number of ranks)
// names the ranks it holds and what this run is, not "no checkpoint".
func TestRunResumeOtherProcesses(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"checkpoint.rank-0.step-4.bin", "checkpoint.rank-1.step-4.bin", "checkpoint.rank-1.step-2.bin"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, errOut, code := runCmd(append(ckptArgs, "--steps", "6", "--checkpoint", dir, "--resume")...)
	want := "holds the checkpoints of MPI ranks 0, 1 (checkpoint.rank-R.step-N.bin: a run of 2 ranks), and this run is one process: resume it under mpirun with 2 ranks (-np 2)"
	if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, want) {
		t.Errorf("resume of a 2-rank directory in one process: exit %d, %q; want exit 2 with %q", code, errOut, want)
	}
	// under mpirun every rank reaches a ResumeError; its restatement names
	// the ranks found
	for _, tt := range []struct {
		processes int
		held      [][]int
		files     []string
		want      string
	}{
		{3, [][]int{{4}, {2, 4}, nil}, nil, "holds the checkpoints of MPI ranks 0, 1 only, and this run has 3 MPI ranks"},
		{2, [][]int{nil, nil}, []string{"checkpoint.step-4.bin"}, "holds the checkpoints of a run in one process (checkpoint.step-N.bin), and this run has 2 MPI ranks: resume it without mpirun"},
	} {
		d := dir
		if tt.files != nil {
			d = t.TempDir()
			for _, name := range tt.files {
				if err := os.WriteFile(filepath.Join(d, name), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		err := resumeError(&emu.ResumeError{Held: tt.held}, d, tt.processes)
		if err == nil || !isUsage(err) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("resumeError with %d ranks holding %v: %v, want a usage error with %q", tt.processes, tt.held, err, tt.want)
		}
	}
}

// TestHeaderFlagsNameHeaderFields: every field headerFlags names is one
// of the checkpoint header's, by the JSON key a mismatch reports (a
// renamed key, as seq became seq_len, would otherwise lose its flag).
func TestHeaderFlagsNameHeaderFields(t *testing.T) {
	var h map[string]any
	b, _ := json.Marshal(emu.CheckpointHeader{Chunks: 1, Model: emu.Config{FlashAttention: true}}) // omitempty fields set
	json.Unmarshal(b, &h)
	fields := map[string]bool{}
	for k, v := range h {
		fields[k] = true
		if sub, ok := v.(map[string]any); ok {
			for kk := range sub {
				fields[k+"."+kk] = true
			}
		}
	}
	for f := range headerFlags {
		if !fields[f] {
			t.Errorf("headerFlags names %q, not a checkpoint header field", f)
		}
	}
}
