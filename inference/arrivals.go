package inference

import (
	"fmt"
	"math"
)

// Sizing a server for a request rate. Sources, cited as [tag] below:
//
//	[mginf]  L. Kleinrock, Queueing Systems, Vol. 1: Theory (Wiley, 1975), and D. Gross and
//	         C. M. Harris, Fundamentals of Queueing Theory (Wiley), the M/G/∞ queue: with
//	         Poisson arrivals of rate λ and every arrival served at once, the number in
//	         the system in steady state is Poisson distributed with mean λ·E[S], whatever
//	         the distribution of the service time S.
//	[pasta]  R. W. Wolff, "Poisson Arrivals See Time Averages", Operations Research 30(2),
//	         1982: a Poisson arrival finds the system in its time-average distribution.
//	[little] J. D. C. Little, "A Proof for the Queuing Formula: L = λW", Operations
//	         Research 9(3), 1961.

// AdmitQuantile is the share of arriving requests that a replica sized
// for a request rate admits at once: its max_num_seqs is the smallest
// cap c with P(N ≤ c−1) ≥ AdmitQuantile, where N is the sequences an
// arrival finds in the replica, so that the arrival is at most the c-th.
// The rest, 1 − P(N ≤ c−1) (Layout.FullOnArrival), find all c slots
// taken and wait in vLLM's queue.
const AdmitQuantile = 0.99

// AtRate costs a layout of tp devices a replica and dp replicas at
// r.RequestRate, sized for the fluctuation of its load, not only for its
// mean.
//
// The mean: by Little's law [little] the sequences in the server are the
// rate times a request's time in it, N = rate × (TTFT + OutputLen ×
// ITL(N)). The ITL grows with N, so N is raised from 1 until it holds (at
// most MaxConcurrency; beyond that the layout does not fit). The
// layout's Concurrency says what N came to, and MeanSeqs is a replica's
// share of it, rate/DP × time in the server (the replicas split the
// arrivals, a Poisson process each).
//
// The cap: with Poisson arrivals and a server that admits every request
// up to its cap, the sequences in a replica are Poisson distributed with
// that mean (M/G/∞ [mginf]), and an arrival finds them in that
// distribution [pasta]. A cap at the mean is full about half the time
// and queues the arrivals behind it; each replica's max_num_seqs
// (SeqsEach) is instead the AdmitQuantile cap, and the layout's memory,
// TTFT and ITL are costed at that batch, the one a full replica runs.
// When its pages hold fewer, SeqsEach is what they hold, ShortOfCap is
// set, and FullOnArrival says how often an arrival then waits; when they
// hold no more than the mean, the queue grows without bound and the
// layout does not fit.
//
// A layout that keeps up serves what is offered: rate × OutputLen output
// tokens/s, the N sequences in the server over their time in it (Little's
// law) times the tokens each brings. N/ITL, the throughput at a fixed
// concurrency, would count the spare slots of the cap, a capacity the
// arrivals seldom fill.
func AtRate(r Request, tp, dp int) Layout {
	n, mean, l := littleMean(r, tp, dp)
	if !l.Fits {
		return l
	}
	want := poissonQuantile(mean, AdmitQuantile) + 1
	c := want
	for c > 0 && float64(c) > mean {
		r.Concurrency = c * dp
		l = Estimate(r, tp, dp)
		if l.Fits {
			break
		}
		c = min(c-1, l.Memory.MaxSeqs) // what the pages hold at this batch, or fewer
	}
	l.Concurrency, l.MeanSeqs = n, mean
	if !l.Fits || float64(c) <= mean {
		l.Fits = false
		return l
	}
	l.ShortOfCap = c < want
	l.FullOnArrival = max(1-poissonCDF(c-1, mean), 0)
	l.TokensPerSecond = r.RequestRate * float64(r.OutputLen)
	l.PerChip = l.TokensPerSecond / float64(l.Chips)
	return l
}

// littleMean finds the concurrency Little's law gives for r.RequestRate
// on a layout of tp devices a replica and dp replicas: the least n (all
// replicas') with n ≥ rate × time in the server at n, a replica's mean
// sequences at it (rate/dp × that time), and the layout costed at n
// (Fits false when n does not fit or exceeds MaxConcurrency).
func littleMean(r Request, tp, dp int) (int, float64, Layout) {
	n := 1
	for {
		r.Concurrency = n
		l := Estimate(r, tp, dp)
		l.Concurrency = n
		inServer := l.TTFT.Seconds() + float64(r.OutputLen)*l.ITL.Seconds()
		need := int(math.Ceil(r.RequestRate * inServer))
		if need <= n {
			return n, r.RequestRate / float64(dp) * inServer, l
		}
		if need > MaxConcurrency || !l.Fits {
			l.Fits = false
			return n, 0, l
		}
		n = need
	}
}

// poissonTerm is P(N = k) for N Poisson with the given mean, e^−mean ·
// mean^k / k!, computed from its logarithm so that neither mean^k nor k!
// overflows and e^−mean does not underflow on its own.
func poissonTerm(k int, mean float64) float64 {
	lg, _ := math.Lgamma(float64(k) + 1)
	return math.Exp(float64(k)*math.Log(mean) - mean - lg)
}

// poissonCDF is P(N ≤ k) for N Poisson with the given mean: 0 for k < 0,
// 1 for a mean of 0 and k ≥ 0.
func poissonCDF(k int, mean float64) float64 {
	if k < 0 {
		return 0
	}
	if mean <= 0 {
		return 1
	}
	sum := 0.0
	for i := 0; i <= k; i++ {
		sum += poissonTerm(i, mean)
	}
	return min(sum, 1)
}

// poissonQuantile is the p-quantile of N Poisson with the given mean:
// the least k with P(N ≤ k) ≥ p, for p in [0, 1) and a finite mean of 0
// or more (0 for a mean of 0). Past the mean the terms only shrink, so
// the sum stops there if they vanish before reaching p (p within
// rounding of 1).
func poissonQuantile(mean, p float64) int {
	if mean <= 0 || math.IsNaN(mean) {
		return 0
	}
	sum := 0.0
	for k := 0; ; k++ {
		t := poissonTerm(k, mean)
		sum += t
		if sum >= p || (float64(k) > mean && t == 0) {
			return k
		}
	}
}

// admitReason says how a layout under a request rate is sized: the mean
// sequences a replica, the cap, and how often an arrival finds it full.
func admitReason(r Request, b Layout) string {
	return fmt.Sprintf("max_num_seqs %d a replica: each replica's %g requests/s keep %.1f sequences in it on average (Little's law), Poisson-distributed (M/G/∞ with Poisson arrivals); %d admits %g%% of arrivals at once, and %.2g%% find all %d taken and wait; the memory and latencies are costed at %d",
		b.SeqsEach, r.RequestRate/float64(b.DP), b.MeanSeqs, b.SeqsEach, 100*AdmitQuantile, 100*b.FullOnArrival, b.SeqsEach, b.SeqsEach)
}

// shortWarning says that b's pages hold fewer sequences than the cap its
// rate asks for, and how often an arrival then waits.
func shortWarning(r Request, b Layout) string {
	want := poissonQuantile(b.MeanSeqs, AdmitQuantile) + 1
	return fmt.Sprintf("a replica's pages hold %d sequences of %d tokens, fewer than the %d that admit %g%% of arrivals at once at %g requests/s (%.1f sequences a replica on average, Poisson-distributed): max_num_seqs is %d, and %.2g%% of arrivals find it full and wait",
		b.SeqsEach, r.MaxModelLen, want, 100*AdmitQuantile, r.RequestRate, b.MeanSeqs, b.SeqsEach, 100*b.FullOnArrival)
}
