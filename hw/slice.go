package hw

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"shardlab/unit"
)

// Sentinel errors carried by ParseError, for callers that branch.
var (
	ErrUnknownGeneration = errors.New("unknown TPU generation")
	ErrBadCount          = errors.New("no slice of this size")
	ErrBadTopology       = errors.New("not a valid topology")
	ErrPartialHost       = errors.New("slices are built from whole hosts")
	ErrNoMultislice      = errors.New("does not join a Multislice")
)

// ParseError reports an accelerator type, topology or generation that could
// not be parsed. Valid says what is accepted.
type ParseError struct {
	Input string
	Field string // "generation", "count", "topology", "slices"
	Err   error
	Valid string
}

func (e *ParseError) Error() string {
	msg := fmt.Sprintf("hw: %s %q: %v", e.Field, e.Input, e.Err)
	if e.Valid != "" {
		msg += "; valid: " + e.Valid
	}
	return msg
}

func (e *ParseError) Unwrap() error { return e.Err }

// ValidGenerations lists the accelerator-type prefixes Lookup accepts.
const ValidGenerations = "v2, v3, v4, v5p, v5litepod (or v5e), v6e, tpu7x"

// Topology is the shape of a slice's ICI mesh in chips: 2 or 3 dimensions.
// Unused dimensions are 0.
type Topology [3]int

// Rank is the number of dimensions (2 or 3).
func (t Topology) Rank() int {
	if t[2] == 0 {
		return 2
	}
	return 3
}

// Dims returns the dimensions in use.
func (t Topology) Dims() []int { return append([]int(nil), t[:t.Rank()]...) }

// Chips is the product of the dimensions.
func (t Topology) Chips() int {
	n := 1
	for _, d := range t[:t.Rank()] { // not Dims: the planner asks this per layout, and Dims copies
		n *= d
	}
	return n
}

func (t Topology) String() string {
	parts := make([]string, 0, 3)
	for _, d := range t.Dims() {
		parts = append(parts, strconv.Itoa(d))
	}
	return strings.Join(parts, "x")
}

// parseDims reads "AxB" or "AxBxC" with positive integers.
func parseDims(s string) (Topology, bool) {
	parts := strings.Split(s, "x")
	if len(parts) < 2 || len(parts) > 3 {
		return Topology{}, false
	}
	var t Topology
	for i, p := range parts {
		if p == "" || strings.TrimLeft(p, "0123456789") != "" || len(p) > 6 {
			return Topology{}, false
		}
		d, err := strconv.Atoi(p)
		if err != nil || d <= 0 {
			return Topology{}, false
		}
		t[i] = d
	}
	return t, true
}

// Slice is a set of chips of one generation joined by ICI into a mesh or
// torus of the given topology, built from whole hosts.
type Slice struct {
	Chip     Chip
	Topology Topology
}

// Chips is the number of chips in the slice.
func (s Slice) Chips() int { return s.Topology.Chips() }

// Host is the VM the slice is made of: the chip's SliceHosts entry of
// exactly the slice's chips (v5e's 2x4 is one ct5lp-hightpu-8t), else the
// chip's Host. A slice with no topology gets the chip's Host.
func (s Slice) Host() Host { return s.Chip.sliceHost(s.Chips()) }

// sliceHost is the VM a slice of n chips is made of (Slice.Host).
func (c Chip) sliceHost(n int) Host {
	for _, h := range c.SliceHosts {
		if h.Chips == n {
			return h
		}
	}
	return c.Host
}

// Hosts is the number of VMs in the slice.
func (s Slice) Hosts() int {
	return max(1, s.Chips()/s.Host().Chips)
}

// WholeHosts reports whether the slice is made of whole VMs the catalog
// sells (Host): v5litepod-1 is one whole ct5lp-hightpu-1t, v6e-1 one
// ct6e-standard-1t and v5litepod-4 one ct5lp-hightpu-4t, while a 2-chip
// tpu7x would be half a tpu7x-standard-4t. A slice with no topology is
// not.
func (s Slice) WholeHosts() bool { return s.Chip.wholeHosts(s.Chips()) }

// wholeHosts is WholeHosts for a slice of n chips, which the parsers ask
// before they have a topology.
func (c Chip) wholeHosts(n int) bool { return n > 0 && n%c.sliceHost(n).Chips == 0 }

// HostSlice is the slice of one of the generation's usual VMs (Host):
// what a generation alone names where one VM is meant (serving, the
// emulator's run): tpu7x-8, v5p-8, v5litepod-4, v6e-4. Smaller whole VMs
// (v5e's 1-chip ct5lp-hightpu-1t) and larger ones (v5e's 8-chip
// ct5lp-hightpu-8t) are named by their accelerator types.
func (c Chip) HostSlice() (Slice, error) {
	return ParseAcceleratorType(c.AcceleratorType(c.Host.Chips))
}

// DCNPerHost is the catalog's data-center network bandwidth of one of the
// slice's VMs (Host): its chips' shares.
func (s Slice) DCNPerHost() unit.BytesPerSecond {
	return s.Chip.DCNPerChip * unit.BytesPerSecond(s.Host().Chips)
}

// HostRAMPerChip is the host memory one chip's offloaded buffers may
// fill: its share of the RAM of the VM the slice is made of (Host's RAM
// over its chips; every chip of a VM offloads the same), 0 where the
// catalog has no RAM for that VM. MaxText offloads remat-policy tensors
// to JAX's pinned_host memory (offload_dst="pinned_host",
// src/maxtext/layers/decoders.py @e591f30c), which is that RAM. The
// operating system, the runtime and the input pipeline take some of it
// too, so a job over this surely cannot run and one near it may not.
func (s Slice) HostRAMPerChip() unit.Bytes {
	h := s.Host()
	if h.RAM == 0 || h.Chips == 0 {
		return 0
	}
	return h.RAM / unit.Bytes(h.Chips)
}

// AcceleratorType spells the slice as Cloud TPU does ("v5p-128").
func (s Slice) AcceleratorType() string { return s.Chip.AcceleratorType(s.Chips()) }

// Wraps reports whether dimension i of the topology has wraparound links.
//
// v4, v5p and tpu7x: slices made of whole 4x4x4 cubes are tori, smaller ones
// are meshes ([mt-spec] wrap flags; [gcp-v5p]). v5e and v6e: an axis wraps
// when it spans the 16-chip side of the pod ([mt-spec]: 8x16 wraps on its
// long axis only). v2 and v3 are assumed to follow the same pod-side rule.
func (s Slice) Wraps(i int) bool {
	dims := s.Topology[:s.Topology.Rank()] // not Dims, which copies: a search places a mesh per layout
	if i < 0 || i >= len(dims) {
		return false
	}
	if s.Chip.TorusDims == 3 {
		for _, d := range dims {
			if d < 4 || d%4 != 0 {
				return false
			}
		}
		return true
	}
	side := 0
	switch s.Chip.Generation {
	case V2, V5e, V6e:
		side = 16
	case V3:
		side = 32
	}
	return dims[i] == side
}

// defaultTopologies is the generation's accelerator types' topologies in
// chip order (the catalog's defaultTopologies, parsed once: slices are
// parsed per request and per planned configuration). Callers read it and
// never write to it.
func (c Chip) defaultTopologies() []Topology {
	return parsedTopologies()[c.Generation]
}

var parsedTopologies = sync.OnceValue(func() map[Generation][]Topology {
	out := make(map[Generation][]Topology, len(defaultTopologies))
	for g, list := range defaultTopologies {
		for _, f := range strings.Fields(list) {
			t, ok := parseDims(f)
			if !ok {
				panic("hw: bad topology in catalog: " + f)
			}
			out[g] = append(out[g], t)
		}
	}
	return out
})

// AcceleratorTypes lists the accelerator types of the generation, smallest
// first.
func (c Chip) AcceleratorTypes() []string {
	var out []string
	for _, t := range c.defaultTopologies() {
		out = append(out, c.AcceleratorType(t.Chips()))
	}
	return out
}

// SliceSizes is the chips of every slice any of gens has
// (AcceleratorTypes), each once, smallest first.
func SliceSizes(gens ...Generation) ([]int, error) {
	var out []int
	for _, g := range gens {
		c, err := Lookup(string(g))
		if err != nil {
			return nil, err
		}
		for _, t := range c.defaultTopologies() {
			out = append(out, t.Chips())
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// vmsSold names the chip's VMs with their chips, smaller ones (SliceHosts
// of fewer chips than Host) first: "tpu7x-standard-1t of 1 chip or
// tpu7x-standard-4t of 4 chips".
func (c Chip) vmsSold() string {
	var vms []string
	for _, h := range append(slices.Clone(c.SliceHosts), c.Host) {
		if h.Chips <= c.Host.Chips {
			vms = append(vms, h.MachineType+" of "+unit.Plural(h.Chips, "chip"))
		}
	}
	return strings.Join(vms, " or ")
}

func (c Chip) validCounts() string {
	names := c.AcceleratorTypes()
	if len(names) > 12 {
		names = append(names[:10:10], "…", names[len(names)-1])
	}
	return strings.Join(names, ", ")
}

// NewSlice validates a topology for the chip: one of the generation's listed
// shapes, or (3D generations) any AxBxC of multiples of 4 up to the largest
// slice, as Cloud TPU accepts for custom topologies.
func NewSlice(c Chip, t Topology) (Slice, error) {
	bad := &ParseError{Input: t.String(), Field: "topology", Err: ErrBadTopology}
	if t.Rank() != c.TorusDims {
		bad.Valid = fmt.Sprintf("%d dimensions for %s, e.g. %s", c.TorusDims, c.Generation, c.defaultTopologies()[0])
		return Slice{}, bad
	}
	for _, d := range t.Dims() {
		if d <= 0 {
			bad.Valid = "positive dimensions"
			return Slice{}, bad
		}
	}
	if c.Generation == TPU7x && !c.wholeHosts(t.Chips()) {
		return Slice{}, &ParseError{Input: t.String(), Field: "topology", Err: ErrPartialHost,
			Valid: "TPU7x slices are whole VMs: " + c.vmsSold() + ", so 1x1x1 or from 2x2x1"}
	}
	for _, d := range c.defaultTopologies() {
		if sameShape(d, t) {
			return Slice{Chip: c, Topology: t}, nil
		}
	}
	if c.TorusDims == 3 && t.Chips() <= c.MaxSliceChips {
		ok := true
		for _, d := range t.Dims() {
			ok = ok && d%4 == 0
		}
		if ok {
			return Slice{Chip: c, Topology: t}, nil
		}
	}
	if c.TorusDims == 3 {
		bad.Valid = fmt.Sprintf("2x2x1, 2x2x2, 2x2x4, 2x4x4 or AxBxC with each a multiple of 4 and at most %d chips", c.MaxSliceChips)
	} else {
		var s []string
		for _, d := range c.defaultTopologies() {
			s = append(s, d.String())
		}
		bad.Valid = strings.Join(s, ", ")
	}
	return Slice{}, bad
}

func sameShape(a, b Topology) bool {
	x, y := a.Dims(), b.Dims()
	if len(x) != len(y) {
		return false
	}
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// ParseTopology parses "AxB" or "AxBxC" for the chip.
func ParseTopology(c Chip, s string) (Slice, error) {
	t, ok := parseDims(strings.TrimSpace(s))
	if !ok {
		return Slice{}, &ParseError{Input: s, Field: "topology", Err: ErrBadTopology,
			Valid: fmt.Sprintf("%d positive integers below 1000000 joined by x, e.g. %s", c.TorusDims, c.defaultTopologies()[0])}
	}
	return NewSlice(c, t)
}

// ParseAcceleratorType parses an accelerator type such as "v5p-128",
// "v5litepod-256", "v6e-8" or "tpu7x-8" into a slice with the generation's
// default topology for that size.
func ParseAcceleratorType(s string) (Slice, error) {
	in := strings.TrimSpace(s)
	i := strings.LastIndexByte(in, '-')
	if i <= 0 {
		return Slice{}, &ParseError{Input: s, Field: "accelerator type", Err: errors.New("want GENERATION-COUNT"),
			Valid: "e.g. v5p-128, v5litepod-256, v6e-8, tpu7x-8 (generations: " + ValidGenerations + ")"}
	}
	c, err := Lookup(in[:i])
	if err != nil {
		return Slice{}, &ParseError{Input: s, Field: "generation", Err: ErrUnknownGeneration, Valid: ValidGenerations}
	}
	num := in[i+1:]
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 || strings.TrimLeft(num, "0123456789") != "" || num[0] == '0' {
		return Slice{}, &ParseError{Input: s, Field: "count", Err: ErrBadCount, Valid: c.validCounts()}
	}
	chips, ok := c.chipsPerName(n)
	if ok && c.Generation == TPU7x && !c.wholeHosts(chips) {
		return Slice{}, &ParseError{Input: s, Field: "count", Err: ErrPartialHost,
			Valid: "TPU7x is sold in whole VMs, " + c.vmsSold() + ": " + c.validCounts()}
	}
	if ok {
		for _, t := range c.defaultTopologies() {
			if t.Chips() == chips {
				return Slice{Chip: c, Topology: t}, nil
			}
		}
	}
	what := "TensorCores"
	if c.Naming == CountsChips {
		what = "chips"
	}
	return Slice{}, &ParseError{Input: s, Field: "count", Err: fmt.Errorf("%w (%s names count %s)", ErrBadCount, c.Generation, what),
		Valid: c.validCounts()}
}

// Multislice is several identical slices joined by the data-center network.
type Multislice struct {
	Slice  Slice
	Slices int
	// DCNPerChip is the DCN bandwidth available to each chip (the host's
	// bandwidth shared by its chips).
	DCNPerChip unit.BytesPerSecond
}

// ParseTPU reads a TPU as users name it: an accelerator type (tpu7x-8,
// v5p-128) or a generation alone (tpu7x, v5e, ironwood). For a generation
// the slice has the chip and no topology: its Chips() is 0.
func ParseTPU(s string) (Slice, error) {
	if c, err := Lookup(s); err == nil {
		return Slice{Chip: c}, nil
	}
	if !strings.Contains(s, "-") {
		return Slice{}, &ParseError{Input: s, Field: "generation", Err: ErrUnknownGeneration,
			Valid: ValidGenerations + ", or an accelerator type such as v5p-128"}
	}
	return ParseAcceleratorType(s)
}

// NewMultislice joins n copies of s over DCN. dcnPerHost overrides the
// catalog's per-host DCN bandwidth when positive.
func NewMultislice(s Slice, n int, dcnPerHost unit.BytesPerSecond) (Multislice, error) {
	if n < 1 {
		return Multislice{}, &ParseError{Input: strconv.Itoa(n), Field: "slices", Err: errors.New("need at least one slice"), Valid: "1, 2, 3, …"}
	}
	if !(dcnPerHost >= 0) || math.IsInf(float64(dcnPerHost), 0) {
		// NaN fails every comparison, so it would otherwise pass as "not positive" and mean the catalog's
		return Multislice{}, &ParseError{Input: fmt.Sprint(float64(dcnPerHost)), Field: "dcn bandwidth", Err: errors.New("not a finite non-negative bandwidth"),
			Valid: "a positive bandwidth, or 0 for the catalog's"}
	}
	per := s.Chip.DCNPerChip
	if dcnPerHost > 0 {
		per = dcnPerHost / unit.BytesPerSecond(s.Host().Chips)
	}
	if n > 1 && per == 0 {
		return Multislice{}, &ParseError{Input: string(s.Chip.Generation), Field: "slices", Err: ErrNoMultislice,
			Valid: "Multislice runs on v4, v5e, v5p, v6e and tpu7x"}
	}
	if n > 1 && s.oneChipTPU7x() {
		return Multislice{}, &ParseError{Input: s.AcceleratorType(), Field: "slices", Err: ErrNoMultislice,
			Valid: fmt.Sprintf("1 slice of %s; TPU7x Multislice joins slices of %s VMs, from %s",
				s.AcceleratorType(), s.Chip.Host.MachineType, s.Chip.AcceleratorType(s.Chip.Host.Chips))}
	}
	return Multislice{Slice: s, Slices: n, DCNPerChip: per}, nil
}

// oneChipTPU7x reports whether s is tpu7x-2, the chip on its own
// tpu7x-standard-1t VM, which is one slice only: GKE's "Deploy TPU
// Multislices in GKE" (cloud.google.com/tpu/docs/tpu-gke-multislice)
// says "Multislice only supports multi-host TPU slice node pools", no
// stored source runs tpu7x-2 as more than one slice (xpk's 1t entry has no
// multi-VM topology, tpu-inference serves on one v7x-2), and the 1t's NICs
// are in no stored source.
// shardlab still joins single-host slices of whole 4-chip VMs (tpu7x-8),
// as it does for every other generation.
func (s Slice) oneChipTPU7x() bool {
	return s.Chip.Generation == TPU7x && s.Chips() > 0 && s.Host().Chips < s.Chip.Host.Chips
}

// Chips is the total number of chips.
func (m Multislice) Chips() int { return m.Slice.Chips() * m.Slices }

// Hosts is the total number of VMs.
func (m Multislice) Hosts() int { return m.Slice.Hosts() * m.Slices }

// DCNPerHost is the DCN bandwidth of one of the slices' VMs (Slice.Host).
func (m Multislice) DCNPerHost() unit.BytesPerSecond {
	return m.DCNPerChip * unit.BytesPerSecond(m.Slice.Host().Chips)
}

// String names the slices and counts chips per slice and in all, since the
// number in an accelerator type may count TensorCores: "tpu7x-128 (4x4x4,
// 64 chips)", "2 slices of tpu7x-128 (4x4x4, 64 chips each; 128 chips in
// all)".
func (m Multislice) String() string {
	per := unit.Plural(m.Slice.Chips(), "chip")
	if m.Slices == 1 {
		return fmt.Sprintf("%s (%s, %s)", m.Slice.AcceleratorType(), m.Slice.Topology, per)
	}
	return fmt.Sprintf("%d slices of %s (%s, %s each; %d chips in all)", m.Slices, m.Slice.AcceleratorType(), m.Slice.Topology, per, m.Chips())
}
