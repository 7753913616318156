package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestInferenceCheckpointDtype: --checkpoint-dtype states the format the
// --hf-model checkpoint stores (review 119 #4). The checkpoint warning
// told a fp8 copy of Llama 3 8B to "give weights that format", and
// --weights fp8 then drew "vllm serve needs a fp8 checkpoint"; a bf16
// copy of DeepSeek-V3 served bf16 drew "the checkpoint stores fp8". The
// warning now names the flag that states the format, and with it neither
// warning is printed (exit 0); a case variant of the catalog's repository
// is the catalog's (review 119 #13).
func TestInferenceCheckpointDtype(t *testing.T) {
	llama := []string{"inference", "--tpu", "v6e-8", "--model", "llama3-8b", "--num-requests", "10", "--hf-model"}
	dsv3 := []string{"inference", "--tpu", "tpu7x-32", "--model", "deepseek3-671b", "--num-requests", "10", "--hf-model", "/data/dsv3-bf16", "--weights", "bf16"}
	for _, c := range []struct {
		args        []string
		want, never []string
	}{
		{append(llama, "/data/llama3-8b-fp8", "--weights", "fp8"),
			[]string{"if /data/llama3-8b-fp8 stores another format, set --checkpoint-dtype to it", "warning: fp8 weights: vllm serve needs a fp8 checkpoint"}, []string{"give weights"}},
		{append(llama, "/data/llama3-8b-fp8", "--weights", "fp8", "--checkpoint-dtype", "fp8"),
			[]string{"fp8 weights: the checkpoint's own (as --checkpoint-dtype gives it)"}, []string{"warning: checkpoint", "warning: fp8 weights"}},
		{append(llama, "/data/llama3-8b-fp8", "--checkpoint-dtype", "FP8"),
			[]string{"weights fp8, KV cache", "the checkpoint's own (as --checkpoint-dtype gives it)"}, []string{"warning: checkpoint", "warning: fp8 weights"}},
		{dsv3, []string{"set --checkpoint-dtype to it", "warning: bf16 weights: the checkpoint stores fp8"}, nil},
		{append(dsv3, "--checkpoint-dtype", "bf16"), []string{"weights bf16"}, []string{"warning: checkpoint", "the checkpoint stores fp8", "warning: bf16 weights"}},
		{append(llama, "META-LLAMA/meta-llama-3-8b"), []string{"vllm serve META-LLAMA/meta-llama-3-8b "}, []string{"warning: checkpoint"}},
	} {
		out, errOut, code := runCmd(c.args...)
		if code != 0 {
			t.Errorf("%s: exit %d, %s; want 0", strings.Join(c.args, " "), code, errOut)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q", strings.Join(c.args, " "), w)
			}
		}
		for _, w := range c.never {
			if strings.Contains(out, w) {
				t.Errorf("%s: output has %q", strings.Join(c.args, " "), w)
			}
		}
	}
	// --json spells the flag as the text does
	out, _, code := runCmd(append(llama, "/data/llama3-8b-fp8", "--json")...)
	var v struct{ Warnings []string }
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 || !strings.Contains(strings.Join(v.Warnings, "\n"), "set --checkpoint-dtype to it") {
		t.Errorf("--json: exit %d, %v, warnings %q; want 0 and the warning naming --checkpoint-dtype", code, err, v.Warnings)
	}
	fail(t, []string{"inference", "--checkpoint-dtype", "fp4"}, `--checkpoint-dtype "fp4"`, "bf16, fp8 or int8")
}
