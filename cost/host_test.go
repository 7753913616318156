package cost

import (
	"strings"
	"testing"

	"shardlab/unit"
)

// TestMemoryHostFits: offloaded bytes are held to the chip's share of
// its VM's RAM where that is published, and not checked where it is not
// (HostUnchecked says so, and only where something is offloaded);
// Shortfall names each memory that overflows and by how much.
func TestMemoryHostFits(t *testing.T) {
	tests := []struct {
		name            string
		m               Memory
		fits, unchecked bool
		shortfall       []string
	}{
		{"nothing offloaded", Memory{Weights: 5, Usable: 10, HostUsable: 4}, true, false, nil},
		{"nothing offloaded, RAM not published", Memory{Weights: 5, Usable: 10}, true, false, nil},
		{"host within its RAM", Memory{Weights: 5, Usable: 10, Host: 4, HostUsable: 4}, true, false, nil},
		{"RAM not published", Memory{Weights: 5, Usable: 10, Host: 1 << 40}, true, true, nil},
		{"host over", Memory{Weights: 5, Usable: 10, Host: 7, HostUsable: 4}, false, false, []string{"host memory by 3 B (7 B offloaded per chip, 4 B of its VM's RAM)"}},
		{"HBM over", Memory{Weights: 12, Usable: 10}, false, false, []string{"HBM by 2 B"}},
		{"both over", Memory{Weights: 12, Usable: 10, Host: 5, HostUsable: 4}, false, false, []string{"HBM by 2 B", " and ", "host memory by 1 B"}},
	}
	for _, tt := range tests {
		if got := tt.m.Fits(); got != tt.fits {
			t.Errorf("%s: Fits %v, want %v", tt.name, got, tt.fits)
		}
		if got := tt.m.HostUnchecked(); got != tt.unchecked {
			t.Errorf("%s: HostUnchecked %v, want %v", tt.name, got, tt.unchecked)
		}
		s := tt.m.Shortfall()
		if (s == "") != tt.fits {
			t.Errorf("%s: Shortfall %q with Fits %v", tt.name, s, tt.fits)
		}
		for _, w := range tt.shortfall {
			if !strings.Contains(s, w) {
				t.Errorf("%s: Shortfall %q, want it to say %q", tt.name, s, w)
			}
		}
	}
}

// TestHostUncheckedOnV4: the catalog publishes no RAM for v4's VM
// (ct4p-hightpu-4t: cloud.google.com/tpu/docs/v4 gives its chips, not its
// RAM), so what Llama 3 8B's minimal_offloaded policy moves to the host
// there is unchecked; on v6e-4, one ct6e-standard-4t whose 720 GB
// [gcp-v6e] serve 4 chips, it is checked against 180 GB a chip.
func TestHostUncheckedOnV4(t *testing.T) {
	j := NewJob(lookup(t, "llama3-8b"), 8192, 8)
	j.Remat = RematMinimalOffloaded
	e := NewEstimator()
	for _, c := range []struct {
		tpu       string
		ram       unit.Bytes
		unchecked bool
	}{{"v4-8", 0, true}, {"v6e-4", 720 * unit.GB / 4, false}} {
		m := layout(t, c.tpu, 1, "fsdp=4")
		mem, err := e.Memory(j, m)
		if err != nil {
			t.Fatal(err)
		}
		if mem.Host == 0 || mem.HostUsable != c.ram || mem.HostUnchecked() != c.unchecked {
			t.Errorf("%s: host %v offloaded of %v, unchecked %v; want something offloaded of %v, unchecked %v",
				c.tpu, mem.Host, mem.HostUsable, mem.HostUnchecked(), c.ram, c.unchecked)
		}
	}
	j.Remat = RematMinimal
	if mem, err := e.Memory(j, layout(t, "v4-8", 1, "fsdp=4")); err != nil || mem.HostUnchecked() {
		t.Errorf("v4-8 with nothing offloaded: host %v, unchecked %v (%v); want nothing unchecked", mem.Host, mem.HostUnchecked(), err)
	}
}

// TestMaxMicroBatchHostBound: Llama 3 405B on a TPU7x pod slice with only
// its layer inputs offloaded (decoder_layer_input=offload, the scan's
// carry: MaxText's policy moves it to pinned_host) is bound by host
// memory, not HBM. By hand: a sequence of 8,192 tokens offloads 126
// layers x 8,192 x 16,384 x 2 bytes = 33.82 GB per chip (the batch is
// split over the chips by fsdp); a tpu7x-standard-4t VM's 960 GB serve 4
// chips, 240 GB each, so 7 sequences (236.8 GB) fit and 8 (270.6 GB) do
// not. The same job with the RAM unknown is held to HBM only, and fits
// more.
func TestMaxMicroBatchHostBound(t *testing.T) {
	spec := lookup(t, "llama3-405b")
	j := NewJob(spec, 8192, 256)
	j.Remat = RematCustom
	var err error
	if j.Custom, err = ParseCustom("decoder_layer_input=offload"); err != nil {
		t.Fatal(err)
	}
	m := layout(t, "tpu7x-512", 1, "fsdp=256")
	slice := m.Multislice.Slice
	perSeq := unit.Bytes(126 * 8192 * 16384 * 2)
	if got, want := slice.HostRAMPerChip(), 960*unit.GB/4; got != want {
		t.Fatalf("host RAM per chip %v, want %v", got, want)
	}
	want := int(slice.HostRAMPerChip() / perSeq)
	if want != 7 {
		t.Fatalf("hand derivation: %d sequences, want 7", want)
	}
	e := NewEstimator()
	got, err := e.MaxMicroBatch(j, m, 64)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("most sequences per chip %d, want %d (host memory binds)", got, want)
	}
	if n, why, err := e.MaxMicroBatchBound(j, m, 64); err != nil || n != want || why != ReasonHost {
		t.Errorf("MaxMicroBatchBound = %d, %q, %v; want %d, %q", n, why, err, want, ReasonHost)
	}
	if n, why, err := e.MaxMicroBatchBound(j, m, want); err != nil || n != want || why != "" {
		t.Errorf("MaxMicroBatchBound at a limit of %d = %d, %q, %v; want the limit to bind", want, n, why, err)
	}
	j.GlobalBatch = 256 * (want + 1)
	mem, err := e.Memory(j, m)
	if err != nil {
		t.Fatal(err)
	}
	if mem.Host != perSeq*unit.Bytes(want+1) || mem.Fits() || mem.Total() > mem.Usable {
		t.Errorf("at %d a chip: host %v (want %v), fits %v, HBM %v of %v: want only host memory over", want+1, mem.Host, perSeq*unit.Bytes(want+1), mem.Fits(), mem.Total(), mem.Usable)
	}
	m.Multislice.Slice.Chip.Host.RAM = 0
	hbmOnly, err := e.MaxMicroBatch(j, m, 64)
	if err != nil {
		t.Fatal(err)
	}
	if hbmOnly <= want {
		t.Errorf("RAM unknown: %d sequences a chip, want more than the host-bound %d", hbmOnly, want)
	}
	if n, why, err := e.MaxMicroBatchBound(j, m, 64); err != nil || n != hbmOnly || why != ReasonHBM {
		t.Errorf("RAM unknown: MaxMicroBatchBound = %d, %q, %v; want %d, %q", n, why, err, hbmOnly, ReasonHBM)
	}
}

// TestBatchMemoryCheckSaysWhy: BatchMemory.Check names the memory that
// overflows, as Memory.Reason does for the same job: the host-bound 405B
// above fits at 7 sequences a chip, overflows its host's RAM at 8 with
// HBM to spare, and overflows HBM too far above.
func TestBatchMemoryCheckSaysWhy(t *testing.T) {
	j := NewJob(lookup(t, "llama3-405b"), 8192, 256)
	j.Remat = RematCustom
	var err error
	if j.Custom, err = ParseCustom("decoder_layer_input=offload"); err != nil {
		t.Fatal(err)
	}
	m := layout(t, "tpu7x-512", 1, "fsdp=256")
	e := NewEstimator()
	bm, err := e.BatchMemory(j, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		perChip int
		want    Reason
	}{{7, ""}, {8, ReasonHost}, {64, ReasonHBM}} {
		got, err := bm.Check(256 * c.perChip)
		if err != nil {
			t.Fatal(err)
		}
		j.GlobalBatch = 256 * c.perChip
		mem, err := e.Memory(j, m)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want || mem.Reason() != c.want {
			t.Errorf("%d a chip: Check %q, Memory.Reason %q, want %q", c.perChip, got, mem.Reason(), c.want)
		}
	}
}

// TestAtEdge: a job is at the edge when it fits but leaves less free than
// the band's median error of its estimate: with a 20 % band, 80 of 100
// leaves 20, more than 16 (not at the edge); 85 leaves 15, less than 17
// (at the edge); 101 does not fit at all (not "at the edge").
func TestAtEdge(t *testing.T) {
	b := ErrorBand{Median: 0.2, Cases: 2}
	for _, c := range []struct {
		used unit.Bytes
		want bool
	}{{80, false}, {85, true}, {100, true}, {101, false}, {0, false}} {
		if got := b.AtEdge(c.used, 100); got != c.want {
			t.Errorf("%v of 100: at the edge %v, want %v", c.used, got, c.want)
		}
	}
	if MemoryErrorOf(lookup(t, "mixtral-8x7b")) != MemoryErrorMoE || MemoryErrorOf(lookup(t, "llama3-8b")) != MemoryErrorDense {
		t.Error("MemoryErrorOf: want the MoE band for a mixture of experts and the dense band otherwise")
	}
}

// TestPlacesStringRoundTrips: a custom policy spelt by Places.String reads
// back as the same places, the offloaded layer input included (review:
// "decoder_layer_input=offload" printed as "custom ()"); the layer input
// kept on the device, as the scan always keeps it, is left unsaid.
func TestPlacesStringRoundTrips(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"decoder_layer_input=offload", "decoder_layer_input=offload"},
		{"decoder_layer_input=offload,query_proj=device", "decoder_layer_input=offload,query_proj=device"},
		{"decoder_layer_input=device,out_proj=offload", "out_proj=offload"},
		{"", ""},
	} {
		p, err := ParseCustom(c.in)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		got := p.String()
		back, err := ParseCustom(got)
		if got != c.want || err != nil || back != p {
			t.Errorf("%q spelt %q (reads back equal: %v, %v), want %q", c.in, got, back == p, err, c.want)
		}
	}
}
