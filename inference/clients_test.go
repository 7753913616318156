package inference

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// clientsRequest is tpu-recipes' Llama 3.3 70B server on a v6e-8
// (validate/serving.yaml, recipes-v6e8-llama3.3-70b-c64: TP 8,
// max_model_len 2048, max_num_batched_tokens 512, gpu_memory_utilization
// 0.98, 1000 + 1000 tokens) at max_num_seqs seqs, with clients closed-loop
// clients (0: none given); with neither, at 64 concurrent sequences.
func clientsRequest(t *testing.T, seqs, clients int) Request {
	t.Helper()
	r, err := NewRequest(Request{Model: lookup(t, "llama3-70b"), Slice: slice(t, "v6e-8"), MaxModelLen: 2048,
		Concurrency: 64, MaxNumSeqs: seqs, Clients: clients, PromptLen: 1000, OutputLen: 1000, KVCache: BF16,
		MemoryUtilization: 0.98, MaxNumBatchedTokens: 512, TP: 8})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestParseOptionsClients: concurrency beside max_num_seqs is the
// clients, max_num_seqs the cap (review171 #4: the published benchmarks
// give both); without max_num_seqs a request's clients are refused.
func TestParseOptionsClients(t *testing.T) {
	o := DefaultOptions()
	o.Concurrency, o.MaxNumSeqs = 64, 256
	q, err := ParseOptions(o)
	if err != nil || q.Request.Clients != 64 || q.Request.MaxNumSeqs != 256 {
		t.Errorf("ParseOptions(concurrency 64, max_num_seqs 256) = clients %d, max_num_seqs %d, %v; want 64 and 256", q.Request.Clients, q.Request.MaxNumSeqs, err)
	}
	r := DefaultRequest()
	r.Model, r.Slice, r.Clients = lookup(t, "llama3-8b"), slice(t, "v6e-8"), 8
	var fe *FieldError
	if _, err := NewRequest(r); !errors.As(err, &fe) || fe.Field != "concurrency" {
		t.Errorf("NewRequest(clients 8, no max_num_seqs) = %v, want a FieldError on concurrency", err)
	}
}

// TestClientsUnderCap: 64 clients against max_num_seqs 256 run 64
// sequences: the latencies and throughput of 64 sequences with no cap
// given, no queue, while the memory is sized for the 256 the server is
// started with (vLLM sizes its buffers by max_num_seqs).
func TestClientsUnderCap(t *testing.T) {
	got := Estimate(clientsRequest(t, 256, 64), 8, 1)
	want := Estimate(clientsRequest(t, 0, 0), 8, 1)
	if got.ITL != want.ITL || got.TTFT != want.TTFT || got.TokensPerSecond != want.TokensPerSecond || got.Preempts != want.Preempts {
		t.Errorf("64 clients under max_num_seqs 256: ITL %v, TTFT %v, %.0f tok/s, preempts %v; 64 sequences: %v, %v, %.0f, %v",
			got.ITL, got.TTFT, got.TokensPerSecond, got.Preempts, want.ITL, want.TTFT, want.TokensPerSecond, want.Preempts)
	}
	if got.SeqsEach != 256 || got.Running() != 64 || got.Concurrency != 64 || got.QueueWait != 0 {
		t.Errorf("SeqsEach %d, Running %d, Concurrency %d, QueueWait %v; want 256, 64, 64, 0", got.SeqsEach, got.Running(), got.Concurrency, got.QueueWait)
	}
	if full := Estimate(clientsRequest(t, 256, 0), 8, 1); got.Memory.Activations != full.Memory.Activations || got.Memory.BlockSize != full.Memory.BlockSize {
		t.Errorf("activations %v, pages of %d; the 256-sequence server's %v, %d", got.Memory.Activations, got.Memory.BlockSize, full.Memory.Activations, full.Memory.BlockSize)
	}
}

// TestClientsQueue: 64 clients against max_num_seqs 16 run 16 at once
// and queue the rest. The simulation (the second implementation: vLLM's
// scheduler step by step, the queue its waiting list) shows it in the
// TTFT: its median, past the first wave of clients, is within 10 % of
// the plan's TTFT plus its closed-loop wait (queueWait), which costs a
// request's time with the decode-only ITL and a lone prompt's TTFT where
// the simulation mixes prompt chunks into the decode steps; and far
// above the TTFT of 16 clients, who never wait.
func TestClientsQueue(t *testing.T) {
	r := clientsRequest(t, 16, 64)
	l := Estimate(r, 8, 1)
	if l.Running() != 16 || l.QueueWait <= 0 {
		t.Fatalf("Running %d, QueueWait %v; want 16 and a wait", l.Running(), l.QueueWait)
	}
	sim := func(clients int) SimResult {
		t.Helper()
		s, err := Simulate(r, l, SimOptions{Load: Load{Mix: r.Lengths(), Concurrency: clients, Requests: 320}}, rand.New(rand.NewPCG(1, 0)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	queued, alone := sim(64), sim(16)
	plan, _ := r.Seen(l)
	if rel := math.Abs(queued.TTFT.P50.Seconds()/plan.Seconds() - 1); rel > 0.1 {
		t.Errorf("64 clients, 16 running: simulated TTFT p50 %v, the plan's TTFT at the wait %v: %.0f%% apart, want within 10%%", queued.TTFT.P50, plan, 100*rel)
	}
	if queued.TTFT.Mean < 10*alone.TTFT.Mean || alone.TTFT.Mean > time.Second {
		t.Errorf("simulated TTFT mean %v with 64 clients, %v with 16: want the queue's far above", queued.TTFT.Mean, alone.TTFT.Mean)
	}
}
