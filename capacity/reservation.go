// Package capacity places a training plan's slices on a Cloud TPU
// reservation (managed capacity or All Capacity mode), simulates host
// failures, repairs, planned maintenance and checkpoints over a horizon with
// a seeded discrete-event simulation, and reports goodput and badput in the
// ML Goodput library's categories.
//
// Sources:
//
//	[ac-overview] https://docs.cloud.google.com/tpu/docs/all-capacity-overview
//	[ac-modes]    https://docs.cloud.google.com/tpu/docs/capacity-modes
//	[ac-maint]    https://docs.cloud.google.com/tpu/docs/all-capacity-maintenance-events
//	[gke-ac]      https://docs.cloud.google.com/kubernetes-engine/docs/how-to/tpu-all-capacity-mode
package capacity

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"shardlab/hw"
	"shardlab/internal/enum"
)

// Mode is a reservation's capacity mode [ac-modes].
type Mode int

const (
	// Managed: Compute Engine holds back part of the reservation, replaces
	// faulty hosts and restarts slices itself, and schedules maintenance.
	Managed Mode = iota
	// AllCapacity: the whole reservation, no holdback; the user keeps spares
	// and chooses when and at what granularity maintenance runs.
	AllCapacity
)

var modeNames = enum.New[Mode]("Mode", []string{Managed: "managed", AllCapacity: "all-capacity"})

func (m Mode) String() string { return modeNames.String(m) }

// MarshalText writes the name, so JSON says "all-capacity".
func (m Mode) MarshalText() ([]byte, error) {
	if !modeNames.Valid(m) {
		return nil, fmt.Errorf("capacity: mode %d, want managed or all-capacity", int(m))
	}
	return []byte(m.String()), nil
}

// Modes lists the accepted mode names.
func Modes() []string { return modeNames.List() }

// ErrUnsupported is wrapped by errors for a generation or mode the
// reservation model does not cover.
var ErrUnsupported = errors.New("not supported")

// Error is bad input to the package: the field, the value and what is
// accepted.
type Error struct {
	Field, Value, Want string
	Err                error // ErrUnsupported, or nil
}

func (e *Error) Error() string {
	return fmt.Sprintf("capacity: %s %s: want %s", e.Field, e.Value, e.Want)
}

func (e *Error) Unwrap() error { return e.Err }

func refuse(field, value, format string, a ...any) *Error {
	return &Error{Field: field, Value: value, Want: fmt.Sprintf(format, a...)}
}

// Hierarchy is the physical topology of one generation's capacity below a
// cluster: hosts form a sub-block, sub-blocks form a block [ac-overview].
// A reservation in All Capacity mode lies within one cluster.
type Hierarchy struct {
	Chip hw.Chip
	// SubBlock is the ICI shape of one sub-block: a TPU7x cube.
	SubBlock hw.Topology
	// SubBlocksPerBlock is the sub-blocks one block holds.
	SubBlocksPerBlock int
	Sources           []string
}

// ErrSizesNotPublished is wrapped by HierarchyOf's error for a generation
// that has All Capacity mode but whose block and sub-block sizes Google
// does not publish (v6e): the caller may give them (UserHierarchy).
var ErrSizesNotPublished = errors.New("block and sub-block sizes not published")

// HierarchyOf returns the hierarchy of chip's generation.
func HierarchyOf(chip hw.Chip) (Hierarchy, error) {
	h, ok := hw.CapacityTopologyOf(chip.Generation)
	if !ok {
		if hasAllCapacity(chip.Generation) {
			return Hierarchy{}, &Error{Field: "generation", Value: string(chip.Generation),
				Want: "its sub-block and block sizes given, which Google's public docs do not state for " + string(chip.Generation) + " (tpu7x's are transcribed)", Err: ErrSizesNotPublished}
		}
		return Hierarchy{}, &Error{Field: "generation", Value: string(chip.Generation),
			Want: "a generation capacity simulates: " + Simulated(), Err: ErrUnsupported}
	}
	return Hierarchy{Chip: chip, SubBlock: h.SubBlock, SubBlocksPerBlock: h.SubBlocksPerBlock, Sources: []string{h.Source}}, nil
}

// UserHierarchy is a hierarchy whose sizes the user gives, for a
// generation with All Capacity mode whose sizes Google does not publish
// (v6e [ac-overview]'s table stops after its host row): a sub-block of
// subBlockChips chips, shaped as the generation's slice of that many chips,
// and blocks of blockChips chips, a whole number of sub-blocks. Its source
// says the sizes are the user's. A generation whose sizes are published
// (TPU7x [gke-ac]) is refused: the user's would replace cited figures.
func UserHierarchy(chip hw.Chip, subBlockChips, blockChips int) (Hierarchy, error) {
	if !hasAllCapacity(chip.Generation) {
		return Hierarchy{}, &Error{Field: "generation", Value: string(chip.Generation), Want: "a generation with All Capacity mode (v6e or tpu7x)", Err: ErrUnsupported}
	}
	if pub, err := HierarchyOf(chip); err == nil {
		return Hierarchy{}, refuse("generation", string(chip.Generation), "one whose sizes Google's public docs do not state (v6e) for sizes of the user's; %s's are published: %s",
			chip.Generation, pub.Sizes())
	}
	s, err := hw.ParseAcceleratorType(chip.AcceleratorType(subBlockChips))
	if err != nil || s.Chips() != subBlockChips {
		return Hierarchy{}, refuse("sub-block chips", fmt.Sprint(subBlockChips), "the chips of a %s slice (%s)", chip.Generation, strings.Join(chip.AcceleratorTypes(), ", "))
	}
	if blockChips < subBlockChips || blockChips%subBlockChips != 0 || blockChips/subBlockChips > 1<<16 {
		return Hierarchy{}, refuse("block chips", fmt.Sprint(blockChips), "a whole number of %d-chip sub-blocks, at most %d of them", subBlockChips, 1<<16)
	}
	return Hierarchy{Chip: chip, SubBlock: s.Topology, SubBlocksPerBlock: blockChips / subBlockChips,
		Sources: []string{fmt.Sprintf("the user's: a sub-block of %d chips (%s) and a block of %d chips; Google's public docs do not state %s's", subBlockChips, s.Topology, blockChips, chip.Generation)}}, nil
}

// Sizes spells the hierarchy's sizes: "sub-blocks of 4x4x4 (64 chips),
// 144 to a block (9216 chips)".
func (h Hierarchy) Sizes() string {
	return fmt.Sprintf("sub-blocks of %s (%d chips), %d to a block (%d chips)", h.SubBlock, h.SubBlockChips(), h.SubBlocksPerBlock, h.BlockChips())
}

// SubBlockChips is the chips in one sub-block.
func (h Hierarchy) SubBlockChips() int { return h.SubBlock.Chips() }

// SubBlockHosts is the hosts in one sub-block, as a slice of its shape is
// made of them (hw.Slice.Hosts: a v5e 2x4 sub-block is one 8-chip VM).
func (h Hierarchy) SubBlockHosts() int { return hw.Slice{Chip: h.Chip, Topology: h.SubBlock}.Hosts() }

// BlockChips is the chips in one block.
func (h Hierarchy) BlockChips() int { return h.SubBlockChips() * h.SubBlocksPerBlock }

// MaxBlocks bounds a reservation: 64 blocks (589,824 TPU7x chips) is far
// above any published cluster and keeps every count an int.
const MaxBlocks = 64

// Reservation is a number of whole blocks of one generation in one
// cluster, in one capacity mode.
type Reservation struct {
	Hierarchy Hierarchy
	Mode      Mode
	Blocks    int
	// Holdback is the fraction of sub-blocks Compute Engine keeps back in
	// managed mode to replace faulty ones. The docs publish no figure
	// [ac-modes]; it is the caller's assumption. 0 in All Capacity mode.
	Holdback float64
}

// New checks a reservation of chip's generation's published hierarchy
// (HierarchyOf); NewIn the same in a given one.
func New(chip hw.Chip, mode Mode, blocks int, holdback float64) (Reservation, error) {
	if err := CheckMode(chip, mode); err != nil {
		return Reservation{}, err
	}
	h, err := HierarchyOf(chip)
	if err != nil {
		return Reservation{}, err
	}
	return newIn(h, mode, blocks, holdback)
}

// NewIn checks a reservation in h: the mode must exist on the generation,
// there must be 1 to MaxBlocks blocks, and a managed holdback lies in [0,
// 0.5].
func NewIn(h Hierarchy, mode Mode, blocks int, holdback float64) (Reservation, error) {
	if err := CheckMode(h.Chip, mode); err != nil {
		return Reservation{}, err
	}
	return newIn(h, mode, blocks, holdback)
}

// newIn is NewIn with the mode already checked.
func newIn(h Hierarchy, mode Mode, blocks int, holdback float64) (Reservation, error) {
	if blocks < 1 || blocks > MaxBlocks {
		return Reservation{}, refuse("blocks", fmt.Sprint(blocks), "1 to %d", MaxBlocks)
	}
	if math.IsNaN(holdback) || holdback < 0 || holdback > 0.5 {
		return Reservation{}, refuse("holdback", fmt.Sprint(holdback), "a fraction in [0, 0.5]")
	}
	if mode == AllCapacity && holdback != 0 {
		return Reservation{}, refuse("holdback", fmt.Sprint(holdback), "0 in all-capacity mode, which has no holdback")
	}
	return Reservation{Hierarchy: h, Mode: mode, Blocks: blocks, Holdback: holdback}, nil
}

// Simulated says which reservations the package simulates: those of the
// generations with capacity modes (hw.AllCapacityGenerations, v6e and
// later [ac-overview]), whose slices it places on sub-blocks and blocks;
// it has their sizes where hw transcribes them (tpu7x), and takes them
// from the user for the others (v6e, UserHierarchy).
func Simulated() string {
	var all, given []string
	for _, g := range hw.AllCapacityGenerations() {
		if _, ok := hw.CapacityTopologyOf(g); ok {
			all = append([]string{string(g)}, all...) // the published first
		} else {
			all, given = append(all, string(g)), append(given, string(g))
		}
	}
	s := strings.Join(all, " and ") + " reservations only"
	if len(given) > 0 {
		s += ", " + strings.Join(given, " and ") + " with its sub-block and block sizes given"
	}
	return s
}

// CheckMode refuses a mode that does not exist, or not on chip's
// generation: All Capacity mode where the generation has none, and
// managed mode on a generation capacity does not simulate (Simulated),
// since a managed reservation is placed, as an All Capacity one is, on
// whole sub-blocks and blocks, and held back by sub-blocks [ac-modes].
func CheckMode(chip hw.Chip, mode Mode) error {
	if mode == Managed && !hasAllCapacity(chip.Generation) {
		return &Error{Field: "mode", Value: "managed on " + string(chip.Generation),
			Want: "a generation capacity simulates: " + Simulated() + "; a managed reservation, like an All Capacity one, is simulated on whole sub-blocks and blocks " +
				"(Compute Engine holds sub-blocks back to replace faulty hosts), whose sizes capacity has for no other generation", Err: ErrUnsupported}
	}
	if mode == AllCapacity && !hasAllCapacity(chip.Generation) {
		names := make([]string, len(hw.AllCapacityGenerations()))
		for i, g := range hw.AllCapacityGenerations() {
			names[i] = string(g)
		}
		return &Error{Field: "mode", Value: "all-capacity on " + string(chip.Generation),
			Want: "a generation that has All Capacity mode: " + strings.Join(names, " or "), Err: ErrUnsupported}
	}
	if mode != Managed && mode != AllCapacity {
		return refuse("mode", fmt.Sprint(int(mode)), "managed or all-capacity")
	}
	return nil
}

func hasAllCapacity(g hw.Generation) bool {
	for _, a := range hw.AllCapacityGenerations() {
		if a == g {
			return true
		}
	}
	return false
}

// SubBlocks is the sub-blocks in the reservation.
func (r Reservation) SubBlocks() int { return r.Blocks * r.Hierarchy.SubBlocksPerBlock }

// Chips is the chips in the reservation.
func (r Reservation) Chips() int { return r.SubBlocks() * r.Hierarchy.SubBlockChips() }

// HeldBack is the sub-blocks managed mode keeps back (rounded up).
func (r Reservation) HeldBack() int {
	if r.Mode != Managed {
		return 0
	}
	return int(math.Ceil(r.Holdback*float64(r.SubBlocks()) - 1e-9))
}

// ParseMode reads a mode name, in any case: managed or all-capacity
// (all_capacity and allcapacity are accepted too).
func ParseMode(s string) (Mode, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	v = strings.NewReplacer("_", "-", " ", "-").Replace(v)
	if v == "allcapacity" {
		v = "all-capacity"
	}
	if m, ok := modeNames.Lookup(v); ok {
		return m, nil
	}
	return 0, refuse("mode", fmt.Sprintf("%q", s), "managed or all-capacity")
}
