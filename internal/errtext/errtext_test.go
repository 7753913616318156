package errtext

import (
	"errors"
	"fmt"
	"testing"
)

type fieldErr struct{ err error }

func (e *fieldErr) Error() string { return "mesh: ICI factors = 3, want a product of 4" }
func (e *fieldErr) Unwrap() error { return e.err }

// TestDetail: the package's name and a trailing sentinel after ": " go;
// a first word that is not a package name (it has a space, a capital or a
// quote before its colon), a sentinel that is not at the end or not after
// ": ", and an error that is nothing but its sentinel stay.
func TestDetail(t *testing.T) {
	job := errors.New("invalid job")
	invalid := errors.New("invalid mesh")
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("cost: quantization fp8: TPU v5e publishes no fp8 peak, want none (bf16): %w", job), "quantization fp8: TPU v5e publishes no fp8 peak, want none (bf16)"},
		{&fieldErr{invalid}, "ICI factors = 3, want a product of 4"},
		{fmt.Errorf("hw: count %q: no slice of this size", "v5p-7"), `count "v5p-7": no slice of this size`},
		{fmt.Errorf("systolic2: array %q: %w; want ROWSxCOLS", "0x128", errors.New("invalid systolic input")), `array "0x128": invalid systolic input; want ROWSxCOLS`},
		{fmt.Errorf("quantization fp8: no peak: %w", job), "quantization fp8: no peak"},
		{fmt.Errorf("TPU v5e: no peak"), "TPU v5e: no peak"},
		{fmt.Errorf(`"x": bad`), `"x": bad`},
		{job, "invalid job"},
		{fmt.Errorf("cost: %w", job), "invalid job"},
		{fmt.Errorf("plan: %w and %w", invalid, job), "invalid mesh and invalid job"},
	} {
		if got := Detail(c.err); got != c.want {
			t.Errorf("Detail(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}
