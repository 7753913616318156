// Package collective computes what collectives cost: the bytes each device
// sends in a ring all-reduce, all-gather, reduce-scatter, all-to-all or
// send/recv, and the time that takes on an ICI axis of the torus, over DCN,
// or hierarchically (inside slices, then across them). It is the only place
// shardlab computes a collective's bytes; the emulator's counters are
// checked against it. It also defines Comm, the interface every transport
// that runs collectives on real buffers implements, with the Group and
// Counter it speaks in; package collectivetest is their conformance suite.
package collective

import (
	"fmt"
	"math"
	"time"

	"shardlab/internal/enum"
	"shardlab/unit"
)

// Op is a collective operation.
type Op int

// The operations.
const (
	AllReduce Op = iota
	AllGather
	ReduceScatter
	AllToAll
	SendRecv
)

var opNames = enum.New[Op]("Op", []string{
	AllReduce: "all-reduce", AllGather: "all-gather", ReduceScatter: "reduce-scatter", AllToAll: "all-to-all", SendRecv: "send/recv",
})

func (o Op) String() string { return opNames.String(o) }

// Bytes is what one device sends in op among n devices on a ring, where size
// is the full buffer: the all-reduced buffer, the gathered result of an
// all-gather, the input of a reduce-scatter, one device's buffer in an
// all-to-all, the message of a send/recv. Ring algorithms (Hockney's α–β
// model as in the nccl-tests PERFORMANCE.md bus-bandwidth factors):
//
//	all-reduce            2(n−1)/n · size   (reduce-scatter then all-gather)
//	all-gather            (n−1)/n · size
//	reduce-scatter        (n−1)/n · size
//	all-to-all            (n−1)/n · size
//	send/recv             size
//
// The result is exact when size is a multiple of n (each of the n chunks
// equal); otherwise it is rounded down.
func Bytes(op Op, n int, size unit.Bytes) unit.Bytes {
	if n <= 1 && op != SendRecv {
		return 0
	}
	k := unit.Bytes(n)
	switch op {
	case AllReduce:
		return 2 * (k - 1) * size / k
	case AllGather, ReduceScatter, AllToAll:
		return (k - 1) * size / k
	case SendRecv:
		return size
	}
	panic(fmt.Sprintf("collective: unknown op %d", int(op)))
}

// Link is one tier a collective runs on, as seen by one device.
type Link struct {
	// Bandwidth is what one device can send per second in the ring (for a
	// torus axis, both directions of every spanned dimension together).
	Bandwidth unit.BytesPerSecond
	// Hops is the number of sequential ring steps one phase takes, and
	// HopLatency the fixed cost of each (the scaling book uses ~1 µs per
	// ICI hop).
	Hops       int
	HopLatency time.Duration
	// Dims is the torus dimensions an ICI link spans (AllToAllCost); 0
	// or 1 is one ring. DCN is switched and ignores it.
	Dims int
}

// Time is how long op among n devices takes on link: the bytes each device
// sends over the link bandwidth, plus the latency of every ring step
// (all-reduce walks the ring twice).
func Time(op Op, n int, size unit.Bytes, l Link) time.Duration {
	if n <= 1 && op != SendRecv {
		return 0
	}
	if l.Bandwidth <= 0 {
		return time.Duration(math.MaxInt64)
	}
	sec := float64(Bytes(op, n, size)) / float64(l.Bandwidth)
	hops := l.Hops
	if op == AllReduce {
		hops *= 2
	}
	if op == SendRecv {
		hops = 1
	}
	return seconds(sec) + time.Duration(hops)*l.HopLatency
}

func seconds(s float64) time.Duration {
	if s >= math.MaxInt64/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * 1e9)
}

// Cost is what one device pays for a collective that may span ICI and DCN:
// bytes it sends and time spent on each tier.
type Cost struct {
	ICIBytes unit.Bytes
	DCNBytes unit.Bytes
	ICITime  time.Duration
	DCNTime  time.Duration
}

// Time is the collective's duration: its ICI and DCN phases run one after
// the other.
func (c Cost) Time() time.Duration { return c.ICITime + c.DCNTime }

// Scale multiplies a cost by k repetitions.
func (c Cost) Scale(k int) Cost {
	n := unit.Bytes(k)
	d := time.Duration(k)
	return Cost{ICIBytes: c.ICIBytes * n, DCNBytes: c.DCNBytes * n, ICITime: c.ICITime * d, DCNTime: c.DCNTime * d}
}

// Hierarchical is op over a group of nICI devices inside each slice times
// nDCN slices, done the way XLA's multislice collectives are (and the
// scaling book's multislice all-reduce): the slow DCN tier only carries the
// 1/nICI shard that each device is responsible for.
//
//	all-reduce:     reduce-scatter on ICI, all-reduce of size/nICI on DCN, all-gather on ICI
//	all-gather:     all-gather of size/nICI on DCN, then all-gather of size on ICI
//	reduce-scatter: reduce-scatter of size on ICI, then of size/nICI on DCN
//
// size is the full buffer as in Bytes.
func Hierarchical(op Op, size unit.Bytes, nICI int, ici Link, nDCN int, dcn Link) Cost {
	var c Cost
	step := func(o Op, n int, s unit.Bytes, l Link, isDCN bool) {
		if n <= 1 {
			return
		}
		b, t := Bytes(o, n, s), Time(o, n, s, l)
		if isDCN {
			c.DCNBytes += b
			c.DCNTime += t
		} else {
			c.ICIBytes += b
			c.ICITime += t
		}
	}
	shard := size / unit.Bytes(max(nICI, 1))
	switch op {
	case AllReduce:
		step(ReduceScatter, nICI, size, ici, false)
		step(AllReduce, nDCN, shard, dcn, true)
		step(AllGather, nICI, size, ici, false)
	case AllGather:
		step(AllGather, nDCN, shard, dcn, true)
		step(AllGather, nICI, size, ici, false)
	case ReduceScatter:
		step(ReduceScatter, nICI, size, ici, false)
		step(ReduceScatter, nDCN, shard, dcn, true)
	case AllToAll:
		return AllToAllCost(size, nICI, ici, nDCN, dcn)
	default:
		// send/recv has no hierarchical form: it runs on whichever tier
		// is given a group larger than one.
		step(op, nICI, size, ici, false)
		step(op, nDCN, size, dcn, true)
	}
	return c
}

// AllToAllCost is an all-to-all over a group of nICI devices in each of
// nDCN slices, where size is one device's buffer (as in Bytes): of the
// (n−1)/n of it a device sends, the share for its nICI−1 peers in its
// slice crosses ICI and the rest DCN, at once. ICI is a torus, not a
// switch, so its share takes TorusAllToAllFactor(nICI, ici.Dims) times
// the switched time plus the ring's hops; DCN is switched: its share
// goes at the link's bandwidth plus one hop. It is the one all-to-all
// formula: package cost times expert parallelism's dispatch and combine
// with it and the emulator its all-to-alls.
func AllToAllCost(size unit.Bytes, nICI int, ici Link, nDCN int, dcn Link) Cost {
	nICI, nDCN = max(nICI, 1), max(nDCN, 1)
	n := nICI * nDCN
	if n <= 1 {
		return Cost{}
	}
	all := Bytes(AllToAll, n, size)
	c := Cost{ICIBytes: unit.Bytes(float64(all) * float64(nICI-1) / float64(n-1))}
	c.DCNBytes = all - c.ICIBytes
	if nICI > 1 {
		if ici.Bandwidth <= 0 {
			c.ICITime = time.Duration(math.MaxInt64)
		} else {
			c.ICITime = seconds(float64(c.ICIBytes)/float64(ici.Bandwidth)*TorusAllToAllFactor(nICI, ici.Dims)) + time.Duration(ici.Hops)*ici.HopLatency
		}
	}
	if nDCN > 1 {
		c.DCNTime = Time(SendRecv, 2, c.DCNBytes, dcn)
	}
	return c
}

// TorusAllToAllFactor is how much longer an all-to-all of n devices
// spanning dims torus dimensions takes on ICI than Time's fully connected
// (n−1)/n · size / bandwidth, where bandwidth is the axis's ring bandwidth
// summed over its dimensions (mesh.Link). ICI is not a switch: on a
// bidirectional ring a shard travels n/4 hops on average, so the
// all-to-all of a V-byte array takes V / (4 W) — a quarter of an
// all-gather of V (Austin et al., "How to Scale Your Model", Part 3
// Sharded Matrices: "AllToAll ... 1/4 the cost of an AllGather on a
// bidirectional ring"). With V = n × size that is n/4 times the fully
// connected time. On a torus the dimensions' links carry their traffic at
// once and the largest dimension A sets the time, V·A / (4 n W) (the same
// per-link-load argument per dimension), which against the dims-fold
// bandwidth is dims · A / 4 with A = n^(1/dims) for an axis placed
// evenly. Neighbours pay no more than the fully connected time.
func TorusAllToAllFactor(n, dims int) float64 {
	dims = max(dims, 1)
	a := math.Pow(float64(n), 1/float64(dims))
	return max(1, float64(dims)*a/4)
}
