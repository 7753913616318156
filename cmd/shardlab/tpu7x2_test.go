package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestTPU7x2EveryCommand (review 140 #1): tpu7x-2, one TPU7x chip (1x1x1)
// on one tpu7x-standard-1t VM, 2 JAX devices, runs in every command that
// takes a TPU, named as the engines name it:
//   - MaxText @e591f30c src/maxtext/utils/accelerator_to_spec_map.py:37:
//     "tpu7x-2": SystemCharacteristics("tpu", "tpu7x:1x1x1", "default",
//     (1, 1, 1), 2, ...): compile_topology=tpu7x-2, 2 devices a slice;
//   - xpk @367c838 src/xpk/core/system_characteristics.py 572-582: prefix
//     'tpu7x', machine_type='tpu7x-standard-1t', supported_topologies
//     ['1x1x1'], whose map key is f'{prefix}-{topology}' (lines 234-281):
//     --tpu-type tpu7x-1x1x1, one VM, so no warning of other VMs;
//   - tpu-inference @b8692ff0 .buildkite/benchmark/cases/daily/
//     daily_qwen3_32B_random_tpu7x_2.json: Qwen3-32B served on "v7x-2" at
//     tensor-parallel-size 2, the chip's two devices.
func TestTPU7x2EveryCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
		not  string
	}{
		{[]string{"hw", "show", "tpu7x-2"}, []string{"1 on 1 host", "host VM               tpu7x-standard-1t: 1 chip\n", "JAX devices per chip  2"}, "vCPUs"},
		{[]string{"plan", "--model", "gemma-2b", "--tpu", "tpu7x-2", "--verify"}, []string{"on tpu7x-2 (1x1x1, 1 chip)", "2 devices (1 chip)",
			"single host: tpu7x-2 is one tpu7x-standard-1t VM with 1 chip", "compile_topology=tpu7x-2 compile_topology_num_slices=1"}, ""},
		{[]string{"export", "maxtext", "--model", "gemma-2b", "--tpu", "tpu7x-2"}, []string{"gemma-2b on tpu7x-2 (1x1x1, 1 chip)", "ici_context_parallelism: 2\n"}, ""},
		{[]string{"export", "xpk", "--model", "gemma-2b", "--tpu", "tpu7x-2", "--cluster", "c", "--docker-image", "img"},
			[]string{"--tpu-type tpu7x-1x1x1 \\\n", "--num-slices 1 \\\n"}, "# warning"},
		{[]string{"inference", "--model", "qwen3-32b", "--tpu", "tpu7x-2"}, []string{"on tpu7x-2 (1 chip, 2 JAX devices a chip)",
			"vllm serve Qwen/Qwen3-32B --tensor-parallel-size 2 --data-parallel-size 1 "}, ""},
		{[]string{"infeed", "--tpu", "tpu7x-2", "--steps", "4", "--sweep=false"}, []string{"(tpu7x-standard-1t): 1 chip, 4 of 4 vCPUs (assumed)"}, ""},
	} {
		out, errOut, code := runCmd(c.args...)
		if code != 0 {
			t.Errorf("shardlab %s: exit %d: %s", strings.Join(c.args, " "), code, errOut)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("shardlab %s: output lacks %q:\n%s", strings.Join(c.args, " "), w, out)
			}
		}
		if c.not != "" && strings.Contains(out+errOut, c.not) {
			t.Errorf("shardlab %s: output has %q:\n%s%s", strings.Join(c.args, " "), c.not, out, errOut)
		}
	}
	// inference weighs both ways of using the two devices: TP 2, and
	// TP 1 × DP 2 (two replicas, one a TensorCore)
	out, _, _ := runCmd("inference", "--model", "qwen3-32b", "--tpu", "tpu7x-2")
	for _, row := range []string{`(?m)^\s+2\s+1\s+1\s+1\s+true\s`, `(?m)^\s+1\s+1\s+2\s+1\s+true\s`} {
		if !regexp.MustCompile(row).MatchString(out) {
			t.Errorf("inference on tpu7x-2: no row %s (TP EP DP chips fits):\n%s", row, out)
		}
	}
	// one slice only (hw.NewMultislice); 2 × tpu7x-8 still plans
	fail(t, []string{"plan", "--model", "gemma-2b", "--tpu", "tpu7x-2", "--slices", "2"}, "--slices", `"tpu7x-2"`, "does not join a Multislice", "tpu7x-8")
	if _, errOut, code := runCmd("plan", "--model", "gemma-2b", "--tpu", "tpu7x-8", "--slices", "2", "--top", "1"); code != 0 {
		t.Errorf("plan on 2 × tpu7x-8: exit %d: %s", code, errOut)
	}
}
