package inference

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestLatencyRunsArePercentiles holds the runs a simulation keeps its
// inter-token latencies in to percentiles of the same latencies one by
// one (the second implementation): random latencies, with long runs of
// equal ones as decode steps make, and values that come back later.
func TestLatencyRunsArePercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 0))
	for _, n := range []int{0, 1, 2, 3, 10, 99, 100, 101, 1000, 4097, 100000} {
		var l latencyRuns
		v := make([]time.Duration, 0, n)
		for len(v) < n {
			d := time.Duration(rng.IntN(40)) * time.Millisecond
			for range min(1+rng.IntN(200), n-len(v)) {
				l.add(d)
				v = append(v, d)
			}
		}
		got, want := l.percentiles(), percentiles(v)
		if got != want {
			t.Errorf("%d latencies: runs %+v, one by one %+v", n, got, want)
		}
		if n > 1000 && len(l.runs) > n/10 {
			t.Errorf("%d latencies kept in %d runs, want far fewer", n, len(l.runs))
		}
	}
}
