package plan

import (
	"errors"
	"strings"
	"testing"

	"shardlab/mesh"
)

// TestMaxTextFlashSequence: a sequence MaxText's flash attention cannot
// cut into its 512-token splash blocks without context parallelism
// (maxtext.FlashBlocks; review170 finding 2) is refused under the MaxText
// framework, naming {seq}, its value and what is accepted, and warned of
// over every framework, where the plan's layout has no context axis; a
// sequence of 8192, 512 or 256 tokens, dot_product attention, and a
// fixed mesh whose context ring runs it (768 over context 2: 384 tokens a
// device) are not. 300 tokens is refused too (review178 finding 1: JAX's
// kernel needs its key/value compute block, min(512, 300), a multiple of
// 128).
func TestMaxTextFlashSequence(t *testing.T) {
	for _, tt := range []struct {
		seq                   int
		attention, mesh, want string
	}{
		{12000, "flash", "", "--seq 12000: MaxText's flash attention (JAX's splash kernel) cuts the sequence into blocks of min(512, max_target_length) tokens"},
		{768, "", "", "needs it a multiple of 512, or exactly 128, 256 or 384 (such as 512 or 1024); pass such a --seq, or --attention dot_product, or a --mesh with context=2, whose ring runs it"},
		{768, "", "fsdp=64", "--seq 768: "},
		{300, "", "", "--seq 300: MaxText's flash attention"},
		{300, "", "", "(such as 256 or 384); pass such a --seq, or --attention dot_product (no --mesh with a context axis runs it either)"},
		{8192, "", "", ""}, {512, "", "", ""}, {256, "", "", ""},
		{12000, "dot_product", "", ""},
		{768, "", "fsdp=32,context=2", ""},
	} {
		o := DefaultOptions()
		o.Model, o.TPU, o.Seq, o.Attention, o.Mesh = "llama3-8b", "v5p-128", tt.seq, tt.attention, tt.mesh
		if o.Attention == "" {
			o.Attention = "flash"
		}
		for _, f := range []string{string(FrameworkMaxText), FrameworkAny} {
			o.Framework = f
			r, err := ParseRequest(o)
			var oe *OptionError
			switch {
			case f == FrameworkAny && err != nil:
				t.Errorf("seq %d %s --mesh %q, framework any: %v, want a request (a warning, not a refusal)", tt.seq, tt.attention, tt.mesh, err)
			case f == FrameworkAny:
				flashWarned(t, r, tt.seq, tt.want != "")
			case tt.want == "" && err != nil:
				t.Errorf("seq %d %s --mesh %q: %v, want a request", tt.seq, o.Attention, tt.mesh, err)
			case tt.want != "" && (!errors.As(err, &oe) || oe.Option != OptionSeq || !strings.Contains(oe.Phrase(flagName), tt.want)):
				t.Errorf("seq %d %s --mesh %q: %v, want an OptionError for seq saying %q", tt.seq, o.Attention, tt.mesh, err, tt.want)
			}
		}
	}
}

// TestFlashRefusalOffersRing: the MaxText framework's refusal of a
// sequence its flash attention cannot cut without context parallelism
// offers a {mesh} with a context axis only where the ring runs the
// sequence (maxtext.Ring.Check) on a context size that divides the
// slice's JAX devices, and names the smallest (review178 finding 5: seq
// 1000 was offered one, though no context size's ring runs it).
func TestFlashRefusalOffersRing(t *testing.T) {
	for _, tt := range []struct {
		model, tpu string
		seq        int
		context    string // "" where none is offered
		mesh       string // a fixed mesh with that context, which plans
	}{
		{"llama3-8b", "v5p-128", 768, "context=2", "context=2,fsdp=32"}, // 384-token shares
		{"llama3-8b", "v5p-128", 1000, "", ""},                          // no multiple of 128, nor any share of it
		{"llama3-8b", "v5p-128", 12000, "", ""},                         // shares of 6000, 3000, 1200, 600 tokens
		// 384-token shares over context 6, which does not divide 64
		// devices; nor does 8 run it (288-token shares)
		{"llama3-8b", "v5p-128", 2304, "", ""},
		{"llama3-8b", "v5p", 2304, "context=6", ""},                     // a bare generation: any size
		{"gemma2-9b", "v5p-128", 768, "", ""},                           // sliding-window layers: the ring runs none
		{"llama3-8b", "tpu7x-16", 768, "context=2", "context=2,fsdp=8"}, // 8 chips, 16 JAX devices
	} {
		o := DefaultOptions()
		o.Model, o.TPU, o.Seq, o.Attention, o.Framework = tt.model, tt.tpu, tt.seq, "flash", string(FrameworkMaxText)
		_, err := ParseRequest(o)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != OptionSeq {
			t.Errorf("%s on %s, seq %d: %v, want an OptionError for seq", tt.model, tt.tpu, tt.seq, err)
			continue
		}
		got := oe.Phrase(flagName)
		want := "(no --mesh with a context axis runs it either)"
		if tt.context != "" {
			want = "or a --mesh with " + tt.context + ", whose ring runs it"
		}
		if !strings.HasSuffix(got, want) {
			t.Errorf("%s on %s, seq %d: %q, want it to end %q", tt.model, tt.tpu, tt.seq, got, want)
		}
		if tt.mesh == "" {
			continue
		}
		o.Mesh = tt.mesh
		if _, err := ParseRequest(o); err != nil {
			t.Errorf("%s on %s, seq %d, mesh %s: %v, want a request: the context offered runs it", tt.model, tt.tpu, tt.seq, o.Mesh, err)
		}
	}
}

// flashWarned checks that the plan of r warns, or not, that MaxText's
// flash attention refuses its sequence of seq tokens.
func flashWarned(t *testing.T, r Request, seq int, want bool) {
	t.Helper()
	r.BestOnly = true
	p, err := Search(r)
	if err != nil {
		t.Fatalf("seq %d: %v", seq, err)
	}
	warned := false
	for _, w := range p.Warnings {
		if w.Option == OptionSeq && strings.Contains(w.Text, "MaxText's flash attention") {
			warned = true
			if !strings.Contains(w.Phrase(flagName), "so MaxText cannot run this plan, and an export to MaxText refuses it: pass such a --seq, or --attention dot_product") {
				t.Errorf("seq %d: warning %q", seq, w.Phrase(flagName))
			}
		}
	}
	if warned != want {
		t.Errorf("seq %d, layout %s: warned %v, want %v (warnings %v)", seq, p.Best.Estimate.Mesh, warned, want, p.Warnings)
	}
}

// TestRingWarningWithoutFlashFallback: where MaxText's ring refuses the
// plan's context axis and its flash attention refuses the sequence
// without one, the ring's warning says so, rather than name a best under
// the MaxText framework that an export would refuse too.
func TestRingWarningWithoutFlashFallback(t *testing.T) {
	o := DefaultOptions()
	o.Model, o.TPU, o.Seq, o.Top = "llama3-8b", "v5p-64", 130000, 1
	r, err := ParseRequest(o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	if p.Best.Estimate.Mesh.Size(mesh.Context) <= 1 {
		t.Fatalf("the plan has no context axis (%s): this case needs one; choose another sequence", p.Best.Estimate.Mesh)
	}
	for _, w := range p.Warnings {
		if strings.Contains(w.Text, "its ring refuses") {
			if !strings.Contains(w.Text, "and without a context axis its flash attention refuses the sequence") || strings.Contains(w.Text, "which an export to MaxText holds") {
				t.Errorf("ring warning %q", w.Text)
			}
			return
		}
	}
	t.Errorf("no ring warning among %v", p.Warnings)
}
