package inference

import (
	"strings"
	"testing"
	"time"

	"shardlab/model"
)

// TestInChipAssumedFree: the collectives between a TPU7x chip's two
// devices are not costed (no rate for its die-to-die link is in package
// hw), and every plan whose replicas span a chip's devices says so, with
// what they carry. By hand, Llama 3 8B (32 layers, d_model 4096) at TP 2
// on tpu7x-8, max_num_seqs 64 a replica: 64 all-reduces a step; a decode
// step's is 64 × 4096 × 2 B = 512 KiB, of which each of 2 devices sends
// 2·(2−1)/2 = 1 times, so 64 × 512 KiB = 32 MiB; a 4096-token chunk's
// 4096 × 4096 × 2 B = 32 MiB, 64 × 32 MiB = 2 GiB. Its all-reduce time is
// 0, the ICI ring of one chip. Under an ITL SLO of 12.7 ms TP 2 × DP 4 is
// chosen over TP 1 × DP 8 (ITL 15.6 ms), which needs no in-chip
// collective, and the warning says the ranking leaves them out (a fixed
// TP 2 is ranked against nothing). TP 1, and v5p's one device a chip,
// have no in-chip part and no warning.
func TestInChipAssumedFree(t *testing.T) {
	m, _ := model.Lookup("llama3-8b")
	for _, c := range []struct {
		tpu  string
		tp   int
		slo  time.Duration
		want []string // "" none: no warning
	}{
		{"tpu7x-8", 2, 0, []string{"at TP 2 each of a step's 64 all-reduces", "2 devices of a tpu7x chip", "32.0 MiB a device in a decode step of 64 sequences", "2.00 GiB in a prompt chunk of 4096 tokens", "64 latencies a step"}},
		{"tpu7x-8", 0, 12700 * time.Microsecond, []string{"at TP 2", "TP 2 ranks above TP 1, whose replicas need none (ITL 11.7 ms against 15.6 ms"}},
		{"tpu7x-8", 1, 0, nil},
		{"v5p-8", 2, 0, nil},
	} {
		r := DefaultRequest()
		r.Model, r.Slice, r.Concurrency, r.MaxNumSeqs, r.TP, r.ITLSLO = m, slice(t, c.tpu), 0, 64, c.tp, c.slo
		r.MemoryUtilization = 0.92
		r, err := NewRequest(r)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Search(r)
		if err != nil {
			t.Fatalf("%s TP %d: %v", c.tpu, c.tp, err)
		}
		var got string
		for _, w := range p.Warnings {
			if strings.HasPrefix(w, "in-chip collectives assumed free") {
				got = w
			}
		}
		if (got != "") != (c.want != nil) {
			t.Errorf("%s TP %d: in-chip warning %q, want one: %v", c.tpu, p.Best.TP, got, c.want != nil)
		}
		for _, s := range c.want {
			if !strings.Contains(got, s) {
				t.Errorf("%s TP %d: %q lacks %q", c.tpu, p.Best.TP, got, s)
			}
		}
		if rc := newReplicaCost(r, p.Best.TP); inChipDevices(r, p.Best.TP) == p.Best.TP && rc.allReduce(4096) != 0 {
			t.Errorf("%s TP %d: all-reduce within one chip costs %v: drop the assumed-free warning if it is costed", c.tpu, p.Best.TP, rc.allReduce(4096))
		}
	}
}
