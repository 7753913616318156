// Package errtext spells a library's error for a user who named the value
// it refuses: the error's own words, without the name of the package that
// made it ("mesh: ") nor the sentinel it wraps to be matched by
// errors.Is (": invalid job"). Those two say where in the code the error
// was made and what class it is, which a front end that names the field
// ("--mesh: ...") already says; kept, they read "--mesh: mesh: ..." and
// "...: invalid job" (review 140).
package errtext

import (
	"strconv"
	"strings"
	"unicode"
)

// Detail is err's message with its leading package name and its trailing
// sentinels trimmed: a first word that names one of shardlab's packages
// (packages) followed by ": " (Go's "pkg: " convention) is dropped, and
// so, once, each error in err's chain that wraps nothing whose message
// ends err's after ": ". What is left is never empty: an error that is
// nothing but its package and sentinel keeps its message.
func Detail(err error) string {
	msg := err.Error()
	out := trimSentinels(err, trimPackage(msg))
	if strings.TrimSpace(out) == "" {
		return msg
	}
	return out
}

// packages are the names of shardlab's packages whose errors start with
// their name (TestPackagesAreTheModules holds the list to the module's
// directories): only such a first word is dropped, so that a message
// that starts with a field ("seq: ...") keeps it.
var packages = map[string]bool{
	"budget": true, "capacity": true, "chart": true, "collective": true, "cost": true, "emu": true,
	"export": true, "hw": true, "infeed": true, "inference": true, "maxtext": true, "mesh": true,
	"model": true, "plan": true, "schedule": true, "schema": true, "systolic": true, "trace": true,
	"unit": true, "validate": true, "web": true,
}

// trimPackage drops a leading "pkg: " from msg where pkg is one of
// packages.
func trimPackage(msg string) string {
	word, rest, ok := strings.Cut(msg, ": ")
	if !ok || !packages[word] || rest == "" {
		return msg
	}
	return rest
}

// After is detail without a lead that restates the value the user gave,
// for a front end that states the value itself: a word, then the value
// bare or quoted, then ": " ("quantization fp8: ", `count "v5p-7": `,
// `array "0": `). ok is false, and detail returned whole, where it has no
// such lead or nothing follows it.
func After(detail, value string) (string, bool) {
	word, rest, ok := strings.Cut(detail, " ")
	if !ok || value == "" || !isWord(word) {
		return detail, false
	}
	for _, v := range []string{value, strconv.Quote(value)} {
		if r, ok := strings.CutPrefix(rest, v+": "); ok && strings.TrimSpace(r) != "" {
			return r, true
		}
	}
	return detail, false
}

// isWord reports whether w is a field's name: lower-case letters, digits
// after the first, and underscores.
func isWord(w string) bool {
	for i, r := range w {
		if !unicode.IsLower(r) && r != '_' && !(i > 0 && unicode.IsDigit(r)) {
			return false
		}
	}
	return w != ""
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

// OrList is items joined as a sentence names its choices: "1, 2 or 4",
// "bf16 or int8", the one item alone, "" for none. Errors that list what
// they accept spell their choices with it.
func OrList(items []string) string {
	if n := len(items); n > 1 {
		return strings.Join(items[:n-1], ", ") + " or " + items[n-1]
	}
	return strings.Join(items, "")
}
