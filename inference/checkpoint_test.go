package inference

import (
	"strings"
	"testing"
)

// TestCheckpointWeights: the weights default to the format the catalog
// records for the model's checkpoint, and only weights other than it are
// warned of. DeepSeek-V3's released checkpoints are fp8
// (README_WEIGHTS.md: config.json's quantization_config), so its plan
// costed bf16 by default and, given fp8, warned that the command loads
// no fp8 checkpoint (review 3, #9). Another repository or a local copy
// (hf_model) keeps the catalog's format, with a warning that it is taken
// from the catalog: a copy of DeepSeek-V3 was costed bf16 with no
// warning (review of dcd4fab, #2). Llama 3's checkpoints are bf16; a
// model the catalog names no repository for is taken as bf16, warned.
func TestCheckpointWeights(t *testing.T) {
	const fromCatalog = "the checkpoint's format is taken from the catalog, fp8 as deepseek-ai/DeepSeek-V3-Base stores its weights (deepseek-ai/DeepSeek-V3 README_WEIGHTS.md"
	for _, c := range []struct {
		model, tpu, hf, weights string
		want                    Dtype
		warn, reason, ckpt      string // "" none
	}{
		{"deepseek3-671b", "tpu7x-16", "", "", FP8, "", "fp8 weights: the checkpoint's own (deepseek-ai/DeepSeek-V3 README_WEIGHTS.md", ""},
		{"deepseek3-671b", "tpu7x-16", "", "fp8", FP8, "", "the checkpoint's own", ""},
		{"deepseek3-671b", "tpu7x-16", "deepseek-ai/DeepSeek-V3-Base", "", FP8, "", "the checkpoint's own", ""},
		{"deepseek3-671b", "tpu7x-32", "", "bf16", BF16, "bf16 weights: the checkpoint stores fp8 (deepseek-ai/DeepSeek-V3 README_WEIGHTS.md", "", ""},
		{"deepseek3-671b", "tpu7x-16", "/models/DeepSeek-V3", "", FP8, "", "the checkpoint's own", "checkpoint: /models/DeepSeek-V3 is not deepseek3-671b's own repository deepseek-ai/DeepSeek-V3-Base, and shardlab does not read its config.json: " + fromCatalog},
		{"deepseek3-671b", "tpu7x-32", "someone/deepseek-v3-bf16", "bf16", BF16, "bf16 weights: the checkpoint stores fp8", "", "checkpoint: someone/deepseek-v3-bf16 is not deepseek3-671b's own repository"},
		{"llama3-70b", "tpu7x-8", "", "", BF16, "", "", ""},
		{"llama3-70b", "tpu7x-8", "/models/llama", "", BF16, "", "", "checkpoint: /models/llama is not llama3-70b's own repository meta-llama/Meta-Llama-3-70B, and shardlab does not read its config.json: the checkpoint's format is taken from the catalog, bf16"},
		{"llama3-70b", "tpu7x-8", "", "fp8", FP8, "fp8 weights: vllm serve needs a fp8 checkpoint", "", ""},
		{"gpt3-175b", "tpu7x-16", "/models/gpt3", "", BF16, "", "", "checkpoint: the catalog records no checkpoint of gpt3-175b, and shardlab does not read /models/gpt3's config.json: its weights are taken to be stored in bf16"},
	} {
		o := DefaultOptions()
		o.Model, o.TPU, o.HFModel, o.Weights, o.NumRequests = c.model, c.tpu, c.hf, c.weights, 10
		if c.model == "gpt3-175b" {
			o.MaxModelLen = 2048
		}
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
		if got := strings.Contains(warnings, "checkpoint: "); got != (c.ckpt != "") || !strings.Contains(warnings, c.ckpt) {
			t.Errorf("%s: warnings %q, want the checkpoint's %q", name, warnings, c.ckpt)
		}
		if got := strings.Contains(reasons, "the checkpoint's own"); got != (c.reason != "") || !strings.Contains(reasons, c.reason) {
			t.Errorf("%s: reasons %q, want %q", name, reasons, c.reason)
		}
	}
}
