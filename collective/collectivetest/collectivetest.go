// Package collectivetest is one conformance suite for every transport that
// implements collective.Comm (in-process, and MPI across processes): each
// collective's results, and its measured bytes per link class against
// package collective's formulas.
package collectivetest

import (
	"fmt"
	"iter"
	"sync"
	"testing"

	"shardlab/collective"
	"shardlab/hw"
	"shardlab/unit"
)

// Factory connects len(sliceOf) devices, device i in slice sliceOf[i]. A
// transport spread over processes returns nil for the devices other
// processes run (each process checks its own), and a nil slice for a
// group it cannot spread evenly (the shape is then skipped).
type Factory func(t *testing.T, sliceOf []int) []collective.Comm

// Run runs the suite against a transport.
func Run(t *testing.T, newComms Factory) {
	for _, shape := range []struct{ nICI, nDCN int }{{1, 1}, {2, 1}, {4, 1}, {1, 2}, {1, 3}, {2, 2}, {4, 2}, {2, 3}} {
		t.Run(fmt.Sprintf("ici%d_dcn%d", shape.nICI, shape.nDCN), func(t *testing.T) { runShape(t, newComms, shape.nICI, shape.nDCN) })
	}
}

func group(nICI, nDCN int) (collective.Group, []int) {
	n := nICI * nDCN
	g := collective.Group{NICI: nICI, NDCN: nDCN, Axis: "test", ICILink: collective.Link{Bandwidth: 1e11}, DCNLink: collective.Link{Bandwidth: 1e10}}
	sliceOf := make([]int, n)
	for a := range n {
		g.Ranks = append(g.Ranks, a)
		sliceOf[a] = a / nICI
	}
	return g, sliceOf
}

// held yields the devices this process runs, each with its Comm: a
// transport spread over processes leaves the others nil.
func held(comms []collective.Comm) iter.Seq2[int, collective.Comm] {
	return func(yield func(int, collective.Comm) bool) {
		for i, c := range comms {
			if c != nil && !yield(i, c) {
				return
			}
		}
	}
}

// parallel runs f on every local device at once.
func parallel(comms []collective.Comm, f func(i int, c collective.Comm)) {
	var wg sync.WaitGroup
	for i, c := range held(comms) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(i, c)
		}()
	}
	wg.Wait()
}

// shape is one group shape under test: nICI devices in each of nDCN
// slices, each device's input per elements a chunk, one chunk per member.
type shape struct {
	newComms Factory
	g        collective.Group
	sliceOf  []int
	n, l     int
}

// per is the elements per chunk: divisible by every group size used.
const per = 24

// val is device dev's input element j.
func val(dev, j int) float32 { return float32(dev*1000 + j) }

// input is device dev's first n input elements.
func input(dev, n int) []float32 {
	x := make([]float32, n)
	for j := range x {
		x[j] = val(dev, j)
	}
	return x
}

// runShape runs every collective on a fresh set of devices of the shape,
// checking each device's result and the bytes it sent.
func runShape(t *testing.T, newComms Factory, nICI, nDCN int) {
	g, sliceOf := group(nICI, nDCN)
	sh := shape{newComms: newComms, g: g, sliceOf: sliceOf, n: g.Size(), l: per * g.Size()}
	comms := newComms(t, sliceOf)
	if comms == nil {
		t.Skipf("the transport cannot spread %d devices evenly", sh.n)
	}
	sh.allReduce(t, comms)
	sh.allGather(t, sh.newComms(t, sliceOf))
	sh.reduceScatter(t, sh.newComms(t, sliceOf))
	sh.allToAll(t, sh.newComms(t, sliceOf))
	sh.sendRecv(t, sh.newComms(t, sliceOf))
}

// run runs f on every local device at once and returns each one's result.
func (sh shape) run(comms []collective.Comm, f func(i int, c collective.Comm) []float32) [][]float32 {
	out := make([][]float32, sh.n)
	parallel(comms, func(i int, c collective.Comm) { out[i] = f(i, c) })
	return out
}

// allReduce: every device ends with the sum of every input.
func (sh shape) allReduce(t *testing.T, comms []collective.Comm) {
	out := sh.run(comms, func(i int, c collective.Comm) []float32 {
		x := input(i, sh.l)
		c.AllReduce(sh.g, x)
		return x
	})
	for i := range held(comms) {
		for j := range sh.l {
			var want float32
			for d := range sh.n {
				want += val(d, j)
			}
			if out[i][j] != want {
				t.Fatalf("all-reduce: device %d element %d = %v, want %v", i, j, out[i][j], want)
			}
		}
	}
	checkBytes(t, comms, "all-reduce", collective.AllReduce, unit.Bytes(4*sh.l), sh.g)
}

// allGather: every device ends with every device's chunk, in group order.
func (sh shape) allGather(t *testing.T, comms []collective.Comm) {
	out := sh.run(comms, func(i int, c collective.Comm) []float32 { return c.AllGather(sh.g, input(i, per)) })
	for i := range held(comms) {
		for d := range sh.n {
			for j := range per {
				if got := out[i][d*per+j]; got != val(d, j) {
					t.Fatalf("all-gather: device %d chunk %d element %d = %v, want %v", i, d, j, got, val(d, j))
				}
			}
		}
	}
	checkBytes(t, comms, "all-gather", collective.AllGather, unit.Bytes(4*sh.l), sh.g)
}

// reduceScatter: device i ends with the sum of every input's chunk i.
func (sh shape) reduceScatter(t *testing.T, comms []collective.Comm) {
	out := sh.run(comms, func(i int, c collective.Comm) []float32 { return c.ReduceScatter(sh.g, input(i, sh.l)) })
	for i := range held(comms) {
		for j := range per {
			var want float32
			for d := range sh.n {
				want += val(d, i*per+j)
			}
			if out[i][j] != want {
				t.Fatalf("reduce-scatter: device %d element %d = %v, want %v", i, j, out[i][j], want)
			}
		}
	}
	checkBytes(t, comms, "reduce-scatter", collective.ReduceScatter, unit.Bytes(4*sh.l), sh.g)
}

// allToAll: device i's chunk j ends up as device j's chunk i.
func (sh shape) allToAll(t *testing.T, comms []collective.Comm) {
	out := sh.run(comms, func(i int, c collective.Comm) []float32 { return c.AllToAll(sh.g, input(i, sh.l)) })
	for i := range held(comms) {
		for d := range sh.n {
			for j := range per {
				if got, want := out[i][d*per+j], val(d, i*per+j); got != want {
					t.Fatalf("all-to-all: device %d chunk %d = %v, want %v", i, d, got, want)
				}
			}
		}
	}
	if sh.n == 1 {
		return
	}
	want := int64(collective.Bytes(collective.AllToAll, sh.n, unit.Bytes(4*sh.l)))
	for i, c := range held(comms) {
		if sent := c.Sent()["all-to-all"][hw.ICI] + c.Sent()["all-to-all"][hw.DCN]; sent != want {
			t.Errorf("all-to-all: device %d sent %d bytes, want %d", i, sent, want)
		}
	}
}

// sendRecv: each device sends the next one its number round the group.
func (sh shape) sendRecv(t *testing.T, comms []collective.Comm) {
	n := sh.n
	if n == 1 {
		return
	}
	out := sh.run(comms, func(i int, c collective.Comm) []float32 {
		c.Send((i+1)%n, []float32{float32(i)})
		return c.Recv((i + n - 1) % n)
	})
	for i := range held(comms) {
		if out[i][0] != float32((i+n-1)%n) {
			t.Errorf("recv on %d = %v", i, out[i])
		}
	}
}

// checkBytes compares what every device sent on each link class with
// collective.Hierarchical for the group.
func checkBytes(t *testing.T, comms []collective.Comm, op string, cop collective.Op, size unit.Bytes, g collective.Group) {
	t.Helper()
	want := collective.Hierarchical(cop, size, g.NICI, g.ICILink, g.NDCN, g.DCNLink)
	if g.NICI == 1 || g.NDCN == 1 {
		// one flat ring on whichever tier the group spans
		b := collective.Bytes(cop, g.Size(), size)
		want.ICIBytes, want.DCNBytes = b, 0
		if g.NICI == 1 && g.NDCN > 1 {
			want.ICIBytes, want.DCNBytes = 0, b
		}
	}
	for i, c := range held(comms) {
		got := c.Sent()[op]
		if got[hw.ICI] != int64(want.ICIBytes) || got[hw.DCN] != int64(want.DCNBytes) {
			t.Errorf("%s device %d sent ICI %d DCN %d bytes, collective says ICI %d DCN %d", op, i, got[hw.ICI], got[hw.DCN], want.ICIBytes, want.DCNBytes)
		}
	}
}
