package export

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"shardlab/maxtext"
	"shardlab/plan"
)

// TestMaxTextFlashSequence: MaxText's flash attention cuts the sequence
// into its splash kernel's 512-token blocks and pads none
// (maxtext.FlashBlocks; review170 finding 2), so a plan of a sequence
// above 512 that is no multiple of 512 exports no flash config: the
// refusal names max_target_length, its value and what is accepted, in
// fields ({seq}, {attention}), which the front end spells; so is one
// below 512 that is no multiple of 128 (review178 finding 1: JAX's
// kernel needs its key/value compute block, min(512, 300), a multiple of
// 128). A sequence of 8192, 512 or 256 tokens exports, as does 12000
// under dot_product.
func TestMaxTextFlashSequence(t *testing.T) {
	for _, tt := range []struct {
		seq       int
		attention string
		refused   bool
	}{
		{8192, "", false}, {512, "", false}, {256, "", false},
		{12000, "", true}, {768, "", true}, {300, "", true},
		{12000, "dot_product", false},
	} {
		// planned over every framework, as plan --verify and a held
		// export see it, so the search does not refuse it first
		p := search(t, func(o *plan.Options) {
			o.Model, o.TPU, o.Seq, o.Attention = "llama3-8b", "v5p-128", tt.seq, tt.attention
			if o.Attention == "" {
				o.Attention = "flash"
			}
		})
		c, err := MaxText(p)
		if !tt.refused {
			if err != nil {
				t.Errorf("seq %d %s: MaxText: %v, want a config", tt.seq, tt.attention, err)
			} else if v, _ := c.Get(maxtext.MaxTargetLength); v != tt.seq {
				t.Errorf("seq %d: %s %v", tt.seq, maxtext.MaxTargetLength, v)
			}
			continue
		}
		var xe *Error
		if !errors.Is(err, ErrUnsupported) || !errors.As(err, &xe) || xe.Field != maxtext.MaxTargetLength {
			t.Errorf("seq %d: MaxText error %v, want an *Error on %s wrapping ErrUnsupported", tt.seq, err, maxtext.MaxTargetLength)
			continue
		}
		if strings.Contains(err.Error(), "--") {
			t.Errorf("seq %d: error %q names a CLI flag, want fields", tt.seq, err)
		}
		got := xe.Phrase(plan.Option.Flag)
		for _, w := range []string{"max_target_length " + strconv.Itoa(tt.seq) + ";", "a multiple of 512", "pass such a --seq, or --attention dot_product"} {
			if !strings.Contains(got, w) {
				t.Errorf("seq %d: %q lacks %q", tt.seq, got, w)
			}
		}
		if v := Verify(p, ""); v.Why != WhyRefused || v.Compile != "" || !errors.Is(v.Refused, ErrUnsupported) {
			t.Errorf("seq %d: Verify gives why %q, compile %q, refused %v; want no compile and the refusal", tt.seq, v.Why, v.Compile, v.Refused)
		}
	}
}
