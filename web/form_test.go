package web

import (
	"errors"
	"testing"

	"shardlab/plan"
)

// FuzzOptionsFrom: any query reads into options or fieldErrors, each
// naming a form field or none (a malformed query, an unknown key), without
// panicking, and what it reads plan.ParseRequest
// either takes or refuses with an OptionError.
func FuzzOptionsFrom(f *testing.F) {
	for _, q := range []string{"", "model=llama3-8b&tpu=tpu7x-8", "slices=x", "model=spec&model_spec=layers%3A+2",
		"seq=-1&top=1000", "model=spec", "tpu=tpu7x&slices=2", "max_global_batch=1e400tok", "global_batch=%00"} {
		f.Add(q)
	}
	c := New(Config{MaxSpecBytes: 512}).cfg
	f.Fuzz(func(t *testing.T, raw string) {
		o, _, bad := planForm.options(raw, c, nil)
		for _, fe := range bad {
			if fe.Option != "" && !planForm.has(fe.Option) {
				t.Fatalf("planForm.options(%q): error about %q, which the form has no field for", raw, fe.Option)
			}
		}
		if len(o.ModelSpec) > c.MaxSpecBytes {
			t.Fatalf("planForm.options(%q): a spec of %d bytes passed the %d-byte bound", raw, len(o.ModelSpec), c.MaxSpecBytes)
		}
		if _, err := plan.ParseRequest(o); err != nil && !errors.Is(err, plan.ErrRequest) {
			t.Fatalf("ParseRequest(planForm.options(%q)): %v, want a plan.ErrRequest", raw, err)
		}
		_, err := parseAll(o, bad)
		var fes fieldErrors
		if err != nil && (!errors.As(err, &fes) || len(fes) == 0) {
			var oe *plan.OptionError
			if !errors.As(err, &oe) && !errors.Is(err, plan.ErrRequest) {
				t.Fatalf("parseAll(planForm.options(%q)): %T %v, want fieldErrors", raw, err, err)
			}
		}
		for _, fe := range fes {
			if fe.Option != "" && !planForm.has(fe.Option) {
				t.Fatalf("parseAll(planForm.options(%q)): error about %q, which the form has no field for", raw, fe.Option)
			}
		}
	})
}

// FuzzDecodeAPI: any body decodes into a request, or is malformed (one
// error), or has bad values (an error for each, naming a key of the
// API), without panicking.
func FuzzDecodeAPI(f *testing.F) {
	for _, b := range []string{`{}`, `{"slices": "x", "seq": 1.5, "top": null}`, `{"model_spec": 3}`, `[1]`, `{"Model": "x"}`,
		`{"slices": 1, "slices": 2}`, `{"example_cost": "1s", "dcn_gbps": true}`, "{\"model\": \"\xff\"}", `{"a":`} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := apiRequest{Options: plan.DefaultOptions()}
		bad, malformed := decodeAPI(body, &req)
		if malformed != nil && len(bad) > 0 {
			t.Fatalf("decodeAPI(%q): both malformed and bad values", body)
		}
		for _, fe := range bad {
			if _, ok := apiKeys[string(fe.Option)]; !ok {
				t.Fatalf("decodeAPI(%q): error %q about %q, no key of the API", body, fe.Error(), fe.Option)
			}
		}
	})
}

// FuzzServingForm: any query of the serving page reads into options and
// parses (parseServing) into a question or fieldErrors, each naming a
// field of the form, without panicking.
func FuzzServingForm(f *testing.F) {
	for _, q := range []string{"", "model=llama3-8b&tpu=v6e-8", "prompt_len=x&weights=fp4", "concurrency=8&request_rate=2",
		"seed=-1&num_requests=0", "length_mix=uniform:9-3", "model=spec&model_spec=layers%3A+2", "ttft_slo=1e9h"} {
		f.Add(q)
	}
	h := New(Config{MaxSpecBytes: 512})
	f.Fuzz(func(t *testing.T, raw string) {
		o, _, bad := servingForm.options(raw, h.cfg, nil)
		_, err := parseServing(o, bad)
		checkNamed(t, raw, err, servingForm.form)
	})
}

// FuzzBudgetForm: likewise for the budget page (parsing only: no sweep).
func FuzzBudgetForm(f *testing.F) {
	for _, q := range []string{"", "tokens=1T", "tokens=-1&deadline=30&region=mars", "generations=v6e,v6e", "slice_chips=0&slices=65", "seq=x"} {
		f.Add(q)
	}
	h := New(Config{MaxSpecBytes: 512})
	f.Fuzz(func(t *testing.T, raw string) {
		o, _, bad := budgetForm.options(raw, h.cfg, nil)
		_, err := parseBudget(o, bad)
		checkNamed(t, raw, err, budgetForm.form)
	})
}

// checkNamed fails unless err is nil or fieldErrors each naming a field
// of form fm (or none).
func checkNamed(t *testing.T, raw string, err error, fm *form) {
	t.Helper()
	if err == nil {
		return
	}
	var fes fieldErrors
	if !errors.As(err, &fes) || len(fes) == 0 {
		t.Fatalf("query %q: %T %v, want fieldErrors", raw, err, err)
	}
	for _, fe := range fes {
		named := fe.Option == ""
		for _, fl := range fm.fields {
			named = named || fl.Option == fe.Option
		}
		if !named {
			t.Fatalf("query %q: error about %q, which the form has no field for", raw, fe.Option)
		}
	}
}
