package inference

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestSimHandScheduleDPRanks holds the DP scheduler [ti-dps] to a
// schedule worked by hand: 4 requests of 6 prompt + 3 output tokens from
// 4 clients on 2 ranks, each with max_num_seqs 2, a budget of 8 tokens
// and 100 of the 200 pages (of 4 tokens).
//
//	t=0: 4 pending, at least the 2 ranks: flushed. 0 to rank 0 (all
//	     equal, the lowest); 1 to rank 1 (rank 0 owes 6 prefill tokens);
//	     2 to rank 0 (both owe 6, hold 1 request, run none: the lowest);
//	     3 to rank 1 (6 against 12). Rank 0: 0 gets 6, 2 the last 2;
//	     rank 1: 1 gets 6, 3 the last 2. 0 and 1 emit token 1.
//	t=1: rank 0: 0 decodes, 2 gets its last 4; rank 1 likewise: 2 and 3
//	     emit token 1.
//	t=2: every one decodes: 0 and 1 emit token 3, done.
//	t=3: 2 and 3 decode: token 3, done.
//
// One scheduler with max_num_seqs 2 would run 0 and 1 only, then 2 and 3.
func TestSimHandScheduleDPRanks(t *testing.T) {
	srv := Server{Engine: VLLM, MaxNumSeqs: 2, MaxNumBatchedTokens: 8, BlockSize: 4, Pages: 200, MaxModelLen: 64, Ranks: 2, KVPacking: 2}
	s, err := NewSim(srv, Load{Mix: FixedMix(6, 3), Concurrency: 4, Requests: 4}, perStep, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	diffLines(t, transcript(t, s), []string{
		"t=0s 0:6 2:2 1:6 3:2",
		"t=1ms 0:1 2:4 1:1 3:4",
		"t=2ms 0:1 2:1 1:1 3:1 finished [0 1]",
		"t=3ms 2:1 3:1 finished [2 3]",
	})
	if res := s.Result(); res.OutputTokens != 12 || res.Duration != 4*time.Millisecond {
		t.Errorf("%d tokens in %v, want 12 in 4ms", res.OutputTokens, res.Duration)
	}
}

// TestDPPadding: a step over DP ranks is padded per rank, from its
// busiest rank's tokens and requests [ti-dps]. With
// 2 ranks, KV packing 2 and max_num_seqs 4: the token paddings start at
// max(16, next_power_of_2(2·2)) = 16, 8 a rank; the request paddings at
// max(8, next_power_of_2(2)) = 8, 4 a rank.
//
//	ranks of 8 and 3 tokens, 2 and 1 requests: 2·8 = 16 tokens, 2·4 = 8
//	ranks of 9 and 0 tokens, 1 and 0 requests: 2·16 = 32 tokens, 2·4 = 8
//	ranks of 700 and 5 tokens, 3 and 1 requests: 2·1024, 2·4
func TestDPPadding(t *testing.T) {
	srv := Server{MaxNumSeqs: 4, Ranks: 2, KVPacking: 2}
	for _, c := range []struct{ t0, t1, q0, q1, tokens, seqs int }{
		{8, 3, 2, 1, 16, 8},
		{9, 0, 1, 0, 32, 8},
		{700, 5, 3, 1, 2048, 8},
	} {
		if tok, seq := srv.dpPadding(max(c.t0, c.t1), max(c.q0, c.q1)); tok != c.tokens || seq != c.seqs {
			t.Errorf("ranks of %d, %d tokens and %d, %d requests: padded %d tokens, %d requests, want %d, %d", c.t0, c.t1, c.q0, c.q1, tok, seq, c.tokens, c.seqs)
		}
	}
	// 8 ranks, fp8 KV (packing 4): tokens from max(16, 32)/8 = 4 a rank,
	// requests from max(8, 8)/8 = 1 a rank
	srv = Server{MaxNumSeqs: 64, Ranks: 8, KVPacking: 4}
	if tok, seq := srv.dpPadding(1, 1); tok != 32 || seq != 8 {
		t.Errorf("8 ranks, one request of 1 token: padded %d tokens, %d requests, want 32, 8", tok, seq)
	}
}

// TestDPDispatch: the DP scheduler holds new requests until as many as
// its ranks are pending, as many ranks as pending ones scheduled nothing
// in the last step, or 30 s have passed since its last flush; then each
// goes to the rank owing the fewest prefill tokens, then holding the
// fewest requests, then running the one nearest its last token [ti-dps].
func TestDPDispatch(t *testing.T) {
	busy := func() *Sim {
		s := &Sim{srv: Server{Ranks: 2}, ranks: make([]rank, 2)}
		s.ranks[0].running = []*sequence{{prompt: 10, computed: 4, output: 5}} // owes 6
		s.ranks[1].waiting = []*sequence{{prompt: 5, output: 5}}               // owes 5
		s.ranks[0].tokens, s.ranks[1].tokens = 6, 5
		s.pending = []*sequence{{id: 7, prompt: 3, output: 2}}
		return s
	}
	s := busy()
	s.dispatch()
	if len(s.pending) != 1 {
		t.Fatalf("1 pending of 2 ranks, none idle, no timeout: dispatched")
	}
	s.ranks[1].tokens = 0
	s.dispatch()
	if len(s.pending) != 0 || len(s.ranks[1].waiting) != 2 || s.ranks[1].waiting[1].id != 7 {
		t.Errorf("rank 1 idle: request 7 not routed to rank 1 (owes 5 prefill tokens against 6)")
	}
	s = busy()
	s.now = dpFlushTimeout
	s.dispatch()
	if len(s.pending) != 0 {
		t.Errorf("30 s since the last flush: not dispatched")
	}
	// 6 prefill tokens owed on both ranks, 1 request against 2: rank 0
	s = busy()
	s.ranks[1].waiting = []*sequence{{prompt: 6, output: 9}, {prompt: 0, output: 1}}
	if r := s.bestRank(); r != 0 {
		t.Errorf("6 owed on both, 1 request against 2: rank %d, want 0", r)
	}
	// 6 owed and 1 request on both: the running request nearest its
	// last token, 5 tokens on rank 0 against 9, then 2 on rank 1
	s.ranks[1].waiting = nil
	s.ranks[1].running = []*sequence{{prompt: 6, output: 9}}
	if r := s.bestRank(); r != 0 {
		t.Errorf("5 outputs left on rank 0 against 9: rank %d, want 0", r)
	}
	s.ranks[1].running[0].emitted = 7
	if r := s.bestRank(); r != 1 {
		t.Errorf("5 outputs left on rank 0 against 2: rank %d, want 1", r)
	}
}
