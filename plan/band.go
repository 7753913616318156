package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"shardlab/cost"
	"shardlab/hw"
)

// alternatives is the best layout of every tier outside pool that runs,
// in rule order.
func (s *searcher) alternatives(pool []Tier) []Candidate {
	var out []Candidate
	for _, t := range tiers(s.req.Multislice.Slices) {
		if !slices.Contains(pool, t) && len(s.best[t]) > 0 {
			out = append(out, s.best[t][0])
		}
	}
	return out
}

// beyondBand weighs the Multislice rule order's choice against the
// fastest layout the rules did not reach. The rule order stays the default: a layout
// outside it is chosen only when it is predicted faster by more than the
// margin's width (Plan.margin: the band's, cost.StepBand.Width), so that
// it is faster whatever either prediction's error within validate's
// held-out band; the reason then says which of the rule's premises fails
// here, with the numbers. Within the margin the rule's choice is kept and
// the note says by how much the other is predicted faster. Where the plan
// withholds its band (PredictionBand), the margin is the band the job
// pooled into, and the notes say so. Every alternative is a layout the
// search costed and could run, so tensor and context parallelism stay off
// DCN either way. Every tier competes, its in-slice strategy included:
// on one slice the in-slice order (DP while a replica fits, then FSDP,
// then model parallel) is the rule, and a replica that barely fits can
// force a costlier remat policy than FSDP needs.
func (s *searcher) beyondBand(p *Plan) {
	var fast *Candidate
	for i, a := range p.Alternatives {
		if a.Estimate.TokensPerSecondPerChip > p.Best.Estimate.TokensPerSecondPerChip && (fast == nil || better(a, *fast)) {
			fast = &p.Alternatives[i]
		}
	}
	if fast == nil {
		return
	}
	rule, alt := p.Best, *fast
	gain := alt.Estimate.TokensPerSecondPerChip/rule.Estimate.TokensPerSecondPerChip - 1
	m, measured := p.margin()
	if gain <= m.band.Width() || !measured {
		for _, a := range p.Alternatives {
			if g := a.Estimate.TokensPerSecondPerChip/rule.Estimate.TokensPerSecondPerChip - 1; g > notedGain {
				p.Reasons = append(p.Reasons, tieNote(a, g, m, measured))
			}
		}
		return
	}
	p.Best = alt
	p.Top = s.best[alt.Tier][:min(len(s.best[alt.Tier]), s.req.Top)]
	p.Alternatives = s.alternatives([]Tier{alt.Tier})
	p.Reasons = append(p.Reasons, note("", "beyond the band: %s (%s) is predicted %.0f%% faster than the rule order's choice, %s (%s), more than %s, so it is chosen; %s: %s",
		alt.Estimate.Mesh, alt.Name(), 100*gain, rule.Estimate.Mesh, rule.Name(), m.allows(true), premise(rule.Tier, alt.Tier), because(rule, alt)))
}

// notedGain is the predicted gain past which a faster layout or remat
// policy the plan does not choose is named in its reasons.
const notedGain = 0.05

// tieNote says that a, predicted g faster than the rule order's choice,
// is not chosen: within the margin m, or, where nothing measures a
// margin (measured false: Plan.margin), because no margin can show it
// faster by more than the model's error. The rule order is then the
// default that stands, as it stands within a margin.
func tieNote(a Candidate, g float64, m margin, measured bool) Note {
	if !measured {
		return note("", "note: %s (%s) is predicted %.0f%% faster, but this job has no measured error to weigh that by: the rule order's choice stands",
			a.Estimate.Mesh, a.Name(), 100*g)
	}
	return note("", "note: %s (%s) is predicted %.0f%% faster, within %s: the rule order's choice stands",
		a.Estimate.Mesh, a.Name(), 100*g, m.allows(true))
}

// margin is the band two predictions of a plan's job are weighed by
// (beyondBand, tieNote, WeighOffload), which owns that choice.
type margin struct {
	band cost.StepBand
	// standIn is, where band is not the job's own, the job that has
	// none ("int8 v6e", "PyTorch/XLA"); "" where it is.
	standIn string
}

// margin is p's margin between layouts or remat policies of its job: the
// band p gives (PredictionBand), or, where p withholds it (bandWithheld),
// the band the job pooled into, p.Band, whose width is measured, though
// not on a job of this kind. A withheld band means nothing measures the
// job's absolute step; the margin compares two predictions of the same
// job, which share what sets it apart (its quantization, its framework),
// so the nearest measured width weighs them rather than none, and the
// notes name it. false where no band has rows at all.
func (p Plan) margin() (margin, bool) {
	if b, ok := p.PredictionBand(); ok {
		return margin{band: b}, true
	}
	if p.Band.Rows == 0 {
		return margin{}, false
	}
	standIn := "PyTorch/XLA"
	if _, ok := pyTorchUncalibrated(p); !ok {
		standIn = fmt.Sprintf("%s %s", p.Best.Estimate.Job.Quantization, p.Request.Multislice.Slice.Chip.Generation)
	}
	return margin{band: p.Band, standIn: standIn}, true
}

// allows says m's width, where it comes from when it stands in for the
// job's own band, and with span where the band's percentiles are from:
// "the 11% the model's error allows (no band for int8 v6e; the layouts
// are weighed by dense v6e's 11%)".
func (m margin) allows(span bool) string {
	s := fmt.Sprintf("the %.0f%% the model's error allows", 100*m.band.Width())
	switch {
	case m.standIn != "":
		s += fmt.Sprintf(" (no band for %s; the layouts are weighed by %s", m.standIn, weighedBy(m.band))
		if span {
			s += ": " + bandSpan(m.band)
		}
		s += ")"
	case span:
		s += " (" + bandSpan(m.band) + ")"
	}
	return s
}

// weighedBy names band b's width with its rows: "dense v6e's 11%", or,
// pooled over generations, "the 7% of dense runs of every generation".
func weighedBy(b cost.StepBand) string {
	if b.Generation != "" && b.Class != "" {
		return fmt.Sprintf("%s %s's %.0f%%", b.Class, b.Generation, 100*b.Width())
	}
	return fmt.Sprintf("the %.0f%% of %s", 100*b.Width(), b.Runs())
}

// PredictionBand is the band p's predicted figures (step time, MFU,
// tokens/s, and what scales with the step) carry, where p gives one:
// p.Band, the step-time model's measured error on the chosen layout's
// generation and class; false where it has no rows, or where its rows
// do not stand for the job (bandWithheld, which the warnings say). Every
// front end prints this band, and none p.Band; it is also the margin
// between layouts (Plan.margin), which without it is p.Band, named.
func (p Plan) PredictionBand() (cost.StepBand, bool) {
	if _, withheld := p.bandWithheld(); withheld || p.Band.Rows == 0 {
		return cost.StepBand{}, false
	}
	return p.Band, true
}

// bandWithheld says, as a warning, why p gives no band: under
// FrameworkPyTorch, because the model's efficiency and band are MaxText's
// (pyTorchUncalibrated); for a job whose matmuls are quantized (as
// cost.Job.BandIn classes it) on a generation none of whose quantized runs
// is among validate's held-out rows, because the band it pooled into ran
// in bf16: the quantized step, whose MFU of the bf16 peak may pass 100 %
// (its matmuls run at the int8 or fp8 peak), was never compared with a
// run of its kind there. A band from those rows would be presented as
// validated where nothing validates it. false when p gives its band.
func (p Plan) bandWithheld() (Note, bool) {
	if n, ok := pyTorchUncalibrated(p); ok {
		return n, true
	}
	j := p.Best.Estimate.Job
	if p.Band.Rows == 0 || j.Quantization == cost.QuantNone || j.UnquantizedExperts() {
		return Note{}, false
	}
	g := p.Request.Multislice.Slice.Chip.Generation
	if own, _ := cost.BandCell(g, cost.ClassQuantized); own.Rows > 0 {
		return Note{}, false
	}
	return note(OptionQuantization, "no error band: shardlab validate holds no quantized %s run, and the band this job would pool into, %s (%d rows), ran in bf16: the %s step, %.1f%% of the bf16 peak, has not been compared with a run of its kind",
		g, p.Band.Runs(), p.Band.Rows, j.Quantization, 100*p.Best.Estimate.MFU), true
}

// bandSpan says what the band is and where it comes from.
func bandSpan(b cost.StepBand) string {
	return fmt.Sprintf("held-out MFU errors from %+.1f%% to %+.1f%%, the 10th to 90th percentile over %d %s in shardlab validate",
		100*b.Low, 100*b.High, b.Rows, b.Runs())
}

// premise is the rule order's premise that put rule's tier before alt's:
// the cross-slice one when the two differ across slices, the in-slice one
// when they differ inside, both when both differ.
func premise(rule, alt Tier) string {
	var across, inside string
	switch {
	case rule.Across == alt.Across:
	case rule.Across == AcrossPipeline:
		across = "that at this batch limit DP or FSDP across slices cannot hide its gradient reduction over DCN, so a pipeline's bubble costs less"
	case alt.Across == AcrossFSDP:
		across = "that data parallelism, which sends only the gradients over DCN once per step, is the cheapest use of DCN"
	case alt.Across == AcrossPipeline:
		across = "that a pipeline across slices pays a bubble that DP or FSDP across slices does not"
	default:
		across = "that the cross-slice strategy the rules reach first is the fastest"
	}
	switch {
	case rule.In == alt.In:
	case alt.In < rule.In:
		inside = "that sharding the state inside a slice, over ICI, costs less than sharding it across slices, over DCN"
	case rule.In == InDP:
		inside = "that pure data parallelism inside a slice is the cheapest while a replica fits"
	case rule.In == InFSDP:
		inside = "that FSDP inside a slice costs less than tensor, context or pipeline parallelism there"
	default:
		inside = "that the in-slice strategy the rules reach first is the fastest"
	}
	switch {
	case across != "" && inside != "":
		return "the rule order's premises, " + across + ", and " + inside + ", do not hold here"
	case across != "":
		return "the rule order's premise, " + across + ", does not hold here"
	}
	return "the rule order's premise, " + inside + ", does not hold here"
}

// because names the parts of the rule's step that the faster layout
// spends less on, largest first, per sequence of each one's global batch
// (throughput is what the two are ranked by); when the faster one sends
// gradients or weights over DCN, how much of that hides under compute;
// and the batch, remat and micro-batch of each when they differ.
func because(rule, alt Candidate) string {
	re, ae := rule.Estimate, alt.Estimate
	r, a := re.Time, ae.Time
	rb, ab := time.Duration(max(re.Job.GlobalBatch, 1)), time.Duration(max(ae.Job.GlobalBatch, 1))
	type part struct {
		name     string
		rule, at time.Duration
	}
	parts := []part{{"compute", r.Compute / rb, a.Compute / ab}, {"exposed ICI", r.ICI / rb, a.ICI / ab}, {"exposed DCN", r.DCN / rb, a.DCN / ab},
		{"slice sync", r.Sync / rb, a.Sync / ab}, {"pipeline bubble", r.Bubble / rb, a.Bubble / ab}}
	slices.SortStableFunc(parts, func(x, y part) int { return int((y.rule - y.at) - (x.rule - x.at)) })
	var saved []string
	for _, pt := range parts[:2] {
		if pt.rule > pt.at {
			saved = append(saved, fmt.Sprintf("%s %s against %s", pt.name, dur(pt.at), dur(pt.rule)))
		}
	}
	out := fmt.Sprintf("per sequence of its batch, its step takes %s against the rule's %s (%s)", dur(a.Step/ab), dur(r.Step/rb), strings.Join(saved, ", "))
	if alt.Tier.Across == AcrossDP || alt.Tier.Across == AcrossFSDP {
		var dcn time.Duration
		for _, c := range ae.Comms {
			if c.Overlapped {
				dcn += c.DCNTime
			}
		}
		out += fmt.Sprintf("; its DCN collectives take %s a step and hide under %s of compute but for %s", dur(dcn), dur(a.Passes()), dur(a.DCN))
	}
	if ac, rc := chipBatch(ae), chipBatch(re); re.Job.Remat != ae.Job.Remat || ac.PerChip != rc.PerChip || re.Job.GlobalBatch != ae.Job.GlobalBatch {
		out += fmt.Sprintf("; it runs a global batch of %d with remat %s and %s per chip per micro-batch, the rule's choice %d with remat %s and %s",
			ae.Job.GlobalBatch, ae.Job.Remat, sequences(ac.PerChip), re.Job.GlobalBatch, re.Job.Remat, decimal(rc.PerChip))
	}
	return out
}

// bandName says which band a plan's figures carry, and, when the job's
// own cell has too few rows for a band, that it pooled: "validate's
// held-out 80 % band for dense runs of every generation, 39 rows; dense
// tpu7x runs have 6".
func bandName(b cost.StepBand, j cost.Job, g hw.Generation) string {
	s := fmt.Sprintf("validate's held-out %.0f %% band for %s, %d rows", 100*(cost.BandHigh-cost.BandLow), b.Runs(), b.Rows)
	if own, pooled := ownCell(b, j, g); pooled {
		s += fmt.Sprintf("; %s have %d", own.Runs(), own.Rows)
	}
	if j.Quantization != cost.QuantNone && j.UnquantizedExperts() {
		s += "; " + keptBand(j)
	}
	return s
}

// andList joins words as read: "a", "a and b", "a, b and c".
func andList(w []string) string {
	if len(w) < 2 {
		return strings.Join(w, "")
	}
	return strings.Join(w[:len(w)-1], ", ") + " and " + w[len(w)-1]
}

// keptBand says why a quantized MoE job whose routed experts stay bf16
// (cost.Job.UnquantizedExperts) keeps its model's band, exact about what
// stays bf16 there: the routed experts' GEMMs (their share of the active
// parameters), the output layer (and MTP modules: cost's headFLOPs) and
// the attention core (cost.Job's attention, at the bf16 peak), none of which
// MaxText's rule quantizes (its int8 rule names dot_general alone, in
// module_path "decoder/.*layers.*": layers/quantizations.py
// get_quantization_rule @e591f30c); the decoder layers' other projections,
// which are dot_generals, run quantized: "under int8 its routed experts'
// GEMMs (88% of its active parameters), its output layer and its
// attention core stay bf16, and its attention and router projections
// run int8, so this job keeps its MoE band".
func keptBand(j cost.Job) string {
	pc := j.Model.ParamCount()
	routed := float64(pc.MoELayers*pc.ActiveExperts) * float64(pc.Expert)
	under := string(j.Quantization)
	if j.Quantization != cost.QuantInt8 {
		under += " with a capacity factor" // UnquantizedExperts: the dropping path's einsums
	}
	other := []string{"attention", "router"}
	if pc.Shared > 0 {
		other = append(other, "shared-expert")
	}
	if pc.DenseLayers() > 0 {
		other = append(other, "dense-MLP")
	}
	head := "output layer"
	if j.Model.MTPLayers > 0 {
		head = "output layer and MTP modules" // cost's headFLOPs
	}
	return fmt.Sprintf("under %s its routed experts' GEMMs (%.0f%% of its active parameters), its %s and its attention core stay bf16, and its %s projections run %s, so this job keeps its %s band",
		under, 100*routed/float64(pc.Active()), head, andList(other), j.Quantization, j.Class())
}

// ownCell is the band cell of job j's own generation g and class (the
// quantized class for a job whose matmuls are quantized, as
// cost.Job.BandIn classes it: not an MoE job whose routed experts stay in
// bf16), with its held-out rows, and whether band b is another cell's:
// pooled past j's for its few rows.
func ownCell(b cost.StepBand, j cost.Job, g hw.Generation) (cost.StepBand, bool) {
	own := cost.StepBand{Generation: g, Class: j.Class()}
	if j.Quantization != cost.QuantNone && !j.UnquantizedExperts() {
		own.Class = cost.ClassQuantized
	}
	if b.Generation == own.Generation && b.Class == own.Class {
		return own, false
	}
	c, _ := cost.BandCell(own.Generation, own.Class)
	own.Rows = c.Rows
	return own, true
}
