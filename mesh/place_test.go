package mesh

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"shardlab/hw"
)

// TestEveryAxis walks the axis table generically: a new axis is covered by
// adding its row.
func TestEveryAxis(t *testing.T) {
	if n := len(axisNames.List()); n != NumAxes {
		t.Errorf("axisNames has %d names, want one for each of the %d axes", n, NumAxes)
	}
	places := map[int]Axis{}
	for _, a := range All() {
		if got, err := ParseAxis(a.String()); err != nil || got != a {
			t.Errorf("ParseAxis(%q) = %v, %v, want %v", a.String(), got, err, a)
		}
		b, err := json.Marshal(Degree{Axis: a, ICI: 2, DCN: 1})
		if err != nil {
			t.Fatal(err)
		}
		var d Degree
		if err := json.Unmarshal(b, &d); err != nil || d.Axis != a {
			t.Errorf("JSON %s reads back as %v, %v, want %v", b, d.Axis, err, a)
		}
		if other, dup := places[axes[a].place]; dup {
			t.Errorf("axes %v and %v share place %d", a, other, axes[a].place)
		}
		places[axes[a].place] = a

		// The axis alone over a whole 4x4x4 slice, and over DCN where allowed.
		ms := multislice(t, "v5p-128", 2)
		dcn := Degree{Axis: Data, ICI: 1, DCN: 2}
		if a.CrossesDCN() {
			dcn = Degree{Axis: a, ICI: 1, DCN: 2}
		}
		deg := []Degree{{Axis: a, ICI: 64, DCN: 1}}
		if dcn.Axis == a {
			deg[0].DCN = 2
		} else {
			deg = append(deg, dcn)
		}
		m, err := New(ms, deg...)
		if err != nil {
			t.Fatalf("%v over the slice: %v", a, err)
		}
		if again, err := Parse(ms, m.String()); err != nil || again.String() != m.String() {
			t.Errorf("Parse(%q) = %v, %v", m.String(), again, err)
		}
		if m.Size(a) != 64*m.Degree(a).DCN {
			t.Errorf("%v: Size = %d, want %d", a, m.Size(a), 64*m.Degree(a).DCN)
		}
		// v5p: 3 wrapped dimensions of 4, 90 GB/s one way per link.
		want := Link{Tier: hw.ICI, Size: 64, Dims: 3, Wrap: true, Bandwidth: 3 * 180e9, Hops: 6, HopLatency: hw.ICIHopLatency}
		if got := m.Link(a); got != want {
			t.Errorf("Link(%v) = %+v, want %+v", a, got, want)
		}
		g := m.Group(5, a)
		if len(g.Devices) != m.Size(a) || g.ICI != 64 || g.DCN != m.Degree(a).DCN || g.String() != a.String() {
			t.Errorf("Group(5, %v) = %d devices, ICI %d, DCN %d, name %q, want %d, 64, %d, %q", a, len(g.Devices), g.ICI, g.DCN, g, m.Size(a), m.Degree(a).DCN, a)
		}
		for k, id := range g.Devices { // slice by slice, device 5 in slice 0
			if m.Slice(id) != k/g.ICI {
				t.Errorf("Group(5, %v) member %d is device %d of slice %d, want slice %d", a, k, id, m.Slice(id), k/g.ICI)
				break
			}
		}
	}
	if a, err := ParseAxis("expert"); err != nil || a != Expert {
		t.Errorf(`ParseAxis("expert") = %v, %v, want the expert axis`, a, err)
	}
}

// TestCoordDevice checks Coord against Device, its inverse, on every device.
func TestCoordDevice(t *testing.T) {
	for _, tt := range []struct {
		accel  string
		slices int
		spec   string
	}{
		{"v5litepod-4", 2, "data=2(dcn),fsdp=2,tensor=2"},
		{"v5p-128", 4, "pipeline=2(dcn),data=2(dcn),fsdp=8,tensor=2,context=2,pipeline=2"},
		{"v5litepod-16", 1, "context=2,pipeline=2,tensor=2,data=2"},
	} {
		m, err := ParseOn(tt.accel, tt.slices, tt.spec)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[Coord]int{}
		sliceOf := map[Coord]int{} // DCN parts of a coordinate -> slice
		for id := range m.Chips() {
			c := m.Coord(id)
			if prev, dup := seen[c]; dup {
				t.Errorf("%s: devices %d and %d both at %v", m, prev, id, c)
			}
			seen[c] = id
			var dcn Coord
			for _, a := range All() {
				d := m.Degree(a)
				if c[a] < 0 || c[a] >= d.Size() {
					t.Errorf("%s: device %d coordinate %v out of range on %v", m, id, c, a)
				}
				dcn[a] = c[a] / d.ICI
			}
			if s, ok := sliceOf[dcn]; ok && s != m.Slice(id) {
				t.Errorf("%s: device %d in slice %d shares DCN parts %v with slice %d", m, id, m.Slice(id), dcn, s)
			}
			sliceOf[dcn] = m.Slice(id)
			if got, ok := m.Device(c); !ok || got != id {
				t.Errorf("%s: Device(Coord(%d) = %v) = %d, %v", m, id, c, got, ok)
			}
		}
		var out Coord
		out[Data] = m.Size(Data)
		if _, ok := m.Device(out); ok {
			t.Errorf("%s: Device(%v) found a device outside the mesh", m, out)
		}
	}
}

func TestGroup(t *testing.T) {
	// v5e 2x2 slices, two of them: per slice, device = fsdp + 2·tensor;
	// data crosses the slices (devices 4..7 are slice 1).
	m, err := ParseOn("v5litepod-4", 2, "data=2(dcn),fsdp=2,tensor=2")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dev  int
		axes []Axis
		want []int
		ici  int
		dcn  int
	}{
		{0, []Axis{Data}, []int{0, 4}, 1, 2},
		{0, []Axis{FSDP}, []int{0, 1}, 2, 1},
		{0, []Axis{Tensor}, []int{0, 2}, 2, 1},
		{3, []Axis{Tensor}, []int{1, 3}, 2, 1},
		{0, []Axis{Data, FSDP}, []int{0, 1, 4, 5}, 2, 2},   // slice 0's members, then slice 1's
		{6, []Axis{Tensor, FSDP}, []int{4, 5, 6, 7}, 4, 1}, // tensor slowest, fsdp fastest
		{0, []Axis{FSDP, Tensor}, []int{0, 2, 1, 3}, 4, 1}, // fsdp slowest
		{7, []Axis{Pipeline, Context}, []int{7}, 1, 1},     // degree-1 axes
		{5, []Axis{Data, Context}, []int{1, 5}, 1, 2},      // the gradient group
	}
	for _, tt := range tests {
		g := m.Group(tt.dev, tt.axes...)
		if !slices.Equal(g.Devices, tt.want) || g.ICI != tt.ici || g.DCN != tt.dcn {
			t.Errorf("Group(%d, %v) = %v (ICI %d, DCN %d), want %v (ICI %d, DCN %d)", tt.dev, tt.axes, g.Devices, g.ICI, g.DCN, tt.want, tt.ici, tt.dcn)
		}
	}
	if got := m.Group(0, Data, Context).String(); got != "data×context" {
		t.Errorf("group name = %q, want data×context", got)
	}
}

func TestLinks(t *testing.T) {
	m, err := ParseOn("v5p-128", 2, "data=2(dcn),tensor=4,fsdp=16")
	if err != nil {
		t.Fatal(err)
	}
	// tensor takes one wrapped dimension of 4 (180 GB/s, 2 hops), fsdp the
	// other two (360 GB/s, 4 hops); together they span the torus.
	want := Link{Tier: hw.ICI, Size: 64, Dims: 3, Wrap: true, Bandwidth: 540e9, Hops: 6, HopLatency: hw.ICIHopLatency}
	if got := m.Link(Tensor, FSDP); got != want {
		t.Errorf("Link(tensor, fsdp) = %+v, want %+v", got, want)
	}
	if got := m.Link(Data); got.Size != 1 || got.Bandwidth != 0 {
		t.Errorf("Link(data) with ICI 1 = %+v, want size 1 and no bandwidth", got)
	}
	// v5p: 90 GB/s one way per ICI link, 50 Gbit/s of DCN per chip.
	tests := []struct {
		a, b int
		want Link
	}{
		{0, 1, Link{Tier: hw.ICI, Size: 2, Dims: 1, Bandwidth: 90e9, Hops: 1, HopLatency: hw.ICIHopLatency}},
		{63, 64, Link{Tier: hw.DCN, Size: 2, Bandwidth: 50e9 / 8}},
		{64, 127, Link{Tier: hw.ICI, Size: 2, Dims: 1, Bandwidth: 90e9, Hops: 1, HopLatency: hw.ICIHopLatency}},
	}
	for _, tt := range tests {
		if got := m.PeerLink(tt.a, tt.b); got != tt.want {
			t.Errorf("PeerLink(%d, %d) = %+v, want %+v", tt.a, tt.b, got, tt.want)
		}
	}
}

func ExampleMesh_Group() {
	m, _ := ParseOn("v5litepod-4", 2, "data=2(dcn),fsdp=2,tensor=2")
	fmt.Println(m.Coord(5))
	g := m.Group(5, Data, FSDP)
	fmt.Println(g, g.Devices, m.PeerLink(5, 1).Tier)
	// Output:
	// [1 1 0 0 0 0]
	// data×fsdp [0 1 4 5] DCN
}
