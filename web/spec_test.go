package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// tinySpec is a valid spec that names itself (review 2, item 1).
const tinySpec = "name: tiny\nlayers: 2\nd_model: 256\nheads: 4\nkv_heads: 4\nhead_dim: 64\nd_ff: 1024\nvocab: 1000\nseq_len: 512\ngated_mlp: true\ntied_embeddings: false\n"

// specEndpoints are the addresses that take the model, each with the
// rest of its query and what its answer says only when it planned
// tinySpec ("" for the charts fragment, which names no model: it must be
// what model=spec gives).
var specEndpoints = []struct{ path, rest, want string }{
	{"/", "tpu=v5p-8", "<title>shardlab: tiny on v5p-8</title>"},
	{"/charts", "tpu=v5p-8", ""},
	{"/download/plan.json", "tpu=v5p-8", `"model": "tiny"`},
	{"/download/maxtext.yaml", "tpu=v5p-8", "run_name=shardlab-tiny"},
	{"/download/xpk.sh", "tpu=v5p-8", "# shardlab plan: tiny on v5p-8"},
	{"/serving", servingRest, "vllm serve me/tiny"},
	{"/download/serving.json", servingRest, `"model": "tiny"`},
	{"/budget", budgetRest, "<title>shardlab budget: tiny</title>"},
	{"/download/budget.json", budgetRest, `"model": "tiny"`},
}

// The serving and budget questions of specEndpoints besides the model.
const (
	servingRest = "tpu=v6e-8&hf_model=me/tiny&max_model_len=512&prompt_len=256&output_len=128"
	budgetRest  = "tokens=100B&generations=v6e&modes=on-demand&slice_chips=16&slices=1,2"
)

// TestModelSpecOnEveryEndpoint: every address that takes the model
// follows one rule for model and model_spec: a spec given is planned
// (named by its own name, else by model, else "custom"), and a spec
// beside a catalog model, or a model that is neither a catalog model nor
// named with a spec, is a 400 naming both keys. The spec was read only
// with the undocumented model=spec: without it, or beside a catalog
// model, the answer was the default's or that model's, with a 200
// (review 2, item 1).
func TestModelSpecOnEveryEndpoint(t *testing.T) {
	h := New(testConfig)
	spec := "model_spec=" + url.QueryEscape(tinySpec)
	for _, e := range specEndpoints {
		for _, model := range []string{"", "model=spec&", "model=custom&"} {
			target := e.path + "?" + model + spec + "&" + e.rest
			code, body := get(t, h, target)
			ok := strings.Contains(body, e.want)
			if e.want == "" {
				_, ref := get(t, h, e.path+"?model=spec&"+spec+"&"+e.rest)
				ok = body == ref
			}
			if code != http.StatusOK || !ok {
				t.Errorf("GET %s = %d %.300s, want 200 planning the spec (%q)", target, code, body, e.want)
			}
		}
		// a spec that does not name itself is named by model; a blank spec
		// (the form's, without its script) goes with a catalog model
		if e.path == "/download/plan.json" {
			unnamed := url.QueryEscape(strings.TrimPrefix(tinySpec, "name: tiny\n"))
			if code, body := get(t, h, e.path+"?model=mine&model_spec="+unnamed+"&"+e.rest); code != http.StatusOK || !strings.Contains(body, `"model": "mine"`) {
				t.Errorf("model=mine with an unnamed spec: %d %.300s, want the spec named mine", code, body)
			}
			if code, body := get(t, h, e.path+"?model=llama3-8b&model_spec=&"+e.rest); code != http.StatusOK || !strings.Contains(body, `"model": "llama3-8b"`) {
				t.Errorf("model=llama3-8b&model_spec=: %d %.300s, want llama3-8b", code, body)
			}
		}
		for _, tc := range []struct{ query, want string }{
			{"model=llama3-70b&" + spec, `"llama3-70b"`},
			{"model=custom", `"custom"`},
			{"model=spec", `"spec"`},
		} {
			target := e.path + "?" + tc.query + "&" + e.rest
			code, body := get(t, h, target)
			text := unquote(body)
			// the JSON downloads name the keys, the rest the form's labels
			keys := []string{tc.want, "Model spec", "Model"}
			if strings.HasSuffix(e.path, ".json") {
				text, keys = errorOf(t, target, body), []string{tc.want, "model_spec", "model"}
			}
			for _, w := range keys {
				if code != http.StatusBadRequest || !strings.Contains(text, w) {
					t.Errorf("GET %s = %d %.400s, want 400 naming %s", target, code, text, w)
				}
			}
		}
	}
}

// TestAPIModelSpecRule: POST /api/plan follows the same rule.
func TestAPIModelSpecRule(t *testing.T) {
	h := New(testConfig)
	spec := strings.ReplaceAll(tinySpec, "\n", `\n`)
	for _, body := range []string{`{"model": "llama3-70b", "model_spec": "` + spec + `"}`, `{"model": "custom"}`, `{"model": "spec"}`} {
		code, answer := post(t, h, body)
		if code != http.StatusBadRequest || !strings.Contains(answer, `model_spec`) {
			t.Errorf("POST %s = %d %.300s, want 400 naming model and model_spec", body, code, answer)
		}
	}
	for _, body := range []string{`{"model": "spec", "model_spec": "` + spec + `", "tpu": "v5p-8"}`, `{"model_spec": "` + spec + `", "tpu": "v5p-8"}`} {
		if code, answer := post(t, h, body); code != http.StatusOK || !strings.Contains(answer, `"model": "tiny"`) {
			t.Errorf("POST %s = %d %.300s, want 200 planning the spec", body, code, answer)
		}
	}
}

// unquote is a page's text with its entities for quotes and plus signs
// undone.
func unquote(body string) string {
	return strings.NewReplacer("&#34;", `"`, "&#43;", "+").Replace(body)
}
