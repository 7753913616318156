package inference

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"shardlab/model"
)

// TestPoissonQuantile holds the Poisson CDF and its quantile to values
// derived by hand (means 1 and 2) and to mpmath 1.3.0 at 50 digits, the
// CDF as the regularized upper incomplete gamma function,
// P(N ≤ k) = gammainc(k+1, mean, inf, regularized=True), a formula the
// code does not use. Each row: the 0.99 quantile k, P(N ≤ k−1) < 0.99
// and P(N ≤ k) ≥ 0.99. The mean 20000 is one whose e^−mean underflows a
// float64 on its own.
func TestPoissonQuantile(t *testing.T) {
	for _, c := range []struct {
		mean       float64
		k          int
		below, atK float64
		source     string
		tol        float64 // absolute
	}{
		// e^−1·(1 + 1 + 1/2 + 1/6) = 0.98101, + e^−1/24 = 0.99634
		{1, 4, 0.981011843123846, 0.996340153172656, "by hand", 1e-12},
		// e^−2·(1 + 2 + 2 + 4/3 + 2/3 + 4/15) = 0.98344, + e^−2·4/45 = 0.99547
		{2, 6, 0.983436391519386, 0.995466194473751, "by hand", 1e-12},
		{29.3, 43, 0.989613901982695, 0.99332354983105, "mpmath", 1e-12},
		{125, 152, 0.989487949790385, 0.991605324849508, "mpmath", 1e-11},
		{1000, 1074, 0.989328135036035, 0.990168693070978, "mpmath", 1e-10},
		{20000, 20330, 0.989957015827892, 0.990143620606826, "mpmath", 1e-8},
	} {
		if got := poissonQuantile(c.mean, 0.99); got != c.k {
			t.Errorf("poissonQuantile(%g, 0.99) = %d, want %d (%s)", c.mean, got, c.k, c.source)
		}
		if got := poissonCDF(c.k-1, c.mean); math.Abs(got-c.below) > c.tol {
			t.Errorf("poissonCDF(%d, %g) = %.15g, want %.15g (%s)", c.k-1, c.mean, got, c.below, c.source)
		}
		if got := poissonCDF(c.k, c.mean); math.Abs(got-c.atK) > c.tol {
			t.Errorf("poissonCDF(%d, %g) = %.15g, want %.15g (%s)", c.k, c.mean, got, c.atK, c.source)
		}
	}
	if got := poissonQuantile(0, 0.99); got != 0 {
		t.Errorf("poissonQuantile(0, 0.99) = %d, want 0 (no arrivals)", got)
	}
	if got := poissonCDF(-1, 3); got != 0 {
		t.Errorf("poissonCDF(-1, 3) = %g, want 0", got)
	}
}

// TestAtRateCap: at 2 requests/s of 1024+1024 tokens, Llama 3 70B on
// tpu7x-8 at TP 8 holds about 30 sequences on average (Little's law);
// max_num_seqs is the cap that admits 99 % of Poisson arrivals at once,
// well above that mean, with the arrivals that find it full the
// Poisson tail at the cap, and the ITL is the one at the cap's batch.
func TestAtRateCap(t *testing.T) {
	r := request(t)
	r.RequestRate = 2
	r, err := NewRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	l := AtRate(r, 8, 1)
	c, mean := l.SeqsEach, l.MeanSeqs
	if !l.Fits || l.ShortOfCap {
		t.Fatalf("AtRate(2/s) fits %v, short of its cap %v; want it to fit its cap (225 sequences' pages)", l.Fits, l.ShortOfCap)
	}
	if mean < 10 || mean > 40 || float64(l.Concurrency) < mean {
		t.Errorf("AtRate(2/s): mean %.2f sequences, concurrency %d; want about 30, the concurrency its ceiling", mean, l.Concurrency)
	}
	// the cap: the least c with P(N ≤ c−1) ≥ 0.99 for N Poisson(mean)
	if poissonCDF(c-1, mean) < AdmitQuantile || poissonCDF(c-2, mean) >= AdmitQuantile {
		t.Errorf("AtRate(2/s): max_num_seqs %d, want the least c with P(N ≤ c−1) ≥ %g for N Poisson(%.2f): P(N ≤ %d) = %.4f, P(N ≤ %d) = %.4f",
			c, AdmitQuantile, mean, c-1, poissonCDF(c-1, mean), c-2, poissonCDF(c-2, mean))
	}
	if c <= l.Concurrency {
		t.Errorf("AtRate(2/s): max_num_seqs %d, want above the mean's %d", c, l.Concurrency)
	}
	if want := 1 - poissonCDF(c-1, mean); l.FullOnArrival != want || want > 1-AdmitQuantile {
		t.Errorf("AtRate(2/s): full on arrival %g, want P(N ≥ %d) = %g, at most %g", l.FullOnArrival, c, want, 1-AdmitQuantile)
	}
	q := r
	q.Concurrency = c
	if at := Estimate(q, 8, 1); l.ITL != at.ITL || l.Memory != at.Memory {
		t.Errorf("AtRate(2/s): ITL %v, memory %+v; want Estimate's at the cap of %d: %v, %+v", l.ITL, l.Memory, c, at.ITL, at.Memory)
	}
}

// TestSimulateAtRateCap serves the plan for 2 requests/s on tpu7x-8 in
// the simulator (vLLM's scheduler, Poisson arrivals) at the max_num_seqs
// the plan exports, with a 1 s TTFT SLO that the plan's 44 ms TTFT
// meets. At the cap the server keeps up: the simulated TTFT stays within
// the SLO, and the output tokens/s are the offered 2048 but for the last
// requests' drain (about 15 s in the server of some 500 s). A cap at the
// mean (30) saturates it: its TTFT grows with the queue, 31.7 s on
// average at 1000 requests, and it serves some 1807 tokens/s.
func TestSimulateAtRateCap(t *testing.T) {
	r := request(t)
	r.RequestRate, r.TTFTSLO = 2, time.Second
	r, p := searched(t, r)
	if !p.Best.MeetsSLO() {
		t.Fatalf("plan at 2/s misses %v", p.Best.Misses)
	}
	load := Load{Mix: FixedMix(r.PromptLen, r.OutputLen), RequestRate: r.RequestRate, Requests: 1000}
	sim, err := Simulate(r, p.Best, SimOptions{Engine: VLLM, Load: load}, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if sim.TTFT.Mean > r.TTFTSLO || sim.TTFT.P90 > r.TTFTSLO {
		t.Errorf("simulated TTFT mean %v, p90 %v at max_num_seqs %d (mean %.1f), want within the %v SLO (planned %v)",
			sim.TTFT.Mean, sim.TTFT.P90, p.Best.SeqsEach, p.Best.MeanSeqs, r.TTFTSLO, p.Best.TTFT)
	}
	offered := r.RequestRate * float64(r.OutputLen)
	if sim.TokensPerSecond < 0.95*offered {
		t.Errorf("simulated %.0f output tokens/s at max_num_seqs %d, want the offered %.0f within 5 %% (the drain is about 3 %%)", sim.TokensPerSecond, p.Best.SeqsEach, offered)
	}
}

// TestRateChoosesByLoadLatency: under a request rate the layouts that
// keep up all serve the offered tokens/s, and the throughput objective
// breaks the tie by the ITL a sequence sees at the load (Request.Seen:
// the mean step with the arriving prompts' chunks), not the idle
// server's decode-only step. For Llama 3 8B on v6e-8 at 20 requests/s of
// 2000+300 tokens, TP 8 has the least decode-only step but the longest
// mean one (every prompt's chunks run on the one replica); the plan
// takes the least mean step, and the simulator (a second, step-by-step
// implementation) agrees: its mean ITL and TTFT are below TP 8's. The
// layouts table prints the latencies at the load.
func TestRateChoosesByLoadLatency(t *testing.T) {
	r := request(t)
	r.Model, _ = model.Lookup("llama3-8b")
	r.Slice, r.RequestRate, r.PromptLen, r.OutputLen, r.MemoryUtilization = slice(t, "v6e-8"), 20, 2000, 300, 0.92
	r, p := searched(t, r)
	idle := p.Best
	for _, l := range p.Layouts {
		if _, i := r.Seen(l); l.Fits && !l.ShortOfCap && l.PerChip == p.Best.PerChip {
			if _, bi := r.Seen(p.Best); i < bi {
				t.Errorf("chose TP %d × DP %d (mean step %v), want TP %d × DP %d (mean step %v)", p.Best.TP, p.Best.DP, bi, l.TP, l.DP, i)
			}
			if l.ITL < idle.ITL {
				idle = l
			}
		}
	}
	if idle.TP == p.Best.TP {
		t.Fatalf("the least idle ITL is the chosen layout's (TP %d): the case no longer tells the two apart", idle.TP)
	}
	load := Load{Mix: FixedMix(r.PromptLen, r.OutputLen), RequestRate: r.RequestRate, Requests: 400}
	sim := func(l Layout) SimResult {
		s, err := Simulate(r, l, SimOptions{Engine: VLLM, Load: load}, rand.New(rand.NewPCG(1, 0)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if b, i := sim(p.Best), sim(idle); b.ITL.Mean >= i.ITL.Mean || b.TTFT.Mean >= i.TTFT.Mean {
		t.Errorf("simulated: chosen TP %d mean ITL %v, TTFT %v; the idle choice TP %d %v, %v; want the chosen lower",
			p.Best.TP, b.ITL.Mean, b.TTFT.Mean, idle.TP, i.ITL.Mean, i.TTFT.Mean)
	}
	var out strings.Builder
	if err := p.writeLayouts(&out); err != nil {
		t.Fatal(err)
	}
	if ttft, _ := r.Seen(p.Best); !strings.Contains(out.String(), "TTFT at load") || !strings.Contains(out.String(), secs(ttft).String()) || ttft != p.Best.LoadTTFT.Mean {
		t.Errorf("layouts table at a rate, want the TTFT at the load (%v) under \"TTFT at load\":\n%s", secs(p.Best.LoadTTFT.Mean), out.String())
	}
}

// TestAtRateCapSchedulers (review182 #2): under attention data
// parallelism max_num_seqs is each of a replica's schedulers' [ti-dps],
// so the rate's cap is whole schedulers' worth: the least multiple of
// the schedulers at or above the 99 % cap, which the serve line gives
// as SchedulerSeqs and the reason names as such, with the arrivals that
// find it full the Poisson tail at that replica's cap.
func TestAtRateCapSchedulers(t *testing.T) {
	o := DefaultOptions()
	o.Model, o.TPU, o.RequestRate = "deepseek3-671b", "tpu7x-16", 2
	q, err := ParseOptions(o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Search(q.Request)
	if err != nil {
		t.Fatal(err)
	}
	l := p.Best
	a, want := l.AttentionDP, poissonQuantile(l.MeanSeqs, AdmitQuantile)+1
	if a < 2 || !l.Fits || l.ShortOfCap {
		t.Fatalf("deepseek3-671b on tpu7x-16 at 2/s: attention DP %d, fits %v, short of its cap %v; want DP ranks and the cap held", a, l.Fits, l.ShortOfCap)
	}
	if l.SeqsEach%a != 0 || l.SeqsEach < want || l.SeqsEach-a >= want || l.SchedulerSeqs()*a != l.SeqsEach {
		t.Errorf("at 2/s on %d schedulers: %d sequences a replica (%d a scheduler), want the least multiple of %d at or above the 99%% cap %d", a, l.SeqsEach, l.SchedulerSeqs(), a, want)
	}
	if full := 1 - poissonCDF(l.SeqsEach-1, l.MeanSeqs); l.FullOnArrival != full {
		t.Errorf("at 2/s: full on arrival %g, want P(N ≥ %d) = %g", l.FullOnArrival, l.SeqsEach, full)
	}
	reason := fmt.Sprintf("max_num_seqs %d on each of %d schedulers (%d a replica", l.SchedulerSeqs(), a, l.SeqsEach)
	if !slices.ContainsFunc(p.Reasons, func(s string) bool { return strings.HasPrefix(s, reason) }) {
		t.Errorf("at 2/s: no reason beginning %q in %q", reason, p.Reasons)
	}
}
