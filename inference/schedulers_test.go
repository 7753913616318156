package inference

import (
	"math/rand/v2"
	"testing"
)

// qwen35Clients is qwen35Request (tpu-recipes' Qwen3.5-397B server on a
// tpu7x-8: TP 8, --max-num-seqs=64) with the client's
// --max-concurrency=128 as Clients.
func qwen35Clients(t *testing.T, dpAttention bool) Request {
	t.Helper()
	r := qwen35Request(t, dpAttention)
	r.Clients = 128
	r, err := NewRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestMaxNumSeqsEachScheduler, by hand: max_num_seqs is each vLLM
// scheduler's. With enable_dp_attention tpu-inference runs one Scheduler
// a DP rank, each built from the same scheduler config ("Per-rank
// limits: max_seqs=", tpu_inference/core/sched/dp_scheduler.py:483-532,
// update_vllm_config_for_dp_scheduler :1584-1596) and its runner holds
// max_num_reqs = dp_size × max_num_seqs (runner/tpu_runner.py:1048-1050)
// @b8692ff0. Qwen3.5-397B at TP 8 with attention DP over the 8 devices
// and --max-num-seqs=64: 8 schedulers of 64, 8 × 64 = 512 sequences a
// replica, so the 128 clients all run (16 a rank) and none waits; the
// serving command gives 64 back. Without attention DP one scheduler of
// 64 runs 64 of them and 64 wait.
func TestMaxNumSeqsEachScheduler(t *testing.T) {
	r := qwen35Clients(t, true)
	if got := r.Schedulers(8); got != 8 {
		t.Errorf("Schedulers(8) with attention DP = %d, want 8", got)
	}
	l := Estimate(r, 8, 1)
	if l.AttentionDP != 8 || l.SchedulerSeqs() != 64 || l.SeqsEach != 512 || l.Running() != 128 || l.Concurrency != 128 || l.QueueWait != 0 {
		t.Errorf("attention DP %d, max_num_seqs %d a scheduler, %d a replica, %d running of %d, queue wait %v; want 8, 64, 512, 128 of 128, 0",
			l.AttentionDP, l.SchedulerSeqs(), l.SeqsEach, l.Running(), l.Concurrency, l.QueueWait)
	}
	srv, _ := replica(r, l, VLLM, l.SchedulerSeqs(), 0)
	if srv.Ranks != 8 || srv.MaxNumSeqs != 64 {
		t.Errorf("simulated server: %d ranks of max_num_seqs %d, want 8 of 64", srv.Ranks, srv.MaxNumSeqs)
	}
	one := qwen35Clients(t, false)
	if got := one.Schedulers(8); got != 1 {
		t.Errorf("Schedulers(8) without attention DP = %d, want 1", got)
	}
	l = Estimate(one, 8, 1)
	if l.SchedulerSeqs() != 64 || l.SeqsEach != 64 || l.Running() != 64 || l.QueueWait <= 0 {
		t.Errorf("without attention DP: max_num_seqs %d a scheduler, %d a replica, %d running, queue wait %v; want 64, 64, 64, positive",
			l.SchedulerSeqs(), l.SeqsEach, l.Running(), l.QueueWait)
	}
}

// TestSimulateMaxNumSeqsEachScheduler: Simulate takes the request's
// max_num_seqs as each scheduler's. The 128 clients of the Qwen3.5
// server above (one request each of 1024 prompt and 16 output tokens)
// are served exactly as with no cap at all, since 16 a rank never reach
// 64; a cap of 8 a rank (64 split over the 8 ranks, as shardlab had it)
// queues half of them and takes longer.
func TestSimulateMaxNumSeqsEachScheduler(t *testing.T) {
	r := qwen35Clients(t, true)
	l := Estimate(r, 8, 1)
	sim := func(seqs int) SimResult {
		o := SimOptions{Engine: VLLM, MaxNumSeqs: seqs, Load: Load{Mix: FixedMix(1024, 16), Concurrency: 128, Requests: 128}}
		res, err := Simulate(r, l, o, rand.New(rand.NewPCG(1, 0)))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	got, free, split := sim(0), sim(MaxConcurrency), sim(8)
	if got.Duration != free.Duration || got.Steps != free.Steps || got.TTFT != free.TTFT {
		t.Errorf("max_num_seqs 64 a scheduler: %v in %d steps, TTFT %v; uncapped: %v in %d steps, TTFT %v; want the same",
			got.Duration, got.Steps, got.TTFT.Mean, free.Duration, free.Steps, free.TTFT.Mean)
	}
	if split.Duration <= got.Duration {
		t.Errorf("8 a scheduler: %v, want longer than 64 a scheduler's %v", split.Duration, got.Duration)
	}
}
