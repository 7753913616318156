package fabric

import (
	"shardlab/collective"
	"shardlab/emu/kernel"
)

// Direct collectives: when every member of a flat group lives in this
// process, each member reads and writes its peers' buffers in place
// instead of passing chunks round a ring. Member i owns chunk i of every
// buffer (chunk as the ring cuts them): it alone reads and writes it, so
// the members need no step-by-step hand-over, only to see each other's
// buffers at the start and to wait, at the end, until no peer still
// writes into theirs. An all-reduce then moves each byte of each buffer
// about twice (read once, written once), the least an in-place
// all-reduce of n buffers can; the ring moves every chunk through a
// message copy at each of its 2(n−1) steps.
//
// The sums are the ring's, bit for bit: chunk c is accumulated in the
// order the ring's reduce-scatter adds it (member c+1's, then c+2's, …,
// member c's last), float addition being commutative; so a run gives the
// same bits in one process as across MPI ranks, where the ring runs.
// Bytes are counted as the ring counts them: what is measured is the
// algorithm the cost model prices, not the shortcut memory allows.

// direct reports whether g's collectives can run directly: a flat group
// (one slice, or one member per slice) of more than two members, all in
// this process.
func (e *Endpoint) direct(g collective.Group) bool {
	return (g.NICI == 1 || g.NDCN == 1) && len(g.Ranks) > 2 && e.f.allLocal(g.Ranks) && !e.f.v1
}

// borrow shows x to every other member without copying it and returns
// every member's buffer, by index; done hands the peers' back.
func (e *Endpoint) borrow(op, axis string, members []int, x []float32) (views [][]float32, done func()) {
	n := len(members)
	i := indexOf(members, e.rank)
	for k := 1; k < n; k++ {
		e.share(members[(i+k)%n], x)
	}
	views = make([][]float32, n)
	views[i] = x
	msgs := make([]Message, n)
	for k := 1; k < n; k++ {
		j := (i + k) % n
		msgs[j] = e.get(members[j])
		views[j] = msgs[j].data
	}
	return views, func() {
		for k := 1; k < n; k++ {
			j := (i + k) % n
			e.release(members[j], msgs[j])
		}
		e.lent.Wait()
	}
}

// share lends x to device to without counting it (lend counts; the
// direct collectives count their bytes as the ring would).
func (e *Endpoint) share(to int, x []float32) {
	e.lent.Add(1)
	e.f.enqueue(e.rank, to, Message{data: x, t: e.f.clocks[e.rank], lender: &e.lent})
}

// reduceChunk sums chunk [lo, hi) of the n views in the ring's order
// (member i+1's, then i+2's, …, member i's last) and writes the sum into
// each of outs, in one pass over memory (kernel.ReduceFan): each view's
// chunk is read once and each output written once. An output may be a
// view's chunk itself.
func (e *Endpoint) reduceChunk(views [][]float32, i, lo, hi int, outs [][]float32) {
	n := len(views)
	ins := make([][]float32, n)
	for s := 1; s <= n; s++ {
		ins[s-1] = views[(i+s)%n][lo:hi]
	}
	kernel.ReduceFan(outs, ins)
}

// countRing counts what the ring's reduce-scatter (rs) and all-gather
// (ag) would send from member i of members for a buffer of l floats.
func (e *Endpoint) countRing(op string, members []int, l int, rs, ag bool) {
	n := len(members)
	i := indexOf(members, e.rank)
	next := members[(i+1)%n]
	for k := 0; k < n-1; k++ {
		if rs {
			lo, hi := chunk(l, n, mod(i-1-k, n))
			e.count(op, e.axis, next, hi-lo)
		}
		if ag {
			lo, hi := chunk(l, n, mod(i-k, n))
			e.count(op, e.axis, next, hi-lo)
		}
	}
}

// directAllReduce is AllReduce's direct form: member i sums chunk i of
// every buffer into its own and writes the sum into every peer's.
func (e *Endpoint) directAllReduce(op string, members []int, x []float32) {
	views, done := e.borrow(op, e.axis, members, x)
	n := len(members)
	i := indexOf(members, e.rank)
	lo, hi := chunk(len(x), n, i)
	outs := make([][]float32, n)
	for k := range outs {
		outs[k] = views[k][lo:hi]
	}
	e.reduceChunk(views, i, lo, hi, outs)
	e.countRing(op, members, len(x), true, true)
	done()
}

// directReduceScatter is ReduceScatter's direct form: member i sums chunk
// i of every buffer into a new slice.
func (e *Endpoint) directReduceScatter(op string, members []int, x []float32) []float32 {
	views, done := e.borrow(op, e.axis, members, x)
	n := len(members)
	i := indexOf(members, e.rank)
	lo, hi := chunk(len(x), n, i)
	out := make([]float32, hi-lo)
	e.reduceChunk(views, i, lo, hi, [][]float32{out})
	e.countRing(op, members, len(x), true, false)
	done()
	return out
}

// directAllGather is AllGather's direct form on out, which holds this
// member's chunk in place: member i copies it into every peer's out.
func (e *Endpoint) directAllGather(op string, members []int, out []float32) {
	views, done := e.borrow(op, e.axis, members, out)
	n := len(members)
	i := indexOf(members, e.rank)
	lo, hi := chunk(len(out), n, i)
	for s := 1; s < n; s++ {
		copy(views[(i+s)%n][lo:hi], out[lo:hi])
	}
	e.countRing(op, members, len(out), false, true)
	done()
}
