package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"shardlab/export"
)

// TestServingClients: the serving page takes concurrency (the clients)
// beside max_num_seqs (the scheduler's cap), as tpu-recipes' Llama 3.3
// 70B benchmark runs 64 clients against --max-num-seqs 256 (review171
// #4); the serve line keeps max_num_seqs as given and the simulation
// serves the clients. With more clients than the cap, they queue: the
// simulated TTFT is above the 16-client run's.
func TestServingClients(t *testing.T) {
	h := New(testConfig)
	const q = "/download/serving.json?model=llama3-70b&tpu=v6e-8&tensor_parallel_size=8&max_model_len=2048&max_num_batched_tokens=512&gpu_memory_utilization=0.98&prompt_len=1000&output_len=1000&num_requests=128"
	type answer struct {
		Command    string            `json:"vllm_serve_command"`
		Layout     export.LayoutJSON `json:"layout"`
		Simulation *export.SimJSON   `json:"simulation"`
	}
	serve := func(query string) answer {
		t.Helper()
		code, body := get(t, h, q+query)
		var j answer
		if err := json.Unmarshal([]byte(body), &j); code != http.StatusOK || err != nil || j.Simulation == nil {
			t.Fatalf("GET serving.json%s = %d, %v: %.300s", query, code, err, body)
		}
		return j
	}
	under := serve("&max_num_seqs=256&concurrency=64")
	if !strings.Contains(under.Command, " --max-num-seqs 256 ") {
		t.Errorf("64 clients, max_num_seqs 256: serve line %q, want --max-num-seqs 256", under.Command)
	}
	queued, alone := serve("&max_num_seqs=16&concurrency=64"), serve("&max_num_seqs=16&concurrency=16")
	if l := under.Layout; l.RunningPerReplica != 64 || l.SeqsPerReplica != 256 || l.QueueWait != nil {
		t.Errorf("64 clients, max_num_seqs 256: layout runs %d of %d a replica, queue_wait_s present %v; want 64 of 256, none", l.RunningPerReplica, l.SeqsPerReplica, l.QueueWait != nil)
	}
	if l := queued.Layout; l.QueueWait == nil || l.TTFTSeen == nil || *l.TTFTSeen < *l.QueueWait {
		t.Errorf("64 clients, max_num_seqs 16: queue_wait_s and ttft_seen_s %s; want a wait, within the TTFT seen", mustJSON(t, l))
	}
	if l := queued.Layout; l.Concurrency != 16 || l.Clients != 64 {
		t.Errorf("64 clients, max_num_seqs 16 on DP 1: concurrency_sequences %d, clients %d; want the 16 that run and the 64 clients", l.Concurrency, l.Clients)
	}
	if l := under.Layout; l.Concurrency != 64 || l.Clients != 64 {
		t.Errorf("64 clients, max_num_seqs 256: concurrency_sequences %d, clients %d; want 64 and 64", l.Concurrency, l.Clients)
	}
	if queued.Simulation.TTFT.Mean < 2*alone.Simulation.TTFT.Mean {
		t.Errorf("max_num_seqs 16: simulated TTFT mean %g s with 64 clients, %g s with 16: want the queue's above", queued.Simulation.TTFT.Mean, alone.Simulation.TTFT.Mean)
	}
}

// mustJSON is v as JSON, for a failure's message.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestServingPageClients (review178 #4): the page's summary calls 64
// clients against max_num_seqs 16 what they are, 64 clients of which 16
// run, not 64 concurrent sequences, and says why its TTFT is long: the
// queue wait the text prints (inference.Layout.Queue).
func TestServingPageClients(t *testing.T) {
	h := New(testConfig)
	const q = "/serving?model=llama3-70b&tpu=v6e-8&tensor_parallel_size=8&max_model_len=2048&max_num_batched_tokens=512&gpu_memory_utilization=0.98&prompt_len=1000&output_len=1000&num_requests=128"
	code, body := get(t, h, q+"&max_num_seqs=16&concurrency=64")
	if code != http.StatusOK {
		t.Fatalf("GET %s = %d: %.300s", q, code, body)
	}
	for _, want := range []string{"64 clients, 16 running (16 a replica, of max_num_seqs 16)", `id="serving-queue">64 clients, 16 a replica running at once: the rest wait in the scheduler`} {
		if !strings.Contains(body, want) {
			t.Errorf("serving page with 64 clients, max_num_seqs 16: no %q", want)
		}
	}
	if strings.Contains(body, "64 concurrent sequences") {
		t.Errorf("serving page with 64 clients, max_num_seqs 16: says 64 concurrent sequences, of which 16 run")
	}
	if code, body := get(t, h, q+"&max_num_seqs=256&concurrency=64"); code != http.StatusOK || strings.Contains(body, `id="serving-queue"`) {
		t.Errorf("64 clients under max_num_seqs 256: %d, queue line present %v; want 200 and none", code, strings.Contains(body, `id="serving-queue"`))
	}
}

// TestServingPageAttentionDP (review182 #1): under attention data
// parallelism max_num_seqs is each vLLM scheduler's (tpu-inference's
// DPScheduler, one a rank), so the summary gives the replica's 128 as
// 16 schedulers of max_num_seqs 8, as the text's layout line does
// (inference.Layout.Admits), beside a serve line that sets
// --max-num-seqs 8; it must not call the 128 max_num_seqs.
func TestServingPageAttentionDP(t *testing.T) {
	h := New(testConfig)
	const q = "/serving?model=deepseek3-671b&tpu=tpu7x-16&max_num_seqs=8&concurrency=200&num_requests=200"
	code, body := get(t, h, q)
	if code != http.StatusOK {
		t.Fatalf("GET %s = %d: %.300s", q, code, body)
	}
	for _, want := range []string{"200 clients, 128 running (128 a replica, of 128 (max_num_seqs 8 on each of 16 schedulers))", " --max-num-seqs 8 "} {
		if !strings.Contains(body, want) {
			t.Errorf("serving page, deepseek3-671b on tpu7x-16 (16 attention-DP ranks), max_num_seqs 8, 200 clients: no %q", want)
		}
	}
	if strings.Contains(body, "of max_num_seqs 128") {
		t.Errorf("serving page, 16 schedulers of max_num_seqs 8: calls the replica's 128 max_num_seqs")
	}
}

// TestServingRateBesideSeqs (review182 #5): max_num_seqs beside a
// request rate is refused as concurrency beside a rate is, asking for
// one of the two by the form's label, not for 0 (which max_num_seqs's
// field refuses) under a raw key.
func TestServingRateBesideSeqs(t *testing.T) {
	h := New(testConfig)
	code, body := get(t, h, "/serving?model=llama3-8b&tpu=v6e-8&request_rate=2&max_num_seqs=8")
	if want := "want no Request rate beside it: give one of the two (a rate sets max_num_seqs)"; code != http.StatusBadRequest || !strings.Contains(body, want) {
		t.Errorf("GET /serving with request_rate 2 and max_num_seqs 8 = %d, want 400 and %q", code, want)
	}
	if strings.Contains(body, "when request_rate is set") {
		t.Errorf("GET /serving with request_rate 2 and max_num_seqs 8: still asks for 0 under the raw key request_rate")
	}
}
