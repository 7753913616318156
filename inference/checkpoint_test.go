package inference

import (
	"errors"
	"slices"
	"strconv"
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

// TestCheckpointDtype: checkpoint_dtype states the format the checkpoint
// vllm serve loads stores its weights in, which shardlab cannot read
// (review 119 #4). The checkpoint warning for another repository named
// "weights", the serving precision, and giving it drew a second,
// contradictory warning: a fp8 copy of Llama 3 8B served fp8 was told
// "vllm serve needs a fp8 checkpoint", and a bf16 copy of DeepSeek-V3
// (DeepSeek's fp8_cast_bf16.py makes one) served bf16 "the checkpoint
// stores fp8". Declared, the format sets the weights' default and the
// weights warnings; a case variant of the model's own repository is it
// (the Hub's ids are case-insensitive: review 119 #13).
func TestCheckpointDtype(t *testing.T) {
	const given = "(as {checkpoint_dtype} gives it)"
	for _, c := range []struct {
		model, tpu, hf, ckpt, weights string
		want                          Dtype
		warn, reason, ckptWarn        string // "" none
	}{
		// the review's cases, without the format and with it
		{"llama3-8b", "v6e-8", "/data/llama3-8b-fp8", "", "fp8", FP8, "fp8 weights: vllm serve needs a fp8 checkpoint", "", "if /data/llama3-8b-fp8 stores another format, set {checkpoint_dtype} to it"},
		{"llama3-8b", "v6e-8", "/data/llama3-8b-fp8", "fp8", "fp8", FP8, "", "fp8 weights: the checkpoint's own " + given, ""},
		{"llama3-8b", "v6e-8", "/data/llama3-8b-fp8", "FP8", "", FP8, "", "the checkpoint's own " + given, ""},
		{"deepseek3-671b", "tpu7x-32", "/data/dsv3-bf16", "", "bf16", BF16, "bf16 weights: the checkpoint stores fp8 (deepseek-ai", "", "set {checkpoint_dtype} to it"},
		{"deepseek3-671b", "tpu7x-32", "/data/dsv3-bf16", "bf16", "bf16", BF16, "", "", ""},
		{"deepseek3-671b", "tpu7x-32", "/data/dsv3-bf16", "bf16", "", BF16, "", "", ""},
		// a declared fp8 checkpoint served bf16 cites the declaration, not the catalog
		{"deepseek3-671b", "tpu7x-32", "/data/dsv3", "fp8", "bf16", BF16, "bf16 weights: the checkpoint stores fp8 " + given, "", ""},
		{"gpt3-175b", "tpu7x-16", "/models/gpt3-int8", "int8", "", Int8, "", "int8 weights: the checkpoint's own " + given, ""},
		// the model's own repository: as the catalog records it, or warned
		{"deepseek3-671b", "tpu7x-16", "", "fp8", "", FP8, "", "the checkpoint's own " + given, ""},
		{"deepseek3-671b", "tpu7x-32", "", "bf16", "", BF16, "", "", "checkpoint: {checkpoint_dtype} is bf16, but the catalog records fp8 for deepseek3-671b's own repository deepseek-ai/DeepSeek-V3-Base (deepseek-ai/DeepSeek-V3 README_WEIGHTS.md"},
		{"llama3-8b", "v6e-8", "", "bf16", "", BF16, "", "", ""},
		{"llama3-8b", "v6e-8", "META-LLAMA/meta-llama-3-8b", "", "", BF16, "", "", ""},
		{"deepseek3-671b", "tpu7x-16", "DEEPSEEK-AI/deepseek-v3-base", "", "", FP8, "", "the checkpoint's own (deepseek-ai/DeepSeek-V3 README_WEIGHTS.md", ""},
	} {
		o := DefaultOptions()
		o.Model, o.TPU, o.HFModel, o.CheckpointDtype, o.Weights, o.NumRequests = c.model, c.tpu, c.hf, c.ckpt, c.weights, 10
		if c.model == "gpt3-175b" {
			o.MaxModelLen = 2048
		}
		name := c.model + " " + c.hf + " checkpoint " + c.ckpt + " weights " + c.weights
		q, err := ParseOptions(o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p, err := Search(q.Request)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if q.Request.Weights != c.want {
			t.Errorf("%s: weights %s, want %s", name, q.Request.Weights, c.want)
		}
		warnings, reasons := strings.Join(p.Warnings, "\n"), strings.Join(p.Reasons, "\n")
		if got := strings.Contains(warnings, " weights: "); got != (c.warn != "") || !strings.Contains(warnings, c.warn) {
			t.Errorf("%s: warnings %q, want %q", name, warnings, c.warn)
		}
		if got := strings.Contains(warnings, "checkpoint: "); got != (c.ckptWarn != "") || !strings.Contains(warnings, c.ckptWarn) {
			t.Errorf("%s: warnings %q, want the checkpoint's %q", name, warnings, c.ckptWarn)
		}
		if got := strings.Contains(reasons, "the checkpoint's own"); got != (c.reason != "") || !strings.Contains(reasons, c.reason) {
			t.Errorf("%s: reasons %q, want %q", name, reasons, c.reason)
		}
	}
}

// TestCheckpointDtypeRefused: a format other than bf16, fp8 and int8 is
// a FieldError naming checkpoint_dtype, the value and what is accepted.
func TestCheckpointDtypeRefused(t *testing.T) {
	for _, v := range []string{"fp4", " ", "bfloat16"} {
		o := DefaultOptions()
		o.CheckpointDtype = v
		_, err := ParseOptions(o)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "checkpoint_dtype" || fe.Value != strconv.Quote(v) || !strings.HasPrefix(fe.Want, "bf16, fp8 or int8") {
			t.Errorf("checkpoint_dtype %q: %v, want a FieldError naming checkpoint_dtype %q and bf16, fp8 or int8", v, err, v)
		}
		if msg := fe.Phrase(func(f string) string { return "<" + f + ">" }); err != nil && !strings.Contains(msg, "the checkpoint vllm serve loads (<hf_model>)") {
			t.Errorf("checkpoint_dtype %q: %q, want hf_model spelt by the front end's words", v, msg)
		}
	}
}

// TestPlanPhrase: Phrase spells the options a plan's notes name, by the
// front end's words, keeps the braces of a path given as hf_model, and
// a plan spelt once is spelt no further.
func TestPlanPhrase(t *testing.T) {
	o := DefaultOptions()
	o.Model, o.TPU, o.HFModel, o.NumRequests = "llama3-8b", "v6e-8", "/data/{weights}/{{x}", 10
	q, err := ParseOptions(o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Search(q.Request)
	if err != nil {
		t.Fatal(err)
	}
	flag := func(f string) string { return "--" + strings.ReplaceAll(f, "_", "-") }
	spelt := p.Phrase(flag)
	const want = "if /data/{weights}/{{x} stores another format, set --checkpoint-dtype to it"
	if got := strings.Join(spelt.Warnings, "\n"); !strings.Contains(got, want) {
		t.Errorf("Phrase(flags): warnings %q, want %q", got, want)
	}
	if again := spelt.Phrase(nil); !slices.Equal(again.Warnings, spelt.Warnings) || !slices.Equal(again.Reasons, spelt.Reasons) {
		t.Errorf("a spelt plan spelt again: %q, want %q", again.Warnings, spelt.Warnings)
	}
	var b strings.Builder
	if err := p.WriteText(&b, "vllm serve m"); err != nil || !strings.Contains(b.String(), "set checkpoint_dtype to it") {
		t.Errorf("WriteText of an unspelt plan: %v, want checkpoint_dtype spelt by its key:\n%s", err, b.String())
	}
	// Phrase spells only the keys of Options' fields: {not_an_option}
	// names none and stays as it is.
	odd := Plan{Reasons: []string{"{tpu} beside {not_an_option}"}}.Phrase(flag)
	if want := "--tpu beside {not_an_option}"; odd.Reasons[0] != want {
		t.Errorf("Phrase(flags) of %q = %q, want %q", "{tpu} beside {not_an_option}", odd.Reasons[0], want)
	}
}
