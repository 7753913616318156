package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"shardlab/hw"
	"shardlab/infeed"
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
		fail(t, tt.args, tt.want...)
	}
	// the VM's own count and the default (0: the VM's) run
	for _, args := range [][]string{{"infeed", "--vcpus", "224", "--steps", "4", "--sweep=false"}, {"infeed", "--tpu", "v4", "--vcpus", "16", "--steps", "4", "--sweep=false"}} {
		if out, errOut, code := runCmd(args...); code != 0 || errOut != "" || !strings.Contains(out, "vCPUs") {
			t.Errorf("%v: exit %d, stderr %q; want 0 and the report", args, code, errOut)
		}
	}
}

// TestInfeedWorkBound: infeed --batch 25000 --steps 50 ran the sweep for
// minutes (24 runs of 5 million events). steps x batch x chips is held to
// 1 million examples with --sweep and 10 million without (exit 2, one line
// naming the flags and the bound), and the bounds themselves are accepted.
func TestInfeedWorkBound(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"infeed", "--batch", "25000", "--steps", "50"}, []string{"--steps 50 x --batch 25000 x 4 chips = 5000000 examples", "at most 1000000 with --sweep", "--sweep=false"}},
		{[]string{"infeed", "--batch", "250000", "--steps", "50", "--sweep=false"}, []string{"--steps 50 x --batch 250000 x 4 chips = 50000000 examples", "at most 10000000"}},
		{[]string{"infeed", "--batch", "1048576", "--steps", "100000", "--sweep=false"}, []string{"= 419430400000 examples"}},
	} {
		fail(t, tt.args, tt.want...)
	}
	// at and just past each bound (4 chips: 250000 examples per chip in all)
	for _, tt := range []struct {
		steps, batch int
		sweep, ok    bool
	}{
		{100, 2500, true, true},
		{1, 250_001, true, false},
		{10, 250_000, false, true},
		{1, 2_500_001, false, false},
	} {
		c := infeed.Config{Chips: 4, Steps: tt.steps, Batch: tt.batch}
		if err := checkInfeedWork(c, tt.sweep); (err == nil) != tt.ok {
			t.Errorf("checkInfeedWork(%d steps x %d x 4 chips, sweep %v) = %v, want accepted %v", tt.steps, tt.batch, tt.sweep, err, tt.ok)
		}
	}
}

// TestInfeedVerdictIsTheSweeps: review item 11. The verdict said "the
// MXU is the bottleneck: input keeps up" over a step stretched by input
// and a sweep that asked for more vCPUs than ran, and the sweep said 2
// vCPUs "keep the chips busy" with the MXU 0 % busy behind a 1 h drain,
// over "throughput 0 examples/s". Both now read one bound
// (infeed.Result.Bound): the host bounds the step exactly when the sweep
// needs more vCPUs than ran, and the sweep says the chips are busy only
// when the verdict does.
func TestInfeedVerdictIsTheSweeps(t *testing.T) {
	need := regexp.MustCompile(`vCPUs needed  (more than )?(\d+) per host`)
	for _, tt := range []struct {
		args  []string
		vcpus int // the workers that ran
	}{
		{[]string{"--jitter", "10"}, 224},
		{[]string{"--jitter", "5"}, 224},
		{[]string{"--jitter", "2", "--seed", "3"}, 224},
		{[]string{"--vcpus", "40"}, 40},
		{[]string{"--vcpus", "41", "--jitter", "0.5"}, 41},
		{[]string{"--vcpus", "42"}, 42},
		{[]string{"--drain", "1h"}, 224},
		{[]string{"--example-bytes", "8388608"}, 224},
	} {
		args := append([]string{"infeed"}, tt.args...)
		out, errOut, code := runCmd(args...)
		m := need.FindStringSubmatch(out)
		if code != 0 || m == nil {
			t.Errorf("%v: exit %d, %s%s", args, code, errOut, out)
			continue
		}
		n, _ := strconv.Atoi(m[2])
		host := strings.Contains(out, "verdict       input-bound: the host")
		busy := strings.Contains(out, "verdict       the MXU is the bottleneck")
		if more := m[1] != "" || n > tt.vcpus; host != more {
			t.Errorf("%v: verdict host-bound %v, but the sweep needs %s%d vCPUs of the %d that ran:\n%s", args, host, m[1], n, tt.vcpus, out)
		}
		// with the host keeping up, the chips at the sweep's count are what
		// they are at the run's: busy, or waiting on the same stage
		if !host && busy != strings.Contains(out, "to keep the chips busy") {
			t.Errorf("%v: the verdict and the sweep disagree on whether the chips are busy:\n%s", args, out)
		}
		if strings.Contains(out, "throughput    0 ") {
			t.Errorf("%v: a throughput of 0 for a run that finished:\n%s", args, out)
		}
	}
}

// TestInfeedStepsMeasureASteadyState: review 152 #3, --steps 1 measured
// no step and said "input keeps up" for a host that starves the chips:
// it is refused (exit 2, the flag, its value and the range); two steps
// give the host's verdict, and a run too short for the outfeed's queue
// to fill says it is not the steady state, with the outfeed's verdict.
func TestInfeedStepsMeasureASteadyState(t *testing.T) {
	fail(t, []string{"infeed", "--tpu", "v5e", "--vcpus", "4", "--batch", "1000", "--steps", "1"}, `--steps "1"`, "from 2 to 100000")
	out, errOut, code := runCmd("infeed", "--tpu", "v5e", "--vcpus", "4", "--batch", "1000", "--steps", "2", "--sweep=false")
	if code != 0 || !strings.Contains(out, "verdict     input-bound: the host does not keep the infeed full") {
		t.Errorf("--steps 2: exit %d %s, want the host's verdict:\n%s", code, errOut, out)
	}
	out, errOut, code = runCmd("infeed", "--drain", "100ms", "--outfeed-depth", "8", "--steps", "8", "--sweep=false")
	for _, want := range []string{"not the steady state, which is no shorter than the outfeed drain's 100 ms a step", "verdict     the outfeed fills"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("--steps 8, a slow outfeed: exit %d %s, lacks %q:\n%s", code, errOut, want, out)
		}
	}
}

// TestInfeedBatchesFitHBM: a batch whose input buffers exceed the chip's
// HBM (hw, tpu7x: 192 GiB) is refused with exit 2, naming the flags, the
// value and the limit (review171 finding 6: 1 GiB × 1048576 × 2 buffers,
// 2 PiB, was simulated).
func TestInfeedBatchesFitHBM(t *testing.T) {
	chip, err := hw.Lookup("tpu7x")
	if err != nil {
		t.Fatal(err)
	}
	fail(t, []string{"infeed", "--tpu", "tpu7x", "--example-bytes", "1073741824", "--batch", "1048576", "--steps", "2", "--sweep=false"},
		"infeed: --example-bytes x --batch x HBM buffers = 1073741824 x 1048576 x 2 = 2.00 PiB, want at most the chip's HBM, "+chip.HBM.String())
}

// TestInfeedErrorsNameFlags: infeed's refusals name the flag, in the
// house format, without the sentinel's text (review171).
func TestInfeedErrorsNameFlags(t *testing.T) {
	fail(t, []string{"infeed", "--vcpus", "1", "--sweep=false"}, "infeed: --vcpus 1, want at least one per NUMA node (2) with local placement")
	_, errOut, _ := runCmd("infeed", "--vcpus", "1", "--sweep=false")
	if strings.Contains(errOut, "invalid infeed config") {
		t.Errorf("stderr %q ends in the sentinel's text", errOut)
	}
	fs, _ := newInfeedFlags()
	for key, name := range infeedFields {
		if strings.HasPrefix(name, "--") && fs.Lookup(name[2:]) == nil {
			t.Errorf("infeedFields names %s as %s, which is no flag", key, name)
		}
	}
}
