package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"shardlab/validate"
)

// memoryReport is the report validate renders itself, for the command to
// match.
func memoryReport(t *testing.T) validate.MemoryReport {
	t.Helper()
	rep, err := validate.BuiltInMemoryReport()
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestValidateMemory: shardlab validate --memory prints validate's memory
// report (its text is held by validate's golden file), and with --json
// its JSON.
func TestValidateMemory(t *testing.T) {
	rep := memoryReport(t)
	var text, js bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"validate", "--memory"}, text.String()},
		{[]string{"validate", "--memory", "--json"}, js.String()},
		{[]string{"validate", "--json", "--memory"}, js.String()},
	}
	for _, tt := range tests {
		out, errOut, code := runCmd(tt.args...)
		if code != 0 || errOut != "" {
			t.Errorf("%v: exit %d, stderr %q, want 0 and nothing", tt.args, code, errOut)
		}
		if out != tt.want {
			t.Errorf("%v printed\n%s\nwant\n%s", tt.args, out, tt.want)
		}
	}
	out, _, _ := runCmd("validate", "--memory", "--json")
	var got validate.MemoryJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Rows) != len(rep.Results) {
		t.Errorf("validate --memory --json: %v, %d rows, want %d", err, len(got.Rows), len(rep.Results))
	}
	if plain, _, _ := runCmd("validate"); plain == text.String() {
		t.Error("validate without --memory printed the memory table")
	}
}

// TestValidateMemoryBadFlags: --memory with a flag of the MFU report is
// bad input: exit 2 and one line.
func TestValidateMemoryBadFlags(t *testing.T) {
	for _, args := range [][]string{{"validate", "--memory", "--fit"}, {"validate", "--memory", "--breakdown"}} {
		out, errOut, code := runCmd(args...)
		if code != 2 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "--memory") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q, want 2, nothing and one line naming --memory", args, code, out, errOut)
		}
	}
}
