package inference

import (
	"cmp"
	"math"
	"math/bits"
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
	lo := 0
	var out [3]time.Duration
	for i, p := range []float64{0.50, 0.90, 0.99} {
		k := nearestRank(p, len(v))
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

// latencies is a multiset of latencies in memory that does not grow with
// their count: a simulation at a low request rate decodes one sequence a
// step, each step's latency a little longer than the last as the context
// grows, so a latency a step (tens of millions of them) would not fit.
//
// While the distinct latencies are few it keeps them exactly, as runs of
// equal values in the order they come (in a decode step every sequence
// that also emitted in the step before has the same inter-token latency),
// sorted and merged when maxLatencyRuns of them pile up. Once more than
// maxLatencyRuns/2 distinct values remain after a merge it counts them in
// a histogram instead (latencyHist): then each percentile is within
// 2^-13 (0.0122 %) of the exact nearest-rank one. The memory is at most
// maxLatencyRuns runs (1 MiB) plus the histogram's (32 KiB for each
// power of two the latencies span, at most 1.7 MiB), whatever the count.
//
// The text output prints three significant figures, a half unit of which
// is at least 0.05 % of the value, so a percentile prints as the exact one
// does unless the exact one lies within 0.0122 % of a rounding boundary,
// when its last digit may differ by one; the mean is exact (its sum is
// kept apart, in float64, exact for sums below 2^53 ns, 104 days).
type latencies struct {
	runs []latencyRun
	hist *latencyHist // nil while the runs are exact
	n    int
	sum  float64
}

type latencyRun struct {
	v time.Duration
	n int
}

// maxLatencyRuns is the most runs latencies keeps exactly.
const maxLatencyRuns = 1 << 16

// add counts one more latency d.
func (l *latencies) add(d time.Duration) {
	l.n++
	l.sum += float64(d)
	switch {
	case l.hist != nil:
		l.hist.add(d, 1)
		return
	case len(l.runs) > 0 && l.runs[len(l.runs)-1].v == d:
		l.runs[len(l.runs)-1].n++
		return
	case len(l.runs) == maxLatencyRuns:
		l.merge()
		if l.hist != nil {
			l.hist.add(d, 1)
			return
		}
	}
	if len(l.runs) == cap(l.runs) { // grown by hand: append's growth may pass maxLatencyRuns
		runs := make([]latencyRun, len(l.runs), min(max(2*len(l.runs), 16), maxLatencyRuns))
		copy(runs, l.runs)
		l.runs = runs
	}
	l.runs = append(l.runs, latencyRun{d, 1})
}

// merge sorts the runs and merges those of equal values; when more than
// half of maxLatencyRuns remain, it moves them to a histogram.
func (l *latencies) merge() {
	l.sortRuns()
	if len(l.runs) <= maxLatencyRuns/2 {
		return
	}
	l.hist = &latencyHist{}
	for _, r := range l.runs {
		l.hist.add(r.v, r.n)
	}
	l.runs = nil
}

// sortRuns sorts the runs by value and merges those of equal values.
func (l *latencies) sortRuns() {
	slices.SortFunc(l.runs, func(a, b latencyRun) int { return cmp.Compare(a.v, b.v) })
	k := 0
	for _, r := range l.runs {
		if k > 0 && l.runs[k-1].v == r.v {
			l.runs[k-1].n += r.n
			continue
		}
		l.runs[k] = r
		k++
	}
	l.runs = l.runs[:k]
}

// percentiles is the mean and the nearest-rank percentiles of the
// latencies: exact while they are runs, within 2^-13 of it once they are
// a histogram (latencyHist.at).
func (l *latencies) percentiles() Percentiles {
	if l.n == 0 {
		return Percentiles{}
	}
	var out [3]time.Duration
	ps := []float64{0.50, 0.90, 0.99}
	if l.hist != nil {
		for j, p := range ps {
			out[j] = l.hist.at(nearestRank(p, l.n))
		}
	} else {
		l.sortRuns()
		i, below := 0, 0 // runs[:i] hold the below smallest latencies
		for j, p := range ps {
			k := nearestRank(p, l.n)
			for below+l.runs[i].n <= k {
				below += l.runs[i].n
				i++
			}
			out[j] = l.runs[i].v
		}
	}
	return Percentiles{Mean: time.Duration(l.sum / float64(l.n)), P50: out[0], P90: out[1], P99: out[2]}
}

// nearestRank is the index, counted from 0 in ascending order, of the
// p-th percentile of n values by the nearest-rank method.
func nearestRank(p float64, n int) int { return max(int(math.Ceil(p*float64(n)))-1, 0) }

// latencyHist counts latencies in buckets of relative width at most
// 2^-histBits: every latency below 2^histBits ns (4.1 µs) has a bucket of
// its own, and each power of two [2^e, 2^(e+1)) above is split into
// 2^histBits buckets of 2^(e−histBits) ns (the layout of HdrHistogram).
// A bucket's blocks are allocated when a latency first falls in them.
type latencyHist struct {
	blocks [64 - histBits][]uint64
}

const histBits = 12

// bucket is the block and the index in it of latency d (0 for d ≤ 0).
func (h *latencyHist) bucket(d time.Duration) (block, i int) {
	v := uint64(max(d, 0))
	if v < 1<<histBits {
		return 0, int(v)
	}
	shift := bits.Len64(v) - 1 - histBits
	return shift + 1, int(v>>shift) - 1<<histBits
}

// add counts n latencies of d.
func (h *latencyHist) add(d time.Duration, n int) {
	b, i := h.bucket(d)
	if h.blocks[b] == nil {
		h.blocks[b] = make([]uint64, 1<<histBits)
	}
	h.blocks[b][i] += uint64(n)
}

// at is the k-th smallest latency (from 0), as the middle of its bucket:
// a bucket of block b > 0 holds [low, low + 2^(b−1)) with low at least
// 2^(histBits+b−1), so the middle is within 2^-(histBits+1) of every
// latency in it; block 0's buckets are exact. k must be below the count.
func (h *latencyHist) at(k int) time.Duration {
	below := uint64(0)
	for b, block := range h.blocks {
		for i, c := range block {
			if below+c <= uint64(k) {
				below += c
				continue
			}
			if b == 0 {
				return time.Duration(i)
			}
			shift := b - 1
			low := uint64(i+1<<histBits) << shift
			return time.Duration(low + (uint64(1)<<shift)/2)
		}
	}
	panic("inference: latency rank past the histogram's count")
}
