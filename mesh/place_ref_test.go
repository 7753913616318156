package mesh

import (
	"fmt"
	"math"
	"os"
	"sort"
	"testing"

	"shardlab/hw"
)

// TestPlaceMatchesReference holds place to placeRef, the placement as it
// was written before it stopped allocating (commit 1b75c90, mesh/mesh.go),
// on every accelerator type of every catalog chip and, evenly spread,
// up to perType factorizations of its chips over the axes (every one of
// them, about 2.9 million, without -short and with
// SHARDLAB_PLACE_ALL=1, in about 8 s).
func TestPlaceMatchesReference(t *testing.T) {
	perType := 500
	if os.Getenv("SHARDLAB_PLACE_ALL") == "1" && !testing.Short() {
		perType = math.MaxInt
	}
	n := 0
	for _, c := range hw.Chips() {
		for _, name := range c.AcceleratorTypes() {
			s, err := hw.ParseAcceleratorType(name)
			if err != nil {
				t.Fatal(err)
			}
			ms, err := hw.NewMultislice(s, 1, 0)
			if err != nil {
				continue
			}
			fs := factorsOver(s.Chips(), NumAxes)
			step := max(1, len(fs)/perType)
			for i := 0; i < len(fs); i += step {
				f := fs[i]
				var ds []Degree
				for a, ici := range f {
					ds = append(ds, Degree{Axis: Axis(a), ICI: ici, DCN: 1})
				}
				m, err := New(ms, ds...)
				if err != nil {
					t.Fatalf("%s %v: %v", name, f, err)
				}
				want := m
				want.placeRef()
				if m.links != want.links {
					t.Errorf("%s %s: links %v, want %v", name, m, m.links, want.links)
				}
				n++
			}
		}
	}
	t.Logf("%d placements", n)
	if n < 1000 {
		t.Errorf("checked %d placements, want at least 1000", n)
	}
}

// factorsOver is every ordered k-tuple of positive integers whose product
// is n.
func factorsOver(n, k int) [][]int {
	if k == 1 {
		return [][]int{{n}}
	}
	var out [][]int
	for d := 1; d*d <= n; d++ {
		if n%d != 0 {
			continue
		}
		for _, d := range []int{d, n / d}[:1+min(1, n/d-d)] {
			for _, rest := range factorsOver(n/d, k-1) {
				out = append(out, append([]int{d}, rest...))
			}
		}
	}
	return out
}

// placeRef is place as commit 1b75c90 wrote it.
func (m *Mesh) placeRef() {
	dims := m.Multislice.Slice.Topology.Dims()
	left := append([]int(nil), dims...)
	c := m.Multislice.Slice.Chip
	order := All()
	sort.SliceStable(order, func(i, j int) bool { return axes[order[i]].place < axes[order[j]].place })
	for _, a := range order {
		n := m.degrees[a].ICI
		l := Link{Tier: hw.ICI, Size: n, HopLatency: hw.ICIHopLatency}
		whole := wholeDimsRef(dims, left, n)
		for d := range dims {
			if n == 1 {
				break
			}
			if whole != nil && !whole[d] {
				continue
			}
			g := gcd(n, left[d])
			if g == 1 {
				continue
			}
			n /= g
			wrap := g == dims[d] && wrapsRef(m.Multislice.Slice, d)
			if l.Dims == 0 {
				l.Wrap = wrap
			} else {
				l.Wrap = l.Wrap && wrap
			}
			l.Dims++
			if wrap {
				l.Bandwidth += 2 * c.ICILinkBandwidth
				l.Hops += g / 2
			} else {
				l.Bandwidth += c.ICILinkBandwidth
				l.Hops += g - 1
			}
			left[d] /= g
		}
		if n != 1 {
			panic(fmt.Sprintf("mesh: cannot place %s=%d on %v", a, m.degrees[a].ICI, dims))
		}
		m.links[a] = l
	}
}

// wrapsRef is hw.Slice.Wraps as commit 1b75c90 wrote it.
func wrapsRef(s hw.Slice, i int) bool {
	dims := s.Topology.Dims()
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
	side := map[hw.Generation]int{hw.V2: 16, hw.V3: 32, hw.V5e: 16, hw.V6e: 16}[s.Chip.Generation]
	return dims[i] == side
}

func wholeDimsRef(dims, left []int, n int) []bool {
	if n <= 1 {
		return nil
	}
	var free []int
	for d := range dims {
		if left[d] == dims[d] && dims[d] > 1 {
			free = append(free, d)
		}
	}
	for k := min(3, len(free)); k >= 1; k-- {
		if set := subsetWithProductRef(free, dims, k, n); set != nil {
			out := make([]bool, len(dims))
			for _, d := range set {
				out[d] = true
			}
			return out
		}
	}
	return nil
}

func subsetWithProductRef(free, dims []int, k, n int) []int {
	var pick []int
	var rec func(start, prod int) bool
	rec = func(start, prod int) bool {
		if len(pick) == k {
			return prod == n
		}
		for i := start; i < len(free); i++ {
			pick = append(pick, free[i])
			if rec(i+1, prod*dims[free[i]]) {
				return true
			}
			pick = pick[:len(pick)-1]
		}
		return false
	}
	if rec(0, 1) {
		return pick
	}
	return nil
}
