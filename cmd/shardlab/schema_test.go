package main

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"testing"

	"shardlab/hw"
	"shardlab/schema"
)

// commandName is the command and subcommand args run: plan, hw show.
func commandName(args []string) string {
	name := args[0]
	if len(args) > 1 && !strings.HasPrefix(args[1], "-") && (name == "mxu" || name == "hw" || name == "model") {
		name += " " + args[1]
	}
	return name
}

// TestJSONSchemaVersion checks that every command's --json output is one
// object whose first key is schema.Key with the value schema.Version, and
// that jsonCommands runs every command that has a --json flag.
func TestJSONSchemaVersion(t *testing.T) {
	covered := map[string]bool{}
	for _, args := range jsonCommands {
		covered[commandName(args)] = true
		covered[args[0]] = true
		out, errOut, code := runCmd(args...)
		if code != 0 {
			t.Errorf("shardlab %s: exit %d: %s", strings.Join(args, " "), code, errOut)
			continue
		}
		dec := json.NewDecoder(strings.NewReader(out))
		var toks []any
		for range 3 {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			toks = append(toks, tok)
		}
		if want := []any{json.Delim('{'), schema.Key, schema.Version}; fmt.Sprint(toks) != fmt.Sprint(want) {
			t.Errorf("shardlab %s: starts %v, want %v", strings.Join(args, " "), toks, want)
		}
		var rest any
		if err := json.Unmarshal([]byte(out), &rest); err != nil {
			t.Errorf("shardlab %s: %v", strings.Join(args, " "), err)
		}
	}
	var missing []string
	for name, flags := range commandFlags {
		if flags().Lookup("json") != nil && !covered[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("jsonCommands does not run %s, which have --json", strings.Join(missing, ", "))
	}
}

// quantityKeys is the one key of each quantity that more than one command
// prints, and the names it must not go by anywhere (the drifts issue 28
// found, and their likely spellings).
var quantityKeys = []struct {
	quantity string
	key      string
	not      []string
}{
	{"HBM a chip (or JAX device) has", "hbm_capacity_bytes", []string{"capacity_bytes", "hbm_bytes", "hbm_total_bytes"}},
	{"HBM usable after the headroom", "hbm_usable_capacity_bytes", []string{"hbm_usable_bytes", "usable_bytes", "usable_hbm_bytes"}},
	{"HBM XLA lets a JAX device hold", "xla_capacity_bytes", []string{"bytes_limit", "xla_limit_bytes", "runtime_capacity_bytes"}},
	{"HBM a layout takes", "hbm_used_bytes", []string{"memory_bytes", "hbm_use_bytes"}},
	{"whether a layout fits in HBM", "fits", []string{"fits_in_hbm", "fit"}},
	{"the accelerator type", "accelerator_type", []string{"tpu", "tpu_type", "accelerator"}},
	{"the remat policy", "remat", []string{"remat_policy"}},
	{"total parameters", "params", []string{"param_count", "parameters", "total_params", "num_params"}},
	{"active parameters", "active_params", []string{"activated_params", "active_parameters"}},
	{"MFU", "mfu_fraction", []string{"mfu"}},
	{"the peak MFU is against", "mfu_peak", []string{"peak", "mfu_peak_format"}},
	{"JAX devices per chip", "jax_devices_per_chip", []string{"devices_per_chip"}},
	{"a plan's figures at the ends of the model's error band", "prediction_band", []string{"band", "error_band", "uncertainty", "confidence_band", "step_time_band"}},
	{"the step time at the band's fast end", "low_step_time_s", []string{"step_time_low_s", "min_step_time_s", "step_low_s"}},
	{"MFU at the band's low end", "low_mfu_fraction", []string{"mfu_low_fraction", "min_mfu_fraction"}},
	{"tokens/s per chip at the band's low end", "low_tokens_per_s_per_chip", []string{"tokens_per_s_per_chip_low", "min_tokens_per_s_per_chip"}},
	{"JAX devices of a plan's chips", "devices", []string{"device_count", "jax_devices", "num_devices"}},
	{"time to train at the band's fast end", "low_time_to_train_s", []string{"time_to_train_low_s", "min_time_to_train_s"}},
	{"dollars at the band's low end", "low_usd", []string{"usd_low", "min_usd"}},
	{"a step's time", "step_time_s", []string{"step_s", "step_seconds", "step_time_seconds"}},
}

// restated are the words a key may restate its unit with: a key ending in
// _s that also says time, one ending in _bytes that also says size, a
// count that also says num or count. Two keys that differ only in such
// words name one quantity twice (budget's step_s beside plan's
// step_time_s).
var restated = map[string]map[string]bool{
	"_s":     {"time": true, "duration": true, "seconds": true, "secs": true},
	"_bytes": {"size": true, "memory": true, "mem": true},
	"":       {"num": true, "count": true},
}

// bareKey is key without the words that restate its unit (restated).
func bareKey(key string) string {
	words := strings.Split(key, "_")
	var out []string
	for i, w := range words {
		last := i == len(words)-1
		drop := len(words) > 1 && restated[""][w] && (!last || w == "count")
		for suffix, ws := range restated {
			drop = drop || suffix != "" && !last && strings.HasSuffix(key, suffix) && ws[w]
		}
		if !drop {
			out = append(out, w)
		}
	}
	return strings.Join(out, "_")
}

// distinctBareKeys are keys whose bare forms (bareKey) meet but which
// name different quantities, each with why.
var distinctBareKeys = map[string]string{
	"duration_s": "validate --serving's benchmark run length (export.ServingRun), not mxu compare's time_s, one GEMM's time on a processor",
	"time_s":     "mxu compare's time of one GEMM on a processor (systolic.Comparison), not a serving benchmark's duration_s",
}

// TestJSONKeysRestateNoUnit walks every command's JSON and fails for two
// keys, in any commands, that differ only in words restating their unit
// (bareKey): one quantity with two keys, which quantityKeys lists only
// once someone has found it.
func TestJSONKeysRestateNoUnit(t *testing.T) {
	first := map[string]string{} // key -> first command printing it
	for _, args := range jsonCommands {
		walkKeys(decodeJSON(t, args...), "", func(_, key string, _ any) {
			if _, ok := first[key]; !ok {
				first[key] = strings.Join(args, " ")
			}
		})
	}
	byBare := map[string][]string{}
	for k := range first {
		if distinctBareKeys[k] == "" {
			byBare[bareKey(k)] = append(byBare[bareKey(k)], k)
		}
	}
	for _, keys := range byBare {
		if len(keys) > 1 {
			sort.Strings(keys)
			var where []string
			for _, k := range keys {
				where = append(where, fmt.Sprintf("%s (shardlab %s)", k, first[k]))
			}
			t.Errorf("one quantity, %d keys: %s; want one key per quantity", len(keys), strings.Join(where, ", "))
		}
	}
	for k := range distinctBareKeys {
		if first[k] == "" {
			t.Errorf("distinctBareKeys lists %s, which no command prints now: drop it", k)
		}
	}
}

// TestBareKey: the words that restate a unit go, the others stay, by hand.
func TestBareKey(t *testing.T) {
	for _, c := range []struct{ key, want string }{
		{"step_time_s", "step_s"},
		{"step_s", "step_s"},
		{"time_to_train_s", "to_train_s"},
		{"weights_size_bytes", "weights_bytes"},
		{"num_devices", "devices"},
		{"device_count", "device"},
		{"count", "count"},
		{"time_zone", "time_zone"},
		{"tokens_per_s", "tokens_per_s"},
	} {
		if got := bareKey(c.key); got != c.want {
			t.Errorf("bareKey(%q) = %q, want %q", c.key, got, c.want)
		}
	}
}

// jsonType is a JSON value's kind.
func jsonType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case float64:
		return "number"
	case string:
		return "string"
	case bool:
		return "bool"
	}
	return "null"
}

// unitless is a numeric key that names MFU or HFU without its unit.
var unitless = regexp.MustCompile(`(^|_)(mfu|hfu)$`)

// TestJSONOneKeyPerQuantity walks every command's JSON and checks that
// each quantity of quantityKeys goes by its one key, with one JSON type,
// in every command; that MFU keys carry their unit; and that every object
// with an MFU says, in it or above it, which peak that MFU is against.
func TestJSONOneKeyPerQuantity(t *testing.T) {
	synonym := map[string]string{}
	for _, q := range quantityKeys {
		for _, n := range q.not {
			synonym[n] = q.key
		}
	}
	types := map[string]map[string]string{} // key -> type -> first command
	for _, args := range jsonCommands {
		cmd := strings.Join(args, " ")
		v := decodeJSON(t, args...)
		said := map[string]bool{} // a key is wrong once per command, not once per row
		walkKeys(v, "", func(path, key string, val any) {
			if want, ok := synonym[key]; ok && !said[key] {
				said[key] = true
				t.Errorf("shardlab %s: %s.%s, want %s (one key per quantity)", cmd, path, key, want)
			}
			if unitless.MatchString(key) && !said[key] {
				said[key] = true
				t.Errorf("shardlab %s: %s.%s names no unit, want ..._fraction", cmd, path, key)
			}
			if types[key] == nil {
				types[key] = map[string]string{}
			}
			if _, ok := types[key][jsonType(val)]; !ok {
				types[key][jsonType(val)] = cmd
			}
		})
		checkMFUPeaks(t, cmd, v, "", false)
	}
	for _, q := range quantityKeys {
		if len(types[q.key]) == 0 {
			t.Errorf("%s: no command prints %s", q.quantity, q.key)
		}
		if len(types[q.key]) > 1 {
			t.Errorf("%s: %s has types %v (type: first command), want one", q.quantity, q.key, types[q.key])
		}
	}
}

// checkMFUPeaks fails for an object with an MFU fraction and no mfu_peak
// in it or an object above it (rows of a table take their parent's).
func checkMFUPeaks(t *testing.T, cmd string, v any, path string, peak bool) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		if p, ok := v["mfu_peak"]; ok {
			if p != string(hw.BF16) {
				t.Errorf("shardlab %s: %s.mfu_peak = %v, want %s", cmd, path, p, hw.BF16)
			}
			peak = true
		}
		for k, x := range v {
			if strings.Contains(k, "mfu") && strings.HasSuffix(k, "_fraction") && !peak {
				t.Errorf("shardlab %s: %s.%s says no peak (no mfu_peak beside or above it)", cmd, path, k)
			}
			if strings.Contains(k, "quantized_mfu") && strings.HasSuffix(k, "_fraction") {
				if _, ok := v["quantized_mfu_peak"]; !ok && !strings.Contains(path, "top") && !strings.Contains(path, "alternatives") {
					t.Errorf("shardlab %s: %s.%s without quantized_mfu_peak", cmd, path, k)
				}
			}
			checkMFUPeaks(t, cmd, x, path+"."+k, peak)
		}
	case []any:
		for i, x := range v {
			checkMFUPeaks(t, cmd, x, fmt.Sprintf("%s[%d]", path, i), peak)
		}
	}
}

// TestJSONQuantizedMFU checks that an int8 plan's JSON gives its MFU
// against both peaks, and that the two agree with hw's peaks: MFU against
// the int8 peak is MFU against the bf16 peak times bf16/int8 (v5p: 459
// and 918 T/s, hw's catalog).
func TestJSONQuantizedMFU(t *testing.T) {
	p := decodeJSON(t, "plan", "--model", "llama3-70b", "--tpu", "v5p-256", "--quantization", "int8", "--json", "--top", "2").(map[string]any)
	chip, _ := hw.Lookup("v5p")
	bf16, _ := chip.Peak(hw.BF16)
	int8, _ := chip.Peak(hw.Int8)
	mfu, _ := p["mfu_fraction"].(float64)
	q, _ := p["quantized_mfu_fraction"].(float64)
	if p["mfu_peak"] != "bf16" || p["quantized_mfu_peak"] != "int8" {
		t.Errorf("plan --quantization int8: mfu_peak %v, quantized_mfu_peak %v, want bf16 and int8", p["mfu_peak"], p["quantized_mfu_peak"])
	}
	if want := mfu * float64(bf16) / float64(int8); mfu <= 0 || math.Abs(q-want) > 1e-12 {
		t.Errorf("plan --quantization int8: quantized_mfu_fraction = %v, want mfu_fraction %v x bf16/int8 peak = %v", q, mfu, want)
	}
	for i, r := range p["top"].([]any) {
		r := r.(map[string]any)
		if got, want := r["quantized_mfu_fraction"], r["mfu_fraction"].(float64)*float64(bf16)/float64(int8); got == nil || math.Abs(got.(float64)-want) > 1e-12 {
			t.Errorf("plan --quantization int8: top[%d].quantized_mfu_fraction = %v, want %v", i, got, want)
		}
	}
	b := decodeJSON(t, "plan", "--model", "llama3-70b", "--tpu", "v5p-256", "--json", "--top", "1").(map[string]any)
	if _, ok := b["quantized_mfu_fraction"]; ok || b["mfu_peak"] != "bf16" {
		t.Errorf("plan (bf16): quantized_mfu_fraction %v, mfu_peak %v; want none and bf16", b["quantized_mfu_fraction"], b["mfu_peak"])
	}
}

// TestModelListHasShowsCounts checks that model list --json gives every
// model the parameter counts model show --json gives it, equal.
func TestModelListHasShowsCounts(t *testing.T) {
	doc, _ := decodeJSON(t, "model", "list", "--json").(map[string]any)
	list, ok := doc["models"].([]any)
	if !ok {
		t.Fatalf("model list --json: no models array in %.200v", doc)
	}
	for _, name := range []string{"llama3-8b", "mixtral-8x7b"} {
		show, _ := decodeJSON(t, "model", "show", name, "--json").(map[string]any)
		var entry map[string]any
		for _, m := range list {
			if m := m.(map[string]any); m["name"] == name {
				entry = m
			}
		}
		if entry == nil {
			t.Fatalf("model list --json has no %s", name)
		}
		n := 0
		for k, want := range show {
			if k == schema.Key || !strings.HasSuffix(k, "params") {
				continue
			}
			n++
			if got := entry[k]; got != want {
				t.Errorf("model list --json: %s.%s = %v, model show says %v", name, k, got, want)
			}
		}
		if n < 2 {
			t.Errorf("model show %s --json: %d parameter counts, want params, active_params and more", name, n)
		}
	}
}
