package hw

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"shardlab/unit"
)

func TestSliceSizes(t *testing.T) {
	// v5e (v5litepod) slices are 1 to 256 chips, v6e's the same sizes:
	// each size once, smallest first, as AcceleratorTypes lists them
	got, err := SliceSizes(V5e, V6e, V5e)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{1, 4, 8, 16, 32, 64, 128, 256}
	if !slices.Equal(got, want) {
		t.Errorf("SliceSizes(v5e, v6e) = %v, want %v", got, want)
	}
	if _, err := SliceSizes("v9"); err == nil {
		t.Error("SliceSizes(v9): no error")
	}
}

// TestV5eSliceHosts checks every v5e slice shape against the rows of
// cloud.google.com/tpu/docs/v5e: its slice-shape table (topology, chips,
// hosts, where a host is the 8-chip machine: "Chips per host 8") and its
// VM-type table (ct5lp-hightpu-1t: 24 vCPUs, 48 GB, 1 NUMA node; -4t: 112,
// 192 GB, 1; -8t: 224, 384 GB, 2). A slice of at most one host is one VM
// of its chips; a larger one is made of ct5lp-hightpu-4t VMs, four to a
// host (GKE's multi-host v5e node pools; the v5e doc's "Each TPU VM in a
// v5e TPU slice contains 1, 4 or 8 chips").
func TestV5eSliceHosts(t *testing.T) {
	vm := map[string]Host{
		"ct5lp-hightpu-1t": {MachineType: "ct5lp-hightpu-1t", Chips: 1, VCPUs: 24, RAM: 48 * unit.GB, NUMANodes: 1},
		"ct5lp-hightpu-4t": {MachineType: "ct5lp-hightpu-4t", Chips: 4, VCPUs: 112, RAM: 192 * unit.GB, NUMANodes: 1},
		"ct5lp-hightpu-8t": {MachineType: "ct5lp-hightpu-8t", Chips: 8, VCPUs: 224, RAM: 384 * unit.GB, NUMANodes: 2},
	}
	rows := []struct {
		topology    string
		chips       int
		docHosts    float64 // the doc's "Number of hosts" (1/8, 1/2, 1, 2, …)
		machineType string
	}{
		{"1x1", 1, 1.0 / 8, "ct5lp-hightpu-1t"},
		{"2x2", 4, 1.0 / 2, "ct5lp-hightpu-4t"},
		{"2x4", 8, 1, "ct5lp-hightpu-8t"},
		{"4x4", 16, 2, "ct5lp-hightpu-4t"},
		{"4x8", 32, 4, "ct5lp-hightpu-4t"},
		{"8x8", 64, 8, "ct5lp-hightpu-4t"},
		{"8x16", 128, 16, "ct5lp-hightpu-4t"},
		{"16x16", 256, 32, "ct5lp-hightpu-4t"},
	}
	c, err := Lookup("v5e")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		s, err := ParseTopology(c, r.topology)
		if err != nil {
			t.Fatal(err)
		}
		want := vm[r.machineType]
		wantVMs := max(1, r.chips/want.Chips)
		if got := s.Host(); !reflect.DeepEqual(got, want) || s.Chips() != r.chips || s.Hosts() != wantVMs {
			t.Errorf("v5e %s: %d chips on %d × %+v, want %d chips on %d × %+v", r.topology, s.Chips(), s.Hosts(), got, r.chips, wantVMs, want)
		}
		if single := s.Hosts() == 1; single != (r.docHosts <= 1) {
			t.Errorf("v5e %s: %d VMs, but the doc gives %g hosts", r.topology, s.Hosts(), r.docHosts)
		}
	}
}

// TestV6eSliceHosts checks v6e's slice shapes against the table of
// cloud.google.com/tpu/docs/v6e (topology, chips, VMs, accelerator type,
// machine type): v6e-4 is one ct6e-standard-4t, v6e-8 two of them (the
// table's GKE row for 2x4, as xpk makes it: the catalog costs training
// slices so and keeps the one-VM ct6e-standard-8t for serving,
// Chip.SingleHost), each larger slice two ct6e-standard-4t VMs a host,
// and 1x1 (v6e-1) one ct6e-standard-1t, "1/8" of a host: the table's row
// (/work/shared/reference/tpu-specs.json v6e vm_types) and xpk's
// (system_characteristics.py @367c838, export/xpk-tpu-types.txt:
// "v6e-1 ct6e-standard-1t 1 1"). No stored source gives the 1t's vCPUs or
// RAM (tpu-specs.json: "1t/8t vCPU/RAM not captured"), so they must be 0,
// not the 4t's 180 vCPUs and 720 GB or a share of them.
func TestV6eSliceHosts(t *testing.T) {
	s, err := ParseAcceleratorType("v6e-1")
	if err != nil {
		t.Fatal(err)
	}
	want := Host{MachineType: "ct6e-standard-1t", Chips: 1}
	if got := s.Host(); !reflect.DeepEqual(got, want) || s.Hosts() != 1 || !s.WholeHosts() || s.HostRAMPerChip() != 0 {
		t.Errorf("v6e-1: %d × %+v (whole %v, %v RAM a chip), want 1 × %+v, whole, RAM not published (0)",
			s.Hosts(), got, s.WholeHosts(), s.HostRAMPerChip(), want)
	}
	for _, r := range []struct {
		tpu         string
		vms         int
		machineType string
	}{
		{"v6e-4", 1, "ct6e-standard-4t"}, {"v6e-8", 2, "ct6e-standard-4t"}, {"v6e-16", 4, "ct6e-standard-4t"},
		{"v6e-32", 8, "ct6e-standard-4t"}, {"v6e-64", 16, "ct6e-standard-4t"}, {"v6e-128", 32, "ct6e-standard-4t"},
		{"v6e-256", 64, "ct6e-standard-4t"},
	} {
		s, err := ParseAcceleratorType(r.tpu)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Host().MachineType; got != r.machineType || s.Hosts() != r.vms {
			t.Errorf("%s: %d × %s, want %d × %s", r.tpu, s.Hosts(), got, r.vms, r.machineType)
		}
	}
}

// TestWholeHosts: a slice is whole VMs when its chips fill the VMs it is
// made of: v5litepod-1 is a whole ct5lp-hightpu-1t ([gcp-v5e] VM types:
// 1, 4 or 8 chips), v6e-1 a whole ct6e-standard-1t ([gcp-v6e] slice
// shapes: 1x1 is one 1t VM), the smallest v4, v5p and tpu7x slices one 4-chip VM
// each; a generation alone (no topology) is no slice of hosts.
func TestWholeHosts(t *testing.T) {
	for _, c := range []struct {
		tpu  string
		want bool
	}{
		{"v5litepod-1", true}, {"v5litepod-4", true}, {"v5litepod-8", true}, {"v5litepod-256", true},
		{"v6e-1", true}, {"v6e-4", true}, {"v6e-8", true}, {"v6e-16", true},
		{"v4-8", true}, {"v5p-8", true}, {"tpu7x-8", true}, {"v2-8", true}, {"v3-8", true},
		{"tpu7x-2", true}, // one tpu7x-standard-1t ([xpk-sys])
	} {
		s, err := ParseAcceleratorType(c.tpu)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.WholeHosts(); got != c.want {
			t.Errorf("%s (%d chips on %s): WholeHosts() = %v, want %v", c.tpu, s.Chips(), s.Host().MachineType, got, c.want)
		}
	}
	for _, g := range []string{"v5e", "tpu7x"} {
		s, err := ParseTPU(g)
		if err != nil {
			t.Fatal(err)
		}
		if s.WholeHosts() {
			t.Errorf("%s alone: WholeHosts() = true, want false (no topology)", g)
		}
	}
}

// TestMultisliceDCNPerHost: a multislice of v5litepod-8 has one
// ct5lp-hightpu-8t VM a slice, so a host's DCN is 8 chips' share (2 × 100
// Gbit/s NICs a host, [gcp-v5e]), and an override per host is split 8 ways.
func TestMultisliceDCNPerHost(t *testing.T) {
	s, err := ParseAcceleratorType("v5litepod-8")
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMultislice(s, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.DCNPerHost().Bits(); got != 200e9 || m.Hosts() != 2 {
		t.Errorf("2 × v5litepod-8: %v bit/s a host, %d hosts, want 2e11 and 2", got, m.Hosts())
	}
	if m, err = NewMultislice(s, 2, unit.BitsPerSecond(400e9)); err != nil || m.DCNPerChip.Bits() != 50e9 {
		t.Errorf("2 × v5litepod-8 at 400 Gbit/s a host: %v bit/s a chip (%v), want 5e10", m.DCNPerChip.Bits(), err)
	}
	// a v6e 4-chip VM has half its host's 4 × 200 Gbps NICs ([gcp-v6e]),
	// on v6e-8 (two ct6e-standard-4t VMs, as GKE and xpk make it) as on
	// v6e-16
	for _, c := range []struct {
		tpu   string
		hosts int
		bits  float64
	}{{"v6e-8", 4, 400e9}, {"v6e-16", 8, 400e9}} {
		s, err := ParseAcceleratorType(c.tpu)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewMultislice(s, 2, 0)
		if err != nil || m.DCNPerHost().Bits() != c.bits || m.Hosts() != c.hosts {
			t.Errorf("2 × %s: %v bit/s a host, %d hosts (%v), want %v and %d", c.tpu, m.DCNPerHost().Bits(), m.Hosts(), err, c.bits, c.hosts)
		}
	}
}

// TestTPU7x1ChipOneSlice: tpu7x-2, one chip on one tpu7x-standard-1t
// ([xpk-sys] @367c838: supported_topologies=['1x1x1']), is one slice:
// GKE's Multislice page allows Multislice on multi-host node pools only
// and no stored source runs it as more; tpu7x-8 (one whole 4-chip VM)
// still joins over DCN as before. A generation alone (no topology) is
// not refused here.
func TestTPU7x1ChipOneSlice(t *testing.T) {
	one, err := ParseAcceleratorType("tpu7x-2")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := NewMultislice(one, 1, 0); err != nil || m.Chips() != 1 || m.Hosts() != 1 || m.DCNPerHost().Bits() != 100e9 {
		t.Errorf("1 × tpu7x-2: %d chips, %d hosts, %v bit/s a host (%v), want 1, 1, 1e11 (the chip's share)", m.Chips(), m.Hosts(), m.DCNPerHost().Bits(), err)
	}
	_, err = NewMultislice(one, 2, 0)
	var pe *ParseError
	if !errors.As(err, &pe) || !errors.Is(err, ErrNoMultislice) || pe.Field != "slices" || !strings.Contains(pe.Valid, "tpu7x-8") {
		t.Errorf("2 × tpu7x-2: error %v, want ErrNoMultislice on slices naming tpu7x-8", err)
	}
	eight, err := ParseAcceleratorType("tpu7x-8")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewMultislice(eight, 2, 0); err != nil {
		t.Errorf("2 × tpu7x-8: %v", err)
	}
	gen, err := ParseTPU("tpu7x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewMultislice(gen, 2, 0); err != nil {
		t.Errorf("2 × tpu7x (no topology): %v", err)
	}
}
