package model

import (
	"errors"
	"testing"
)

// TestBlockMoELayers counts the MoE layers of a scanned block as
// MaxText's llama4 block makes them (layers/llama4.py @9ca35d7e,
// determine_is_moe_layer: layer_id + 1 a multiple of
// interleave_moe_layer_step): Maverick (step 2) layers 1 and 3 of 0-3,
// Scout (step 1) all four; Qwen 3.5's qwen3_5 block (models/qwen3_5.py
// @e591f30c: every Qwen3_5DecoderLayer holds a Qwen3_5SparseMoEBlock) all
// four.
func TestBlockMoELayers(t *testing.T) {
	maverick, ok := Lookup("llama4-maverick")
	if !ok {
		t.Fatal("no llama4-maverick")
	}
	qwen, ok := Lookup("qwen3.5-397b-a17b")
	if !ok {
		t.Fatal("no qwen3.5-397b-a17b")
	}
	scout := maverick
	scout.Name, scout.MoEEvery, scout.Experts, scout.DFF = "scout-like", 0, 16, 8192
	unscanned := maverick
	unscanned.ScanBlock = 0
	dense := catalog[0]
	for _, c := range []struct {
		spec      Spec
		layers    int
		moeLayers int
	}{
		{maverick, 4, 2},
		{scout, 4, 4},
		{qwen, 4, 4},
		{unscanned, 1, 1}, // a unit of one layer counts its largest
		{dense, 1, 0},
	} {
		if err := c.spec.Validate(); err != nil {
			t.Fatalf("%s: %v", c.spec.Name, err)
		}
		if got := c.spec.BlockLayers(); got != c.layers {
			t.Errorf("%s: BlockLayers() = %d, want %d", c.spec.Name, got, c.layers)
		}
		if got := c.spec.BlockMoELayers(); got != c.moeLayers {
			t.Errorf("%s: BlockMoELayers() = %d, want %d", c.spec.Name, got, c.moeLayers)
		}
	}
}

// TestValidateBlock: scan_block divides the layers, starts every block
// alike and repeats each interleaved pattern (Maverick: MoE every 2,
// NoPE every 4, so MaxText's lcm 4 or a multiple of it).
func TestValidateBlock(t *testing.T) {
	maverick, _ := Lookup("llama4-maverick")
	for _, c := range []struct {
		scanBlock, firstDense, moeEvery int
		ok                              bool
	}{
		{4, 0, 2, true},
		{8, 0, 2, true},
		{0, 0, 2, true},
		{1, 0, 2, true},
		{2, 0, 2, false}, // the NoPE layer comes every 4
		{6, 0, 2, false}, // neither
		{5, 0, 2, false}, // does not divide 48
		{-4, 0, 2, false},
		{96, 0, 2, false},
		{4, 1, 1, false}, // dense first layers: blocks would differ
	} {
		s := maverick
		s.ScanBlock, s.FirstDenseLayers, s.MoEEvery = c.scanBlock, c.firstDense, c.moeEvery
		err := s.Validate()
		var fe *FieldError
		switch {
		case c.ok && err != nil:
			t.Errorf("scan_block %d, first_dense_layers %d: %v, want valid", c.scanBlock, c.firstDense, err)
		case !c.ok && (!errors.As(err, &fe) || fe.Field != "scan_block"):
			t.Errorf("scan_block %d, first_dense_layers %d: %v, want a scan_block error", c.scanBlock, c.firstDense, err)
		}
	}
}

// TestMTPLayerUnscanned: a multi-token prediction module's one decoder
// layer is no scanned block.
func TestMTPLayerUnscanned(t *testing.T) {
	s := Spec{Name: "m", Layers: 4, DModel: 64, Heads: 4, DFF: 128, Vocab: 100, SeqLen: 32, Experts: 4, ExpertsPerToken: 1, MoEEvery: 2, ScanBlock: 2, MTPLayers: 1}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if l := s.MTPLayer(); l.ScanBlock != 0 || l.BlockLayers() != 1 {
		t.Errorf("MTPLayer().ScanBlock = %d, want 0", l.ScanBlock)
	}
}
