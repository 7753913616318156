package collective

import (
	"fmt"
	"math"
	"testing"
	"time"

	"shardlab/hw"
	"shardlab/unit"
)

func TestBytes(t *testing.T) {
	const S = 1200 // divisible by every n below
	tests := []struct {
		op   Op
		n    int
		want unit.Bytes
	}{
		{AllReduce, 2, S},       // 2(n−1)/n = 1
		{AllReduce, 4, 1800},    // 2·3/4
		{AllReduce, 1, 0},       // no peers, no traffic
		{AllGather, 4, 900},     // 3/4
		{ReduceScatter, 3, 800}, // 2/3
		{AllToAll, 6, 1000},     // 5/6
		{SendRecv, 2, S},        // the message
		{AllGather, 1200, 1199}, // (n−1)/n with one-byte chunks
	}
	for _, tt := range tests {
		if got := Bytes(tt.op, tt.n, S); got != tt.want {
			t.Errorf("Bytes(%v, %d, %d) = %d, want %d", tt.op, tt.n, S, got, tt.want)
		}
	}
}

func TestFSDPIsOneAndAHalfDP(t *testing.T) {
	// ZeRO (Rajbhandari et al. 2019, §7): stage 3 moves 3Ψ per step (all-gather
	// in forward, again in backward, reduce-scatter of gradients) against 2Ψ
	// for data parallelism's all-reduce: 1.5x.
	for _, n := range []int{2, 4, 8, 64} {
		s := unit.Bytes(64 * 1024)
		dp := Bytes(AllReduce, n, s)
		fsdp := 2*Bytes(AllGather, n, s) + Bytes(ReduceScatter, n, s)
		if 2*fsdp != 3*dp {
			t.Errorf("n=%d: FSDP %d bytes, DP %d bytes, want ratio 1.5", n, fsdp, dp)
		}
	}
}

func TestTime(t *testing.T) {
	// Scaling book (sharding.md): an all-gather of V bytes over a bidirectional
	// ring takes about V/W_bidi, independent of the axis size; all-reduce is
	// twice that. v5p axis with wraparound: W = 2·90 GB/s.
	l := Link{Bandwidth: 180e9, Hops: 2, HopLatency: hw.ICIHopLatency}
	v := unit.Bytes(1 << 30)
	ag := Time(AllGather, 4, v, l)
	want := time.Duration(float64(v)*3/4/180e9*1e9) + 2*time.Microsecond
	if ag != want {
		t.Errorf("all-gather = %v, want %v", ag, want)
	}
	ar := Time(AllReduce, 4, v, l)
	if ar != 2*ag {
		t.Errorf("all-reduce %v, want twice all-gather %v", ar, ag)
	}
	if got := Time(AllGather, 1, v, l); got != 0 {
		t.Errorf("all-gather over 1 device = %v, want 0", got)
	}
}

func TestHierarchicalAllReduceDCNBits(t *testing.T) {
	// Summed over the chips of one slice, the DCN bytes of the hierarchical
	// all-reduce of fp32 gradients are the Multislice guidance's bits per
	// parameter: exactly 32 for two slices, approaching 64 for many.
	const params = 1 << 20
	const nICI = 64
	grads := unit.Bytes(4 * params)
	ici := Link{Bandwidth: 360e9}
	dcn := Link{Bandwidth: unit.BitsPerSecond(50e9)}
	c := Hierarchical(AllReduce, grads, nICI, ici, 2, dcn)
	if bits := float64(c.DCNBytes) * nICI * 8 / params; bits != 32 {
		t.Errorf("2 slices: %v DCN bits per parameter, want 32", bits)
	}
	c = Hierarchical(AllReduce, grads, nICI, ici, 64, dcn)
	if bits := float64(c.DCNBytes) * nICI * 8 / params; math.Abs(bits-64*63/64.0) > 1e-9 {
		t.Errorf("64 slices: %v DCN bits per parameter, want 63", bits)
	}
	if MultisliceBitsPerParam(2) != 32 || MultisliceBitsPerParam(3) != 64 || MultisliceBitsPerParam(16) != 64 || MultisliceBitsPerParam(1) != 0 {
		t.Error("MultisliceBitsPerParam does not give 32 for two slices and 64 for more")
	}
	// ICI part: a reduce-scatter and an all-gather of the full buffer.
	if want := 2 * Bytes(AllGather, nICI, grads); c.ICIBytes != want {
		t.Errorf("ICI bytes = %d, want %d", c.ICIBytes, want)
	}
}

func TestMultisliceMinimumBatch(t *testing.T) {
	// Cloud TPU Multislice guidance: with its chips (275 TFLOP/s, TPU v4) and
	// 12.5 Gbit/s of DCN per chip, the theoretical minimum is 176k tokens per
	// pod for two slices and 352k for more; in practice about 350k and 700k.
	v4, err := hw.Lookup("v4")
	if err != nil {
		t.Fatal(err)
	}
	if got := float64(v4.PeakBF16) / v4.DCNPerChip.Bits(); got != 22000 {
		t.Errorf("v4 FLOP per DCN bit = %v, want 22000", got)
	}
	tests := []struct {
		slices         int
		min, practical float64
	}{
		{2, 176000, 350000},
		{4, 352000, 700000},
		{32, 352000, 700000},
	}
	for _, tt := range tests {
		got := MinTokensPerSlice(v4.PeakBF16, v4.DCNPerChip, tt.slices, 1, 1) // dense: active = total
		if got != tt.min {
			t.Errorf("MinTokensPerSlice(v4, %d slices) = %v, want %v", tt.slices, got, tt.min)
		}
		// the doc rounds 2x to 350k / 700k
		if p := got * PracticalHeadroom; math.Abs(p-tt.practical)/tt.practical > 0.01 {
			t.Errorf("practical minimum %v, want about %v", p, tt.practical)
		}
		// At the minimum, intensity equals the chip's FLOP per DCN bit.
		if i := DCNIntensity(got, tt.slices, 1, 1); i != 22000 {
			t.Errorf("DCNIntensity at the minimum = %v, want 22000", i)
		}
	}
}

func TestMultisliceMinimumBatchMoE(t *testing.T) {
	// A mixture of experts, by hand. DeepSeek-V3 (arXiv:2412.19437,
	// abstract: "671B total parameters with 37B activated for each
	// token") on 8 slices of v5p (459 TFLOP/s bf16, 50 Gbit/s of DCN a
	// chip; Cloud TPU v5p docs): the all-reduce carries 64 bits for each
	// of the 671B gradients, 64·671e9 bits; the backward pass does 4
	// FLOPs per active parameter per token, 4·B·37e9 FLOPs. They take as
	// long when 4·B·37e9/459e12 = 64·671e9/50e9, so
	// B = 64/4 · 459e12/50e9 · 671/37 = 146,880 · 18.135 = 2,663,689
	// tokens per slice (146,880 for a dense model of 671B).
	peak, dcn := unit.FLOPsPerSecond(459e12), unit.BitsPerSecond(50e9)
	const active, total = 37e9, 671e9
	if got, want := MinTokensPerSlice(peak, dcn, 8, total, total), 146880.0; math.Abs(got-want) > 0.5 {
		t.Errorf("MinTokensPerSlice(v5p, 8 slices, dense) = %v, want %v", got, want)
	}
	got := MinTokensPerSlice(peak, dcn, 8, active, total)
	if want := 2663689.0; math.Abs(got-want) > 1 {
		t.Errorf("MinTokensPerSlice(v5p, 8 slices, 37B of 671B active) = %v, want %v", got, want)
	}
	// at the break-even the intensity is the chip's FLOP per DCN bit
	if i, want := DCNIntensity(got, 8, active, total), 459e12/50e9; math.Abs(i-want) > 1e-6*want {
		t.Errorf("DCNIntensity at the MoE break-even = %v, want %v", i, want)
	}
	if got := MinTokensPerSlice(peak, dcn, 8, 0, total); got != 0 {
		t.Errorf("MinTokensPerSlice with no active parameters = %v, want 0", got)
	}
}

func ExampleHierarchical() {
	// 4 GiB of fp32 gradients, 64 chips per slice, 2 slices of v5p.
	c := Hierarchical(AllReduce, 4<<30, 64, Link{Bandwidth: 360e9}, 2, Link{Bandwidth: unit.BitsPerSecond(50e9)})
	fmt.Println(c.ICIBytes, c.DCNBytes, c.Time().Round(time.Millisecond))
	// Output:
	// 7.88 GiB 64.0 MiB 34ms
}

// The scaling book: an all-to-all on a bidirectional ring of n is a
// quarter of an all-gather of the whole array, n/4 times the switched
// cost.
// On a 4x4 torus the 4-long dimensions set the time: 2 × 4 / 4 = 2
// against the two rings' summed bandwidth; 4x4x4: 3 × 4 / 4 = 3.
func TestTorusAllToAllFactor(t *testing.T) {
	for _, c := range []struct {
		n, dims int
		want    float64
	}{{2, 1, 1}, {4, 1, 1}, {8, 1, 2}, {16, 1, 4}, {16, 2, 2}, {64, 3, 3}, {4, 2, 1}} {
		if got := TorusAllToAllFactor(c.n, c.dims); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("TorusAllToAllFactor(%d, %d) = %g, want %g", c.n, c.dims, got, c.want)
		}
	}
}

// TestAllToAllCost derives an all-to-all of 4 devices in each of 2 slices
// by hand. A device's buffer is 8 MB: it keeps 1/8 and sends 7 MB, 3 MB
// to its 3 peers in the slice and 4 MB to the 4 in the other. On a
// 4-ring (one dimension, 100 GB/s, 2 hops of 1 µs) the factor is 4/4 = 1:
// 3 MB / 100 GB/s = 30 µs + 2 µs. On DCN (10 GB/s, 5 µs a hop) it is
// switched: 4 MB / 10 GB/s = 400 µs + one hop. Hierarchical gives the
// same for an all-to-all: there is one formula.
func TestAllToAllCost(t *testing.T) {
	ici := Link{Bandwidth: 100e9, Hops: 2, HopLatency: time.Microsecond, Dims: 1}
	dcn := Link{Bandwidth: 10e9, Hops: 1, HopLatency: 5 * time.Microsecond}
	got := AllToAllCost(8e6, 4, ici, 2, dcn)
	want := Cost{ICIBytes: 3e6, DCNBytes: 4e6, ICITime: 32 * time.Microsecond, DCNTime: 405 * time.Microsecond}
	if got != want {
		t.Errorf("AllToAllCost(8 MB, 4 x 2) = %+v, want %+v", got, want)
	}
	if h := Hierarchical(AllToAll, 8e6, 4, ici, 2, dcn); h != got {
		t.Errorf("Hierarchical(AllToAll) = %+v, want AllToAllCost's %+v", h, got)
	}
	// 16 on one ring: the factor is 16/4 = 4, so 15/16 of 16 MB over
	// 100 GB/s takes 4 x 150 µs, plus the hops.
	if got := AllToAllCost(16e6, 16, ici, 1, dcn); got.ICITime != 602*time.Microsecond || got.DCNBytes != 0 || got.DCNTime != 0 {
		t.Errorf("AllToAllCost(16 MB, 16 on a ring) = %+v, want 602 µs on ICI and nothing on DCN", got)
	}
	// slices alone: everything crosses DCN
	if got := AllToAllCost(8e6, 1, ici, 4, dcn); got.ICIBytes != 0 || got.DCNBytes != 6e6 || got.DCNTime != 605*time.Microsecond {
		t.Errorf("AllToAllCost(8 MB, 4 slices) = %+v, want 6 MB in 605 µs on DCN", got)
	}
	if got := AllToAllCost(8e6, 1, ici, 1, dcn); got != (Cost{}) {
		t.Errorf("AllToAllCost on one device = %+v, want nothing", got)
	}
}

// TestOpNames: each operation's name, as shardlab's text and traces print
// it, and the type and number for a value that is no operation.
func TestOpNames(t *testing.T) {
	for op, want := range map[Op]string{AllReduce: "all-reduce", AllGather: "all-gather", ReduceScatter: "reduce-scatter",
		AllToAll: "all-to-all", SendRecv: "send/recv", SendRecv + 1: "Op(5)", -1: "Op(-1)"} {
		if got := op.String(); got != want {
			t.Errorf("Op(%d).String() = %q, want %q", int(op), got, want)
		}
	}
}
