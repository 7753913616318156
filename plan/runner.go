package plan

import (
	"runtime"
	"sync"
	"sync/atomic"

	"shardlab/cost"
	"shardlab/mesh"
)

// meshBatch is how many meshes are costed before their outcomes are
// merged, which bounds the memory the outcomes hold.
const meshBatch = 256

// run costs the meshes on Request.Workers goroutines (0: one per CPU),
// merges their outcomes in order and finishes the search.
func (s *searcher) run(meshes []mesh.Mesh) {
	r := s.runner(len(meshes))
	for _, m := range meshes {
		r.add(m)
	}
	r.done()
}

// runner costs meshes as they come, a batch at a time, so that a search
// never holds them all: the outcomes of a batch are merged in order
// before the next batch starts, with the bars they raised.
type runner struct {
	s       *searcher
	workers []*worker
	batch   []mesh.Mesh
	outs    []outcome
	bufs    *batchBufs // batch's and outs' arrays, the cache's (Cache.takeBufs)
}

// runner starts a run of at most n meshes (0: not known) on
// Request.Workers goroutines.
func (s *searcher) runner(n int) *runner {
	w := s.req.Workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	if n > 0 {
		w = min(w, n)
	}
	r := &runner{s: s, workers: make([]*worker, max(w, 1)), bufs: s.req.Cache.takeBufs()}
	r.batch, r.outs = r.bufs.batch[:0], r.bufs.outs
	for i, est := range s.req.Cache.take(len(r.workers)) {
		job := s.req.job()
		r.workers[i] = &worker{req: s.req, job: job, cur: job, est: est, keep: s.keep, bulk: s.bulk, bars: bars{keep: s.keep}}
	}
	return r
}

// add queues m, costing the batch once it is full.
func (r *runner) add(m mesh.Mesh) {
	r.batch = append(r.batch, m)
	if len(r.batch) == meshBatch {
		r.flush()
	}
}

// done costs what is queued and finishes the layouts the search keeps.
func (r *runner) done() {
	r.flush()
	r.s.finishBounded(r.workers[0])
	ests := make([]*cost.Estimator, len(r.workers))
	for i, w := range r.workers {
		ests[i] = w.est
	}
	r.s.req.Cache.give(ests)
	r.bufs.batch, r.bufs.outs = r.batch[:0], r.outs // as grown
	r.s.req.Cache.giveBufs(r.bufs)
}

// flush costs the queued meshes and merges their outcomes in order.
func (r *runner) flush() {
	if len(r.outs) < len(r.batch) {
		r.outs = make([]outcome, cap(r.batch))
	}
	s, batch, outs := r.s, r.batch, r.outs
	for _, w := range r.workers {
		w.bars.copyFrom(&s.bars)
		w.arena, w.rejects = w.arena[:0], w.rejects[:0]
	}
	if len(r.workers) == 1 {
		for i, m := range batch {
			outs[i] = s.layout(r.workers[0], m)
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for _, w := range r.workers {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < len(batch); i = int(next.Add(1) - 1) {
					outs[i] = s.layout(w, batch[i])
				}
			})
		}
		wg.Wait()
	}
	for i, m := range batch {
		s.merge(outs[i], m)
		outs[i] = outcome{}
	}
	r.batch = r.batch[:0]
}
