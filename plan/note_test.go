package plan

import (
	"strings"
	"testing"
)

func flagName(o Option) string { return "--" + strings.ReplaceAll(string(o), "_", "-") }

func TestNotePhrase(t *testing.T) {
	tests := []struct {
		n           Note
		plan, flags string
	}{
		{note(OptionEfficiency, "compute at %.0f%% ({efficiency})", 60.0), "compute at 60% (efficiency)", "compute at 60% (--efficiency)"},
		{note(OptionMaxGlobalBatch, "{max_global_batch} allows %s", "4M"), "max global batch allows 4M", "--max-global-batch allows 4M"},
		// braces that values print are theirs, not option names
		{note("", "model %q on %s", "{mesh}", "a}b{{"), `model "{mesh}" on a}b{{`, `model "{mesh}" on a}b{{`},
		{note(OptionMesh, "%s", text("{mesh} and {{x}}")), "mesh and {x}", "--mesh and {x}"},
		{Note{Text: "no options"}, "no options", "no options"},
	}
	for _, tt := range tests {
		if got := tt.n.String(); got != tt.plan {
			t.Errorf("Note{%q}.String() = %q, want %q", tt.n.Text, got, tt.plan)
		}
		if got := tt.n.Phrase(flagName); got != tt.flags {
			t.Errorf("Note{%q}.Phrase(flagName) = %q, want %q", tt.n.Text, got, tt.flags)
		}
	}
}

func FuzzPhrase(f *testing.F) {
	for _, s := range []string{"a {efficiency} b", "{{x}}", "{", "}", "{}", "{a}{b}", "x}}y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// a value formatted into a note reads back as itself
		if got := note("", "%s", s).String(); got != s {
			t.Fatalf("note(%%s, %q) phrases as %q", s, got)
		}
		_ = phrase(s, nil) // and any text phrases without panicking
	})
}

func TestOptionFlag(t *testing.T) {
	for _, tc := range []struct {
		o    Option
		want string
	}{{OptionMaxGlobalBatch, "--max-global-batch"}, {OptionTPU, "--tpu"}, {OptionDCNGbps, "--dcn-gbps"}} {
		if got := tc.o.Flag(); got != tc.want {
			t.Errorf("%q.Flag() = %q, want %q", tc.o, got, tc.want)
		}
	}
}
