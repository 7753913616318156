package fabric

import (
	"math"
	"sync"
	"testing"
	"time"

	"shardlab/collective"
)

// TestAllToAllAcrossSlicesTimedByCollective runs an all-to-all of 2
// devices in each of 2 slices (the expert axis across DCN) and holds the
// clocks it leaves to collective.AllToAllCost, the formula cost times
// expert parallelism with: half of what crosses goes over DCN, at its
// bandwidth, not over the ICI link.
func TestAllToAllAcrossSlicesTimedByCollective(t *testing.T) {
	f := New([]int{0, 0, 1, 1})
	g := collective.Group{Ranks: []int{0, 1, 2, 3}, NICI: 2, NDCN: 2, Axis: "expert",
		ICILink: collective.Link{Bandwidth: 100e9, Hops: 1, HopLatency: time.Microsecond, Dims: 1},
		DCNLink: collective.Link{Bandwidth: 5e9, Hops: 1, HopLatency: 10 * time.Microsecond}}
	const n = 1 << 16 // float32s per device
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(r*n + i)
			}
			out := f.Endpoint(r).AllToAll(g, x)
			if got, want := out[n/4*((r+1)%4)], float32(((r+1)%4)*n+n/4*r); got != want {
				t.Errorf("device %d: first element from device %d = %g, want %g", r, (r+1)%4, got, want)
			}
		}()
	}
	wg.Wait()
	want := collective.AllToAllCost(4*n, 2, g.ICILink, 2, g.DCNLink).Time().Seconds()
	for r := range 4 {
		if got := f.clocks[r]; math.Abs(got-want) > 1e-12 {
			t.Errorf("device %d's clock after the all-to-all = %g s, want %g s (AllToAllCost)", r, got, want)
		}
	}
}
