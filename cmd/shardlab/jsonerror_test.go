package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"shardlab/inference"
	"shardlab/schema"
)

// TestJSONErrorDocument: with --json, a job that cannot run (exit 1)
// printed its error as text on stderr only, and nothing on stdout (plan)
// or a table without the error (budget). Now stdout has one document
// whose first key is the schema, then error (the line stderr has) and
// fixes (plan.NoPlanError's, spelt as flags, each in the line); a usage
// error stays text (fail checks stdout is empty).
func TestJSONErrorDocument(t *testing.T) {
	for _, c := range []struct {
		args  []string
		fixes []string // each fix's start
		more  string   // a key of the command's own document
	}{
		{[]string{"plan", "--model", "llama3-70b", "--tpu", "v6e-32", "--seq", "8192", "--max-global-batch", "524288tok", "--json"},
			[]string{"--precision bf16: ", "--optimizer-offload: ", "--precision bf16 --remat minimal_offloaded: "}, ""},
		{[]string{"budget", "--model", "llama3-405b", "--tokens", "100B", "--generations", "v5e", "--slice-chips", "4", "--slices", "1", "--json"},
			nil, "rows"},
		// the weights do not fit: the formats and slices that fit, as flags
		// (tpu7x-16 at TP 16, its 8 KV heads replicated ×2: review 128 #1)
		{[]string{"inference", "--model", "llama3-405b", "--tpu", "tpu7x-8", "--concurrency", "1", "--json"},
			[]string{"--weights fp8 (TP 8", "--weights int8 (TP 8", "--tpu tpu7x-16 (TP 16"}, ""},
		{[]string{"inference", "--model", "llama3-8b", "--tpu", "v5litepod-1", "--max-model-len", "8192", "--concurrency", "1", "--json"},
			[]string{"--weights fp8 (TP 1", "--weights int8 (TP 1", "--tpu v5litepod-4 (TP "}, ""},
	} {
		out, errOut, code := runCmd(c.args...)
		name := strings.Join(c.args, " ")
		var doc map[string]any
		if err := json.Unmarshal([]byte(out), &doc); code != 1 || err != nil {
			t.Fatalf("shardlab %s: exit %d (want 1), %v\nstdout %.300s\nstderr %s", name, code, err, out, errOut)
		}
		if want := fmt.Sprintf("{\n  %q: %q,\n  \"error\": ", schema.Key, schema.Version); !strings.HasPrefix(out, want) {
			t.Errorf("shardlab %s: stdout starts %.80q, want %q", name, out, want)
		}
		line := strings.TrimPrefix(strings.TrimSuffix(errOut, "\n"), "shardlab: ")
		if doc["error"] != line {
			t.Errorf("shardlab %s: error %q, want stderr's line %q", name, doc["error"], line)
		}
		fixes, _ := doc["fixes"].([]any)
		if len(fixes) != len(c.fixes) || doc["fixes"] == nil {
			t.Fatalf("shardlab %s: fixes %v, want %d starting %q", name, doc["fixes"], len(c.fixes), c.fixes)
		}
		for i, f := range fixes {
			if s, _ := f.(string); !strings.HasPrefix(s, c.fixes[i]) || !strings.Contains(line, s) {
				t.Errorf("shardlab %s: fixes[%d] = %q, want it to start %q and to be in the error line", name, i, s, c.fixes[i])
			}
		}
		if _, ok := doc[c.more]; c.more != "" && !ok {
			t.Errorf("shardlab %s: no %s beside the error", name, c.more)
		}
	}
	fail(t, []string{"plan", "--json", "--model", "llama3-8b", "--tpu", "v5p-8", "--mesh", "pipeline=3"}, "--mesh")
}

// TestBudgetShowEmptyTable: --show on a table without a row said "want 1
// to 0"; it says the table is empty and why, exit 1 as the table itself,
// and with --json writes that error as a document.
func TestBudgetShowEmptyTable(t *testing.T) {
	args := []string{"budget", "--model", "llama3-405b", "--tokens", "100B", "--generations", "v5e", "--slice-chips", "4", "--slices", "1", "--show", "1"}
	out, errOut, code := runCmd(args...)
	want := "shardlab: budget: --show 1: the table is empty, so it has no row to show: no configuration is both priced and able to run the job"
	if code != 1 || out != "" || !strings.HasPrefix(errOut, want) || strings.Contains(errOut, "want 1 to 0") {
		t.Errorf("shardlab %s: exit %d, stdout %q, stderr %q; want exit 1 and %q", strings.Join(args, " "), code, out, errOut, want)
	}
	out, _, code = runCmd(append(args, "--json")...)
	var doc struct{ Error string }
	if err := json.Unmarshal([]byte(out), &doc); code != 1 || err != nil || !strings.HasPrefix("shardlab: "+doc.Error, want) {
		t.Errorf("shardlab %s --json: exit %d, %v, error %q; want exit 1 and the error as a document", strings.Join(args, " "), code, err, doc.Error)
	}
}

// TestInferenceJSONErrorDocument: inference --json on a request no layout
// serves wrote nothing on stdout; it writes the error document, and a
// NoFitError's fits, spelt as flags with the layout each gets, are its
// fixes, as the error line says them.
func TestInferenceJSONErrorDocument(t *testing.T) {
	args := []string{"inference", "--model", "llama3-405b", "--tpu", "v6e-8", "--json"}
	out, errOut, code := runCmd(args...)
	var doc errorJSON
	if err := json.Unmarshal([]byte(out), &doc); code != 1 || err != nil || doc.Fixes == nil {
		t.Fatalf("shardlab %s: exit %d (want 1), %v, fixes %v\nstdout %.300s\nstderr %s", strings.Join(args, " "), code, err, doc.Fixes, out, errOut)
	}
	if line := strings.TrimPrefix(strings.TrimSuffix(errOut, "\n"), "shardlab: "); doc.Error != line {
		t.Errorf("error %q, want stderr's line %q", doc.Error, line)
	}
	ne := &inference.NoFitError{Why: "one sequence's pages do not fit", Fits: []inference.Fit{{Field: "max_model_len", Value: "4096", TP: 8, DP: 1}, {Field: "max_model_len", Value: "2048", TP: 4, DP: 2}}}
	err := inferenceError(ne)
	got := errorDoc(err)
	want := []string{"--max-model-len 4096 (TP 8 × DP 1)", "--max-model-len 2048 (TP 4 × DP 2)"}
	if fmt.Sprint(got.Fixes) != fmt.Sprint(want) {
		t.Errorf("fixes %q, want %q", got.Fixes, want)
	}
	for _, f := range got.Fixes {
		if !strings.Contains(got.Error, f) {
			t.Errorf("fix %q is not in the error line %q", f, got.Error)
		}
	}
}
