package infeed

import (
	"time"
)

// keepsUp reports whether the host's vCPUs keep up with the chips: its
// preprocessing does not bound the step (the MXU, the HBM copy or the
// outfeed does, which more vCPUs do not change).
func (r Result) keepsUp() bool { return r.Bound() != HostBound }

// MinVCPUs finds the fewest vCPUs, up to limit, with which the host keeps
// up (Bound is not HostBound; more workers never slow production). It
// doubles the count from the least a placement can run with until the
// host keeps up, then bisects between the last two counts, so it never
// simulates many more workers than the answer needs: a run's cost grows
// with its workers, and the answer is usually far below limit. It returns
// the result at that count; ok is false when even limit vCPUs leave the
// host the bound, and the result is then the one at limit.
func MinVCPUs(c Config, limit int) (n int, r Result, ok bool, err error) {
	if limit < 1 {
		return 0, Result{}, false, bad("vCPU limit", limit, "at least 1")
	}
	lo := 1
	if c.Placement == Local {
		lo = min(c.NUMANodes, limit) // local placement needs a worker on every node
	}
	return minVCPUs(c, lo, limit)
}

// minVCPUs is MinVCPUs searching from lo vCPUs.
func minVCPUs(c Config, lo, limit int) (n int, r Result, ok bool, err error) {
	try := func(v int) (Result, error) {
		c.VCPUs = v
		return Run(c)
	}
	// Invariant: counts below lo leave the host the bound; hi keeps up
	// once found.
	hi := lo
	var best Result
	for {
		res, err := try(hi)
		if err != nil {
			return 0, Result{}, false, err
		}
		if res.keepsUp() {
			best = res
			break
		}
		if hi == limit {
			return limit, res, false, nil
		}
		lo, hi = hi+1, min(2*hi, limit)
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		res, err := try(mid)
		if err != nil {
			return 0, Result{}, false, err
		}
		if res.keepsUp() {
			hi, best = mid, res
		} else {
			lo = mid + 1
		}
	}
	return hi, best, true, nil
}

// Sweep is the fewest vCPUs with which the host keeps up with the chips.
type Sweep struct {
	VCPUs int
	// Found is false when even the most vCPUs tried leave the host the
	// bound; VCPUs is then that count.
	Found  bool
	Result Result // the run at VCPUs
}

// SweepVCPUs runs c, and finds the fewest vCPUs with which the host keeps
// up: at most c's when the run keeps up, else more, up to limit.
// Searching on the run's side of c.VCPUs makes the two agree where runs
// at different counts are not ordered: under jitter each count draws its
// own example costs.
func SweepVCPUs(c Config, limit int) (Result, Sweep, error) {
	r, err := Run(c)
	if err != nil {
		return Result{}, Sweep{}, err
	}
	var s Sweep
	switch {
	case r.keepsUp():
		// the search ends at c.VCPUs, whose run is r, at the latest
		s.VCPUs, s.Result, s.Found, err = MinVCPUs(c, c.VCPUs)
	case c.VCPUs >= limit:
		s = Sweep{VCPUs: c.VCPUs, Result: r}
	default:
		s.VCPUs, s.Result, s.Found, err = minVCPUs(c, c.VCPUs+1, limit)
	}
	return r, s, err
}

// PerChipStep is the producer period of one chip fed by v vCPUs of its own
// with no jitter: ceil(batch / v) examples per worker, each ExampleCost.
// Tests use it as the queueing-theory answer.
func PerChipStep(batch, v int, example time.Duration) time.Duration {
	return time.Duration((batch+v-1)/v) * example
}
