package capacity

import (
	"fmt"
	"io"
	"strings"

	"shardlab/hw"
	"shardlab/unit"
)

// SlicePlace is where one slice of a multislice runs: a block and the
// sub-blocks (numbered within the block) it occupies.
type SlicePlace struct {
	Slice     int   `json:"slice"`
	Block     int   `json:"block"`
	SubBlocks []int `json:"sub_blocks"`
}

// Placement is a multislice laid on a reservation. A slice is whole
// sub-blocks (cubes) of one block, joined by ICI; the slices are joined by
// DCN, within a block or across blocks.
type Placement struct {
	Reservation Reservation  `json:"-"`
	Slice       hw.Slice     `json:"-"`
	Slices      []SlicePlace `json:"slices"`
	// SubBlocksPerSlice is the cubes one slice takes.
	SubBlocksPerSlice int `json:"sub_blocks_per_slice"`
	// Used is the sub-blocks the job occupies; HeldBack those managed mode
	// keeps back; Spare the rest, which All Capacity mode leaves to the user
	// to replace failed sub-blocks with.
	Used     int `json:"used_sub_blocks"`
	HeldBack int `json:"held_back_sub_blocks"`
	Spare    int `json:"spare_sub_blocks"`
	// Reserved is the spare sub-blocks the user set aside for the job in
	// All Capacity mode (part of Spare); the simulation swaps them in.
	Reserved int `json:"reserved_spare_sub_blocks"`
	// BlocksSpanned is how many blocks the job's slices lie in.
	BlocksSpanned int `json:"blocks_spanned"`
}

// Place lays n slices of s onto r, filling block after block; a slice never
// straddles two blocks. spares is the sub-blocks the user sets aside in All
// Capacity mode (0 in managed mode, where the holdback plays that part).
func Place(r Reservation, s hw.Slice, n, spares int) (Placement, error) {
	h := r.Hierarchy
	per, err := subBlocksPerSlice(h, s)
	if err != nil {
		return Placement{}, err
	}
	if n < 1 {
		return Placement{}, refuse("slices", fmt.Sprint(n), "at least 1")
	}
	if spares < 0 {
		return Placement{}, refuse("spares", fmt.Sprint(spares), "0 or more sub-blocks")
	}
	if r.Mode == Managed && spares != 0 {
		return Placement{}, refuse("spares", fmt.Sprint(spares), "0 in managed mode, where Compute Engine's holdback replaces failed hosts")
	}
	held := r.HeldBack()
	if most := maxSlices(r, per, held); n > most {
		why := fmt.Sprintf("at most %s of %s (%s each, %d to a block) on %s", unit.Plural(most, "slice"), s.AcceleratorType(),
			unit.Plural(per, "sub-block"), h.SubBlocksPerBlock/per, unit.Plural(r.Blocks, "block"))
		if held > 0 {
			why += fmt.Sprintf(" less %d held-back sub-blocks", held)
		}
		return Placement{}, refuse("slices", fmt.Sprint(n), "%s", why)
	}
	p := Placement{Reservation: r, Slice: s, SubBlocksPerSlice: per, Used: n * per, HeldBack: held}
	p.Spare = r.SubBlocks() - held - p.Used
	if spares > p.Spare {
		return Placement{}, refuse("spares", fmt.Sprint(spares),
			"at most %d: %s x %s leave %d of %d free", p.Spare, unit.Plural(n, "slice"), unit.Plural(per, "sub-block"), p.Spare, r.SubBlocks())
	}
	p.Reserved = spares
	p.Slices, p.BlocksSpanned = layOut(n, per, h.SubBlocksPerBlock)
	return p, nil
}

// SubBlocksPerSlice is the sub-blocks one slice of s takes in h, or why s
// is not whole sub-blocks of one block of h's generation (an *Error of
// field "slice"): the rule Place lays slices out by, which a front end
// checks before the slice count, as a slice that is no whole sub-blocks
// is refused whatever the count.
func (h Hierarchy) SubBlocksPerSlice(s hw.Slice) (int, error) { return subBlocksPerSlice(h, s) }

// WholeSlices is the accelerator types of h's generation (hw's catalog,
// smallest first) that are whole sub-blocks of one block of h: the slices
// Place lays out (SubBlocksPerSlice).
func (h Hierarchy) WholeSlices() []string {
	var out []string
	for _, a := range h.Chip.AcceleratorTypes() {
		s, err := hw.ParseAcceleratorType(a)
		if err != nil {
			continue
		}
		if _, err := subBlocksPerSlice(h, s); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// subBlocksPerSlice is SubBlocksPerSlice.
func subBlocksPerSlice(h Hierarchy, s hw.Slice) (int, error) {
	if s.Chip.Generation != h.Chip.Generation {
		return 0, refuse("slice", s.AcceleratorType(), "a %s slice for a %s reservation", h.Chip.Generation, h.Chip.Generation)
	}
	cube := h.SubBlock
	dims, sub := s.Topology.Dims(), cube.Dims()
	if len(dims) != len(sub) {
		return 0, refuse("slice", s.Topology.String(), "a %d-D topology of whole %s sub-blocks", len(sub), cube)
	}
	for i, d := range dims {
		if d%sub[i] != 0 {
			return 0, refuse("slice", s.Topology.String(),
				"whole %s sub-blocks (each dimension a multiple of %d), from %s; %s is %s, a sub-block %d", cube, sub[i], h.Chip.AcceleratorType(cube.Chips()), s.AcceleratorType(), unit.Plural(s.Chips(), "chip"), cube.Chips())
		}
	}
	per := s.Chips() / cube.Chips()
	if per > h.SubBlocksPerBlock {
		return 0, refuse("slice", s.AcceleratorType(), "at most one block: %d sub-blocks (%d chips), not %d", h.SubBlocksPerBlock, h.BlockChips(), per)
	}
	return per, nil
}

// maxSlices is how many slices of per sub-blocks fit on r, block by block,
// once held sub-blocks are kept back (in managed mode the holdback comes
// off the last blocks' capacity).
func maxSlices(r Reservation, per, held int) int {
	most := 0
	for b, left := 0, r.SubBlocks()-held; b < r.Blocks && left > 0; b++ {
		inBlock := min(left, r.Hierarchy.SubBlocksPerBlock)
		most += inBlock / per
		left -= inBlock
	}
	return most
}

// layOut places n slices of per sub-blocks block after block, a new block
// when the slice would straddle the end of this one; it returns the places
// and the blocks spanned.
func layOut(n, per, subBlocksPerBlock int) ([]SlicePlace, int) {
	var places []SlicePlace
	b, next := 0, 0
	for i := range n {
		if next+per > subBlocksPerBlock {
			b, next = b+1, 0
		}
		sp := SlicePlace{Slice: i, Block: b}
		for j := range per {
			sp.SubBlocks = append(sp.SubBlocks, next+j)
		}
		next += per
		places = append(places, sp)
	}
	return places, b + 1
}

// WriteText prints the map: block -> sub-blocks -> slice, and the spares.
func (p Placement) WriteText(w io.Writer) error {
	var b strings.Builder
	r := p.Reservation
	fmt.Fprintf(&b, "reservation: %s of %s (%s, %d chips, %s each), %d chips, %s mode\n",
		unit.Plural(r.Blocks, "block"), unit.Plural(r.Hierarchy.SubBlocksPerBlock, "sub-block"), r.Hierarchy.SubBlock,
		r.Hierarchy.SubBlockChips(), unit.Plural(r.Hierarchy.SubBlockHosts(), "host"), r.Chips(), r.Mode)
	fmt.Fprintf(&b, "job: %d x %s (%s, %s each), %s over %s, DCN between slices\n",
		len(p.Slices), p.Slice.AcceleratorType(), p.Slice.Topology, unit.Plural(p.SubBlocksPerSlice, "sub-block"),
		unit.Plural(len(p.Slices), "slice"), unit.Plural(p.BlocksSpanned, "block"))
	for _, sp := range p.Slices {
		fmt.Fprintf(&b, "  block %d sub-blocks %s: slice %d\n", sp.Block, span(sp.SubBlocks), sp.Slice)
	}
	if p.HeldBack > 0 {
		fmt.Fprintf(&b, "held back by Compute Engine: %s (%.1f %%, an assumption: the docs publish no holdback)\n", unit.Plural(p.HeldBack, "sub-block"), 100*r.Holdback)
	}
	fmt.Fprintf(&b, "spare: %s, %d of them set aside for this job\n", unit.Plural(p.Spare, "sub-block"), p.Reserved)
	_, err := io.WriteString(w, b.String())
	return err
}

func span(s []int) string {
	if len(s) == 1 {
		return fmt.Sprint(s[0])
	}
	return fmt.Sprintf("%d-%d", s[0], s[len(s)-1])
}
