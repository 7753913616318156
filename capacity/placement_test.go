package capacity

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"shardlab/hw"
)

func tpu(t *testing.T, name string) hw.Slice {
	t.Helper()
	s, err := hw.ParseTPU(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func reservation(t *testing.T, mode Mode, blocks int, holdback float64) Reservation {
	t.Helper()
	r, err := New(tpu(t, "tpu7x").Chip, mode, blocks, holdback)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestHierarchy: the TPU7x rows of [gke-ac], with the host size asked of hw.
func TestHierarchy(t *testing.T) {
	h, err := HierarchyOf(tpu(t, "tpu7x").Chip)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"host chips (hw)", h.Chip.Host.Chips, 4},  // [gke-ac]: 1 host = 4 chips
		{"sub-block chips", h.SubBlockChips(), 64}, // one 4x4x4 cube
		{"sub-block hosts", h.SubBlockHosts(), 16},
		{"sub-blocks per block", h.SubBlocksPerBlock, 144},
		{"block chips", h.BlockChips(), 9216},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

// TestNewRefuses: All Capacity on generations without it names the ones
// with it; zero blocks and bad holdbacks name the field and the range.
func TestNewRefuses(t *testing.T) {
	for _, c := range []struct {
		gen      string
		mode     Mode
		blocks   int
		holdback float64
		want     []string
	}{
		{"v5p", AllCapacity, 1, 0, []string{"mode", "all-capacity on v5p", "v6e or tpu7x"}},
		{"v5e", AllCapacity, 1, 0, []string{"v6e or tpu7x"}},
		{"v4", AllCapacity, 1, 0, []string{"v6e or tpu7x"}},
		{"tpu7x", AllCapacity, 0, 0, []string{"blocks 0", "1 to 64"}},
		{"tpu7x", Managed, 1, -0.1, []string{"holdback -0.1", "[0, 0.5]"}},
		{"tpu7x", AllCapacity, 1, 0.1, []string{"holdback 0.1", "no holdback"}},
		// review 140: the managed mode asked is named, with the generations
		// capacity simulates and what a managed reservation needs of them
		{"v5p", Managed, 1, 0, []string{"mode managed on v5p", "tpu7x and v6e reservations only, v6e with its sub-block and block sizes given", "a managed reservation", "sub-blocks and blocks"}},
	} {
		_, err := New(tpu(t, c.gen).Chip, c.mode, c.blocks, c.holdback)
		if err == nil {
			t.Errorf("New(%s, %s, %d, %g) = nil error", c.gen, c.mode, c.blocks, c.holdback)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("New(%s, %s, %d, %g) = %q, lacks %q", c.gen, c.mode, c.blocks, c.holdback, err, w)
			}
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("error spans lines: %q", err)
		}
	}
	if _, err := New(tpu(t, "v5p").Chip, AllCapacity, 1, 0); !errors.Is(err, ErrUnsupported) {
		t.Errorf("All Capacity on v5p: %v, want ErrUnsupported", err)
	}
	// managed mode stays on the generations simulated, v6e's sizes given
	for _, g := range []string{"tpu7x", "v6e"} {
		if err := CheckMode(tpu(t, g).Chip, Managed); err != nil {
			t.Errorf("CheckMode(%s, managed) = %v, want nil", g, err)
		}
	}
}

// TestPlace: hand-worked placements on one and two TPU7x blocks of 144
// sub-blocks.
func TestPlace(t *testing.T) {
	// tpu7x-256 is 128 chips, 4x4x8: 2 sub-blocks. 8 slices: 16 sub-blocks,
	// 144 - 16 = 128 spare.
	p, err := Place(reservation(t, AllCapacity, 1, 0), tpu(t, "tpu7x-256"), 8, 2)
	if err != nil {
		t.Fatal(err)
	}
	if p.SubBlocksPerSlice != 2 || p.Used != 16 || p.Spare != 128 || p.BlocksSpanned != 1 {
		t.Errorf("8 x tpu7x-256 on 1 block: per %d used %d spare %d blocks %d, want 2 16 128 1", p.SubBlocksPerSlice, p.Used, p.Spare, p.BlocksSpanned)
	}
	if got := p.Slices[7].SubBlocks; got[0] != 14 || got[1] != 15 {
		t.Errorf("slice 7 on sub-blocks %v, want [14 15]", got)
	}
	// 5 slices of 40 sub-blocks (tpu7x-5120 = 2,560 chips = 8x16x20) on two
	// blocks: 3 fit in a block (120, 24 left over), so the fourth and fifth
	// go to block 1: 200 used, 288 - 200 = 88 spare.
	s, err := hw.ParseTopology(tpu(t, "tpu7x").Chip, "8x16x20")
	if err != nil {
		t.Fatal(err)
	}
	p, err = Place(reservation(t, AllCapacity, 2, 0), s, 5, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Used != 200 || p.Spare != 88 || p.Slices[3].Block != 1 || p.Slices[3].SubBlocks[0] != 0 || p.BlocksSpanned != 2 {
		t.Errorf("5 x 8x16x20 on 2 blocks: used %d spare %d slice 3 at block %d sub-block %d, want 200 88 1 0", p.Used, p.Spare, p.Slices[3].Block, p.Slices[3].SubBlocks[0])
	}
	// ... and 7 do not fit: 3 per block, 6 on 2 blocks.
	if _, err := Place(reservation(t, AllCapacity, 2, 0), s, 7, 0); err == nil || !strings.Contains(err.Error(), "at most 6 slices") {
		t.Errorf("7 x 8x16x20 on 2 blocks: %v, want at most 6 slices", err)
	}
	// Managed with a 10 % holdback of 144: 15 held back (rounded up), 129
	// usable: 64 slices of 2 sub-blocks fit, 65 do not.
	p, err = Place(reservation(t, Managed, 1, 0.1), tpu(t, "tpu7x-256"), 64, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.HeldBack != 15 || p.Spare != 1 {
		t.Errorf("managed 10 %%: held %d spare %d, want 15 1", p.HeldBack, p.Spare)
	}
	if _, err := Place(reservation(t, Managed, 1, 0.1), tpu(t, "tpu7x-256"), 65, 0); err == nil {
		t.Errorf("65 slices of 2 with 15 held back: nil error")
	}
}

func TestPlaceRefuses(t *testing.T) {
	r := reservation(t, AllCapacity, 1, 0)
	big, err := hw.ParseTopology(tpu(t, "tpu7x").Chip, "16x24x24") // 9,216 chips: one whole block
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Place(r, big, 1, 0); err != nil {
		t.Errorf("a whole block: %v", err)
	}
	for _, c := range []struct {
		slice  hw.Slice
		n, spr int
		want   string
	}{
		// the smallest slice of whole sub-blocks: one 4x4x4 cube, 64 chips of
		// 2 TensorCores, tpu7x-128 by TPU7x's naming (hw)
		{tpu(t, "tpu7x-8"), 1, 0, "whole 4x4x4 sub-blocks (each dimension a multiple of 4), from tpu7x-128; tpu7x-8 is 4 chips, a sub-block 64"},
		{tpu(t, "tpu7x-2"), 1, 0, "whole 4x4x4 sub-blocks (each dimension a multiple of 4), from tpu7x-128; tpu7x-2 is 1 chip"},
		{big, 2, 0, "at most 1 slice of tpu7x-18432 (144 sub-blocks each, 1 to a block) on 1 block"},
		{tpu(t, "tpu7x-18432"), 1, 2, "spares 2: want at most 0: 1 slice x 144 sub-blocks leave 0 of 144 free"},
		{tpu(t, "tpu7x-256"), 8, 129, "spares 129: want at most 128"},
		{tpu(t, "tpu7x-256"), 8, -1, "spares -1"},
		{tpu(t, "tpu7x-256"), 0, 0, "slices 0"},
		{tpu(t, "v5p-128"), 1, 0, "a tpu7x slice"},
	} {
		if _, err := Place(r, c.slice, c.n, c.spr); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Place(%s, %d, %d) = %v, want %q", c.slice.AcceleratorType(), c.n, c.spr, err, c.want)
		}
	}
	// a slice larger than a block: 2 blocks' worth on a 2-block reservation
	// (hw refuses it as an accelerator type; build it directly)
	huge := hw.Slice{Chip: tpu(t, "tpu7x").Chip, Topology: hw.Topology{16, 24, 48}}
	if _, err := Place(reservation(t, AllCapacity, 2, 0), huge, 1, 0); err == nil || !strings.Contains(err.Error(), "at most one block") {
		t.Errorf("slice of 2 blocks: %v, want at most one block", err)
	}
	if _, err := Place(reservation(t, Managed, 1, 0.05), tpu(t, "tpu7x-256"), 1, 2); err == nil || !strings.Contains(err.Error(), "managed") {
		t.Errorf("spares in managed mode: %v", err)
	}
}

// TestUserHierarchy: v6e has All Capacity mode but no published block
// sizes; HierarchyOf says so, and the user's sizes place 2-D slices in
// whole 2-D sub-blocks, the source naming them the user's.
func TestUserHierarchy(t *testing.T) {
	chip := tpu(t, "v6e-256").Chip
	if _, err := HierarchyOf(chip); !errors.Is(err, ErrSizesNotPublished) {
		t.Fatalf("HierarchyOf(v6e) = %v, want ErrSizesNotPublished", err)
	}
	// the generations capacity simulates: tpu7x, whose sizes hw transcribes
	// ([gke-ac]), and v6e, which has All Capacity mode [ac-overview] but
	// whose sizes the user gives
	if _, err := HierarchyOf(tpu(t, "v5p-8").Chip); !errors.Is(err, ErrUnsupported) ||
		err.Error() != "capacity: generation v5p: want a generation capacity simulates: tpu7x and v6e reservations only, v6e with its sub-block and block sizes given" {
		t.Errorf("HierarchyOf(v5p) = %v, want ErrUnsupported naming what capacity simulates", err)
	}
	h, err := UserHierarchy(chip, 64, 1024)
	if err != nil {
		t.Fatal(err)
	}
	if h.SubBlock.String() != "8x8" || h.SubBlocksPerBlock != 16 || !strings.Contains(h.Sources[0], "the user's") {
		t.Errorf("UserHierarchy(v6e, 64, 1024) = %+v, want 16 sub-blocks of 8x8, sourced to the user", h)
	}
	r, err := NewIn(h, AllCapacity, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	// a v6e-256 (16x16) slice is 2 x 2 sub-blocks of 8x8: three fit a
	// 16-sub-block block with 4 left over
	pl, err := Place(r, tpu(t, "v6e-256"), 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Used != 12 {
		t.Errorf("3 x v6e-256 in 8x8 sub-blocks use %d sub-blocks, want 12", pl.Used)
	}
	if _, err := Place(r, tpu(t, "v6e-256"), 5, 0); err == nil {
		t.Error("5 x v6e-256 placed on 16 sub-blocks, want a refusal")
	}
	for _, c := range []struct{ sub, block int }{{48, 1024}, {64, 1000}, {64, 32}} {
		if _, err := UserHierarchy(chip, c.sub, c.block); err == nil {
			t.Errorf("UserHierarchy(v6e, %d, %d): no error", c.sub, c.block)
		}
	}
	if _, err := UserHierarchy(tpu(t, "v5p-8").Chip, 64, 1024); !errors.Is(err, ErrUnsupported) {
		t.Errorf("UserHierarchy(v5p) = %v, want ErrUnsupported", err)
	}
	// TPU7x's sizes are published (gke-ac: 4x4x4 sub-blocks, 144 to a
	// block): the user's do not replace them, even valid ones
	if h, err := UserHierarchy(tpu(t, "tpu7x-256").Chip, 128, 1024); err == nil || !strings.Contains(err.Error(), "published") {
		t.Errorf("UserHierarchy(tpu7x, 128, 1024) = %+v, %v; want a refusal naming the published sizes", h, err)
	}
}

// TestSubBlockHosts: a sub-block's hosts are those a slice of its shape
// is made of (hw.Slice.Hosts): v6e's 2x4 is two ct6e-standard-4t VMs and
// its 4x4 four, as training slices are costed; a v5e 2x4 (no All Capacity
// mode; built by hand) one ct5lp-hightpu-8t ([gcp-v5e]), not two of v5e's
// usual 4-chip VMs.
func TestSubBlockHosts(t *testing.T) {
	v6e := tpu(t, "v6e").Chip
	for _, c := range []struct{ sub, want int }{{8, 2}, {16, 4}} {
		h, err := UserHierarchy(v6e, c.sub, 64)
		if err != nil || h.SubBlockHosts() != c.want {
			t.Errorf("v6e sub-block of %d chips: %d hosts (%v), want %d", c.sub, h.SubBlockHosts(), err, c.want)
		}
	}
	v5e := tpu(t, "v5litepod-8")
	if got := (Hierarchy{Chip: v5e.Chip, SubBlock: v5e.Topology, SubBlocksPerBlock: 1}).SubBlockHosts(); got != 1 {
		t.Errorf("v5e 2x4 sub-block: %d hosts, want 1", got)
	}
}

// TestWholeSlices: the TPU7x slices Place takes are hw's catalog entries of
// whole 4x4x4 cubes: by hand from hw's TPU7x list, 1x1x1 to 2x4x4 are not,
// 4x4x4 (64 chips, tpu7x-128), 4x4x8, 4x4x12 and 4x8x8 come next, and the
// largest is one whole block, 144 cubes (9216 chips, tpu7x-18432).
func TestWholeSlices(t *testing.T) {
	h, err := HierarchyOf(tpu(t, "tpu7x").Chip)
	if err != nil {
		t.Fatal(err)
	}
	got := h.WholeSlices()
	want := []string{"tpu7x-128", "tpu7x-256", "tpu7x-384", "tpu7x-512"}
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) || got[len(got)-1] != "tpu7x-18432" {
		t.Fatalf("WholeSlices() = %v, want from %v to tpu7x-18432", got, want)
	}
	for _, a := range got {
		if _, err := h.SubBlocksPerSlice(tpu(t, a)); err != nil {
			t.Errorf("%s listed, but SubBlocksPerSlice refuses it: %v", a, err)
		}
	}
}
