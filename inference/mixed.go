package inference

import (
	"math"
	"time"
)

// A replica's steady state under Poisson arrivals, its mixed steps
// counted: vLLM schedules the running requests' tokens first, then the
// waiting prompts while the step's token budget lasts, chunked to it
// [v-sched], so the prompts that arrive while the replica decodes join
// its next steps, and tpu-inference pads those steps' tokens to its
// buckets [ti-pad]. A step that carries a prompt's chunk is longer than a
// decode-only one (llama3-70b on tpu7x-8, TP 8: about 80 ms against
// 22 ms at about 200 sequences, in the simulation), so the mean step, the ITL a decoding sequence sees on
// average, is longer than the decode-only roofline, and with it every
// request's time in the server and, by Little's law [little], the
// sequences the replica holds.
//
// The model, in rounds: a round is the steps that prefill the K prompts
// that arrived during the round before it, K Poisson distributed with
// mean λ·R (λ the replica's rate, R the mean round). Their K·P tokens go
// in chunks of the budget that the N decode tokens leave, one a step (on
// a replica with DP ranks, the prompts in groups of one a rank, as its
// DP scheduler deals them, each rank's in its own budget [ti-dps]), and
// each of those steps also decodes a token of each of the N sequences;
// a round with no arrival is one decode-only step.
// T_K is the round's time, the sum of its steps' times as Simulate costs
// them (Server.batch, replica), and S_K its steps. Over many rounds the
// mean step is t = E[T_K] / E[S_K] (renewal-reward), and Little's law
// closes the loop: N = λ·(TTFT + L_out·t), with L_out the output tokens
// and TTFT an arriving prompt's at the load, from the same rounds
// (meanFirst, below): its wait for the round in progress, the step
// async scheduling has already scheduled, and its prompt's chunks behind
// those of the prompts that arrived before it in its round. Each step
// then computes N decode tokens and, on average, λ·t·P prompt tokens,
// so at any fixed point the replica's
// token throughput, (N + λ·t·P)/t = λ·(P + L_out) + λ·TTFT/t, exceeds
// what arrives, λ·(P + L_out): a fixed point is a steady state that keeps
// up.
//
// steadyState finds it by iteration from t = R = 0. When every round is
// one step (K·P within the budget the decode tokens leave, as for the
// default 1024-token prompts and 4096-token budget), R = t and the map
// t → E[T_K] is non-decreasing: T_K grows with K and with N, K grows
// (stochastically) with λ·t, and N with t. Its iterates from 0 then rise
// to its least fixed point, or, when it has none, past the sequences the
// replica holds, where the rate is refused as saturated (the same holds
// when the decode tokens leave no budget for a prompt). The TTFT is
// iterated with t from 0, and is non-decreasing in t and N the same way
// (its steps' times grow with N, its round's prompts with λ·t, and the
// wait and the async step with the steps), so the joint map stays
// monotone. Rounds of several steps are iterated the same way, and
// their convergence is tested (TestSteadyStateChunked).

// stepTime is the seconds of one step of a replica that decodes a token
// of each of decode sequences and computes the prompt chunks prefill, of
// which its busiest DP rank computes rankTokens tokens of rankPrompts
// prompts (one scheduler: all of them).
type stepTime func(decode int, prefill []work, rankTokens, rankPrompts int) float64

// arrivals is one replica's share of a request rate: what its steady
// state is found from.
type arrivals struct {
	rate           float64 // requests a second to the replica, a Poisson process
	prompt, output int     // tokens a request
	budget         int     // max_num_batched_tokens of a scheduler
	ranks          int     // the replica's schedulers (DP ranks; 1: one)
	limit          int     // the most sequences the replica holds
	async          bool    // vLLM's async scheduling: a step is scheduled while the one before it runs [v-async]
}

// steady is a replica's steady state: the mean sequences in it (Little's
// law), its mean step and round in seconds, an arriving prompt's time
// to its first token (ttft its mean, first its distribution), and the
// iterations and work (maxWork) that found them.
type steady struct {
	mean, step, round, ttft float64
	first                   Percentiles
	iterations              int
	why                     int // when refused: saturated or unsettled
	work                    int // the work that found it (maxWork)
}

// maxIterations bounds steadyState's iterations.
const maxIterations = 1000

// maxWork bounds the work of one steadyState, its step evaluations (the
// stepTime calls of its rounds and its prompts' ends), each weighted by
// the sequences it costs, 1 + decode + prompt chunks, as mixedStep lists
// them, and its TTFT's cases (atomsWork): past it the state is refused
// as not settled, a reason of its own (unsettled), so that no request
// rate holds the planner for long. Each iteration's work is bounded
// before it is done (expectWork, batchWork). The goldens and tests fit
// within it (their plans are unchanged), and so does the layout that
// serves 20/s of 6000+500 tokens with a 512-token budget (llama3-8b,
// tpu7x-8, TP 1 × DP 8: between 10 and 25 million, mostly promptEnds
// costed afresh each iteration); 25 million take about half a second.
const maxWork = 25_000_000

// Why a steady state is refused: its sequences or round pass the limit,
// or its prompts' tokens a step reach what the budget leaves (saturated);
// or it did not settle within maxIterations or maxWork.
const (
	saturated = iota + 1
	unsettled
)

// steadyState is the least fixed point of a's rounds with steps of time
// step, and false when there is none below a.limit sequences (the rate
// saturates the replica: why saturated) or the iterations do not settle
// to within a billionth within maxIterations and maxWork (why
// unsettled). Little's law takes the TTFT under the load (meanFirst),
// iterated jointly with the step and the round from 0.
//
// An iterate whose arriving prompt tokens a step, a.rate·t·P a rank,
// reach what the budget leaves a rank beside its decode sequences is
// refused at once as saturated (a.saturates): at a fixed point they are
// below it, and the iterates rise to the least fixed point.
func (a arrivals) steadyState(step stepTime) (steady, bool) {
	done := 0
	counted := func(decode int, prefill []work, rankTokens, rankPrompts int) float64 {
		done += 1 + decode + len(prefill)
		return step(decode, prefill, rankTokens, rankPrompts)
	}
	var t, r, ttft float64 // the mean step, round and TTFT
	n := -1
	for i := 1; i <= maxIterations; i++ {
		mean := a.rate * (ttft + float64(a.output)*t)
		next := int(math.Ceil(mean))
		out := steady{mean: mean, step: t, round: r, ttft: ttft, iterations: i, why: saturated}
		if next > a.limit || a.rate*r > float64(a.limit) || a.saturates(t, next) {
			return out, false
		}
		if out.why = unsettled; done+a.expectWork(next, a.rate*r) > maxWork {
			return out, false
		}
		rs, ok := a.expect(counted, next, a.rate*r)
		if !ok {
			out.why = saturated
			return out, false
		}
		if done+a.batchWork(next, rs) > maxWork {
			return out, false
		}
		eT, eS := rs.time, rs.steps
		f := a.meanFirst(counted, next, rs, eT/eS)
		settled := next == n && near(eT/eS, t) && near(eT, r) && near(f, ttft)
		t, r, n, ttft = eT/eS, eT, next, f
		if settled {
			if done+a.batchWork(n, rs)+a.atomsWork(rs) > maxWork {
				return steady{mean: a.rate * (ttft + float64(a.output)*t), step: t, round: r, ttft: ttft, iterations: i, why: unsettled}, false
			}
			first := firstPercentiles(a.firstAtoms(counted, n, rs, t))
			return steady{mean: a.rate * (ttft + float64(a.output)*t), step: t, round: r, ttft: ttft, first: first, iterations: i, work: done}, true
		}
	}
	return steady{step: t, round: r, ttft: ttft, iterations: maxIterations, why: unsettled}, false
}

// saturates reports whether prompts arriving at a.rate, at a mean step
// of t seconds, bring a rank at least the tokens a step that its budget
// leaves beside decode sequences: a.rate·t·P / ranks ≥ free. At a fixed
// point they are below it. Each rank computes at most free prompt tokens
// a step, and a round with no prompt, of probability p0 = P(K = 0) > 0,
// computes none, so the rounds' K·P tokens, μ·P on average (μ = λ·R),
// take E[S] ≥ μ·P/(ranks·free) + p0 steps, and with R = t·E[S],
// λ·t·P/ranks = μ·P/(ranks·E[S]) < free. The iterates rise to the least
// fixed point (t and N up, the free tokens down), so an iterate at or
// past it shows that there is none below the limit, where the iteration
// would otherwise run (TestSaturatesAsIterated checks it against the
// iteration without the test). A settled state holds the bound within
// its tolerance, a billionth.
func (a arrivals) saturates(t float64, decode int) bool {
	free := a.budget - ceilDiv(decode, a.ranks)
	return a.rate*t*float64(a.prompt)/float64(a.ranks) >= float64(free)
}

// near reports whether x is within a billionth of y.
func near(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Abs(y) }

// rounds is the distribution of a round: the probability and time of a
// round of k groups of prompts (roundOf[k]), and its mean time, second
// moment of time and mean steps.
type rounds struct {
	of                 []roundOf
	time, time2, steps float64
}

type roundOf struct{ p, time float64 }

// expect is the rounds for K prompts, Poisson with mean mu, and decode
// sequences decoding: E[T_K], E[T_K²], E[S_K]; false when the decode
// tokens leave a scheduler no budget for a prompt. On a replica of DP
// ranks the prompts come in groups of one a rank, K/ranks groups Poisson
// with mean mu/ranks: the DP scheduler holds new requests until as many
// are pending as it has ranks (or as many ranks idle, or 30 s) and then
// deals them to the ranks together [ti-dps]; its wait is before the
// requests take a slot, and not counted. The Poisson sum is over
// poissonSpan's terms, and is divided by the probability it covers; the
// rounds are costed incrementally (fullRounds).
func (a arrivals) expect(step stepTime, decode int, mu float64) (rounds, bool) {
	free := a.budget - ceilDiv(decode, a.ranks)
	if free < 1 {
		return rounds{}, false
	}
	var rs rounds
	cover, groups := 0.0, mu/float64(a.ranks)
	lo, hi := poissonSpan(groups)
	fr := fullRounds{a: a, step: step, decode: decode, free: free}
	for k := lo; k <= hi; k++ {
		p := 1.0
		if mu > 0 {
			p = poissonTerm(k, groups)
		}
		rt, n := fr.round(k)
		rs.of = append(rs.of, roundOf{p, rt})
		rs.time, rs.time2, rs.steps, cover = rs.time+p*rt, rs.time2+p*rt*rt, rs.steps+p*float64(n), cover+p
	}
	for i := range rs.of {
		rs.of[i].p /= cover
	}
	rs.time, rs.time2, rs.steps = rs.time/cover, rs.time2/cover, rs.steps/cover
	return rs, true
}

// leftTail is c in poissonSpan's first term ⌊mean − c·√mean⌋:
// √(2·ln 10¹⁵) ≈ 8.31, so that the terms left out weigh below 1e-15.
var leftTail = math.Sqrt(2 * math.Log(1e15))

// poissonSpan is the terms lo..hi of a Poisson distribution with the
// given mean that expect and batches sum: from ⌊mean − c·√mean⌋ (0 for
// a mean up to c² ≈ 69), c = leftTail, to the first past the mean below
// 1e-15 (a mean of 0: the term 0 alone). The terms below lo weigh less
// than 1e-15 (Chernoff): for X Poisson with mean μ and s > 0,
// P(X ≤ a) ≤ e^{sa}·E[e^{−sX}] = exp(sa + μ(e^{−s} − 1)), which at
// e^{−s} = a/μ, for a = u·μ with 0 < u < 1, is exp(−μ·h(u)) with
// h(u) = u·ln u − u + 1; h(u) ≥ (1 − u)²/2, as their difference is 0 at
// u = 1 and its derivative, ln u + 1 − u, is at most 0 (ln u ≤ u − 1).
// So P(X ≤ μ − x) ≤ exp(−x²/(2μ)), and at x = c·√μ, exp(−c²/2) = 1e-15
// (at a = 0, e^{−μ} ≤ e^{−μ/2}).
func poissonSpan(mean float64) (lo, hi int) {
	if mean <= 0 {
		return 0, 0
	}
	lo = max(0, int(math.Floor(mean-leftTail*math.Sqrt(mean))))
	for k := max(lo, int(mean)); ; k++ {
		if float64(k) > mean && poissonTerm(k, mean) < 1e-15 {
			return lo, k
		}
	}
}

// fullRounds costs the rounds of k groups of prompts, one a rank, with
// decode sequences and free tokens a rank a step, as round does, each
// step once: every rank has k prompts, so each step but a round's last
// computes free tokens a rank, the same whatever k (the tokens
// [i·free, (i+1)·free) of the ranks' prompts in turn). full[i] is the
// time of the first i such steps, summed in round's order.
type fullRounds struct {
	a            arrivals
	step         stepTime
	decode, free int
	full         []float64
	buf          []work
}

// round is the time and steps of a round of k groups (round).
func (fr *fullRounds) round(k int) (float64, int) {
	if k == 0 {
		return fr.step(fr.decode, nil, 0, 0), 1
	}
	tokens := k * fr.a.prompt // each rank's
	s := ceilDiv(tokens, fr.free)
	if len(fr.full) == 0 {
		fr.full = append(fr.full, 0)
	}
	for i := len(fr.full) - 1; i < s-1; i++ {
		fr.full = append(fr.full, fr.full[i]+fr.stepAt(i*fr.free, (i+1)*fr.free))
	}
	return fr.full[s-1] + fr.stepAt((s-1)*fr.free, tokens), s
}

// stepAt is the time of a step whose every rank computes the tokens
// [from, to) of its prompts, in chunks split at the prompts' ends
// (chunks).
func (fr *fullRounds) stepAt(from, to int) float64 {
	p := fr.a.prompt
	fr.buf = fr.buf[:0]
	for pos := from; pos < to; {
		done := pos % p
		n := min(p-done, to-pos)
		fr.buf = append(fr.buf, work{computed: done, n: n})
		pos += n
	}
	chunk := len(fr.buf)
	for range fr.a.ranks - 1 {
		fr.buf = append(fr.buf, fr.buf[:chunk]...)
	}
	return fr.step(fr.decode, fr.buf, to-from, chunk)
}

// expectWork bounds the work (maxWork) of expect(decode, mu): each
// round's last step and each full step of the longest once, each with
// the decode sequences and at most free/P + 2 chunks a rank, or its
// prompts.
func (a arrivals) expectWork(decode int, mu float64) int {
	free := a.budget - ceilDiv(decode, a.ranks)
	if free < 1 {
		return 0
	}
	lo, hi := poissonSpan(mu / float64(a.ranks))
	if hi == 0 {
		return 1 + decode
	}
	return (ceilDiv(hi*a.prompt, free) + hi - lo) * (1 + decode + a.ranks*min(hi, free/a.prompt+2))
}

// round is the time and steps of a round that prefills k prompts
// alongside decode sequences (roundSteps).
func (a arrivals) round(step stepTime, decode, k, free int) (float64, int) {
	steps := a.roundSteps(step, decode, k, free)
	t := 0.0
	for _, s := range steps {
		t += s
	}
	return t, len(steps)
}

// roundSteps is the time of each step of a round that prefills k
// prompts alongside decode sequences: the prompts dealt to the ranks in
// turn, each rank's in order in chunks of free tokens, one a step
// [v-sched]; with no prompt, one decode step.
func (a arrivals) roundSteps(step stepTime, decode, k, free int) []float64 {
	if k == 0 {
		return []float64{step(decode, nil, 0, 0)}
	}
	perRank := make([][][]work, 0, a.ranks) // each rank's chunks, step by step
	for j := range min(a.ranks, k) {
		prompts := k / a.ranks
		if j < k%a.ranks {
			prompts++
		}
		perRank = append(perRank, a.chunks(prompts, free))
	}
	out := make([]float64, len(perRank[0])) // the first rank has the most prompts
	var prefill []work
	for i := range out {
		prefill = prefill[:0]
		rankTokens, rankPrompts := 0, 0
		for _, c := range perRank {
			if i < len(c) {
				prefill = append(prefill, c[i]...)
				tokens := 0
				for _, w := range c[i] {
					tokens += w.n
				}
				rankTokens, rankPrompts = max(rankTokens, tokens), max(rankPrompts, len(c[i]))
			}
		}
		out[i] = step(decode, prefill, rankTokens, rankPrompts)
	}
	return out
}

// chunks is one scheduler's steps of k prompts in chunks of free tokens
// a step: a partly computed prompt first, then the next while the budget
// lasts [v-sched].
func (a arrivals) chunks(k, free int) [][]work {
	var out [][]work
	done, left := 0, k*a.prompt
	for left > 0 {
		var c []work
		for room := free; room > 0 && left > 0; {
			n := min(a.prompt-done, room)
			c = append(c, work{computed: done, n: n})
			done, room, left = done+n, room-n, left-n
			if done == a.prompt {
				done = 0
			}
		}
		out = append(out, c)
	}
	return out
}

// mixedStep is the stepTime of a replica whose decoding sequences each
// hold ctx tokens of context, built by srv (Server.batch) and costed by
// cost, as Simulate builds and costs its steps: the decode sequences
// spread evenly over the replica's DP ranks.
func mixedStep(srv Server, cost func(Batch) time.Duration, ctx int) stepTime {
	var w []work
	return func(decode int, prefill []work, rankTokens, rankPrompts int) float64 {
		w = w[:0]
		for range decode {
			w = append(w, work{computed: ctx - 1, n: 1})
		}
		w = append(w, prefill...)
		each := ceilDiv(decode, max(srv.Ranks, 1))
		return cost(srv.batch(w, each+rankTokens, each+rankPrompts)).Seconds()
	}
}

// An arriving prompt's time to its first token in the steady state, in
// the rounds' terms. A Poisson arrival finds a round in progress with
// probability proportional to its time [pasta] (a round of k groups:
// P(K = k)·T_k / E[T_K]), at a point uniform in it, so its wait for the
// round to end is on average E[T_K²] / (2·E[T_K]). Under async
// scheduling [v-async] the step after is already scheduled without it:
// a mean step more. Its prompt is then prefilled in the next round,
// with the M other prompts that arrived in the same round, M Poisson
// with mean λ·T_k; it is uniformly placed among them (given M, the
// prompts before it are uniform on 0..M: Poisson splitting by a uniform
// point), and the j before it are computed first [v-sched]. Its first
// token comes with the step that computes its last prompt token
// (promptEnds), each step costed with all M + 1 prompts' chunks.
// Given T_k, M and j, its point in its arrival round is Beta(j+1,
// M−j+1) distributed (uniform, conditioned on j of M before it), and
// its wait for the round's end T_k·(1 − that): on average
// T_k·(M−j+1)/(M+2). On a replica of DP ranks the batch is dealt to the
// ranks in turn as it is, not in whole groups of one a rank, and the DP
// scheduler's wait for a group (expect) is not counted.

// promptEnds is, for a round that prefills k prompts alongside decode
// sequences, the time from the round's start to the end of the step
// that computes each prompt's last token: prompt j is dealt to rank
// j mod ranks, the (j/ranks)-th there, and that rank's chunks reach its
// last token, the ((j/ranks)+1)·P-th, in step ⌈((j/ranks)+1)·P / free⌉.
func (a arrivals) promptEnds(step stepTime, decode, k, free int) []float64 {
	steps := a.roundSteps(step, decode, k, free)
	for i := 1; i < len(steps); i++ {
		steps[i] += steps[i-1]
	}
	out := make([]float64, k)
	for j := range out {
		out[j] = steps[ceilDiv((j/a.ranks+1)*a.prompt, free)-1]
	}
	return out
}

// batches calls fn for each round an arriving prompt can find in
// progress and each count of other prompts that arrive in it, with the
// probability of both, the round's time and the prompts' ends
// (promptEnds) when they are prefilled together. Each Poisson sum is
// over poissonSpan's terms, and is divided by the probability it covers.
func (a arrivals) batches(step stepTime, decode int, rs rounds, fn func(w, round float64, ends []float64)) {
	free := a.budget - ceilDiv(decode, a.ranks)
	ends := map[int][]float64{}
	var ps []float64
	for _, r := range rs.of {
		w := r.p // a round of no time: weighted by its probability
		if rs.time > 0 {
			w = r.p * r.time / rs.time
		}
		mu, cover := a.rate*r.time, 0.0
		lo, hi := poissonSpan(mu)
		ps = ps[:0]
		for m := lo; m <= hi; m++ {
			p := 1.0
			if mu > 0 {
				p = poissonTerm(m, mu)
			}
			ps, cover = append(ps, p), cover+p
		}
		for i, p := range ps {
			m := lo + i
			if ends[m] == nil {
				ends[m] = a.promptEnds(step, decode, m+1, free)
			}
			fn(w*p/cover, r.time, ends[m])
		}
	}
}

// batchWork bounds the work (maxWork) of batches over rs with decode
// sequences: promptEnds's steps for each count of prompts in any round's
// span, 1 + m a batch in ⌈⌈(m+1)/ranks⌉·P / free⌉ steps, each with the
// decode sequences and at most its prompts' chunks.
func (a arrivals) batchWork(decode int, rs rounds) int {
	free := a.budget - ceilDiv(decode, a.ranks)
	lo, hi := math.MaxInt, 0
	for _, r := range rs.of {
		l, h := poissonSpan(a.rate * r.time)
		lo, hi = min(lo, l), max(hi, h)
	}
	n := 0
	for m := lo; m <= hi && free > 0; m++ {
		n += ceilDiv(ceilDiv(m+1, a.ranks)*a.prompt, free) * (1 + decode + min(m+1, a.ranks*(free/a.prompt+2)))
	}
	return n
}

// atomsWork is the work (maxWork) of firstAtoms's cases of rs and of
// their percentiles: each round's batches of m + 1 prompts, m over its
// span, one a place in the batch, each of whose distributions sums up
// to m + 2 binomial terms.
func (a arrivals) atomsWork(rs rounds) int {
	n := 0
	for _, r := range rs.of {
		lo, hi := poissonSpan(a.rate * r.time)
		for m := lo; m <= hi; m++ {
			n += (m + 1) * (m + 2)
		}
	}
	return n
}

// meanFirst is the mean time to the first token of a prompt that
// arrives at the steady state of rounds rs with decode sequences and a
// mean step of t seconds: the mean wait for the round in progress to
// end, the async step, and the mean over its place in its batch of the
// time to the step that ends its prompt (summed once a batch size).
func (a arrivals) meanFirst(step stepTime, decode int, rs rounds, t float64) float64 {
	sum := 0.0
	if rs.time > 0 {
		sum = rs.time2 / (2 * rs.time) // the wait for the round in progress
	}
	sums := map[int]float64{} // each batch's ends, by its prompts
	a.batches(step, decode, rs, func(w, _ float64, ends []float64) {
		e, ok := sums[len(ends)]
		if !ok {
			for _, x := range ends {
				e += x
			}
			sums[len(ends)] = e
		}
		sum += w * e / float64(len(ends))
	})
	if a.async {
		sum += t
	}
	return sum
}

// firstAtom is one case of an arriving prompt: its probability w, its
// time to its first token from the end of the round it arrived in
// (base), that round's time, and the prompts before it (ahead) and
// with it (others) in its batch.
type firstAtom struct {
	w, base, round float64
	ahead, others  int
}

// firstAtoms is the distribution of the time to the first token that
// meanFirst averages, case by case.
func (a arrivals) firstAtoms(step stepTime, decode int, rs rounds, t float64) []firstAtom {
	wait := 0.0
	if a.async {
		wait = t
	}
	var out []firstAtom
	a.batches(step, decode, rs, func(w, round float64, ends []float64) {
		for j, e := range ends {
			out = append(out, firstAtom{w: w / float64(len(ends)), base: wait + e, round: round, ahead: j, others: len(ends) - 1})
		}
	})
	return out
}

// cdf is P(base + wait ≤ x) for the atom, its wait for its round's end
// round·V with V Beta(others−ahead+1, ahead+1): P(V ≤ y) is the
// probability of at least others−ahead+1 successes in others+1 trials
// of probability y (the k-th of n uniforms is Beta(k, n−k+1), and is
// at most y when at least k of them are).
func (f firstAtom) cdf(x float64) float64 {
	switch {
	case x < f.base:
		return 0
	case f.round <= 0 || x >= f.base+f.round:
		return 1
	}
	return binomialTail(f.others+1, f.others-f.ahead+1, (x-f.base)/f.round)
}

// binomialTail is P(B ≥ a) for B binomial of n trials of probability y
// in (0, 1), its terms by their ratio from the larger end's: from y^n
// down when y ≥ 1/2, else 1 − the terms below a from (1−y)^n up.
func binomialTail(n, a int, y float64) float64 {
	sum := 0.0
	if y >= 0.5 {
		p := math.Pow(y, float64(n))
		for i := n; i >= a; i-- {
			sum += p
			p *= float64(i) / float64(n-i+1) * (1 - y) / y
		}
		return min(sum, 1)
	}
	p := math.Pow(1-y, float64(n))
	for i := 0; i < a; i++ {
		sum += p
		p *= float64(n-i) / float64(i+1) * y / (1 - y)
	}
	return max(1-sum, 0)
}

// firstPercentiles is the mean and nearest percentiles of the atoms'
// distribution: each p-quantile the least x with P(TTFT ≤ x) ≥ p, found
// by bisection to a nanosecond.
func firstPercentiles(atoms []firstAtom) Percentiles {
	if len(atoms) == 0 {
		return Percentiles{}
	}
	mean, lo0, hi0 := 0.0, math.Inf(1), 0.0
	for _, f := range atoms {
		mean += f.w * (f.base + f.round*float64(f.others-f.ahead+1)/float64(f.others+2))
		lo0, hi0 = min(lo0, f.base), max(hi0, f.base+f.round)
	}
	q := func(p float64) time.Duration {
		lo, hi := lo0, hi0
		for hi-lo > 1e-10 {
			mid, c := (lo+hi)/2, 0.0
			for _, f := range atoms {
				c += f.w * f.cdf(mid)
			}
			if c >= p {
				hi = mid
			} else {
				lo = mid
			}
		}
		return seconds(hi)
	}
	return Percentiles{Mean: seconds(mean), P50: q(0.50), P90: q(0.90), P99: q(0.99)}
}
