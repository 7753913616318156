package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"shardlab/emu"
)

// ckptStore is one process's checkpoints in a directory: a file per step,
// checkpoint.step-N.bin, or checkpoint.rank-R.step-N.bin for MPI rank R.
// Each is written atomically (a temporary file, fsync, rename). The
// previous step's file stays until every rank has written the next
// (emu.Hooks.Committed), so a resume always finds a step
// that all ranks hold.
type ckptStore struct {
	dir  string
	rank int // -1: a run in one process
}

func (d ckptStore) prefix() string {
	if d.rank < 0 {
		return "checkpoint.step-"
	}
	return fmt.Sprintf("checkpoint.rank-%d.step-", d.rank)
}

// tempPattern names the temporary files this process writes; a killed
// write leaves one behind.
func (d ckptStore) tempPattern() string {
	if d.rank < 0 {
		return ".checkpoint-*"
	}
	return fmt.Sprintf(".checkpoint-rank-%d-*", d.rank)
}

func (d ckptStore) path(step int) string {
	return filepath.Join(d.dir, d.prefix()+strconv.Itoa(step)+".bin")
}

// steps lists the steps this process has checkpoints of, oldest first.
func (d ckptStore) steps() ([]int, error) {
	entries, err := os.ReadDir(d.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, bad("--checkpoint %s: %v", d.dir, err)
	}
	var out []int
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), d.prefix())
		num, ok2 := strings.CutSuffix(rest, ".bin")
		n, err := strconv.Atoi(num)
		if ok && ok2 && err == nil && n >= 0 && strconv.Itoa(n) == num && e.Type().IsRegular() {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out, nil
}

// load reads the checkpoint of step, held to the shape this run's
// checkpoints have: its header and its size (from Stat) are checked
// before its body is read.
func (d ckptStore) load(step int, want *emu.CheckpointShape) (*emu.Checkpoint, error) {
	f, err := os.Open(d.path(step))
	if err != nil {
		return nil, fmt.Errorf("run: --resume: %w: %w", err, emu.ErrCheckpoint)
	}
	defer f.Close()
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("is %s, want a regular file", kind(info.Mode()))
	}
	if err != nil {
		return nil, fmt.Errorf("run: %s: %w: %w", d.path(step), err, emu.ErrCheckpoint)
	}
	c, err := emu.ReadCheckpointOf(f, info.Size(), want)
	if err != nil {
		return nil, fmt.Errorf("run: %s: %w", d.path(step), err)
	}
	return c, nil
}

// probe checks, before any work, that this process can write checkpoints
// in the directory: it creates the directory (and any missing above it),
// as the first write would, then creates and removes a temporary file
// there. Without it a directory that cannot be written (/proc/foo, a
// read-only mount) fails only at the first checkpoint, --every steps in,
// or never when the run is shorter.
func (d ckptStore) probe() error {
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return bad("run: --checkpoint %s: cannot create the directory: %v", d.dir, cause(err))
	}
	f, err := os.CreateTemp(d.dir, d.tempPattern())
	if err != nil {
		return bad("run: --checkpoint %s: cannot write a file in it: %v", d.dir, cause(err))
	}
	name := f.Name()
	err = f.Close()
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	if err != nil {
		return bad("run: --checkpoint %s: cannot write a file in it: %v", d.dir, cause(err))
	}
	return nil
}

// write stores c atomically. die, when set, is called partway through the
// temporary file (fault injection: a write killed midway).
func (d ckptStore) write(c *emu.Checkpoint, die func()) error {
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(d.dir, d.tempPattern())
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	var w io.Writer = tmp
	if die != nil {
		w = &dyingWriter{f: tmp, die: die}
	}
	if _, err := c.WriteTo(w); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), d.path(c.Step))
}

// dyingWriter writes half of the first chunk it is given, syncs it, and
// dies.
type dyingWriter struct {
	f   *os.File
	die func()
}

func (w *dyingWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p[:len(p)/2])
	if err == nil {
		w.f.Sync()
		w.die()
	}
	return n, err
}

// keep removes this process's checkpoints of every step but step: once
// every rank has written step, older ones are not needed, and newer ones
// are left from a run that a resume abandoned.
func (d ckptStore) keep(step int) error {
	steps, err := d.steps()
	if err != nil {
		return err
	}
	for _, s := range steps {
		if s != step {
			if err := os.Remove(d.path(s)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// cleanTemp removes the temporary files that killed writes of this
// process left (each as large as a checkpoint), and says how many.
func (d ckptStore) cleanTemp() (int, error) {
	names, err := filepath.Glob(filepath.Join(d.dir, d.tempPattern()))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, err
		}
		n++
	}
	return n, nil
}

// headerFlags names the flag behind each checkpoint header field.
var headerFlags = map[string]string{
	"model.layers": "--layers", "model.d_model": "--d-model", "model.heads": "--heads", "model.kv_heads": "--kv-heads",
	"model.d_ff": "--d-ff", "model.seq_len": "--seq", "model.tied_embeddings": "--tied", "model.flash_attention": "--flash-attention", "layout": "--mesh or --plan",
	"topology": "--tpu and --slices, or --plan", "global_batch": "--batch", "micro_batches": "--micro-batches",
	"schedule": "--schedule", "chunks": "--chunks", "seed": "--seed", "lr": "--lr", "bf16_compute": "--bf16", "data": "--data or --synthetic",
	"processes": "the number of MPI ranks", "process": "the MPI rank",
}

// rankFiles lists the ranks whose checkpoints (checkpoint.rank-R.step-N.bin)
// are in the directory, and whether a one-process run's
// (checkpoint.step-N.bin) are.
func (d ckptStore) rankFiles() (ranks []int, single bool) {
	entries, _ := os.ReadDir(d.dir)
	seen := map[int]bool{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".bin")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if _, ok := strings.CutPrefix(name, "checkpoint.step-"); ok {
			single = true
			continue
		}
		rest, ok := strings.CutPrefix(name, "checkpoint.rank-")
		r, step, ok2 := strings.Cut(rest, ".step-")
		n, err := strconv.Atoi(r)
		if _, err2 := strconv.Atoi(step); ok && ok2 && err == nil && err2 == nil && n >= 0 && strconv.Itoa(n) == r && !seen[n] {
			seen[n] = true
			ranks = append(ranks, n)
		}
	}
	sort.Ints(ranks)
	return ranks, single
}

// processesNote says, when the checkpoints in the directory are of another
// number of processes than this run's, what was found and what this run
// is; else "".
func (d ckptStore) processesNote(processes int) string {
	ranks, single := d.rankFiles()
	want := "this run is one process"
	if processes > 1 {
		want = fmt.Sprintf("this run has %d MPI ranks", processes)
	}
	if len(ranks) == 0 {
		if processes > 1 && single {
			return fmt.Sprintf("%s holds the checkpoints of a run in one process (checkpoint.step-N.bin), and %s: resume it without mpirun", d.dir, want)
		}
		return ""
	}
	list := fmt.Sprint(ranks)
	list = strings.ReplaceAll(list[1:len(list)-1], " ", ", ")
	n := ranks[len(ranks)-1] + 1
	switch {
	case processes == 1 || n > processes:
		return fmt.Sprintf("%s holds the checkpoints of MPI ranks %s (checkpoint.rank-R.step-N.bin: a run of %d ranks), and %s: resume it under mpirun with %d ranks (-np %d)",
			d.dir, list, n, want, n, n)
	case len(ranks) < processes:
		return fmt.Sprintf("%s holds the checkpoints of MPI ranks %s only, and %s", d.dir, list, want)
	}
	return ""
}

// resumeError restates the emulator's resume errors in terms of flags;
// processes is this run's number of processes (1 outside mpirun).
func resumeError(err error, dir string, processes int) error {
	var done *emu.StepsDoneError
	if errors.As(err, &done) {
		return bad("run: --steps %d is not past the checkpoint's step %d in %s: nothing left to train; want --steps above %d",
			done.Steps, done.Step, dir, done.Step)
	}
	var mm *emu.MismatchError
	if errors.As(err, &mm) {
		var parts []string
		for _, f := range mm.Fields {
			flag := headerFlags[f.Field]
			if flag == "" {
				flag = "a setting of the emulator"
			}
			parts = append(parts, fmt.Sprintf("%s (%s) is %s in the checkpoint, %s in this run", f.Field, flag, f.Checkpoint, f.Run))
		}
		return bad("run: --resume: the checkpoint in %s is of another run: %s", dir, strings.Join(parts, "; "))
	}
	var re *emu.ResumeError
	if errors.As(err, &re) {
		if note := (ckptStore{dir: dir}).processesNote(processes); note != "" {
			return bad("run: --resume: %v; %s", err, note)
		}
		return bad("run: --resume: %v (in %s)", err, dir)
	}
	return nil
}
