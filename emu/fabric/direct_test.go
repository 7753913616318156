package fabric

import (
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"

	"shardlab/collective"
)

// TestDirectCollectivesAreTheRing holds the direct in-process all-reduce,
// reduce-scatter and all-gather to the ring's, bit for bit and byte
// count for byte count, for groups of 3 to 8 (and one of 70, past
// kernel.ReduceFan's table of 64) and lengths that do and do not divide
// evenly or fill whole vectors.
func TestDirectCollectivesAreTheRing(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{3, 4, 5, 6, 7, 8, 70} {
		lengths := []int{n, 7 * n, 1001, 49157}
		if n > 8 {
			lengths = lengths[:2]
		}
		for _, l := range lengths {
			inputs := make([][]float32, n)
			for i := range inputs {
				inputs[i] = make([]float32, l)
				for j := range inputs[i] {
					inputs[i][j] = float32(rng.NormFloat64())
				}
			}
			for _, kind := range []string{"all-reduce", "reduce-scatter", "all-gather"} {
				ring, ringSent := runColl(n, inputs, kind, true)
				direct, directSent := runColl(n, inputs, kind, false)
				if !reflect.DeepEqual(ring, direct) {
					t.Fatalf("n=%d l=%d %s: direct differs from the ring", n, l, kind)
				}
				if !reflect.DeepEqual(ringSent, directSent) {
					t.Fatalf("n=%d l=%d %s: direct counts %v, the ring %v", n, l, kind, directSent, ringSent)
				}
			}
		}
	}
}

// runColl runs one collective over n in-process devices, by the ring
// (v1) or directly, and returns each device's result and bytes sent.
func runColl(n int, inputs [][]float32, kind string, ring bool) ([][]float32, []collective.Counter) {
	f := New(make([]int, n))
	f.v1 = ring
	g := collective.Group{NICI: n, NDCN: 1, Axis: "fsdp", ICILink: collective.Link{Bandwidth: 1e11}}
	for i := range n {
		g.Ranks = append(g.Ranks, i)
	}
	out := make([][]float32, n)
	sent := make([]collective.Counter, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			e := f.Endpoint(i)
			x := append([]float32(nil), inputs[i]...)
			switch kind {
			case "all-reduce":
				e.AllReduce(g, x)
				out[i] = x
			case "reduce-scatter":
				out[i] = e.ReduceScatter(g, x)
			default:
				out[i] = e.AllGather(g, x[:len(x)/n])
			}
			sent[i] = e.Sent()
		})
	}
	wg.Wait()
	return out, sent
}
