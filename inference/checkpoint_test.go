package inference

import (
	"strings"
	"testing"
)

// TestCheckpointWeights: the weights default to the format the catalog
// records for the checkpoint vllm serve loads, and only weights other
// than it are warned of. DeepSeek-V3's released checkpoints are fp8
// (README_WEIGHTS.md: config.json's quantization_config), so its plan
// costed bf16 by default and, given fp8, warned that the command loads
// no fp8 checkpoint (review 3, #9). Another repository (--hf-model) is
// not the catalog's: bf16, as before. Llama 3's checkpoints are bf16.
func TestCheckpointWeights(t *testing.T) {
	for _, c := range []struct {
		model, tpu, hf, weights string
		want                    Dtype
		warn, reason            string // "" none
	}{
		{"deepseek3-671b", "tpu7x-16", "", "", FP8, "", "fp8 weights: the checkpoint's own (deepseek-ai/DeepSeek-V3 README_WEIGHTS.md"},
		{"deepseek3-671b", "tpu7x-16", "", "fp8", FP8, "", "the checkpoint's own"},
		{"deepseek3-671b", "tpu7x-32", "", "bf16", BF16, "bf16 weights: the checkpoint stores fp8 (deepseek-ai/DeepSeek-V3 README_WEIGHTS.md", ""},
		{"deepseek3-671b", "tpu7x-32", "someone/deepseek-v3-bf16", "", BF16, "", ""},
		{"llama3-70b", "tpu7x-8", "", "", BF16, "", ""},
		{"llama3-70b", "tpu7x-8", "", "fp8", FP8, "fp8 weights: vllm serve needs a fp8 checkpoint", ""},
	} {
		o := DefaultOptions()
		o.Model, o.TPU, o.HFModel, o.Weights, o.NumRequests = c.model, c.tpu, c.hf, c.weights, 10
		q, err := ParseOptions(o)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Search(q.Request)
		if err != nil {
			t.Fatalf("%s on %s, weights %q: %v", c.model, c.tpu, c.weights, err)
		}
		name := c.model + " " + c.hf + " weights " + c.weights
		if q.Request.Weights != c.want {
			t.Errorf("%s: weights %s, want %s", name, q.Request.Weights, c.want)
		}
		warnings, reasons := strings.Join(p.Warnings, "\n"), strings.Join(p.Reasons, "\n")
		if got := strings.Contains(warnings, " weights: "); got != (c.warn != "") || !strings.Contains(warnings, c.warn) {
			t.Errorf("%s: warnings %q, want %q", name, warnings, c.warn)
		}
		if got := strings.Contains(reasons, "the checkpoint's own"); got != (c.reason != "") || !strings.Contains(reasons, c.reason) {
			t.Errorf("%s: reasons %q, want %q", name, reasons, c.reason)
		}
	}
}
