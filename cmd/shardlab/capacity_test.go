package main

import (
	"strings"
	"testing"
)

// TestCapacityDeterministic: the same seed prints the same bytes; another
// seed other ones.
func TestCapacityDeterministic(t *testing.T) {
	args := []string{"capacity", "--tpu", "tpu7x-256", "--slices", "8", "--days", "60", "--seed", "3", "--json"}
	a, errOut, code := runCmd(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, _, _ := runCmd(args...)
	if a != b {
		t.Errorf("seed 3 twice printed different output")
	}
	c, _, _ := runCmd(append(args[:len(args)-2], "--seed", "4", "--json")...)
	if a == c {
		t.Errorf("seeds 3 and 4 printed the same output")
	}
}

// TestCapacityRefuses: bad input is one line on stderr naming the field,
// the value and what is accepted, with exit 2.
func TestCapacityRefuses(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--tpu", "v5p-128", "--mode", "all-capacity"}, []string{"all-capacity on v5p", "v6e or tpu7x"}},
		{[]string{"--tpu", "v5litepod-256", "--mode", "all-capacity"}, []string{"all-capacity on v5e", "v6e or tpu7x"}},
		{[]string{"--blocks", "0"}, []string{"--blocks", `"0"`, "from 1 to 64"}},
		{[]string{"--chip-failure-rate", "-1"}, []string{"--chip-failure-rate", `"-1"`, "want a finite number in [0, 1]"}},
		{[]string{"--chip-failure-rate", "NaN"}, []string{"--chip-failure-rate", `"NaN"`}},
		{[]string{"--storage-gbps", "Inf"}, []string{"--storage-gbps", `"Inf"`}},
		{[]string{"--tpu", "tpu7x-8"}, []string{"slice 2x2x1", "whole 4x4x4 sub-blocks"}},
		// a slice larger than a block: hw has no such accelerator type (the
		// capacity package's own refusal is tested there)
		{[]string{"--tpu", "tpu7x-36864", "--slices", "1"}, []string{"--tpu", "tpu7x-36864", "no slice of this size"}},
		{[]string{"--tpu", "tpu7x-18432", "--slices", "2", "--spares", "0"}, []string{"slices 2", "at most 1 slices"}},
		{[]string{"--slices", "73"}, []string{"slices 73", "at most 72 slices"}},
		{[]string{"--spares", "200"}, []string{"spares 200", "at most 128"}},
		{[]string{"--mode", "managed", "--spares", "2"}, []string{"--spares 2", "holdback"}},
		{[]string{"--holdback", "0.1"}, []string{"--holdback 0.1", "managed"}},
		{[]string{"--maintenance-every", "1h"}, []string{"maintenance interval 1h0m0s", "at least 24h"}},
		{[]string{"--tpu", "v6e-256", "--mode", "all-capacity"}, []string{"v6e", "--sub-block-chips", "--block-chips"}},
		{[]string{"--tpu", "v6e-256", "--sub-block-chips", "64"}, []string{"give both"}},
		{[]string{"--tpu", "v6e-256", "--sub-block-chips", "48", "--block-chips", "1024"}, []string{"sub-block chips 48", "v6e-"}},
		// TPU7x's sizes are published (hw, gke-ac): the v6e flags do not
		// replace them, with or without the other flag
		{[]string{"--tpu", "tpu7x-256", "--sub-block-chips", "128", "--block-chips", "1024", "--slices", "2"},
			[]string{"--sub-block-chips 128 and --block-chips 1024", "tpu7x", "want neither", "for v6e", "4x4x4 (64 chips)", "144 to a block (9216 chips)"}},
		{[]string{"--tpu", "tpu7x-256", "--block-chips", "9216"}, []string{"--block-chips 9216 on tpu7x", "want neither", "for v6e", "published"}},
		{[]string{"--tpu", "tpu7x-256", "--mode", "managed", "--sub-block-chips", "64"}, []string{"--sub-block-chips 64 on tpu7x", "want neither"}},
	} {
		fail(t, append([]string{"capacity"}, c.args...), c.want...)
	}
}

// TestCapacityText: the text names the ML Goodput library's categories
// and Young's, Daly's and the simulated interval.
func TestCapacityText(t *testing.T) {
	out, errOut, code := runCmd("capacity", "--days", "10")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{"program_startup", "checkpoint_save", "checkpoint_restore", "wasted_progress",
		"infrastructure_recovery", "waiting_for_capacity", "Young", "Daly", "simulated optimum", "expected time to train",
		"in the step model's band)", "95 %"} {
		if !strings.Contains(out, w) {
			t.Errorf("capacity output lacks %q", w)
		}
	}
}

// TestCapacityUserSizes: on v6e, whose block sizes Google does not
// publish, the user's sizes place the job and the report says whose they
// are.
func TestCapacityUserSizes(t *testing.T) {
	out, errOut, code := runCmd("capacity", "--model", "llama3-8b", "--tpu", "v6e-256", "--slices", "2", "--mode", "all-capacity",
		"--sub-block-chips", "64", "--block-chips", "1024", "--spares", "1", "--days", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"16 sub-blocks (8x8, 64 chips", "2 x v6e-256 (16x16, 4 sub-blocks each)", "assumption: the user's: a sub-block of 64 chips (8x8) and a block of 1024 chips"} {
		if !strings.Contains(out, want) {
			t.Errorf("capacity on v6e with the user's sizes lacks %q:\n%s", want, out)
		}
	}
}

// TestSecs: durations keep three significant digits, by hand.
func TestSecs(t *testing.T) {
	for _, c := range []struct {
		s    float64
		want string
	}{
		{720 * 3600, "720h0m0s"},
		{123.4 * 3600, "123h0m0s"},
		{49.5 * 3600, "49h30m0s"},
		{3725.4, "1h2m0s"},
		{75.46, "1m15s"},
		{0.3804, "380ms"},
		// past time.Duration's 2^63 ns (9.22e9 s, 292 years): the same
		// spelling, not a wrapped negative one
		{9.3e9, "2583333h0m0s"},
		{5.7e10, "15833333h0m0s"},
	} {
		if got := secs(c.s).String(); got != c.want {
			t.Errorf("secs(%g) = %s, want %s", c.s, got, c.want)
		}
	}
}

// TestCapacityNoFailures: --chip-failure-rate 0 means no failures: an
// infinite MTBF, no Young or Daly interval (√(2·C·M) has no finite
// value), checkpoints only before maintenance, and no claim that the
// failure rate is Llama 3's. An explicit rate drops that claim too.
func TestCapacityNoFailures(t *testing.T) {
	out, errOut, code := runCmd("capacity", "--chip-failure-rate", "0", "--days", "10")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"failures: none on the job's chips (MTBF infinite)",
		"checkpoint interval 240h0m0s (the horizon: checkpoints only before maintenance); Young and Daly: none with no failures"} {
		if !strings.Contains(out, want) {
			t.Errorf("--chip-failure-rate 0 lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"-2562047h", "Young 4h", "as often as an H100"} {
		if strings.Contains(out, bad) {
			t.Errorf("--chip-failure-rate 0 prints %q:\n%s", bad, out)
		}
	}
	js, errOut, code := runCmd("capacity", "--chip-failure-rate", "0", "--days", "10", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(js, "young_interval_s") || strings.Contains(js, "daly_interval_s") || !strings.Contains(js, `"checkpoint_interval_s": 864000,`) {
		t.Errorf("--chip-failure-rate 0 --json: want no Young or Daly interval and the 10-day horizon as the interval:\n%s", js)
	}
	out, errOut, code = runCmd("capacity", "--chip-failure-rate", "1e-3", "--days", "10")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "as often as an H100") {
		t.Errorf("an explicit --chip-failure-rate 1e-3 still claims Llama 3's rate:\n%s", out)
	}
}

// TestCapacityNoPlanNamesItsFlags: when no layout runs the job, capacity
// says so as capacity, names only flags capacity has (plan's other
// options, which capacity leaves at plan's defaults, by name), and says
// which of plan's flags would run it, as plan's. Issue 30: each command
// maps plan's fields to its own words.
func TestCapacityNoPlanNamesItsFlags(t *testing.T) {
	own := commandFlags["capacity"]()
	planFlags := commandFlags["plan"]()
	for _, args := range [][]string{
		{"--blocks", "64", "--slices", "4096", "--days", "3650"},                    // the batch limit
		{"--tpu", "tpu7x-128", "--slices", "1", "--model", "qwen3-coder-480b-a35b"}, // HBM, with plan's fixes
	} {
		_, errOut, code := runCmd(append([]string{"capacity"}, args...)...)
		if code != 1 || !strings.HasPrefix(errOut, "shardlab: capacity: no layout can run this job") {
			t.Errorf("capacity %q: exit %d, stderr %q; want 1 and capacity's no-layout error", args, code, errOut)
			continue
		}
		mine, plans, _ := strings.Cut(errOut, "shardlab plan")
		for _, m := range flagMention.FindAllStringSubmatch(mine, -1) {
			if own.Lookup(m[1]) == nil {
				t.Errorf("capacity %q names --%s, which capacity does not have: %s", args, m[1], errOut)
			}
		}
		for _, m := range flagMention.FindAllStringSubmatch(plans, -1) {
			if planFlags.Lookup(m[1]) == nil {
				t.Errorf("capacity %q says plan would run it with --%s, which plan does not have: %s", args, m[1], errOut)
			}
		}
	}
}
