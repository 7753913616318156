package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestModelSpecRoundTrip: 'model show NAME --spec' writes a file that
// --model takes, describing the same model: plan on the file and on the
// catalog name print the same plan but for the name; --spec with --json,
// or with list, is refused.
func TestModelSpecRoundTrip(t *testing.T) {
	spec, errOut, code := runCmd("model", "show", "mixtral-8x7b", "--spec")
	if code != 0 {
		t.Fatalf("model show --spec: exit %d %s", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "mixtral-8x7b.yaml")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile, errOut, code := runCmd("model", "show", file, "--json")
	fromName, _, _ := runCmd("model", "show", "mixtral-8x7b", "--json")
	if code != 0 || fromFile != fromName {
		t.Errorf("model show %s --json: exit %d %s; differs from the catalog's: %v", file, code, errOut, fromFile != fromName)
	}
	fail(t, []string{"model", "show", "llama3-8b", "--spec", "--json"}, "--spec and --json")
	fail(t, []string{"model", "list", "--spec"}, "model list: --spec prints one model")
}

// TestModelListMarksWhatPlanRefuses: model list marks exactly the catalog
// models `plan` refuses (exit 2), each with plan's reason: its text's train
// column says no and the reason follows the table, its JSON has
// plan_refuses (review 163: gemma4-31b, gemma4-26b-a4b and
// qwen3.5-397b-a17b had no mark, and plan refused all three).
func TestModelListMarksWhatPlanRefuses(t *testing.T) {
	text, _, _ := runCmd("model", "list")
	doc, _ := decodeJSON(t, "model", "list", "--json").(map[string]any)
	models, _ := doc["models"].([]any)
	refused := 0
	for _, m := range models {
		m := m.(map[string]any)
		name := m["name"].(string)
		_, errOut, code := runCmd("plan", "--model", name, "--tpu", "v5p-8", "--global-batch", "1")
		why, marked := m["plan_refuses"].(string)
		if refuses := code == 2 && strings.Contains(errOut, "--model "+name+":"); refuses != marked {
			t.Errorf("%s: plan exit %d %q; model list --json plan_refuses %q", name, code, errOut, why)
			continue
		}
		if !marked {
			continue
		}
		refused++
		if !strings.Contains(errOut, why) || !strings.Contains(text, "  "+name+": "+why+"\n") || !regexp.MustCompile(`(?m)^\s*`+regexp.QuoteMeta(name)+`\s.*\sno\s*$`).MatchString(text) {
			t.Errorf("%s: plan says %q; model list gives %q, and its text:\n%s", name, errOut, why, text)
		}
	}
	if refused != 3 {
		t.Errorf("%d catalog models marked as refused, want the 3 review 163 names", refused)
	}
}
