package emu

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Config is the emulated transformer: token and learned position
// embeddings, pre-norm RMSNorm blocks of causal multi-head (grouped-query)
// attention and a SwiGLU MLP, a final RMSNorm and a tied or untied output
// projection. With Experts > 0 the MLP of every layer after the first
// FirstDenseLayers is a mixture of experts (moe.go). Its JSON keys are
// model.Spec's (seq_len, tied_embeddings, experts_per_token …), so the run
// report (shardlab run --json) and the checkpoint header write it as it is.
type Config struct {
	Layers  int  `json:"layers"`
	DModel  int  `json:"d_model"`
	Heads   int  `json:"heads"`
	KVHeads int  `json:"kv_heads"`
	DFF     int  `json:"d_ff"`
	Vocab   int  `json:"vocab"`
	Seq     int  `json:"seq_len"`
	Tied    bool `json:"tied_embeddings"`
	// FlashAttention computes attention block by block with an online
	// softmax and keeps each query's log-sum-exp instead of the scores P,
	// recomputing P in the backward pass (the memory of cost's
	// AttentionFlash); without it the layers keep P (cost's AttentionDot).
	FlashAttention bool `json:"flash_attention,omitempty"`
	// Experts > 0 makes the MLP of the layers after the first
	// FirstDenseLayers a mixture of Experts SwiGLU experts of width
	// ExpertDFF (0: DFF), ExpertsPerToken of them per token chosen by a
	// router, each taking at most CapacityFactor · tokens · k / Experts
	// rows of a device's tokens (MaxText's capacity_factor; the rest are
	// dropped).
	Experts          int     `json:"experts,omitempty"`
	ExpertsPerToken  int     `json:"experts_per_token,omitempty"`
	ExpertDFF        int     `json:"expert_d_ff,omitempty"`
	FirstDenseLayers int     `json:"first_dense_layers,omitempty"`
	CapacityFactor   float64 `json:"capacity_factor,omitempty"`
}

// validate checks the shape.
func (c Config) validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"layers", c.Layers}, {"d_model", c.DModel}, {"heads", c.Heads}, {"kv_heads", c.KVHeads}, {"d_ff", c.DFF}, {"vocab", c.Vocab}, {"seq_len", c.Seq}} {
		if f.v < 1 || f.v > 1<<16 {
			return fmt.Errorf("emu: model %s = %d, want 1 to 65536: %w", f.name, f.v, ErrInvalid)
		}
	}
	if c.DModel%c.Heads != 0 || c.Heads%c.KVHeads != 0 {
		return fmt.Errorf("emu: model d_model %d, heads %d, kv_heads %d: want heads | d_model and kv_heads | heads: %w", c.DModel, c.Heads, c.KVHeads, ErrInvalid)
	}
	return c.validateMoE()
}

// headDim is d_model / heads.
func (c Config) headDim() int { return c.DModel / c.Heads }

// Layer holds one block's weights as one device sees them: with tensor
// parallelism t, Wq, Wk, Wv, Wg and Wu keep 1/t of their columns
// (column-parallel) and Wo and Wd 1/t of their rows (row-parallel). A
// mixture-of-experts layer has no Wg, Wu, Wd but a router Wr (d_model ×
// experts, whole on every device) and the experts this device's expert
// rank holds, each split over tensor as the dense MLP is.
type Layer[T Float] struct {
	N1, N2     []T
	Wq, Wk, Wv Mat[T]
	Wo         Mat[T]
	Wg, Wu, Wd Mat[T]
	Wr         Mat[T]
	Experts    []Expert[T]
}

// Expert is one routed expert's SwiGLU weights.
type Expert[T Float] struct {
	Wg, Wu, Wd Mat[T]
}

// moe reports whether the layer is a mixture of experts.
func (l *Layer[T]) moe() bool { return len(l.Wr.D) > 0 }

// Params are one device's weights: the layers of its pipeline stage, and
// the embeddings and output layer where its stage needs them.
type Params[T Float] struct {
	Emb, Pos Mat[T] // first stage (and the last, when tied)
	NF       []T    // last stage
	Out      Mat[T] // last stage, untied
	Layers   []Layer[T]
}

// Tensors lists the parameters in a fixed order, for the optimizer,
// FSDP sharding and checkpoints.
func (p *Params[T]) Tensors() [][]T {
	var out [][]T
	for _, t := range [][]T{p.Emb.D, p.Pos.D, p.NF, p.Out.D} {
		if len(t) > 0 {
			out = append(out, t)
		}
	}
	for i := range p.Layers {
		l := &p.Layers[i]
		out = append(append(out, l.tensors()...), l.expertTensors()...)
	}
	return out
}

// tensors lists one layer's tensors but its routed experts', in Tensors'
// order: a dense layer's all, an MoE layer's attention, norms and router.
func (l *Layer[T]) tensors() [][]T {
	if l.moe() {
		return [][]T{l.N1, l.Wq.D, l.Wk.D, l.Wv.D, l.Wo.D, l.N2, l.Wr.D}
	}
	return [][]T{l.N1, l.Wq.D, l.Wk.D, l.Wv.D, l.Wo.D, l.N2, l.Wg.D, l.Wu.D, l.Wd.D}
}

// expertTensors lists the routed experts' tensors, expert by expert.
func (l *Layer[T]) expertTensors() [][]T {
	var out [][]T
	for _, e := range l.Experts {
		out = append(out, e.Wg.D, e.Wu.D, e.Wd.D)
	}
	return out
}

// zeroLike returns zeroed parameters of the same shapes.
func (p *Params[T]) zeroLike() *Params[T] {
	z := &Params[T]{Emb: newMat[T](p.Emb.R, p.Emb.C), Pos: newMat[T](p.Pos.R, p.Pos.C), NF: make([]T, len(p.NF)), Out: newMat[T](p.Out.R, p.Out.C)}
	like := func(m Mat[T]) Mat[T] { return newMat[T](m.R, m.C) }
	for _, l := range p.Layers {
		zl := Layer[T]{
			N1: make([]T, len(l.N1)), N2: make([]T, len(l.N2)),
			Wq: like(l.Wq), Wk: like(l.Wk), Wv: like(l.Wv), Wo: like(l.Wo),
			Wg: like(l.Wg), Wu: like(l.Wu), Wd: like(l.Wd), Wr: like(l.Wr),
		}
		for _, e := range l.Experts {
			zl.Experts = append(zl.Experts, Expert[T]{Wg: like(e.Wg), Wu: like(e.Wu), Wd: like(e.Wd)})
		}
		z.Layers = append(z.Layers, zl)
	}
	return z
}

// newParams draws the full model's weights from seed: normal with std 0.02 for
// the matrices (output projections scaled by 1/sqrt(2·layers), GPT-2's
// convention), ones for the norms. Every layout slices these same weights,
// so every layout starts from the same model.
func newParams[T Float](c Config, seed uint64) *Params[T] {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	normal := func(r, cols int, std float64) Mat[T] {
		m := newMat[T](r, cols)
		for i := range m.D {
			m.D[i] = T(rng.NormFloat64() * std)
		}
		return m
	}
	ones := func(n int) []T {
		v := make([]T, n)
		for i := range v {
			v[i] = 1
		}
		return v
	}
	d, hd := c.DModel, c.headDim()
	proj := 0.02 / math.Sqrt(2*float64(c.Layers))
	p := &Params[T]{Emb: normal(c.Vocab, d, 0.02), Pos: normal(c.Seq, d, 0.02), NF: ones(d)}
	if !c.Tied {
		p.Out = normal(d, c.Vocab, 0.02)
	}
	for li := range c.Layers {
		l := Layer[T]{
			N1: ones(d), N2: ones(d),
			Wq: normal(d, c.Heads*hd, 0.02), Wk: normal(d, c.KVHeads*hd, 0.02), Wv: normal(d, c.KVHeads*hd, 0.02),
			Wo: normal(c.Heads*hd, d, proj),
		}
		if c.moeLayer(li) {
			f := c.expertFF()
			l.Wr = normal(d, c.Experts, 0.02)
			for range c.Experts {
				l.Experts = append(l.Experts, Expert[T]{Wg: normal(d, f, 0.02), Wu: normal(d, f, 0.02), Wd: normal(f, d, proj)})
			}
		} else {
			l.Wg, l.Wu, l.Wd = normal(d, c.DFF, 0.02), normal(d, c.DFF, 0.02), normal(c.DFF, d, proj)
		}
		p.Layers = append(p.Layers, l)
	}
	return p
}

// cols keeps columns [lo, hi) of m; rows keeps rows [lo, hi).
func cols[T Float](m Mat[T], lo, hi int) Mat[T] {
	out := newMat[T](m.R, hi-lo)
	for i := 0; i < m.R; i++ {
		copy(out.Row(i), m.Row(i)[lo:hi])
	}
	return out
}

func rows[T Float](m Mat[T], lo, hi int) Mat[T] {
	return Mat[T]{R: hi - lo, C: m.C, D: append([]T(nil), m.D[lo*m.C:hi*m.C]...)}
}

// stageLayers lists the layers pipeline device si of p holds with v
// chunks per device: chunk k is virtual stage k·p + si, the model's layers
// cut into p·v equal pieces dealt round the devices (Megatron's
// interleaved stages, MaxText's circular repeats). With v = 1 it is the
// stage's contiguous share.
func stageLayers(layers, si, p, v int) []int {
	per := layers / (p * v)
	var out []int
	for k := range v {
		lo := (k*p + si) * per
		for li := lo; li < lo+per; li++ {
			out = append(out, li)
		}
	}
	return out
}

// shard cuts the full model into what the device at tensor rank ti of t,
// expert rank ei of ep and pipeline stage si of p, with v chunks of
// layers, holds: its chunks' layers (stageLayers), column- and row-split
// over tensor, of an MoE layer's experts its expert rank's 1/ep; the
// embeddings on the first stage (and the last when tied), the final norm
// and output on the last, or, with everywhere (MaxText's GPipe and
// circular pipelines, headAfter), all of them on every stage.
func shard[T Float](full *Params[T], c Config, ti, t, ei, ep, si, p, v int, everywhere bool) *Params[T] {
	hd := c.headDim()
	qh, kvh, f, fe := c.Heads/t, c.KVHeads/t, c.DFF/t, c.expertFF()/t
	out := &Params[T]{}
	first, last := si == 0 || everywhere, si == p-1 || everywhere
	if first || (last && c.Tied) {
		out.Emb, out.Pos = full.Emb.Clone(), full.Pos.Clone()
	}
	if last {
		out.NF = append([]T(nil), full.NF...)
		if !c.Tied {
			out.Out = full.Out.Clone()
		}
	}
	for _, li := range stageLayers(c.Layers, si, p, v) {
		l := full.Layers[li]
		sl := Layer[T]{
			N1: append([]T(nil), l.N1...), N2: append([]T(nil), l.N2...),
			Wq: cols(l.Wq, ti*qh*hd, (ti+1)*qh*hd), Wk: cols(l.Wk, ti*kvh*hd, (ti+1)*kvh*hd), Wv: cols(l.Wv, ti*kvh*hd, (ti+1)*kvh*hd),
			Wo: rows(l.Wo, ti*qh*hd, (ti+1)*qh*hd),
		}
		if l.moe() {
			sl.Wr = l.Wr.Clone()
			local := c.Experts / ep
			for _, e := range l.Experts[ei*local : (ei+1)*local] {
				sl.Experts = append(sl.Experts, Expert[T]{Wg: cols(e.Wg, ti*fe, (ti+1)*fe), Wu: cols(e.Wu, ti*fe, (ti+1)*fe), Wd: rows(e.Wd, ti*fe, (ti+1)*fe)})
			}
		} else {
			sl.Wg, sl.Wu, sl.Wd = cols(l.Wg, ti*f, (ti+1)*f), cols(l.Wu, ti*f, (ti+1)*f), rows(l.Wd, ti*f, (ti+1)*f)
		}
		out.Layers = append(out.Layers, sl)
	}
	return out
}

// assemble is shard's inverse: it puts the devices' pieces back into one
// model; piece(si, ti, ei) is what stage si, tensor rank ti and expert
// rank ei hold (p stages, t tensor ranks, ep expert ranks, v chunks per
// device).
func assemble[T Float](c Config, piece func(si, ti, ei int) *Params[T], p, t, ep, v int) *Params[T] {
	hd := c.headDim()
	full := newParams[T](c, 0).zeroLike() // the shapes; every value is overwritten below
	first, last := piece(0, 0, 0), piece(p-1, 0, 0)
	full.Emb, full.Pos = first.Emb.Clone(), first.Pos.Clone()
	full.NF = append([]T(nil), last.NF...)
	if !c.Tied {
		full.Out = last.Out.Clone()
	}
	qh, kvh, f, fe := c.Heads/t, c.KVHeads/t, c.DFF/t, c.expertFF()/t
	for si := range p {
		for i, li := range stageLayers(c.Layers, si, p, v) {
			dst := &full.Layers[li]
			for ti := range t {
				for ei := range ep {
					src := piece(si, ti, ei).Layers[i]
					local := len(src.Experts)
					for k, e := range src.Experts {
						de := dst.Experts[ei*local+k]
						putCols(de.Wg, e.Wg, ti*fe)
						putCols(de.Wu, e.Wu, ti*fe)
						copy(de.Wd.D[ti*fe*de.Wd.C:], e.Wd.D)
					}
					if ei > 0 {
						continue
					}
					putCols(dst.Wq, src.Wq, ti*qh*hd)
					putCols(dst.Wk, src.Wk, ti*kvh*hd)
					putCols(dst.Wv, src.Wv, ti*kvh*hd)
					copy(dst.Wo.D[ti*qh*hd*dst.Wo.C:], src.Wo.D)
					if !src.moe() {
						putCols(dst.Wg, src.Wg, ti*f)
						putCols(dst.Wu, src.Wu, ti*f)
						copy(dst.Wd.D[ti*f*dst.Wd.C:], src.Wd.D)
					}
					if ti == 0 {
						copy(dst.N1, src.N1)
						copy(dst.N2, src.N2)
						copy(dst.Wr.D, src.Wr.D)
					}
				}
			}
		}
	}
	return full
}

func putCols[T Float](dst, src Mat[T], lo int) {
	for i := 0; i < dst.R; i++ {
		copy(dst.Row(i)[lo:lo+src.C], src.Row(i))
	}
}
