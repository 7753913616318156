package main

import (
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// snakeKey is the one form of a JSON key: snake_case ASCII. Units go in the
// name (_bytes, _s, _fraction, _per_s), so no key needs another form.
var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// jsonCommands is every command that prints JSON (export prints YAML only),
// in the forms whose output differs in shape.
var jsonCommands = [][]string{
	{"plan", "--json"}, // no model or TPU: an array of the two defaults
	{"plan", "--model", "llama3-70b", "--tpu", "tpu7x-128", "--slices", "2", "--json", "--top", "3"},
	{"plan", "--model", "llama3-8b", "--tpu", "tpu7x-8", "--example-cost", "2ms", "--json", "--top", "1"},
	{"plan", "--model", "llama2-13b", "--tpu", "v5p-256", "--mesh", "fsdp=32,tensor=4", "--global-batch", "1Mitok", "--json"},
	{"mxu", "--m", "64", "--k", "100", "--n", "48", "--array", "16x16", "--dataflow", "os", "--json"},
	{"mxu", "compare", "--json"},
	{"infeed", "--steps", "5", "--json"},
	{"infeed", "--tpu", "v4", "--steps", "5", "--json"}, // unpublished vCPUs: the assumed list
	{"run", "--synthetic", "--steps", "2", "--seq", "16", "--d-model", "32", "--d-ff", "64", "--batch", "8", "--json"},
	{"run", "--synthetic", "--steps", "1", "--seq", "16", "--d-model", "32", "--d-ff", "64", "--batch", "8",
		"--tpu", "v5litepod-4", "--slices", "1", "--mesh", "pipeline=2,data=2", "--json"},
	{"capacity", "--model", "llama3-8b", "--tpu", "tpu7x-256", "--slices", "8", "--days", "30", "--json"},
	{"capacity", "--mode", "managed", "--days", "100", "--json"},
	{"budget", "--model", "llama3-8b", "--tokens", "100B", "--generations", "v6e", "--slice-chips", "16", "--slices", "1,2", "--budget", "9k", "--json"},
	{"budget", "--model", "llama3-8b", "--tokens", "100B", "--generations", "v6e,tpu7x", "--slice-chips", "16", "--slices", "1",
		"--price", "tpu7x=5", "--chip-watts", "350", "--json"},
	{"inference", "--model", "llama3-70b", "--tpu", "tpu7x-8", "--max-model-len", "8192", "--json"},
	{"inference", "--model", "llama3-8b", "--tpu", "v6e-8", "--request-rate", "5", "--weights", "int8", "--kv-cache-dtype", "fp8", "--json"},
	{"hw", "list", "--json"},
	{"hw", "show", "v5p", "--json"},
	{"hw", "show", "v5p-128", "--json"},
	{"model", "list", "--json"},
	{"model", "show", "llama3-8b", "--json"},
	{"plan", "--model", "llama3-70b", "--tpu", "v5p-256", "--quantization", "int8", "--json", "--top", "2"},
	{"plan", "--model", "llama3-70b", "--tpu", "tpu7x-64", "--quantization", "fp8", "--goodput", "--json", "--top", "1"},
	{"plan", "--model", "llama3-8b", "--tpu", "v5p-8", "--remat", "none", "--verify", "--json"}, // the verify steps' keys
	{"validate", "--json"},
	{"validate", "--memory", "--json"},
	{"validate", "--serving", "--json"},
	{"validate", "--fit", "--json"},
	{"validate", "--breakdown", "--json"},
	{"check", "--compile-log", "testdata/compile_memory_analysis.log", "--model", "llama3-8b", "--tpu", "v5p-8", "--json"},
}

func decodeJSON(t *testing.T, args ...string) any {
	t.Helper()
	out, errOut, code := runCmd(args...)
	if code != 0 {
		t.Fatalf("shardlab %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("shardlab %s: %v", strings.Join(args, " "), err)
	}
	return v
}

// walkKeys calls f with the path and value of every key of every object in v.
func walkKeys(v any, path string, f func(path, key string, val any)) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			f(path, k, x)
			walkKeys(x, path+"."+k, f)
		}
	case []any:
		for i, x := range v {
			walkKeys(x, path+"["+strconv.Itoa(i)+"]", f)
		}
	}
}

// TestJSONKeys runs every command's --json and checks every key, at every
// depth, against snakeKey, and that none is a bare hbm_bytes or
// memory_bytes, which said capacity in one place and use in another.
func TestJSONKeys(t *testing.T) {
	covered := map[string]bool{}
	for _, args := range jsonCommands {
		name := args[0]
		if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
			name += " " + args[1]
		}
		covered[name] = true
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			v := decodeJSON(t, args...)
			n := 0
			walkKeys(v, "", func(path, key string, _ any) {
				n++
				if !snakeKey.MatchString(key) {
					t.Errorf("shardlab %s: key %q at %s is not snake_case ASCII", strings.Join(args, " "), key, path)
				}
				if key == "hbm_bytes" || key == "memory_bytes" {
					t.Errorf("shardlab %s: %s.%s says neither capacity nor use", strings.Join(args, " "), path, key)
				}
			})
			if n == 0 {
				t.Errorf("shardlab %s: no keys", strings.Join(args, " "))
			}
		})
	}
	var missing []string
	for _, c := range []string{"plan", "mxu", "mxu compare", "infeed", "inference", "run", "budget", "hw list", "hw show", "model list", "model show"} {
		if !covered[c] {
			missing = append(missing, c)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("jsonCommands does not run %s", strings.Join(missing, ", "))
	}
}

// TestJSONHBMCapacityAndUse checks that HBM capacity and HBM use have
// separate names that agree with each other: plan --json says
// hbm_capacity_bytes (as hw does) and hbm_usable_capacity_bytes for what a
// chip has, and hbm_used_* for what the layout takes.
func TestJSONHBMCapacityAndUse(t *testing.T) {
	p := decodeJSON(t, "plan", "--model", "llama3-70b", "--tpu", "tpu7x-128", "--slices", "2", "--json", "--top", "3").(map[string]any)
	capacity, _ := p["hbm_capacity_bytes"].(float64)
	usable, _ := p["hbm_usable_capacity_bytes"].(float64)
	used, _ := p["hbm_used_per_chip"].(map[string]any)["total_bytes"].(float64)
	if !(0 < used && used <= usable && usable < capacity) {
		t.Errorf("plan: hbm_used_per_chip.total_bytes %v, hbm_usable_capacity_bytes %v, hbm_capacity_bytes %v; want 0 < used <= usable < capacity",
			used, usable, capacity)
	}
	top := p["top"].([]any)
	if got, _ := top[0].(map[string]any)["hbm_used_bytes"].(float64); got != used {
		t.Errorf("plan: top[0].hbm_used_bytes = %v, want the chosen layout's hbm_used_per_chip.total_bytes %v", got, used)
	}
	// one name, one meaning across commands: hw's capacity is plan's
	chip := decodeJSON(t, "hw", "show", "tpu7x", "--json").(map[string]any)
	if got := chip["hbm_capacity_bytes"]; got != capacity {
		t.Errorf("hw show tpu7x: hbm_capacity_bytes = %v, plan on tpu7x-128 says %v", got, capacity)
	}
}

// TestScheduleOnlyWithPipeline: plan --json names a schedule only for a
// layout with a pipeline, whose micro-batches it orders.
func TestScheduleOnlyWithPipeline(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--json", "--model", "llama3-8b", "--tpu", "v5p-8", "--mesh", "fsdp=4"}, ""},
		{[]string{"plan", "--json", "--model", "llama3-8b", "--tpu", "v5p-8", "--mesh", "fsdp=2,pipeline=2", "--schedule", "gpipe"}, "gpipe"},
	} {
		out, errOut, code := runCmd(c.args...)
		var p struct {
			Schedule *string `json:"schedule"`
		}
		if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil {
			t.Fatalf("%v: exit %d %s %v", c.args, code, errOut, err)
		}
		if got := p.Schedule; (got == nil) != (c.want == "") || got != nil && *got != c.want {
			t.Errorf("%v: schedule %v, want %q (absent when empty)", c.args, got, c.want)
		}
	}
}
