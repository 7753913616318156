package plan

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"shardlab/cost"
	"shardlab/mesh"
)

// ReasonExpertDCNFirst rejects expert parallelism across slices while a
// slice could hold a larger expert group: its dispatch and combine
// all-to-alls are fine-grained (every device sends a slice of its tokens
// to every other, four to six times per MoE layer), which ICI carries and
// DCN's per-message latency and lower bandwidth do not, so the expert
// axis goes over DCN only once it spans a whole slice or every expert.
const ReasonExpertDCNFirst cost.Reason = "expert parallelism over DCN before it fills a slice"

// overDCN is the rejection reason for an axis the mesh table keeps off
// DCN.
func overDCN(a mesh.Axis) cost.Reason {
	switch a {
	case mesh.Tensor:
		return cost.ReasonTensorDCN
	case mesh.Context:
		return cost.ReasonContextDCN
	}
	return cost.Reason(a.String() + " over DCN")
}

// enumerate walks every ordered factorization of the slice's chips over the
// axes (ICI) and of the slice count over the axes that may cross DCN.
func (s *searcher) enumerate() {
	ms := s.req.Multislice
	free := searchAxes(&s.req)
	// Layouts without a pipeline pay no bubble and are mostly the faster:
	// costed first, they raise the bars the pipelined ones must pass
	// sooner. The plan does not depend on the order (searcher.merge). The
	// list is the cache's, read only.
	ici := s.req.Cache.iciFactorizations(ms.Slice.Chips(), free)
	var dcn [][]int // those that keep tensor and context off DCN
	for _, dn := range s.bars.lean.order(factorizationsOver(ms.Slices, free)) {
		if a, ok := refusedOverDCN(dn); ok {
			s.refusedDCN[overDCN(a)] += len(ici)
			continue
		}
		dcn = append(dcn, dn)
	}
	run := s.runner(0)
	var early refusals
	defer early.addTo(s.rejected)
	divides := make([]int8, ms.Slice.Chips()+1) // refusal's, by tensor degree
	stride := 1
	if s.bars.lean.on {
		stride = sampleStride
	}
	for pass := range min(stride, 2) {
		i := 0
		for _, dn := range dcn {
			for _, in := range ici {
				if (i%stride == 0) == (pass == 0) {
					s.visit(run, &early, divides, in, dn)
				}
				i++
			}
		}
	}
	run.done()
}

// sampleStride is how far apart the pairs of factorizations a lean search
// costs first are (enumerate): every eighth pair, in order, then the
// rest. A lean search skips what is slower than the fastest layout it
// knows (outclassedLean), and its fastest is often a pipelined layout or
// one with pipeline across slices, which the order reaches late; a
// sample over the whole order finds one near it sooner, and the search
// then costs fewer combinations in full (on issue 31's whole sweep, about
// a tenth fewer tried). The plan does not depend on the order.
const sampleStride = 8

// refusedOverDCN is the first axis DCN factors dn put over DCN that may
// not cross it, and whether there is one.
func refusedOverDCN(dn []int) (mesh.Axis, bool) {
	for _, a := range mesh.All() {
		if dn[a] > 1 && !a.CrossesDCN() {
			return a, true
		}
	}
	return 0, false
}

// visit costs the mesh of ICI factors in and DCN factors dn on run, or
// counts it rejected as enumerate rejects it before its mesh is built
// (refusal, batchLimited).
func (s *searcher) visit(run *runner, early *refusals, divides []int8, in, dn []int) {
	if r := s.refusal(in, dn, divides); r >= 0 {
		early.add(tierOf(in, dn), r)
		return
	}
	if n := s.batchLimited(in, dn); n > 0 {
		s.rejected[tierOf(in, dn)][ReasonBatchLimit] += n
		s.evaluated += n
		return
	}
	var degrees [mesh.NumAxes]mesh.Degree
	for _, a := range mesh.All() {
		degrees[a] = mesh.Degree{Axis: a, ICI: in[a], DCN: dn[a]}
	}
	m, err := mesh.New(s.req.Multislice, degrees[:]...)
	if err != nil {
		panic(fmt.Sprintf("plan: factorization %v x %v rejected: %v", in, dn, err))
	}
	run.add(m)
}

// refusal is why enumerate rejects the factorization of ICI factors in
// and DCN factors dn before it builds its mesh, as an index in
// refusalReasons; -1 for none. divides remembers cost.TensorDivides by
// tensor degree (1 yes, 2 no, 0 not yet asked), which copies the model
// each time it is asked.
func (s *searcher) refusal(in, dn []int, divides []int8) int {
	spec, ms := &s.req.Model, &s.req.Multislice
	t := in[mesh.Tensor]
	if divides[t] == 0 {
		divides[t] = 2
		if cost.TensorDivides(*spec, t) {
			divides[t] = 1
		}
	}
	switch {
	case divides[t] == 2:
		return 0
	case spec.Layers%(in[mesh.Pipeline]*dn[mesh.Pipeline]) != 0:
		return 1
	case s.req.Seq%(in[mesh.Context]*dn[mesh.Context]) != 0:
		return 2
	case !cost.ExpertDivides(spec.Experts, in[mesh.Expert]*dn[mesh.Expert]):
		return 3
	case dn[mesh.Expert] > 1 && in[mesh.Expert] < min(spec.Experts, ms.Slice.Chips()):
		return 4
	}
	return -1
}

// refusalReasons are the reasons enumerate rejects a factorization for
// before it builds its mesh, in the order it asks.
var refusalReasons = [...]cost.Reason{cost.ReasonHeads, cost.ReasonLayers, cost.ReasonSeq, cost.ReasonExperts, ReasonExpertDCNFirst}

// refusals counts the factorizations enumerate rejects before it builds
// their meshes, by tier (tierIndex) and reason (refusalReasons): a search
// of a large slice rejects hundreds of thousands, and an array is
// cheaper to count in than the searcher's maps, which addTo fills once.
type refusals struct {
	tier [numTiers]Tier
	n    [numTiers][len(refusalReasons)]int
}

// add counts a factorization of tier t rejected for refusalReasons[r].
func (rf *refusals) add(t Tier, r int) {
	i := tierIndex(t)
	rf.tier[i] = t
	rf.n[i][r]++
}

// addTo adds the counts to rejected (the searcher's, by tier and reason).
func (rf *refusals) addTo(rejected map[Tier]map[cost.Reason]int) {
	for i, row := range rf.n {
		for r, n := range row {
			if n > 0 {
				rejected[rf.tier[i]][refusalReasons[r]] += n
			}
		}
	}
}

// batchLimited is how many combinations worker.layout costs the layout of
// ICI factors in and DCN factors dn over when no batch within the limit
// splits over it with its fewest micro-batches (Request.batchRange), and
// so with none of its counts, each a multiple of the fewest; 0 when one
// may, or when the search costs every layout as it comes (bulk unset).
func (s *searcher) batchLimited(in, dn []int) int {
	if !s.bulk {
		return 0
	}
	var size [mesh.NumAxes]int
	for a := range size {
		size[a] = in[a] * dn[a]
	}
	p := size[mesh.Pipeline] // the fewest micro-batches: 1, or p
	if lo, hi := s.req.batchRange(size[mesh.Data] * size[mesh.FSDP] * size[mesh.Expert] * p); hi >= lo {
		return 0
	}
	micros := 1 // p, 2p, 4p and 8p when p > 1 (worker.layout)
	if p > 1 {
		micros = 4
	}
	scheds, ok := s.schedules[p]
	if !ok {
		if s.schedules == nil {
			s.schedules = map[int]int{}
		}
		scheds = len(schedulesFor(&s.req, p))
		s.schedules[p] = scheds
	}
	return scheds * micros * len(rematsFor(&s.req)) * len(ringsFor(&s.req, size[mesh.Expert]))
}

// byPipeline is fs ordered by pipeline degree, those of one degree in
// their order in fs: a stable sort, as one sort of (degree, position)
// pairs, which takes far fewer comparisons than a stable sort in place.
func byPipeline(fs [][]int) [][]int {
	type key struct{ p, i int }
	keys := make([]key, len(fs))
	for i, f := range fs {
		keys[i] = key{f[mesh.Pipeline], i}
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Or(cmp.Compare(a.p, b.p), cmp.Compare(a.i, b.i)) })
	out := make([][]int, len(fs))
	for i, k := range keys {
		out[i] = fs[k.i]
	}
	return out
}

// searchAxes marks, indexed by mesh.Axis, the axes the search for r
// splits: every axis, but expert only for a mixture of experts (a dense
// model has nothing to split over it), and only data, fsdp and tensor for
// FrameworkPyTorch, tensor where the model has the modules its sharding
// names (PyTorchAxisLimit).
func searchAxes(r *Request) []bool {
	free := make([]bool, mesh.NumAxes)
	for _, a := range mesh.All() {
		free[a] = a != mesh.Expert || r.Model.MoE()
		if r.Framework == FrameworkPyTorch {
			free[a] = a == mesh.Data || a == mesh.FSDP || a == mesh.Tensor && PyTorchTensorModules(r.Model) == ""
		}
	}
	return free
}

// factorizations lists every ordered k-tuple of positive integers whose
// product is n.
func factorizations(n, k int) [][]int {
	free := make([]bool, k)
	for i := range free {
		free[i] = true
	}
	return factorizationsOver(n, free)
}

// factorizationsOver lists every ordered tuple of positive integers, one per
// entry of free, whose product is n, with the entries not free held at 1.
func factorizationsOver(n int, free []bool) [][]int {
	k := len(free)
	var divs []int
	for d := 1; d*d <= n; d++ {
		if n%d == 0 {
			divs = append(divs, d)
			if d*d != n {
				divs = append(divs, n/d)
			}
		}
	}
	sort.Ints(divs)
	// the tuples are laid end to end in one array, then cut: a search
	// lists thousands
	var flat []int
	cur := make([]int, k)
	var rec func(i, left int)
	rec = func(i, left int) {
		if i == k-1 {
			if !free[i] && left != 1 {
				return
			}
			cur[i] = left
			flat = append(flat, cur...)
			return
		}
		if !free[i] {
			cur[i] = 1
			rec(i+1, left)
			return
		}
		for _, d := range divs {
			if d > left {
				break
			}
			if left%d == 0 {
				cur[i] = d
				rec(i+1, left/d)
			}
		}
	}
	rec(0, n)
	out := make([][]int, len(flat)/max(k, 1))
	for i := range out {
		out[i] = flat[i*k : (i+1)*k : (i+1)*k]
	}
	return out
}
