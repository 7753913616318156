// Package hw describes Cloud TPU hardware: chips, the VMs (hosts) that hold
// them, slices joined by ICI into a torus, and multislices joined by the
// data-center network (DCN). It parses accelerator types and topologies as
// users type them ("v5p-128", "tpu7x-8", "4x4x8") and is the single source of
// every hardware number the rest of shardlab uses.
package hw

import (
	"fmt"
	"strings"
	"time"

	"shardlab/internal/enum"
	"shardlab/unit"
)

// Generation names a TPU generation as it appears in accelerator types.
type Generation string

// The generations in the catalog.
const (
	V2    Generation = "v2"
	V3    Generation = "v3"
	V4    Generation = "v4"
	V5e   Generation = "v5e"
	V5p   Generation = "v5p"
	V6e   Generation = "v6e"
	TPU7x Generation = "tpu7x"
)

// NameCount says what the number in an accelerator type counts.
type NameCount int

const (
	// CountsTensorCores: v2, v3, v4, v5p and tpu7x names count TensorCores
	// (v5p-128 is 64 chips).
	CountsTensorCores NameCount = iota
	// CountsChips: v5e (v5litepod-N) and v6e names count chips.
	CountsChips
)

var nameCounts = enum.New[NameCount]("NameCount", []string{CountsTensorCores: "tensor_cores", CountsChips: "chips"})

// String is what the number counts: "tensor_cores" or "chips".
func (n NameCount) String() string { return nameCounts.String(n) }

// MarshalText writes the name, so JSON says "chips", not 1.
func (n NameCount) MarshalText() ([]byte, error) {
	if !nameCounts.Valid(n) {
		return nil, fmt.Errorf("hw: name count %d, want %s or %s", int(n), CountsTensorCores, CountsChips)
	}
	return []byte(n.String()), nil
}

// UnmarshalText reads what MarshalText writes.
func (n *NameCount) UnmarshalText(b []byte) error {
	v, ok := nameCounts.Lookup(string(b))
	if !ok {
		return fmt.Errorf("hw: name count %q, want %s or %s", b, CountsTensorCores, CountsChips)
	}
	*n = v
	return nil
}

// Host is the VM that holds a group of chips. Slices are built from whole
// hosts. In JSON, a count that is not published is left out.
type Host struct {
	// MachineType is the Compute Engine machine type (ct5p-hightpu-4t). v2
	// and v3 TPU VMs have none and go by their accelerator type (v2-8).
	MachineType string     `json:"machine_type"`
	Chips       int        `json:"chips"`
	VCPUs       int        `json:"vcpus,omitempty"`      // 0: not published
	RAM         unit.Bytes `json:"ram_bytes,omitempty"`  // 0: not published
	NUMANodes   int        `json:"numa_nodes,omitempty"` // 0: not published
	BootDisk    string     `json:"boot_disk,omitempty"`
	DataDisks   []string   `json:"data_disks,omitempty"`
}

// Chip is one TPU chip and the facts about its generation. Its JSON keys
// carry their units (_bytes, _bytes_per_s, _flops_per_s); a figure that is
// not published is left out.
type Chip struct {
	Generation Generation `json:"generation"`
	Name       string     `json:"name"`

	TensorCores       int `json:"tensor_cores"`
	MXUsPerTensorCore int `json:"mxus_per_tensor_core,omitempty"` // 0: not published
	MXUDim            int `json:"mxu_dim"`                        // the MXU is MXUDim x MXUDim multiply-accumulators

	PeakBF16 unit.FLOPsPerSecond `json:"peak_bf16_flops_per_s"`
	PeakFP8  unit.FLOPsPerSecond `json:"peak_fp8_flops_per_s,omitempty"` // 0: not published
	PeakInt8 unit.FLOPsPerSecond `json:"peak_int8_ops_per_s,omitempty"`  // 0: not published

	HBM          unit.Bytes          `json:"hbm_capacity_bytes"`
	HBMBandwidth unit.BytesPerSecond `json:"hbm_bytes_per_s"`

	// ICILinks is the number of ICI ports per chip; ICILinkBandwidth is one
	// direction of one link.
	ICILinks         int                 `json:"ici_links"`
	ICILinkBandwidth unit.BytesPerSecond `json:"ici_link_one_way_bytes_per_s"`
	TorusDims        int                 `json:"torus_dims"`

	// DCNPerChip is the host's data-center network bandwidth divided by its
	// chips; 0 means the generation has no Multislice support.
	DCNPerChip unit.BytesPerSecond `json:"dcn_bytes_per_s_per_chip"`

	// PCIe is the host-to-chip bandwidth each chip gets for infeed and
	// outfeed; 0 means not published.
	PCIe unit.BytesPerSecond `json:"pcie_bytes_per_s_per_chip,omitempty"`

	JAXDevicesPerChip int       `json:"jax_devices_per_chip"`
	MaxSliceChips     int       `json:"max_slice_chips"`
	PodChips          int       `json:"pod_chips"`
	Naming            NameCount `json:"accelerator_type_counts"`
	// AcceleratorPrefix is the accelerator-type prefix Cloud TPU uses
	// ("v5litepod" for v5e).
	AcceleratorPrefix string `json:"accelerator_type_prefix"`

	// Host is the generation's usual VM, the one its multi-host slices are
	// made of; a slice's own VM is Slice.Host.
	Host Host `json:"host"`
	// SliceHosts lists the VMs that hold a whole slice of exactly their
	// chips by themselves and are what that slice is made of, where that VM
	// is not Host: [gcp-v5e] gives v5e's 1x1 one ct5lp-hightpu-1t and its
	// 2x4 (v5litepod-8) one ct5lp-hightpu-8t, of the three v5e VM types
	// (1, 4 or 8 chips), while 2x2 and every larger v5e slice are
	// ct5lp-hightpu-4t VMs; [gcp-v6e] gives v6e's 1x1 one
	// ct6e-standard-1t. Slice.Host picks among them.
	SliceHosts []Host `json:"slice_hosts,omitempty"`
	// SingleHost is a larger VM that holds a whole small slice for
	// serving, where the generation offers one beside Host and training
	// slices are costed as Host VMs (v6e's ct6e-standard-8t, 8 chips: the
	// catalog's comment says why); zero where none is offered. Only its
	// machine type and chips are known.
	SingleHost Host `json:"single_host,omitzero"`

	// Sources lists where the numbers above come from.
	Sources []string `json:"sources"`
}

// Format is a number format the MXUs multiply in.
type Format string

// The formats a chip publishes a peak for.
const (
	BF16 Format = "bf16"
	Int8 Format = "int8"
	FP8  Format = "fp8"
)

// Peak is the chip's peak matmul rate in format f (FLOP/s; int8's are
// integer ops/s) and whether the chip publishes one: the one place a
// format's peak is read from the catalog.
func (c Chip) Peak(f Format) (unit.FLOPsPerSecond, bool) {
	var p unit.FLOPsPerSecond
	switch f {
	case BF16:
		p = c.PeakBF16
	case Int8:
		p = c.PeakInt8
	case FP8:
		p = c.PeakFP8
	}
	return p, p > 0
}

// MXUs is the number of matrix units on the chip (0 when not published).
func (c Chip) MXUs() int { return c.TensorCores * c.MXUsPerTensorCore }

// XLACapacity is the HBM per chip that XLA's TPU compiler fits a program
// into: the capacity its out-of-memory message prints per JAX device
// (xla_hbm.csv, with sources) times the chip's devices, or, where no such
// message was found, the HBM less AssumedReserve. XLA's
// rematerialization recomputes values until a program fits it, so a
// program squeezed to fit reports at most this.
func (c Chip) XLACapacity() unit.Bytes {
	if per, ok := xlaHBM[c.Generation]; ok {
		return per * unit.Bytes(c.JAXDevicesPerChip)
	}
	return unit.Bytes(float64(c.HBM) * (1 - AssumedReserve))
}

// CompilerHBM is the HBM per chip that XLA's TPU compiler checks a program
// against (XLACapacity), never more than the published HBM for planning
// (v5p's 95.74 GiB limit is above the 95 GiB the Cloud page rounds to).
// ok is false where no out-of-memory message was found.
func (c Chip) CompilerHBM() (b unit.Bytes, ok bool) {
	if _, ok := xlaHBM[c.Generation]; !ok {
		return 0, false
	}
	return min(c.XLACapacity(), c.HBM), true
}

// UsableHBM is the HBM a job may fill: what the compiler allows
// (CompilerHBM, or where that is unknown the HBM less AssumedReserve),
// less the fraction headroom of it kept free as a planning margin. Every
// caller (plan, validate, web, exports) asks this one rule.
func (c Chip) UsableHBM(headroom float64) unit.Bytes {
	b, ok := c.CompilerHBM()
	if !ok {
		b = unit.Bytes(float64(c.HBM) * (1 - AssumedReserve))
	}
	return unit.Bytes(float64(b) * (1 - headroom))
}

// Assumptions for the numbers the catalog does not publish for every
// generation. Nothing else in shardlab may fill these gaps.
const (
	// AssumedReserve is the share of HBM taken for the runtime's
	// reservation and not offered to the compiler on a generation whose
	// compiler capacity is unknown (xla_hbm.csv): v4's 1.25 of 32 GiB, the
	// largest share among the generations with a published message.
	AssumedReserve = 0.04
	// AssumedPCIe is the host-to-chip bandwidth of a chip whose PCIe is not
	// published: 16 GB/s each way, what the scaling book gives for v4 and
	// v5p [sb-tpus].
	AssumedPCIe unit.BytesPerSecond = 16e9
	// AssumedVCPUsPerChip is the vCPUs per chip of a host whose vCPU count
	// is not published (the v2, v3 and v4 VMs, v6e's ct6e-standard-1t); an
	// assumption, not a published number.
	AssumedVCPUsPerChip = 4
)

// PCIeOrAssumed is the chip's PCIe bandwidth, or AssumedPCIe when the
// catalog does not publish it.
func (c Chip) PCIeOrAssumed() unit.BytesPerSecond {
	if c.PCIe == 0 {
		return AssumedPCIe
	}
	return c.PCIe
}

// VCPUsOrAssumed is the host's vCPUs, or AssumedVCPUsPerChip for each of
// its chips when the count is not published.
func (h Host) VCPUsOrAssumed() int {
	if h.VCPUs == 0 {
		return AssumedVCPUsPerChip * h.Chips
	}
	return h.VCPUs
}

// Lookup returns the catalog entry for a generation. It also accepts the
// aliases users type: "v5litepod", "v6e", "trillium", "ironwood", "tpu7x".
func Lookup(name string) (Chip, error) {
	g, ok := generationAliases[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return Chip{}, &ParseError{Input: name, Field: "generation", Err: ErrUnknownGeneration}
	}
	for _, c := range catalog {
		if c.Generation == g {
			return c.clone(), nil
		}
	}
	panic("hw: alias table names a generation missing from the catalog: " + string(g))
}

// Chips returns the whole catalog, oldest generation first.
func Chips() []Chip {
	out := make([]Chip, len(catalog))
	for i, c := range catalog {
		out[i] = c.clone()
	}
	return out
}

func (c Chip) clone() Chip {
	c.Host.DataDisks = append([]string(nil), c.Host.DataDisks...)
	c.SliceHosts = append([]Host(nil), c.SliceHosts...)
	c.Sources = append([]string(nil), c.Sources...)
	return c
}

var generationAliases = map[string]Generation{
	"v2": V2, "tpuv2": V2,
	"v3": V3, "tpuv3": V3,
	"v4": V4, "tpuv4": V4,
	"v5e": V5e, "v5litepod": V5e, "v5lite": V5e,
	"v5p": V5p,
	"v6e": V6e, "trillium": V6e,
	"tpu7x": TPU7x, "ironwood": TPU7x, "v7x": TPU7x, "tpu7": TPU7x,
}

func (g Generation) String() string { return string(g) }

// chipsPerName converts the number in an accelerator type into chips.
func (c Chip) chipsPerName(n int) (int, bool) {
	if c.Naming == CountsChips {
		return n, true
	}
	if n%c.TensorCores != 0 {
		return 0, false
	}
	return n / c.TensorCores, true
}

// nameCount converts chips into the number used in the accelerator type.
func (c Chip) nameCount(chips int) int {
	if c.Naming == CountsChips {
		return chips
	}
	return chips * c.TensorCores
}

// AcceleratorType spells the accelerator type of a slice of n chips.
func (c Chip) AcceleratorType(chips int) string {
	return fmt.Sprintf("%s-%d", c.AcceleratorPrefix, c.nameCount(chips))
}

// ICIHopLatency is the fixed cost of one ICI hop, the T_min ≈ 1 µs per hop
// the scaling book's sharding chapter uses for every generation
// (https://jax-ml.github.io/scaling-book/sharding/).
const ICIHopLatency = time.Microsecond

// Tier is one of the two networks chips talk over.
type Tier int

// The tiers.
const (
	ICI Tier = iota // the inter-chip interconnect: the torus inside a slice
	DCN             // the data-center network, across slices
)

var tierNames = enum.New[Tier]("Tier", []string{ICI: "ICI", DCN: "DCN"})

func (t Tier) String() string { return tierNames.String(t) }
