//go:build !linux

package main

import "os"

// pseudoFS names the kernel pseudo-filesystem path is on, or is "" when
// it is on another filesystem. Without Linux's statfs magic numbers it
// goes by where the path resolves (pseudoFSByPath).
func pseudoFS(path string) string { return pseudoFSByPath(path) }

// pseudoFSOf is pseudoFS for an open file.
func pseudoFSOf(f *os.File) string { return pseudoFSByPath(f.Name()) }
