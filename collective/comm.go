package collective

import (
	"fmt"

	"shardlab/hw"
)

// Group is a set of devices that run a collective together, in ring order:
// member a sits at coordinate a = dcn·NICI + ici, so the members of one
// slice are contiguous. The links are the cost model's view of each tier.
type Group struct {
	Ranks   []int
	NICI    int
	NDCN    int
	Axis    string // the mesh axes the group spans, for counters ("data×context")
	ICILink Link
	DCNLink Link
}

// Size is the number of members.
func (g Group) Size() int { return len(g.Ranks) }

// Index is the position of device rank in the group.
func (g Group) Index(rank int) int {
	for i, r := range g.Ranks {
		if r == rank {
			return i
		}
	}
	panic(fmt.Sprintf("collective: rank %d is not in group %v", rank, g.Ranks)) // a wiring bug
}

// Members returns the members that share rank's DCN part (its slice's
// share of the group), or with alongDCN those that share its ICI part (one
// per slice).
func (g Group) Members(rank int, alongDCN bool) []int {
	a := g.Index(rank)
	ici, dcn := a%g.NICI, a/g.NICI
	var out []int
	if alongDCN {
		for j := range g.NDCN {
			out = append(out, g.Ranks[j*g.NICI+ici])
		}
	} else {
		for i := range g.NICI {
			out = append(out, g.Ranks[dcn*g.NICI+i])
		}
	}
	return out
}

// Comm is one device's end of a transport that runs collectives on real
// buffers: the emulator's in-process fabric, and the same across processes
// over MPI. Every call moves the buffers and counts the bytes sent per
// operation and tier; package collectivetest checks both against Bytes.
type Comm interface {
	Rank() int
	// AllReduce sums x over g in place.
	AllReduce(g Group, x []float32)
	// AllGather returns every member's x concatenated in group order.
	AllGather(g Group, x []float32) []float32
	// ReduceScatter sums x over g and returns this member's 1/n share.
	ReduceScatter(g Group, x []float32) []float32
	// AllToAll sends the i-th 1/n of x to member i and returns what each
	// member sent here, in group order.
	AllToAll(g Group, x []float32) []float32
	Send(to int, x []float32)
	Recv(from int) []float32
	Barrier(g Group)
	// Sent is the bytes this device has sent, by operation and tier.
	Sent() Counter
}

// Counter is bytes sent, by operation and tier.
type Counter map[string][2]int64

// Add counts n bytes of op on tier t.
func (c Counter) Add(op string, t hw.Tier, n int64) {
	v := c[op]
	v[t] += n
	c[op] = v
}

// Total is all bytes sent on tier t.
func (c Counter) Total(t hw.Tier) int64 {
	var n int64
	for _, v := range c {
		n += v[t]
	}
	return n
}
