package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Transcripts runs the scripts testdata/*.transcript, etcd raft's
// interaction tests' way: a script is comment lines (#), blank lines and
// blocks of a command line starting with verb, a line "----" and the
// command's expected output, which ends at a blank line. run gives a
// command's output; Transcripts holds each file to its rebuilt text, or
// rewrites the files with -update.
func Transcripts(t *testing.T, verb string, run func(t *testing.T, cmd string) string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.transcript"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.transcript: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got := replay(t, string(data), verb+" ", run)
		if *update {
			if err := os.WriteFile(f, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got != string(data) {
			t.Errorf("%s: the outputs differ (go test -update rewrites it)\n--- got\n%s", f, got)
		}
	}
}

// replay rebuilds a transcript: comments, blank lines and commands as
// they are, each command's output after its "----".
func replay(t *testing.T, script, prefix string, run func(t *testing.T, cmd string) string) string {
	var out strings.Builder
	lines := strings.Split(strings.TrimRight(script, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		out.WriteString(l + "\n")
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		out.WriteString("----\n")
		o := run(t, l)
		if o != "" && !strings.HasSuffix(o, "\n") {
			o += "\n"
		}
		out.WriteString(o)
		for i+1 < len(lines) && lines[i+1] != "" { // the old output
			i++
		}
	}
	return out.String()
}
