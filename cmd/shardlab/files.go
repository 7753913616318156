package main

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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

// openRegular opens path for reading only if it is a regular file of at
// most limit bytes. It stats first and opens without blocking, then checks
// the opened file again, so a FIFO swapped in meanwhile cannot hang it.
func openRegular(what, path string, limit int64) (*os.File, int64, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, 0, bad("%s %s: %v", what, path, cause(err))
	}
	if !info.Mode().IsRegular() {
		return nil, 0, bad("%s %s: is %s, want a regular file", what, path, kind(info.Mode()))
	}
	if info.Size() > limit {
		return nil, 0, bad("%s %s: %v, want a regular file of at most %v", what, path, unit.Bytes(info.Size()), unit.Bytes(limit))
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, bad("%s %s: %v", what, path, cause(err))
	}
	info, err = f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = bad("%s %s: is %s, want a regular file", what, path, kind(info.Mode()))
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

// checkOutputFile checks before any work that path can be written: it is
// not a directory or a device, and its directory exists and is writable.
func checkOutputFile(what, path string) error {
	info, err := os.Stat(path)
	switch {
	case err == nil && !info.Mode().IsRegular():
		return bad("%s %s: is %s, want a file to write", what, path, kind(info.Mode()))
	case err == nil:
		if err := syscall.Access(path, 2 /* W_OK */); err != nil {
			return bad("%s %s: not writable: %v", what, path, err)
		}
		return nil
	case !missing(err):
		return bad("%s %s: %v", what, path, cause(err))
	}
	dir := filepath.Dir(path)
	info, err = os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return bad("%s %s: directory %s does not exist", what, path, dir)
	case err != nil:
		return bad("%s %s: %v", what, path, cause(err))
	case !info.IsDir():
		return bad("%s %s: %s is %s, want a directory", what, path, dir, kind(info.Mode()))
	}
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return bad("%s %s: directory %s is not writable: %v", what, path, dir, err)
	}
	return nil
}

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
