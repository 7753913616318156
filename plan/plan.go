// Package plan searches every layout of a training job on a TPU topology —
// all factorizations of the chips over the data, fsdp, tensor, pipeline and
// context axes, split into ICI and DCN factors, with micro-batch counts,
// rematerialisation policies and batch sizes — drops those that cannot run,
// ranks the rest by throughput with package cost, and picks one in the
// order the rules give: pure data parallelism while the model fits, FSDP
// when memory binds, pipeline across slices only when data parallelism over
// DCN would need a global batch above the convergence limit, tensor and
// context parallelism only inside a slice. The plan carries its reasons.
package plan

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"shardlab/collective"
	"shardlab/cost"
	"shardlab/hw"
	"shardlab/mesh"
	"shardlab/model"
	"shardlab/schedule"
	"shardlab/unit"
)

// Request is a planning question, as ParseRequest makes it from Options.
type Request struct {
	Model model.Spec
	// Multislice is where to plan. A multislice of no slices that holds
	// only a chip (what ParseRequest makes of a bare generation, tpu7x)
	// asks for the smallest footprint of the chip's generation that runs
	// the job: see SearchScope.
	Multislice hw.Multislice
	// Seq is tokens per sequence; 0 means the model's SeqLen.
	Seq int
	// GlobalBatch fixes the sequences per step; 0 lets the planner choose
	// the largest batch that fits, up to MaxGlobalBatch.
	GlobalBatch int
	// MaxGlobalBatch is the convergence limit in sequences per step.
	MaxGlobalBatch int
	// Axes, when set, asks for this one layout (each named axis's degree)
	// instead of searching.
	Axes []mesh.Degree
	// DeviceAxes, when set, is the layout asked in JAX devices, on a chip
	// of several (TPU7x): Axes is then one of its chip readings, and
	// Search costs each reading until one's MaxText mesh is DeviceAxes
	// (Plan.Devices). nil on a chip of one device, where Axes says it all.
	DeviceAxes []mesh.Degree
	// microStep, when above 1, makes the planner's batch put a multiple
	// of it sequences on each chip per micro-batch (the fsdp reading of a
	// device mesh: the chip's devices split its sequences).
	microStep int
	// Remat fixes the rematerialisation policy; "" searches all.
	Remat cost.Remat
	// Custom places the tagged tensors when Remat is custom.
	Custom cost.Places
	// Schedule fixes the pipeline schedule, with Chunks for interleaved
	// and circular; "" searches GPipe, 1F1B and interleaved 1F1B with 2
	// and 4 chunks.
	Schedule schedule.Kind
	Chunks   int
	// Framework, when FrameworkMaxText, searches only the schedules
	// MaxText runs.
	Framework Framework
	// Workers is how many goroutines cost layouts (0: one per CPU). The
	// plan is the same for every count.
	Workers int
	// Precision is the bytes of each piece of state; the zero Precision,
	// which no job can have, means cost.MaxTextPrecision.
	Precision    cost.Precision
	Quantization cost.Quantization
	Attention    cost.AttentionKind
	// OptimizerOffload and ParameterOffload as in cost.Job.
	OptimizerOffload, ParameterOffload bool
	VocabTiles                         int
	// Efficiency as in cost.Job: 0 means the generation's calibrated
	// value.
	Efficiency float64
	// HBMHeadroom is the fraction of HBM kept free, as in cost.Job: 0
	// keeps none (cost.DefaultHBMHeadroom is the usual value).
	HBMHeadroom float64
	// TempScale as in cost.Job: 0 means 1.
	TempScale   float64
	CausalFLOPs bool
	// CapacityFactor and LoadImbalance as in cost.Job.
	CapacityFactor, LoadImbalance float64
	// Top is how many ranked layouts to keep (at least 1).
	Top int
	// ExampleCost, when set, is the host CPU time to read and preprocess
	// one sequence; the plan then checks with package infeed that the
	// host's vCPUs keep the chips fed.
	ExampleCost time.Duration
}

// Inside is how a layout shards the job inside each slice.
type Inside int

// The in-slice strategies, in the order the rules try them.
const (
	InDP    Inside = iota // data parallelism only
	InFSDP                // data and fsdp
	InModel               // tensor, context or pipeline too
)

func (in Inside) String() string {
	return [...]string{"DP", "FSDP", "model parallel"}[in]
}

// Across is what a layout places across slices, on DCN: data parallelism,
// FSDP or pipeline parallelism, the three choices the Cloud TPU Multislice
// guidance gives ("data parallelism, FSDP or pipeline parallelism across
// slices"; tensor and context exchange activations inside every layer and
// never go on DCN).
type Across int

// The cross-slice strategies, in the order the rules try them.
const (
	AcrossNone     Across = iota // one slice
	AcrossDP                     // data across slices
	AcrossFSDP                   // fsdp across slices (and maybe data)
	AcrossPipeline               // pipeline across slices (and maybe data or fsdp)
)

func (a Across) String() string {
	return [...]string{"", "DP", "FSDP", "pipeline"}[a]
}

// Tier is a rung of the rule order: the pair of the in-slice strategy and
// the cross-slice one, chosen as two steps.
type Tier struct {
	In     Inside
	Across Across
}

// The single-slice tiers.
var (
	TierDP    = Tier{InDP, AcrossNone}
	TierFSDP  = Tier{InFSDP, AcrossNone}
	TierModel = Tier{InModel, AcrossNone}
)

func (t Tier) String() string {
	if t.Across == AcrossNone {
		return [...]string{"pure DP", "FSDP", "model parallel inside slices"}[t.In]
	}
	return fmt.Sprintf("%s inside, %s across slices", t.In, t.Across)
}

// tiers lists the tiers of a multislice of n slices in rule order: the
// in-slice strategy first, then the cross-slice one.
func tiers(n int) []Tier {
	across := []Across{AcrossNone}
	if n > 1 {
		across = []Across{AcrossDP, AcrossFSDP, AcrossPipeline}
	}
	var out []Tier
	for in := InDP; in <= InModel; in++ {
		for _, a := range across {
			out = append(out, Tier{in, a})
		}
	}
	return out
}

// TierOf classifies a layout. A layout with tensor or context on DCN has no
// tier: mesh and the search refuse it. The expert axis counts as fsdp
// does.
func TierOf(m mesh.Mesh) Tier {
	ici := make([]int, mesh.NumAxes)
	dcn := make([]int, mesh.NumAxes)
	for _, d := range m.Degrees() {
		ici[d.Axis], dcn[d.Axis] = d.ICI, d.DCN
	}
	return tierOf(ici, dcn)
}

// tierOf classifies ICI and DCN factors indexed by mesh.Axis.
func tierOf(ici, dcn []int) Tier {
	var t Tier
	switch {
	case ici[mesh.Tensor] > 1 || ici[mesh.Context] > 1 || ici[mesh.Pipeline] > 1:
		t.In = InModel
	case ici[mesh.FSDP] > 1 || ici[mesh.Expert] > 1:
		// expert parallelism shards the experts' weights and the batch, as
		// fsdp shards every weight and the batch
		t.In = InFSDP
	}
	switch {
	case dcn[mesh.Pipeline] > 1:
		t.Across = AcrossPipeline
	case dcn[mesh.FSDP] > 1 || dcn[mesh.Expert] > 1:
		t.Across = AcrossFSDP
	case dcn[mesh.Data] > 1:
		t.Across = AcrossDP
	}
	return t
}

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

// Candidate is one evaluated layout.
type Candidate struct {
	Estimate cost.Estimate
	Tier     Tier
}

// Plan is the answer: the chosen layout, the runners-up, and why.
type Plan struct {
	Request Request
	Best    Candidate
	// Rule is the layout the rule order chose. Best is the same unless a
	// layout outside the rule order is predicted faster by more than the
	// model's error band allows (Band), and the reasons then say why.
	Rule Candidate
	// Top holds the best layouts of the chosen tier, best first.
	Top []Candidate
	// Alternatives holds the best layout of every other tier that can run.
	Alternatives []Candidate
	// Reasons and Warnings name the options they concern; Note.Phrase
	// spells them as the front end does.
	Reasons  []Note
	Warnings []Note
	// Rejected counts layouts that cannot run, by reason.
	Rejected map[cost.Reason]int
	// Evaluated counts the (layout, micro-batches, remat) combinations
	// costed.
	Evaluated int
	// MaxMicroBatch is the most sequences per chip per micro-batch the
	// chosen layout fits with (cost.Estimator.MaxMicroBatch), up to
	// MaxBatch sequences in all; 0 when it does not fit one.
	MaxMicroBatch int
	// Band is the step-time model's measured error on the chosen
	// layout's generation and model class (cost.Job.Band): the band every
	// predicted figure carries, and the margin by which a layout outside
	// the rule order must be faster to be chosen over the rule's.
	Band cost.StepBand
}

// ErrNoPlan is returned when no layout can run the job.
var ErrNoPlan = errors.New("no layout can run this job")

// ErrRequest is wrapped by errors in the request.
var ErrRequest = errors.New("invalid request")

func (r *Request) defaults() error {
	if r.Seq == 0 {
		r.Seq = r.Model.SeqLen
	}
	if r.Precision == (cost.Precision{}) {
		r.Precision = cost.MaxTextPrecision()
	}
	if r.Top < 1 {
		r.Top = 1
	}
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("plan: %s = %v, want %s: %w", field, v, want, ErrRequest)
	}
	switch {
	case r.Seq < 0:
		return bad("seq", r.Seq, "a positive number of tokens")
	case r.GlobalBatch < 0:
		return bad("global batch", r.GlobalBatch, "a positive number of sequences (or 0 to let the planner choose)")
	case r.MaxGlobalBatch <= 0:
		return bad("max global batch", r.MaxGlobalBatch, "a positive number of sequences")
	case r.GlobalBatch > r.MaxGlobalBatch:
		return bad("global batch", r.GlobalBatch, fmt.Sprintf("at most the max global batch (%d)", r.MaxGlobalBatch))
	case r.Multislice.Chips() == 0:
		return bad("topology", "none", "a slice")
	case r.VocabTiles < 0:
		return bad("vocab tiles", r.VocabTiles, "a positive count")
	case r.ExampleCost < 0:
		return bad("example cost", r.ExampleCost, "a non-negative duration")
	}
	if _, err := r.job().MatmulPeak(r.Multislice.Slice.Chip); err != nil {
		return fmt.Errorf("plan: %w: %w", err, ErrRequest)
	}
	if err := cost.CheckTrainable(r.Model); err != nil {
		return fmt.Errorf("plan: %w: %w", err, ErrRequest)
	}
	return r.Model.Validate()
}

func (r Request) job() cost.Job {
	j := cost.NewJob(r.Model, r.Seq, 1)
	j.Schedule = r.Schedule
	if j.Schedule == "" {
		j.Schedule = schedule.OneFOneB
	}
	j.Chunks = r.Chunks
	j.Precision = r.Precision
	j.Custom = r.Custom
	j.Quantization = r.Quantization
	j.Attention = r.Attention
	j.OptimizerOffload, j.ParameterOffload = r.OptimizerOffload, r.ParameterOffload
	j.VocabTiles = r.VocabTiles
	j.Efficiency = r.Efficiency
	j.HBMHeadroom = r.HBMHeadroom
	j.TempScale = r.TempScale
	j.CausalFLOPs = r.CausalFLOPs
	j.CapacityFactor, j.LoadImbalance = r.CapacityFactor, r.LoadImbalance
	return j
}

// search state
type searcher struct {
	req      Request
	est      *cost.Estimator
	rejected map[Tier]map[cost.Reason]int
	// refusedDCN counts the factorizations that put tensor or context on
	// DCN, by reason: they belong to no tier.
	refusedDCN map[cost.Reason]int
	evaluated  int
	best       map[Tier][]Candidate // best first, at most keep
	keep       int
	// unfit is the requested layout that uses the least HBM, when it does
	// not fit at any batch (--mesh only).
	unfit *Candidate
	// expert is the best layout with expert parallelism, for a mixture of
	// experts.
	expert *Candidate
	// layout costs a mesh: (*worker).layout.
	layout func(*worker, mesh.Mesh) outcome
}

// Search plans the request: on its multislice, or, when the request holds
// only a chip, on the smallest footprint of its generation that runs the
// job (SearchScope, up to MaxScopeSlices slices).
func Search(r Request) (Plan, error) {
	if ms := r.Multislice; ms.Slices == 0 && ms.Slice.Chips() == 0 && ms.Slice.Chip.Generation != "" {
		return SearchScope(r, ms.Slice.Chip, MaxScopeSlices)
	}
	p, err := search(r)
	var none *NoPlanError
	if errors.As(err, &none) && none.Rejected[cost.ReasonHBM] > 0 {
		none.Fixes = fixes(r)
	}
	return p, err
}

// search is Search on one multislice, without looking for fixes when
// nothing runs.
func search(r Request) (Plan, error) {
	if err := r.defaults(); err != nil {
		return Plan{}, err
	}
	if r.DeviceAxes != nil {
		return searchDevices(r)
	}
	return searchWith(r, (*worker).layout)
}

// searchWith is search of a request that passed defaults, each mesh costed
// by layout.
func searchWith(r Request, layout func(*worker, mesh.Mesh) outcome) (Plan, error) {
	s := &searcher{req: r, keep: r.Top, layout: layout,
		rejected: map[Tier]map[cost.Reason]int{}, refusedDCN: map[cost.Reason]int{}, best: map[Tier][]Candidate{}}
	for _, t := range tiers(r.Multislice.Slices) {
		s.rejected[t] = map[cost.Reason]int{}
	}
	if r.Axes != nil {
		m, err := askedMesh(r.Multislice, r.Axes, spellAxes(r.Axes))
		if err != nil {
			return Plan{}, err
		}
		s.run([]mesh.Mesh{m})
		if s.unfit != nil && len(s.best[s.unfit.Tier]) == 0 {
			// nothing fits: show the layout asked for, costed in full
			s.best[s.unfit.Tier] = []Candidate{*s.unfit}
		}
	} else {
		s.enumerate()
	}
	p, err := s.choose()
	if err != nil {
		return p, err
	}
	e := p.Best.Estimate
	shards := max(e.Job.GlobalBatch/max(e.MicroBatchSize, 1), 1)
	p.MaxMicroBatch, err = cost.NewEstimator().MaxMicroBatch(e.Job, e.Mesh, max(MaxBatch/shards, 1))
	return p, err
}

// fixes are the changes the user left open under which a job that does
// not fit in HBM would run, each with the best layout it would then get:
// MaxText's bf16 weights (weight_dtype bfloat16, 8 bytes of state per
// parameter in place of 16), a remat policy that offloads what it saves
// to host memory, the Adam state in host memory. Every change that runs
// the job alone is listed, then the best combination of them when it
// beats them all.
func fixes(r Request) []string {
	type change struct {
		what  text
		group int // changes of one group exclude each other
		set   func(*Request)
	}
	var changes []change
	if p := r.Precision; p == (cost.Precision{}) || p.Weight+p.Master+p.Gradient+p.Optimizer > 8 {
		changes = append(changes, change{"{precision} bf16", 0, func(q *Request) { q.Precision = cost.MaxTextBF16Precision() }})
	}
	if r.Remat == "" {
		for _, x := range []cost.Remat{cost.RematMinimalOffloaded, cost.RematQKVProjOffloaded} {
			changes = append(changes, change{text(textf("{remat} %s", x)), 1, func(q *Request) { q.Remat = x }})
		}
	}
	if !r.OptimizerOffload {
		changes = append(changes, change{"{optimizer_offload}", 2, func(q *Request) { q.OptimizerOffload = true }})
	}
	type found struct {
		text string
		mfu  float64
	}
	var singles, combos []found
	for set := 1; set < 1<<len(changes); set++ {
		q := r
		var what []string
		groups := map[int]bool{}
		clash := false
		for i, c := range changes {
			if set&(1<<i) == 0 {
				continue
			}
			clash = clash || groups[c.group]
			groups[c.group] = true
			c.set(&q)
			what = append(what, string(c.what))
		}
		if clash {
			continue
		}
		p, err := search(q)
		if err != nil {
			continue
		}
		e := p.Best.Estimate
		f := found{textf("%s: %s, remat %s, %d sequences, MFU %s", text(strings.Join(what, " ")), e.Mesh, e.Job.Remat, e.Job.GlobalBatch, e.MFUPeaks()), e.MFU}
		if len(what) == 1 {
			singles = append(singles, f)
		} else {
			combos = append(combos, f)
		}
	}
	var out []string
	best := 0.0
	for _, f := range singles {
		out = append(out, f.text)
		best = max(best, f.mfu)
	}
	var top *found
	for i := range combos {
		if f := &combos[i]; f.mfu > best && (top == nil || f.mfu > top.mfu) {
			top = f
		}
	}
	if top != nil {
		out = append(out, top.text)
	}
	return out
}

// enumerate walks every ordered factorization of the slice's chips over the
// axes (ICI) and of the slice count over the axes that may cross DCN.
func (s *searcher) enumerate() {
	ms := s.req.Multislice
	spec := s.req.Model
	free := searchAxes(spec)
	ici := factorizationsOver(ms.Slice.Chips(), free)
	dcn := factorizationsOver(ms.Slices, free)
	var meshes []mesh.Mesh
	for _, dn := range dcn {
		refused := false
		for _, a := range mesh.All() {
			if dn[a] > 1 && !a.CrossesDCN() {
				s.refusedDCN[overDCN(a)] += len(ici)
				refused = true
				break
			}
		}
		if refused {
			continue
		}
		for _, in := range ici {
			t, p, c := in[mesh.Tensor], in[mesh.Pipeline]*dn[mesh.Pipeline], in[mesh.Context]*dn[mesh.Context]
			reason := cost.Reason("")
			switch {
			case !cost.TensorDivides(spec, t):
				reason = cost.ReasonHeads
			case spec.Layers%p != 0:
				reason = cost.ReasonLayers
			case s.req.Seq%c != 0:
				reason = cost.ReasonSeq
			case !cost.ExpertDivides(spec.Experts, in[mesh.Expert]*dn[mesh.Expert]):
				reason = cost.ReasonExperts
			case dn[mesh.Expert] > 1 && in[mesh.Expert] < min(spec.Experts, ms.Slice.Chips()):
				reason = ReasonExpertDCNFirst
			}
			if reason != "" {
				s.rejected[tierOf(in, dn)][reason]++
				continue
			}
			degrees := make([]mesh.Degree, mesh.NumAxes)
			for _, a := range mesh.All() {
				degrees[a] = mesh.Degree{Axis: a, ICI: in[a], DCN: dn[a]}
			}
			m, err := mesh.New(ms, degrees...)
			if err != nil {
				panic(fmt.Sprintf("plan: factorization %v x %v rejected: %v", in, dn, err))
			}
			meshes = append(meshes, m)
		}
	}
	s.run(meshes)
}

// searchAxes marks, indexed by mesh.Axis, the axes the search splits:
// every axis, but expert only for a mixture of experts (a dense model has
// nothing to split over it).
func searchAxes(spec model.Spec) []bool {
	free := make([]bool, mesh.NumAxes)
	for _, a := range mesh.All() {
		free[a] = a != mesh.Expert || spec.MoE()
	}
	return free
}

func (s *searcher) choose() (Plan, error) {
	r := s.req
	p := Plan{Request: r, Rejected: map[cost.Reason]int{}, Evaluated: s.evaluated}
	for _, m := range s.rejected {
		for k, v := range m {
			p.Rejected[k] += v
		}
	}
	for k, v := range s.refusedDCN {
		p.Rejected[k] += v
	}
	ms := r.Multislice
	all := tiers(ms.Slices)
	has := func(t Tier) bool { return len(s.best[t]) > 0 }

	p.Reasons = append(p.Reasons, note("", "%s", scopeReason(ms)))

	var pool []Tier
	if r.Axes != nil {
		for _, t := range all {
			if has(t) {
				pool = []Tier{t}
				p.Reasons = append(p.Reasons, note(OptionMesh, "layout given with {mesh} (%s): costed as asked, without the rule order", t))
			}
		}
	} else {
		pool = s.chooseTiers(&p)
	}
	var chosen []Candidate
	for _, t := range pool {
		chosen = append(chosen, s.best[t]...)
	}
	sort.SliceStable(chosen, func(i, j int) bool { return better(chosen[i], chosen[j]) })
	if len(chosen) == 0 {
		return p, &NoPlanError{On: ms.String(), Rejected: p.Rejected}
	}
	if len(chosen) > r.Top {
		chosen = chosen[:r.Top]
	}
	p.Top = chosen
	p.Best = chosen[0]
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
		s.beyondBand(&p)
	}
	if r.Model.MoE() {
		p.Reasons = append(p.Reasons, s.expertNote(p))
	}
	p.Reasons = append(p.Reasons, frameworkNotes(p, cost.NewEstimator())...)
	p.Warnings = warnings(p)
	if r.ExampleCost > 0 {
		if err := p.checkInput(); err != nil {
			return p, err
		}
	}
	return p, nil
}

// chooseTiers applies the rule order and returns the tiers whose layouts
// compete on speed, adding the reasons. Inside a slice: data parallelism,
// then FSDP when a replica does not fit, then tensor, context or pipeline.
// Across slices, with that in-slice strategy kept ("the same sharding
// strategy that worked within a single slice can be kept within each
// slice"): data parallelism, then FSDP when memory needs it; pipeline only
// when DP or FSDP across slices would need a global batch above the limit
// to hide its all-reduce, or when neither can run.
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
	if chosen != nil {
		pool = []Tier{*chosen}
		switch chosen.Across {
		case AcrossDP:
			p.Reasons = append(p.Reasons, note("", "across slices: data parallelism, the Multislice default: only the gradients cross DCN, once per step"))
		case AcrossFSDP:
			p.Reasons = append(p.Reasons, note("", "across slices: FSDP, because data parallelism across slices does not fit (%s): sharding the state over the slices too makes room",
				s.rejectedSummary(Tier{in, AcrossDP})))
		}
	}
	tooSmall, rule := s.batchRule(in, pipe != nil)
	p.Reasons = append(p.Reasons, rule)
	switch {
	case chosen == nil && pipe != nil:
		pool = []Tier{*pipe}
		p.Reasons = append(p.Reasons, note("", "across slices: pipeline parallelism, because neither data parallelism nor FSDP across slices can run (%s)",
			s.rejectedSummary(Tier{in, AcrossDP}, Tier{in, AcrossFSDP})))
	case tooSmall && pipe != nil:
		pool = append(pool, *pipe)
	}
	return pool
}

// firstTiers returns the first tier in rule order, in-slice strategy first,
// with DP or FSDP across slices (or one slice) that has a layout that
// runs, and the first with pipeline across slices; nil where none runs.
func (s *searcher) firstTiers() (chosen, pipe *Tier) {
	ms := s.req.Multislice
	has := func(t Tier) bool { return len(s.best[t]) > 0 }
	across := []Across{AcrossNone}
	if ms.Slices > 1 {
		across = []Across{AcrossDP, AcrossFSDP}
	}
	for in := InDP; in <= InModel && chosen == nil; in++ {
		for _, a := range across {
			if t := (Tier{in, a}); has(t) {
				chosen = &t
				break
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
// that strategy that runs.
func (s *searcher) insideNote(in Inside, best Tier) Note {
	r := s.req
	ms := r.Multislice
	inside := func(in Inside) []Tier {
		var out []Tier
		for _, t := range tiers(ms.Slices) {
			if t.In == in {
				out = append(out, t)
			}
		}
		return out
	}
	switch in {
	case InDP:
		b := s.best[best][0].Estimate
		return note("", "inside %s: pure data parallelism: a full replica's weights, gradients and optimizer state (%v) fit in %v of usable HBM per chip with room for %s of activations",
			sliceWord(ms), b.Memory.State(), b.Memory.Usable, unit.Plural(b.MicroBatchSize, "sequence"))
	case InFSDP:
		state := unit.Bytes(float64(r.Model.ParamCount().Total()) * float64(r.Precision.StateBytes()))
		return note("", "inside %s: FSDP: pure data parallelism cannot run (%s): a full replica's state is %v against %v of usable HBM, so weights, gradients and optimizer state are sharded over fsdp",
			sliceWord(ms), s.rejectedSummary(inside(InDP)...), state, ms.Slice.Chip.UsableHBM(r.HBMHeadroom))
	}
	return note("", "inside %s: no data-parallel or FSDP layout can run (%s); tensor, context or pipeline parallelism inside a slice is needed",
		sliceWord(ms), s.rejectedSummary(append(inside(InDP), inside(InFSDP)...)...))
}

// batchRule applies the Multislice batch rule: whether the batch limit
// lets DP or FSDP across slices hide the gradient all-reduce. Its
// threshold is the practical figure the guidance gives (twice the
// break-even batch), not the bare break-even.
func (s *searcher) batchRule(in Inside, canPipe bool) (tooSmall bool, n Note) {
	r := s.req
	ms := r.Multislice
	chip := ms.Slice.Chip
	min := collective.MinTokensPerSlice(chip.PeakBF16, ms.DCNPerChip, ms.Slices)
	need := min * collective.PracticalHeadroom
	limit := float64(r.MaxGlobalBatch) * float64(r.Seq) / float64(ms.Slices)
	verdict := "enough: DP or FSDP across slices can hide its all-reduce"
	switch {
	case limit < need && canPipe:
		verdict = "too small: pipeline parallelism across slices, which sends only activations over DCN, is considered"
	case limit < need:
		verdict = fmt.Sprintf("too small, but no layout with pipeline parallelism across slices can run (%s)", s.rejectedSummary(Tier{in, AcrossPipeline}))
	}
	bits := collective.MultisliceBitsPerParam(ms.Slices)
	return limit < need, note(OptionMaxGlobalBatch, "Multislice batch rule: %d bits of DCN per parameter for %d slices, backward intensity 4·B/%d FLOP per bit against %.0f FLOP per DCN bit on %s, so %s tokens per slice break even and %s in practice hide the all-reduce; {max_global_batch} allows %s: %s",
		bits, ms.Slices, bits, float64(chip.PeakBF16)/ms.DCNPerChip.Bits(), chip.Generation, count(min), count(need), count(limit), verdict)
}

// poolVerdict says which of the competing tiers won, and, when pipeline
// across slices won, the batch DP or FSDP across slices would have needed.
func (s *searcher) poolVerdict(best Candidate, pool []Tier) Note {
	ms := s.req.Multislice
	chip := ms.Slice.Chip
	if best.Tier.Across == AcrossPipeline {
		need := collective.MinTokensPerSlice(chip.PeakBF16, ms.DCNPerChip, ms.Slices) * collective.PracticalHeadroom
		batch := math.Ceil(need * float64(ms.Slices) / float64(s.req.Seq))
		return note(OptionMaxGlobalBatch, "%s wins: %.0f tokens/s per chip; DP or FSDP across slices would have needed a global batch of at least %.0f sequences (%s tokens per slice) to hide its all-reduce, above {max_global_batch} (%d)",
			best.Tier, best.Estimate.TokensPerSecondPerChip, batch, count(need), s.req.MaxGlobalBatch)
	}
	var other Candidate
	for _, t := range pool {
		if t != best.Tier && len(s.best[t]) > 0 {
			other = s.best[t][0]
		}
	}
	return note("", "%s wins: %.0f tokens/s per chip; the best with %s (%s) reaches %.0f: its pipeline bubble costs more than the exposed all-reduce",
		best.Tier, best.Estimate.TokensPerSecondPerChip, other.Tier, other.Estimate.Mesh, other.Estimate.TokensPerSecondPerChip)
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

func scopeReason(ms hw.Multislice) string {
	s := ms.Slice
	c := s.Chip
	switch {
	case ms.Slices == 1 && s.Hosts() == 1:
		return fmt.Sprintf("single host: %s is one %s VM with %s", s.AcceleratorType(), c.Host.MachineType, unit.Plural(s.Chips(), "chip"))
	case ms.Slices == 1:
		return fmt.Sprintf("one slice: %s (%s VMs) joined by ICI in %s %s %s", unit.Plural(s.Hosts(), "host"), c.Host.MachineType,
			article(s.Topology.String()), s.Topology, torusOrMesh(s))
	}
	return fmt.Sprintf("multislice: %d slices of %s (%s %s) joined by DCN at %.0f Gbit/s per host",
		ms.Slices, s.AcceleratorType(), s.Topology, torusOrMesh(s), ms.DCNPerHost().Bits()/1e9)
}

// article is "a" or "an" for the word that follows, as it is read aloud:
// "an 8x8x8 torus" (eight), "an 11x..." (eleven), "a 16x16 torus".
func article(next string) string {
	num := next[:len(next)-len(strings.TrimLeft(next, "0123456789"))]
	switch {
	case strings.HasPrefix(num, "8"), num == "11", num == "18":
		return "an"
	case num == "" && next != "" && strings.ContainsRune("aeiouAEIOU", rune(next[0])):
		return "an"
	}
	return "a"
}

func torusOrMesh(s hw.Slice) string {
	if s.Wraps(0) {
		return "torus"
	}
	return "mesh"
}

func warnings(p Plan) []Note {
	var w []Note
	e := p.Best.Estimate
	st := e.Time.Step.Seconds()
	if d := e.Time.DCN.Seconds(); d > 0.1*st {
		w = append(w, note("", "DCN-bound: %.0f%% of the step waits on DCN", 100*d/st))
	}
	if i := e.Time.ICI.Seconds(); i > 0.1*st {
		w = append(w, note("", "ICI-bound: %.0f%% of the step waits on ICI", 100*i/st))
	}
	if total, usable := e.Memory.Total(), e.Memory.Usable; total <= usable {
		// at the edge: the HBM left is less than the memory model's own
		// measured error on this class of model
		band, class := e.Job.MemoryError(), "dense"
		if e.Job.Model.MoE() {
			class = "mixture-of-experts"
		}
		if left := usable - total; float64(left) < band.Median*float64(total) {
			w = append(w, note("", "HBM at the edge: %v left of %v usable, less than the memory model's measured error (%.0f%% median against what XLA reported, %d %s cases); compile the plan ahead of time with MaxText's train_compile, which runs on a CPU machine, before renting TPUs",
				left, usable, 100*band.Median, band.Cases, class))
		}
	}
	ms := p.Request.Multislice
	if ms.Slices > 1 && e.Mesh.Degree(mesh.Data).DCN*e.Mesh.Degree(mesh.FSDP).DCN > 1 {
		chip := ms.Slice.Chip
		need := collective.MinTokensPerSlice(chip.PeakBF16, ms.DCNPerChip, ms.Slices)
		have := float64(e.Job.GlobalBatch) * float64(e.Job.Seq) / float64(ms.Slices)
		if have < need {
			w = append(w, note("", "%.0fk tokens per slice is below the %.0fk the Multislice rule needs to hide the DCN all-reduce", have/1e3, need/1e3))
		}
	}
	if e.PaddingLoss > 0.02 {
		w = append(w, note("", "MXU padding: %.1f%% of the %dx%d arrays' work is padding, mostly in %s (dimensions per chip that are not multiples of %d)",
			100*e.PaddingLoss, ms.Slice.Chip.MXUDim, ms.Slice.Chip.MXUDim, strings.Join(e.RaggedGEMMs, ", "), ms.Slice.Chip.MXUDim))
	}
	if p.Request.Efficiency > 0 {
		w = append(w, note(OptionEfficiency, "compute assumes %.0f%% of the MXU-limited rate for work outside the arrays ({efficiency}), not the calibrated %.0f%%",
			100*p.Request.Efficiency, 100*cost.Job{}.EfficiencyFor(ms.Slice.Chip)))
	}
	return w
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
	var out [][]int
	cur := make([]int, k)
	var rec func(i, left int)
	rec = func(i, left int) {
		if i == k-1 {
			if !free[i] && left != 1 {
				return
			}
			cur[i] = left
			out = append(out, append([]int(nil), cur...))
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
	return out
}

// expertTime is the time of an estimate's expert-axis collectives.
func expertTime(est cost.Estimate) (ici, dcn time.Duration) {
	for _, c := range est.Comms {
		if c.Axis == mesh.Expert {
			ici, dcn = ici+c.ICITime, dcn+c.DCNTime
		}
	}
	return ici, dcn
}

// withRing is j with the ring of experts on or off.
func withRing(j cost.Job, ring bool) cost.Job {
	j.RingOfExperts = ring
	return j
}

// expertNote explains the expert axis of a mixture of experts' plan: what
// the chosen expert parallelism costs, or why none was chosen and what
// the best layout with it would have cost.
func (s *searcher) expertNote(p Plan) Note {
	e := p.Best.Estimate
	spec := s.req.Model
	a2a := func(est cost.Estimate) string {
		ici, dcn := expertTime(est)
		what := "dispatch and combine all-to-alls"
		if est.Job.RingOfExperts {
			what = "ring of experts (tokens all-gathered, outputs reduce-scattered; MaxText use_ring_of_experts)"
			if alt, err := cost.EstimateStep(withRing(est.Job, false), est.Mesh); err == nil {
				ai, ad := expertTime(alt)
				what = fmt.Sprintf("%s, where the all-to-alls would take %s on ICI and %s on DCN;", what, dur(ai), dur(ad))
			}
		}
		return fmt.Sprintf("%s %s on ICI, %s on DCN per step, %s tokens per expert per chip per micro-batch",
			what, dur(ici), dur(dcn), count(est.TokensPerExpert))
	}
	dcn := ""
	if n := p.Rejected[ReasonExpertDCNFirst]; n > 0 {
		dcn = fmt.Sprintf("; expert over DCN refused before it fills a slice (%s)", layouts(n))
	}
	if x := e.Mesh.Size(mesh.Expert); x > 1 {
		return note("", "experts: expert=%d splits the %d experts (%d per chip) and the batch; %s%s", x, spec.Experts, spec.Experts/x, a2a(e), dcn)
	}
	if s.expert == nil {
		return note("", "experts: no layout with expert parallelism ran (the experts, batch or HBM allow none)%s", dcn)
	}
	x := s.expert.Estimate
	slower := fmt.Sprintf("is %.0f%% slower", 100*(1-x.TokensPerSecondPerChip/e.TokensPerSecondPerChip))
	if x.TokensPerSecondPerChip >= 0.995*e.TokensPerSecondPerChip {
		slower = "runs within 0.5% of its speed"
	}
	return note("", "experts: the best layout with expert parallelism, %s, %s: its %s; the expert axis's collectives do not overlap the expert GEMMs that wait for them, where fsdp's weight gathers do%s",
		x.Mesh, slower, a2a(x), dcn)
}
