package main

import (
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"

	"shardlab/unit"
)

// The training text: at most maxCorpusFile for a --data FILE, at most
// maxCorpusEntries visited under a --data DIR, and the first maxCorpus
// bytes used.
const (
	maxCorpus        = 4 << 20
	maxCorpusFile    = 256 << 20
	maxCorpusEntries = 100_000
)

// loadCorpus reads a text file, the text files under a directory, or by
// default the Go sources under GOROOT/src, in sorted order, up to 4 MiB.
// Under a directory, files that are not regular (FIFOs, devices, symbolic
// links to them) are skipped.
func loadCorpus(path string) ([]byte, string, error) { return readCorpus(path, maxCorpusEntries) }

// readCorpus is loadCorpus visiting at most maxEntries under a directory.
func readCorpus(path string, maxEntries int) ([]byte, string, error) {
	desc := path
	if path == "" {
		root := os.Getenv("GOROOT")
		if root == "" {
			root = runtime.GOROOT()
		}
		path = filepath.Join(root, "src")
		desc = "Go sources under " + path
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, "", bad("--data %s: %v", path, cause(err))
	}
	if fs := pseudoFS(path); fs != "" {
		return nil, "", onPseudoFS("--data", path, fs, "a text file or a directory of them")
	}
	if !info.IsDir() {
		return readCorpusFile(path, desc)
	}
	return readCorpusDir(path, desc, maxEntries)
}

// readCorpusFile reads the first maxCorpus bytes of the text file at path.
func readCorpusFile(path, desc string) ([]byte, string, error) {
	f, size, err := openRegular("--data", path, maxCorpusFile)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCorpus))
	if err != nil {
		return nil, "", bad("--data %s: %v", path, err)
	}
	if size > maxCorpus {
		desc = fmt.Sprintf("%s (the first %v of %v)", desc, unit.Bytes(len(b)), unit.Bytes(size))
	}
	return b, desc, nil
}

// readCorpusDir reads the .go, .txt and .md files under the directory
// path, in sorted order, up to maxCorpus bytes, visiting at most
// maxEntries entries.
func readCorpusDir(path, desc string, maxEntries int) ([]byte, string, error) {
	var files []string
	entries := 0
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if entries++; entries > maxEntries {
			return bad("--data %s: more than %d entries under it, want a smaller directory or a file", path, maxEntries)
		}
		if err != nil {
			return nil // unreadable entries are skipped
		}
		switch filepath.Ext(p) {
		case ".go", ".txt", ".md":
			if !d.IsDir() {
				files = append(files, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	sort.Strings(files)
	var out []byte
	for _, name := range files {
		if len(out) >= maxCorpus {
			break
		}
		f, _, err := openRegular("--data", name, math.MaxInt64)
		if err != nil {
			continue // not a regular file, or unreadable
		}
		b, err := io.ReadAll(io.LimitReader(f, int64(maxCorpus-len(out))))
		f.Close()
		if err != nil {
			continue
		}
		out = append(out, b...)
	}
	if len(out) == 0 {
		return nil, "", bad("--data %s: no .go, .txt or .md files", path)
	}
	return out, fmt.Sprintf("%s (%d files, %v)", desc, len(files), unit.Bytes(len(out))), nil
}
