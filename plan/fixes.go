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
// beats them all, then, for a fixed global batch, the batch the planner
// picks below it.
func fixes(r Request) []string {
	singles, combos := tryFixes(r, openFixes(r))
	var out []string
	best := 0.0
	for _, f := range singles {
		out = append(out, f.text)
		best = max(best, f.mfu)
	}
	var top *fixFound
	for i := range combos {
		if f := &combos[i]; f.mfu > best && (top == nil || f.mfu > top.mfu) {
			top = f
		}
	}
	if top != nil {
		out = append(out, top.text)
	}
	if f, ok := smallerBatch(r); ok {
		out = append(out, f.text)
	}
	return out
}

// smallerBatch is the fix of a fixed global batch too large to fit: the
// plan the job gets with the batch left to the planner under a limit of
// one sequence less, said with the batch it then picks.
func smallerBatch(r Request) (fixFound, bool) {
	if r.GlobalBatch <= 1 {
		return fixFound{}, false
	}
	q := r
	q.GlobalBatch, q.MaxGlobalBatch = 0, r.GlobalBatch-1
	p, err := search(q) // only whether it runs, and its Best
	if err != nil {
		return fixFound{}, false
	}
	e := p.Best.Estimate
	return fixFound{textf("{global_batch} %d: %s, remat %s, MFU %s", e.Job.GlobalBatch, e.Mesh, e.Job.Remat, e.MFUPeaks()), e.MFU}, true
}

// fix is one change to a request that may let its job fit.
type fix struct {
	what  text
	group int // changes of one group exclude each other
	set   func(*Request)
}

// openFixes lists the changes r leaves open: bf16 state unless its
// precision is already as small, an offloading remat policy unless it
// fixes one, the optimizer state in host memory unless it is there (the
// last two not under FrameworkPyTorch, whose export offloads nothing).
func openFixes(r Request) []fix {
	var changes []fix
	if p := r.Precision; p == (cost.Precision{}) || p.Weight+p.Master+p.Gradient+p.Optimizer > 8 {
		changes = append(changes, fix{"{precision} bf16", 0, func(q *Request) { q.Precision = cost.MaxTextBF16Precision() }})
	}
	if r.Framework == FrameworkPyTorch {
		return changes // PyTorch/XLA's export offloads nothing (PyTorchSettingsLimit)
	}
	if r.Remat == "" {
		for _, x := range []cost.Remat{cost.RematMinimalOffloaded, cost.RematQKVProjOffloaded} {
			changes = append(changes, fix{text(textf("{remat} %s", x)), 1, func(q *Request) { q.Remat = x }})
		}
	}
	if !r.OptimizerOffload {
		changes = append(changes, fix{"{optimizer_offload}", 2, func(q *Request) { q.OptimizerOffload = true }})
	}
	return changes
}

// fixFound is a set of changes under which the job runs, said with the
// best layout it then gets, and that layout's MFU.
type fixFound struct {
	text string
	mfu  float64
}

// tryFixes searches r under every set of the changes with no two of one
// group, and returns the sets that run: those of one change (singles) and
// those of several (combos), in the order of the sets' bits.
func tryFixes(r Request, changes []fix) (singles, combos []fixFound) {
	for set := 1; set < 1<<len(changes); set++ {
		q, what, ok := applyFixes(r, changes, set)
		if !ok {
			continue
		}
		p, err := search(q) // only whether it runs, and its Best
		if err != nil {
			continue
		}
		e := p.Best.Estimate
		f := fixFound{textf("%s: %s, remat %s, %d sequences, MFU %s", text(strings.Join(what, " ")), e.Mesh, e.Job.Remat, e.Job.GlobalBatch, e.MFUPeaks()), e.MFU}
		if len(what) == 1 {
			singles = append(singles, f)
		} else {
			combos = append(combos, f)
		}
	}
	return singles, combos
}

// applyFixes is r with the changes whose bits are in set made, and their
// texts; ok is false when two of them are of one group.
func applyFixes(r Request, changes []fix, set int) (q Request, what []string, ok bool) {
	q = r
	groups := map[int]bool{}
	for i, c := range changes {
		if set&(1<<i) == 0 {
			continue
		}
		if groups[c.group] {
			return q, nil, false
		}
		groups[c.group] = true
		c.set(&q)
		what = append(what, string(c.what))
	}
	return q, what, true
}

// FixTexts are e's fixes, each with its options spelt by name
// (Option.String when nil), as Phrase lists them after "it would run
// with": the fixes a front end's JSON error document lists, never nil.
func (e *NoPlanError) FixTexts(name func(Option) string) []string {
	out := make([]string, len(e.Fixes))
	for i, f := range e.Fixes {
		out[i] = phrase(f, name)
	}
	return out
}
