package plan

import (
	"fmt"
	"strings"

	"shardlab/cost"
	"shardlab/mesh"
	"shardlab/unit"
)

// acrossSlot is where the rule order (searcher.chooseTiers) puts the
// across-slices reason and what it saw: the in-slice strategy, and
// whether pipeline crosses the slices because neither DP nor FSDP across
// them runs. The reason itself is written by acrossNote once the plan's
// layout is chosen, so that it explains that layout, not the rule's
// first choice.
type acrossSlot struct {
	// at is the reason's index in the plan's reasons; 0 for none (reason
	// 0 is the scope).
	at       int
	in       Inside
	pipeOnly bool
}

// reserve holds the across-slices reason's place among p's reasons.
func (a *acrossSlot) reserve(p *Plan) {
	a.at = len(p.Reasons)
	p.Reasons = append(p.Reasons, Note{})
}

// acrossNote is the one across-slices reason of a multislice plan: what
// p.Best, the chosen layout, places on DCN and why. The rule order's
// default, data parallelism, keeps its sentence; FSDP and pipeline
// parallelism say why they cross the slices (the memory, the batch rule,
// or speed beyond the model's error band, where beyondBand chose a layout
// in place of the rule order's) and what the layout's DCN axes send over
// DCN, from its estimate's collectives.
func (s *searcher) acrossNote(p Plan) Note {
	best, rule, in := p.Best.Tier, p.Rule.Tier, s.across.in
	// why is a text: the rejection counts name options ({max_global_batch})
	var why text
	switch {
	case best.Across != rule.Across:
		why = text(textf(", chosen beyond the band in place of the rule order's %s across slices (see below)", acrossWords[rule.Across]))
	case best.Across == AcrossDP:
		return note("", "across slices: data parallelism, the Multislice default: only the gradients cross DCN, once per step")
	case best.Across == AcrossFSDP:
		why = text(textf(", because data parallelism across slices does not fit (%s): sharding the state over the slices too makes room", s.rejectedSummary(Tier{in, AcrossDP})))
	case s.across.pipeOnly:
		why = text(textf(", because neither data parallelism nor FSDP across slices can run (%s)", s.rejectedSummary(Tier{in, AcrossDP}, Tier{in, AcrossFSDP})))
	default:
		why = ", because the batch limit is too small for DP or FSDP across slices to hide their all-reduce (the batch rule below) and the pipeline is faster"
	}
	return note("", "across slices: %s%s; %s", acrossWords[best.Across], why, dcnTraffic(p.Best.Estimate))
}

// acrossWords names the cross-slice strategies in a sentence.
var acrossWords = [...]string{AcrossNone: "no parallelism", AcrossDP: "data parallelism", AcrossFSDP: "FSDP", AcrossPipeline: "pipeline parallelism"}

// dcnTraffic says what a layout sends over DCN: its DCN axes and, per
// chip per step, each collective that crosses the slices, as cost
// counts it (the plan's collectives table).
func dcnTraffic(e cost.Estimate) string {
	var axes, sent []string
	for a := range mesh.Axis(mesh.NumAxes) {
		if d := e.Mesh.Degree(a); d.DCN > 1 {
			axes = append(axes, fmt.Sprintf("%s=%d", a, d.DCN))
		}
	}
	for _, c := range e.Comms {
		if c.DCNBytes > 0 {
			sent = append(sent, fmt.Sprintf("%s %s %s, %v in all", c.Axis, c.What, times(c.Count), c.DCNBytes))
		}
	}
	return fmt.Sprintf("over DCN (%s), per chip per step: %s", strings.Join(axes, ", "), strings.Join(sent, "; "))
}

// times is "once", "twice" or "n times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return unit.Plural(n, "time")
}
