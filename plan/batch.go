package plan

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DefaultMaxGlobalBatch is the convergence limit a request without one
// takes; a user's own limit replaces it.
const DefaultMaxGlobalBatch = "4Mitok"

// parseMaxBatch reads the convergence limit into r.MaxGlobalBatch; value
// is the option as given, "" for the default. The default limit is at
// least one sequence, however long; one given below that is refused.
func parseMaxBatch(r *Request, value string) error {
	if value == "" {
		n, err := ParseBatch(DefaultMaxGlobalBatch, r.Seq, false)
		r.MaxGlobalBatch = max(n, 1)
		var be *BatchError
		if err != nil && !errors.As(err, &be) {
			return err
		}
		return nil
	}
	var err error
	if r.MaxGlobalBatch, err = ParseBatch(value, r.Seq, false); err != nil {
		return refuseBatch(OptionMaxGlobalBatch, value, err)
	}
	return nil
}

// BatchError is a global batch ParseBatch refuses: the input, and what is
// wrong with it and accepted. It wraps ErrRequest.
type BatchError struct {
	Input  string
	Reason string
}

func (e *BatchError) Error() string { return fmt.Sprintf("plan: batch %q: %s", e.Input, e.Reason) }

func (e *BatchError) Unwrap() error { return ErrRequest }

// refuseBatch names the option a BatchError concerns.
func refuseBatch(o Option, value string, err error) error {
	var be *BatchError
	if errors.As(err, &be) {
		return refuse(o, value, err, " %q: %s", value, be.Reason)
	}
	return refuseErr(o, value, err)
}

// ParseBatch reads a global batch: "512" or "512seq" sequences, or
// "4Mitok" / "4194304tok" tokens (k = 1e3, M = 1e6, G = 1e9, Ki = 1024,
// Mi = 1024², Gi = 1024³), and returns it in sequences of seq tokens,
// at most MaxBatch. Tokens are rounded down to whole sequences; exact
// refuses a remainder instead. Errors are *BatchError.
func ParseBatch(s string, seq int, exact bool) (int, error) {
	in := strings.TrimSpace(s)
	want := "N sequences (512 or 512seq) or N tokens (4Mitok, 2Mtok, 1048576tok)"
	fail := func(format string, a ...any) (int, error) {
		return 0, &BatchError{Input: s, Reason: fmt.Sprintf(format, a...)}
	}
	if seq < 1 {
		return fail("sequences of %d tokens, want a positive sequence length", seq)
	}
	in, tokens := strings.CutSuffix(in, "tok")
	if !tokens {
		in, _ = strings.CutSuffix(in, "seq")
	}
	mult := 1.0
	for _, m := range []struct {
		suffix string
		v      float64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}} {
		if rest, ok := strings.CutSuffix(in, m.suffix); ok {
			in, mult = rest, m.v
			break
		}
	}
	// decimal only: no exponent, NaN or Inf, nor Go's hexadecimal floats
	// (0x1p9) and their underscores, which ParseFloat reads
	v, err := strconv.ParseFloat(in, 64)
	if err != nil || in == "" || strings.ContainsAny(in, "eEnNiIxX_") {
		return fail("want %s", want)
	}
	v *= mult
	switch {
	case !(v > 0):
		return fail("want a positive batch: %s", want)
	case v > 1e15:
		return fail("want at most %d sequences (%.3g %s is too many)", MaxBatch, v, map[bool]string{true: "tokens", false: "sequences"}[tokens])
	}
	if v != math.Trunc(v) {
		return fail("want a whole number of %s", map[bool]string{true: "tokens", false: "sequences"}[tokens])
	}
	n := int(v)
	if tokens {
		if n < seq {
			return fail("%d tokens is less than one sequence of %d", n, seq)
		}
		if exact && n%seq != 0 {
			return fail("%d tokens is not a whole number of %d-token sequences", n, seq)
		}
		n /= seq
	}
	if n > MaxBatch {
		return fail("want at most %d sequences", MaxBatch)
	}
	return n, nil
}
