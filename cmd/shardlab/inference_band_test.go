package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"shardlab/export"
	"shardlab/inference"
	"shardlab/unit"
)

// TestInferenceBandTextIsJSON: shardlab inference's text prints the
// held-out band its --json gives, for the roofline and the simulation,
// and warns of prompt-heavy requests in both, for the 8k/1k request of
// review171's finding 5 (as the table's 8k/1k rows, prompts 8× their
// outputs) and not for 1k/1k.
func TestInferenceBandTextIsJSON(t *testing.T) {
	for _, c := range []struct {
		args  []string
		heavy bool
	}{
		{[]string{"--model", "qwen3-coder-480b-a35b", "--tensor-parallel-size", "8", "--weights", "fp8", "--kv-cache-dtype", "fp8", "--max-model-len", "10240",
			"--gpu-memory-utilization", "0.8", "--max-num-batched-tokens", "8192", "--concurrency", "64", "--prompt-len", "8192", "--output-len", "1024", "--num-requests", "64"}, true},
		{[]string{"--num-requests", "64"}, false},
	} {
		args := append([]string{"inference"}, c.args...)
		text, errOut, code := runCmd(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		out, errOut, code := runCmd(append(args, "--json")...)
		if code != 0 {
			t.Fatalf("%v --json: exit %d: %s", args, code, errOut)
		}
		var j struct {
			export.ServingJSON
			Simulation export.SimJSON `json:"simulation"`
		}
		if err := json.Unmarshal([]byte(out), &j); err != nil {
			t.Fatal(err)
		}
		roof, sim := j.HeldOutBand, j.Simulation.HeldOutBand
		if roof == nil || roof.TokensPerSecond == nil || roof.TokensPerSecondChip == nil || sim == nil || sim.TokensPerSecond == nil {
			t.Fatalf("%v --json: no held-out band: %+v, %+v", args, roof, sim)
		}
		r, rc, s := roof.TokensPerSecond, roof.TokensPerSecondChip, sim.TokensPerSecond
		want := []string{
			fmt.Sprintf("  in the held-out band: %.0f-%.0f output tokens/s, %.0f-%.0f per chip (this roofline's error on the %s", r.Low, r.High, rc.Low, rc.High, unit.Plural(r.Rows, "held-out vLLM row")),
			fmt.Sprintf("  in the held-out band: %.0f-%.0f output tokens/s (the simulation's error on the %s", s.Low, s.High, unit.Plural(s.Rows, "held-out vLLM row")),
			fmt.Sprintf("%+.1f %% to %+.1f %%)", 100*s.LowError, 100*s.HighError),
		}
		if f := sim.TTFT; f != nil {
			want = append(want, fmt.Sprintf("TTFT mean %v", unit.Seconds(f.Low)))
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%v: text lacks %q, which its JSON gives", args, w)
			}
		}
		inJSON := strings.Contains(strings.Join(j.Warnings, "\n"), "prompt-heavy requests:")
		inText := strings.Contains(text, "warning: prompt-heavy requests:")
		if inJSON != c.heavy || inText != c.heavy {
			t.Errorf("%v: prompt-heavy warning in JSON %v, in text %v, want %v", args, inJSON, inText, c.heavy)
		}
	}
}

// TestUnborneCountsItsWarnings: the error of a plan its simulation does
// not bear out counts the simulation's warnings, not the plan's own
// above them (review171: "(1 warning above)" under two warnings, one of
// them the simulation's).
func TestUnborneCountsItsWarnings(t *testing.T) {
	out, errOut, code := runCmd("inference", "--seed", "8", "--request-rate", "2", "--length-mix", "uniform:100-3000")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, errOut)
	}
	all, sim := strings.Count(out, "\n  warning: "), strings.Count(out, "\n  warning: the simulation")
	if all <= sim || sim == 0 {
		t.Fatalf("%d warnings, %d of the simulation: want some of each to tell them apart\n%s", all, sim, out)
	}
	if want := fmt.Sprintf("(the simulation's %s above)", unit.Plural(sim, "warning")); !strings.Contains(errOut, want) {
		t.Errorf("stderr %q lacks %q", errOut, want)
	}
}

// TestLengthMixHelpSaysHeader: --length-mix's help says a histogram
// file's first line is its header, which ParseHistogram requires: a
// file of bins alone is refused (review171: the help said only "lines
// prompt_len,output_len,weight").
func TestLengthMixHelpSaysHeader(t *testing.T) {
	fs, _ := newInferenceFlags()
	help := fs.Lookup("length-mix").Usage
	if !strings.Contains(help, "a first line "+inference.HistogramHeader) {
		t.Errorf("--length-mix help %q does not say the first line is the header %s", help, inference.HistogramHeader)
	}
	if _, err := inference.ParseHistogram([]byte("1024,1024,1\n")); err == nil {
		t.Errorf("a histogram without its header line was read: the help's required header is not required")
	}
}
