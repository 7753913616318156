package main

import "testing"

// TestValidateOneReport: validate prints one report at a time, and --json
// only with a report package validate has a JSON form of (the MFU table,
// --memory, --serving). Two reports, or --json with --fit or --breakdown
// (text only), are bad input: exit 2, nothing on stdout and one line
// naming both flags. --fit --json printed the fit as text, --fit
// --breakdown only the fit, --breakdown --json the JSON without the
// breakdown.
func TestValidateOneReport(t *testing.T) {
	tests := []struct {
		args []string
		want []string // the flags the line names
	}{
		{[]string{"--fit", "--json"}, []string{"--fit", "--json"}},
		{[]string{"--json", "--fit"}, []string{"--fit", "--json"}},
		{[]string{"--breakdown", "--json"}, []string{"--breakdown", "--json"}},
		{[]string{"--fit", "--breakdown"}, []string{"--fit", "--breakdown"}},
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
