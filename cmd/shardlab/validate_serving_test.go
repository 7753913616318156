package main

import (
	"bytes"
	"strings"
	"testing"

	"shardlab/validate"
)

// TestValidateServing: shardlab validate --serving prints validate's
// serving report, and with --json its JSON (the goldens hold both).
func TestValidateServing(t *testing.T) {
	rep, err := validate.BuiltInServingReport()
	if err != nil {
		t.Fatal(err)
	}
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
		{[]string{"validate", "--serving"}, text.String()},
		{[]string{"validate", "--serving", "--json"}, js.String()},
		{[]string{"validate", "--json", "--serving"}, js.String()},
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
}

// TestValidateServingBadFlags: --serving with a flag of another report is
// bad input: exit 2 and one line naming --serving.
func TestValidateServingBadFlags(t *testing.T) {
	for _, args := range [][]string{{"validate", "--serving", "--fit"}, {"validate", "--serving", "--breakdown"}, {"validate", "--serving", "--memory"}} {
		out, errOut, code := runCmd(args...)
		if code != 2 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "--serving") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q, want 2, nothing and one line naming --serving", args, code, out, errOut)
		}
	}
}
