package web

import (
	"errors"
	"net/url"
	"testing"

	"shardlab/plan"
)

// FuzzOptionsFrom: any query reads into options or a fieldError naming a
// form field, without panicking, and what it reads plan.ParseRequest
// either takes or refuses with an OptionError.
func FuzzOptionsFrom(f *testing.F) {
	for _, q := range []string{"", "model=llama3-8b&tpu=tpu7x-8", "slices=x", "model=spec&model_spec=layers%3A+2",
		"seq=-1&top=1000", "model=spec", "tpu=tpu7x&slices=2", "max_global_batch=1e400tok", "global_batch=%00"} {
		f.Add(q)
	}
	c := New(Config{MaxSpecBytes: 512}).cfg
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		o, _, err := optionsFrom(q, c)
		var fe *fieldError
		switch {
		case err != nil && !errors.As(err, &fe):
			t.Fatalf("optionsFrom(%q): %T %v, want a *fieldError", raw, err, err)
		case err != nil:
			if !inForm(fe.Option) {
				t.Fatalf("optionsFrom(%q): error about %q, which the form has no field for", raw, fe.Option)
			}
			return
		}
		if len(o.ModelSpec) > c.MaxSpecBytes {
			t.Fatalf("optionsFrom(%q): a spec of %d bytes passed the %d-byte bound", raw, len(o.ModelSpec), c.MaxSpecBytes)
		}
		if _, err := plan.ParseRequest(o); err != nil && !errors.Is(err, plan.ErrRequest) {
			t.Fatalf("ParseRequest(optionsFrom(%q)): %v, want a plan.ErrRequest", raw, err)
		}
	})
}

func inForm(o plan.Option) bool {
	for _, f := range fields() {
		if f.Option == o {
			return true
		}
	}
	return false
}
