package plan

import (
	"sync"

	"shardlab/cost"
	"shardlab/mesh"
)

// Cache keeps the estimators a search costs its layouts with for the
// searches after it that share it (Request.Cache). What an estimator
// remembers does not depend on the request (cost.Estimator: the simulated
// pipeline schedules, the MXU efficiency of each GEMM shape, a model's
// layer shapes and stage parameters, each under its full key), so the
// searches of a budget sweep, over many slices and generations, simulate
// and size each once; the plan is the same with or without a cache. It
// keeps the searches' batch buffers too (Cache.takeBufs). The
// zero value is an empty cache. It is safe for concurrent use: a search
// takes the estimators it needs and gives them back when it is done.
type Cache struct {
	mu   sync.Mutex
	ests []*cost.Estimator
	// ici holds, by chips and searched axes, the in-slice factorizations
	// ordered by pipeline degree (byPipeline), shared read only: a sweep
	// plans each slice size at every slice count.
	ici map[iciKey][][]int
	// bufs holds runners' batch buffers for the searches after theirs: a
	// sweep runs more than a thousand searches, and each batch's meshes
	// and outcomes take about a quarter of a megabyte to allocate and
	// clear. A sync.Pool: the garbage collector may drop what no search
	// holds.
	bufs sync.Pool
}

// batchBufs is a runner's queue of meshes and their outcomes, at most
// meshBatch long, grown as the runner's batches need (a plan of one layout
// allocates for one, not for meshBatch: a quarter of a megabyte a search,
// which under the web server's load the garbage collector fell behind): a
// runner leaves the queue empty and every outcome zero (runner.flush), so
// the next runner may take them as new.
type batchBufs struct {
	batch []mesh.Mesh
	outs  []outcome
}

// takeBufs returns c's spare buffers, or new empty ones (always new when
// c is nil).
func (c *Cache) takeBufs() *batchBufs {
	if c != nil {
		if b, ok := c.bufs.Get().(*batchBufs); ok {
			return b
		}
	}
	return &batchBufs{}
}

// giveBufs returns b to c (nothing when c is nil).
func (c *Cache) giveBufs(b *batchBufs) {
	if c != nil {
		c.bufs.Put(b)
	}
}

// iciKey is what a slice's ordered factorizations depend on.
type iciKey struct {
	chips int
	free  [mesh.NumAxes]bool
}

// iciFactorizations is byPipeline(factorizationsOver(chips, free)), from
// c when it has them (read only), worked out and kept otherwise (not kept
// when c is nil).
func (c *Cache) iciFactorizations(chips int, free []bool) [][]int {
	if c == nil {
		return byPipeline(factorizationsOver(chips, free))
	}
	k := iciKey{chips: chips}
	copy(k.free[:], free)
	c.mu.Lock()
	fs, ok := c.ici[k]
	c.mu.Unlock()
	if ok {
		return fs
	}
	fs = byPipeline(factorizationsOver(chips, free))
	c.mu.Lock()
	if c.ici == nil {
		c.ici = map[iciKey][][]int{}
	}
	c.ici[k] = fs
	c.mu.Unlock()
	return fs
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
