package main

import "testing"

// TestValidateOneReport: validate prints one report at a time (--json
// prints any of them as JSON). Two reports are bad input: exit 2, nothing
// on stdout and one line naming both flags, with --json or without.
// --fit --breakdown printed only the fit.
func TestValidateOneReport(t *testing.T) {
	tests := []struct {
		args []string
		want []string // the flags the line names
	}{
		{[]string{"--fit", "--breakdown"}, []string{"--fit", "--breakdown"}},
		{[]string{"--json", "--breakdown", "--fit"}, []string{"--fit", "--breakdown"}},
		{[]string{"--fit", "--memory", "--json"}, []string{"--memory", "--fit"}},
		{[]string{"--serving", "--breakdown", "--json"}, []string{"--serving", "--breakdown"}},
		{[]string{"--memory", "--fit"}, []string{"--memory", "--fit"}},
		{[]string{"--memory", "--breakdown", "--json"}, []string{"--memory", "--breakdown"}},
		{[]string{"--serving", "--fit"}, []string{"--serving", "--fit"}},
		{[]string{"--serving", "--breakdown"}, []string{"--serving", "--breakdown"}},
		{[]string{"--memory", "--serving"}, []string{"--memory", "--serving"}},
	}
	for _, tt := range tests {
		fail(t, append([]string{"validate"}, tt.args...), tt.want...)
	}
}
