package main

import (
	"strconv"
	"strings"
)

// parseBatch reads a global batch: "512" or "512seq" sequences, or "4Mitok"
// / "4194304tok" tokens (k = 1e3, M = 1e6, Ki = 1024, Mi = 1024²). Tokens
// are turned into whole sequences of seq tokens; exact demands a whole
// number of sequences.
func parseBatch(flagName, s string, seq int, exact bool) (int, error) {
	in := strings.TrimSpace(s)
	want := "N sequences (512 or 512seq) or N tokens (4Mitok, 2Mtok, 1048576tok)"
	tokens := false
	switch {
	case strings.HasSuffix(in, "tok"):
		tokens, in = true, strings.TrimSuffix(in, "tok")
	case strings.HasSuffix(in, "seq"):
		in = strings.TrimSuffix(in, "seq")
	}
	mult := 1.0
	for _, m := range []struct {
		suffix string
		v      float64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}} {
		if strings.HasSuffix(in, m.suffix) {
			in, mult = strings.TrimSuffix(in, m.suffix), m.v
			break
		}
	}
	v, err := strconv.ParseFloat(in, 64)
	if err != nil || in == "" || strings.ContainsAny(in, "eEnNiI") {
		return 0, bad("%s %q: want %s", flagName, s, want)
	}
	v *= mult
	if !(v > 0) || v > 1e15 {
		return 0, bad("%s %q: want a positive batch: %s", flagName, s, want)
	}
	if v != float64(int64(v)) {
		return 0, bad("%s %q: want a whole number of %s", flagName, s, map[bool]string{true: "tokens", false: "sequences"}[tokens])
	}
	n := int(v)
	if tokens {
		if n < seq {
			return 0, bad("%s %q: %d tokens is less than one sequence of %d", flagName, s, n, seq)
		}
		if exact && n%seq != 0 {
			return 0, bad("%s %q: %d tokens is not a whole number of %d-token sequences", flagName, s, n, seq)
		}
		n /= seq
	}
	if n > 1<<30 {
		return 0, bad("%s %q: want at most %d sequences", flagName, s, 1<<30)
	}
	return n, nil
}
