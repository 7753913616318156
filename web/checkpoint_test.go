package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"shardlab/export"
)

// TestServingCheckpointDtype: the serving page and its JSON take
// checkpoint_dtype, the format the hf_model checkpoint stores (review 119
// #4): the checkpoint warning names it as the front end does (the
// download as shardlab inference --json, by its flag; the page by its
// label), and with it a fp8 copy of Llama 3 8B served fp8 and a bf16
// copy of DeepSeek-V3 served bf16 draw no warning about their weights; a
// case variant of the catalog's repository is the catalog's (review 119
// #13); a format not accepted is refused naming the option.
func TestServingCheckpointDtype(t *testing.T) {
	h := New(testConfig)
	const llama = "model=llama3-8b&tpu=v6e-8&num_requests=10&hf_model=/data/llama3-8b-fp8&weights=fp8"
	const dsv3 = "model=deepseek3-671b&tpu=tpu7x-32&num_requests=10&hf_model=/data/dsv3-bf16&weights=bf16"
	for _, c := range []struct {
		q           string
		want, never []string
	}{
		{llama, []string{"if /data/llama3-8b-fp8 stores another format, set --checkpoint-dtype to it", "fp8 weights: vllm serve needs a fp8 checkpoint"}, nil},
		{llama + "&checkpoint_dtype=fp8", []string{"fp8 weights: the checkpoint's own (as --checkpoint-dtype gives it)"}, []string{"checkpoint: ", "fp8 weights: vllm serve"}},
		{dsv3, []string{"set --checkpoint-dtype to it", "bf16 weights: the checkpoint stores fp8"}, nil},
		{dsv3 + "&checkpoint_dtype=bf16", nil, []string{"checkpoint: ", "the checkpoint stores fp8"}},
		{"model=llama3-8b&tpu=v6e-8&num_requests=10&hf_model=META-LLAMA/meta-llama-3-8b", nil, []string{"checkpoint: "}},
	} {
		code, body := get(t, h, "/download/serving.json?"+c.q)
		var j export.ServingJSON
		if err := json.Unmarshal([]byte(body), &j); code != http.StatusOK || err != nil {
			t.Errorf("GET serving.json?%s = %d, %v: %.300s", c.q, code, err, body)
			continue
		}
		notes := strings.Join(append(j.Reasons, j.Warnings...), "\n")
		for _, w := range c.want {
			if !strings.Contains(notes, w) {
				t.Errorf("serving.json?%s: notes %q lack %q", c.q, notes, w)
			}
		}
		for _, w := range c.never {
			if strings.Contains(notes, w) {
				t.Errorf("serving.json?%s: notes %q have %q", c.q, notes, w)
			}
		}
	}
	if code, body := get(t, h, "/serving?"+llama); code != http.StatusOK || !strings.Contains(body, "set Checkpoint format to it") || strings.Contains(body, "--checkpoint-dtype") {
		t.Errorf("GET /serving?%s = %d, want the warning naming the field by its label, Checkpoint format", llama, code)
	}
	target := "/download/serving.json?" + llama + "&checkpoint_dtype=fp4"
	code, body := get(t, h, target)
	var e struct{ Option string }
	json.Unmarshal([]byte(body), &e)
	if msg := errorOf(t, target, body); code != http.StatusBadRequest || e.Option != "checkpoint_dtype" || !strings.Contains(msg, `checkpoint_dtype "fp4", want bf16, fp8 or int8, the format the checkpoint vllm serve loads (hf_model)`) {
		t.Errorf("GET %s = %d, option %q, %q; want 400 naming checkpoint_dtype, fp4 and what is accepted", target, code, e.Option, msg)
	}
	code, body = get(t, h, "/serving?"+llama+"&checkpoint_dtype=fp4")
	if code != http.StatusBadRequest || !strings.Contains(body, `id="error-checkpoint_dtype"`) || !strings.Contains(body, "(Hugging Face model)") {
		t.Errorf("GET /serving with checkpoint_dtype=fp4 = %d, want 400 with the field flagged, naming the Hugging Face model by its label:\n%.300s", code, body)
	}
}
