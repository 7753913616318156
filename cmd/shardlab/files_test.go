package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"shardlab/unit"
)

// specials makes the files no input flag may read in full: a FIFO (which
// blocks a reader until a writer comes), a device that never ends, a 20 GB
// sparse file (no disk used), a directory, and a file one byte over limit.
func specials(t *testing.T, limit int64) map[string]string {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse.json")
	over := filepath.Join(dir, "over.json")
	for path, size := range map[string]int64{sparse: 20 << 30, over: limit + 1} {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	return map[string]string{"a FIFO": fifo, "a character device": "/dev/zero", "20 GiB": sparse,
		"a directory": dir, "one byte over": over}
}

// TestBoundedInputFiles: every flag that reads a file refuses FIFOs,
// devices, directories and files over its limit, in one line naming the
// flag, without hanging or reading them.
func TestBoundedInputFiles(t *testing.T) {
	tests := []struct {
		args  func(path string) []string
		what  string // the flag named in the error
		limit int64
	}{
		{func(p string) []string { return []string{"plan", "--model", p} }, "--model", maxSpecBytes},
		{func(p string) []string { return []string{"export", "maxtext", "--model", p} }, "--model", maxSpecBytes},
		{func(p string) []string { return []string{"model", "show", p} }, "model show", maxSpecBytes},
		{func(p string) []string { return []string{"run", "--plan", p} }, "--plan", maxPlanBytes},
		{func(p string) []string { return []string{"run", "--data", p} }, "--data", maxCorpusFile},
	}
	for _, tt := range tests {
		for kind, path := range specials(t, tt.limit) {
			args := tt.args(path)
			if kind == "a directory" && tt.what == "--data" {
				continue // a directory of text files is what --data reads; TestCorpusDirectory
			}
			want := []string{tt.what + " " + path}
			switch kind {
			case "a FIFO", "a character device", "a directory":
				want = append(want, "is "+kind, "want a regular file")
			default:
				want = append(want, "want a regular file of at most "+unit.Bytes(tt.limit).String())
			}
			t.Run(strings.Join(args[:len(args)-1], " ")+" "+kind, func(t *testing.T) { fail(t, args, want...) })
		}
	}
}

// TestCorpusDirectory: under a --data DIR, FIFOs and links to devices are
// skipped rather than read, and the walk is bounded.
func TestCorpusDirectory(t *testing.T) {
	dir := t.TempDir()
	text := strings.Repeat("func main() {}\n", 20)
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "b.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "c.md")); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var got []byte
	var err error
	go func() {
		defer close(done)
		got, _, err = readCorpus(dir, 10)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("readCorpus hung on a FIFO or a device")
	}
	if err != nil || string(got) != text {
		t.Errorf("readCorpus = %d bytes, %v; want the %d bytes of a.go alone", len(got), err, len(text))
	}
	// a walk over more entries than the bound stops with an error
	for i := range 10 {
		if err := os.WriteFile(filepath.Join(dir, "d"+strings.Repeat("x", i)+".go"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := readCorpus(dir, 10); err == nil || !strings.Contains(err.Error(), "more than 10 entries") {
		t.Errorf("readCorpus over 14 entries with a bound of 10: %v", err)
	}
	// a large file is read only as far as the corpus needs
	big := filepath.Join(dir, "big.txt")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(maxCorpusFile)
	f.Close()
	got, desc, err := readCorpus(big, 10)
	if err != nil || len(got) != maxCorpus || !strings.Contains(desc, "the first "+unit.Bytes(maxCorpus).String()+" of "+unit.Bytes(maxCorpusFile).String()) {
		t.Errorf("readCorpus(%d-byte file) = %d bytes %q, %v; want the first %d", maxCorpusFile, len(got), desc, err, maxCorpus)
	}
}

// TestOutputPathsCheckedFirst: an output path that cannot be written is
// refused before any work (no progress bar, no report lost), naming the
// flag.
func TestOutputPathsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--trace", "/nonexistent/t.json"}, []string{"run: --trace /nonexistent/t.json", "directory /nonexistent does not exist"}},
		{[]string{"run", "--trace", dir}, []string{"run: --trace " + dir, "is a directory"}},
		{[]string{"run", "--trace", "/dev/null"}, []string{"run: --trace /dev/null", "is a character device"}},
		{[]string{"run", "--trace", filepath.Join(file, "t.json")}, []string{"run: --trace", file + " is a regular file, want a directory"}},
		{[]string{"run", "--checkpoint", "/dev/null"}, []string{"run: --checkpoint /dev/null", "is a character device, want a directory"}},
		{[]string{"run", "--checkpoint", file}, []string{"run: --checkpoint " + file, "want a directory"}},
		{[]string{"run", "--checkpoint", filepath.Join(file, "ckpt")}, []string{"run: --checkpoint", file + " is a regular file, want a directory"}},
		{[]string{"mxu", "--trace", "/nonexistent/x.json", "--m", "8", "--k", "8", "--n", "8"}, []string{"mxu: --trace /nonexistent/x.json", "does not exist"}},
		{[]string{"mxu", "--trace", "/dev/null", "--m", "8", "--k", "8", "--n", "8"}, []string{"mxu: --trace /dev/null", "character device"}},
		{[]string{"mxu", "--trace", dir, "--m", "8", "--k", "8", "--n", "8"}, []string{"mxu: --trace " + dir, "is a directory"}},
	}
	for _, tt := range tests {
		fail(t, tt.args, tt.want...)
	}
	// a trace that would be too long leaves an existing file alone
	if err := os.WriteFile(file, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	fail(t, []string{"mxu", "--trace", file}, "--trace", "too long")
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Errorf("mxu --trace with a GEMM too long to trace changed the file to %q", b)
	}
	// a checkpoint directory that does not exist yet is created
	ckpt := filepath.Join(dir, "a", "b")
	if _, errOut, code := runCmd("run", "--synthetic", "--steps", "2", "--every", "2", "--checkpoint", ckpt, "--quiet",
		"--seq", "16", "--d-model", "32", "--d-ff", "64", "--batch", "8"); code != 0 {
		t.Fatalf("run --checkpoint %s: exit %d: %s", ckpt, code, errOut)
	}
	if m, _ := filepath.Glob(filepath.Join(ckpt, "checkpoint.step-*.bin")); len(m) == 0 {
		t.Errorf("run --checkpoint %s wrote no checkpoint.step-N.bin", ckpt)
	}
}

// TestPseudoFSByPath: the portable fallback of the pseudo-filesystem check
// goes by where a path resolves.
func TestPseudoFSByPath(t *testing.T) {
	link := filepath.Join(t.TempDir(), "status")
	if err := os.Symlink("/proc/self/status", link); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ path, want string }{
		{"/proc", "procfs"}, {"/proc/kmsg", "procfs"}, {"/proc/x.html", "procfs"}, {link, "procfs"},
		{"/sys/devices/system/cpu/online", "sysfs"}, {"/sysx/a", ""}, {"/processes", ""}, {t.TempDir(), ""},
	} {
		if got := pseudoFSByPath(tt.path); got != tt.want {
			t.Errorf("pseudoFSByPath(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

// TestCheckOutputFileLeavesNoTrace: the check writes where the output
// will go, and leaves a new path absent and an existing file as it was.
func TestCheckOutputFileLeavesNoTrace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "new.html")
	if err := checkOutputFile("plan: --html", path); err != nil {
		t.Fatalf("checkOutputFile(%s) = %v, want nil", path, err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("checkOutputFile(%s) left the file behind (%v)", path, err)
	}
	old := filepath.Join(dir, "old.html")
	if err := os.WriteFile(old, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkOutputFile("plan: --html", old); err != nil {
		t.Fatalf("checkOutputFile(%s) = %v, want nil", old, err)
	}
	if b, err := os.ReadFile(old); string(b) != "keep" {
		t.Errorf("checkOutputFile(%s) changed it to %q (%v), want it left as it was", old, b, err)
	}
}

// TestCheckOutputFileConcurrent: processes probing one path at once (the
// ranks of an MPI run all check --trace) all find it writable, and leave
// no file behind. One probe's file made another's creation fail with
// "file exists" under mpirun.
func TestCheckOutputFileConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.json")
	for round := 0; round < 50; round++ {
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() { errs[i] = checkOutputFile("--trace", path) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, probe %d: %v", round, i, err)
			}
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("round %d: the probes left %s behind (%v)", round, path, err)
		}
	}
}
