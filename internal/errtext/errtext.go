// Package errtext spells a library's error for a user who named the value
// it refuses: the error's own words, without the name of the package that
// made it ("mesh: ") nor the sentinel it wraps to be matched by
// errors.Is (": invalid job"). Those two say where in the code the error
// was made and what class it is, which a front end that names the field
// ("--mesh: ...") already says; kept, they read "--mesh: mesh: ..." and
// "...: invalid job" (review 140).
package errtext

import (
	"strings"
	"unicode"
)

// Detail is err's message with its leading package name and its trailing
// sentinels trimmed: a first word of lower-case letters and digits
// followed by ": " (Go's "pkg: " convention) is dropped, and so, once,
// each error in err's chain that wraps nothing whose message ends err's
// after ": ". What is left is never empty: an error that is nothing but
// its package and sentinel keeps its message.
func Detail(err error) string {
	msg := err.Error()
	out := trimSentinels(err, trimPackage(msg))
	if strings.TrimSpace(out) == "" {
		return msg
	}
	return out
}

// trimPackage drops a leading "pkg: " from msg.
func trimPackage(msg string) string {
	word, rest, ok := strings.Cut(msg, ": ")
	if !ok || word == "" || rest == "" {
		return msg
	}
	for i, r := range word {
		if !unicode.IsLower(r) && !(i > 0 && unicode.IsDigit(r)) {
			return msg
		}
	}
	return rest
}

// trimSentinels drops from the end of msg the message of each leaf error
// (one that wraps nothing) in err's chain, with its ": ".
func trimSentinels(err error, msg string) string {
	for _, leaf := range leaves(err) {
		if s := ": " + leaf.Error(); leaf != err && strings.HasSuffix(msg, s) {
			msg = strings.TrimSuffix(msg, s)
		}
	}
	return msg
}

// leaves is the errors of err's chain (errors.Unwrap and Unwrap()
// []error) that wrap nothing, in the order a depth-first walk meets them.
func leaves(err error) []error {
	var out []error
	var walk func(error)
	walk = func(e error) {
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			if x := u.Unwrap(); x != nil {
				walk(x)
				return
			}
			out = append(out, e)
		default:
			out = append(out, e)
		}
	}
	walk(err)
	return out
}
