package inference

import (
	"fmt"
	"math/rand/v2"
	"time"

	"shardlab/unit"
)

// RunningSeqs is the sequences l's replicas run at once in all: the
// concurrency, or with clients beside max_num_seqs at most max_num_seqs
// a replica of them, the rest queued (spread over the replicas: Spread).
func (l Layout) RunningSeqs() int { return min(l.Concurrency, l.Running()*l.DP) }

// Load says what runs on l: with clients beside max_num_seqs
// (RunningEach), the clients and the sequences that run at once, the
// rest queued ("256 clients, 64 running"); else the sequences ("64
// concurrent sequences"). Reasons, text, JSON and the web page take it
// from here.
func (l Layout) Load() string {
	if l.RunningEach > 0 {
		return fmt.Sprintf("%s, %d running", unit.Plural(l.Concurrency, "client"), l.RunningSeqs())
	}
	return unit.Plural(l.Concurrency, "concurrent sequence")
}

// Admits says what a replica of l admits at once and the max_num_seqs
// that sets it: "max_num_seqs 16", or under attention data parallelism,
// where max_num_seqs is each scheduler's (SchedulerSeqs), "128
// (max_num_seqs 8 on each of 16 schedulers)". The text's layout line and
// the web page take it from here.
func (l Layout) Admits() string {
	if l.AttentionDP > 1 {
		return fmt.Sprintf("%d (max_num_seqs %d on each of %d schedulers)", l.SeqsEach, l.SchedulerSeqs(), l.AttentionDP)
	}
	return fmt.Sprintf("max_num_seqs %d", l.SeqsEach)
}

// Queue says, when l's clients are more than its replicas run at
// once, how long a request waits in the scheduler's queue (QueueWait);
// "" otherwise. The text and the web page take it from here.
func (l Layout) Queue() string {
	if l.QueueWait <= 0 {
		return ""
	}
	return fmt.Sprintf("%s, %d a replica running at once: the rest wait in the scheduler's queue about %v a request (closed loop: (clients a replica ÷ running − 1) × the time one is served, TTFT + output × ITL); the TTFT SLO takes TTFT plus this wait",
		unit.Plural(l.Concurrency, "client"), l.Running(), secs(l.QueueWait))
}

// Share is Replicas replicas each running Seqs sequences (Spread).
type Share struct{ Replicas, Seqs int }

// Spread is n sequences (or a closed loop's clients) over dp replicas
// as evenly as they go: n mod dp replicas take ⌈n/dp⌉ and the others
// ⌊n/dp⌋, none when n < dp; the busiest first, and the replicas left
// with none not listed. Estimate costs a layout's latencies at the
// busiest replica's share (⌈n/dp⌉, Layout.SeqsEach) and counts each
// replica's own sequences in its throughput.
func Spread(n, dp int) []Share {
	q, rem := n/dp, n%dp
	var out []Share
	if rem > 0 {
		out = append(out, Share{Replicas: rem, Seqs: q + 1})
	}
	if q > 0 {
		out = append(out, Share{Replicas: dp - rem, Seqs: q})
	}
	return out
}

// simulateShares simulates load on dp replicas that each run srv with
// steps of cost: one replica with its share of the rate and the
// requests, its throughput times dp; or, in a closed loop, the clients
// spread as Spread spreads them, one replica of each share simulated
// with the requests of its clients and its throughput times the
// replicas of the share (the replicas with no client serve none). The
// counts, the duration and the latencies are the busiest replica's, the
// one Estimate costs; the rng serves the shares in turn.
func simulateShares(srv Server, cost func(Batch) time.Duration, load Load, dp int, rng *rand.Rand, stop <-chan struct{}) (SimResult, error) {
	shares := []Share{{Replicas: dp}}
	if load.RequestRate == 0 && load.Concurrency > 0 {
		shares = Spread(load.Concurrency, dp)
	}
	var res SimResult
	tps, idle := 0.0, dp
	for i, g := range shares {
		one, err := simulateReplica(srv, shareLoad(load, dp, g.Seqs), cost, rng, stop)
		if err != nil {
			return SimResult{}, err
		}
		if i == 0 {
			res = one
		}
		tps += one.TokensPerSecond * float64(g.Replicas)
		idle -= g.Replicas
	}
	res.Replicas, res.TokensPerSecond, res.Idle = dp, tps, idle
	return res, nil
}

// shareLoad is one replica's part of load on dp replicas: clients of
// the closed loop's (0: the rate's share) and the requests of its
// clients, or of its share of the rate.
func shareLoad(load Load, dp, clients int) Load {
	if clients == 0 {
		load.Concurrency = ceilDiv(load.Concurrency, dp)
		load.RequestRate /= float64(dp)
		load.Requests = ceilDiv(load.Requests, dp)
		return load
	}
	load.Requests = ceilDiv(load.Requests*clients, load.Concurrency)
	load.Concurrency = clients
	return load
}

// simulateReplica runs one replica's simulation to its end, or until
// stop closes (ErrStopped).
func simulateReplica(srv Server, load Load, cost func(Batch) time.Duration, rng *rand.Rand, stop <-chan struct{}) (SimResult, error) {
	s, err := NewSim(srv, load, cost, rng)
	if err != nil {
		return SimResult{}, err
	}
	for s.Step() {
		select {
		case <-stop:
			return SimResult{}, ErrStopped
		default:
		}
	}
	return s.Result(), nil
}
