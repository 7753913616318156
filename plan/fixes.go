package plan

import (
	"strings"

	"shardlab/cost"
)

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
