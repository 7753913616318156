package hw

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"shardlab/unit"
)

func TestParseAcceleratorType(t *testing.T) {
	tests := []struct {
		in       string
		gen      Generation
		chips    int
		topology string
		hosts    int
	}{
		// Cloud TPU naming: v2/v3/v4/v5p/tpu7x count TensorCores, v5e/v6e count chips.
		{"v2-8", V2, 4, "2x2", 1},                  // [gcp-v2]: v2-8 = 4 chips, one host
		{"v3-8", V3, 4, "2x2", 1},                  // [gcp-v3]
		{"v3-128", V3, 64, "8x8", 16},              // [gcp-v3]: 128 TensorCores = 64 chips
		{"v4-8", V4, 4, "2x2x1", 1},                // [gcp-v4]
		{"v4-128", V4, 64, "4x4x4", 16},            // [gcp-v4]
		{"v5p-8", V5p, 4, "2x2x1", 1},              // [gcp-v5p] topology table
		{"v5p-128", V5p, 64, "4x4x4", 16},          // [gcp-v5p]
		{"v5p-8960", V5p, 4480, "8x20x28", 1120},   // [mt-spec]
		{"v5p-12288", V5p, 6144, "16x16x24", 1536}, // [gcp-v5p]: the largest v5p slice
		{"v5litepod-8", V5e, 8, "2x4", 1},          // [gcp-v5e]: 8 chips, one host (ct5lp-hightpu-8t)
		{"v5litepod-256", V5e, 256, "16x16", 64},
		{"v5e-16", V5e, 16, "4x4", 4},                  // MaxText/xpk spelling
		{"v6e-8", V6e, 8, "2x4", 2},                    // [gcp-v6e]: 2x4 on two ct6e-standard-4t VMs, as GKE and xpk make it (catalog)
		{"v6e-256", V6e, 256, "16x16", 64},             // [gcp-v6e]
		{"tpu7x-2", TPU7x, 1, "1x1x1", 1},              // [mt-spec]: "tpu7x-2" is tpu7x:1x1x1; [xpk-sys]: one tpu7x-standard-1t VM
		{"tpu7x-8", TPU7x, 4, "2x2x1", 1},              // [mt-spec]: 4 chips, one tpu7x-standard-4t VM
		{"tpu7x-128", TPU7x, 64, "4x4x4", 16},          // [mt-spec]
		{"tpu7x-18432", TPU7x, 9216, "16x24x24", 2304}, // [mt-spec]: the full 9,216-chip pod
		{" TPU7X-8 ", TPU7x, 4, "2x2x1", 1},
	}
	for _, tt := range tests {
		s, err := ParseAcceleratorType(tt.in)
		if err != nil {
			t.Errorf("ParseAcceleratorType(%q) error: %v", tt.in, err)
			continue
		}
		if s.Chip.Generation != tt.gen || s.Chips() != tt.chips || s.Topology.String() != tt.topology || s.Hosts() != tt.hosts {
			t.Errorf("ParseAcceleratorType(%q) = %s %d chips %s %d hosts, want %s %d chips %s %d hosts",
				tt.in, s.Chip.Generation, s.Chips(), s.Topology, s.Hosts(), tt.gen, tt.chips, tt.topology, tt.hosts)
		}
	}
}

func TestParseAcceleratorTypeErrors(t *testing.T) {
	tests := []struct {
		in    string
		err   error
		field string
		valid string // substring of the list of valid forms
	}{
		{"v5p-7", ErrBadCount, "count", "v5p-8, v5p-16"},
		{"v5p-12", ErrBadCount, "count", "v5p-8"},
		{"v5p-13824", ErrBadCount, "count", "v5p-12288"}, // [gcp-v5p]: 6144 chips at most; [mt-spec] lists 12x24x24
		{"v5p-17920", ErrBadCount, "count", "v5p-12288"}, // the whole 8960-chip pod is not one slice
		{"v5x-8", ErrUnknownGeneration, "generation", "tpu7x"},
		// 2 chips (4 TensorCores) would be half a tpu7x-standard-4t: [xpk-sys] and
		// [mt-spec] have no tpu7x-4, and the 1-chip tpu7x-standard-1t is named
		{"tpu7x-4", ErrPartialHost, "count", "tpu7x-standard-1t of 1 chip or tpu7x-standard-4t of 4 chips: tpu7x-2, tpu7x-8"},
		{"v6e-3", ErrBadCount, "count", "v6e-1, v6e-4, v6e-8"},
		{"v5p", nil, "accelerator type", "v5p-128"},
		{"v5p--8", ErrUnknownGeneration, "generation", "v5p"},
		{"v5p-08", ErrBadCount, "count", "v5p-8"},
		{"", nil, "accelerator type", "tpu7x-8"},
	}
	for _, tt := range tests {
		_, err := ParseAcceleratorType(tt.in)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("ParseAcceleratorType(%q) error = %v, want a *ParseError", tt.in, err)
			continue
		}
		if tt.err != nil && !errors.Is(err, tt.err) {
			t.Errorf("ParseAcceleratorType(%q) error = %v, want %v", tt.in, err, tt.err)
		}
		if pe.Field != tt.field || !strings.Contains(pe.Valid, tt.valid) {
			t.Errorf("ParseAcceleratorType(%q) = field %q valid %q, want field %q valid containing %q", tt.in, pe.Field, pe.Valid, tt.field, tt.valid)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("error for %q spans lines: %q", tt.in, err)
		}
	}
}

func TestTopology(t *testing.T) {
	v5p, _ := Lookup("v5p")
	v5e, _ := Lookup("v5e")
	tpu7x, _ := Lookup("tpu7x")
	tests := []struct {
		chip  Chip
		in    string
		ok    bool
		wraps []bool
	}{
		{tpu7x, "1x1x1", true, []bool{false, false, false}}, // [mt-spec] tpu7x-2: wrap (False, False, False)
		{tpu7x, "1x1x2", false, nil},                        // half a tpu7x-standard-4t
		{tpu7x, "2x2x1", true, []bool{false, false, false}}, // [mt-spec] tpu7x-8
		{v5p, "4x4x4", true, []bool{true, true, true}},      // [mt-spec]: wrap from 4x4x4 up
		{v5p, "2x4x4", true, []bool{false, false, false}},   // [mt-spec]: no wrap below a cube
		{v5p, "8x4x4", true, []bool{true, true, true}},      // same shape as 4x4x8, in another order
		{v5p, "4x8x16", true, []bool{true, true, true}},     // custom: multiples of 4
		{v5p, "4x4x6", false, nil},
		{v5p, "4x4", false, nil},
		{v5p, "16x24x24", false, nil},            // 9,216 chips exceeds v5p's 6,144-chip slice limit [gcp-v5p]
		{v5e, "8x16", true, []bool{false, true}}, // [mt-spec]: wraps on the 16 axis only
		{v5e, "16x16", true, []bool{true, true}},
		{v5e, "4x4x4", false, nil},
		{v5e, "3x5", false, nil},
		{v5e, "0x4", false, nil},
		{v5e, "4xx4", false, nil},
	}
	// a dimension of seven digits is refused saying the bound, not only the
	// form, which 1000000x1000000x1000000 has
	if _, err := ParseTopology(v5p, "1000000x1000000x1000000"); err == nil || !strings.Contains(err.Error(), "positive integers below 1000000") {
		t.Errorf("ParseTopology(v5p, 1000000x1000000x1000000) error = %v, want the dimensions' bound", err)
	}
	for _, tt := range tests {
		s, err := ParseTopology(tt.chip, tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("ParseTopology(%s, %q) error = %v, want ok=%v", tt.chip.Generation, tt.in, err, tt.ok)
			continue
		}
		if err != nil {
			continue
		}
		for i, w := range tt.wraps {
			if got := s.Wraps(i); got != w {
				t.Errorf("%s %s Wraps(%d) = %v, want %v", tt.chip.Generation, tt.in, i, got, w)
			}
		}
	}
}

func TestTPU7xVM(t *testing.T) {
	c, err := Lookup("ironwood")
	if err != nil {
		t.Fatal(err)
	}
	// [gke-7x], [gcp-7x]: tpu7x-standard-4t, 4 chips, 224 vCPUs, 960 GB, 2 NUMA nodes,
	// Hyperdisk Balanced boot disk, Hyperdisk Balanced and Hyperdisk ML for data.
	h := c.Host
	if h.MachineType != "tpu7x-standard-4t" || h.Chips != 4 || h.VCPUs != 224 || h.RAM != 960*unit.GB || h.NUMANodes != 2 ||
		h.BootDisk != "Hyperdisk Balanced" || strings.Join(h.DataDisks, ",") != "Hyperdisk Balanced,Hyperdisk ML" {
		t.Errorf("tpu7x host = %+v", h)
	}
	// Every TPU7x accelerator type but tpu7x-2 is a whole number of these
	// VMs; tpu7x-2 is one tpu7x-standard-1t of 1 chip ([xpk-sys]:
	// machine_type='tpu7x-standard-1t', supported_topologies=['1x1x1']),
	// whose vCPUs, RAM and NUMA nodes no stored source gives (0).
	for _, name := range c.AcceleratorTypes() {
		s, err := ParseAcceleratorType(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		vm := s.Host()
		if name == "tpu7x-2" {
			if want := (Host{MachineType: "tpu7x-standard-1t", Chips: 1}); !reflect.DeepEqual(vm, want) || s.Hosts() != 1 || !s.WholeHosts() {
				t.Errorf("tpu7x-2: %d × %+v (whole %v), want 1 × %+v", s.Hosts(), vm, s.WholeHosts(), want)
			}
			continue
		}
		if s.Chips()%4 != 0 || vm.MachineType != "tpu7x-standard-4t" || s.Hosts() != s.Chips()/4 {
			t.Errorf("%s has %d chips on %d × %s, not whole 4-chip VMs", name, s.Chips(), s.Hosts(), vm.MachineType)
		}
	}
}

func TestCatalogNumbers(t *testing.T) {
	tests := []struct {
		gen        Generation
		bf16       float64
		hbmGiB     float64
		mxus, dim  int
		dcnGbps    float64 // per chip
		ici1wayGBs float64
	}{
		{V2, 46e12, 16, 2, 128, 0, 62},          // [jax-info]; [cacm20]
		{V3, 123e12, 32, 4, 128, 0, 100},        // [gcp-v3]: 2 MXUs per TensorCore; [sb-tpus]
		{V4, 275e12, 32, 8, 128, 12.5, 45},      // [gcp-v4]; [sb-tpus]
		{V5e, 197e12, 16, 4, 128, 25, 45},       // [gcp-v5e]
		{V5p, 459e12, 95, 8, 128, 50, 90},       // [gcp-v5p]
		{V6e, 918e12, 32, 2, 256, 100, 90},      // [gcp-v6e]
		{TPU7x, 2307e12, 192, 0, 256, 100, 100}, // [gcp-7x]
	}
	for _, tt := range tests {
		c, err := Lookup(string(tt.gen))
		if err != nil {
			t.Fatal(err)
		}
		if float64(c.PeakBF16) != tt.bf16 || c.HBM.GiB() != tt.hbmGiB || c.MXUs() != tt.mxus || c.MXUDim != tt.dim ||
			c.DCNPerChip.Bits() != tt.dcnGbps*1e9 || float64(c.ICILinkBandwidth) != tt.ici1wayGBs*1e9 {
			t.Errorf("%s: bf16 %v hbm %v GiB mxus %d dim %d dcn %v bit/s ici %v B/s", tt.gen, float64(c.PeakBF16),
				c.HBM.GiB(), c.MXUs(), c.MXUDim, c.DCNPerChip.Bits(), float64(c.ICILinkBandwidth))
		}
	}
	// [gcp-7x]: 1.2 TB/s bidirectional ICI per chip.
	c, _ := Lookup("tpu7x")
	if got := float64(c.ICILinkBandwidth) * 2 * float64(c.ICILinks); got != 1.2e12 {
		t.Errorf("tpu7x bidirectional ICI per chip = %v, want 1.2e12", got)
	}
	// [gcp-v5p]: 200 Gbps DCN per host.
	s, _ := ParseAcceleratorType("v5p-8")
	if got := s.DCNPerHost().Bits(); got != 200e9 {
		t.Errorf("v5p-8 DCN per host = %v bit/s, want 200e9", got)
	}
}

func TestMultislice(t *testing.T) {
	s, _ := ParseAcceleratorType("v5p-128")
	m, err := NewMultislice(s, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.Chips() != 256 || m.Hosts() != 64 || m.DCNPerHost().Bits() != 200e9 {
		t.Errorf("4 x v5p-128 = %d chips %d hosts %v bit/s per host", m.Chips(), m.Hosts(), m.DCNPerHost().Bits())
	}
	m, _ = NewMultislice(s, 2, unit.BitsPerSecond(400e9))
	if m.DCNPerChip.Bits() != 100e9 {
		t.Errorf("override 400 Gbit/s per host: per chip %v, want 100e9", m.DCNPerChip.Bits())
	}
	v3, _ := ParseAcceleratorType("v3-32")
	if _, err := NewMultislice(v3, 2, 0); !errors.Is(err, ErrNoMultislice) {
		t.Errorf("v3 multislice error = %v, want ErrNoMultislice", err)
	}
	if _, err := NewMultislice(s, 0, 0); err == nil {
		t.Error("0 slices accepted")
	}
	for _, bw := range []float64{-1, math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := NewMultislice(s, 2, unit.BytesPerSecond(bw)); err == nil {
			t.Errorf("NewMultislice with DCN bandwidth %v per host: no error", bw)
		}
	}
}

func TestParseTPU(t *testing.T) {
	tests := []struct {
		in    string
		gen   Generation
		chips int // 0: a generation alone
	}{
		{"tpu7x", TPU7x, 0},
		{"ironwood", TPU7x, 0},
		{"v5e", V5e, 0},
		{"tpu7x-8", TPU7x, 4},     // [gcp-7x]: tpu7x names count TensorCores, two per chip
		{"v5litepod-16", V5e, 16}, // [gcp-v5e]: v5e names count chips
	}
	for _, tt := range tests {
		s, err := ParseTPU(tt.in)
		if err != nil || s.Chip.Generation != tt.gen || s.Chips() != tt.chips {
			t.Errorf("ParseTPU(%q) = %s with %d chips, %v; want %s with %d", tt.in, s.Chip.Generation, s.Chips(), err, tt.gen, tt.chips)
		}
	}
	for _, in := range []string{"v9", "v9-8", "v5p-7", ""} {
		var pe *ParseError
		if _, err := ParseTPU(in); !errors.As(err, &pe) {
			t.Errorf("ParseTPU(%q) error = %v, want a *ParseError", in, err)
		}
	}
}

func TestAssumed(t *testing.T) {
	v3, _ := Lookup("v3")
	c7, _ := Lookup("tpu7x")
	v6, _ := Lookup("v6e")
	for _, tt := range []struct {
		name      string
		got, want float64
	}{
		{"v3 VM vCPUs (not published)", float64(v3.Host.VCPUsOrAssumed()), 4 * AssumedVCPUsPerChip},
		{"tpu7x VM vCPUs", float64(c7.Host.VCPUsOrAssumed()), 224},                  // [gcp-7x]
		{"tpu7x PCIe (not published)", float64(c7.PCIeOrAssumed()), 16e9},           // AssumedPCIe
		{"v6e PCIe", float64(v6.PCIeOrAssumed()), 32e9},                             // [sb-tpus]
		{"tpu7x HBM with half kept free", float64(c7.UsableHBM(0.5)), 101726300406}, // xla_hbm.csv: 94.74 GiB per device, 2 devices
		{"tpu7x HBM with no headroom", float64(c7.UsableHBM(0)), 203452600812},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %g, want %g", tt.name, tt.got, tt.want)
		}
	}
}

func FuzzParseAcceleratorType(f *testing.F) {
	for _, s := range []string{"v5p-128", "tpu7x-8", "v5litepod-256", "v6e-8", "v2-8", "v5p-7", "x-", "-", "v4-99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if _, err := ParseTPU(in); err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("ParseTPU error %v is not a *ParseError", err)
			}
		}
		s, err := ParseAcceleratorType(in)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			return
		}
		// parse(String(x)) == x
		again, err := ParseAcceleratorType(s.AcceleratorType())
		if err != nil || again.Topology != s.Topology || again.Chip.Generation != s.Chip.Generation {
			t.Fatalf("round trip of %q via %q: %v %v", in, s.AcceleratorType(), again.Topology, err)
		}
	})
}

func FuzzParseTopology(f *testing.F) {
	for _, s := range []string{"4x4x4", "2x2x1", "16x16", "8x20x28", "0x1", "x", "4x4x4x4"} {
		f.Add("v5p", s)
	}
	f.Fuzz(func(t *testing.T, gen, in string) {
		c, err := Lookup(gen)
		if err != nil {
			return
		}
		s, err := ParseTopology(c, in)
		if err != nil {
			return
		}
		again, err := ParseTopology(c, s.Topology.String())
		if err != nil || again.Topology != s.Topology {
			t.Fatalf("round trip %q: %v", in, err)
		}
		if s.Chips() > c.MaxSliceChips && c.TorusDims == 3 {
			t.Fatalf("%q: %d chips exceeds %d", in, s.Chips(), c.MaxSliceChips)
		}
	})
}

func ExampleParseAcceleratorType() {
	s, err := ParseAcceleratorType("v5p-128")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Chips(), "chips,", s.Topology, "torus,", s.Hosts(), "hosts")
	_, err = ParseAcceleratorType("v5p-7")
	fmt.Println(err)
	// Output:
	// 64 chips, 4x4x4 torus, 16 hosts
	// hw: count "v5p-7": no slice of this size (v5p names count TensorCores); valid: v5p-8, v5p-16, v5p-32, v5p-64, v5p-128, v5p-256, v5p-384, v5p-512, v5p-640, v5p-768, …, v5p-12288
}

// TestCatalogSliceLimits holds every accelerator type a generation accepts
// to its largest slice, and the largest slice to its pod.
func TestCatalogSliceLimits(t *testing.T) {
	for _, c := range Chips() {
		if c.MaxSliceChips > c.PodChips {
			t.Errorf("%s: largest slice %d chips, pod %d", c.Generation, c.MaxSliceChips, c.PodChips)
		}
		types := c.AcceleratorTypes()
		for _, name := range types {
			s, err := ParseAcceleratorType(name)
			if err != nil {
				t.Errorf("%s: listed accelerator type %s does not parse: %v", c.Generation, name, err)
				continue
			}
			if s.Chips() > c.MaxSliceChips {
				t.Errorf("%s: %s is %d chips, above the largest slice of %d", c.Generation, name, s.Chips(), c.MaxSliceChips)
			}
		}
	}
}

func TestNameCountJSON(t *testing.T) {
	// [gcp-v5p]: v5p names count TensorCores; [gcp-v6e]: v6e names count chips
	for _, tt := range []struct {
		n    NameCount
		want string
	}{{CountsTensorCores, `"tensor_cores"`}, {CountsChips, `"chips"`}} {
		b, err := json.Marshal(tt.n)
		if err != nil || string(b) != tt.want {
			t.Errorf("json.Marshal(%d) = %s, %v; want %s", int(tt.n), b, err, tt.want)
		}
		var back NameCount
		if err := json.Unmarshal(b, &back); err != nil || back != tt.n {
			t.Errorf("json.Unmarshal(%s) = %d, %v; want %d", b, int(back), err, int(tt.n))
		}
	}
	if _, err := json.Marshal(NameCount(7)); err == nil {
		t.Error("json.Marshal(NameCount(7)) succeeded, want an error")
	}
	var n NameCount
	if err := json.Unmarshal([]byte(`"cores"`), &n); err == nil {
		t.Error(`json.Unmarshal("cores") succeeded, want an error`)
	}
}

func ExampleParseTPU() {
	for _, in := range []string{"tpu7x", "tpu7x-8"} {
		s, err := ParseTPU(in)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(in, "→", s.Chip.Generation, s.Chips(), "chips")
	}
	// Output:
	// tpu7x → tpu7x 0 chips
	// tpu7x-8 → tpu7x 4 chips
}

func TestCapacityTopology(t *testing.T) {
	// [gke-ac]: a TPU7x block is 144 cubes of 4x4x4, 9,216 chips, which is
	// the TPU7x pod size in the catalog.
	c, ok := CapacityTopologyOf(TPU7x)
	if !ok {
		t.Fatal("no TPU7x capacity topology")
	}
	chip, err := Lookup(string(TPU7x))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.SubBlock.Chips() * c.SubBlocksPerBlock; got != 9216 || got != chip.PodChips {
		t.Errorf("TPU7x block = %d chips, want 9216 (pod %d)", got, chip.PodChips)
	}
	if _, ok := CapacityTopologyOf(V5p); ok {
		t.Error("v5p has a capacity topology, but All Capacity mode does not exist on it")
	}
}

// TestUsableHBMIsTheCompilersCapacity holds UsableHBM to the capacities
// XLA's out-of-memory messages print per JAX device (xla_hbm.csv): v4
// "of 30.75G hbm" (MaxText PR 4117) for its one device per chip, TPU7x
// "of 94.74G hbm" for each of its two, v5p capped at the 95 GiB the
// catalog gives, and v5e, with no traceable message, its 16 GiB less
// AssumedReserve.
func TestUsableHBMIsTheCompilersCapacity(t *testing.T) {
	for _, tt := range []struct {
		gen  string
		head float64
		want float64
	}{
		{"v4", 0, 30.75 * (1 << 30)},
		{"tpu7x", 0, 2 * 94.74 * (1 << 30)},
		{"tpu7x", 0.5, 94.74 * (1 << 30)},
		{"v6e", 0, 31.25 * (1 << 30)},
		{"v5p", 0, 95 * (1 << 30)},
		{"v5e", 0, 16 * (1 - AssumedReserve) * (1 << 30)},
	} {
		c, err := Lookup(tt.gen)
		if err != nil {
			t.Fatal(err)
		}
		if got := float64(c.UsableHBM(tt.head)); math.Abs(got-tt.want) > 1 {
			t.Errorf("%s UsableHBM(%v) = %.0f, want %.0f", tt.gen, tt.head, got, tt.want)
		}
	}
}

func TestParseXLAHBMRefuses(t *testing.T) {
	head := "generation,capacity_gib,reserved,quote,source,date\n"
	for _, bad := range []string{
		"",
		"gen,cap,r,q,s,d\n",
		head + "v9,1,,q,s,d\n",
		head + "v4,NaN,,q,s,d\n",
		head + "v4,-1,,q,s,d\n",
		head + "v4,1,,q,,d\n",
		head + "v4,1,,q,s,d\nv4,2,,q,s,d\n",
		head + "v4,1,,q,s\n",
	} {
		if _, err := parseXLAHBM(bad); err == nil {
			t.Errorf("parseXLAHBM(%q) accepted", bad)
		}
	}
	if _, err := parseXLAHBM(xlaHBMCSV); err != nil {
		t.Errorf("the embedded file: %v", err)
	}
}

// FuzzParseXLAHBM: the capacity table's parser never panics, and what it
// accepts has a positive capacity for a known generation.
func FuzzParseXLAHBM(f *testing.F) {
	f.Add(xlaHBMCSV)
	f.Add("generation,capacity_gib,reserved,quote,source,date\nv4,1e308,,q,s,d\n")
	f.Fuzz(func(t *testing.T, data string) {
		m, err := parseXLAHBM(data)
		if err != nil {
			return
		}
		for g, b := range m {
			if _, err := Lookup(string(g)); err != nil || b <= 0 {
				t.Errorf("accepted %s with %d bytes", g, b)
			}
		}
	})
}

func TestPeak(t *testing.T) {
	for _, tc := range []struct {
		chip   string
		f      Format
		want   unit.FLOPsPerSecond
		wantOK bool
	}{
		{"v5p", BF16, 459e12, true},   // [gcp-v5p]
		{"v5p", Int8, 918e12, true},   // [jax-info], [sb-tpus]
		{"v5p", FP8, 459e12, true},    // [gcp-v5p]: fp8 = bf16
		{"v5e", FP8, 0, false},        // not published
		{"tpu7x", FP8, 4614e12, true}, // [gcp-7x]
		{"tpu7x", Int8, 0, false},     // not published
		{"v4", "fp4", 0, false},       // no such format
	} {
		c, err := Lookup(tc.chip)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := c.Peak(tc.f); got != tc.want || ok != tc.wantOK {
			t.Errorf("%s.Peak(%s) = %v, %v, want %v, %v", tc.chip, tc.f, got, ok, tc.want, tc.wantOK)
		}
	}
}

// TestHostRAMPerChip: a chip's share of the RAM of the VM its slice is
// made of, from the VM tables: ct5p-hightpu-4t's 448 GB over 4 chips
// ([gcp-v5p]), tpu7x-standard-4t's 960 GB over 4 ([gcp-7x]),
// ct5lp-hightpu-8t's 384 GB over 8 and ct5lp-hightpu-1t's 48 GB over 1
// ([gcp-v5e]), ct6e-standard-4t's 720 GB over 4 ([gcp-7x]) on v6e-4,
// v6e-8 (two 4t VMs, as GKE and xpk make it) and v6e-16; 0 for v4, whose
// VM's RAM the catalog does not publish, for v6e-1, one
// ct6e-standard-1t ([gcp-v6e]) whose RAM no stored source gives (not a
// quarter of the 4t's), and likewise for tpu7x-2, one tpu7x-standard-1t
// ([xpk-sys]), not a quarter of the 4t's 960 GB.
func TestHostRAMPerChip(t *testing.T) {
	for _, c := range []struct {
		tpu  string
		want unit.Bytes
	}{
		{"v5p-8", 112 * unit.GB}, {"tpu7x-8", 240 * unit.GB}, {"v4-8", 0},
		{"v5litepod-8", 48 * unit.GB}, {"v5litepod-1", 48 * unit.GB}, {"v5litepod-16", 48 * unit.GB},
		{"v6e-4", 180 * unit.GB}, {"v6e-8", 180 * unit.GB}, {"v6e-16", 180 * unit.GB}, {"v6e-1", 0},
		{"tpu7x-2", 0},
	} {
		s, err := ParseAcceleratorType(c.tpu)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.HostRAMPerChip(); got != c.want {
			t.Errorf("%s: %v a chip, want %v", c.tpu, got, c.want)
		}
	}
}

// TestTierNames: the two networks' names, and the type and number for a
// value that is neither.
func TestTierNames(t *testing.T) {
	for tier, want := range map[Tier]string{ICI: "ICI", DCN: "DCN", DCN + 1: "Tier(2)"} {
		if got := tier.String(); got != want {
			t.Errorf("Tier(%d).String() = %q, want %q", int(tier), got, want)
		}
	}
}
