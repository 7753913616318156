package main

import (
	"encoding/json"
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
