package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

func TestMXUSimulatesLongGEMMs(t *testing.T) {
	// 1M x 1024 x 1024 on 128x128 is 64 folds and about 67M cycles: past the
	// old 50M-cycle switch, now simulated (the cost is per fold). 2048 x 1024
	// folds on a 1x1 array are past maxSimFolds: closed form only.
	for _, c := range []struct {
		args      []string
		simulated bool
	}{
		{[]string{"--m", "1048576", "--k", "1024", "--n", "1024", "--array", "128x128"}, true},
		{[]string{"--m", "1", "--k", "2048", "--n", "1024", "--array", "1x1"}, false},
	} {
		out, errOut, code := runCmd(append([]string{"mxu", "--json"}, c.args...)...)
		if code != 0 {
			t.Fatalf("mxu %v: exit %d: %s", c.args, code, errOut)
		}
		var r struct {
			Simulated        bool  `json:"simulated"`
			Cycles           int64 `json:"cycles"`
			ClosedFormCycles int64 `json:"closed_form_cycles"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.Simulated != c.simulated {
			t.Errorf("mxu %v: simulated %v, want %v", c.args, r.Simulated, c.simulated)
		}
		if c.simulated && r.Cycles <= 50_000_000 {
			t.Errorf("mxu %v: %d cycles, want a GEMM past the old 50M-cycle switch", c.args, r.Cycles)
		}
		text, _, _ := runCmd(append([]string{"mxu"}, c.args...)...)
		if want := "by cycle-level simulation"; c.simulated != strings.Contains(text, want) {
			t.Errorf("mxu %v: output %q; simulated %v", c.args, text, c.simulated)
		}
	}
}

// TestMXUSCALESimWarnings: with --compat scalesim, --double-buffer and
// --hbm-limit do not change the cycles (README: SCALE-Sim overlaps nothing
// across folds and counts no HBM stalls), so setting them warns on stderr
// as --double-buffer with --dataflow os does; the command still runs and
// counts the same cycles. Without --compat scalesim they warn of nothing.
func TestMXUSCALESimWarnings(t *testing.T) {
	gemm := []string{"mxu", "--m", "256", "--k", "256", "--n", "256", "--compat", "scalesim"}
	count := regexp.MustCompile(`cycles +(\d+) by SCALE-Sim`)
	for _, tt := range []struct {
		dataflow string
		flags    []string
		want     []string
	}{
		{"ws", []string{"--double-buffer=false"}, []string{"--double-buffer does not change the cycles with --compat scalesim"}},
		{"ws", []string{"--hbm-limit=false"}, []string{"--hbm-limit does not change the cycles with --compat scalesim"}},
		{"is", []string{"--double-buffer=false", "--hbm-limit=false"}, []string{"--double-buffer does not change", "--hbm-limit does not change"}},
		// os: the dataflow's warning says it already
		{"os", []string{"--double-buffer=false"}, []string{"--double-buffer has no effect with --dataflow os"}},
	} {
		base := append(append([]string{}, gemm...), "--dataflow", tt.dataflow)
		args := append(append([]string{}, base...), tt.flags...)
		plain, _, _ := runCmd(base...)
		out, errOut, code := runCmd(args...)
		if code != 0 || strings.Count(errOut, "\n") != len(tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 0 and %d warning lines", args, code, errOut, len(tt.want))
		}
		for _, w := range tt.want {
			if !strings.Contains(errOut, "shardlab: mxu: warning: "+w) {
				t.Errorf("%v: stderr %q, want %q", args, errOut, w)
			}
		}
		if got, want := count.FindStringSubmatch(out), count.FindStringSubmatch(plain); got == nil || want == nil || got[1] != want[1] {
			t.Errorf("%v: SCALE-Sim cycles %v, want %v as without %v", args, got, want, tt.flags)
		}
	}
	for _, args := range [][]string{gemm, {"mxu", "--m", "256", "--k", "256", "--n", "256", "--double-buffer=false", "--hbm-limit=false"}} {
		if _, errOut, code := runCmd(args...); code != 0 || errOut != "" {
			t.Errorf("%v: exit %d, stderr %q; want 0 and no warning", args, code, errOut)
		}
	}
}
