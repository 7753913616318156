package infeed

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"shardlab/hw"
)

// boxed is the event queue on container/heap, the second implementation
// the hand-written heap is checked against.
type boxed []event

func (q boxed) Len() int           { return len(q) }
func (q boxed) Less(i, j int) bool { return queue(q).less(i, j) }
func (q boxed) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *boxed) Push(x any)        { *q = append(*q, x.(event)) }
func (q *boxed) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// TestQueueOrder: pushes and pops interleaved at random pop the same
// events, in the same order, as container/heap (times drawn from a few
// values so that ties are broken by seq).
func TestQueueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q queue
	var ref boxed
	seq := int64(0)
	for i := range 20000 {
		if rng.IntN(3) > 0 || len(q) == 0 {
			seq++
			e := event{at: time.Duration(rng.IntN(50)), seq: seq, chip: rng.IntN(8)}
			q.push(e)
			heap.Push(&ref, e)
			continue
		}
		if got, want := q.pop(), heap.Pop(&ref).(event); got != want {
			t.Fatalf("pop %d = %+v, want %+v", i, got, want)
		}
	}
	if len(q) != len(ref) {
		t.Fatalf("%d events left, want %d", len(q), len(ref))
	}
}

// TestIdleSet: next walks a bitset of workers as a scan of a []bool does.
func TestIdleSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 63, 64, 65, 224, 4096} {
		s, ref := newIdleSet(n), slices.Repeat([]bool{true}, n)
		for range 4 * n {
			w := rng.IntN(n)
			if rng.IntN(2) == 0 {
				s.remove(w)
				ref[w] = false
			} else {
				s.add(w)
				ref[w] = true
			}
			from := rng.IntN(n + 1)
			want := -1
			for v := from; v < n; v++ {
				if ref[v] {
					want = v
					break
				}
			}
			if got := s.next(from); got != want {
				t.Fatalf("n=%d: next(%d) = %d, want %d", n, from, got, want)
			}
		}
	}
}

// BenchmarkMinVCPUs: the sweep on a tpu7x host (4 chips, 2 NUMA nodes) at
// 2500 examples per chip per step, for 50 steps; it needs about 400
// vCPUs, so it runs the simulation 17 times (9 doubling, 8 bisecting).
func BenchmarkMinVCPUs(b *testing.B) {
	s, err := hw.ParseAcceleratorType("tpu7x-8")
	if err != nil {
		b.Fatal(err)
	}
	c := ForSlice(s)
	c.Batch = 2500
	for b.Loop() {
		if _, _, _, err := MinVCPUs(c, 4096); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sweeps/s")
}
