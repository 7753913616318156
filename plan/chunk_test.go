package plan

import (
	"strings"
	"testing"
)

// TestChunkNote is review 149's finding 7: Llama 4 Maverick's training
// plan says why its attention is costed at the chunk past 8192 tokens.
// By hand (MaxText's count, utils/maxtext_utils.py
// calculate_llama4_attention_tflops @e591f30c: 48 // 4 = 12 global
// layers, 36 chunked; a chunked layer's keys a query, non-causal, are
// (⌊S/c⌋·c² + (S mod c)²)/S): at 32768, 4·8192²/32768 = 8192 of 32768,
// so (12 + 36/4)/48 = 7/16 = 43.75 % of every layer global (README:
// attention 1.49 → 0.65 s); at 20000, (2·8192² + 3616²)/20000 = 7364.7 of
// 20000, (12 + 36·0.36823)/48 = 52.6 %; at 8192, one chunk, no note.
func TestChunkNote(t *testing.T) {
	for _, c := range []struct {
		seq  int
		want string
	}{
		{32768, "attention: 36 of llama4-maverick's 48 layers attend within chunks of 8192 tokens and are costed at the chunk, the other 12 over all 32768 tokens, as MaxText builds and counts them: the attention core is 44% of what it would be with every layer global"},
		{20000, "the other 12 over all 20000 tokens, as MaxText builds and counts them: the attention core is 53% of what"},
		{8192, ""},
	} {
		r := parsed(t, func(o *Options) { o.Model, o.TPU, o.Seq = "llama4-maverick", "v5p-512", c.seq })
		p, err := Search(r)
		if err != nil {
			t.Fatal(err)
		}
		txt, js := planText(t, p), strings.Join(p.JSON(nil).Reasons, "\n")
		for _, got := range []string{txt, js} {
			if c.want == "" && strings.Contains(got, "costed at the chunk") || c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("seq %d: want %q in the text and the JSON reasons, got:\n%s", c.seq, c.want, got)
			}
		}
	}
}
