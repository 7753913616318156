package mesh

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"shardlab/hw"
	"shardlab/unit"
)

// TestHybridRing64x4Links holds the links of MaxText's hybrid_ring_64x4
// to a derivation by hand from max_utils.py @449b4fe
// (reshape_mesh_to_rings) on a 16x16 slice whose dimensions both wrap
// (hw.Slice.Wraps), B the chip's one-way ICI link bandwidth:
//
//   - the axis of 4 is a[2i][2j] → a[2i][2j+1] → a[2i+1][2j+1] →
//     a[2i+1][2j] → back to a[2i][2j]: four steps of one link each, a
//     closed ring both ways: 2·B per chip, 4/2 = 2 hops, one ring.
//   - the axis of 64 is every other chip in both dimensions: 8 members
//     per dimension, 2 links apart, closing through the wraparound
//     (14 → 15 → 0). Both groups of a row step along the row's links at
//     once, so each link carries 2 groups each way: per dimension 2 ways
//     × B/2 = B, over 2 dimensions 2·B; a ring walk is 8/2 steps of 2
//     links per dimension, 2·4·2 = 16 hops.
//
// create_device_mesh's placement of the same layout (place) puts the
// axis of 4 on an open line of 4 chips of one dimension (B, 3 hops) and
// the axis of 64 on the other 4 of that dimension (B, 3 hops) plus the
// other, wrapped dimension of 16 (2·B, 8 hops).
func TestHybridRing64x4Links(t *testing.T) {
	ici := func(size, dims int, wrap bool, bw unit.BytesPerSecond, hops int) Link {
		return Link{Tier: hw.ICI, Size: size, Dims: dims, Wrap: wrap, Bandwidth: bw, Hops: hops, HopLatency: hw.ICIHopLatency}
	}
	for _, tt := range []struct {
		accel      string
		slices     int
		ring, over Axis
		dcn        []Degree
		b          unit.BytesPerSecond // [sb-tpus] one-way link bandwidth, hw's catalog
	}{
		// validate's v6e-mixtral-8x22b-dropped-256 (fsdp 64, expert 4).
		{"v6e-256", 1, Expert, FSDP, nil, 90e9},
		// MaxText's llama3-1-405b-8192-fsdp-dcn (fsdp 64, tensor 4, dcn fsdp 2).
		{"v6e-256", 2, Tensor, FSDP, []Degree{{Axis: FSDP, DCN: 2}}, 90e9},
		{"v5litepod-256", 1, Expert, Data, nil, 45e9},
	} {
		ms := multislice(t, tt.accel, tt.slices)
		deg := []Degree{{Axis: tt.ring, ICI: 4, DCN: 1}, {Axis: tt.over, ICI: 64, DCN: max(1, tt.slices)}}
		std, err := New(ms, deg...)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewCustom(ms, HybridRing64x4, deg...)
		if err != nil {
			t.Fatalf("%s %s: %v", tt.accel, std, err)
		}
		if got, want := m.Link(tt.ring), ici(4, 1, true, 2*tt.b, 2); got != want {
			t.Errorf("%s %s hybrid ring: Link(%v) = %+v, want %+v", tt.accel, m, tt.ring, got, want)
		}
		if got, want := m.Link(tt.over), ici(64, 2, true, 2*(2*tt.b/2), 16); got != want {
			t.Errorf("%s %s hybrid ring: Link(%v) = %+v, want %+v", tt.accel, m, tt.over, got, want)
		}
		if got, want := std.Link(tt.ring), ici(4, 1, false, tt.b, 3); got != want {
			t.Errorf("%s %s standard: Link(%v) = %+v, want %+v", tt.accel, std, tt.ring, got, want)
		}
		if got, want := std.Link(tt.over), ici(64, 2, false, tt.b+2*tt.b, 3+8); got != want {
			t.Errorf("%s %s standard: Link(%v) = %+v, want %+v", tt.accel, std, tt.over, got, want)
		}
		if m.Custom() != HybridRing64x4 || std.Custom() != Standard || m.String() != std.String() {
			t.Errorf("%s: Custom() = %v and %v, String() %q and %q, want hybrid_ring_64x4 and standard, one layout", tt.accel, m.Custom(), std.Custom(), m, std)
		}
		if s, err := NewCustom(ms, Standard, deg...); err != nil || s.links != std.links {
			t.Errorf("%s: NewCustom(Standard) links %v, %v, want New's %v", tt.accel, s.links, err, std.links)
		}
	}
}

// TestHybridRing64x4Reference holds placeHybridRing to a second
// derivation: the chips of each group as MaxText and JAX lay them out
// (hybridRingRef, transcribed from the sources), their ring steps routed
// on the 16x16 torus and the links' load counted (ringLinkRef).
func TestHybridRing64x4Reference(t *testing.T) {
	ms := multislice(t, "v6e-256", 1)
	m, err := NewCustom(ms, HybridRing64x4, Degree{Axis: FSDP, ICI: 64, DCN: 1}, Degree{Axis: Expert, ICI: 4, DCN: 1})
	if err != nil {
		t.Fatal(err)
	}
	pos := hybridRingRef()
	b := ms.Slice.Chip.ICILinkBandwidth
	// The axis of 4: one ring per square, f fixed, k = 0..3.
	var rings [][][2]int
	for f := range 64 {
		var r [][2]int
		for k := range 4 {
			r = append(r, pos[f][k])
		}
		rings = append(rings, r)
	}
	if got, want := m.Link(Expert), ringLinkRef(t, rings, b, 4); got != want {
		t.Errorf("Link(expert) = %+v, reference %+v", got, want)
	}
	// The axis of 64: f = 8i+j, a ring along j for each i and one along
	// i for each j, k fixed.
	rings = nil
	for k := range 4 {
		for i := range 8 {
			var ri, rj [][2]int
			for j := range 8 {
				rj = append(rj, pos[8*i+j][k])
				ri = append(ri, pos[8*j+i][k])
			}
			rings = append(rings, rj, ri)
		}
	}
	want := ringLinkRef(t, rings, b, 64)
	want.Dims = 2 // each member is on one ring along j and one along i
	want.Bandwidth *= 2
	want.Hops *= 2
	if got := m.Link(FSDP); got != want {
		t.Errorf("Link(fsdp) = %+v, reference %+v", got, want)
	}
}

// hybridRingRef is hybrid_ring_64x4 as MaxText builds it on a 16x16
// slice: pos[f][k] is the (y, x) of the chip at element f of the axis of
// 64 and k of the axis of 4. JAX's create_device_mesh([16, 16]) on the
// physical mesh of shape (16, 16, 1) assigns the last logical axis
// first, to the first pair of physical axes whose sizes multiply to 16,
// (x, z), and the first to y: a[r][c] is the chip at x = c, y = r
// (mesh_utils.py @dd4f396d _create_device_mesh_for_nd_torus, transpose
// (1, 0, 2)). reshape_mesh_to_rings (max_utils.py @449b4fe) then
// builds b[i][j] = [a[2i][2j], a[2i][2j+1], a[2i+1][2j+1], a[2i+1][2j]]
// and reshapes it to (64, 4).
func hybridRingRef() (pos [64][4][2]int) {
	for i := range 8 {
		for j := range 8 {
			ai, aj := i*2, j*2
			square := [4][2]int{{ai, aj}, {ai, aj + 1}, {ai + 1, aj + 1}, {ai + 1, aj}}
			for k, p := range square {
				pos[i*8+j][k] = p // np.reshape of (8, 8, 4) to (64, 4)
			}
		}
	}
	return pos
}

// ringLinkRef routes every step of every ring, both ways round and the
// closing step included, along the shortest path on the 16x16 torus
// (both dimensions wrap), counts the steps on each one-way link, and
// gives each step b over the most any link carries: a chip's bandwidth
// is that times its 2 steps (one each way), its hops half the ring
// times the longest step. It fails the test on a ring whose closing step
// is longer than its others (an open line).
func ringLinkRef(t *testing.T, rings [][][2]int, b unit.BytesPerSecond, size int) Link {
	t.Helper()
	type hop struct{ from, to [2]int }
	load := map[hop]int{}
	longest := 0
	for _, r := range rings {
		steps := make([]int, len(r))
		for s := range r {
			from, to := r[s], r[(s+1)%len(r)]
			for _, dir := range [][2][2]int{{from, to}, {to, from}} {
				path := route(dir[0], dir[1])
				steps[s] = len(path)
				for _, h := range path {
					load[hop{h[0], h[1]}]++
				}
			}
		}
		for s := range steps {
			longest = max(longest, steps[s])
			if steps[s] > steps[0] {
				t.Fatalf("ring %v: step %d is %d links, step 0 %d: not a closed ring of equal steps", r, s, steps[s], steps[0])
			}
		}
	}
	most := 0
	for _, n := range load {
		most = max(most, n)
	}
	n := len(rings[0])
	return Link{Tier: hw.ICI, Size: size, Dims: 1, Wrap: true, Bandwidth: 2 * b / unit.BytesPerSecond(most),
		Hops: n / 2 * longest, HopLatency: hw.ICIHopLatency}
}

// route is the one-way links of the shortest path from a to b on a 16x16
// torus, y first, then x (ties go up).
func route(a, b [2]int) [][2][2]int {
	var path [][2][2]int
	cur := a
	for d := range 2 {
		fwd := ((b[d]-cur[d])%16 + 16) % 16
		step, n := 1, fwd
		if fwd > 8 {
			step, n = -1, 16-fwd
		}
		for range n {
			next := cur
			next[d] = (cur[d] + step + 16) % 16
			path = append(path, [2][2]int{cur, next})
			cur = next
		}
	}
	return path
}

func TestNewCustomErrors(t *testing.T) {
	for _, tt := range []struct {
		accel string
		c     Custom
		deg   []Degree
		want  string
	}{
		{"v5p-512", HybridRing64x4, []Degree{{Axis: FSDP, ICI: 64, DCN: 1}, {Axis: Expert, ICI: 4, DCN: 1}}, "a 16x16 slice"},
		{"v6e-256", HybridRing64x4, []Degree{{Axis: FSDP, ICI: 256, DCN: 1}}, "one axis of 64 and one of 4"},
		{"v6e-256", HybridRing64x4, []Degree{{Axis: FSDP, ICI: 16, DCN: 1}, {Axis: Expert, ICI: 4, DCN: 1}, {Axis: Tensor, ICI: 4, DCN: 1}}, "one axis of 64 and one of 4"},
		{"v6e-256", Custom(7), []Degree{{Axis: FSDP, ICI: 256, DCN: 1}}, `"" (none) or hybrid_ring_64x4`},
	} {
		_, err := NewCustom(multislice(t, tt.accel, 1), tt.c, tt.deg...)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(fmt.Sprint(err), "custom_mesh") || !strings.Contains(fmt.Sprint(err), tt.want) {
			t.Errorf("NewCustom(%s, %v, %v) error = %v, want ErrInvalid naming custom_mesh and %q", tt.accel, tt.c, tt.deg, err, tt.want)
		}
	}
}

func TestParseCustom(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Custom
		ok   bool
	}{
		{"", Standard, true},
		{"hybrid_ring_64x4", HybridRing64x4, true},
		{"hybrid_ring_32x8", -1, false}, // MaxText has it; its placement is not modelled
		{"Hybrid_Ring_64x4", -1, false}, // MaxText compares exactly
		{"ring", -1, false},
	} {
		got, err := ParseCustom(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseCustom(%q) = %v, %v, want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `custom_mesh = "`+tt.in+`"`) ||
			!strings.Contains(err.Error(), "hybrid_ring_64x4")) {
			t.Errorf("ParseCustom(%q) error = %v, want ErrInvalid naming the field, the value and hybrid_ring_64x4", tt.in, err)
		}
	}
}

func FuzzParseCustom(f *testing.F) {
	for _, s := range []string{"", "hybrid_ring_64x4", "hybrid_ring_32x8", " hybrid_ring_64x4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCustom(s)
		if err != nil {
			return
		}
		if again, err := ParseCustom(c.String()); err != nil || again != c || c.String() != s {
			t.Fatalf("ParseCustom(%q) = %v; its String %q reads back as %v, %v", s, c, c.String(), again, err)
		}
	})
}

func ExampleNewCustom() {
	s, _ := hw.ParseAcceleratorType("v6e-256")
	ms, _ := hw.NewMultislice(s, 1, 0)
	deg := []Degree{{Axis: FSDP, ICI: 64, DCN: 1}, {Axis: Expert, ICI: 4, DCN: 1}}
	std, _ := New(ms, deg...)
	m, _ := NewCustom(ms, HybridRing64x4, deg...)
	fmt.Println(std.Link(Expert).Bandwidth, std.Link(FSDP).Bandwidth)
	fmt.Println(m.Link(Expert).Bandwidth, m.Link(FSDP).Bandwidth)
	// Output:
	// 90.0 GB/s 270 GB/s
	// 180 GB/s 180 GB/s
}
