package main

import (
	"strings"
	"testing"
)

// TestInfeedVCPUsAboveVM: --vcpus above the VM's count is bad input (exit
// 2, one line naming the VM's count); it was accepted and printed "4096 of
// 224 vCPUs". The catalog's tpu7x VM has 224 vCPUs [gcp-7x]; v4's is the
// stand-in of 4 per chip (hw.AssumedVCPUsPerChip), which the line says.
func TestInfeedVCPUsAboveVM(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"infeed", "--vcpus", "4096"}, []string{"--vcpus 4096", "224 vCPUs", "want 1 to 224"}},
		{[]string{"infeed", "--vcpus", "225", "--sweep=false"}, []string{"--vcpus 225", "224 vCPUs"}},
		{[]string{"infeed", "--tpu", "v4", "--vcpus", "17"}, []string{"--vcpus 17", "16 vCPUs", "assumed"}},
	}
	for _, tt := range tests {
		out, errOut, code := runCmd(tt.args...)
		line := strings.TrimSpace(errOut)
		ok := code == 2 && out == "" && !strings.Contains(line, "\n")
		for _, w := range tt.want {
			ok = ok && strings.Contains(line, w)
		}
		if !ok {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing and one line with %q", tt.args, code, out, errOut, tt.want)
		}
	}
	// the VM's own count and the default (0: the VM's) run
	for _, args := range [][]string{{"infeed", "--vcpus", "224", "--steps", "4", "--sweep=false"}, {"infeed", "--tpu", "v4", "--vcpus", "16", "--steps", "4", "--sweep=false"}} {
		if out, errOut, code := runCmd(args...); code != 0 || errOut != "" || !strings.Contains(out, "vCPUs") {
			t.Errorf("%v: exit %d, stderr %q; want 0 and the report", args, code, errOut)
		}
	}
}
