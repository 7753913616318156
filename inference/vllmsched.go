package inference

// vLLM's scheduler [v-sched] over the ranks of a replica [ti-dps].

import "slices"

// stepVLLM schedules one step as vLLM's scheduler does [v-sched], on
// each DP rank's scheduler in turn [ti-dps], and runs it.
func (s *Sim) stepVLLM() {
	sched, n := s.sched[:0], s.n[:0]
	defer func() { s.sched, s.n = sched[:0], n[:0] }()
	for i := range s.ranks {
		k := len(sched)
		sched, n = s.scheduleRank(&s.ranks[i], sched, n)
		s.ranks[i].seqs, s.ranks[i].tokens = len(sched)-k, 0
		for _, t := range n[k:] {
			s.ranks[i].tokens += t
		}
	}
	if len(sched) == 0 {
		return // everything was preempted; the next step admits again
	}
	s.run(s.batch(sched, n), sched, n)
	for i := range s.ranks {
		s.ranks[i].running = slices.DeleteFunc(s.ranks[i].running, func(q *sequence) bool { return q.emitted == q.output })
	}
}

// scheduleRank schedules one step of rank r as vLLM's scheduler does
// [v-sched]: its running requests first, then its waiting ones unless
// one was preempted, in its own token budget and max_num_seqs; it
// appends them and their tokens to sched and n.
func (s *Sim) scheduleRank(r *rank, sched []*sequence, n []int) ([]*sequence, []int) {
	budget := s.srv.MaxNumBatchedTokens
	preempted := false
	for i := 0; i < len(r.running) && budget > 0; {
		q := r.running[i]
		k := min(q.tokens()-q.computed, budget)
		for q != nil && ceilDiv(q.computed+k, s.srv.BlockSize)-q.pages > r.freePages {
			v := r.running[len(r.running)-1]
			r.running = r.running[:len(r.running)-1]
			s.preempt(r, v)
			preempted = true
			if v == q {
				q = nil
			}
		}
		if q == nil {
			break
		}
		s.allocate(r, q, k)
		sched, n = append(sched, q), append(n, k)
		budget -= k
		i++
	}
	for !preempted && len(r.waiting) > 0 && budget > 0 && len(r.running) < s.srv.MaxNumSeqs {
		q := r.waiting[0]
		k := min(q.tokens()-q.computed, budget)
		if ceilDiv(q.computed+k, s.srv.BlockSize)-q.pages > r.freePages {
			break
		}
		r.waiting = r.waiting[1:]
		r.running = append(r.running, q)
		s.allocate(r, q, k)
		sched, n = append(sched, q), append(n, k)
		budget -= k
	}
	return sched, n
}

// allocate gives q the pages of rank r for k more tokens.
func (s *Sim) allocate(r *rank, q *sequence, k int) {
	need := ceilDiv(q.computed+k, s.srv.BlockSize) - q.pages
	if need > 0 {
		q.pages += need
		r.freePages -= need
	}
}

// preempt frees q's pages and puts it at the front of its rank's waiting
// queue to recompute its tokens [v-sched].
func (s *Sim) preempt(r *rank, q *sequence) {
	r.freePages += q.pages
	q.pages, q.computed = 0, 0
	r.waiting = append([]*sequence{q}, r.waiting...)
	s.preemptions++
	s.last.Preempted = append(s.last.Preempted, q.id)
}
