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
// closes the loop: N = λ·(TTFT + L_out·t), with TTFT a lone prompt's and
// L_out the output tokens. Each step then computes N decode tokens and,
// on average, λ·t·P prompt tokens, so at any fixed point the replica's
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
// when the decode tokens leave no budget for a prompt). Rounds of several
// steps are iterated the same way, and their convergence is tested
// (TestSteadyStateChunked).

// stepTime is the seconds of one step of a replica that decodes a token
// of each of decode sequences and computes the prompt chunks prefill, of
// which its busiest DP rank computes rankTokens tokens of rankPrompts
// prompts (one scheduler: all of them).
type stepTime func(decode int, prefill []work, rankTokens, rankPrompts int) float64

// arrivals is one replica's share of a request rate: what its steady
// state is found from.
type arrivals struct {
	rate           float64 // requests a second to the replica, a Poisson process
	ttft           float64 // seconds: a lone prompt's time to its first token
	prompt, output int     // tokens a request
	budget         int     // max_num_batched_tokens of a scheduler
	ranks          int     // the replica's schedulers (DP ranks; 1: one)
	limit          int     // the most sequences the replica holds
}

// steady is a replica's steady state: the mean sequences in it (Little's
// law), its mean step and round in seconds, and the iterations that
// found them.
type steady struct {
	mean, step, round float64
	iterations        int
}

// maxIterations bounds steadyState's iterations.
const maxIterations = 1000

// steadyState is the least fixed point of a's rounds with steps of time
// step, and false when there is none below a.limit sequences (the rate
// saturates the replica) or the iterations do not settle to within a
// billionth.
func (a arrivals) steadyState(step stepTime) (steady, bool) {
	var t, r float64 // the mean step and round
	n := -1
	for i := 1; i <= maxIterations; i++ {
		mean := a.rate * (a.ttft + float64(a.output)*t)
		next := int(math.Ceil(mean))
		if next > a.limit || a.rate*r > float64(a.limit) {
			return steady{mean: mean, step: t, round: r, iterations: i}, false
		}
		eT, eS, ok := a.expect(step, next, a.rate*r)
		if !ok {
			return steady{mean: mean, step: t, round: r, iterations: i}, false
		}
		settled := next == n && near(eT/eS, t) && near(eT, r)
		t, r, n = eT/eS, eT, next
		if settled {
			return steady{mean: a.rate * (a.ttft + float64(a.output)*t), step: t, round: r, iterations: i}, true
		}
	}
	return steady{step: t, round: r, iterations: maxIterations}, false
}

// near reports whether x is within a billionth of y.
func near(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Abs(y) }

// expect is E[T_K] and E[S_K], a round's mean time and steps, for K
// prompts, Poisson with mean mu, and decode sequences decoding; false
// when the decode tokens leave a scheduler no budget for a prompt. On a
// replica of DP ranks the prompts come in groups of one a rank, K/ranks
// groups Poisson with mean mu/ranks: the DP scheduler holds new requests
// until as many are pending as it has ranks (or as many ranks idle, or
// 30 s) and then deals them to the ranks together [ti-dps]; its wait is
// before the requests take a slot, and not counted. The Poisson sum
// stops past the mean once a term is below 1e-15, and is divided by the
// probability it covers.
func (a arrivals) expect(step stepTime, decode int, mu float64) (t, s float64, ok bool) {
	free := a.budget - ceilDiv(decode, a.ranks)
	if free < 1 {
		return 0, 0, false
	}
	cover, groups := 0.0, mu/float64(a.ranks)
	for k := 0; ; k++ {
		p := 1.0
		if mu > 0 {
			p = poissonTerm(k, groups)
		}
		rt, rs := a.round(step, decode, k*a.ranks, free)
		t, s, cover = t+p*rt, s+p*float64(rs), cover+p
		if mu == 0 || (float64(k) > groups && p < 1e-15) {
			return t / cover, s / cover, true
		}
	}
}

// round is the time and steps of a round that prefills k prompts
// alongside decode sequences: the prompts dealt to the ranks in turn,
// each rank's in order in chunks of free tokens, one a step [v-sched];
// with no prompt, one decode step.
func (a arrivals) round(step stepTime, decode, k, free int) (float64, int) {
	if k == 0 {
		return step(decode, nil, 0, 0), 1
	}
	perRank := make([][][]work, 0, a.ranks) // each rank's chunks, step by step
	for j := range min(a.ranks, k) {
		prompts := k / a.ranks
		if j < k%a.ranks {
			prompts++
		}
		perRank = append(perRank, a.chunks(prompts, free))
	}
	t, steps := 0.0, len(perRank[0]) // the first rank has the most prompts
	var prefill []work
	for i := range steps {
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
		t += step(decode, prefill, rankTokens, rankPrompts)
	}
	return t, steps
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
