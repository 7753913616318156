package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestModelSpecRoundTrip: 'model show NAME --spec' writes a file that
// --model takes, describing the same model: plan on the file and on the
// catalog name print the same plan but for the name; --spec with --json,
// or with list, is refused.
func TestModelSpecRoundTrip(t *testing.T) {
	spec, errOut, code := runCmd("model", "show", "mixtral-8x7b", "--spec")
	if code != 0 {
		t.Fatalf("model show --spec: exit %d %s", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "mixtral-8x7b.yaml")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile, errOut, code := runCmd("model", "show", file, "--json")
	fromName, _, _ := runCmd("model", "show", "mixtral-8x7b", "--json")
	if code != 0 || fromFile != fromName {
		t.Errorf("model show %s --json: exit %d %s; differs from the catalog's: %v", file, code, errOut, fromFile != fromName)
	}
	fail(t, []string{"model", "show", "llama3-8b", "--spec", "--json"}, "--spec and --json")
	fail(t, []string{"model", "list", "--spec"}, "model list: --spec prints one model")
}
