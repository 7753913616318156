package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/mesh"
	"shardlab/unit"
)

func scopeReason(ms hw.Multislice) string {
	s := ms.Slice
	vm := s.Host().MachineType
	switch {
	case ms.Slices == 1 && s.Hosts() == 1:
		return fmt.Sprintf("single host: %s is one %s VM with %s", s.AcceleratorType(), vm, unit.Plural(s.Chips(), "chip"))
	case ms.Slices == 1:
		return fmt.Sprintf("one slice: %s (%s VMs) joined by ICI in %s %s %s", unit.Plural(s.Hosts(), "host"), vm,
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

// roomier names, for a plan at the edge, the fastest layout the plan
// shows (its chosen tier's top layouts, then the other tiers' best) that
// leaves more HBM than the memory model's measured error, and what it
// costs; empty where none does.
func roomier(p Plan, band cost.ErrorBand) string {
	for _, c := range slices.Concat(p.Top, p.Alternatives) {
		e := c.Estimate
		if total, usable := e.Memory.Total(), e.Memory.Usable; e.Memory.Fits() && !band.AtEdge(total, usable) {
			return fmt.Sprintf("; the fastest layout shown that leaves more is %s, remat %s, %d sequences (%v left; MFU %.1f%% against %.1f%%)",
				e.Mesh.String(), e.Job.Remat, e.Job.GlobalBatch, usable-total, 100*e.MFU, 100*p.Best.Estimate.MFU)
		}
	}
	return ""
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
	if total, usable, band := e.Memory.Total(), e.Memory.Usable, e.Job.MemoryError(); band.AtEdge(total, usable) {
		// at the edge: the HBM left is less than the memory model's own
		// measured error on this class of model
		class := "dense"
		if e.Job.Model.MoE() {
			class = "mixture-of-experts"
		}
		check := "compile the plan ahead of time with MaxText's train_compile, which runs on a CPU machine, before renting TPUs"
		if p.Request.Framework == FrameworkPyTorch {
			check = "PyTorch/XLA has no compile for a slice without its TPUs: check the script's memory in a first step on them"
		}
		w = append(w, note("", "HBM at the edge: %v left of %v usable, less than the memory model's measured error (%.0f%% median against what XLA reported, %d %s cases); %s%s",
			usable-total, usable, 100*band.Median, band.Cases, class, text(check), roomier(p, band)))
	}
	w = append(w, inChipWarnings(e)...)
	ms := p.Request.Multislice
	if m := e.Memory; m.HostUnchecked() {
		w = append(w, hostUnchecked(m, ms.Slice))
	}
	if ms.Slices > 1 && e.Mesh.Degree(mesh.Data).DCN*e.Mesh.Degree(mesh.FSDP).DCN > 1 {
		need := p.Request.breakEvenTokens()
		have := float64(e.Job.GlobalBatch) * float64(e.Job.Seq) / float64(ms.Slices)
		if have < need {
			w = append(w, note("", "%.0fk tokens per slice is below the %.0fk the Multislice rule needs to hide the DCN all-reduce", have/1e3, need/1e3))
		}
	}
	if e.PaddingLoss > 0.02 {
		w = append(w, note("", "MXU padding: %.1f%% of the %dx%d arrays' work is padding, mostly in %s (dimensions per chip that are not multiples of %d)",
			100*e.PaddingLoss, ms.Slice.Chip.MXUDim, ms.Slice.Chip.MXUDim, strings.Join(e.RaggedGEMMs, ", "), ms.Slice.Chip.MXUDim))
	}
	if q := e.Job.Quantization; q != cost.QuantNone {
		if n := quantizationGain(ms.Slice.Chip, q.Format()); n != "" {
			w = append(w, note(OptionQuantization, "%s", n))
		}
	}
	if n, ok := pastPositions(p.Request); ok {
		w = append(w, n)
	}
	if n, ok := maxTextWarning(p); ok {
		w = append(w, n)
	}
	if n, ok := p.bandWithheld(); ok {
		w = append(w, n)
	}
	if p.Request.Efficiency > 0 {
		w = append(w, note(OptionEfficiency, "compute assumes %.0f%% of the MXU-limited rate for work outside the arrays ({efficiency}), not the calibrated %.0f%%",
			100*p.Request.Efficiency, 100*cost.Job{}.EfficiencyFor(ms.Slice.Chip)))
	}
	return w
}

// pastPositions warns when the request trains a longer sequence than the
// model's released checkpoint has positions for (model.Spec.MaxPositions,
// its max_position_embeddings): the plan's costs hold at any length, but a
// run that starts from that checkpoint trains past the positions it was
// trained on, which takes a context extension (RoPE scaling, as
// long-context recipes set it); a run from scratch chooses its own length.
func pastPositions(r Request) (Note, bool) {
	max := r.Model.MaxPositions
	if max == 0 || r.Seq <= max {
		return Note{}, false
	}
	return note(OptionSeq, "sequence %d is past the %d positions %s's released checkpoint has (max_position_embeddings): a run from that checkpoint must extend its context (RoPE scaling, as long-context recipes set it); from scratch the length is yours",
		r.Seq, max, r.Model.Name), true
}

// chunkNote says, where the sequence is longer than the model's attention
// chunk (model.Spec.Chunked: Llama 4), that the chunked layers are costed
// at the chunk, as MaxText builds its llama4 block (models/llama4.py:386,
// CHUNK but for every nope_layer_interval-th layer) and counts its FLOPs
// (utils/maxtext_utils.py calculate_llama4_attention_tflops @e591f30c),
// and what that leaves of the attention core: model.Spec's attention
// FLOPs against the same spec's without a chunk. At the chunk or below,
// one chunk, nothing changes and nothing is said.
func chunkNote(r Request) (Note, bool) {
	s := r.Model
	if !s.Chunked() || r.Seq <= s.AttentionChunk {
		return Note{}, false
	}
	full := s
	full.AttentionChunk = 0
	share := s.AttentionFLOPsPerToken(r.Seq) / full.AttentionFLOPsPerToken(r.Seq)
	return note("", "attention: %d of %s's %d layers attend within chunks of %d tokens and are costed at the chunk, the other %d over all %d tokens, as MaxText builds and counts them: the attention core is %.0f%% of what it would be with every layer global",
		s.ChunkedLayers(), s.Name, s.Layers, s.AttentionChunk, s.Layers-s.ChunkedLayers(), r.Seq, 100*share), true
}

// hostUnchecked warns that what a plan offloads to host memory (m.Host)
// is held to no RAM, because the catalog does not publish the RAM of the
// VM the slice is made of (cost.Memory.HostUnchecked): the one wording of
// it, which the CLI, the JSON and the web page all carry.
func hostUnchecked(m cost.Memory, s hw.Slice) Note {
	return note("", "host RAM not checked: %v a chip is offloaded to host memory, and the RAM of the %s VM is not published",
		m.Host, s.Host().MachineType)
}

// quantizationGain warns when a chip's published peak in format f is no
// higher than its bf16 peak (v5p's fp8: the catalog's [gcp-v5p] gives
// fp8 = bf16): the quantized matmuls run no faster, and the quantization's
// own work makes the step slower than bf16's. It names the formats that
// are faster on the chip; "" when f is.
func quantizationGain(chip hw.Chip, f hw.Format) string {
	peak, _ := chip.Peak(f)
	if peak > chip.PeakBF16 {
		return ""
	}
	var faster []string
	for _, g := range []hw.Format{hw.Int8, hw.FP8} {
		if p, ok := chip.Peak(g); ok && p > chip.PeakBF16 {
			faster = append(faster, fmt.Sprintf("%s (%v)", g, p))
		}
	}
	alt := "no format is faster than bf16 on it"
	if len(faster) > 0 {
		alt = strings.Join(faster, " and ") + " would be faster"
	}
	return fmt.Sprintf("%s buys no speed on %s: its published %s peak, %v, is its bf16 peak, so the quantized matmuls run no faster and the quantization's own work makes the step slower than bf16's; %s", f, chip.Generation, f, peak, alt)
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
		return note("", "experts: %s splits the %d experts (%d per chip) and the batch; %s%s", mesh.Degree{Axis: mesh.Expert, ICI: x, DCN: 1}, spec.Experts, spec.Experts/x, a2a(e), dcn)
	}
	if s.expert == nil && s.req.Axes != nil {
		return note(OptionMesh, "experts: the layout given with {mesh} has no expert axis, so the experts are not split; no layout with one was costed%s", dcn)
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
