package fabric

import (
	"shardlab/collective"
	"shardlab/emu/kernel"
	"shardlab/unit"
)

func unitBytes(elems int) unit.Bytes { return unit.Bytes(elems) * 4 }

// chunk returns the bounds of chunk i of n over length l.
func chunk(l, n, i int) (lo, hi int) { return i * l / n, (i + 1) * l / n }

func mod(a, n int) int { return ((a % n) + n) % n }

func indexOf(members []int, rank int) int {
	for i, r := range members {
		if r == rank {
			return i
		}
	}
	panic("fabric: rank not in ring")
}

// ringReduceScatter sums x over members and leaves the sum of chunk i in
// x's chunk i for member i (other chunks hold partial sums). Step k sends
// chunk i−1−k to the next member and adds chunk i−2−k from the previous.
// The chunk lent out at a step is never written again in this phase: a
// member only adds into the chunk it receives, one step behind.
func (e *Endpoint) ringReduceScatter(op string, members []int, x []float32) {
	e.ringSteps(op, members, x, -1, func(dst, in []float32) { e.f.add(dst[:len(in)], in) })
}

// ringAllGather spreads each member's chunk i of x to all: step k sends
// chunk i−k and receives chunk i−k−1.
func (e *Endpoint) ringAllGather(op string, members []int, x []float32) {
	e.ringSteps(op, members, x, 0, func(dst, in []float32) { copy(dst, in) })
}

// ringSteps runs the n−1 steps of a ring phase over members for member i:
// step k lends chunk i+first−k of x to the next member and combines what
// the previous one lent, chunk i+first−k−1, into x there.
func (e *Endpoint) ringSteps(op string, members []int, x []float32, first int, combine func(dst, in []float32)) {
	n := len(members)
	if n == 1 {
		return
	}
	i := indexOf(members, e.rank)
	next, prev := members[(i+1)%n], members[mod(i-1, n)]
	for k := 0; k < n-1; k++ {
		slo, shi := chunk(len(x), n, mod(i+first-k, n))
		e.lend(op, e.axis, next, x[slo:shi])
		in := e.get(prev)
		rlo, _ := chunk(len(x), n, mod(i+first-k-1, n))
		combine(x[rlo:], in.data)
		e.release(prev, in)
	}
	e.waitLent(next)
}

// pairAllReduce is the ring all-reduce of two devices with its two steps
// fused: each device adds the half its peer lends it into its own and
// writes the sum back into the peer's buffer as well, which is the
// all-gather's message (counted as the ring counts it). Each half is read
// and written once, where the ring's separate all-gather would read the
// sum again; the sums are the ring's, bit for bit. The peer's half is read
// in place in this process, or in another that shares memory with this one
// (Sharer) when the peer's buffer lies in it; otherwise it comes as a copy,
// and the sum goes back as a message, the ring's all-gather step.
func (e *Endpoint) pairAllReduce(op string, members []int, x []float32) {
	i := indexOf(members, e.rank)
	peer := members[1-i]
	slo, shi := chunk(len(x), 2, 1-i)
	viewed := e.lend(op, e.axis, peer, x[slo:shi])
	in := e.get(peer) // the peer's half i, lent or copied
	lo, _ := chunk(len(x), 2, i)
	kernel.SumBoth(x[lo:lo+len(in.data)], in.data)
	if in.lender == nil { // a copy: the peer's half of the sum goes back
		e.put(op, e.axis, peer, in.data)
	} else {
		e.count(op, e.axis, peer, len(in.data))
	}
	e.release(peer, in)
	if !viewed { // and ours comes back the same way
		back := e.get(peer)
		copy(x[slo:shi], back.data)
		e.release(peer, back)
	}
	e.waitLent(peer)
}

func (e *Endpoint) cost(g collective.Group, op collective.Op, size unit.Bytes) {
	e.op = op.String()
	e.sync(g, collective.Hierarchical(op, size, g.NICI, g.ICILink, g.NDCN, g.DCNLink).Time())
}

// AllReduce sums x over g in place: a ring within the group, or, when the
// group spans slices, reduce-scatter inside each slice, all-reduce of the
// shard across slices, all-gather inside the slice.
func (e *Endpoint) AllReduce(g collective.Group, x []float32) {
	e.axis = g.Axis
	if g.Size() <= 1 {
		return
	}
	e.cost(g, collective.AllReduce, unitBytes(len(x)))
	const op = "all-reduce"
	if (g.NICI == 1 || g.NDCN == 1) && len(g.Ranks) == 2 && !e.f.v1 {
		e.pairAllReduce(op, g.Ranks, x)
		return
	}
	if e.direct(g) {
		e.directAllReduce(op, g.Ranks, x)
		return
	}
	if g.NICI == 1 || g.NDCN == 1 {
		e.ringReduceScatter(op, g.Ranks, x)
		e.ringAllGather(op, g.Ranks, x)
		return
	}
	slice := g.Members(e.rank, false)
	across := g.Members(e.rank, true)
	e.ringReduceScatter(op, slice, x)
	lo, hi := chunk(len(x), len(slice), indexOf(slice, e.rank))
	shard := x[lo:hi]
	e.ringReduceScatter(op, across, shard)
	e.ringAllGather(op, across, shard)
	e.ringAllGather(op, slice, x)
}

// AllGather concatenates every member's x in group order.
func (e *Endpoint) AllGather(g collective.Group, x []float32) []float32 {
	return e.AllGatherInto(g, x, make([]float32, g.Size()*len(x)))
}

// AllGatherInto is AllGather into out (g.Size()·len(x) floats, every one
// overwritten).
func (e *Endpoint) AllGatherInto(g collective.Group, x, out []float32) []float32 {
	e.axis = g.Axis
	n := g.Size()
	a := g.Index(e.rank)
	copy(out[a*len(x):], x)
	if n == 1 {
		return out
	}
	e.cost(g, collective.AllGather, unitBytes(len(out)))
	const op = "all-gather"
	if e.direct(g) {
		e.directAllGather(op, g.Ranks, out)
		return out
	}
	if g.NICI == 1 || g.NDCN == 1 {
		e.ringAllGather(op, g.Ranks, out)
		return out
	}
	n1, n2, l := g.NICI, g.NDCN, len(x)
	ici, dcn := a%n1, a/n1
	// across slices first: y[d] = x of member (d, ici)
	y := make([]float32, n2*l)
	copy(y[dcn*l:], x)
	e.ringAllGather(op, g.Members(e.rank, true), y)
	// then inside the slice: z[i] = y of member (dcn, i)
	z := make([]float32, n1*n2*l)
	copy(z[ici*n2*l:], y)
	e.ringAllGather(op, g.Members(e.rank, false), z)
	for i := range n1 {
		for d := range n2 {
			copy(out[(d*n1+i)*l:(d*n1+i+1)*l], z[(i*n2+d)*l:(i*n2+d+1)*l])
		}
	}
	return out
}

// ReduceScatter sums x over g and returns this member's chunk.
func (e *Endpoint) ReduceScatter(g collective.Group, x []float32) []float32 {
	e.axis = g.Axis
	n := g.Size()
	a := g.Index(e.rank)
	if n == 1 {
		return append([]float32(nil), x...)
	}
	e.cost(g, collective.ReduceScatter, unitBytes(len(x)))
	const op = "reduce-scatter"
	if e.direct(g) {
		return e.directReduceScatter(op, g.Ranks, x)
	}
	buf := append([]float32(nil), x...)
	if g.NICI == 1 || g.NDCN == 1 {
		e.ringReduceScatter(op, g.Ranks, buf)
		lo, hi := chunk(len(buf), n, a)
		return buf[lo:hi]
	}
	n1, n2 := g.NICI, g.NDCN
	l := len(x) / n
	if l*n != len(x) {
		panic("fabric: hierarchical reduce-scatter needs a length divisible by the group") // callers pad
	}
	ici, dcn := a%n1, a/n1
	// order the chunks by (ici, dcn) so that the slice's reduce-scatter
	// leaves member ici the block of every slice's chunk for its ici
	y := make([]float32, len(x))
	for i := range n1 {
		for d := range n2 {
			copy(y[(i*n2+d)*l:], x[(d*n1+i)*l:(d*n1+i+1)*l])
		}
	}
	e.ringReduceScatter(op, g.Members(e.rank, false), y)
	block := y[ici*n2*l : (ici+1)*n2*l]
	e.ringReduceScatter(op, g.Members(e.rank, true), block)
	return append([]float32(nil), block[dcn*l:(dcn+1)*l]...)
}

// AllToAll sends chunk j of x to member j and returns the chunks received,
// in group order.
func (e *Endpoint) AllToAll(g collective.Group, x []float32) []float32 {
	n := g.Size()
	a := g.Index(e.rank)
	out := make([]float32, len(x))
	if n == 1 {
		copy(out, x)
		return out
	}
	e.op = "all-to-all"
	e.sync(g, collective.AllToAllCost(unitBytes(len(x)), g.NICI, g.ICILink, g.NDCN, g.DCNLink).Time())
	const op = "all-to-all"
	for k := 1; k < n; k++ {
		to := (a + k) % n
		lo, hi := chunk(len(x), n, to)
		e.put(op, g.Axis, g.Ranks[to], x[lo:hi])
	}
	lo, hi := chunk(len(x), n, a)
	copy(out[lo:hi], x[lo:hi])
	for k := 1; k < n; k++ {
		from := mod(a-k, n)
		in := e.get(g.Ranks[from])
		lo, _ := chunk(len(x), n, from)
		copy(out[lo:], in.data)
		e.release(g.Ranks[from], in)
	}
	return out
}
