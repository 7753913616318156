package plan

import (
	"fmt"
	"math"
	"sort"

	"shardlab/collective"
	"shardlab/cost"
	"shardlab/hw"
	"shardlab/unit"
)

// choose makes the plan from the layouts the search kept: the tiers that
// compete (the rule order's, or the one of the layout asked), their best
// layouts ranked, and the reasons, warnings and checks that go with them.
func (s *searcher) choose() (Plan, error) {
	r := s.req
	r.Cache = nil // a plan does not hold the search's estimators
	ms := r.Multislice
	p := Plan{Request: r, Rejected: s.rejectedAll(), Evaluated: s.evaluated}
	p.Reasons = append(p.Reasons, note("", "%s", scopeReason(ms)))
	pool := s.pool(&p)
	chosen := s.ranked(pool)
	if len(chosen) == 0 {
		return p, &NoPlanError{On: ms.String(), Rejected: p.Rejected}
	}
	p.Top = chosen
	p.Best = chosen[0]
	s.explain(&p, pool)
	if r.ExampleCost > 0 {
		if err := p.checkInput(); err != nil {
			return p, err
		}
	}
	return p, nil
}

// rejectedAll counts every layout the search rejected or refused, by
// reason.
func (s *searcher) rejectedAll() map[cost.Reason]int {
	all := map[cost.Reason]int{}
	for _, m := range s.rejected {
		for k, v := range m {
			all[k] += v
		}
	}
	for k, v := range s.refusedDCN {
		all[k] += v
	}
	return all
}

// pool is the tiers whose layouts compete on speed: the rule order's
// (chooseTiers), or, for a layout asked with {mesh}, its own tier. It
// adds the reasons to p.
func (s *searcher) pool(p *Plan) []Tier {
	if s.req.Axes == nil {
		return s.chooseTiers(p)
	}
	var pool []Tier
	for _, t := range tiers(s.req.Multislice.Slices) {
		if len(s.best[t]) > 0 {
			pool = []Tier{t}
			p.Reasons = append(p.Reasons, note(OptionMesh, "layout given with {mesh} (%s): costed as asked, without the rule order", s.best[t][0].Name()))
		}
	}
	return pool
}

// ranked is the best layouts of the pool's tiers, best first, at most
// Request.Top of them.
func (s *searcher) ranked(pool []Tier) []Candidate {
	var chosen []Candidate
	for _, t := range pool {
		chosen = append(chosen, s.best[t]...)
	}
	sort.SliceStable(chosen, func(i, j int) bool { return better(chosen[i], chosen[j]) })
	if len(chosen) > s.req.Top {
		chosen = chosen[:s.req.Top]
	}
	return chosen
}

// explain completes p, whose Best is chosen from the pool's tiers: the
// verdict between the tiers, the alternatives, the rule's choice weighed
// against the model's error band, the experts, the framework, and the
// warnings.
func (s *searcher) explain(p *Plan, pool []Tier) {
	r := s.req
	ms := r.Multislice
	if len(pool) > 1 {
		p.Reasons = append(p.Reasons, s.poolVerdict(p.Best, pool))
	}
	if ms.Slices > 1 {
		p.Reasons = append(p.Reasons, note("", "tensor and context parallelism stay inside slices: they exchange activations inside every layer and are never placed on DCN%s",
			refusedCount(s.refusedDCN)))
	}
	p.Alternatives = s.alternatives(pool)
	p.Rule = p.Best
	p.Band = p.Best.Estimate.Job.Band(ms.Slice.Chip.Generation)
	if r.Axes == nil {
		s.beyondBand(p)
	}
	if at := s.across.at; at > 0 {
		p.Reasons[at] = s.acrossNote(*p)
	}
	if r.Model.MoE() {
		p.Reasons = append(p.Reasons, s.expertNote(*p))
	}
	if n, ok := chunkNote(r); ok {
		p.Reasons = append(p.Reasons, n)
	}
	p.Reasons = append(p.Reasons, frameworkNotes(*p, s.est)...)
	p.Warnings = warnings(*p)
}

// chooseTiers applies the rule order and returns the tiers whose layouts
// compete on speed, adding the reasons. Inside a slice: data parallelism,
// then FSDP when a replica does not fit, then tensor, context or pipeline.
// Across slices, with that in-slice strategy kept ("the same sharding
// strategy that worked within a single slice can be kept within each
// slice"): data parallelism, which shards no state, so the in-slice
// strategy is the one that fits a replica sharded inside the slice alone;
// FSDP only when memory needs it, when no in-slice strategy fits with
// DP across; pipeline only when DP or FSDP across slices would need a
// global batch above the limit to hide its all-reduce, or when neither
// can run.
func (s *searcher) chooseTiers(p *Plan) []Tier {
	ms := s.req.Multislice
	chosen, pipe := s.firstTiers()
	in := InModel
	if chosen != nil {
		in = chosen.In
	} else if pipe != nil {
		in = pipe.In
	}
	p.Reasons = append(p.Reasons, s.insideNote(in, firstOf(chosen, pipe)))
	if ms.Slices == 1 {
		if chosen == nil {
			return nil
		}
		return []Tier{*chosen}
	}
	var pool []Tier
	s.across.in = in
	if chosen != nil {
		pool = []Tier{*chosen}
		s.across.reserve(p)
	}
	tooSmall, rule := s.batchRule(in, pipe != nil)
	p.Reasons = append(p.Reasons, rule)
	switch {
	case chosen == nil && pipe != nil:
		pool = []Tier{*pipe}
		s.across.pipeOnly = true
		s.across.reserve(p)
	case tooSmall && pipe != nil:
		pool = append(pool, *pipe)
	}
	return pool
}

// firstTiers returns the first tier in rule order with DP or FSDP across
// slices (or one slice) that has a layout that runs, and the first with
// pipeline across slices; nil where none runs. DP across slices shards no
// state, so with it each in-slice strategy holds a replica's state as
// the in-slice axes alone shard it: the first in-slice strategy that runs
// with DP across slices is the one whose premise (pure DP while a whole
// replica fits, then FSDP, then model parallelism) holds. Only when none
// runs does memory bind across slices, and FSDP across them is tried,
// again with each in-slice strategy in order.
func (s *searcher) firstTiers() (chosen, pipe *Tier) {
	ms := s.req.Multislice
	has := func(t Tier) bool { return len(s.best[t]) > 0 }
	across := []Across{AcrossNone}
	if ms.Slices > 1 {
		across = []Across{AcrossDP, AcrossFSDP}
	}
	for _, a := range across {
		for in := InDP; in <= InModel && chosen == nil; in++ {
			if t := (Tier{in, a}); has(t) {
				chosen = &t
			}
		}
	}
	for in := InDP; in <= InModel && ms.Slices > 1; in++ {
		if t := (Tier{in, AcrossPipeline}); has(t) {
			return chosen, &t
		}
	}
	return chosen, nil
}

// insideNote says why the in-slice strategy is in; best is a tier with
// that strategy that runs. Its premise is about a replica's state as the
// in-slice axes alone shard it: where best keeps DP across slices (or is
// one slice), that is best's own state; where best shards the state
// across slices too (FSDP or pipeline there), no layout that keeps a
// whole replica in each slice runs, and the note says so (acrossNote).
func (s *searcher) insideNote(in Inside, best Tier) Note {
	r := s.req
	ms := r.Multislice
	if best.Across != AcrossNone && best.Across != AcrossDP {
		return s.acrossStateNote(in, best)
	}
	whole := func(ins ...Inside) []Tier {
		var out []Tier
		for _, in := range ins {
			out = append(out, Tier{in, best.Across})
		}
		return out
	}
	switch in {
	case InDP:
		b := s.best[best][0].Estimate
		if n, ok := dpInChipNote(sliceWord(ms), b); ok {
			return n
		}
		return note("", "inside %s: pure data parallelism: a full replica's weights, gradients and optimizer state (%v) fit in %v of usable HBM per chip with room for %s of activations",
			sliceWord(ms), b.Memory.State(), b.Memory.Usable, unit.Plural(b.MicroBatchSize, "sequence"))
	case InFSDP:
		return note("", "inside %s: FSDP: pure data parallelism%s cannot run (%s): a full replica's state is %v against %v of usable HBM, so weights, gradients and optimizer state are sharded over fsdp",
			sliceWord(ms), wholeWord(ms), s.rejectedSummary(whole(InDP)...), r.replicaState(), ms.Slice.Chip.UsableHBM(r.HBMHeadroom))
	}
	return note("", "inside %s: no data-parallel or FSDP layout%s can run (%s); tensor, context or pipeline parallelism inside a slice is needed",
		sliceWord(ms), wholeWord(ms), s.rejectedSummary(whole(InDP, InFSDP)...))
}

// acrossStateNote is insideNote where no layout with DP across slices
// runs, so that best, the tier chosen, shards the state across slices
// too: the in-slice strategy, and the state a chip holds as best's
// layout shards it, not a whole replica's.
func (s *searcher) acrossStateNote(in Inside, best Tier) Note {
	r := s.req
	var dp []Tier
	for i := InDP; i <= InModel; i++ {
		dp = append(dp, Tier{i, AcrossDP})
	}
	b := s.best[best][0].Estimate
	what := [...]string{"pure data parallelism", "FSDP", "tensor, context or pipeline parallelism"}[in]
	return note("", "inside each slice: %s, with the state sharded across slices too: no layout that keeps a whole replica in each slice runs (%s; a full replica's state is %v against %v of usable HBM), and %s holds %v of state a chip",
		what, s.rejectedSummary(dp...), r.replicaState(), b.Memory.Usable, b.Mesh, b.Memory.State())
}

// replicaState is a full replica's weights, gradients and optimizer state
// at the request's precision, unsharded.
func (r *Request) replicaState() unit.Bytes {
	return unit.Bytes(float64(r.Model.ParamCount().Total()) * float64(r.Precision.StateBytes()))
}

// wholeWord qualifies, on a multislice, the layouts insideNote counts:
// those that keep a whole replica in each slice (DP across slices).
func wholeWord(ms hw.Multislice) string {
	if ms.Slices > 1 {
		return " with a whole replica in each slice"
	}
	return ""
}

// batchRule applies the Multislice batch rule: whether the batch limit
// lets DP or FSDP across slices hide the gradient all-reduce. Its
// threshold is the practical figure the guidance gives (twice the
// break-even batch), not the bare break-even.
func (s *searcher) batchRule(in Inside, canPipe bool) (tooSmall bool, n Note) {
	r := s.req
	ms := r.Multislice
	chip := ms.Slice.Chip
	min, need, limit := r.batchRuleTokens()
	verdict := text("enough: DP or FSDP across slices can hide its all-reduce")
	switch {
	case limit < need && canPipe:
		verdict = "too small: pipeline parallelism across slices, which sends only activations over DCN, is considered"
	case limit < need:
		// a text: the rejection counts name options ({max_global_batch})
		verdict = text(textf("too small, but no layout with pipeline parallelism across slices can run (%s)", s.rejectedSummary(Tier{in, AcrossPipeline})))
	}
	bits := collective.MultisliceBitsPerParam(ms.Slices)
	return limit < need, note(OptionMaxGlobalBatch, "Multislice batch rule: %s, backward intensity %s against %.0f FLOP per DCN bit on %s, so %s tokens per slice break even and %s in practice hide the all-reduce; {max_global_batch} allows %s: %s",
		bitsWords(bits, ms.Slices), r.intensityWords(bits), float64(chip.PeakBF16)/ms.DCNPerChip.Bits(), chip.Generation, count(min), count(need), count(limit), verdict)
}

// bitsWords is the guidance's DCN bits per parameter for n slices as the
// batch rule's note writes it: above two slices its 64 is a bound, which
// a ring all-reduce of fp32 gradients reaches only as n grows
// (2(n−1)/n·32: 48 for 4 slices, 56 for 8; review 123 #12).
func bitsWords(bits, n int) string {
	if n <= 2 {
		return fmt.Sprintf("%d bits of DCN per parameter for %d slices", bits, n)
	}
	ring := 2 * float64(n-1) / float64(n) * collective.GradientBits
	return fmt.Sprintf("at most %d bits of DCN per parameter for %d slices (a ring all-reduce of fp32 gradients sends %.3g)", bits, n, ring)
}

// intensityWords is the batch rule's backward intensity over DCN as the
// note writes it: 4·B/bits for a dense model; for a mixture of experts,
// whose backward runs only the active parameters while the all-reduce
// carries all of them, 4·B·(active/total)/bits, with the two counts.
func (r *Request) intensityWords(bits int) string {
	n := r.Model.ParamCount()
	if n.Active() == n.Total() {
		return fmt.Sprintf("4·B/%d FLOP per bit", bits)
	}
	return fmt.Sprintf("4·B·%.3f/%d FLOP per bit (MoE: the backward pass runs the %.2fB active parameters, the all-reduce carries all %.2fB)",
		float64(n.Active())/float64(n.Total()), bits, float64(n.Active())/1e9, float64(n.Total())/1e9)
}

// batchRuleTokens is the batch rule's tokens per slice: the break-even
// (Request.breakEvenTokens), what hides the all-reduce in practice, and
// what the batch limit allows; the batch is too small when the limit is
// below the practical figure (searcher.batchRule).
func (r *Request) batchRuleTokens() (min, need, limit float64) {
	ms := r.Multislice
	min = r.breakEvenTokens()
	return min, min * collective.PracticalHeadroom, float64(r.MaxGlobalBatch) * float64(r.Seq) / float64(ms.Slices)
}

// breakEvenTokens is the tokens per slice at which the backward pass of
// r's model hides the DCN gradient all-reduce of its multislice
// (collective.MinTokensPerSlice), with the model's own active and total
// parameter counts: a mixture of experts' backward runs its active
// parameters while the all-reduce carries all of them. Every use of the
// Multislice batch rule asks this.
func (r *Request) breakEvenTokens() float64 {
	ms, n := r.Multislice, r.Model.ParamCount()
	return collective.MinTokensPerSlice(ms.Slice.Chip.PeakBF16, ms.DCNPerChip, ms.Slices, n.Active(), n.Total())
}

// poolVerdict says which of the competing tiers won, and, when pipeline
// across slices won, the batch DP or FSDP across slices would have needed.
func (s *searcher) poolVerdict(best Candidate, pool []Tier) Note {
	ms := s.req.Multislice
	if best.Tier.Across == AcrossPipeline {
		need := s.req.breakEvenTokens() * collective.PracticalHeadroom
		batch := math.Ceil(need * float64(ms.Slices) / float64(s.req.Seq))
		return note(OptionMaxGlobalBatch, "%s wins: %.0f tokens/s per chip; DP or FSDP across slices would have needed a global batch of at least %.0f sequences (%s tokens per slice) to hide its all-reduce, above {max_global_batch} (%d)",
			best.Name(), best.Estimate.TokensPerSecondPerChip, batch, count(need), s.req.MaxGlobalBatch)
	}
	var other Candidate
	for _, t := range pool {
		if t != best.Tier && len(s.best[t]) > 0 {
			other = s.best[t][0]
		}
	}
	return note("", "%s wins: %.0f tokens/s per chip; the best with %s (%s) reaches %.0f: its pipeline bubble costs more than the exposed all-reduce",
		best.Name(), best.Estimate.TokensPerSecondPerChip, other.Name(), other.Estimate.Mesh, other.Estimate.TokensPerSecondPerChip)
}

func firstOf(ts ...*Tier) Tier {
	for _, t := range ts {
		if t != nil {
			return *t
		}
	}
	return Tier{}
}

func sliceWord(ms hw.Multislice) string {
	if ms.Slices > 1 {
		return "each slice"
	}
	return "the slice"
}

// refusedCount is ", N layouts refused" for the tensor and context
// factorizations on DCN, or "".
func refusedCount(m map[cost.Reason]int) string {
	n := 0
	for _, v := range m {
		n += v
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s refused)", unit.Plural(n, "layout"))
}

// rejectedBy counts the layouts of the tiers that were rejected, by reason.
func (s *searcher) rejectedBy(ts ...Tier) map[cost.Reason]int {
	sum := map[cost.Reason]int{}
	for _, t := range ts {
		for k, v := range s.rejected[t] {
			sum[k] += v
		}
	}
	return sum
}

// rejectedSummary says how many layouts of the tiers were rejected, by
// reason, most common first.
func (s *searcher) rejectedSummary(ts ...Tier) text {
	return rejectedSummary(s.rejectedBy(ts...))
}
