package inference

// The scheduler of a replica served with attention data parallelism.
// Source, cited as [ti-dps]: vllm-project/tpu-inference @c539adc3 (2026-06-25, the
// tpu-inference of vllm/vllm-tpu:nightly-20260626-c539adc-cc79815, the image tpu-recipes'
// Qwen3.5-397B recipe serves with; the same at b8692ff0):
//
//	tpu_inference/layers/common/sharding.py from_vllm_config: with enable_dp_attention the
//	tensor-parallel size becomes attn_dp = TP / max(1, 2·KV heads / packing) (packing = 4 / KV
//	bytes, doubled for a head of 64), and total_dp_size = DP · attn_dp · attn_dp_expert;
//	core/sched/dp_scheduler.py update_vllm_config_for_dp_scheduler: total_dp_size > 1 serves
//	with DPScheduler, one vLLM Scheduler (or AsyncScheduler) a DP rank, each built from the
//	same scheduler config: max_num_seqs and max_num_batched_tokens are each rank's ("Per-rank
//	limits"), and each rank gets num_blocks // dp_size of the KV cache's pages;
//	add_request with DP_SCHED_BATCH_PREFILL (envs.py: default True) holds new requests until
//	_try_flush_pending flushes them: dp_size of them pending, or as many ranks idle in the last
//	step (no token scheduled) as requests pending, or 30,000 ms
//	(DP_SCHED_BATCH_PREFILL_FLUSH_TIMEOUT_MS) since the last flush; _find_best_rank_for_request
//	(prefix caching off) routes each to the rank with the fewest pending prefill tokens
//	(GET_PENDING_PREFILL_TOKENS: the running requests' prompt tokens not yet computed and the
//	waiting ones' prompts), then the fewest requests running and waiting, then the smallest
//	max_tokens − outputs over its running requests, then the lowest rank (Python's min);
//	runner/tpu_runner.py: a step's tokens are padded per rank, the ranks' largest count to a
//	power of two of at least max(16, next_power_of_2(dp_size · kv_packing)) / dp_size, times
//	dp_size; its requests likewise, the largest count to a power of two of at least
//	max(8, next_power_of_2(dp_size)) / dp_size, at most max_num_seqs, times dp_size.

import (
	"math"
	"time"
)

// rank is one scheduler's queues and KV pages: the replica's only one,
// or one DP rank's [ti-dps]; tokens and seqs are what it scheduled in
// the last step.
type rank struct {
	waiting, running []*sequence
	freePages        int
	tokens, seqs     int
}

// dpFlushTimeout is DP_SCHED_BATCH_PREFILL_FLUSH_TIMEOUT_MS [ti-dps].
const dpFlushTimeout = 30 * time.Second

// dispatch routes the DP scheduler's pending requests to its ranks when
// one of its triggers holds [ti-dps]. When no rank holds a request all
// count as idle: the engine schedules again while requests are pending,
// every rank schedules nothing, and the next schedule flushes (the empty
// step's host time is not counted).
func (s *Sim) dispatch() {
	if len(s.pending) == 0 {
		return
	}
	idle := 0
	for i := range s.ranks {
		if s.ranks[i].tokens == 0 {
			idle++
		}
	}
	if s.idle() {
		idle = len(s.ranks)
	}
	if len(s.pending) < len(s.ranks) && s.now-s.lastFlush < dpFlushTimeout && idle < len(s.pending) {
		return
	}
	for _, q := range s.pending {
		q.rank = s.bestRank()
		r := &s.ranks[q.rank]
		r.waiting = append(r.waiting, q)
	}
	s.pending, s.lastFlush = s.pending[:0], s.now
}

// bestRank is the rank a new request goes to: the fewest pending prefill
// tokens, then the fewest requests, then the running request nearest
// its last output token, then the lowest rank [ti-dps].
func (s *Sim) bestRank() int {
	best, key := 0, [3]int{}
	for i := range s.ranks {
		r := &s.ranks[i]
		k := [3]int{0, len(r.running) + len(r.waiting), math.MaxInt32}
		for _, q := range r.running {
			k[0] += max(q.prompt-q.computed, 0)
			k[2] = min(k[2], q.output-q.emitted)
		}
		for _, q := range r.waiting {
			k[0] += q.prompt
		}
		if i == 0 || k[0] < key[0] || k[0] == key[0] && (k[1] < key[1] || k[1] == key[1] && k[2] < key[2]) {
			best, key = i, k
		}
	}
	return best
}

// dpPadding is the padded tokens and requests of a step over DP ranks,
// from the busiest rank's tokens and requests [ti-dps].
func (srv Server) dpPadding(tokens, seqs int) (int, int) {
	d := max(srv.Ranks, 1)
	minTokens := max(16, nextPow2(d*srv.KVPacking)) / d
	minSeqs := max(8, nextPow2(d)) / d
	return d * max(minTokens, nextPow2(tokens)), d * min(max(minSeqs, nextPow2(seqs)), max(minSeqs, srv.MaxNumSeqs))
}
