package plan

import (
	"shardlab/cost"
	"shardlab/unit"
)

// offloadRemats are MaxText's remat policies that move saved activations
// to host memory, which a search weighs only when asked
// (cost.SearchRemats: they take host RAM and PCIe time that the user
// should choose knowingly).
var offloadRemats = [...]cost.Remat{cost.RematMinimalOffloaded, cost.RematQKVProjOffloaded}

// WeighOffload weighs the offloading remat policies against a searched
// plan whose policy the search chose: for each, the plan a search gets
// with it (a lean search: only its best), and where the fastest of them
// is predicted faster than p's by more than the band's width, so that it
// is faster whatever either prediction's error within validate's
// held-out band, a reason names it, its layout, its gain and the host
// memory it takes. The band is Plan.margin's, as for layouts: where p
// withholds its own, the band its job pooled into, named in the reason.
// p is unchanged otherwise: the offloading plan is the
// user's to ask for. It costs a lean search a policy, so the planner's
// own Search leaves it to the commands that print a plan.
func (p *Plan) WeighOffload() {
	r := p.Request
	m, measured := p.margin()
	if r.Remat != "" || r.Axes != nil || r.DeviceAxes != nil || !measured {
		return
	}
	var fast *Candidate
	for _, x := range offloadRemats {
		q := r
		q.Remat, q.BestOnly, q.Top = x, true, 1
		alt, err := search(q)
		if err == nil && (fast == nil || better(alt.Best, *fast)) {
			fast = &alt.Best
		}
	}
	if fast == nil {
		return
	}
	a, b := fast.Estimate, p.Best.Estimate
	gain := a.TokensPerSecondPerChip/b.TokensPerSecondPerChip - 1
	if gain <= m.band.Width() {
		return
	}
	p.Reasons = append(p.Reasons, note(OptionRemat, "with {remat} %s the best layout, %s, is predicted %.0f%% faster (%.0f against %.0f tokens/s per chip), more than %s; it keeps %v a chip in host memory and moves it over PCIe, which the search weighs only when asked",
		a.Job.Remat, a.Mesh, 100*gain, a.TokensPerSecondPerChip, b.TokensPerSecondPerChip, m.allows(false), unit.Bytes(a.Memory.Host)))
}
