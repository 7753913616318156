package plan

import (
	"sync"

	"shardlab/cost"
)

// Cache keeps the estimators a search costs its layouts with for the
// searches after it that share it (Request.Cache). What an estimator
// remembers does not depend on the request (cost.Estimator: the simulated
// pipeline schedules, the MXU efficiency of each GEMM shape, a model's
// layer shapes and stage parameters, each under its full key), so the
// searches of a budget sweep, over many slices and generations, simulate
// and size each once; the plan is the same with or without a cache. The
// zero value is an empty cache. It is safe for concurrent use: a search
// takes the estimators it needs and gives them back when it is done.
type Cache struct {
	mu   sync.Mutex
	ests []*cost.Estimator
}

// take returns n estimators: c's, then new ones (all new when c is nil).
func (c *Cache) take(n int) []*cost.Estimator {
	out := make([]*cost.Estimator, n)
	if c != nil {
		c.mu.Lock()
		k := max(len(c.ests)-n, 0)
		copy(out, c.ests[k:])
		c.ests = c.ests[:k]
		c.mu.Unlock()
	}
	for i := range out {
		if out[i] == nil {
			out[i] = cost.NewEstimator()
		}
	}
	return out
}

// give returns ests to c (nothing when c is nil).
func (c *Cache) give(ests []*cost.Estimator) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.ests = append(c.ests, ests...)
	c.mu.Unlock()
}
