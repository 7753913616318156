package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"shardlab/schema"
)

// decodeStrict runs shardlab with args and decodes its stdout into v,
// refusing keys v does not name, and checks that it carries the schema.
func decodeStrict(t *testing.T, v any, args ...string) {
	t.Helper()
	out, errOut, code := runCmd(args...)
	if code != 0 || errOut != "" {
		t.Fatalf("shardlab %s: exit %d, stderr %q, want 0 and nothing", strings.Join(args, " "), code, errOut)
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal([]byte(out), &head); err != nil || head.Schema != schema.Version {
		t.Fatalf("shardlab %s: schema %q (%v), want %q", strings.Join(args, " "), head.Schema, err, schema.Version)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(out)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("shardlab %s: %v", strings.Join(args, " "), err)
	}
}

// fitConstant is one constant of validate --fit --json, by the keys the
// README names.
type fitConstant struct {
	Constant     string   `json:"constant"`
	Value        *float64 `json:"value"`
	ValueS       *float64 `json:"value_s"`
	Fitted       bool     `json:"fitted"`
	FittedRuns   []string `json:"fitted_runs"`
	FittedError  *float64 `json:"fitted_median_abs_error"`
	HeldOutRuns  []string `json:"held_out_runs"`
	HeldOutError *float64 `json:"held_out_median_abs_error"`
}

// columns splits a line of a tabwriter table padded by two spaces or more.
var columns = regexp.MustCompile(`  +`)

// TestValidateFitJSONMatchesText: validate --fit --json holds the numbers
// the text prints, constant by constant: the value (rounded as the text
// rounds it; a time parsed back to seconds), the runs each was fitted on
// and held out from, and the errors (absent where the text prints -).
func TestValidateFitJSONMatchesText(t *testing.T) {
	var doc struct {
		Schema    string        `json:"schema"`
		Constants []fitConstant `json:"constants"`
	}
	decodeStrict(t, &doc, "validate", "--fit", "--json")
	text, errOut, code := runCmd("validate", "--fit")
	if code != 0 {
		t.Fatalf("validate --fit: exit %d: %s", code, errOut)
	}
	table, lists, _ := strings.Cut(text[strings.Index(text, "constant "):], "\n\n")
	lines := strings.Split(table, "\n")[1:]
	if len(lines) != len(doc.Constants) {
		t.Fatalf("text has %d constants, JSON %d", len(lines), len(doc.Constants))
	}
	for i, line := range lines {
		c, cols := doc.Constants[i], columns.Split(line, -1)
		if len(cols) != 6 || cols[0] != c.Constant {
			t.Errorf("text row %q, JSON constant %q", line, c.Constant)
			continue
		}
		checkFitValue(t, c, cols[1])
		for _, x := range []struct {
			rows, err string
			runs      []string
			got       *float64
		}{{cols[2], cols[3], c.FittedRuns, c.FittedError}, {cols[4], cols[5], c.HeldOutRuns, c.HeldOutError}} {
			if n := fmt.Sprintf("%d row", len(x.runs)); !strings.HasPrefix(x.rows, n) {
				t.Errorf("%s: text %q, JSON %d runs", c.Constant, x.rows, len(x.runs))
			}
			if js := pctOrDash(x.got); js != x.err {
				t.Errorf("%s: text error %q, JSON %s", c.Constant, x.err, js)
			}
		}
		if len(c.FittedRuns)+len(c.HeldOutRuns) > 0 {
			want := fmt.Sprintf("\n%s\n  fitted on: %s\n  held out:  %s\n", c.Constant, joinOrNone(c.FittedRuns), joinOrNone(c.HeldOutRuns))
			if !strings.Contains("\n"+lists, want) {
				t.Errorf("%s: text lacks the JSON's runs %q", c.Constant, want)
			}
		}
	}
}

// checkFitValue holds a constant's JSON value to the text's: one of value
// and value_s, fitted unless the text says not.
func checkFitValue(t *testing.T, c fitConstant, text string) {
	t.Helper()
	num, note, _ := strings.Cut(text, " (")
	if got := !strings.HasPrefix(note, "not fitted"); got != c.Fitted {
		t.Errorf("%s: text %q, JSON fitted %v", c.Constant, text, c.Fitted)
	}
	switch {
	case (c.Value == nil) == (c.ValueS == nil):
		t.Errorf("%s: JSON value %v and value_s %v, want one", c.Constant, c.Value, c.ValueS)
	case c.ValueS != nil:
		d, err := time.ParseDuration(num)
		if err != nil || d.Seconds() != *c.ValueS {
			t.Errorf("%s: text %q (%v), JSON value_s %g", c.Constant, num, err, *c.ValueS)
		}
	default:
		_, frac, _ := strings.Cut(num, ".")
		if js := fmt.Sprintf("%.*f", len(frac), *c.Value); js != num {
			t.Errorf("%s: text %q, JSON value %g (%s)", c.Constant, num, *c.Value, js)
		}
	}
}

func pctOrDash(x *float64) string {
	if x == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100**x)
}

func joinOrNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// stepParts are the keys of validate --breakdown --json's step_time (the
// keys plan --json's step_time has), the text's part columns first, in
// its order.
var stepParts = []string{"matmuls_s", "attention_s", "memory_bound_s", "optimizer_s", "host_offload_exposed_s", "ici_exposed_s",
	"dcn_exposed_s", "slice_sync_s", "bubble_s", "compute_s", "ici_contention_s", "total_s"}

// TestValidateBreakdownJSONMatchesText: validate --breakdown --json holds
// the numbers the text prints, run by run: the step time, each part's
// share of it, the MXU efficiency and the global batch; step_time has
// the keys plan --json's has.
func TestValidateBreakdownJSONMatchesText(t *testing.T) {
	var doc struct {
		Schema string `json:"schema"`
		Rows   []struct {
			ID          string             `json:"id"`
			Step        map[string]float64 `json:"step_time"`
			MXU         float64            `json:"mxu_efficiency_fraction"`
			GlobalBatch int                `json:"global_batch_sequences"`
		} `json:"rows"`
	}
	decodeStrict(t, &doc, "validate", "--breakdown", "--json")
	plan := decodeJSON(t, "plan", "--model", "llama3-8b", "--tpu", "v6e-8", "--json", "--top", "1").(map[string]any)
	planKeys := slices.Sorted(maps.Keys(plan["step_time"].(map[string]any)))
	text, errOut, code := runCmd("validate", "--breakdown")
	if code != 0 {
		t.Fatalf("validate --breakdown: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")[1:]
	if len(lines) != len(doc.Rows) || len(lines) == 0 {
		t.Fatalf("text has %d runs, JSON %d", len(lines), len(doc.Rows))
	}
	for i, line := range lines {
		r, f := doc.Rows[i], strings.Fields(line)
		keys := slices.Sorted(maps.Keys(r.Step))
		if !slices.Equal(keys, slices.Sorted(slices.Values(stepParts))) || !slices.Equal(keys, planKeys) {
			t.Errorf("%s: step_time keys %v, want %v, those of plan --json", r.ID, keys, stepParts)
		}
		step := r.Step["total_s"]
		want := []string{r.ID, fmt.Sprintf("%.3f", step)}
		for _, k := range stepParts[:9] {
			want = append(want, fmt.Sprintf("%.1f%%", 100*r.Step[k]/step))
		}
		want = append(want, fmt.Sprintf("%.3f", r.MXU), fmt.Sprint(r.GlobalBatch))
		if !slices.Equal(f, want) {
			t.Errorf("text row %q, JSON gives %q", f, want)
		}
	}
}
