package inference

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"shardlab/hw"
	"shardlab/model"
)

// transcript runs s to the end and writes each step: its start, the
// tokens each sequence ran (id:tokens), the sequences preempted and
// finished.
func transcript(t *testing.T, s *Sim) []string {
	t.Helper()
	var out []string
	for i := 0; ; i++ {
		more := s.Step()
		st := s.Last()
		line := fmt.Sprintf("t=%v", st.Start)
		for _, sc := range st.Scheduled {
			line += fmt.Sprintf(" %d:%d", sc.ID, sc.Tokens)
		}
		if len(st.Preempted) > 0 {
			line += fmt.Sprintf(" preempted %v", st.Preempted)
		}
		if len(st.Finished) > 0 {
			line += fmt.Sprintf(" finished %v", st.Finished)
		}
		out = append(out, line)
		if !more {
			return out
		}
		if i > 1000 {
			t.Fatal("the simulation does not end")
		}
	}
}

// perStep is a step time of 1 ms whatever the batch, so that the clock
// counts steps.
func perStep(Batch) time.Duration { return time.Millisecond }

func diffLines(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("transcript:\ngot:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSimHandSchedule holds vLLM's scheduler to a schedule worked by
// hand: 3 requests of 6 prompt + 3 output tokens from 3 clients, a token
// budget of 8, pages of 4 tokens (plenty of them), 1 ms a step.
//
//	t=0: 0 and 1 wait; 0 gets 6 (2 pages), 1 the budget's last 2 (1 page):
//	     0 has computed its prompt and emits token 1.
//	t=1: running first: 0 decodes 1; 1 gets the rest of its prompt, 4
//	     (a 2nd page); 2 is admitted with the 3 tokens left: 1 emits token 1.
//	t=2: 0 decodes (token 3, done); 1 decodes; 2 gets its last 3 (2nd page),
//	     emits token 1.
//	t=3: 1 decodes (token 3, done); 2 decodes.
//	t=4: 2 decodes (token 3, done).
//
// 9 output tokens in 5 ms; TTFT 1, 2 and 3 ms; every ITL 1 ms.
func TestSimHandSchedule(t *testing.T) {
	srv := Server{Engine: VLLM, MaxNumSeqs: 4, MaxNumBatchedTokens: 8, BlockSize: 4, Pages: 100, MaxModelLen: 64}
	load := Load{Mix: FixedMix(6, 3), Concurrency: 3, Requests: 3}
	s, err := NewSim(srv, load, perStep, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	got := transcript(t, s)
	want := []string{
		"t=0s 0:6 1:2",
		"t=1ms 0:1 1:4 2:3",
		"t=2ms 0:1 1:1 2:3 finished [0]",
		"t=3ms 1:1 2:1 finished [1]",
		"t=4ms 2:1 finished [2]",
	}
	diffLines(t, got, want)
	res := s.Result()
	ms := time.Millisecond
	if res.OutputTokens != 9 || res.Duration != 5*ms || res.TokensPerSecond != 1800 || res.Preemptions != 0 {
		t.Errorf("result %d tokens in %v (%v tokens/s), %d preemptions, want 9 in 5ms (1800), 0", res.OutputTokens, res.Duration, res.TokensPerSecond, res.Preemptions)
	}
	if want := (Percentiles{Mean: 2 * ms, P50: 2 * ms, P90: 3 * ms, P99: 3 * ms}); res.TTFT != want {
		t.Errorf("TTFT %+v, want %+v", res.TTFT, want)
	}
	if want := (Percentiles{Mean: ms, P50: ms, P90: ms, P99: ms}); res.ITL != want {
		t.Errorf("ITL %+v, want %+v", res.ITL, want)
	}
}

// TestSimHandBatch: the first step's batch of the hand schedule, padded
// as tpu-inference pads it: 8 tokens to the 16 bucket, 2 sequences to 8;
// the attention reads 6 + 2 tokens of context and computes
// 6·(0 + 7/2) + 2·(0 + 3/2) = 24 (query, key) pairs.
func TestSimHandBatch(t *testing.T) {
	srv := Server{Engine: VLLM, MaxNumSeqs: 4, MaxNumBatchedTokens: 8, BlockSize: 4, Pages: 100, MaxModelLen: 64}
	var first *Batch
	cost := func(b Batch) time.Duration {
		if first == nil {
			first = &b
		}
		return time.Millisecond
	}
	s, err := NewSim(srv, Load{Mix: FixedMix(6, 3), Concurrency: 3, Requests: 3}, cost, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	s.Step()
	want := Batch{Seqs: 2, PaddedSeqs: 8, Tokens: 8, PaddedTokens: 16, ContextTokens: 8, AttendedPairs: 24}
	if first == nil || *first != want {
		t.Errorf("first batch %+v, want %+v", first, want)
	}
}

// TestSimHandBatchKernel: the same first step with the attention
// kernel's blocks (query blocks of min(4, 16/2) = 4 tokens, keys by 4):
// the prompt chunk 0 (6 tokens) is two query blocks attending 4 and 6
// keys, computed as 4·4 + 4·8 = 48 pairs and read as 4 + 6 = 10 KV
// tokens; chunk 1 (2 tokens) one block attending 2 keys, 4·4 = 16
// pairs and 2 read. Their exact pairs (24) and context (8) are the
// kernel's share of the batch's.
func TestSimHandBatchKernel(t *testing.T) {
	srv := Server{Engine: VLLM, MaxNumSeqs: 4, MaxNumBatchedTokens: 8, BlockSize: 4, Pages: 100, MaxModelLen: 64, QueryBlock: 4, KeyBlock: 4}
	var first *Batch
	cost := func(b Batch) time.Duration {
		if first == nil {
			first = &b
		}
		return time.Millisecond
	}
	s, err := NewSim(srv, Load{Mix: FixedMix(6, 3), Concurrency: 3, Requests: 3}, cost, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	s.Step()
	want := Batch{Seqs: 2, PaddedSeqs: 8, Tokens: 8, PaddedTokens: 16, ContextTokens: 8, AttendedPairs: 24,
		PrefillPairs: 24, KernelPairs: 64, KernelKVTokens: 12, PrefillContext: 8}
	if first == nil || *first != want {
		t.Errorf("first batch %+v, want %+v", first, want)
	}
}

// TestSimPreemption: pages run out and vLLM preempts the last running
// request, which recomputes. 3 requests of 4 + 6 tokens from 3 clients,
// a budget of 8, 4 pages of 4 tokens, 1 ms a step.
//
//	t=0: 0 and 1 get their prompts (1 page each), emit token 1.
//	t=1: both decode, each takes a 2nd page (none left); 2 waits for one.
//	t=2..4: both decode within their 2 pages (tokens 3, 4, 5).
//	t=5: 0 needs a 3rd page for its 9th token: 1, the last running, is
//	     preempted (its 2 pages freed, back to the front of the queue);
//	     0 decodes token 6 and finishes; nothing is admitted this step.
//	t=6: 1 recomputes its 4 + 5 tokens: 8 in the budget (2 pages).
//	t=7: 1 computes its 9th and emits token 6 (done, 3 ms after token 5);
//	     2 gets its prompt.
//	t=8..12: 2 decodes tokens 2 to 6.
func TestSimPreemption(t *testing.T) {
	// max_model_len 16: the 4 pages hold one such sequence, vLLM's
	// start-up check, and two of these requests at their full 10 tokens
	// do not fit at once
	srv := Server{Engine: VLLM, MaxNumSeqs: 4, MaxNumBatchedTokens: 8, BlockSize: 4, Pages: 4, MaxModelLen: 16}
	s, err := NewSim(srv, Load{Mix: FixedMix(4, 6), Concurrency: 3, Requests: 3}, perStep, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	got := transcript(t, s)
	want := []string{
		"t=0s 0:4 1:4",
		"t=1ms 0:1 1:1",
		"t=2ms 0:1 1:1",
		"t=3ms 0:1 1:1",
		"t=4ms 0:1 1:1",
		"t=5ms 0:1 preempted [1] finished [0]",
		"t=6ms 1:8",
		"t=7ms 1:1 2:4 finished [1]",
		"t=8ms 2:1",
		"t=9ms 2:1",
		"t=10ms 2:1",
		"t=11ms 2:1",
		"t=12ms 2:1 finished [2]",
	}
	diffLines(t, got, want)
	res := s.Result()
	if res.Preemptions != 1 || res.OutputTokens != 18 || res.ITL.P99 != 3*time.Millisecond {
		t.Errorf("%d preemptions, %d tokens, ITL p99 %v, want 1, 18, 3ms", res.Preemptions, res.OutputTokens, res.ITL.P99)
	}
}

// TestSimJetStream holds JetStream's schedule to one worked by hand: 2
// batch slots, 3 requests of 5 + 3 tokens from 2 clients, 1 ms a step.
//
//	t=0,1: prefill 0, then 1 (one prompt each, token 1); t=2: generate
//	       over both slots (token 2).
//	t=3:   generate (token 3): 0 and 1 finish; one client sends 2 (3
//	       requests in all).
//	t=4:   prefill 2; t=5, 6: generate over both slots, one of them empty;
//	       each attends its whole cache of 32 tokens.
func TestSimJetStream(t *testing.T) {
	srv := Server{Engine: JetStream, MaxNumSeqs: 2, MaxModelLen: 32}
	var batches []Batch
	cost := func(b Batch) time.Duration { batches = append(batches, b); return time.Millisecond }
	s, err := NewSim(srv, Load{Mix: FixedMix(5, 3), Concurrency: 2, Requests: 3}, cost, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	got := transcript(t, s)
	want := []string{
		"t=0s 0:5 1:5 0:1 1:1",
		"t=3ms 0:1 1:1 finished [0 1]",
		"t=4ms 2:5 2:1",
		"t=6ms 2:1 finished [2]",
	}
	diffLines(t, got, want)
	prefill := Batch{Prefill: true, Seqs: 1, PaddedSeqs: 1, Tokens: 5, PaddedTokens: 16, ContextTokens: 5, AttendedPairs: 15}
	generate := Batch{Seqs: 2, PaddedSeqs: 2, Tokens: 2, PaddedTokens: 2, ContextTokens: 64, AttendedPairs: 64, DecodeKeys: 64}
	wantB := []Batch{prefill, prefill, generate, generate, prefill, generate, generate}
	if !reflect.DeepEqual(batches, wantB) {
		t.Errorf("batches\n%+v, want\n%+v", batches, wantB)
	}
	if res := s.Result(); res.OutputTokens != 9 || res.Duration != 7*time.Millisecond {
		t.Errorf("%d tokens in %v, want 9 in 7ms", res.OutputTokens, res.Duration)
	}
}

func servingRequest(t *testing.T, name, tpu string, conc int) Request {
	t.Helper()
	m, ok := model.Lookup(name)
	if !ok {
		t.Fatalf("no model %s", name)
	}
	s, err := hw.ParseAcceleratorType(tpu)
	if err != nil {
		t.Fatal(err)
	}
	r := DefaultRequest()
	r.Model, r.Slice, r.Concurrency, r.MaxModelLen, r.PromptLen, r.OutputLen = m, s, conc, 4096, 500, 500
	r, err = NewRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSimulateDeterministic: the same seed gives the same bytes, another
// seed other lengths and arrivals.
func TestSimulateDeterministic(t *testing.T) {
	r := servingRequest(t, "llama3-8b", "v6e-8", 32)
	l := Estimate(r, 1, 8)
	mix, err := ParseLengthMix("uniform:50-900")
	if err != nil {
		t.Fatal(err)
	}
	run := func(seed uint64) string {
		o := SimOptions{Engine: VLLM, Load: Load{Mix: mix, RequestRate: 40, Requests: 400}}
		res, err := Simulate(r, l, o, rand.New(rand.NewPCG(seed, 0)))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := res.WriteText(&b, "test"); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	a, b, c := run(7), run(7), run(8)
	if a != b {
		t.Errorf("seed 7 twice:\n%s\n%s", a, b)
	}
	if a == c {
		t.Errorf("seeds 7 and 8 give the same result:\n%s", a)
	}
}

// TestNewSimErrors: each invalid setting names its field.
func TestNewSimErrors(t *testing.T) {
	ok := Server{Engine: VLLM, MaxNumSeqs: 4, MaxNumBatchedTokens: 8, BlockSize: 4, Pages: 4, MaxModelLen: 16}
	load := Load{Mix: FixedMix(4, 6), Concurrency: 3, Requests: 3}
	tests := []struct {
		name  string
		srv   Server
		load  Load
		field string
	}{
		{"too few pages", Server{Engine: VLLM, MaxNumSeqs: 4, MaxNumBatchedTokens: 8, BlockSize: 4, Pages: 2, MaxModelLen: 64}, load, "pages"},
		// the pages hold the longest request (10 tokens) but not one of
		// max_model_len 64, which vLLM's start-up check asks (it was
		// accepted: the check read the longest request)
		{"pages under max_model_len", Server{Engine: VLLM, MaxNumSeqs: 4, MaxNumBatchedTokens: 8, BlockSize: 4, Pages: 4, MaxModelLen: 64}, load, "pages"},
		{"no mix", ok, Load{Concurrency: 3, Requests: 3}, "length_mix"},
		{"too long", ok, Load{Mix: FixedMix(12, 6), Concurrency: 3, Requests: 3}, "length_mix"},
		{"no requests", ok, Load{Mix: FixedMix(4, 6), Concurrency: 3}, "requests"},
		{"no clients", ok, Load{Mix: FixedMix(4, 6), Requests: 3}, "concurrency"},
		{"budget", Server{Engine: VLLM, MaxNumSeqs: 4, BlockSize: 4, Pages: 4, MaxModelLen: 64}, load, "max_num_batched_tokens"},
		{"engine", Server{Engine: 7, MaxNumSeqs: 4, MaxModelLen: 64}, load, "engine"},
		{"query block", Server{Engine: VLLM, MaxNumSeqs: 4, MaxNumBatchedTokens: 8, BlockSize: 4, Pages: 4, MaxModelLen: 16, QueryBlock: -1}, load, "query_block"},
		{"key block", Server{Engine: VLLM, MaxNumSeqs: 4, MaxNumBatchedTokens: 8, BlockSize: 4, Pages: 4, MaxModelLen: 16, QueryBlock: 4}, load, "key_block"},
	}
	for _, tt := range tests {
		_, err := NewSim(tt.srv, tt.load, perStep, rand.New(rand.NewPCG(1, 0)))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("%s: error %v, want one naming %s", tt.name, err, tt.field)
		}
	}
}

// BenchmarkSimulate simulates 10,000 requests of llama3-70b on v6e-8.
func BenchmarkSimulate(b *testing.B) {
	m, _ := model.Lookup("llama3-70b")
	s, _ := hw.ParseAcceleratorType("v6e-8")
	r := DefaultRequest()
	r.Model, r.Slice, r.MaxModelLen, r.Concurrency, r.PromptLen, r.OutputLen = m, s, 4096, 128, 1000, 300
	r, err := NewRequest(r)
	if err != nil {
		b.Fatal(err)
	}
	l := Estimate(r, 8, 1)
	mix, _ := ParseLengthMix("uniform:100-1500")
	for b.Loop() {
		res, err := Simulate(r, l, SimOptions{Load: Load{Mix: mix, Concurrency: 128, Requests: 10000}}, rand.New(rand.NewPCG(1, 0)))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Requests), "requests")
	}
	b.ReportMetric(10000*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}

// TestPercentiles checks the selection against a sort (the second
// implementation): nearest-rank percentiles of random latencies, many
// equal ones among them.
func TestPercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 0))
	for _, n := range []int{1, 2, 3, 10, 99, 100, 101, 1000, 4097} {
		v := make([]time.Duration, n)
		for i := range v {
			v[i] = time.Duration(rng.IntN(50))
		}
		sorted := slices.Clone(v)
		slices.Sort(sorted)
		at := func(p float64) time.Duration { return sorted[max(int(math.Ceil(p*float64(n)))-1, 0)] }
		got := percentiles(v)
		want := Percentiles{Mean: got.Mean, P50: at(0.5), P90: at(0.9), P99: at(0.99)}
		if got != want {
			t.Errorf("n %d: percentiles %+v, want %+v", n, got, want)
		}
	}
}

// TestDecodeKeyTime derives the MXU time of one decode key by hand. A
// device's MXUs take peak / (2·width) elements a second into the operand
// they hold: v6e 918e12 / 512 = 1.793e12, v5e 197e12 / 256 = 7.695e11.
// Llama 3 70B at TP 8 on v6e-8 under vLLM: 80 layers × 2 (K, V) × 1 KV
// head a device × 128 = 20480 elements, 11.42 ns; under JetStream
// (repeat_kv: 8 query heads a device) 163840. Llama 2 7B (MHA) at TP 8 on
// v5e-8: 32 × 2 × 4 heads × 128 = 32768 under either, 42.58 ns.
// DeepSeek-V3 (latent attention) at TP 16 on tpu7x-16, 2307e12 / 2 FLOP/s
// a device: 61 layers × (576 latent and rope elements of the scores + 512
// of the sum) = 66368 elements, every query head in one pass.
func TestDecodeKeyTime(t *testing.T) {
	for _, tt := range []struct {
		model, tpu string
		tp         int
		e          Engine
		elements   float64
		rate       float64
	}{
		{"llama3-70b", "v6e-8", 8, VLLM, 20480, 918e12 / 512},
		{"llama3-70b", "v6e-8", 8, JetStream, 163840, 918e12 / 512},
		{"llama2-7b", "v5litepod-8", 8, JetStream, 32768, 197e12 / 256},
		{"llama2-7b", "v5litepod-8", 8, VLLM, 32768, 197e12 / 256},
		{"deepseek3-671b", "tpu7x-16", 16, VLLM, 61 * (576 + 512), 2307e12 / 2 / 512},
	} {
		r := servingRequest(t, tt.model, tt.tpu, 8)
		got := newReplicaCost(r, tt.tp).decodeKeyTime(tt.e)
		if want := tt.elements / tt.rate; math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s on %s, %v: key time %.4g s, want %.4g (%g elements at %.4g a second)", tt.model, tt.tpu, tt.e, got, want, tt.elements, tt.rate)
		}
	}
}

// TestSimStepHand holds one decode step of Simulate's cost to a hand
// sum: Llama 2 7B, TP 8 on v5e-8, 4 sequences at 1000 tokens of context
// each, a fixed step time of 3 ms. The matmuls are bound by the weights
// (6.74e9 · 2 B / 8 per device at 819 GB/s); the attention reads 4000
// tokens × 32 layers × 2 × 4 heads × 128 × 2 B (320 µs) and passes 4000
// keys × 32768 elements through the MXUs at 197e12/256 a second (170 µs):
// vLLM overlaps the two, JetStream adds them; vLLM samples the 8 padded
// sequences' logits (32000 each, 18 bytes a logit); then the all-reduces
// of 16 padded tokens and the 3 ms.
func TestSimStepHand(t *testing.T) {
	r := servingRequest(t, "llama2-7b", "v5litepod-8", 4)
	rc := newReplicaCost(r, 8)
	kv := float64(32 * 2 * 4 * 128 * 2)
	b := Batch{Seqs: 4, PaddedSeqs: 8, Tokens: 4, PaddedTokens: 16, ContextTokens: 4000, AttendedPairs: 4000, DecodeKeys: 4000}
	got := rc.step(kv, rc.decodeKeyTime(VLLM), 3*time.Millisecond, VLLM)(b)
	gotJS := rc.step(kv, rc.decodeKeyTime(JetStream), 3*time.Millisecond, JetStream)(b)
	weights := float64(WeightBytes(r.Model, 8, BF16))
	read, passes := 4000*kv/819e9, 4000*32768/(197e12/256)
	sampling := 8 * 32000 * (2 + 4 + 4 + 4 + 4) / 819e9 // 8 padded sequences' logits
	want := seconds(weights/819e9+max(read, passes)+sampling) + rc.allReduce(16) + 3*time.Millisecond
	if d := got - want; d < -time.Nanosecond || d > time.Nanosecond {
		t.Errorf("vLLM step %v, want %v", got, want)
	}
	wantJS := seconds(weights/819e9+read+passes) + rc.allReduce(16) + 3*time.Millisecond
	if d := gotJS - wantJS; d < -time.Nanosecond || d > time.Nanosecond {
		t.Errorf("JetStream step %v, want %v", gotJS, wantJS)
	}
}

// TestSimulateAgreesWithEstimate: in the limit of one sequence and no
// prefill in its decode steps, the simulation's mean inter-token latency
// is the plan's ITL: every decode step is bound by the weights, linear in
// its context, and the mean context of tokens 2..O is P + O/2, the
// context Estimate costs. TP 1 on one chip: no all-reduce.
func TestSimulateAgreesWithEstimate(t *testing.T) {
	r := servingRequest(t, "llama3-8b", "v6e-1", 1)
	l := Estimate(r, 1, 1)
	res, err := Simulate(r, l, SimOptions{Engine: VLLM, Load: Load{Mix: FixedMix(r.PromptLen, r.OutputLen), Concurrency: 1, Requests: 1}}, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if d := res.ITL.Mean - l.ITL; d < -2*time.Nanosecond || d > 2*time.Nanosecond {
		t.Errorf("simulated mean ITL %v, plan's ITL %v: want them equal", res.ITL.Mean, l.ITL)
	}
}

// TestSimAsyncScheduling: under vLLM's async scheduling a step is
// scheduled when the one before it starts [v-async]. Request 0 (2 prompt
// and 10 output tokens, one client) runs alone; request 1 arrives at
// 1 ms, as step 1 starts (steps take 1 ms). Step 1 was scheduled at 0,
// step 2 at 1 ms, before request 1 came in: it is first computed in step
// 3, at 3 ms. Without async scheduling it is computed in step 1.
func TestSimAsyncScheduling(t *testing.T) {
	first := func(async bool) time.Duration {
		srv := Server{Engine: VLLM, MaxNumSeqs: 4, MaxNumBatchedTokens: 8, BlockSize: 4, Pages: 100, MaxModelLen: 64, AsyncScheduling: async}
		s, err := NewSim(srv, Load{Mix: FixedMix(2, 10), Concurrency: 1, Requests: 2}, perStep, rand.New(rand.NewPCG(1, 0)))
		if err != nil {
			t.Fatal(err)
		}
		s.Step()
		s.issue(time.Millisecond)
		for s.Step() {
			for _, sc := range s.Last().Scheduled {
				if sc.ID == 1 {
					return s.Last().Start
				}
			}
		}
		return -1
	}
	if got := first(true); got != 3*time.Millisecond {
		t.Errorf("async: request 1 (arrived at 1ms) first computed in the step at %v, want 3ms", got)
	}
	if got := first(false); got != time.Millisecond {
		t.Errorf("sync: request 1 (arrived at 1ms) first computed in the step at %v, want 1ms", got)
	}
	// an idle engine schedules a request when it arrives: one client's
	// second request, sent when its first finished at 2 ms, runs at 2 ms
	srv := Server{Engine: VLLM, MaxNumSeqs: 4, MaxNumBatchedTokens: 8, BlockSize: 4, Pages: 100, MaxModelLen: 64, AsyncScheduling: true}
	s, err := NewSim(srv, Load{Mix: FixedMix(2, 2), Concurrency: 1, Requests: 2}, perStep, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	diffLines(t, transcript(t, s), []string{"t=0s 0:2", "t=1ms 0:1 finished [0]", "t=2ms 1:2", "t=3ms 1:1 finished [1]"})
}

// TestSimulateStops: a closed Stop ends the simulation at its first step
// with ErrStopped; a nil one runs it to the end, the same result as
// without it (the same seed gives the same bytes).
func TestSimulateStops(t *testing.T) {
	r := request(t)
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	load := Load{Mix: FixedMix(r.PromptLen, r.OutputLen), Concurrency: 64, Requests: MaxSimRequests}
	stop := make(chan struct{})
	close(stop)
	if _, err := Simulate(r, p.Best, SimOptions{Engine: VLLM, Load: load, Stop: stop}, rand.New(rand.NewPCG(1, 0))); !errors.Is(err, ErrStopped) {
		t.Errorf("Simulate of %d requests with Stop closed: %v, want ErrStopped", load.Requests, err)
	}
	load.Requests = 100
	a, err := Simulate(r, p.Best, SimOptions{Engine: VLLM, Load: load}, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Simulate(r, p.Best, SimOptions{Engine: VLLM, Load: load, Stop: make(chan struct{})}, rand.New(rand.NewPCG(1, 0)))
	if err != nil || !reflect.DeepEqual(a, b) {
		t.Errorf("with an open Stop: %+v, %v; without: %+v", b, err, a)
	}
}
