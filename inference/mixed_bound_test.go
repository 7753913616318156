package inference

import (
	"math"
	"strings"
	"testing"

	"shardlab/model"
)

// offsetStep is a toy step that tells chunks apart: each prompt chunk
// costs by where it starts in its prompt and by its length, the busiest
// rank's tokens and prompts count, and so do the decode sequences.
func offsetStep(decode int, prefill []work, rankTokens, rankPrompts int) float64 {
	s := 0.01 + 1e-4*float64(decode) + 1e-6*float64(rankTokens) + 3e-5*float64(rankPrompts)
	for i, w := range prefill {
		s += 1e-7 * math.Sqrt(float64(w.computed+1)) * float64(w.n) * float64(i+1)
	}
	return s
}

// TestFullRoundsAsRound holds fullRounds, which costs each step once,
// to round, which chunks every round's prompts from scratch: the same
// time, to the bit, and the same steps, for rounds of 0 to 40 groups.
func TestFullRoundsAsRound(t *testing.T) {
	for _, c := range []struct {
		a    arrivals
		free int
	}{
		{arrivals{prompt: 100, ranks: 1}, 30},
		{arrivals{prompt: 100, ranks: 1}, 100},
		{arrivals{prompt: 150, ranks: 2}, 100},
		{arrivals{prompt: 7, ranks: 4}, 1000},
		{arrivals{prompt: 6000, ranks: 3}, 471},
	} {
		fr := fullRounds{a: c.a, step: offsetStep, decode: 17, free: c.free}
		for _, k := range []int{3, 0, 1, 2, 5, 4, 40, 39, 20} { // out of order: full grows and is reused
			tm, steps := fr.round(k)
			wantT, wantS := c.a.round(offsetStep, 17, k*c.a.ranks, c.free)
			if tm != wantT || steps != wantS {
				t.Errorf("prompt %d, %d ranks, %d free, %d groups: %v s in %d steps, round gives %v in %d", c.a.prompt, c.a.ranks, c.free, k, tm, steps, wantT, wantS)
			}
		}
	}
}

// TestPoissonSpan: below the span's first term the Poisson terms weigh
// less than 1e-15 (summed here term by term from 0), the span starts at
// 0 up to a mean of c² ≈ 69 (so that those sums are as before), and its
// last term is the first past the mean below 1e-15.
func TestPoissonSpan(t *testing.T) {
	for _, mean := range []float64{0.3, 5, 69, 69.2, 100, 1000, 10_000, 65_536} {
		lo, hi := poissonSpan(mean)
		left := 0.0
		for k := 0; k < lo; k++ {
			left += poissonTerm(k, mean)
		}
		if left >= 1e-15 || (mean <= 69 && lo != 0) || (mean >= 100 && lo == 0) {
			t.Errorf("mean %g: span from %d leaves out %g, want below 1e-15 (and from 0 for a mean up to 69, past it above)", mean, lo, left)
		}
		if float64(hi) <= mean || poissonTerm(hi, mean) >= 1e-15 || (float64(hi-1) > mean && poissonTerm(hi-1, mean) < 1e-15) {
			t.Errorf("mean %g: span ends at %d, want the first term past the mean below 1e-15", mean, hi)
		}
	}
}

// bruteSteady is steadyState's iteration without its saturation test and
// its evaluation budget: whether it settles, and whether it runs past
// the limit, as steadyState iterated before them.
func bruteSteady(a arrivals, step stepTime) (settled, pastLimit bool, st steady) {
	var tm, r, ttft float64
	n := -1
	for i := 1; i <= maxIterations; i++ {
		next := int(math.Ceil(a.rate * (ttft + float64(a.output)*tm)))
		if next > a.limit || a.rate*r > float64(a.limit) {
			return false, true, st
		}
		rs, ok := a.expect(step, next, a.rate*r)
		if !ok {
			return false, true, st // no budget left beside the decode tokens
		}
		f := a.meanFirst(step, next, rs, rs.time/rs.steps)
		done := next == n && near(rs.time/rs.steps, tm) && near(rs.time, r) && near(f, ttft)
		tm, r, n, ttft = rs.time/rs.steps, rs.time, next, f
		if done {
			return true, false, steady{mean: a.rate * (ttft + float64(a.output)*tm), step: tm, round: r, ttft: ttft, iterations: i}
		}
	}
	return false, false, st
}

// TestSaturatesAsIterated holds steadyState's saturation test to the
// iteration without it (bruteSteady) on a linear toy step (10 ms, 0.1 ms
// a decoding sequence, 10 µs a prompt token) whose 1000-token prompts go
// in chunks of what a budget of 400 leaves, over rates from 1 to 60/s,
// on one scheduler and on two DP ranks: it refuses a rate as saturated
// exactly when that iteration runs past the limit, and otherwise settles
// where it does. The test itself must refuse some rates early, before
// the iteration would, or it checks nothing.
func TestSaturatesAsIterated(t *testing.T) {
	step := linearStep(0.010, 0.0001, 0.00001)
	early, settles := 0, 0
	for _, ranks := range []int{1, 2} {
		for rate := 1.0; rate <= 60; rate++ {
			a := arrivals{rate: rate, prompt: 1000, output: 200, budget: 400, ranks: ranks, limit: 100}
			settled, past, want := bruteSteady(a, step)
			st, ok := a.steadyState(step)
			switch {
			case ok != settled || (!ok && (st.why == saturated) != past):
				t.Errorf("%d ranks, %g/s: steady %v (why %d) after %d iterations; the iteration without the test settles %v, runs past the limit %v",
					ranks, rate, ok, st.why, st.iterations, settled, past)
			case ok && (st.mean != want.mean || st.step != want.step || st.round != want.round || st.ttft != want.ttft || st.iterations != want.iterations):
				t.Errorf("%d ranks, %g/s: steady state %+v, the iteration without the test %+v", ranks, rate, st, want)
			case !ok && a.saturates(st.step, int(math.Ceil(st.mean))):
				early++
			case ok:
				settles++
			}
		}
	}
	if early == 0 || settles == 0 {
		t.Errorf("%d rates refused by the saturation test, %d settled: the test needs both", early, settles)
	}
}

// TestSteadyStateBounded: the two rates of the code review that held
// the planner for tens of seconds, on llama3-8b, are refused within
// maxWork, the step evaluations weighted by their sequences, counted as
// the step function is called: 70000/s of 1+1-token requests on TP 8 (32 s before), and 20/s
// of 6000+500 tokens with a 512-token budget on the layouts it
// saturates (TP 8, TP 4 × DP 2 and TP 2 × DP 4 on tpu7x-8; 41 s).
func TestSteadyStateBounded(t *testing.T) {
	m, ok := model.Lookup("llama3-8b")
	if !ok {
		t.Fatal("no llama3-8b in the catalog")
	}
	for _, c := range []struct {
		maxLen, prompt, output, budget int
		rate                           float64
		tp, dp                         int
	}{
		{2, 1, 1, 1 << 21, 70000, 8, 1},
		{8192, 6000, 500, 512, 20, 8, 1},
		{8192, 6000, 500, 512, 20, 4, 2},
		{8192, 6000, 500, 512, 20, 2, 4},
	} {
		r := request(t)
		r.Model, r.MaxModelLen, r.PromptLen, r.OutputLen, r.MaxNumBatchedTokens, r.RequestRate = m, c.maxLen, c.prompt, c.output, c.budget, c.rate
		r, err := NewRequest(r)
		if err != nil {
			t.Fatal(err)
		}
		r.Concurrency = c.dp
		l := Estimate(r, c.tp, c.dp)
		srv, cost := replica(r, l, VLLM, ceilDiv(l.Memory.HeldSeqs, l.AttentionDP), StepOverhead(VLLM)) // each scheduler's share
		a := arrivals{rate: r.RequestRate / float64(c.dp), prompt: r.PromptLen, output: r.OutputLen, budget: r.MaxNumBatchedTokens,
			ranks: max(srv.Ranks, 1), limit: min(l.Memory.HeldSeqs, MaxConcurrency/c.dp), async: srv.AsyncScheduling}
		inner, evals, done := mixedStep(srv, cost, r.PromptLen+r.OutputLen/2), 0, 0
		st, ok := a.steadyState(func(d int, p []work, rt, rp int) float64 {
			evals, done = evals+1, done+1+d+len(p)
			return inner(d, p, rt, rp)
		})
		if ok || st.why == 0 || done > maxWork {
			t.Errorf("%g/s of %d+%d tokens, TP %d × DP %d: steady %v (why %d) after %d step evaluations, work %d, want refused within %d",
				c.rate, c.prompt, c.output, c.tp, c.dp, ok, st.why, evals, done, maxWork)
		}
		t.Logf("%g/s of %d+%d tokens, TP %d × DP %d: refused (why %d) after %d iterations, %d step evaluations, work %d", c.rate, c.prompt, c.output, c.tp, c.dp, st.why, st.iterations, evals, done)
	}
}

// TestRefusalNamesWhy: the refusal of 70000/s of 1+1-token requests on
// TP 8 (llama3-8b), whose steady state is not found within maxWork,
// says that it did not settle, not that the rate saturates the slice;
// 40/s of 6000+500 tokens with a 512-token budget saturates every
// layout of tpu7x-8 by the budget alone, and says so.
func TestRefusalNamesWhy(t *testing.T) {
	m, ok := model.Lookup("llama3-8b")
	if !ok {
		t.Fatal("no llama3-8b in the catalog")
	}
	for _, c := range []struct {
		maxLen, prompt, output, budget, tp, dp int
		rate                                   float64
		want, not                              string
	}{
		{2, 1, 1, 1 << 21, 8, 1, 70000, "did not settle", "saturate tpu7x-8"},
		{8192, 6000, 500, 512, 0, 0, 40, "saturate tpu7x-8", "did not settle"},
	} {
		r := request(t)
		r.Model, r.MaxModelLen, r.PromptLen, r.OutputLen, r.MaxNumBatchedTokens, r.RequestRate = m, c.maxLen, c.prompt, c.output, c.budget, c.rate
		r.TP, r.DP = c.tp, c.dp
		r, err := NewRequest(r)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Search(r)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), c.not) {
			t.Errorf("%g/s of %d+%d tokens: %v, want a refusal that says %q, not %q", c.rate, c.prompt, c.output, err, c.want, c.not)
		}
	}
}
