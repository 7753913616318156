package emu

import (
	"fmt"
	"math"
	"sort"

	"shardlab/emu/kernel"
)

// A mixture-of-experts MLP as MaxText computes it with a capacity factor
// (its dense dispatch, GShard's formulation: Lepikhin et al. 2020, §2.2
// and Algorithm 1):
//
//   - a router scores every token against every expert, h·Wr; the token
//     goes to its k best experts, weighted by the softmax of those k
//     scores (Mixtral's gating: Jiang et al. 2024, §2.1);
//   - each expert takes at most C = int(max(⌈s·k/E⌉ · capacity_factor,
//     capacity_factor)) of each sequence's s tokens (MaxText's
//     generate_masks, src/maxtext/layers/moe.py @e591f30c), in token
//     order, a token's choices best first; the rest are dropped (they pass
//     the layer on the residual alone);
//   - the device writes its b sequences' tokens into an E × b·C × d_model
//     dispatch buffer, zero where an expert's slots are not used, and one
//     all-to-all over the expert axis hands each expert rank the slots of
//     its E/ep experts from every member; the experts run their SwiGLU on
//     those ep·b·C rows; a second all-to-all brings the outputs back, and
//     each token sums its experts' outputs times their gates.
//
// The backward pass runs the two all-to-alls transposed, so a layer
// moves four buffers of E·b·C·d_model per micro-batch, the bytes
// cost.ExpertAllToAllBytes counts. With tensor parallelism each expert is
// split over tensor as the dense MLP is, and the experts' output is
// all-reduced over tensor before it goes back (the gates' gradient needs
// the whole output).

// validateMoE checks the mixture-of-experts fields.
func (c Config) validateMoE() error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("emu: model %s = %v, want %s: %w", field, v, want, ErrInvalid)
	}
	if c.Experts == 0 {
		switch {
		case c.ExpertsPerToken != 0:
			return bad("experts_per_token", c.ExpertsPerToken, "0 for a dense model (experts = 0)")
		case c.ExpertDFF != 0:
			return bad("expert_d_ff", c.ExpertDFF, "0 for a dense model (experts = 0)")
		case c.FirstDenseLayers != 0:
			return bad("first_dense_layers", c.FirstDenseLayers, "0 for a dense model (experts = 0)")
		case c.CapacityFactor != 0:
			return bad("capacity_factor", c.CapacityFactor, "0 for a dense model (experts = 0)")
		}
		return nil
	}
	switch {
	case c.Experts < 0 || c.Experts > 1024:
		return bad("experts", c.Experts, "0 (dense) or 1 to 1024")
	case c.ExpertsPerToken < 1 || c.ExpertsPerToken > c.Experts:
		return bad("experts_per_token", c.ExpertsPerToken, fmt.Sprintf("1 to experts (%d)", c.Experts))
	case c.ExpertDFF < 0 || c.ExpertDFF > 1<<16:
		return bad("expert_d_ff", c.ExpertDFF, "0 (d_ff) or 1 to 65536")
	case c.FirstDenseLayers < 0 || c.FirstDenseLayers >= c.Layers:
		return bad("first_dense_layers", c.FirstDenseLayers, fmt.Sprintf("0 to layers - 1 (%d)", c.Layers-1))
	case !(c.CapacityFactor > 0 && c.CapacityFactor <= 64):
		// NaN fails both comparisons
		return bad("capacity_factor", c.CapacityFactor, "a number above 0 and at most 64 (the emulator dispatches into capacity buffers; it has no dropless mode)")
	}
	return nil
}

// moeLayer reports whether layer li's MLP is a mixture of experts.
func (c Config) moeLayer(li int) bool { return c.Experts > 0 && li >= c.FirstDenseLayers }

// expertFF is a routed expert's hidden width.
func (c Config) expertFF() int {
	if c.ExpertDFF > 0 {
		return c.ExpertDFF
	}
	return c.DFF
}

// capacity is the rows each expert takes from one sequence of s tokens:
// int(max(⌈s·k/E⌉ · capacity_factor, capacity_factor)), as MaxText
// rounds it, and at least 1. Computed here, not asked of package cost:
// the emulator is cost's independent check.
func (c Config) capacity(s int) int {
	per := math.Ceil(float64(s) * float64(c.ExpertsPerToken) / float64(c.Experts))
	return max(1, int(max(per*c.CapacityFactor, c.CapacityFactor)))
}

// moeActs is what an MoE MLP keeps for its backward pass.
type moeActs[T Float] struct {
	logits Mat[T] // n × E router scores
	idx    []int  // n × k chosen experts, best first
	pos    []int  // n × k row in the expert's b·C rows, −1 if dropped
	gate   []T    // n × k weights
	// the experts' side, ep·C rows per local expert, expert by expert: the
	// dispatched inputs x, the SwiGLU's g, u and a
	x, g, u, a Mat[T]
	back       Mat[T] // E·b·C × d: the experts' outputs, returned
	run        int    // rows per expert on this device: b sequences × capacity
}

// route picks each token's k experts and their gates from the router's
// scores, and each choice's row among the expert's rows: sequence by
// sequence (s rows each), at most capacity per expert, in token order.
func route[T Float](logits Mat[T], k, capacity, s int) (idx, pos []int, gate []T) {
	n, e := logits.R, logits.C
	idx, pos, gate = make([]int, n*k), make([]int, n*k), make([]T, n*k)
	order := make([]int, e)
	for i := range n {
		row := logits.Row(i)
		for j := range order {
			order[j] = j
		}
		// best first; ties to the lower expert
		sort.SliceStable(order, func(a, b int) bool { return row[order[a]] > row[order[b]] })
		mx := row[order[0]]
		var sum T
		for j := range k {
			idx[i*k+j] = order[j]
			gate[i*k+j] = exp(row[order[j]] - mx)
			sum += gate[i*k+j]
		}
		for j := range k {
			gate[i*k+j] /= sum
		}
	}
	// MaxText's priority: a cumulative count over the sequence's tokens,
	// each token's choices in order
	used := make([]int, e)
	for r := range n * k {
		if r%(s*k) == 0 {
			clear(used) // a new sequence
		}
		ex := idx[r]
		if used[ex] < capacity {
			pos[r] = r/(s*k)*capacity + used[ex]
			used[ex]++
		} else {
			pos[r] = -1
		}
	}
	return idx, pos, gate
}

// toExperts reorders the rows an all-to-all delivered — member j's block
// holds its rows of this rank's local experts, local × run rows — into
// expert-major order: expert le's ep·run rows together, member by member.
// fromExperts is its inverse.
func toExperts[T Float](in Mat[T], local, ep, run int) Mat[T] {
	return regroup(in, local, ep, run, true)
}

func fromExperts[T Float](in Mat[T], local, ep, run int) Mat[T] {
	return regroup(in, local, ep, run, false)
}

// regroup moves each (member j, expert le) run of rows between
// member-major and expert-major order.
func regroup[T Float](in Mat[T], local, ep, run int, toExpert bool) Mat[T] {
	out := newMat[T](in.R, in.C)
	w := run * in.C
	for j := range ep {
		for le := range local {
			byExpert, byMember := (le*ep+j)*w, (j*local+le)*w
			if toExpert {
				copy(out.D[byExpert:byExpert+w], in.D[byMember:byMember+w])
			} else {
				copy(out.D[byMember:byMember+w], in.D[byExpert:byExpert+w])
			}
		}
	}
	return out
}

// rowsOf is rows [lo, hi) of m as a view.
func rowsOf[T Float](m Mat[T], lo, hi int) Mat[T] {
	return Mat[T]{R: hi - lo, C: m.C, D: m.D[lo*m.C : hi*m.C]}
}

// moeForward runs the MoE MLP on h (n × d, sequences of s rows) and
// returns its output, to be added to the residual, and what the backward
// pass needs.
func moeForward[T Float](c Config, l *Layer[T], h Mat[T], s int, co colls[T]) (Mat[T], *moeActs[T]) {
	n, d, k, e := h.R, h.C, c.ExpertsPerToken, c.Experts
	local := len(l.Experts)
	ep := e / local
	capacity := c.capacity(s)
	m := &moeActs[T]{run: n / s * capacity, logits: newMat[T](n, e)}
	slots := m.run
	matMul(co.gemm(), m.logits, h, l.Wr, false)
	m.idx, m.pos, m.gate = route(m.logits, k, capacity, s)
	disp := newMat[T](e*slots, d)
	for r, p := range m.pos {
		if p >= 0 {
			copy(disp.Row(m.idx[r]*slots+p), h.Row(r/k))
		}
	}
	m.x = toExperts(Mat[T]{R: e * slots, C: d, D: co.expertAllToAll(disp.D)}, local, ep, slots)
	rows := ep * slots
	f := l.Experts[0].Wg.C
	m.g, m.u, m.a = newMat[T](local*rows, f), newMat[T](local*rows, f), newMat[T](local*rows, f)
	y := newMat[T](local*rows, d)
	for le, ex := range l.Experts {
		lo, hi := le*rows, (le+1)*rows
		x, g, u, a := rowsOf(m.x, lo, hi), rowsOf(m.g, lo, hi), rowsOf(m.u, lo, hi), rowsOf(m.a, lo, hi)
		matMul(co.gemm(), g, x, ex.Wg, false)
		matMul(co.gemm(), u, x, ex.Wu, false)
		swiglu(co.gemm(), a.D, g.D, u.D)
		matMul(co.gemm(), rowsOf(y, lo, hi), a, ex.Wd, false)
	}
	co.tensorAllReduce(y.D) // row-parallel Wd: the outputs are partial sums over tensor
	m.back = Mat[T]{R: e * slots, C: d, D: co.expertAllToAll(fromExperts(y, local, ep, slots).D)}
	out := newMat[T](n, d)
	for r, p := range m.pos {
		if p >= 0 {
			axpy(out.Row(r/k), m.back.Row(m.idx[r]*slots+p), m.gate[r])
		}
	}
	return out, m
}

// swiglu sets a = silu(g)·u, exp(−g) computed a vector at a time.
func swiglu[T Float](gemm kernel.GEMM, a, g, u []T) {
	for i, v := range g {
		a[i] = -v
	}
	expSub(gemm, a, a, 0)
	for i, v := range g {
		a[i] = v / (1 + a[i]) * u[i]
	}
}

// moeBackward takes the gradient dout of moeForward's output, adds the
// weight gradients to gl and returns the gradient of h in two parts:
// the experts' (a partial sum over tensor, like a column-parallel
// layer's, to be all-reduced) and the router's (whole on every rank).
func moeBackward[T Float](c Config, l, gl *Layer[T], m *moeActs[T], h, dout Mat[T], co colls[T]) (dExperts, dRouter Mat[T]) {
	n, d, k, e, slots := h.R, h.C, c.ExpertsPerToken, c.Experts, m.run
	local := len(l.Experts)
	ep := e / local
	// combine: out_i = Σ_j gate_ij · back[slot_ij]
	dgate := make([]T, n*k)
	dback := newMat[T](e*slots, d)
	for r, p := range m.pos {
		if p >= 0 {
			slot := m.idx[r]*slots + p
			dgate[r] = dot(dout.Row(r/k), m.back.Row(slot))
			axpy(dback.Row(slot), dout.Row(r/k), m.gate[r])
		}
	}
	dy := toExperts(Mat[T]{R: e * slots, C: d, D: co.expertAllToAll(dback.D)}, local, ep, slots)
	rows := ep * slots
	f := l.Experts[0].Wg.C
	dx := newMat[T](local*rows, d)
	dg, du := newMat[T](rows, f), newMat[T](rows, f)
	da := newMat[T](rows, f)
	for le, ex := range l.Experts {
		lo, hi := le*rows, (le+1)*rows
		gx := gl.Experts[le]
		x, g, u, a, dyl := rowsOf(m.x, lo, hi), rowsOf(m.g, lo, hi), rowsOf(m.u, lo, hi), rowsOf(m.a, lo, hi), rowsOf(dy, lo, hi)
		matMulTA(co.gemm(), gx.Wd, a, dyl, true)
		matMulTB(co.gemm(), da, dyl, ex.Wd, false)
		swigluBack(co.gemm(), dg.D, du.D, da.D, g.D, u.D)
		matMulTA(co.gemm(), gx.Wg, x, dg, true)
		matMulTA(co.gemm(), gx.Wu, x, du, true)
		dxl := rowsOf(dx, lo, hi)
		matMulTB(co.gemm(), dxl, dg, ex.Wg, false)
		matMulTB(co.gemm(), dxl, du, ex.Wu, true)
	}
	ddisp := Mat[T]{R: e * slots, C: d, D: co.expertAllToAll(fromExperts(dx, local, ep, slots).D)}
	dExperts = newMat[T](n, d)
	for r, p := range m.pos {
		if p >= 0 {
			add(dExperts.Row(r/k), ddisp.Row(m.idx[r]*slots+p))
		}
	}
	// gates = softmax of the chosen scores: dscore_j = gate_j·(dgate_j − Σ gate·dgate)
	dlogits := newMat[T](n, e)
	for i := range n {
		var s T
		for j := range k {
			s += m.gate[i*k+j] * dgate[i*k+j]
		}
		for j := range k {
			r := i*k + j
			dlogits.Row(i)[m.idx[r]] += m.gate[r] * (dgate[r] - s)
		}
	}
	matMulTA(co.gemm(), gl.Wr, h, dlogits, true)
	dRouter = newMat[T](n, d)
	matMulTB(co.gemm(), dRouter, dlogits, l.Wr, false)
	return dExperts, dRouter
}

// swigluBack sets dg and du from a's gradient da for a = silu(g)·u; du
// may be da itself.
func swigluBack[T Float](gemm kernel.GEMM, dg, du, da, g, u []T) {
	for i, v := range g {
		dg[i] = -v
	}
	expSub(gemm, dg, dg, 0)
	for i, v := range g {
		e := dg[i]
		s, d := 1/(1+e), da[i] // du may be da
		du[i] = d * (v / (1 + e))
		dg[i] = d * u[i] * (s * (1 + v*(1-s)))
	}
}

// moeFLOPs is one MoE MLP's forward matmul FLOPs on a device for n local
// tokens in sequences of s: the router's, and the local experts' over
// every slot they get, used or not (a capacity buffer is computed whole).
func (c Config) moeFLOPs(l *Layer[float32], n, s, ep int) float64 {
	rows := float64(len(l.Experts) * ep * n / s * c.capacity(s))
	ex := l.Experts[0]
	return 2*float64(n)*float64(l.Wr.R*l.Wr.C) + 2*rows*float64(ex.Wg.R*ex.Wg.C+ex.Wu.R*ex.Wu.C+ex.Wd.R*ex.Wd.C)
}
