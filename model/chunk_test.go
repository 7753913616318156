package model

import (
	"errors"
	"math"
	"testing"
)

// bruteChunkPairs counts, one query at a time, the (query, key) pairs of
// seq tokens in a layer that attends within aligned chunks of chunk
// tokens: the keys of a query's own chunk, up to the query with causal
// set. An independent count for chunkKeys.
func bruteChunkPairs(seq, chunk int, causal bool) float64 {
	var n float64
	for p := 0; p < seq; p++ {
		start := p / chunk * chunk
		end := min(start+chunk, seq)
		if causal {
			end = p + 1
		}
		n += float64(end - start)
	}
	return n
}

// TestChunkKeys: causally within chunks of 8192 over 32768 tokens, a
// query at offset i of its chunk sees i+1 keys, so on average
// (8192+1)/2 = 4096.5 a token (the brute count); MaxText counts the
// causal half of the chunks' squares, 4·8192²/2 / 32768 = 4096, half a
// key a query less, as its S²/2 does for a global layer. Bidirectional,
// every token sees its chunk's 8192. With a remainder (20000 = 2·8192 +
// 3616) the last, short chunk's keys are its length.
func TestChunkKeys(t *testing.T) {
	for _, c := range []struct {
		seq, chunk          int
		causal, noncausal   float64 // MaxText's count per token
		brutePerTokenCausal float64
	}{
		{32768, 8192, 4096, 8192, 4096.5},
		{8192, 8192, 4096, 8192, 4096.5},
		{20000, 8192, (2*8192*8192 + 3616*3616) / 2.0 / 20000, (2*8192*8192 + 3616*3616) / 20000.0, 0},
		{4096, 8192, 2048, 4096, 2048.5}, // shorter than a chunk: a global layer
	} {
		if got := chunkKeys(c.seq, c.chunk, true); math.Abs(got-c.causal) > 1e-9 {
			t.Errorf("chunkKeys(%d, %d, causal) = %v, want %v", c.seq, c.chunk, got, c.causal)
		}
		if got, brute := chunkKeys(c.seq, c.chunk, false), bruteChunkPairs(c.seq, c.chunk, false)/float64(c.seq); math.Abs(got-c.noncausal) > 1e-9 || math.Abs(got-brute) > 1e-9 {
			t.Errorf("chunkKeys(%d, %d, bidirectional) = %v, want %v (brute count %v)", c.seq, c.chunk, got, c.noncausal, brute)
		}
		// the exact causal pairs less half a key a query: MaxText's count
		brute := bruteChunkPairs(c.seq, c.chunk, true)
		if got := chunkKeys(c.seq, c.chunk, true); math.Abs(got-(brute-float64(c.seq)/2)/float64(c.seq)) > 1e-9 {
			t.Errorf("chunkKeys(%d, %d, causal) = %v, want the brute count %v less half a key a query", c.seq, c.chunk, got, brute/float64(c.seq))
		}
		if c.brutePerTokenCausal > 0 && brute/float64(c.seq) != c.brutePerTokenCausal {
			t.Errorf("brute causal pairs a token at %d, chunk %d = %v, want (chunk+1)/2 = %v", c.seq, c.chunk, brute/float64(c.seq), c.brutePerTokenCausal)
		}
	}
}

// maxTextLlama4AttentionFLOPs is MaxText's calculate_llama4_attention_tflops
// (utils/maxtext_utils.py @e591f30c), per token rather than per device
// and in FLOPs: 12 global and 36 chunked layers of 48
// (nope_layer_interval 4), 4·S²·H·D a global layer, 4·(n·c² + r²)·H·D a
// chunked one, halved for the causal mask, times 3 for the backward pass.
func maxTextLlama4AttentionFLOPs(layers, heads, headDim, seq, chunk int) float64 {
	global := layers / 4
	chunked := layers - global
	hd := float64(heads * headDim)
	g := 4 * float64(seq) * float64(seq) * hd
	n, r := seq/chunk, seq%chunk
	c := 4 * (float64(n)*float64(chunk)*float64(chunk) + float64(r)*float64(r)) * hd
	return (float64(global)*g + float64(chunked)*c) / 2 * 3 / float64(seq)
}

// TestLlama4ChunkedFLOPs: Maverick's model FLOPs per token, the matmuls
// aside, are MaxText's llama4 attention count (review 145 #3). At 32768
// the chunked layers attend 4096 keys a token against a global layer's
// 16384: the count falls by 12·H·D·36·(16384 − 4096) = 27,179,089,920
// (H·D = 40·128 = 5120) from every layer global, to (12·16384 +
// 36·4096)/(48·16384) = 7/16 of it. At 8192, one chunk, nothing changes,
// nor in the forward core remat repeats.
func TestLlama4ChunkedFLOPs(t *testing.T) {
	s, _ := Lookup("llama4-maverick")
	if s.AttentionChunk != 8192 || s.ChunkedLayers() != 36 {
		t.Fatalf("llama4-maverick: chunk %d, %d chunked layers; want 8192 and 36 of 48", s.AttentionChunk, s.ChunkedLayers())
	}
	whole := s
	whole.AttentionChunk = 0
	for _, seq := range []int{32768, 20000, 8192} {
		attn := s.FLOPsPerToken(seq, true) - 6*float64(s.MatmulParams())
		if want := maxTextLlama4AttentionFLOPs(48, 40, 128, seq, 8192); math.Abs(attn-want) > 1e-9*want {
			t.Errorf("attention FLOPs a token at %d = %v, want MaxText's %v", seq, attn, want)
		}
	}
	if d := whole.FLOPsPerToken(32768, true) - s.FLOPsPerToken(32768, true); math.Abs(d-27179089920) > 1 {
		t.Errorf("FLOPs a token at 32768, every layer global less chunked = %v, want 27179089920", d)
	}
	if got, all := s.CausalAttentionFLOPsPerToken(32768), whole.CausalAttentionFLOPsPerToken(32768); math.Abs(got/all-7.0/16) > 1e-12 {
		t.Errorf("causal attention core at 32768: %v of every layer global's, want 7/16", got/all)
	}
	for _, causal := range []bool{true, false} {
		if a, b := s.FLOPsPerToken(8192, causal), whole.FLOPsPerToken(8192, causal); a != b {
			t.Errorf("FLOPs a token at 8192 (one chunk), causal %v: %v chunked, %v every layer global; want the same", causal, a, b)
		}
	}
	if a, b := s.AttentionFLOPsPerToken(8192), whole.AttentionFLOPsPerToken(8192); a != b {
		t.Errorf("attention core at 8192: %v chunked, %v global; want the same", a, b)
	}
}

// TestChunkRefusedWithOtherPatterns: a chunk beside a sliding window,
// linear attention or MTP layers is refused, naming the field.
func TestChunkRefusedWithOtherPatterns(t *testing.T) {
	g, _ := Lookup("gemma2-9b")
	g.AttentionChunk = 8192
	err := g.Validate()
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "attention_chunk_size" {
		t.Errorf("gemma2-9b with attention_chunk_size 8192: %v, want a FieldError on attention_chunk_size", err)
	}
	if s, _ := Lookup("llama4-maverick"); s.Validate() != nil {
		t.Errorf("llama4-maverick: %v, want valid", s.Validate())
	}
}
