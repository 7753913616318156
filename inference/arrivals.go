package inference

import (
	"fmt"
	"math"

	"shardlab/unit"
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
// The mean: by Little's law [little] the sequences in a replica are its
// rate times a request's time in it, N = rate/DP × (TTFT + OutputLen ×
// t), where t is the replica's mean step with the arriving prompts'
// chunks in it, longer than a decode-only step and growing with N
// (steadyState finds the fixed point, littleMean). MeanSeqs is N and
// MeanStep t; the layout's Concurrency is N over all replicas, rounded
// up (the replicas split the arrivals, a Poisson process each). A rate
// whose steady state needs more sequences than the pages hold (or
// MaxConcurrency), or has none, saturates the layout: it does not fit.
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
// A layout that keeps up serves what is offered: rate × the mean
// OutputLen output tokens/s (Request.meanOutput), the N sequences in the server over their time in it (Little's
// law) times the tokens each brings. N/ITL, the throughput at a fixed
// concurrency, would count the spare slots of the cap, a capacity the
// arrivals seldom fill.
func AtRate(r Request, tp, dp int) Layout {
	n, st, l := littleMean(r, tp, dp)
	if !l.Fits {
		return l
	}
	mean := st.mean
	want := poissonQuantile(mean, AdmitQuantile) + 1
	ranks := max(l.AttentionDP, 1) // max_num_seqs is each scheduler's [ti-dps]: a replica's cap is whole schedulers' worth
	c := ceilDiv(want, ranks) * ranks
	for c > 0 && float64(c) > mean {
		r.Concurrency = c * dp
		l = Estimate(r, tp, dp)
		if l.Fits && !l.Preempts {
			break
		}
		c = min(c-ranks, l.Memory.HeldSeqs/ranks*ranks) // what the pages hold at the requests' lengths at this batch, or fewer
	}
	l.Concurrency, l.MeanSeqs, l.MeanStep, l.LoadTTFT = n, mean, seconds(st.step), st.first
	if !l.Fits || l.Preempts || float64(c) <= mean {
		l.Fits = false
		return l
	}
	l.ShortOfCap = c < want
	l.FullOnArrival = max(1-poissonCDF(c-1, mean), 0)
	l.TokensPerSecond = r.RequestRate * r.meanOutput()
	l.PerChip = l.TokensPerSecond / float64(l.Chips)
	return l
}

// littleMean finds the mean sequences r.RequestRate keeps on a layout
// of tp devices a replica and dp replicas, its mixed steps counted
// (steadyState): the concurrency (all replicas', rounded up), a
// replica's mean sequences and its mean step. The replicas split the
// arrivals, a Poisson process each of rate/dp. The steps are Simulate's
// (replica) at a lone prompt's TTFT (Estimate at one sequence a
// replica), the decoding sequences at their mean context, prompt plus
// half the output, and max_num_seqs what the pages hold. The layout
// returned is that estimate, Fits false when the rate saturates it (the
// sequences its steady state needs exceed what its pages hold or
// MaxConcurrency, or it has no steady state).
func littleMean(r Request, tp, dp int) (int, steady, Layout) {
	r.Concurrency = dp
	l := Estimate(r, tp, dp)
	if !l.Fits {
		return dp, steady{}, l
	}
	srv, cost := replica(r, l, VLLM, ceilDiv(l.Memory.HeldSeqs, l.AttentionDP), StepOverhead(VLLM)) // each scheduler's share
	a := arrivals{rate: r.RequestRate / float64(dp), prompt: r.PromptLen, output: r.OutputLen, budget: r.MaxNumBatchedTokens,
		ranks: max(srv.Ranks, 1), limit: min(l.Memory.HeldSeqs, MaxConcurrency/dp), async: srv.AsyncScheduling}
	st, ok := a.steadyState(mixedStep(srv, cost, r.decodeContext()))
	n := int(math.Ceil(st.mean * float64(dp)))
	l.Concurrency, l.Fits = n, ok
	return n, st, l
}

// unsettledAt is the first of layouts on which r's steady state did not
// settle (steadyState, why unsettled), found again as AtRate found it,
// for noFit to name; false when every layout saturates or does not fit.
func unsettledAt(r Request, layouts []Layout) (Layout, bool) {
	for _, l := range layouts {
		if l.Fits {
			continue
		}
		if _, st, _ := littleMean(r, l.TP, l.DP); st.why == unsettled {
			return l, true
		}
	}
	return Layout{}, false
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

// rateCap is the max_num_seqs of b sized for a rate, as its reason and
// warning give it: a replica's, or under attention data parallelism each
// scheduler's with the replica's sum, which holds while the DP scheduler
// keeps its ranks even (it routes each request to the rank with the
// fewest pending prompt tokens, then the fewest requests [ti-dps]).
func rateCap(b Layout) string {
	if b.AttentionDP > 1 {
		return fmt.Sprintf("max_num_seqs %d on each of %d schedulers (%d a replica, while the DP scheduler's routing keeps its ranks even)", b.SchedulerSeqs(), b.AttentionDP, b.SeqsEach)
	}
	return fmt.Sprintf("max_num_seqs %d a replica", b.SeqsEach)
}

// admitReason says how a layout under a request rate is sized: the mean
// sequences a replica, the cap, and how often an arrival finds it full.
func admitReason(r Request, b Layout) string {
	return fmt.Sprintf("%s: each replica's %g requests/s keep %.1f sequences in it on average (Little's law, at a mean step of %v with the arriving prompts' chunks), Poisson-distributed (M/G/∞ with Poisson arrivals); %d admits %g%% of arrivals at once, and %.2g%% find all %d taken and wait; the memory and latencies are costed at %d",
		rateCap(b), r.RequestRate/float64(b.DP), b.MeanSeqs, secs(b.MeanStep), b.SeqsEach, 100*AdmitQuantile, 100*b.FullOnArrival, b.SeqsEach, b.SeqsEach)
}

// shortWarning says that b's pages hold fewer sequences than the cap its
// rate asks for, and how often an arrival then waits.
func shortWarning(r Request, b Layout) string {
	want := poissonQuantile(b.MeanSeqs, AdmitQuantile) + 1
	return fmt.Sprintf("a replica's pages hold %s of %d tokens, fewer than the %d that admit %g%% of arrivals at once at %g requests/s (%.1f sequences a replica on average, Poisson-distributed): %s, and %.2g%% of arrivals find it full and wait",
		unit.Plural(b.SeqsEach, "sequence"), r.MaxModelLen, want, 100*AdmitQuantile, r.RequestRate, b.MeanSeqs, rateCap(b), 100*b.FullOnArrival)
}
