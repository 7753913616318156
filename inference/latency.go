package inference

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Percentiles summarise latencies: the mean and the nearest-rank
// percentiles.
type Percentiles struct {
	Mean, P50, P90, P99 time.Duration
}

// percentiles summarises v, which it reorders: each percentile is the
// k-th smallest, found by selection rather than a sort (a simulation of
// 10,000 requests has millions of inter-token latencies).
func percentiles(v []time.Duration) Percentiles {
	if len(v) == 0 {
		return Percentiles{}
	}
	sum := 0.0
	for _, x := range v {
		sum += float64(x)
	}
	rank := func(p float64) int { return max(int(math.Ceil(p*float64(len(v))))-1, 0) }
	lo := 0
	var out [3]time.Duration
	for i, p := range []float64{0.50, 0.90, 0.99} {
		k := rank(p)
		out[i] = nthSmallest(v, lo, k)
		lo = k // everything before k is no larger: the next rank is at or after it
	}
	return Percentiles{Mean: time.Duration(sum / float64(len(v))), P50: out[0], P90: out[1], P99: out[2]}
}

// nthSmallest reorders v[lo:] so that v[k] is the value a sort would put
// there, every element before it no larger and every one after no
// smaller (Hoare's selection, the middle element as pivot), and returns
// v[k]. v[:lo] must hold no element larger than any of v[lo:].
func nthSmallest(v []time.Duration, lo, k int) time.Duration {
	hi := len(v) - 1
	for lo < hi {
		pivot := v[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for v[i] < pivot {
				i++
			}
			for v[j] > pivot {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return v[k]
		}
	}
	return v[k]
}

// latencyRuns is a multiset of latencies kept as runs of equal values in
// the order they come: in a decode step every sequence that also emitted
// in the step before has the same inter-token latency, so a simulation's
// millions of them fit in a run per step or so.
type latencyRuns struct {
	runs []latencyRun
	n    int
}

type latencyRun struct {
	v time.Duration
	n int
}

// add counts one more latency d.
func (l *latencyRuns) add(d time.Duration) {
	l.n++
	if k := len(l.runs) - 1; k >= 0 && l.runs[k].v == d {
		l.runs[k].n++
		return
	}
	l.runs = append(l.runs, latencyRun{d, 1})
}

// percentiles is percentiles of the latencies one by one, which it sorts
// by value: the nearest rank k is in the run whose cumulative count first
// passes it.
func (l *latencyRuns) percentiles() Percentiles {
	if l.n == 0 {
		return Percentiles{}
	}
	sum := 0.0
	for _, r := range l.runs {
		sum += float64(r.v) * float64(r.n)
	}
	slices.SortStableFunc(l.runs, func(a, b latencyRun) int { return cmp.Compare(a.v, b.v) })
	var out [3]time.Duration
	i, below := 0, 0 // runs[:i] hold the below smallest latencies
	for j, p := range []float64{0.50, 0.90, 0.99} {
		k := max(int(math.Ceil(p*float64(l.n)))-1, 0)
		for below+l.runs[i].n <= k {
			below += l.runs[i].n
			i++
		}
		out[j] = l.runs[i].v
	}
	return Percentiles{Mean: time.Duration(sum / float64(l.n)), P50: out[0], P90: out[1], P99: out[2]}
}
