package inference

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// linearStep is a toy step: a fixed time a, b a decoding sequence and c
// a prompt token, in seconds, with no padding.
func linearStep(a, b, c float64) stepTime {
	return func(decode int, prefill []work, _, _ int) float64 {
		tokens := 0
		for _, w := range prefill {
			tokens += w.n
		}
		return a + b*float64(decode) + c*float64(tokens)
	}
}

// TestSteadyStateLinear holds steadyState to a fixed point worked by
// hand on a linear toy step, 10 ms + 0.1 ms a decoding sequence + 10 µs
// a prompt token, 100+100-token requests at 5/s, a 50 ms TTFT, and a
// budget no round fills (every round one step, so R = t). Then
// E[T_K] = a + b·n + c·P·λ·t, and t = (a + b·n)/(1 − c·P·λ) with
// n = ⌈λ·(TTFT + L·t)⌉: n = 6 gives t = 10.6 ms / 0.995 = 10.6533 ms and
// ⌈5·(0.05 + 100·0.0106533)⌉ = ⌈5.5766⌉ = 6, and n = 5 gives
// t = 10.5528 ms and ⌈5.526⌉ = 6 ≠ 5: the least fixed point is n = 6.
//
// Without the ceiling the fixed point exists while λ·(c·P + b·L) < 1,
// the replica's time for one request's tokens times the rate, that is
// while its token throughput keeps up: λ < 1/(0.001 + 0.01) = 90.9/s.
// At 85/s it settles, and its throughput (n + λ·t·P)/t exceeds the
// offered λ·(P + L); at 95/s the sequences grow past any limit.
func TestSteadyStateLinear(t *testing.T) {
	a := arrivals{rate: 5, ttft: 0.05, prompt: 100, output: 100, budget: 1 << 20, ranks: 1, limit: 10_000}
	step := linearStep(0.010, 0.0001, 0.00001)
	st, ok := a.steadyState(step)
	want := 0.0106 / 0.995
	if !ok || math.Abs(st.step-want) > 1e-12 || math.Abs(st.mean-5*(0.05+100*want)) > 1e-9 || st.round != st.step {
		t.Errorf("steady state at 5/s = %+v (ok %v), want step %.9g s, mean %.6g, round = step", st, ok, want, 5*(0.05+100*want))
	}
	for _, c := range []struct {
		rate  float64
		keeps bool
	}{{85, true}, {95, false}} {
		a.rate = c.rate
		st, ok := a.steadyState(step)
		if ok != c.keeps {
			t.Errorf("%g/s: steady %v after %d iterations (%+v), want %v (saturation at 90.9/s)", c.rate, ok, st.iterations, st, c.keeps)
			continue
		}
		if ok {
			n := math.Ceil(st.mean)
			if thr := (n + c.rate*st.step*100) / st.step; thr <= c.rate*200 {
				t.Errorf("%g/s: %.0f tokens/s at the fixed point, want above the offered %g", c.rate, thr, c.rate*200)
			}
		}
	}
}

// TestSteadyStateChunked holds steadyState, on rounds of several steps,
// to a second solution. A prompt of 3 budgets' tokens (300 tokens, 100
// a step left by the decode tokens) takes 3 steps, so S_K = 3K (S_0 = 1)
// and, with the linear step, T_K = S_K·(a + b·n) + c·K·P. For each n the
// round R solves R = E[T_K] with K Poisson of mean λ·R, E[S_K] = e^(−λR)
// + 3λR: R = (a + b·n)·e^(−λR) + λR·(3(a + b·n) + c·P), found here by
// bisection; the step is t = R/E[S_K], and n is the fixed point when
// ⌈λ·(TTFT + L·t)⌉ = n (the least such n).
func TestSteadyStateChunked(t *testing.T) {
	const a0, b, c, P, L, rate, ttft = 0.010, 0.0001, 0.00001, 300, 200, 4.0, 0.05
	a := arrivals{rate: rate, ttft: ttft, prompt: P, output: L, budget: 120, ranks: 1, limit: 1000}
	for n := 1; n < 20; n++ {
		a.budget = 100 + n // the decode tokens leave 100 a step
		d := a0 + b*float64(n)
		f := func(r float64) float64 { return d*math.Exp(-rate*r) + rate*r*(3*d+c*P) - r }
		lo, hi := 0.0, 1.0 // f(lo) > 0 > f(hi)
		for range 200 {
			if mid := (lo + hi) / 2; f(mid) > 0 {
				lo = mid
			} else {
				hi = mid
			}
		}
		r := (lo + hi) / 2
		step := r / (math.Exp(-rate*r) + 3*rate*r)
		if int(math.Ceil(rate*(ttft+L*step))) != n {
			continue
		}
		st, ok := a.steadyState(linearStep(a0, b, c))
		if !ok || math.Abs(st.step-step) > 1e-9*step || math.Abs(st.round-r) > 1e-9*r {
			t.Errorf("n = %d: steady state %+v (ok %v), want step %.9g s, round %.9g s", n, st, ok, step, r)
		}
		return
	}
	t.Fatal("no n below 20 is a fixed point of the chunked toy; the test needs one")
}

// TestSteadyStateRanks: on a replica of 2 DP ranks, 3 prompts of 100
// tokens with 50 tokens a step left deal 2 prompts to rank 0 (4 steps)
// and 1 to rank 1 (2 steps): a round of 4 steps whose busiest rank
// computes 50 tokens of 1 prompt in each, the first two steps carrying
// both ranks' chunks. The prompts come in groups of one a rank: with a
// budget that holds them all and a step of 1 s + 1 s a prompt of the
// busiest rank, a round of k groups takes 1 + k seconds in one step, and
// over k Poisson with mean μ/2, E[T] = 1 + μ/2 (1.3 s at μ = 0.6).
func TestSteadyStateRanks(t *testing.T) {
	big := arrivals{prompt: 100, ranks: 2, budget: 1 << 20}
	perPrompt := func(_ int, _ []work, _, rankPrompts int) float64 { return 1 + float64(rankPrompts) }
	if tm, steps, ok := big.expect(perPrompt, 10, 0.6); !ok || math.Abs(tm-1.3) > 1e-12 || steps != 1 {
		t.Errorf("2 ranks, mean 0.6 prompts a round: E[T] %g s, E[S] %g (ok %v), want 1.3 s, 1", tm, steps, ok)
	}
	a := arrivals{prompt: 100, ranks: 2}
	var got [][3]int
	step := func(decode int, prefill []work, rankTokens, rankPrompts int) float64 {
		tokens := 0
		for _, w := range prefill {
			tokens += w.n
		}
		got = append(got, [3]int{tokens, rankTokens, rankPrompts})
		return 1
	}
	if tm, steps := a.round(step, 10, 3, 50); tm != 4 || steps != 4 {
		t.Errorf("round of 3 prompts on 2 ranks: %g s in %d steps, want 4 in 4", tm, steps)
	}
	want := [][3]int{{100, 50, 1}, {100, 50, 1}, {50, 50, 1}, {50, 50, 1}}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("steps (prefill tokens, busiest rank's tokens, prompts) = %v, want %v", got, want)
		}
	}
}

// TestSimulateAtRateMixed serves the plans for 4 and 8 requests/s of
// 1024+1024 tokens (Llama 3 70B, a 1 s TTFT SLO) in the simulator. Sized
// by the decode-only step, the plan for tpu7x-8 at 4/s (max_num_seqs 84)
// saturated: 12.6 s mean TTFT; at 8/s (207), 18.2 s (the CLI's 0.92 of
// HBM); tpu7x-16 at 8/s, TP 8 × DP 2 at 84 a replica, 5.9 s. Sized by the mixed
// step, each plan's simulated mean TTFT is within the SLO, and its mean
// step is the simulation's mean ITL within 5 % (at 4/s 23.3 ms planned,
// 23.1 ms simulated). With the fit rule at the requests' own lengths
// (fit.go: TP 4's pages hold 345 sequences of 1024+1024 tokens, 86 of
// max_model_len 8192), TP 4 × DP 2 serves 8/s on tpu7x-8 too (simulated
// TTFT mean 246 ms, no preemption); 10/s saturates it and is refused.
// On that layout the planned mean step, 53.1 ms, is 15 % above the
// simulated mean ITL, 46.2 ms, a gap the 5 % check (established on TP 8)
// does not cover: there the check is only that the plan errs high, so
// that it does not size the server below its load.
func TestSimulateAtRateMixed(t *testing.T) {
	for _, c := range []struct {
		tpu   string
		rate  float64
		fits  bool
		close bool // the planned mean step within 5 % of the simulated ITL, else not below it
	}{{"tpu7x-8", 4, true, true}, {"tpu7x-8", 8, true, false}, {"tpu7x-8", 10, false, false}, {"tpu7x-16", 8, true, true}} {
		r := request(t)
		r.Slice, r.RequestRate, r.TTFTSLO = slice(t, c.tpu), c.rate, time.Second
		r, err := NewRequest(r)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Search(r)
		if !c.fits {
			if !errors.Is(err, ErrNoFit) {
				t.Errorf("%s at %g/s: planned max_num_seqs %d (err %v), want refused as saturated", c.tpu, c.rate, p.Best.SeqsEach, err)
			}
			continue
		}
		if err != nil || !p.Best.MeetsSLO() {
			t.Fatalf("%s at %g/s: %v, misses %v", c.tpu, c.rate, err, p.Best.Misses)
		}
		load := Load{Mix: FixedMix(r.PromptLen, r.OutputLen), RequestRate: r.RequestRate, Requests: 1000}
		sim, err := Simulate(r, p.Best, SimOptions{Engine: VLLM, Load: load}, rand.New(rand.NewPCG(1, 0)))
		if err != nil {
			t.Fatal(err)
		}
		if sim.TTFT.Mean > r.TTFTSLO {
			t.Errorf("%s at %g/s: simulated TTFT mean %v at max_num_seqs %d (mean %.1f), want within the %v SLO",
				c.tpu, c.rate, sim.TTFT.Mean, p.Best.SeqsEach, p.Best.MeanSeqs, r.TTFTSLO)
		}
		if d := p.Best.MeanStep.Seconds()/sim.ITL.Mean.Seconds() - 1; !c.close && d < 0 {
			t.Errorf("%s at %g/s: planned mean step %v below the simulated mean ITL %v", c.tpu, c.rate, p.Best.MeanStep, sim.ITL.Mean)
		} else if d = math.Abs(d); c.close && d > 0.05 {
			t.Errorf("%s at %g/s: planned mean step %v, simulated mean ITL %v (%.1f%% apart), want within 5%%",
				c.tpu, c.rate, p.Best.MeanStep, sim.ITL.Mean, 100*d)
		}
	}
}
