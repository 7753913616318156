package cost

import (
	"fmt"
	"math"
	"sort"

	"shardlab/systolic"
)

// gemm is one matrix multiply of a layer on one chip, with how many times
// it runs per layer and micro-batch, on average over a stage's layers.
type gemm struct {
	what  string
	g     systolic.GEMM
	count float64
	// attention marks the attention core's GEMMs (scores and values),
	// which run in the attention kernel rather than as projections.
	attention bool
}

// layerGEMMs lists the forward matrix multiplies one chip does for one
// layer and one micro-batch (under latent attention the scores contract
// over QKHead and the values come out VHead wide): b sequences of s local tokens, keys over seq
// tokens, weights split over tensor t (K/V over at most KV shards), plus
// the output projection to the vocabulary, which runs once per
// micro-batch for a stage's ls layers: 1/ls per layer.
func (j *Job) layerGEMMs(sh *shape) []gemm {
	spec := j.Model
	m := sh.b * sh.s
	d, hd := spec.DModel, spec.Head()
	q := spec.Heads * hd / sh.t
	kv := spec.KV() * hd / kvShards(spec.KV(), sh.t)
	f := spec.DFF / sh.t
	heads := sh.b * spec.Heads / sh.t
	mlpIn := float64(spec.MLPInputs())
	out := []gemm{
		{"QKV projection", systolic.GEMM{M: m, K: d, N: q + 2*kv}, 1, false},
		{"attention scores", systolic.GEMM{M: sh.s, K: spec.QKHead(), N: j.Seq}, float64(heads), true},
		{"attention values", systolic.GEMM{M: sh.s, K: j.Seq, N: spec.VHead()}, float64(heads), true},
		{"output projection", systolic.GEMM{M: m, K: q, N: d}, 1, false},
		{"MLP in", systolic.GEMM{M: m, K: d, N: f}, mlpIn, false},
		{"MLP out", systolic.GEMM{M: m, K: f, N: d}, 1, false},
	}
	if spec.MoE() {
		out = j.expertGEMMs(sh, out, mlpIn)
	}
	if v := spec.Vocab / sh.t; v > 0 && f > 0 {
		out = append(out, gemm{"logits", systolic.GEMM{M: m, K: d, N: v}, 1 / float64(sh.ls), false})
	}
	return out
}

// mxuStats is the FLOP-weighted MXU efficiency and padding loss of a
// layer's GEMMs, forward and backward (for C = A·B: dA = dC·Bᵀ and
// dB = Aᵀ·dC).
type mxuStats struct {
	efficiency float64
	// matmul and attention are the same over the projections' GEMMs and
	// over the attention core's.
	matmul, attention float64
	padding           float64
	// ragged names the GEMMs that lose over 0.5 % of their own work to
	// padding, the most wasted MACs first.
	ragged []string
}

// mxuKey is what a layer's GEMM shapes on one chip depend on.
type mxuKey struct {
	d, heads, kv, hd, dff, vocab int
	gated                        bool
	b, s, t, seq, ls             int // ls: the output layer's share is 1/ls
	rows, cols, mxus             int
	// mixture of experts: the grouped GEMMs' shapes
	experts, k, shared, eff, e, moe, dense int
	capacity, imbalance                    float64
	qkHead, vHead                          int // latent attention's head widths
}

func (e *Estimator) mxu(j *Job, sh *shape, p systolic.Preset) (mxuStats, error) {
	spec := j.Model
	k := mxuKey{spec.DModel, spec.Heads, spec.KV(), spec.Head(), spec.DFF, spec.Vocab, spec.GatedMLP, sh.b, sh.s, sh.t, j.Seq, sh.ls, p.Rows, p.Cols, p.MXUs,
		spec.Experts, spec.ExpertsPerToken, spec.SharedExperts, spec.ExpertFF(), sh.e, spec.MoELayers(), spec.Layers - spec.MoELayers(), j.CapacityFactor, j.LoadImbalance, spec.QKHead(), spec.VHead()}
	// a search asks for one layout's shapes at one batch for each of its
	// policies and schedules in a row
	if e.lastMXU.ok && e.lastMXU.k == k {
		return e.lastMXU.st, nil
	}
	st, ok := e.mxus[k]
	if !ok {
		var err error
		if st, err = e.mxuStats(j, sh, p); err != nil {
			return st, err
		}
		e.mxus[k] = st
	}
	e.lastMXU.k, e.lastMXU.st, e.lastMXU.ok = k, st, true
	return st, nil
}

func (e *Estimator) mxuStats(j *Job, sh *shape, p systolic.Preset) (mxuStats, error) {
	var macs, cycles, mapped float64
	var attnMACs, attnCycles float64
	gemms := j.layerGEMMs(sh)
	// padded MACs wasted and MACs, per GEMM (each GEMM's name is its own)
	lossBy, macsBy := make([]float64, len(gemms)), make([]float64, len(gemms))
	for i, x := range gemms {
		g := x.g
		for _, pass := range []systolic.GEMM{g, {M: g.M, K: g.N, N: g.K}, {M: g.K, K: g.M, N: g.N}} {
			w := float64(pass.M) * float64(pass.K) * float64(pass.N) * x.count
			// Past a million rows or columns a dimension's efficiency has
			// converged (the fill and drain are a millionth of the stream), so
			// the closed form sees at most systolic.MaxDim.
			c := systolic.GEMM{M: min(pass.M, systolic.MaxDim), K: min(pass.K, systolic.MaxDim), N: min(pass.N, systolic.MaxDim)}
			eff, c, err := e.passEfficiency(c, p)
			if err != nil {
				return mxuStats{}, fmt.Errorf("cost: %s GEMM %dx%dx%d: %w", x.what, pass.M, pass.K, pass.N, err)
			}
			macs += w
			cycles += w / eff
			if x.attention {
				attnMACs += w
				attnCycles += w / eff
			}
			me := systolic.MappingEfficiency(systolic.WeightStationary, c, p.Rows, p.Cols)
			mapped += w / me
			lossBy[i] += w/me - w
			macsBy[i] += w
		}
	}
	st := mxuStats{efficiency: macs / cycles, padding: 1 - macs/mapped,
		matmul: (macs - attnMACs) / (cycles - attnCycles), attention: attnMACs / attnCycles}
	var ragged []int
	for i, loss := range lossBy {
		if loss > 0.005*macsBy[i] { // the GEMM itself loses over 0.5 % to padding
			ragged = append(ragged, i)
		}
	}
	sort.Slice(ragged, func(a, b int) bool {
		if lossBy[ragged[a]] != lossBy[ragged[b]] {
			return lossBy[ragged[a]] > lossBy[ragged[b]]
		}
		return gemms[ragged[a]].what < gemms[ragged[b]].what
	})
	for _, i := range ragged {
		st.ragged = append(st.ragged, gemms[i].what)
	}
	return st, nil
}

// passEfficiency is the MXU efficiency of one GEMM pass, C = A·B, in the
// better of its two orientations: B's tiles held in the array and A's M
// rows streamed through, or Cᵀ = Bᵀ·Aᵀ with A's tiles held and B's N
// columns streamed. The compiler picks which operand the MXU latches, as
// flash attention's backward pass computes dK = dSᵀ·Q, streaming the
// sequence, rather than dKᵀ = Qᵀ·dS, streaming the 128 rows of a head. It
// returns the orientation it costed.
func (e *Estimator) passEfficiency(c systolic.GEMM, p systolic.Preset) (float64, systolic.GEMM, error) {
	best, bestG := 0.0, c
	for _, g := range []systolic.GEMM{c, {M: c.N, K: c.K, N: c.M}} {
		eff, ok := e.effs[effKey{g, p.Rows, p.Cols, p.MXUs}]
		if !ok {
			var err error
			if eff, err = p.Efficiency(g); err != nil {
				return 0, c, err
			}
			e.effs[effKey{g, p.Rows, p.Cols, p.MXUs}] = eff
		}
		if eff > best {
			best, bestG = eff, g
		}
	}
	return best, bestG, nil
}

type effKey struct {
	g          systolic.GEMM
	rows, cols int
	mxus       int
}

// expertGEMMs replaces the MLP of an all-MoE model (or adds to the dense
// layers' MLP) the grouped GEMMs of its experts: each of the E/e experts a
// chip holds multiplies its tokens per expert (TokensPerExpert; with
// megablox each group is padded to the array, which the systolic closed
// form counts) by its d_model × ExpertFF/t weights; the shared experts run
// every token, as a dense MLP of their combined width. With dense and MoE
// layers mixed, each MLP counts for its share of the layers.
func (j *Job) expertGEMMs(sh *shape, out []gemm, mlpIn float64) []gemm {
	spec := j.Model
	moe := float64(spec.MoELayers()) / float64(spec.Layers) // the share of layers that are MoE
	if spec.MoELayers() == spec.Layers {
		out = out[:len(out)-2] // no dense MLP
	} else {
		for i := len(out) - 2; i < len(out); i++ {
			out[i].count *= 1 - moe
		}
	}
	m := int(math.Ceil(j.TokensPerExpert(sh.b, sh.s, sh.e)))
	f := spec.ExpertFF() / sh.t
	local := float64(spec.Experts / sh.e)
	out = append(out,
		gemm{"expert MLP in", systolic.GEMM{M: m, K: spec.DModel, N: f}, moe * mlpIn * local, false},
		gemm{"expert MLP out", systolic.GEMM{M: m, K: f, N: spec.DModel}, moe * local, false})
	if spec.SharedExperts > 0 {
		sf := spec.SharedExperts * f
		out = append(out,
			gemm{"shared expert in", systolic.GEMM{M: sh.b * sh.s, K: spec.DModel, N: sf}, moe * mlpIn, false},
			gemm{"shared expert out", systolic.GEMM{M: sh.b * sh.s, K: sf, N: spec.DModel}, moe, false})
	}
	return out
}
