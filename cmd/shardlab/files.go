package main

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"shardlab/unit"
)

// Input files are bounded: a spec or plan file is small, and a FIFO, a
// device or a huge (or sparse) file must neither hang the command nor
// exhaust its memory.
const (
	maxSpecBytes = 1 << 20 // --model and 'model show' files: a spec is a dozen lines
	maxPlanBytes = 4 << 20 // --plan: one 'plan --json' output is about 10 KiB
)

// kind names a file mode for errors.
func kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return "not a regular file"
}

// onPseudoFS refuses a path on a kernel pseudo-filesystem (procfs,
// sysfs): its files look regular, but they are the kernel's interface, not
// data. A procfs file reports size 0 and may block a reader forever
// (/proc/kmsg), and writing one changes a kernel setting.
func onPseudoFS(what, path, fs, want string) error {
	return bad("%s %s: is on %s, a kernel pseudo-filesystem whose files are not data, want %s", what, path, fs, want)
}

// pseudoFSByPath is the portable stand-in for statfs(2): the kernel
// pseudo-filesystem path resolves into, by its usual mount point (/proc,
// procfs on the BSDs and Solaris too; /sys), or "".
func pseudoFSByPath(path string) string {
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		p = path
	}
	if p, err = filepath.Abs(p); err != nil {
		return ""
	}
	for _, m := range []struct{ dir, fs string }{{"/proc", "procfs"}, {"/sys", "sysfs"}} {
		if p == m.dir || strings.HasPrefix(p, m.dir+"/") {
			return m.fs
		}
	}
	return ""
}

// openRegular opens path for reading only if it is a regular file of at
// most limit bytes, not on a kernel pseudo-filesystem. It stats first and
// opens without blocking, then checks the opened file again, so a FIFO or
// a procfs file swapped in meanwhile cannot hang it.
func openRegular(what, path string, limit int64) (*os.File, int64, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, 0, bad("%s %s: %v", what, path, cause(err))
	}
	if !info.Mode().IsRegular() {
		return nil, 0, bad("%s %s: is %s, want a regular file", what, path, kind(info.Mode()))
	}
	if fs := pseudoFS(path); fs != "" {
		return nil, 0, onPseudoFS(what, path, fs, "a regular file")
	}
	if info.Size() > limit {
		return nil, 0, bad("%s %s: %v, want a regular file of at most %v", what, path, unit.Bytes(info.Size()), unit.Bytes(limit))
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, bad("%s %s: %v", what, path, cause(err))
	}
	info, err = f.Stat()
	switch {
	case err != nil:
	case !info.Mode().IsRegular():
		err = bad("%s %s: is %s, want a regular file", what, path, kind(info.Mode()))
	case pseudoFSOf(f) != "":
		err = onPseudoFS(what, path, pseudoFSOf(f), "a regular file")
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, info.Size(), nil
}

// readFile reads a regular file of at most limit bytes; what names the flag
// for errors ("--plan").
func readFile(what, path string, limit int64) ([]byte, error) {
	f, _, err := openRegular(what, path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, bad("%s %s: %v", what, path, err)
	}
	if int64(len(b)) > limit {
		return nil, bad("%s %s: grew past %v while read, want a regular file of at most %v", what, path, unit.Bytes(limit), unit.Bytes(limit))
	}
	return b, nil
}

// checkOutputFile checks before any work that path can be written, by
// writing there: an existing regular file is opened for writing (and left
// as it is), a new one is created and removed. A directory, a device, a
// FIFO, a missing directory or a kernel pseudo-filesystem is refused. It
// is the one check of every output file flag.
func checkOutputFile(what, path string) error {
	info, err := os.Stat(path)
	switch {
	case err == nil && !info.Mode().IsRegular():
		return bad("%s %s: is %s, want a file to write", what, path, kind(info.Mode()))
	case err != nil && !missing(err):
		return bad("%s %s: %v", what, path, cause(err))
	}
	exists := err == nil
	dir := filepath.Dir(path)
	if !exists {
		info, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return bad("%s %s: directory %s does not exist", what, path, dir)
		case err != nil:
			return bad("%s %s: %v", what, path, cause(err))
		case !info.IsDir():
			return bad("%s %s: %s is %s, want a directory", what, path, dir, kind(info.Mode()))
		}
	}
	on := dir
	if exists {
		on = path // which may be a link to a pseudo-filesystem
	}
	if fs := pseudoFS(on); fs != "" {
		return onPseudoFS(what, path, fs, "a file to write")
	}
	return probeWrite(what, path, exists)
}

// probeWrite opens the file at path for writing, if it exists, or
// creates and removes it. Another process may probe the same path at the
// same time (the ranks of an MPI run all check --trace): a file that
// appears between the stat and the creation is opened as an existing one,
// and one that goes again is created, up to probeTries times: each flip
// means another prober made progress, and the test's eight goroutines on
// a loaded machine flipped past three.
func probeWrite(what, path string, exists bool) error {
	for try := 0; ; try++ {
		if exists {
			// O_NONBLOCK: a FIFO swapped in since the stat cannot hang the
			// open; no O_TRUNC: the file is written only after the work.
			f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
			if missing(err) && try < probeTries {
				exists = false
				continue
			}
			if err != nil {
				return bad("%s %s: cannot be written: %v", what, path, cause(err))
			}
			return f.Close()
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) && try < probeTries {
			exists = true
			continue
		}
		if err != nil {
			return bad("%s %s: cannot be created: %v", what, path, cause(err))
		}
		f.Close()
		if err := os.Remove(path); err != nil && !missing(err) {
			return bad("%s %s: created, but cannot be removed again: %v", what, path, cause(err))
		}
		return nil
	}
}

// probeTries bounds probeWrite's retries when other probers race it.
const probeTries = 32

// checkOutputDir checks before any work that path is a writable directory,
// or can be created: its nearest existing ancestor is a writable directory.
func checkOutputDir(what, path string) error {
	p := filepath.Clean(path)
	for {
		info, err := os.Stat(p)
		switch {
		case err == nil && !info.IsDir() && p == filepath.Clean(path):
			return bad("%s %s: is %s, want a directory", what, path, kind(info.Mode()))
		case err == nil && !info.IsDir():
			return bad("%s %s: %s is %s, want a directory", what, path, p, kind(info.Mode()))
		case err == nil:
			if err := syscall.Access(p, 2 /* W_OK */); err != nil {
				return bad("%s %s: directory %s is not writable: %v", what, path, p, err)
			}
			return nil
		case !missing(err):
			return bad("%s %s: %v", what, path, cause(err))
		}
		parent := filepath.Dir(p)
		if parent == p {
			return bad("%s %s: no existing directory above it", what, path)
		}
		p = parent
	}
}

// missing reports whether a stat failed because the path, or a directory
// on it, does not exist (a path through a regular file is ENOTDIR).
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// cause drops the operation and path that an *fs.PathError repeats.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
