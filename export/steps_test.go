package export

import (
	"slices"
	"strings"
	"testing"

	"shardlab/plan"
)

// shWords splits a line as a POSIX shell does for the words ShellWord
// writes (bare words, and single quotes, a quote inside them written as
// quote, backslash, quote, quote), up to a
// redirection: a second reading of the quoting, by hand.
func shWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	in, quoted := false, false
	for i := 0; i < len(line); i++ {
		switch r := line[i]; {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			w.WriteByte(r)
		case r == '\'':
			quoted, in = true, true
		case r == '\\' && i+1 < len(line):
			i++
			w.WriteByte(line[i])
		case r == ' ':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		case r == '>' || r == '|':
			return words
		default:
			w.WriteByte(r)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

// TestStepsArgsAreTheirLines: each command's arguments are its line as a
// shell reads it, for plans that carry every kind of option (a pipeline's
// schedule, accumulation, remat none as MaxText's custom policy, another
// topology, slices) and job options that need quoting; the front end's
// words are the ones used, in order.
func TestStepsArgsAreTheirLines(t *testing.T) {
	c := Commands{Spell: func(o plan.Option) string { return "-" + string(o) }, Job: []string{"-seq", "it's a b", "-x=1"}}
	for _, edit := range []func(*plan.Options){
		func(o *plan.Options) { o.Model, o.TPU, o.GlobalBatch = "llama3-8b", "v6e-8", "64" },
		func(o *plan.Options) {
			o.Model, o.TPU, o.Mesh, o.GlobalBatch, o.Schedule = "llama3-8b", "v5p-8", "pipeline=2,fsdp=2", "16", "gpipe"
		},
		func(o *plan.Options) { o.Model, o.TPU, o.Remat = "llama3-8b", "v5p-8", "none" },
		func(o *plan.Options) { o.Model, o.TPU, o.Slices, o.Topology = "llama3-70b", "v5p-128", 2, "4x4x8" },
	} {
		p := search(t, edit)
		s := Verify(p, "").Steps(c)
		if !s.Available || len(s.Commands) != 3 {
			t.Fatalf("%s: steps %+v", p.Best.Estimate.Mesh, s)
		}
		for _, cmd := range s.Commands {
			if got := shWords(t, cmd.Line); !slices.Equal(got, cmd.Args) {
				t.Errorf("%s line %q reads as %q, want its args %q", cmd.Step, cmd.Line, got, cmd.Args)
			}
		}
		ex, ck := s.Commands[0].Args, s.Commands[2].Args
		opts := ck[4:]
		if s.Calibration != "" { // a plan below XLA's limit: the check calibrates
			if !slices.Equal(ck[len(ck)-2:], []string{"-write_calibration", CalibrationFile}) {
				t.Errorf("check %q: want -write_calibration %s last", ck, CalibrationFile)
			}
			opts = ck[4 : len(ck)-2]
		}
		if (s.Calibration == "") != s.Expected.Recomputes {
			t.Errorf("calibration file %q with the report at XLA's limit %v: want none exactly there", s.Calibration, s.Expected.Recomputes)
		}
		if !slices.Equal(ex[:3], []string{"shardlab", "export", "maxtext"}) || !slices.Contains(ex, "it's a b") || !slices.Equal(ck[:4], []string{"shardlab", "check", "-compile_log", CompileLogFile}) ||
			!slices.Equal(ex[3:], opts) {
			t.Errorf("export %q, check %q: want the front end's words, the same options in both", ex, ck)
		}
	}
}

// TestStepsUnavailable: without a compile there are no commands, and the
// reason, for a refusal in the front end's words.
func TestStepsUnavailable(t *testing.T) {
	p := search(t, func(o *plan.Options) {
		o.Model, o.TPU, o.Slices, o.Mesh, o.GlobalBatch, o.Schedule = "llama3-8b", "v5p-8", 2, "fsdp=4,pipeline=2(dcn)", "32", "1f1b"
	})
	s := Verify(p, "").Steps(Commands{Spell: func(o plan.Option) string { return "<" + string(o) + ">" }})
	if s.Available || s.UnavailableReason != WhyRefused || len(s.Commands) != 0 || s.Expected != nil || !strings.Contains(s.Unavailable, "<schedule>") {
		t.Errorf("a schedule MaxText does not run: %+v, want refused naming <schedule>", s)
	}
}
