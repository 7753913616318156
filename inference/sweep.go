package inference

// Curve is one layout costed at rising concurrency: its rooflines at each
// level as Estimate gives them.
type Curve struct {
	TP, DP int
	// Points are the layout at concurrency 1, 2, 4, … up to the most
	// its pages hold at the requests' lengths without preemption (the
	// last point holds; twice it does not, or it is MaxConcurrency), with
	// the layout's own concurrency in its place.
	Points []Layout
}

// SweepConcurrency costs each layout (its TP and DP) at the concurrency
// levels of Levels(r, l): the rooflines Search compares, against the
// sequences decoding at once across the replicas. The request's rate and
// max_num_seqs do not apply: each point is a fixed concurrency. r must
// come from NewRequest and each layout from Search.
func SweepConcurrency(r Request, layouts []Layout) []Curve {
	r.RequestRate, r.MaxNumSeqs, r.Clients = 0, 0, 0
	out := make([]Curve, 0, len(layouts))
	for _, l := range layouts {
		c := Curve{TP: l.TP, DP: l.DP}
		for _, n := range Levels(r, l) {
			r.Concurrency = n
			c.Points = append(c.Points, Estimate(r, l.TP, l.DP))
		}
		out = append(out, c)
	}
	return out
}

// Levels are the concurrencies SweepConcurrency costs layout l at: the
// powers of two from 1 while its pages hold them at the requests'
// lengths without preemption (at most MaxConcurrency), with l's own
// concurrency among them when they hold it.
func Levels(r Request, l Layout) []int {
	tp, dp := l.TP, l.DP
	var out []int
	fits := func(n int) bool {
		r.Concurrency, r.RequestRate, r.MaxNumSeqs, r.Clients = n, 0, 0, 0
		l := Estimate(r, tp, dp)
		return l.Fits && !l.Preempts
	}
	own := l.RunningSeqs() // what runs; the other clients queue
	for n := 1; n <= MaxConcurrency && fits(n); n *= 2 {
		if own > last(out) && own < n && fits(own) {
			out = append(out, own)
		}
		out = append(out, n)
	}
	if own > last(out) && own <= MaxConcurrency && fits(own) {
		out = append(out, own)
	}
	return out
}

// last is the last of v, 0 when empty.
func last(v []int) int {
	if len(v) == 0 {
		return 0
	}
	return v[len(v)-1]
}
