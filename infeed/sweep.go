package infeed

import (
	"fmt"
	"time"
)

// Busy reports whether the run kept its chips busy: the steady-state step
// is within 1 % of what the MXU alone needs (parameter load plus compute),
// or what the outfeed drain allows if that is slower.
func (r Result) Busy() bool {
	floor := max(r.Config.ParamLoad+r.Config.Compute, r.Config.Drain)
	return r.StepTime <= floor+floor/100
}

// MinVCPUs finds the fewest vCPUs, up to limit, that keep the chips busy
// (more workers never slow production). It doubles the count from the
// least a placement can run with until the chips are busy, then bisects
// between the last two counts, so it never simulates many more workers
// than the answer needs: a run's cost grows with its workers, and the
// answer is usually far below limit. It returns the result at that count;
// ok is false when even limit vCPUs leave the chips waiting on input, and
// the result is then the one at limit.
func MinVCPUs(c Config, limit int) (n int, r Result, ok bool, err error) {
	if limit < 1 {
		return 0, Result{}, false, fmt.Errorf("infeed: vCPU limit %d: %w; want at least 1", limit, ErrInvalid)
	}
	try := func(v int) (Result, error) {
		c.VCPUs = v
		return Run(c)
	}
	lo := 1
	if c.Placement == Local {
		lo = min(c.NUMANodes, limit) // local placement needs a worker on every node
	}
	// Invariant: counts below lo leave the chips waiting; hi keeps them
	// busy once found.
	hi := lo
	var best Result
	for {
		res, err := try(hi)
		if err != nil {
			return 0, Result{}, false, err
		}
		if res.Busy() {
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
		if res.Busy() {
			hi, best = mid, res
		} else {
			lo = mid + 1
		}
	}
	return hi, best, true, nil
}

// PerChipStep is the producer period of one chip fed by v vCPUs of its own
// with no jitter: ceil(batch / v) examples per worker, each ExampleCost.
// Tests use it as the queueing-theory answer.
func PerChipStep(batch, v int, example time.Duration) time.Duration {
	return time.Duration((batch+v-1)/v) * example
}
