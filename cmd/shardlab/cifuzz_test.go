package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCIFuzzesEveryParser: every fuzz target in the repository is a
// "fuzz PACKAGE TARGET" line of .ci/run, so a parser's fuzzer cannot be
// added and then never run.
func TestCIFuzzesEveryParser(t *testing.T) {
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(string(ci), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "fuzz" {
			listed[f[1]+" "+f[2]] = true
		}
	}
	target := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	n := 0
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != "../.." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(strings.TrimPrefix(path, "../../")))
		for _, m := range target.FindAllStringSubmatch(string(src), -1) {
			n++
			if !listed[pkg+" "+m[1]] {
				t.Errorf("%s: %s is not fuzzed by .ci/run (want a line \"fuzz %s %s\")", path, m[1], pkg, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 30 {
		t.Errorf("found %d fuzz targets, want the repository's (at least 30)", n)
	}
}
