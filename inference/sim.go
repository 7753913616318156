package inference

// The serving simulator: one replica of a layout, stepped like the engine
// schedules it. Sources, cited as [tag]:
//
//	[v-sched]  vllm-project/vllm:vllm/v1/core/sched/scheduler.py Scheduler.schedule @00024d31
//	           (running requests first, each given min(tokens left, token budget); a request
//	           whose KV blocks cannot be allocated preempts the last running request, which goes
//	           back to the front of the waiting queue and recomputes; waiting requests only when
//	           nothing was preempted, while the budget lasts and fewer than max_num_seqs run, a
//	           prompt chunked to the budget, stopping at the first whose blocks do not fit)
//	[ti-pad]   vllm-project/tpu-inference:tpu_inference/runner/tpu_runner.py (num_tokens_paddings,
//	           num_reqs_paddings) and tpu_inference/runner/utils.py get_token_paddings,
//	           get_req_paddings (MIN_NUM_SEQS 8), tpu_inference/envs.py (MIN_TOKEN_BUCKET 16,
//	           VLLM_TPU_BUCKET_PADDING_GAP 0) @b8692ff0: a step's tokens are padded to a power of
//	           two of at least 16, its requests (the rows the logits are computed for) to a power
//	           of two of at least 8, at most max_num_seqs
//	[js-orch]  AI-Hypercomputer/JetStream:jetstream/core/orchestrator.py _insert_if_possible,
//	           _generate_thread @acd4f5ad: in interleaved mode (jetstream-pytorch's
//	           jetstream_pt/cli.py @c8bb6119 serves with interleaved_slices) the generate thread
//	           fills every free slot with a prefilled request before it steps, and a generate step
//	           runs over all batch slots
//	[js-pad]   AI-Hypercomputer/JetStream:jetstream/engine/token_utils.py DEFAULT_PREFILL_BUCKETS,
//	           pad_tokens @acd4f5ad: one prompt a prefill, padded to a power of two of at least 16
//	[jsp-attn] AI-Hypercomputer/jetstream-pytorch:jetstream_pt/environment.py (ring_buffer True
//	           by default, then ragged_mha False) and jetstream_pt/layers.py (dense_attention over
//	           the cache) @c8bb6119: a generate step attends over every slot's whole cache of
//	           max_cache_length tokens
//	[jsp-gqa]  AI-Hypercomputer/jetstream-pytorch:jetstream_pt/layers.py Attention.forward
//	           @6c1db56 (2024-04-24, the day of the table's Llama 3 rows): repeat_kv expands the
//	           cache's KV heads to the query heads, the decode query is broadcast to 2 rows
//	           (seqlen == 1), and each head's scores and weighted sum are einsums over the
//	           whole cache
//	[jsp-int8] the same file: WeightOnlyInt8Linear computes F.linear(x, int8 weight) times a
//	           per-output scaler, so the weights are read as one byte each and the scale
//	           multiplies the output: no dequantised copy is written, and int8 weights cost one
//	           byte a weight and no time of their own; the int8 KV cache (cache_manager.py
//	           Int8KVCacheGenerate) adds per-token scalers, under 2 % of its bytes, not counted
//	[ti-rpa]   vllm-project/tpu-inference:tpu_inference/kernels/ragged_paged_attention/v3/kernel.py
//	           @b8692ff0: q is laid out [kv heads, tokens, q heads a KV head, head dim], the
//	           query heads of one KV head attend its pages together, and the KV it reads
//	           streams through two buffers (bkv_x2_ref), one filled while the other is computed
//	[ti-rpa3]  the prompts' attention kernel: rpa.go
//	[ti-3127]  vllm-project/tpu-inference issue #3127 (2026-08-09): XProf of a greedy decode step,
//	           the logits' fp32 convert, copy and argmax each near the HBM roofline of its bytes
//	[ti-dps]   the DP scheduler of a replica served with attention data parallelism: dprank.go
//	[v-async]  vllm-project/vllm:vllm/config/vllm.py VllmConfig.__post_init__ @000fc94b: async
//	           scheduling is on unless turned off or incompatible (pooling, some speculative
//	           decoding, an executor without it; tpu-inference's single-host executor is "uni",
//	           tpu_platform.py @b8692ff0, which has it), and tpu-recipes' vLLM rows pass
//	           --async-scheduling; vllm/v1/engine/core.py EngineCore.step_with_batch_queue
//	           @00080ee1: with a batch queue of two, each pass of the busy loop takes in the
//	           requests that arrived, schedules the next step and launches it behind the one
//	           running, then blocks on the running one and returns its outputs. So step k is
//	           scheduled when step k-2 ends (k-1 starts): a request arriving after that (a
//	           client's next request, sent once its last token has come back) is first computed
//	           in step k+1; an idle engine schedules a request when it arrives
//
// A step also costs a fixed time that no roofline gives (host scheduling,
// input transfer, dispatch): StepOverhead, fitted per engine on the
// calibration rows of validate/serving.yaml. Not modelled: prefix
// caching, speculative decoding.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// Engine is the scheduler a simulation runs.
type Engine int

// The engines.
const (
	// VLLM is vLLM's scheduler [v-sched] on tpu-inference's runner
	// [ti-pad]: continuous batching with chunked prefill, paged KV cache,
	// preemption by recompute.
	VLLM Engine = iota
	// JetStream is JetStream's orchestrator in interleaved mode with
	// jetstream-pytorch's engine [js-orch, js-pad, jsp-attn]: one prompt a
	// prefill into a free slot, generate steps over all slots.
	JetStream
)

func (e Engine) String() string {
	if e == JetStream {
		return "jetstream"
	}
	return "vllm"
}

// Server is the engine's settings for one replica.
type Server struct {
	Engine Engine
	// MaxNumSeqs is vLLM's max_num_seqs, JetStream's batch slots.
	MaxNumSeqs int
	// MaxNumBatchedTokens is vLLM's token budget of a step (JetStream:
	// unused).
	MaxNumBatchedTokens int
	// BlockSize and Pages are the paged KV cache (vLLM).
	BlockSize, Pages int
	// MaxModelLen is the longest sequence; JetStream's cache length of
	// every slot.
	MaxModelLen int
	// QueryBlock and KeyBlock are vLLM's attention kernel's blocks for
	// prompts: query blocks of min(QueryBlock, padded tokens / 2) tokens,
	// keys computed KeyBlock at a time [ti-rpa3]. 0: the prompts'
	// attention is its exact (query, key) pairs, inside the matmuls'
	// roofline.
	QueryBlock, KeyBlock int
	// Window is the local layers' sliding window of a model with one (0:
	// none), WindowQueryBlock their kernel's query block (QueryBlock is
	// then the global layers'); their work is Batch.Window [ti-swa].
	Window, WindowQueryBlock int
	// Ranks is the schedulers of a replica served with attention data
	// parallelism: tpu-inference's DPScheduler, one vLLM scheduler a DP
	// rank, each with MaxNumSeqs, MaxNumBatchedTokens and 1/Ranks of the
	// Pages [ti-dps]. 0 or 1: one scheduler.
	Ranks int
	// AsyncScheduling is vLLM's async scheduling [v-async]: the engine
	// schedules a step while the one before it runs, so a request that
	// arrives while a step runs is first computed two steps later.
	AsyncScheduling bool
	// KVPacking is the KV cache's values a 32-bit word (4 / bytes a
	// value): the least token padding of a DP step is a power of two of
	// at least Ranks × KVPacking [ti-dps].
	KVPacking int
}

// Load is the requests a simulation serves.
type Load struct {
	Mix LengthMix
	// Concurrency is the clients of a closed loop: each sends its next
	// request when its last one finishes (benchmark_serving's
	// --max-concurrency with no rate limit).
	Concurrency int
	// RequestRate, when positive, replaces Concurrency: requests arrive
	// as a Poisson process of this rate a second.
	RequestRate float64
	// Requests is how many are sent in all.
	Requests int
}

// MaxSimRequests bounds a simulation's requests.
const MaxSimRequests = 1 << 18

// Batch is one step's work: what its time is computed from.
type Batch struct {
	// Prefill is a JetStream prefill of one prompt.
	Prefill bool
	// Seqs and Tokens are the sequences and tokens scheduled; Padded*
	// what the compiled step computes over [ti-pad, js-pad].
	Seqs, PaddedSeqs     int
	Tokens, PaddedTokens int
	// ContextTokens is the KV the step's attention reads, summed over its
	// sequences (each one's context including its new tokens).
	ContextTokens int
	// AttendedPairs is the (query, key) pairs of attention: for n new
	// tokens after c computed ones, n·(c + (n+1)/2).
	AttendedPairs float64
	// DecodeKeys is the keys that decode queries attend, summed over
	// the sequences that run one token this step (their context
	// including it); JetStream's generate step: every slot's whole cache.
	DecodeKeys int
	// With the attention kernel's blocks (Server.QueryBlock), the
	// sequences that run more than one token (prompt chunks) are the
	// kernel's own op: PrefillPairs is their share of AttendedPairs,
	// KernelPairs the pairs the kernel computes for them in whole blocks,
	// KernelKVTokens the KV tokens it reads for them, once a query block
	// [ti-rpa3]; PrefillContext is their share of ContextTokens.
	PrefillPairs, KernelPairs, KernelKVTokens float64
	PrefillContext                            int
	// Window is the same work over the local layers of a model with a
	// sliding window (Server.Window), zero without one: the fields above
	// then count the global layers' work.
	Window WindowWork
}

// Scheduled is one sequence's share of a step.
type Scheduled struct {
	ID, Tokens int
}

// StepRecord is what one step did: when it started, how long it took,
// the tokens each sequence ran, the sequences preempted and finished.
type StepRecord struct {
	Start, Time time.Duration
	Batch       Batch
	Scheduled   []Scheduled
	Preempted   []int
	Finished    []int
}

type sequence struct {
	id                int
	arrival           time.Duration
	prompt, output    int
	computed, emitted int
	pages             int
	last              time.Duration
	rank              int // its scheduler's (Server.Ranks)
}

// tokens is what the sequence holds: its prompt and the tokens it has
// emitted (a preempted sequence recomputes all of them [v-sched]).
func (q *sequence) tokens() int { return q.prompt + q.emitted }

// Sim is a serving simulation of one replica: a state machine whose
// clock is the sum of its steps' times. Step it until it returns false,
// then read Result.
type Sim struct {
	srv  Server
	load Load
	cost func(Batch) time.Duration
	rng  *rand.Rand

	now         time.Duration
	issued      int
	nextArrival time.Duration
	lastArrival time.Duration
	arrived     []*sequence // arrivals not yet admitted (closed loop)
	ranks       []rank
	pending     []*sequence   // held by the DP scheduler until flushed [ti-dps]
	lastFlush   time.Duration // when pending was last flushed
	prevStart   time.Duration // when the last step started
	finished    int
	ttft        []time.Duration // one a request: at most MaxSimRequests (2 MiB)
	itl         latencies       // one a token: bounded (latencies)
	outTokens   int
	steps       int
	preemptions int
	last        StepRecord
	sched       []*sequence // a step's sequences and tokens, reused
	n           []int
	work        []work
}

// NewSim checks srv and load and returns a simulation whose steps take
// cost(batch); rng draws the lengths and the arrivals.
func NewSim(srv Server, load Load, cost func(Batch) time.Duration, rng *rand.Rand) (*Sim, error) {
	switch {
	case srv.Engine != VLLM && srv.Engine != JetStream:
		return nil, &FieldError{Field: "engine", Value: strconv.Itoa(int(srv.Engine)), Want: "vllm or jetstream"}
	case srv.MaxNumSeqs < 1 || srv.MaxNumSeqs > MaxConcurrency:
		return nil, badInt("max_num_seqs", srv.MaxNumSeqs, fmt.Sprintf("1 to %d", MaxConcurrency))
	case srv.MaxModelLen < 2 || srv.MaxModelLen > MaxTokens:
		return nil, badInt("max_model_len", srv.MaxModelLen, fmt.Sprintf("2 to %d", MaxTokens))
	case load.Mix.label == "":
		return nil, &FieldError{Field: "length_mix", Value: `""`, Want: "a length mix (FixedMix, ParseLengthMix, ParseHistogram)"}
	case load.Mix.Longest() > srv.MaxModelLen:
		return nil, badInt("length_mix", load.Mix.Longest(), fmt.Sprintf("requests of at most max_model_len %d tokens, prompt and output", srv.MaxModelLen))
	case load.Requests < 1 || load.Requests > MaxSimRequests:
		return nil, badInt("requests", load.Requests, fmt.Sprintf("1 to %d", MaxSimRequests))
	case math.IsNaN(load.RequestRate) || math.IsInf(load.RequestRate, 0) || load.RequestRate < 0 || load.RequestRate > MaxRequestRate:
		return nil, &FieldError{Field: "request_rate", Value: strconv.FormatFloat(load.RequestRate, 'g', -1, 64), Want: fmt.Sprintf("0 (use concurrency) or a finite rate up to %d requests/s", MaxRequestRate)}
	case load.RequestRate == 0 && (load.Concurrency < 1 || load.Concurrency > MaxConcurrency):
		return nil, badInt("concurrency", load.Concurrency, fmt.Sprintf("1 to %d clients", MaxConcurrency))
	}
	if srv.Engine == VLLM {
		switch {
		case srv.MaxNumBatchedTokens < 1 || srv.MaxNumBatchedTokens > MaxTokens:
			return nil, badInt("max_num_batched_tokens", srv.MaxNumBatchedTokens, fmt.Sprintf("1 to %d", MaxTokens))
		case srv.BlockSize < 1 || srv.BlockSize > MaxTokens:
			return nil, badInt("block_size", srv.BlockSize, fmt.Sprintf("1 to %d tokens", MaxTokens))
		case srv.Ranks < 0 || srv.Ranks > MaxConcurrency:
			return nil, badInt("ranks", srv.Ranks, fmt.Sprintf("0 or 1 (one scheduler) to %d DP ranks", MaxConcurrency))
		case srv.Ranks > 1 && (srv.KVPacking < 1 || srv.KVPacking > 8):
			return nil, badInt("kv_packing", srv.KVPacking, "1 to 8 KV values a 32-bit word with DP ranks")
		case !fitsOne(srv.Pages/max(srv.Ranks, 1), ceilDiv(srv.MaxModelLen, srv.BlockSize)):
			// vLLM's start-up check [v-kvcheck]: one max_model_len sequence
			// (the longest request is at most that long)
			return nil, badInt("pages", srv.Pages, fmt.Sprintf("at least %d a scheduler (%d of them), the pages of one max_model_len sequence (%d tokens in pages of %d), which vLLM's start-up checks", ceilDiv(srv.MaxModelLen, srv.BlockSize), max(srv.Ranks, 1), srv.MaxModelLen, srv.BlockSize))
		case srv.QueryBlock < 0 || srv.QueryBlock > MaxTokens:
			return nil, badInt("query_block", srv.QueryBlock, fmt.Sprintf("0 (not modelled) to %d tokens", MaxTokens))
		case srv.QueryBlock > 0 && (srv.KeyBlock < 1 || srv.KeyBlock > MaxTokens):
			return nil, badInt("key_block", srv.KeyBlock, fmt.Sprintf("1 to %d tokens with a query block", MaxTokens))
		}
	}
	s := &Sim{srv: srv, load: load, cost: cost, rng: rng, ranks: make([]rank, max(srv.Ranks, 1))}
	for i := range s.ranks {
		s.ranks[i].freePages = srv.Pages / len(s.ranks) // num_blocks // dp_size [ti-dps]
	}
	s.ttft = make([]time.Duration, 0, load.Requests)
	if load.RequestRate > 0 {
		s.nextArrival = s.interArrival()
	} else {
		for range min(load.Concurrency, load.Requests) {
			s.issue(0)
		}
	}
	return s, nil
}

func (s *Sim) interArrival() time.Duration {
	return time.Duration(s.rng.ExpFloat64() / s.load.RequestRate * 1e9)
}

// issue creates the next request, arriving at t.
func (s *Sim) issue(t time.Duration) {
	p, o := s.load.Mix.Sample(s.rng)
	s.arrived = append(s.arrived, &sequence{id: s.issued, arrival: t, prompt: p, output: o})
	s.lastArrival = max(s.lastArrival, t)
	s.issued++
}

// admit moves the requests that have arrived by now to the waiting
// queue (with DP ranks, to the DP scheduler's, which routes them to the
// ranks when it flushes: dispatch), and when the server is idle moves
// the clock to the next arrival.
func (s *Sim) admit() {
	if s.load.RequestRate > 0 {
		if s.idle() && len(s.pending) == 0 && s.issued < s.load.Requests && s.nextArrival > s.now {
			s.now = s.nextArrival
		}
		for s.issued < s.load.Requests && s.nextArrival <= s.now {
			s.issue(s.nextArrival)
			s.nextArrival += s.interArrival()
		}
	}
	n := len(s.arrived)
	if s.srv.AsyncScheduling && s.steps > 0 && !s.idle() {
		// this step was scheduled when the last one started [v-async]
		n = 0
		for n < len(s.arrived) && s.arrived[n].arrival < s.prevStart {
			n++
		}
	}
	if len(s.ranks) == 1 {
		s.ranks[0].waiting = append(s.ranks[0].waiting, s.arrived[:n]...)
	} else {
		s.pending = append(s.pending, s.arrived[:n]...)
		s.dispatch()
	}
	s.arrived = append(s.arrived[:0], s.arrived[n:]...)
}

// idle reports whether no scheduler holds a request.
func (s *Sim) idle() bool {
	for i := range s.ranks {
		if len(s.ranks[i].waiting) > 0 || len(s.ranks[i].running) > 0 {
			return false
		}
	}
	return true
}

// Step runs one step of the engine and reports whether requests remain.
func (s *Sim) Step() bool {
	s.admit()
	if s.idle() {
		return false
	}
	s.last = StepRecord{Start: s.now, Scheduled: s.last.Scheduled[:0], Preempted: s.last.Preempted[:0], Finished: s.last.Finished[:0]}
	defer func() { s.prevStart = s.last.Start }()
	if s.srv.Engine == JetStream {
		s.stepJetStream()
	} else {
		s.stepVLLM()
	}
	return s.finished < s.load.Requests
}

// Last is what the last step did.
func (s *Sim) Last() StepRecord {
	l := s.last
	l.Scheduled, l.Preempted, l.Finished = slices.Clone(l.Scheduled), slices.Clone(l.Preempted), slices.Clone(l.Finished)
	return l
}

// batch is the step of the sequences sched, n[i] tokens of sched[i], as
// tpu-inference pads it (Server.batch).
func (s *Sim) batch(sched []*sequence, n []int) Batch {
	s.work = s.work[:0]
	for i, q := range sched {
		s.work = append(s.work, work{computed: q.computed, n: n[i]})
	}
	var tokens, seqs int // the busiest DP rank's [ti-dps]
	for i := range s.ranks {
		tokens, seqs = max(tokens, s.ranks[i].tokens), max(seqs, s.ranks[i].seqs)
	}
	return s.srv.batch(s.work, tokens, seqs)
}

// work is one sequence's part of a step: the tokens it has computed
// (its context in the KV cache) and the n scheduled for it.
type work struct{ computed, n int }

// batch is the step of the sequences w, as tpu-inference pads it
// [ti-pad] (over DP ranks, from the busiest rank's rankTokens and
// rankSeqs [ti-dps]), with its prefill kernel's blocks when the server
// models them (QueryBlock). Simulate's steps and AtRate's mixed steps
// are both built here.
func (srv Server) batch(w []work, rankTokens, rankSeqs int) Batch {
	b := Batch{Seqs: len(w)}
	for _, q := range w {
		b.Tokens += q.n
		b.ContextTokens += q.computed + q.n
		b.AttendedPairs += float64(q.n) * (float64(q.computed) + float64(q.n+1)/2)
		if q.n == 1 {
			b.DecodeKeys += q.computed + 1
		}
	}
	b.PaddedTokens, b.PaddedSeqs = paddedTokens(b.Tokens), paddedSeqs(b.Seqs, srv.MaxNumSeqs)
	if srv.Ranks > 1 {
		b.PaddedTokens, b.PaddedSeqs = srv.dpPadding(rankTokens, rankSeqs)
	}
	bq := min(srv.QueryBlock, max(b.PaddedTokens/2, 1))
	if srv.QueryBlock > 0 {
		for _, q := range w {
			if q.n > 1 {
				pairs, kv := prefillKernel(q.computed, q.n, bq, srv.KeyBlock, 0)
				b.PrefillPairs += float64(q.n) * (float64(q.computed) + float64(q.n+1)/2)
				b.PrefillContext += q.computed + q.n
				b.KernelPairs, b.KernelKVTokens = b.KernelPairs+pairs, b.KernelKVTokens+kv
			}
		}
	}
	if srv.Window > 0 {
		bqw := min(srv.WindowQueryBlock, max(b.PaddedTokens/2, 1))
		for _, q := range w {
			b.Window.add(q.computed, q.n, srv.Window, srv.WindowQueryBlock > 0, bqw, srv.KeyBlock)
		}
	}
	return b
}

// paddedTokens is the token bucket tpu-inference compiles a step of n
// tokens for: a power of two of at least 16 [ti-pad].
func paddedTokens(n int) int { return max(16, nextPow2(n)) }

// paddedSeqs is the request bucket of a step of n sequences: a power of
// two of at least 8, at most max_num_seqs (itself at least 8) [ti-pad].
func paddedSeqs(n, maxNumSeqs int) int { return min(max(8, nextPow2(n)), max(8, maxNumSeqs)) }

// run advances the clock by the batch's time; each scheduled sequence
// whose tokens are all computed emits one.
func (s *Sim) run(b Batch, sched []*sequence, n []int) {
	t := s.cost(b)
	s.now += t
	s.steps++
	s.last.Time, s.last.Batch = s.last.Time+t, b
	for i, q := range sched {
		s.last.Scheduled = append(s.last.Scheduled, Scheduled{ID: q.id, Tokens: n[i]})
		q.computed += n[i]
		if q.computed < q.tokens() {
			continue
		}
		q.emitted++
		s.outTokens++
		if q.emitted == 1 {
			s.ttft = append(s.ttft, s.now-q.arrival)
		} else {
			s.itl.add(s.now - q.last)
		}
		q.last = s.now
		if q.emitted == q.output {
			s.finish(q)
		}
	}
}

func (s *Sim) finish(q *sequence) {
	s.ranks[q.rank].freePages += q.pages
	q.pages = 0
	s.finished++
	s.last.Finished = append(s.last.Finished, q.id)
	if s.load.RequestRate == 0 && s.issued < s.load.Requests {
		s.issue(s.now)
	}
}

// stepJetStream fills every free slot with a prefilled request, one
// prompt a prefill, then runs one generate step over all slots
// [js-orch, js-pad, jsp-attn].
func (s *Sim) stepJetStream() {
	r := &s.ranks[0]
	for len(r.running) < s.srv.MaxNumSeqs && len(r.waiting) > 0 {
		q := r.waiting[0]
		r.waiting = r.waiting[1:]
		p := q.prompt
		b := Batch{Prefill: true, Seqs: 1, PaddedSeqs: 1, Tokens: p, PaddedTokens: max(16, nextPow2(p)),
			ContextTokens: p, AttendedPairs: float64(p) * float64(p+1) / 2}
		if s.srv.Window > 0 {
			b.Window.add(0, p, s.srv.Window, false, 0, 0)
		}
		s.run(b, []*sequence{q}, []int{p})
		if q.emitted < q.output {
			r.running = append(r.running, q)
		}
	}
	if len(r.running) == 0 {
		return
	}
	B, L := s.srv.MaxNumSeqs, s.srv.MaxModelLen
	n := make([]int, len(r.running))
	for i := range n {
		n[i] = 1
	}
	b := Batch{Seqs: B, PaddedSeqs: B, Tokens: B, PaddedTokens: B, ContextTokens: B * L, AttendedPairs: float64(B) * float64(L), DecodeKeys: B * L}
	if s.srv.Window > 0 {
		w := min(L, s.srv.Window) // every slot's whole cache, as far as the window reaches
		b.Window = WindowWork{ContextTokens: B * w, AttendedPairs: float64(B) * float64(w), DecodeKeys: B * w}
	}
	s.run(b, r.running, n)
	r.running = slices.DeleteFunc(r.running, func(q *sequence) bool { return q.emitted == q.output })
}

// SimResult is what a simulation measured, as a benchmark client would:
// output tokens over the time to the last one, time to the first token
// from arrival, and the times between a sequence's tokens.
type SimResult struct {
	Engine Engine
	// Replicas is the layout's; the counts, the duration and the
	// latencies are those of the busiest replica simulated, the
	// throughput all replicas'. Idle is the replicas a closed loop of
	// fewer clients leaves without one (Spread).
	Replicas     int
	Idle         int
	Requests     int
	OutputTokens int
	Steps        int
	Preemptions  int
	Duration     time.Duration
	// LastArrival is when the last request arrived (0 in a closed loop,
	// whose clients all start at once).
	LastArrival time.Duration
	// TokensPerSecond is output tokens a second.
	TokensPerSecond float64
	TTFT, ITL       Percentiles
}

// Result is the simulation's measurements so far.
func (s *Sim) Result() SimResult {
	r := SimResult{Engine: s.srv.Engine, Replicas: 1, Requests: s.finished, OutputTokens: s.outTokens, Steps: s.steps,
		Preemptions: s.preemptions, Duration: s.now, LastArrival: s.lastArrival, TTFT: percentiles(s.ttft), ITL: s.itl.percentiles()}
	if s.now > 0 {
		r.TokensPerSecond = float64(s.outTokens) / s.now.Seconds()
	}
	return r
}

// SimOptions is a simulation of a plan's layout: the engine, its
// max_num_seqs (JetStream: batch slots) for each scheduler, and the load
// on all replicas.
type SimOptions struct {
	Engine Engine
	// MaxNumSeqs is vLLM's max_num_seqs as the serving command gives
	// it, each scheduler's (under attention data parallelism one a
	// device, each with its own max_num_seqs [ti-dps]; JetStream: a
	// replica's batch slots); 0: the layout's (Layout.SchedulerSeqs,
	// the request's max_num_seqs when given; under a request rate, the
	// cap AtRate sizes it to).
	MaxNumSeqs int
	Load       Load
	// StepOverhead, when not nil, replaces the engine's fixed time a
	// step (StepOverhead); validate's calibration sets it.
	StepOverhead *time.Duration
	// Stop, when closed, stops the simulation at its next step: Simulate
	// then returns ErrStopped and no result (a server passes its
	// request's deadline, a context's Done). Nil: run to the end.
	Stop <-chan struct{}
}

// ErrStopped is Simulate's error when SimOptions.Stop closed before the
// simulation ended.
var ErrStopped = errors.New("inference: simulation stopped before its end")

// Simulate serves o.Load on layout l of request r: one replica is
// simulated with its share of the load and its throughput multiplied by
// the replicas; where a closed loop's clients leave some replicas one
// fewer, one of those too (simulateShares). A step's time is what is
// physically there, its ops in sequence (step): the matmuls at their
// roofline (the weights read once or the MXU time of the padded tokens,
// the output projection only for the padded sequences, whose logits are
// sampled), then the attention
// (every sequence's KV context read, and the MXU passes of the decode
// queries: decodeKeyTime; on vLLM the prompt chunks' attention as its
// kernel computes it, in blocks: prefillKernel [ti-rpa3]), then the
// tensor-parallel all-reduces of the
// padded tokens, then the engine's fixed time a step (StepOverhead, or
// o.StepOverhead when set). For JetStream the KV cache is its dense one:
// each slot's max_cache_length tokens of keys and values, no page
// padding.
func Simulate(r Request, l Layout, o SimOptions, rng *rand.Rand) (SimResult, error) {
	dp := max(l.DP, 1)
	seqs := o.MaxNumSeqs
	if seqs == 0 {
		seqs = max(l.SchedulerSeqs(), 1)
	}
	overhead := StepOverhead(o.Engine)
	if o.StepOverhead != nil {
		overhead = *o.StepOverhead
	}
	if overhead < 0 {
		return SimResult{}, &FieldError{Field: "step_overhead", Value: overhead.String(), Want: "a time of 0 or more"}
	}
	srv, cost := replica(r, l, o.Engine, seqs, overhead)
	return simulateShares(srv, cost, o.Load, dp, rng, o.Stop)
}

// replica is one replica of layout l of request r on engine e as
// Simulate runs it: the engine's settings, with maxNumSeqs each of its
// schedulers' max_num_seqs, and the time of its steps (step), with
// overhead the engine's fixed time a step. AtRate costs its mixed steps
// with the same two.
func replica(r Request, l Layout, e Engine, maxNumSeqs int, overhead time.Duration) (Server, func(Batch) time.Duration) {
	srv := Server{Engine: e, MaxNumSeqs: maxNumSeqs, MaxNumBatchedTokens: r.MaxNumBatchedTokens,
		BlockSize: l.Memory.BlockSize, Pages: l.Memory.Pages, MaxModelLen: r.MaxModelLen, AsyncScheduling: e == VLLM}
	if e == VLLM && !r.Model.MLA() { // latent attention has a kernel of its own
		attnTP := l.TP
		if r.AttentionDP() {
			attnTP = 1 // every head of the device's own sequences
		}
		// each layer kind at its own query heads a KV head [ti-swa]
		srv.QueryBlock, srv.KeyBlock = kernelBlocks(r.Slice.Chip.Generation, r.Model.Global(), attnTP, max(l.Memory.BlockSize, 1), r.MaxModelLen)
		srv.WindowQueryBlock, _ = kernelBlocks(r.Slice.Chip.Generation, r.Model, attnTP, max(l.Memory.BlockSize, 1), r.MaxModelLen)
	}
	srv.Window = r.Model.SlidingWindow
	if e == VLLM && l.AttentionDP > 1 {
		// one scheduler a DP rank, each device its own sequences [ti-dps]
		srv.Ranks, srv.KVPacking = l.AttentionDP, max(4/max(r.KVCache.Bytes(), 1), 1)
	}
	rc := newReplicaCost(r, l.TP)
	kv := float64(l.Memory.KVPerToken)
	if e == JetStream {
		kv = float64(r.Model.AttentionLayers() * 2 * max(r.Model.KV()/l.TP, 1) * r.Model.Head() * r.KVCache.Bytes())
	}
	return srv, rc.step(kv, rc.decodeKeyTime(e), overhead, e)
}

// step is the time of a batch on one replica of engine e whose devices
// each hold kv bytes of a token's KV, its ops one after another: the
// matmuls at their roofline (the weights the batch's tokens read, or the
// padded tokens' matmul FLOPs, the output projection only for the padded
// sequences, whose logits are sampled, and the prompts' attention
// scores), then the attention: the KV context the busiest device reads
// and its decode queries' MXU passes of keyTime seconds a key, then the
// collectives of the padded tokens and the engine's fixed time a step.
// vLLM then samples the padded sequences' logits (sampling); JetStream's
// argmax over its logits [js-orch] reads them once, under 0.5 % of its
// step, and is not counted. vLLM's attention kernel streams the KV through two buffers, one read
// from HBM while the MXU works on the other (bkv_x2_ref [ti-rpa]): its
// read and its passes overlap. JetStream's attention is XLA einsums over
// the whole cache with a softmax between them [jsp-gqa]: its read and its
// passes are added, the form that fits the calibration rows of
// validate/serving.yaml (with them overlapped, JetStream's three are
// over-predicted by 24 % to 35 %; added, under-predicted by 8 % to 32 %).
// With the kernel's blocks (Batch.KernelPairs) the prompt chunks'
// attention is its own op after the matmuls (prefillKernel), not inside
// their roofline; a hybrid model's linear attention (linearAttention)
// and a mixture of experts' row gathers (moeDispatch) are ops of their
// own too. Local layers read and compute their window only (Batch.Window).
func (rc replicaCost) step(kv, keyTime float64, overhead time.Duration, e Engine) func(Batch) time.Duration {
	keyLocal := rc.keyLocal(e)
	return func(b Batch) time.Duration {
		matmul := max(rc.weightsRead(b.Tokens)/rc.bw, rc.matmulTime(b))
		share, context := rc.kvShare(b.Seqs), b.ContextTokens
		if b.KernelPairs > 0 {
			context -= b.PrefillContext // read by the kernel's own op: prefillKernel
		}
		wcontext := b.Window.ContextTokens
		if b.KernelPairs > 0 {
			wcontext -= b.Window.PrefillContext
		}
		read := share * rc.byKind(float64(context), float64(wcontext), rc.kvLocal) * kv / rc.bw
		passes := share * rc.byKind(float64(b.DecodeKeys), float64(b.Window.DecodeKeys), keyLocal) * keyTime
		attention, sample := max(read, passes), rc.sampling(b.PaddedSeqs)
		if e == JetStream {
			attention, sample = read+passes, 0
		}
		return seconds(matmul+attention+rc.prefillKernel(b, kv)+rc.linearAttention(b)+rc.moeDispatch(b.PaddedTokens)+sample) +
			rc.allReduce(b.PaddedTokens) + overhead
	}
}
