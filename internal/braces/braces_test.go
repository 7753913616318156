package braces

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

func upper(k string) string { return "<" + strings.ToUpper(k) + ">" }

func isKnown(k string) bool { return k == "tpu" || k == "max_model_len" }

// TestSpell: cases derived by hand from the markup's rules (a {key} is
// spelt, {{ and }} are one brace, any other brace stays).
func TestSpell(t *testing.T) {
	for _, c := range []struct {
		in, all, known string
	}{
		{"no braces", "no braces", "no braces"},
		{"{tpu} and {max_model_len}", "<TPU> and <MAX_MODEL_LEN>", "<TPU> and <MAX_MODEL_LEN>"},
		{"{other} and {tpu}", "<OTHER> and <TPU>", "{other} and <TPU>"},
		{"path {{tpu}}", "path {tpu}", "path {tpu}"},
		{"{{{tpu}", "{<TPU>", "{<TPU>"},
		{"{}", "{}", "{}"},
		{"{", "{", "{"},
		{"a}b", "a}b", "a}b"},
		{"x}}y", "x}y", "x}y"},
		{"{a{b}", "<A{B>", "{a{b}"},
		{"{a {{tpu}}", "<A {{TPU>}", "{a {tpu}"},
	} {
		if got := Spell(c.in, upper, nil); got != c.all {
			t.Errorf("Spell(%q, upper, nil) = %q, want %q", c.in, got, c.all)
		}
		if got := Spell(c.in, upper, isKnown); got != c.known {
			t.Errorf("Spell(%q, upper, isKnown) = %q, want %q", c.in, got, c.known)
		}
	}
}

// The second implementation: the regular expressions the markup was read
// with before Spell (plan's loop read every key; inference.Plan.Phrase
// matched \{\{|\}\}|\{(key|…)\} over its Options' keys).
var (
	allMarks   = regexp.MustCompile(`\{\{|\}\}|\{([^}]+)\}`)
	knownMarks = regexp.MustCompile(`\{\{|\}\}|\{(tpu|max_model_len)\}`)
)

func byRegexp(re *regexp.Regexp, s string) string {
	return re.ReplaceAllStringFunc(s, func(m string) string {
		if m == "{{" || m == "}}" {
			return m[:1]
		}
		return upper(m[1 : len(m)-1])
	})
}

// TestSpellIsTheRegexp holds Spell to the regular expressions on random
// texts made of the markup's pieces.
func TestSpellIsTheRegexp(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 0))
	pieces := []string{"{", "}", "tpu", "max_model_len", "x", " ", "é"}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		if got, want := Spell(s, upper, nil), byRegexp(allMarks, s); got != want {
			t.Fatalf("Spell(%q, upper, nil) = %q, the regexp %q", s, got, want)
		}
		if got, want := Spell(s, upper, isKnown), byRegexp(knownMarks, s); got != want {
			t.Fatalf("Spell(%q, upper, isKnown) = %q, the regexp %q", s, got, want)
		}
	}
}

func FuzzSpell(f *testing.F) {
	for _, s := range []string{"a {tpu} b", "{{x}}", "{", "}", "{}", "{a}{b}", "x}}y", "{a{b}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// text from outside reads back as itself, naming no key
		if got := Spell(Literal(s), upper, nil); got != s {
			t.Fatalf("Spell(Literal(%q)) = %q", s, got)
		}
		if got, want := Spell(s, upper, nil), byRegexp(allMarks, s); got != want {
			t.Fatalf("Spell(%q, upper, nil) = %q, the regexp %q", s, got, want)
		}
		if got, want := Spell(s, upper, isKnown), byRegexp(knownMarks, s); got != want {
			t.Fatalf("Spell(%q, upper, isKnown) = %q, the regexp %q", s, got, want)
		}
	})
}

func ExampleSpell() {
	flag := func(k string) string { return "--" + strings.ReplaceAll(k, "_", "-") }
	note := "{max_model_len} is above the model's context; see " + Literal("{hf_model}/config.json")
	fmt.Println(Spell(note, flag, nil))
	fmt.Println(Spell("{tpu} {other}", flag, func(k string) bool { return k == "tpu" }))
	// Output:
	// --max-model-len is above the model's context; see {hf_model}/config.json
	// --tpu {other}
}
