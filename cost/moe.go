package cost

import (
	"fmt"
	"math"

	"shardlab/collective"
	"shardlab/mesh"
	"shardlab/unit"
)

// ExpertCapacity is the rows each expert takes from one sequence's
// tokens under a capacity factor, as MaxText's dense dispatch computes it
// (src/maxtext/layers/moe.py generate_masks @e591f30c): int(max(⌈seqTokens
// · k / experts⌉ · capacityFactor, capacityFactor)) — GShard's capacity
// (Lepikhin et al. 2020 §2.2) with a sequence as the group. The tokens
// past it are dropped. At least 1 (where MaxText's int() gives 0, for a
// factor below 1 on a tiny group, it drops every token). A capacity
// factor of 0 or less means dropless and returns 0.
func ExpertCapacity(capacityFactor float64, seqTokens, k, experts int) int {
	if capacityFactor <= 0 || experts <= 0 {
		return 0
	}
	per := math.Ceil(float64(seqTokens) * float64(k) / float64(experts))
	return max(1, int(max(per*capacityFactor, capacityFactor)))
}

// ExpertRows is the rows of an MoE layer's dispatch buffer on one device
// holding seqs sequences of seqTokens tokens each: experts × capacity per
// sequence with a capacity factor (ExpertCapacity, padded or dropped to
// it), or dropless the routed rows seqs × seqTokens × k.
func ExpertRows(capacityFactor float64, seqs, seqTokens, k, experts int) int {
	if c := ExpertCapacity(capacityFactor, seqTokens, k, experts); c > 0 {
		return seqs * experts * c
	}
	return seqs * seqTokens * k
}

// ExpertAllToAllBytes is what one device of an expert group of n devices
// sends in one dispatch or combine all-to-all of an MoE layer: its
// dispatch buffer (ExpertRows for the seqs sequences of seqTokens tokens
// it holds in a micro-batch, d_model wide, elemBytes per element), of
// which it keeps its own 1/n: collective.Bytes(AllToAll, n, buffer). The
// emulator's measured all-to-all bytes are held to this.
func ExpertAllToAllBytes(n int, capacityFactor float64, seqs, seqTokens, k, experts, dModel, elemBytes int) unit.Bytes {
	rows := ExpertRows(capacityFactor, seqs, seqTokens, k, experts)
	return collective.Bytes(collective.AllToAll, n, unit.Bytes(rows)*unit.Bytes(dModel)*unit.Bytes(elemBytes))
}

// ExpertAllToAllsPerLayer is the all-to-alls an MoE layer runs per
// micro-batch: dispatch and combine forward, their transposes backward,
// and the forward's two again when remat recomputes the layer.
func ExpertAllToAllsPerLayer(recompute bool) int {
	if recompute {
		return 6
	}
	return 4
}

// TokensPerExpert is the rows one expert's grouped GEMM gets on a chip
// per micro-batch, for seqs sequences of seqTokens tokens per device:
// each of the e devices of the expert group sends it capacity rows per
// sequence, or dropless its share T·k/E of the routed tokens times the
// load imbalance (the most loaded expert sets the pace).
func (j Job) TokensPerExpert(seqs, seqTokens, e int) float64 {
	spec := j.Model
	if c := ExpertCapacity(j.CapacityFactor, seqTokens, spec.ExpertsPerToken, spec.Experts); c > 0 {
		return float64(e * seqs * c)
	}
	return float64(e) * float64(seqs*seqTokens) * float64(spec.ExpertsPerToken) / float64(spec.Experts) * j.imbalance()
}

func (j *Job) imbalance() float64 { return max(j.LoadImbalance, 1) }

// ExpertDivides reports whether expert parallelism e splits the experts
// evenly.
func ExpertDivides(experts, e int) bool { return e == 1 || (experts > 0 && experts%e == 0) }

// moeLayersPerStage is the MoE layers on one pipeline stage, on average.
func (j *Job) moeLayersPerStage(sh *shape) float64 {
	return float64(j.Model.MoELayers()) * float64(sh.ls) / float64(j.Model.Layers)
}

// experts adds the dispatch and combine all-to-alls of expert parallelism
// over the expert group: in a slice at the ring factor, across slices over
// DCN. They are on the critical path (the expert GEMMs wait for them).
func (t *tally) experts() {
	j, m, sh := &t.est.Job, &t.est.Mesh, t.sh
	if sh.e <= 1 || !j.Model.MoE() {
		return
	}
	spec := j.Model
	ed := m.Degree(mesh.Expert)
	tokens := sh.b * sh.s
	elem := j.Precision.Activation
	r := sh.r
	per := ExpertAllToAllsPerLayer(r.recompute > 0 || r.attention)
	count := int(math.Round(float64(per) * j.moeLayersPerStage(sh) * float64(sh.m)))
	if j.RingOfExperts {
		t.ringOfExperts(count, tokens)
		return
	}
	// One all-to-all over the whole group of e = eICI × eDCN devices, its
	// buffer the dispatched rows (ExpertRows), d_model wide.
	rows := ExpertRows(j.CapacityFactor, sh.b, sh.s, spec.ExpertsPerToken, spec.Experts)
	buffer := unit.Bytes(rows) * unit.Bytes(spec.DModel) * unit.Bytes(elem)
	cost := collective.AllToAllCost(buffer, ed.ICI, m.Link(mesh.Expert).Collective(), ed.DCN, t.dcn(2))
	t.add(mesh.Expert, "expert dispatch/combine all-to-all", collective.AllToAll, count, cost, false)
	t.afterICI += cost.Scale(count).ICITime
	t.afterDCN += cost.Scale(count).DCNTime
}

// expertOutputAllReduce is the tensor-parallel all-reduce an MoE layer
// runs on its experts' output instead of the MLP's activation all-reduce:
// with the experts split over tensor their down projection leaves partial
// sums, and XLA reduces them on the expert side, before the combine
// (the gates' gradient needs the whole output), so the buffer is the
// dispatched rows' — experts × capacity with a capacity factor, tokens ×
// k dropless — not the tokens'. It returns how many of a step's
// activation all-reduces are these (one per MoE layer and forward pass)
// and one's cost. The emulator's measured tensor bytes are held to it.
func (j *Job) expertOutputAllReduce(est *Estimate, sh *shape, forwards float64) (int, collective.Cost) {
	spec := j.Model
	if sh.t <= 1 || !spec.MoE() {
		return 0, collective.Cost{}
	}
	rows := ExpertRows(j.CapacityFactor, sh.b, sh.s, spec.ExpertsPerToken, spec.Experts)
	size := unit.Bytes(rows) * unit.Bytes(spec.DModel) * unit.Bytes(j.Precision.Activation)
	n := int(math.Round(forwards * j.moeLayersPerStage(sh) * float64(sh.m)))
	return n, collective.Hierarchical(collective.AllReduce, size, sh.t, est.Mesh.Link(mesh.Tensor).Collective(), 1, collective.Link{})
}

// mlpWidth is the MLP's hidden elements per token, averaged over the
// layers: d_ff in a dense layer; in an MoE layer each token's k routed
// experts, padded to the capacity factor where one is set (GShard §2.2:
// the buffers are computed whole; dropless, the ragged rows are the
// tokens' own), plus its shared experts.
func (j *Job) mlpWidth() float64 {
	spec := j.Model
	if !spec.MoE() {
		return float64(spec.DFF)
	}
	pad := 1.0
	if j.CapacityFactor > 0 {
		pad = j.CapacityFactor
	}
	fe := float64(spec.ExpertFF())
	moe := (float64(spec.ExpertsPerToken)*pad + float64(spec.SharedExperts)) * fe
	m, l := float64(spec.MoELayers()), float64(spec.Layers)
	return ((l-m)*float64(spec.DFF) + m*moe) / l
}

// expertBuffers is the bytes an MoE layer's dispatch needs on a chip
// while it runs, for seqs local sequences of seqTokens tokens: the dispatched rows sent and
// received (experts × capacity, or tokens × k dropless, d_model wide, in
// the activation dtype), which the combine then reuses, and with a
// capacity factor the dense dispatch's masks (dispatchMasks). Zero for a
// dense model.
func (j *Job) expertBuffers(seqs, seqTokens int) float64 {
	spec := j.Model
	if !spec.MoE() {
		return 0
	}
	rows := ExpertRows(j.CapacityFactor, seqs, seqTokens, spec.ExpertsPerToken, spec.Experts)
	return 2*float64(rows)*float64(spec.DModel)*float64(j.Precision.Activation) + j.dispatchMasks(seqs, seqTokens)
}

// dispatchBuffers is expertBuffers for layer v, less the routed rows
// its policy keeps on device as mlpwo (the experts' output the combine
// reads, routedOutWidth): those are the held activations' already.
func (j *Job) dispatchBuffers(v *layerView, seqs, seqTokens int) float64 {
	b := j.expertBuffers(seqs, seqTokens)
	if b > 0 && v.places[MLPWo] == Device {
		b -= float64(seqs) * float64(seqTokens) * v.widths[MLPWo] * float64(j.Precision.Activation)
	}
	return b
}

// dispatchMasks is the bytes of the masks MaxText's dropping path builds
// for seqs local sequences of seqTokens tokens, [batch, seq, experts,
// capacity] each, live through the layer's backward (layers/moe.py
// generate_masks @e591f30c): the combine mask, the router weights times
// the one-hot capacity position, in the activation dtype; the dispatch
// mask, its bool copy, a byte; and in the backward the combine mask's
// gradient (the combine einsum's second operand), in the activation
// dtype. C is the capacity of a whole sequence (ExpertCapacity of
// j.Seq). Zero dropless.
func (j *Job) dispatchMasks(seqs, seqTokens int) float64 {
	spec := j.Model
	c := ExpertCapacity(j.CapacityFactor, j.Seq, spec.ExpertsPerToken, spec.Experts)
	if c == 0 {
		return 0
	}
	e := float64(j.Precision.Activation)
	return float64(seqs) * float64(seqTokens) * float64(spec.Experts) * float64(c) * (2*e + 1)
}

// ringBuffers is what the ring of experts adds to an MoE layer's working
// set on a chip: the expert group's gathered tokens and their outputs
// before the reduce-scatter, n × tokens × d_model each.
func (j *Job) ringBuffers(n, tokens int) float64 {
	if !j.RingOfExperts || n <= 1 {
		return 0
	}
	return 2 * float64(n) * float64(tokens) * float64(j.Model.DModel) * float64(j.Precision.Activation)
}

// RingOfExpertsBytes is the buffer one device of an expert group of n
// gathers and reduce-scatters per collective of a ring-of-experts MoE
// layer, on average, for the tokens it holds. Forward, MaxText
// all-gathers the tokens (d_model wide) with the router's scores and
// pre-bias scores (experts wide each; MaxText @e591f30c,
// src/maxtext/layers/moe.py roe_ag_and_route) and reduce-scatters the
// outputs (psum_scatter, d_model wide); backward, the transposes: a
// reduce-scatter of the tokens' and scores' gradients and an all-gather
// of the outputs' gradient. Each direction moves one of each, so the two
// all-gathers and the two reduce-scatters of a layer average n × tokens ×
// (d_model + experts) elements.
func RingOfExpertsBytes(n, tokens, dModel, experts, elemBytes int) unit.Bytes {
	return unit.Bytes(n) * unit.Bytes(tokens) * unit.Bytes(dModel+experts) * unit.Bytes(elemBytes)
}

// ringOfExperts adds the all-gathers and reduce-scatters of the ring of
// experts over the expert group (count of them, half of each kind): rings
// on ICI, hierarchical across slices. They are on the critical path as
// the all-to-alls are (MaxText's num_moe_token_chunks, which would
// overlap them with the grouped GEMMs, is off by default).
func (t *tally) ringOfExperts(count, tokens int) {
	j, m, sh := &t.est.Job, &t.est.Mesh, t.sh
	spec := j.Model
	ed := m.Degree(mesh.Expert)
	size := RingOfExpertsBytes(sh.e, tokens, spec.DModel, spec.Experts, j.Precision.Activation)
	l := m.Link(mesh.Expert).Collective()
	n := count / 2
	for _, op := range []collective.Op{collective.AllGather, collective.ReduceScatter} {
		cost := collective.Hierarchical(op, size, ed.ICI, l, ed.DCN, t.dcn(ed.DCN))
		what := "ring-of-experts token all-gather"
		if op == collective.ReduceScatter {
			what = "ring-of-experts output reduce-scatter"
		}
		t.add(mesh.Expert, what, op, n, cost, false)
		t.afterICI += cost.Scale(n).ICITime
		t.afterDCN += cost.Scale(n).DCNTime
	}
}

// expertDetail explains an expert split that does not divide the experts.
func expertDetail(experts, e int) string {
	return fmt.Sprintf("%d experts over %s", experts, mesh.Degree{Axis: mesh.Expert, ICI: e, DCN: 1})
}

// moeLayerParams is the parameters one chip holds of an MoE layer but
// its routed experts, before fsdp and expert: attention, norms and shared
// experts split over tensor (K/V over at most KV shards) as a dense
// layer's are; the router whole (MaxText's gate kernel is ("embed",
// None): nothing on tensor).
func (j *Job) moeLayerParams(sh *shape) float64 {
	pc := j.Model.ParamCount()
	kv := float64(2 * j.Model.DModel * j.Model.KV() * j.Model.Head())
	if j.Model.MLA() {
		kv = 0 // latent attention's K/V projections split over heads like Q's
	}
	dense := float64(pc.Attention+pc.Norms+pc.Shared) - kv
	return dense/float64(sh.t) + kv/float64(kvShards(j.Model.KV(), sh.t)) + float64(pc.Router)
}

// routedPerChip is the routed experts' parameters one chip of a stage
// holds: MaxText's expert weights are (exp, embed_no_exp, mlp), exp on
// the expert axis, embed_no_exp on fsdp and mlp on tensor; with
// shard_exp_on_fsdp the exp dimension takes fsdp instead — the same bytes
// per chip either way.
func (j *Job) routedPerChip(sh *shape) float64 {
	if !j.Model.MoE() {
		return 0
	}
	return j.moeLayersPerStage(sh) * j.routedPerLayer(sh)
}

// routedPerLayer is one MoE layer's routed experts' parameters on a chip
// (routedPerChip's sharding).
func (j *Job) routedPerLayer(sh *shape) float64 {
	pc := j.Model.ParamCount()
	return float64(pc.Experts) * float64(pc.Expert) / float64(sh.e*sh.t*sh.f)
}

// addCost is two collectives one after the other.
func addCost(a, b collective.Cost) collective.Cost {
	return collective.Cost{ICIBytes: a.ICIBytes + b.ICIBytes, DCNBytes: a.DCNBytes + b.DCNBytes, ICITime: a.ICITime + b.ICITime, DCNTime: a.DCNTime + b.DCNTime}
}

// expertPadding is the matmul FLOPs a step's routed experts spend beyond
// the active count: with a capacity factor every expert computes its
// full capacity, factor × the balanced rows (GShard §2.2: the buffers
// are padded to capacity); dropless, the busiest expert's load imbalance
// sets the pace of the grouped GEMM. A factor at or below 1 adds nothing
// (dropped tokens are not credited back).
func (j *Job) expertPadding(tokens float64) float64 {
	factor := j.rowFactor()
	if factor <= 1 {
		return 0
	}
	return (factor - 1) * j.activeRoutedFLOPs(tokens)
}

// rowFactor is the routed rows an expert GEMM computes over the tokens'
// own k a token: the capacity factor where one is set, else the load
// imbalance (the busiest expert sets the time).
func (j *Job) rowFactor() float64 {
	if j.CapacityFactor > 0 {
		return j.CapacityFactor
	}
	return j.imbalance()
}

// activeRoutedFLOPs is the routed experts' GEMM FLOPs of a step of
// tokens, forward and backward, over the tokens' own k rows each; 0 for a
// dense model.
func (j *Job) activeRoutedFLOPs(tokens float64) float64 {
	spec := j.Model
	if !spec.MoE() {
		return 0
	}
	pc := spec.ParamCount()
	// one expert's parameters (its biases, if any, are a rounding error
	// against its matrices)
	return 6 * float64(pc.MoELayers) * float64(spec.ExpertsPerToken) * float64(pc.Expert) * tokens
}

// routedFLOPs is the routed experts' GEMM FLOPs a step of tokens
// computes, forward and backward, padding included (rowFactor): the part
// of the step's matmul FLOPs a quantized job may leave in bf16
// (UnquantizedExperts).
func (j *Job) routedFLOPs(tokens float64) float64 {
	return max(j.rowFactor(), 1) * j.activeRoutedFLOPs(tokens)
}

// GMMTileRows is the row tile of MaxText's grouped GEMMs: base.yml's
// tile_batch_seq (512 at MaxText @9ca35d7e and @3eb77db3, the tiling
// layers/moe.py sparse_matmul passes megablox's gmm as (min(tile_batch_seq,
// m), …)) and, since, its wi_tile_*_batch_seq and wo_tile_*_batch_seq for
// each of the forward, lhs-gradient and rhs-gradient kernels (512 each in
// base.yml @e591f30c). A recipe may set its own (the TPU7x fp8 recipes
// do), and tokamax's unquantized ragged_dot, which MaxText calls without a
// tiling, takes its own tuned tiles: Job.GMMTile says so.
const GMMTileRows = 512

// MaxGMMTile is the largest row tile a job may state (Job.GMMTile).
const MaxGMMTile = 65536

// gmmTilePadding is the share of its routed GEMMs' work a dropless MoE
// layer spends on rows of other experts: the grouped GEMM steps over the
// rows in tiles of tm and computes every tile a group touches in full,
// masking the rows outside the group when it stores (megablox gmm.py
// make_group_metadata and _get_store_mask @9ca35d7e, the same in tokamax's
// pallas_mosaic_tpu_kernel.py: "If a group starts somewhere other than
// the start of a tile … we need to compute that full tile", tiles_m ≤
// visited ≤ tiles_m + num_groups − 1). Each of a device's G local experts
// but the first starts at a row that is a multiple of tm with
// probability 1/tm, so the expected extra rows are (G − 1)·(tm − 1), tm
// the job's mean tile (Job.GMMTile; the extra rows are linear in it), over
// the m routed rows the device's GEMM holds (TokensPerExpert × G, per JAX
// device): (G − 1)(tm − 1)/m, or G − 1 where the m rows fit one tile
// (each group's visit computes all m). The lhs-gradient gmm and the rhs-gradient
// tgmm visit the same tiles (megablox ops.py _gmm_bwd passes the same
// group sizes and tiling), so the share holds for the backward and any
// recomputed forward too. An empty group visits no tile in gmm, so at
// most min(G, m) groups count. Zero with a capacity factor
// (dense_matmul's einsums have no groups) or a dense model.
func (j *Job) gmmTilePadding(sh *shape) float64 {
	spec := j.Model
	if !spec.MoE() || j.CapacityFactor > 0 {
		return 0
	}
	g := float64(spec.Experts / max(sh.e, 1))
	m := j.TokensPerExpert(sh.b, sh.s, sh.e) * g / float64(max(sh.dev, 1))
	tile := j.GMMTile
	if tile <= 0 {
		tile = GMMTileRows
	}
	// an empty group visits no tile: at most m of the groups hold a row
	starts := min(g, m) - 1
	if starts <= 0 {
		return 0
	}
	if m <= tile {
		// the tile is min(tile, m) = m rows: one tile holds every row,
		// and each group that holds one computes it whole
		return starts
	}
	return starts * (tile - 1) / m
}

// denseDispatchFLOPs is the FLOPs of the einsums with which MaxText's
// dropping path moves the tokens to and from the experts' capacity
// buffers (layers/moe.py dense_matmul @e591f30c, capacity_factor > 0 in
// training): the dispatch "BSM,BSEC -> EBCM" and the combine
// "EBCM,BSEC -> BSM", each contracting or producing a [batch, seq,
// experts, capacity] one-hot mask (generate_masks), 2·S·E·C·d_model FLOPs
// a sequence, C the expert capacity of a sequence (ExpertCapacity). The
// forward runs both; the backward runs the dispatch's input gradient and
// the combine's two (its mask carries the router weights, so it has a
// gradient too): five, and a sixth when the policy recomputes the
// experts' input (the dispatch redone before the up-projections). Zero
// dropless (sparse_matmul's ragged path has no masks) or for a dense
// model.
func (j *Job) denseDispatchFLOPs(tokens float64) float64 {
	spec := j.Model
	c := ExpertCapacity(j.CapacityFactor, j.Seq, spec.ExpertsPerToken, spec.Experts)
	if !spec.MoE() || c == 0 {
		return 0
	}
	n := 5.0
	if j.places()[MLPWi0] == Recompute {
		n++
	}
	return n * 2 * tokens * float64(spec.Experts) * float64(c) * float64(spec.DModel) * float64(spec.MoELayers())
}

// droplessExtra is the matmul-equivalent FLOPs a dropless mixture of
// experts spends beyond its ragged grouped GEMMs, on the token sort,
// permutation and combine around them: per routed row the GEMMs of an
// expert Calibration.Dropless wide, so the routed experts' FLOPs (with
// their load imbalance) times Dropless / expert d_ff. The work is per
// row and d_model wide, where the row's expert GEMMs are d_model ×
// expert d_ff: MaxText's eight 14,336-wide Mixtral experts hide it, the
// 2,048-wide experts of DeepSeek-V3 do not. Zero with a capacity factor
// (dense dispatch, padded GEMMs counted by expertPadding) or a dense
// model.
func (j *Job) droplessExtra(tokens float64) float64 {
	spec := j.Model
	d := j.calibration().Dropless
	if !spec.MoE() || j.CapacityFactor > 0 || d <= 0 {
		return 0
	}
	pc := spec.ParamCount()
	routed := 6 * float64(pc.MoELayers) * float64(spec.ExpertsPerToken) * float64(pc.Expert) * tokens * j.imbalance()
	return routed * d / float64(spec.ExpertFF())
}

// moeStep is step i of an MoE layer's backward walk ws, for rows routed
// rows a token (experts × capacity over the tokens with a capacity
// factor, k dropless): the routed experts' gradients the step holds
// beside what the walk counts a token. The table's MLP steps follow the
// combine: down-projection, activation, up-projections. The routed rows
// are d_model wide (gathered over tensor before the grouped GEMMs,
// MaxText layers/moe.py sparse_matmul @36d0e5aa).
//
//   - The combine: the gradient of the experts' output rows; dropless,
//     MaxText unsorts the outputs before the weighted sum, and the custom
//     sort's backward writes the gradient sorted into a second array
//     (layers/moe.py unpermute, _sort_activations_custom_bwd @e591f30c).
//   - The down-projection: the grouped GEMM's backward reads that sorted
//     gradient, rows × d_model, while it writes d(act) (megablox ops.py
//     _gmm_bwd @36d0e5aa: grad_lhs = gmm(grad, rhs), then tgmm(lhs
//     transposed, grad); src/maxtext/kernels/megablox/ops.py _gmm_bwd
//     @e591f30c). The walk's d_model a token is the shared experts' and
//     the residual stream's d(out).
//   - The up-projections: the GEMMs' lhs gradient is the routed rows',
//     rows × d_model, before the sort's backward and the sum over a
//     token's copies; the walk's d(normed) a token is the shared
//     experts'.
//
// With a capacity factor the einsums of the dense dispatch
// (layers/moe.py dense_matmul) hold the same two gradients, experts ×
// capacity rows each, between the combine and dispatch einsums.
//
// Not added: tgmm's transposed lhs (lhs.swapaxes(0, 1)) is the last use
// of the recomputed input or activation product it copies, so it takes
// their place rather than adding to them.
func (j *Job) moeStep(ws *backwardSteps, i int, st backwardStep, rows float64) backwardStep {
	switch i - ws.combine {
	case 0:
		st.grads = ws.d + rows*ws.full
		if j.CapacityFactor <= 0 {
			st.grads += rows * ws.full
		}
	case 1, 3:
		st.grads += rows * ws.full
	}
	return st
}
