package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shardlab/capacity"
	"shardlab/inference"
	"shardlab/plan"
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
		// review 140: managed mode asked on v5p was answered about All
		// Capacity; the refusal names the mode, what capacity simulates
		// (as plan --goodput's line does) and what managed mode needs
		{[]string{"--model", "llama3-70b", "--tpu", "v5p-256", "--slices", "2", "--mode", "managed"},
			[]string{"mode managed on v5p", "tpu7x and v6e reservations only", "a managed reservation", "sub-blocks and blocks"}},
		{[]string{"--blocks", "0"}, []string{"--blocks", `"0"`, "from 1 to 64"}},
		// review 145: one seed range with inference's, 0 to 2^63-1
		{[]string{"--seed", "9223372036854775808"}, []string{"--seed", `"9223372036854775808"`, "from 0 to 9223372036854775807"}},
		{[]string{"--chip-failure-rate", "-1"}, []string{"--chip-failure-rate", `"-1"`, "want a finite number in [0, 1]"}},
		{[]string{"--chip-failure-rate", "NaN"}, []string{"--chip-failure-rate", `"NaN"`}},
		{[]string{"--storage-gbps", "Inf"}, []string{"--storage-gbps", `"Inf"`}},
		// review 145 #5: a slice of no whole sub-blocks is refused as the
		// --tpu it is, before the slice count; a count left at its default
		// is named so
		{[]string{"--tpu", "tpu7x-8"}, []string{"capacity: --tpu tpu7x-8: want whole 4x4x4 sub-blocks (each dimension a multiple of 4), from tpu7x-128; tpu7x-8 is 4 chips"}},
		{[]string{"--tpu", "tpu7x-2"}, []string{"capacity: --tpu tpu7x-2: want whole 4x4x4 sub-blocks (each dimension a multiple of 4), from tpu7x-128; tpu7x-2 is 1 chip"}},
		{[]string{"--tpu", "tpu7x-4096"}, []string{"capacity: --slices 8 (the default): want at most 4 slices of tpu7x-4096"}},
		{[]string{"--tpu", "tpu7x-4096", "--slices", "8"}, []string{"capacity: --slices 8: want at most 4 slices of tpu7x-4096"}},
		// a slice larger than a block: hw has no such accelerator type (the
		// capacity package's own refusal is tested there)
		{[]string{"--tpu", "tpu7x-36864", "--slices", "1"}, []string{"--tpu", "tpu7x-36864", "no slice of this size"}},
		{[]string{"--tpu", "tpu7x-18432", "--slices", "2", "--spares", "0"}, []string{"slices 2", "at most 1 slice of"}},
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

// TestCapacityNamesDefaultsAndBlocks (review 149 #5): a bare generation
// is refused with the whole-sub-block slices capacity lays out; --spares
// left at its default 2 is named so, as --slices is; counts are plural
// only above one; and a count that more blocks would hold names the
// --blocks that does. By hand (4x4x4 cubes of 64 chips, 144 to a block):
// tpu7x-18432 is 144 cubes, a whole block, so 1 slice leaves 0 spares on
// 1 block and 2 blocks hold it with 2 spares; tpu7x-4096 is 32 cubes, 4
// to a block, so 8 slices need 2 blocks; tpu7x-256 is 2 cubes, 72 to a
// block, so 73 need 2; 200 spares beside 8 x 2 cubes need 2 blocks (272
// free).
func TestCapacityNamesDefaultsAndBlocks(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tpu", "tpu7x"}, "capacity: --tpu tpu7x names no size; capacity simulates whole 4x4x4 sub-blocks: give tpu7x-128, tpu7x-256, tpu7x-384, ... tpu7x-18432"},
		{[]string{"--tpu", "tpu7x-18432", "--slices", "1"}, "capacity: --spares 2 (the default): want at most 0: 1 slice x 144 sub-blocks leave 0 of 144 free; with --blocks 2 they fit"},
		{[]string{"--tpu", "tpu7x-18432", "--slices", "1", "--spares", "2"}, "capacity: --spares 2: want at most 0: 1 slice x 144 sub-blocks"},
		{[]string{"--tpu", "tpu7x-4096"}, "capacity: --slices 8 (the default): want at most 4 slices of tpu7x-4096 (32 sub-blocks each, 4 to a block) on 1 block; with --blocks 2 they fit"},
		{[]string{"--slices", "73"}, "capacity: --slices 73: want at most 72 slices of tpu7x-256 (2 sub-blocks each, 72 to a block) on 1 block; with --blocks 2 they fit"},
		{[]string{"--spares", "200"}, "capacity: --spares 200: want at most 128: 8 slices x 2 sub-blocks leave 128 of 144 free; with --blocks 2 they fit"},
		// no number of blocks holds a slice count past MaxBlocks' worth
		{[]string{"--tpu", "tpu7x-18432", "--slices", "65"}, "on 1 block"},
	} {
		_, errOut, code := runCmd(append([]string{"capacity"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("capacity %v: exit %d, %q; want 2 and %q", c.args, code, errOut, c.want)
		}
		if strings.Contains(errOut, "(s)") || strings.Contains(errOut, " 1 slices") || strings.Contains(errOut, " 1 sub-blocks") {
			t.Errorf("capacity %v: %q: want singulars for one", c.args, errOut)
		}
	}
	_, errOut, _ := runCmd("capacity", "--tpu", "tpu7x-18432", "--slices", "65")
	if strings.Contains(errOut, "--blocks") {
		t.Errorf("capacity --slices 65 of whole blocks: %q names --blocks, though 64 is the most", errOut)
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
		// spelling, not a wrapped negative one, and the Julian years beside
		// it (9.3e9 / 31,557,600 s = 294.7; 5.7e10 / 31,557,600 = 1806.2)
		{9.3e9, "2583333h0m0s (295 years)"},
		{5.7e10, "15833333h0m0s (1806 years)"},
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
	// a dense model of 1.27T parameters, 318 GB a chip of state at
	// MaxText's precision on 64 TPU7x chips, whatever the layout: HBM, with
	// plan's fixes (every catalog model now fits the smallest slice
	// capacity lays out, tpu7x-128, on some layout)
	big := filepath.Join(t.TempDir(), "too-big.yaml")
	spec := "name: too-big\nlayers: 400\nd_model: 16384\nheads: 128\nkv_heads: 8\nhead_dim: 128\nd_ff: 53248\nvocab: 128256\nseq_len: 8192\ngated_mlp: true\n"
	if err := os.WriteFile(big, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--blocks", "64", "--slices", "4096", "--days", "3650"}, // the batch limit
		{"--tpu", "tpu7x-128", "--slices", "1", "--model", big},  // HBM, with plan's fixes
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

// TestCapacityExpectedTimeToTrain: capacity's expected time to train is
// the expectation, not one seed's sample: the renewal-reward goodput of
// the job it simulates, worked here by hand from the report's own figures,
// the same for every seed, and the figure plan --goodput and budget give
// for the same job (2 x tpu7x-512 of llama3-70b, the defects67 item 8
// case: seed 1 simulated 206 h, plan and budget 8.5 d = 204 h). Seed 1's
// simulated time is reported beside it, labelled as the seed's.
func TestCapacityExpectedTimeToTrain(t *testing.T) {
	job := []string{"--model", "llama3-70b", "--tpu", "tpu7x-512", "--slices", "2"}
	c, s4 := capacityExpected(t, "1", job), capacityExpected(t, "4", job)
	if s4.ExpectedS != c.ExpectedS || s4.Expected != c.Expected || s4.SimulatedS == c.SimulatedS {
		t.Errorf("seeds 1 and 4: expected %v and %v s, simulated %v and %v s; want the expectation the same and the samples different",
			c.ExpectedS, s4.ExpectedS, c.SimulatedS, s4.SimulatedS)
	}
	p := planGoodputOf(t, job, "1T")
	expectedByHand(t, c, float64(p.Batch*p.Seq))
	expectedIsPlanAndBudgets(t, c, p)

	// the text says which figure is which
	text, errOut, code := runCmd(append([]string{"capacity", "--days", "30"}, job...)...)
	if code != 0 {
		t.Fatalf("capacity: exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		fmt.Sprintf("expected goodput %.4f (renewal reward", c.Expected),
		fmt.Sprintf("expected time to train 1e+12 tokens: %v (", secs(c.ExpectedS)),
		fmt.Sprintf("; %v at seed 1's simulated goodput %.4f", secs(c.SimulatedS), c.Goodput),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("capacity text lacks %q:\n%s", want, text)
		}
	}
}

// capacityExpectation is what capacity --json says of the job's goodput.
type capacityExpectation struct {
	TokensPerS    float64 `json:"tokens_per_s"`
	SaveS         float64 `json:"checkpoint_save_s"`
	RestoreS      float64 `json:"checkpoint_restore_s"`
	IntervalS     float64 `json:"checkpoint_interval_s"`
	PerHour       float64 `json:"job_failures_per_hour"`
	Goodput       float64 `json:"goodput_fraction"`
	Tokens        float64 `json:"tokens"`
	Expected      float64 `json:"expected_goodput_fraction"`
	ExpectedS     float64 `json:"expected_time_to_train_s"`
	SimulatedS    float64 `json:"simulated_time_to_train_s"`
	ExpectedLowS  float64 `json:"low_expected_time_to_train_s"`
	ExpectedHighS float64 `json:"high_expected_time_to_train_s"`
}

func capacityExpected(t *testing.T, seed string, job []string) capacityExpectation {
	t.Helper()
	out, errOut, code := runCmd(append([]string{"capacity", "--json", "--days", "30", "--seed", seed}, job...)...)
	if code != 0 {
		t.Fatalf("capacity --seed %s: exit %d: %s", seed, code, errOut)
	}
	var c capacityExpectation
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// expectedByHand works c's expected goodput and times out from its own
// figures and the job's step of batchTokens tokens.
func expectedByHand(t *testing.T, c capacityExpectation, batchTokens float64) {
	t.Helper()
	// 512 chips at Llama 3's 419 failures in 54 days on 16,384 GPUs:
	// 0.0101 an hour
	if want := 512 * 419.0 / (54 * 24 * 16384); math.Abs(c.PerHour-want)/want > 1e-12 {
		t.Errorf("job failures per hour %v, want %v", c.PerHour, want)
	}
	// a segment of T work plus a save C takes e^{λR}(e^{λ(T+C)}−1)/λ on
	// average, R the restart (10 min recovery + 10 min startup + the
	// restore); T of it is kept
	l := c.PerHour / 3600
	r := 600 + 600 + c.RestoreS
	seg := math.Exp(l*r) * math.Expm1(l*(c.IntervalS+c.SaveS)) / l
	if g := c.IntervalS / seg; math.Abs(c.Expected-g) > 1e-9 {
		t.Errorf("expected goodput %v, want T/segment = %v", c.Expected, g)
	}
	// and to first order (Young's accounting): the saves, half an interval
	// lost per failure, and the save and restart
	if first := 1 - c.SaveS/c.IntervalS - l*(c.IntervalS/2+c.SaveS+r); math.Abs(c.Expected-first) > 1e-4 {
		t.Errorf("expected goodput %v, want about %v to first order", c.Expected, first)
	}
	// a job trains whole steps, the last partial batch a whole one
	trained := math.Ceil(c.Tokens/batchTokens) * batchTokens
	if want := trained / (c.TokensPerS * c.Expected); math.Abs(c.ExpectedS-want)/want > 1e-12 {
		t.Errorf("expected time to train %v s, want whole steps' tokens / (tokens/s x expected goodput) = %v s", c.ExpectedS, want)
	}
	if want := trained / (c.TokensPerS * c.Goodput); math.Abs(c.SimulatedS-want)/want > 1e-12 {
		t.Errorf("simulated time to train %v s, want whole steps' tokens / (tokens/s x simulated goodput) = %v s", c.SimulatedS, want)
	}
	if !(c.ExpectedLowS < c.ExpectedS && c.ExpectedS < c.ExpectedHighS) {
		t.Errorf("expected time to train %v s outside its band %v to %v s", c.ExpectedS, c.ExpectedLowS, c.ExpectedHighS)
	}
}

// planGoodput is what plan --goodput --json says of a job's batch and
// expected goodput.
type planGoodput struct {
	Batch int `json:"global_batch_sequences"`
	Seq   int `json:"seq_len"`
	Step  struct {
		S float64 `json:"total_s"`
	} `json:"step_time"`
	Goodput struct {
		Goodput float64 `json:"goodput_fraction"`
		TimeS   float64 `json:"time_to_train_s"`
	} `json:"goodput"`
}

func planGoodputOf(t *testing.T, job []string, tokens string) planGoodput {
	t.Helper()
	out, errOut, code := runCmd(append([]string{"plan", "--goodput", "--json", "--tokens", tokens}, job...)...)
	if code != 0 {
		t.Fatalf("plan --goodput: exit %d: %s", code, errOut)
	}
	var p planGoodput
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// budgetRow is one row of budget --json.
type budgetRow struct {
	Type    string  `json:"accelerator_type"`
	Slices  int     `json:"slices"`
	Steps   float64 `json:"steps"`
	StepS   float64 `json:"step_time_s"`
	Goodput float64 `json:"goodput_fraction"`
	TimeS   float64 `json:"time_to_train_s"`
}

func budgetRows(t *testing.T, args ...string) []budgetRow {
	t.Helper()
	out, errOut, code := runCmd(append([]string{"budget", "--json", "--modes", "on-demand", "--price", "tpu7x=5"}, args...)...)
	if code != 0 {
		t.Fatalf("budget: exit %d: %s", code, errOut)
	}
	var b struct {
		Rows []budgetRow `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		t.Fatal(err)
	}
	return b.Rows
}

// expectedIsPlanAndBudgets holds c's expectation to plan --goodput's, p,
// and budget's for the same job: all three count whole steps
// (capacity.Job.Steps).
func expectedIsPlanAndBudgets(t *testing.T, c capacityExpectation, p planGoodput) {
	t.Helper()
	if math.Abs(p.Goodput.Goodput-c.Expected) > 1e-15 || math.Abs(p.Goodput.TimeS-c.ExpectedS)/c.ExpectedS > 1e-12 {
		t.Errorf("capacity expects goodput %v, %v s; plan --goodput %v, %v s", c.Expected, c.ExpectedS, p.Goodput.Goodput, p.Goodput.TimeS)
	}
	rows := budgetRows(t, "--model", "llama3-70b", "--generations", "tpu7x", "--slice-chips", "256", "--slices", "2")
	if len(rows) != 1 || rows[0].Type != "tpu7x-512" || rows[0].Slices != 2 {
		t.Fatalf("budget rows %+v, want one of 2 x tpu7x-512", rows)
	}
	if row := rows[0]; math.Abs(row.Goodput-c.Expected) > 1e-15 || math.Abs(row.TimeS-c.ExpectedS)/c.ExpectedS > 1e-12 {
		t.Errorf("capacity expects goodput %v, %v s; budget %v, %v s", c.Expected, c.ExpectedS, row.Goodput, row.TimeS)
	}
}

// TestTimeToTrainOneToken: one token takes one whole step in capacity,
// plan --goodput and budget alike: the step over the goodput (defects100
// #11: capacity said 0 s, 3.6e-07 s in JSON, and plan --goodput 0.0 hours,
// where budget said 758 ms, one 755 ms step over its goodput).
func TestTimeToTrainOneToken(t *testing.T) {
	rows := budgetRows(t, "--tokens", "1", "--generations", "tpu7x", "--slice-chips", "128", "--slices", "1")
	if len(rows) != 1 || rows[0].Type != "tpu7x-256" || rows[0].Steps != 1 {
		t.Fatalf("budget rows %+v, want one of tpu7x-256, one step", rows)
	}
	row := rows[0]
	want := row.StepS / row.Goodput
	if math.Abs(row.TimeS-want)/want > 1e-12 {
		t.Errorf("budget: %v s for one token, want one %v s step / goodput %v = %v s", row.TimeS, row.StepS, row.Goodput, want)
	}
	job := []string{"--model", "llama3-8b", "--tpu", "tpu7x-256", "--slices", "1"}
	p := planGoodputOf(t, job, "1")
	if p.Step.S != row.StepS || math.Abs(p.Goodput.TimeS-want)/want > 1e-12 {
		t.Errorf("plan --goodput: %v s for one token (step %v s), want budget's %v s (step %v s)", p.Goodput.TimeS, p.Step.S, want, row.StepS)
	}
	c := capacityExpected(t, "1", append(job, "--tokens", "1"))
	if math.Abs(c.ExpectedS-want)/want > 1e-12 {
		t.Errorf("capacity: expected %v s for one token, want budget's %v s", c.ExpectedS, want)
	}
}

// TestCapacityExpectationGaps: the expected goodput assumes spares at
// hand and no maintenance (capacity.ExpectRun), so where the simulated
// run waited for capacity the report says how long and gives the
// simulated time to train beside it (review: with --spares 0 the run
// waited 49 % of its time while "expected" did not move); with no
// failures it waits for nothing and says nothing.
func TestCapacityExpectationGaps(t *testing.T) {
	out, errOut, code := runCmd("capacity", "--spares", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "warning: the simulated run also waited 356h0m0s for capacity (49.4 % of it) and saw 0 maintenance waves, which the expected goodput leaves out; its simulated time to train is 45h3m0s") {
		t.Errorf("--spares 0: no warning that the expectation leaves out the wait:\n%s", out)
	}
	out, errOut, code = runCmd("capacity", "--chip-failure-rate", "0", "--days", "10")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "warning:") {
		t.Errorf("no failures, no maintenance within 10 days: a warning:\n%s", out)
	}
}

// TestCapacitySaysWhoseExpectationItIs: capacity said its expected goodput
// was plan --goodput's and budget's "at capacity's default flags" whatever
// the flags: --checkpoint-every 5h printed 0.9439 so, where plan --goodput
// gives 0.9912 (review 128 #12, review 135 #7). Flags that move only the
// simulation, the time to train, or that restate a default keep the claim,
// and the figure is then plan --goodput's for the same job (the claim is
// held to plan's own JSON, a second computation: capacity.Expect, not
// capacity.ExpectRun); each flag that moves it is named, the claim
// dropped, and the figure differs from plan's.
func TestCapacitySaysWhoseExpectationItIs(t *testing.T) {
	job := []string{"--model", "llama3-8b", "--tpu", "tpu7x-256", "--slices", "2", "--days", "5"}
	want := planGoodputOf(t, job[:6], "1T").Goodput.Goodput
	const claim = "as plan --goodput and budget compute it for this job"
	for _, c := range []struct {
		flags []string
		moved string // "" keeps the claim
	}{
		{nil, ""},
		{[]string{"--mode", "managed", "--holdback", "0.1", "--seed", "7", "--repair", "48h", "--tokens", "2T"}, ""},
		{[]string{"--spares", "4", "--blocks", "2", "--maintenance-every", "0", "--maintenance-down", "1h", "--maintenance-by", "block"}, ""},
		// given at their defaults: Daly's interval, Llama 3's rate
		{[]string{"--checkpoint-every", "0", "--chip-failure-rate", fmt.Sprint(capacity.DefaultChipFailuresPerHour)}, ""},
		{[]string{"--checkpoint-every", "5h"}, "--checkpoint-every 5h0m0s"},
		{[]string{"--chip-failure-rate", "1e-4"}, "--chip-failure-rate 0.0001"},
		{[]string{"--storage-gbps", "5"}, "--storage-gbps 5"},
		{[]string{"--recovery", "2h", "--startup", "1h"}, "--recovery 2h0m0s, --startup 1h0m0s"},
	} {
		args := append(append([]string{"capacity"}, job...), c.flags...)
		text, errOut, code := runCmd(args...)
		js, _, _ := runCmd(append(args, "--json")...)
		var got capacityExpectation
		if err := json.Unmarshal([]byte(js), &got); code != 0 || err != nil {
			t.Fatalf("%v: exit %d %s %v", c.flags, code, errOut, err)
		}
		line := ""
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, "expected goodput ") {
				line = l
			}
		}
		same := math.Abs(got.Expected-want) < 1e-15
		if c.moved == "" && (!strings.Contains(line, claim) || !same) {
			t.Errorf("%v: %q, expected goodput %v; want the claim and plan --goodput's %v", c.flags, line, got.Expected, want)
		}
		if c.moved != "" && (strings.Contains(line, claim) || !strings.Contains(line, "at the flags given ("+c.moved+")") || same) {
			t.Errorf("%v: %q, expected goodput %v; want the flags given named (%s), no claim, and a figure other than plan --goodput's %v", c.flags, line, got.Expected, c.moved, want)
		}
	}
}

// TestCapacityOptionWords: plan's errors name capacity's --slices with
// its value and "(the default)" where it was not given (capacity's 8 is
// not plan's 1), and as the flag where it was (review 145 #5).
func TestCapacityOptionWords(t *testing.T) {
	for _, c := range []struct {
		set  map[string]bool
		want string
	}{{nil, "--slices 8 (the default)"}, {map[string]bool{"slices": true}, "--slices"}} {
		f := &capacityFlags{slices: 8, set: c.set}
		if got := f.option(plan.OptionSlices); got != c.want {
			t.Errorf("option(slices) with flags %v = %q, want %q", c.set, got, c.want)
		}
	}
	if got := (&capacityFlags{}).option(plan.OptionTPU); got != "--tpu" {
		t.Errorf("option(tpu) = %q, want --tpu", got)
	}
}

// TestCapacitySeedRange: capacity's seed range is inference's
// (inference.MaxSeed, 2^63-1): the largest runs and is echoed as given.
func TestCapacitySeedRange(t *testing.T) {
	out, errOut, code := runCmd("capacity", "--tpu", "tpu7x-256", "--slices", "8", "--days", "60", "--seed", "9223372036854775807", "--json")
	if code != 0 || !strings.Contains(out, `"seed": 9223372036854775807,`) {
		t.Errorf("capacity --seed 2^63-1: exit %d, %s; want the seed echoed:\n%.400s", code, errOut, out)
	}
	if inference.MaxSeed != 1<<63-1 {
		t.Errorf("inference.MaxSeed = %d, want 2^63-1", int64(inference.MaxSeed))
	}
}
