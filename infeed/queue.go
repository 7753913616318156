package infeed

import "math/bits"

// The event queue and the idle workers, kept cheap because a run handles
// one event per example (steps × batch × chips of them) and MinVCPUs runs
// the simulation a few dozen times.

// less orders events by time, then by when they were scheduled; seq is
// unique, so the order is total and any heap pops the same sequence.
func (q queue) less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}

// push adds e (container/heap's Push without boxing the event in an any).
func (q *queue) push(e event) {
	*q = append(*q, e)
	h := *q
	for j := len(h) - 1; j > 0; {
		i := (j - 1) / 2
		if !h.less(j, i) {
			break
		}
		h[i], h[j] = h[j], h[i]
		j = i
	}
}

// pop removes and returns the earliest event; q is not empty.
func (q *queue) pop() event {
	h := *q
	n := len(h) - 1
	h[0], h[n] = h[n], h[0]
	for i := 0; ; {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && h.less(r, j) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
	e := h[n]
	*q = h[:n]
	return e
}

// idleSet is the set of idle workers as a bitset, so that dispatch visits
// them in index order without stepping over the busy ones.
type idleSet []uint64

// newIdleSet is the set of all n workers.
func newIdleSet(n int) idleSet {
	s := make(idleSet, (n+63)/64)
	for w := range n {
		s.add(w)
	}
	return s
}

func (s idleSet) add(w int)    { s[w/64] |= 1 << (w % 64) }
func (s idleSet) remove(w int) { s[w/64] &^= 1 << (w % 64) }

// next is the first idle worker at or after w, or -1 if there is none.
func (s idleSet) next(w int) int {
	for i := w / 64; i < len(s); i++ {
		word := s[i]
		if i == w/64 {
			word &= ^uint64(0) << (w % 64)
		}
		if word != 0 {
			return i*64 + bits.TrailingZeros64(word)
		}
	}
	return -1
}
