package inference

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestSpread: n sequences over dp replicas, the busiest first, the
// replicas with none left out; the shares add up to n on dp replicas
// at most.
func TestSpread(t *testing.T) {
	for _, c := range []struct {
		n, dp int
		want  []Share
	}{
		{1, 8, []Share{{1, 1}}},
		{3, 8, []Share{{3, 1}}},
		{8, 8, []Share{{8, 1}}},
		{10, 8, []Share{{2, 2}, {6, 1}}},
		{16, 8, []Share{{8, 2}}},
		{5, 1, []Share{{1, 5}}},
	} {
		got := Spread(c.n, c.dp)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Spread(%d, %d) = %v, want %v", c.n, c.dp, got, c.want)
		}
		n, replicas := 0, 0
		for _, g := range got {
			n, replicas = n+g.Replicas*g.Seqs, replicas+g.Replicas
		}
		if n != c.n || replicas > c.dp {
			t.Errorf("Spread(%d, %d): %d sequences on %d replicas", c.n, c.dp, n, replicas)
		}
	}
}

// oneReplicaRequest is Llama 3 8B on a v6e-8 at concurrency clients (0:
// none given) beside max_num_seqs seqs (0: none), 1024 + 1024 tokens.
func oneReplicaRequest(t *testing.T, concurrency, seqs, clients int) Request {
	t.Helper()
	r := DefaultRequest()
	r.Model, r.Slice, r.MaxModelLen = lookup(t, "llama3-8b"), slice(t, "v6e-8"), 4096
	r.Concurrency, r.MaxNumSeqs, r.Clients = concurrency, seqs, clients
	r, err := NewRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestOneClientTPOverDP (review178 #2): one closed-loop client gets at
// most one token a step of the replica it is on, whatever the replicas
// beside it. On a v6e-8, DP 8 of TP 1 leaves seven replicas idle, so it
// must not rank above TP 8, whose one replica steps faster; and its
// throughput is one sequence over its ITL, not eight.
func TestOneClientTPOverDP(t *testing.T) {
	r := oneReplicaRequest(t, 1, 0, 0)
	dp8, tp8 := Estimate(r, 1, 8), Estimate(r, 8, 1)
	if want := 1 / dp8.ITL.Seconds(); math.Abs(dp8.TokensPerSecond/want-1) > 1e-12 {
		t.Errorf("1 client on TP 1 × DP 8: %.1f tok/s, want 1/ITL = 1/%v = %.1f", dp8.TokensPerSecond, dp8.ITL, want)
	}
	if dp8.PerChip >= tp8.PerChip {
		t.Errorf("1 client: TP 1 × DP 8 %.1f tok/s a chip, TP 8 × DP 1 %.1f; want TP 8 ahead", dp8.PerChip, tp8.PerChip)
	}
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	rank := map[[2]int]int{}
	for i, l := range p.Layouts {
		rank[[2]int{l.TP, l.DP}] = i
	}
	if rank[[2]int{1, 8}] < rank[[2]int{8, 1}] {
		t.Errorf("1 client: Search ranks TP 1 × DP 8 (#%d) above TP 8 × DP 1 (#%d); best TP %d × DP %d",
			rank[[2]int{1, 8}]+1, rank[[2]int{8, 1}]+1, p.Best.TP, p.Best.DP)
	}
}

// TestThroughputHandSum: c sequences on DP 8 of TP 1 spread c mod 8
// replicas at ⌈c/8⌉ and the others at ⌊c/8⌋; the throughput is each
// replica's sequences over its own ITL, summed by hand here replica by
// replica, each replica costed alone (DP 1) at its share. With clients
// beside max_num_seqs the running sequences are counted, the queued
// ones not.
func TestThroughputHandSum(t *testing.T) {
	const dp = 8
	for _, c := range []struct{ concurrency, seqs, clients int }{
		{1, 0, 0}, {3, 0, 0}, {10, 0, 0}, {13, 0, 0}, {16, 0, 0},
		{4, 16, 4}, {21, 16, 21}, {100, 8, 100}, {300, 32, 300},
	} {
		l := Estimate(oneReplicaRequest(t, c.concurrency, c.seqs, c.clients), 1, dp)
		n := c.concurrency
		if c.seqs > 0 {
			n = min(c.clients, c.seqs*dp)
		}
		hand := 0.0
		for i := range dp {
			share := n / dp
			if i < n%dp {
				share++
			}
			if share == 0 {
				continue
			}
			one := Estimate(oneReplicaRequest(t, share, c.seqs, min(share, c.clients)), 1, 1)
			hand += float64(share) / one.ITL.Seconds()
		}
		if math.Abs(l.TokensPerSecond/hand-1) > 1e-9 {
			t.Errorf("concurrency %d (max_num_seqs %d, clients %d) on DP %d: %.2f tok/s, want the replicas' sum %.2f",
				c.concurrency, c.seqs, c.clients, dp, l.TokensPerSecond, hand)
		}
	}
}

// TestSimulateSpread: the simulation spreads a closed loop's clients as
// Estimate does. One client on DP 8 serves exactly what it serves on
// DP 1 (the seven idle replicas add nothing), and 10 clients on DP 8
// (two replicas of 2, six of 1) agree with the estimate within 1 %: a
// request's time there is its prefill plus its decode steps, and the
// estimate's decode-only ITL leaves the prefill out (a TTFT of about
// 25 ms beside 1024 steps of about 18 ms, 0.1 %).
func TestSimulateSpread(t *testing.T) {
	r := oneReplicaRequest(t, 1, 0, 0)
	sim := func(r Request, l Layout, clients, requests int) SimResult {
		t.Helper()
		s, err := Simulate(r, l, SimOptions{Load: Load{Mix: r.Lengths(), Concurrency: clients, Requests: requests}}, rand.New(rand.NewPCG(3, 0)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	dp8, dp1 := sim(r, Estimate(r, 1, 8), 1, 12), sim(r, Estimate(r, 1, 1), 1, 12)
	if dp8.TokensPerSecond != dp1.TokensPerSecond || dp8.Requests != 12 || dp8.Idle != 7 {
		t.Errorf("1 client, 12 requests: DP 8 %.1f tok/s (%d requests on the replica, %d idle), DP 1 %.1f; want equal, 12, 7 idle",
			dp8.TokensPerSecond, dp8.Requests, dp8.Idle, dp1.TokensPerSecond)
	}
	r = oneReplicaRequest(t, 10, 0, 0)
	l := Estimate(r, 1, 8)
	s := sim(r, l, 10, 40)
	if rel := math.Abs(s.TokensPerSecond/l.TokensPerSecond - 1); rel > 0.01 || s.Idle != 0 {
		t.Errorf("10 clients on DP 8: simulated %.0f tok/s, estimated %.0f (%.1f%% apart, want within 1%%); %d idle, want 0",
			s.TokensPerSecond, l.TokensPerSecond, 100*rel, s.Idle)
	}
}

// TestLoadPhrase (review178 #4): clients beside max_num_seqs are called
// clients, with the sequences of them that run; the reason says so.
func TestLoadPhrase(t *testing.T) {
	for _, c := range []struct {
		concurrency, seqs, clients int
		want                       string
	}{
		{1, 0, 0, "1 concurrent sequence"},
		{10, 0, 0, "10 concurrent sequences"},
		{0, 8, 0, "64 concurrent sequences"},
		{0, 8, 4, "4 clients, 4 running"},
		{0, 8, 256, "256 clients, 64 running"},
	} {
		r := oneReplicaRequest(t, c.concurrency, c.seqs, c.clients)
		if got := Estimate(r, 1, 8).Load(); got != c.want {
			t.Errorf("concurrency %d, max_num_seqs %d, clients %d on DP 8: Load %q, want %q", c.concurrency, c.seqs, c.clients, got, c.want)
		}
	}
	p, err := Search(oneReplicaRequest(t, 0, 8, 256))
	if err != nil {
		t.Fatal(err)
	}
	load := p.Best.Load()
	if !strings.HasPrefix(load, "256 clients, ") || !strings.Contains(p.Reasons[0], "at "+load) {
		t.Errorf("256 clients, max_num_seqs 8 (TP %d × DP %d): reason %q, Load %q; want the reason at 256 clients and those running", p.Best.TP, p.Best.DP, p.Reasons[0], load)
	}
}

// TestIdleReplicasWarned: a layout fixed at more replicas than its
// sequences is warned of, naming the idle ones; one that fills its
// replicas is not.
func TestIdleReplicasWarned(t *testing.T) {
	for _, c := range []struct {
		concurrency int
		want        string
	}{{1, "7 of the 8 replicas are idle at 1 concurrent sequence"}, {8, ""}} {
		r := oneReplicaRequest(t, c.concurrency, 0, 0)
		r.TP, r.DP = 1, 8
		p, err := Search(r)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, w := range p.Warnings {
			if strings.Contains(w, "replicas are idle") {
				got = w
			}
		}
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("concurrency %d on TP 1 × DP 8: warning %q, want %q", c.concurrency, got, c.want)
		}
	}
}

// TestLayoutLineClients (review182 #3): with 3 clients on DP 2 the
// header counts all 3 running and the layout line gives the busiest
// replica's ⌈3/2⌉ = 2; it must say the 2 are a replica's, as it says of
// the sequences without clients, so that the two lines do not read as
// disagreeing.
func TestLayoutLineClients(t *testing.T) {
	r := oneReplicaRequest(t, 3, 16, 3)
	r.TP, r.DP = 4, 2
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := p.WriteText(&b, "vllm serve"); err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "layout: ") {
			line = l
		}
	}
	if want := ", 2 sequences per replica running at once, of max_num_seqs 16"; !strings.HasSuffix(line, want) {
		t.Errorf("3 clients on TP 4 × DP 2, max_num_seqs 16: layout line %q, want it to end %q", line, want)
	}
	if !strings.Contains(b.String(), "(3 clients, 3 running)") {
		t.Errorf("3 clients on DP 2: header without (3 clients, 3 running):\n%s", b.String())
	}
}

// TestWriteSimPlurals (review182 #4): one client on TP 1 × DP 8 is "1
// concurrent client", and 10 clients asked for 3 requests leave the
// busiest replica's share 1 request: "served 1 request", not "1
// requests". Question.WriteSim is what the CLI and the web page print.
func TestWriteSimPlurals(t *testing.T) {
	for _, c := range []struct {
		clients, requests int
		want              []string
	}{
		{1, 20, []string{"fixed 1024+1024 lengths, 1 concurrent client)", "(7 with no client)"}},
		{10, 3, []string{"10 concurrent clients)", " served 1 request, "}},
	} {
		o := DefaultOptions()
		o.Model, o.TPU, o.TP, o.DP = "llama3-8b", "v6e-8", 1, 8
		o.Concurrency, o.NumRequests = c.clients, c.requests
		q, err := ParseOptions(o)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Search(q.Request)
		if err != nil {
			t.Fatal(err)
		}
		sim, err := Simulate(q.Request, p.Best, SimOptions{Load: Load{Mix: q.Mix, Concurrency: p.Best.Concurrency, Requests: q.Requests}}, rand.New(rand.NewPCG(q.Seed, 0)))
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := q.WriteSim(&b, sim, p.Best.Concurrency); err != nil {
			t.Fatal(err)
		}
		for _, want := range c.want {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%d clients, %d requests on DP 8: no %q in\n%s", c.clients, c.requests, want, b.String())
			}
		}
	}
}
