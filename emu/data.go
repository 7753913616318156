package emu

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
)

// Source yields training sequences: seqs rows of seqLen+1 token ids (the
// inputs and, shifted by one, the targets) for a step.
type Source interface {
	Batch(step, seqs, seqLen int) [][]int
	Vocab() int
	// Name describes the source for people; Identity names its content
	// and seed (what checkpoints compare), not where it was read from.
	Name() string
	Identity() string
}

// Bytes is a byte-level tokenizer over a text corpus (vocabulary 256):
// each step samples sequence start offsets with a generator seeded by the
// seed and the step, so every layout sees the same batches.
type Bytes struct {
	Text []byte
	Seed uint64
	Desc string
}

// Vocab is 256.
func (b *Bytes) Vocab() int { return 256 }

// Name describes the corpus.
func (b *Bytes) Name() string { return b.Desc }

// Identity is the text's length and SHA-256, and the seed.
func (b *Bytes) Identity() string {
	sum := sha256.Sum256(b.Text)
	return fmt.Sprintf("text of %d bytes, sha256 %x, seed %d", len(b.Text), sum[:12], b.Seed)
}

// Batch samples seqs windows of seqLen+1 bytes.
func (b *Bytes) Batch(step, seqs, seqLen int) [][]int {
	rng := rand.New(rand.NewPCG(b.Seed, uint64(step)))
	out := make([][]int, seqs)
	for i := range out {
		o := rng.IntN(len(b.Text) - seqLen)
		row := make([]int, seqLen+1)
		for j := range row {
			row[j] = int(b.Text[o+j])
		}
		out[i] = row
	}
	return out
}

// NewBytes checks that the corpus is long enough for seqLen.
func NewBytes(text []byte, seed uint64, desc string, seqLen int) (*Bytes, error) {
	if len(text) < 2*(seqLen+1) {
		return nil, fmt.Errorf("emu: corpus %s has %d bytes, want at least %d for sequences of %d: %w", desc, len(text), 2*(seqLen+1), seqLen, ErrInvalid)
	}
	return &Bytes{Text: text, Seed: seed, Desc: desc}, nil
}

// Synthetic is a learnable random source: each sequence counts up from a
// random start modulo the vocabulary, with one token in eight random.
type Synthetic struct {
	V    int
	Seed uint64
}

// Vocab is the vocabulary size.
func (s *Synthetic) Vocab() int { return s.V }

// Name describes the source.
func (s *Synthetic) Name() string { return fmt.Sprintf("synthetic (vocab %d)", s.V) }

// Identity is the vocabulary and the seed.
func (s *Synthetic) Identity() string {
	return fmt.Sprintf("synthetic, vocab %d, seed %d", s.V, s.Seed)
}

// Batch draws the sequences.
func (s *Synthetic) Batch(step, seqs, seqLen int) [][]int {
	rng := rand.New(rand.NewPCG(s.Seed, uint64(step)))
	out := make([][]int, seqs)
	for i := range out {
		row := make([]int, seqLen+1)
		t := rng.IntN(s.V)
		for j := range row {
			if rng.IntN(8) == 0 {
				row[j] = rng.IntN(s.V)
			} else {
				row[j] = t
			}
			t = (t + 1) % s.V
		}
		out[i] = row
	}
	return out
}
