package cost

import (
	"math"
	"time"

	"shardlab/collective"
	"shardlab/hw"
	"shardlab/mesh"
	"shardlab/unit"
)

// communicate adds every collective and the exposed ICI and DCN time.
func (e *Estimator) communicate(est *Estimate, sh *shape) {
	j := &est.Job
	t, tpTime, tpAll := e.collectives(est, sh, true)

	o := newOverlap(est.Time.Passes(), sh.ls, sh.m)
	ici := o.exposed(t.gradICI, t.gatherICI)
	// What hides still takes its share of the chip (Calibration.Contention):
	// the gradient reductions (data-parallel all-reduces and FSDP
	// reduce-scatters) and weight gathers, ring attention's K/V and the
	// tensor-parallel collectives under their matmuls. DCN transfers go
	// through the host and take none.
	hidden := t.gradICI + t.gatherICI - ici + max(tpAll-tpTime, 0)
	est.Time.Contention = seconds(hidden.Seconds() * j.calibration().Contention)
	est.Time.ICI = ici + est.Time.Contention + tpTime + t.ppICI + t.afterICI
	est.Time.DCN = o.exposed(t.gradDCN, t.gatherDCN) + t.ppDCN + t.afterDCN
}

// collectives adds every collective of est's step to est.Comms and tallies
// their times; the tensor-parallel ones' in all (tpAll) and, with
// exposure, exposed under the matmuls of est.Time.MXU (tpTime).
func (e *Estimator) collectives(est *Estimate, sh *shape, exposure bool) (t tally, tpTime, tpAll time.Duration) {
	j := &est.Job
	t = newTally(est, sh)
	grads, gathered, headGrads, headGathered := j.gradBytes(sh)
	t.dataParallel(grads)
	t.pipelineHead(headGrads)
	t.fsdp(grads-headGrads, gathered-headGathered)
	t.fsdpHead(headGrads, headGathered)
	act := unit.Bytes(float64(sh.b) * float64(sh.s) * float64(j.Model.DModel) * float64(j.Precision.Activation))
	first := len(est.Comms)
	tpTime = e.tensorParallel(est, sh, act, t.add, exposure)
	for _, c := range est.Comms[first:] {
		tpAll += c.ICITime
	}
	t.context()
	t.pipeline(act)
	t.experts()
	return t, tpTime, tpAll
}

// newTally is an empty tally of est's collectives in shape sh.
func newTally(est *Estimate, sh *shape) tally {
	return tally{est: est, sh: sh, dcnLine: est.Mesh.TierLink(hw.DCN).Collective(), latency: est.Job.calibration().DCNLatency}
}

// gradBytes is what collectives reduces and gathers per chip in shape
// sh: its gradients and its weights in the compute dtype, and of them
// the model's ends' on every stage (sh.head).
func (j *Job) gradBytes(sh *shape) (grads, gathered, headGrads, headGathered unit.Bytes) {
	prec := j.Precision
	params := j.paramsPerChip(sh)
	grads = unit.Bytes(params * float64(prec.Gradient))
	gathered = unit.Bytes(params * float64(min(prec.Weight, prec.Activation)))
	headGrads, headGathered = unit.Bytes(sh.head*float64(prec.Gradient)), unit.Bytes(sh.head*float64(min(prec.Weight, prec.Activation)))
	return grads, gathered, headGrads, headGathered
}

// commFloor bounds communicate's ICI and DCN time from below, in seconds,
// from the collectives alone, whatever the compute they hide under: what
// is on the critical path (the pipeline's fill and drain, the collectives
// after the loop) counts in full; of the gathers and reductions, ring
// attention's blocks and the tensor-parallel collectives, whatever part is
// exposed counts in full and whatever part hides takes its Contention
// share of the chip (at most all of it), so all of them count at least
// that share; over DCN, which takes no share, a layer's worth of the
// gathers and reductions stays exposed. It is less by a nanosecond for
// Contention's rounding. est.Comms is left with the collectives.
func (e *Estimator) commFloor(est *Estimate, sh *shape) float64 {
	p := e.commParts(est, sh)
	return p.floor(est.Job.calibration().Contention, sh.ls)
}

// commParts is a step's collectives' times by how communicate exposes
// them (tally's), without their exposure.
type commParts struct {
	// gradICI, gatherICI, gradDCN and gatherDCN overlap the passes
	// (overlap.exposed); tpAll is every tensor-parallel collective's
	// time, which hides under its matmuls but for its exposed part;
	// pathICI and pathDCN are on the critical path (the pipeline's fill
	// and drain, the collectives after the loop).
	gradICI, gatherICI, gradDCN, gatherDCN, tpAll, pathICI, pathDCN time.Duration
}

// commParts is est's collectives' commParts, est.Comms left with the
// collectives.
func (e *Estimator) commParts(est *Estimate, sh *shape) commParts {
	t, _, tpAll := e.collectives(est, sh, false)
	return commParts{gradICI: t.gradICI, gatherICI: t.gatherICI, gradDCN: t.gradDCN, gatherDCN: t.gatherDCN,
		tpAll: tpAll, pathICI: t.ppICI + t.afterICI, pathDCN: t.ppDCN + t.afterDCN}
}

// floor is commFloor of p, in shape of ls layers per stage, where the
// calibration's Contention is contention.
func (p commParts) floor(contention float64, ls int) float64 {
	share := min(contention, 1)
	if share < 0 {
		return math.Inf(-1) // hiding would save more than it takes
	}
	overlapped := p.gradICI + p.gatherICI + p.tpAll
	dcn := p.gradDCN + p.gatherDCN
	return share*overlapped.Seconds() + p.pathICI.Seconds() +
		time.Duration(float64(dcn)/float64(ls)).Seconds() + p.pathDCN.Seconds() - 1e-9
}

// tally collects a step's collectives into est.Comms and their times by
// how they can overlap: gradient reductions (under the backward pass),
// gathers (under any compute), after the loop and pipeline sends (on the
// critical path), per tier.
type tally struct {
	est                  *Estimate
	sh                   *shape
	dcnLine              collective.Link
	latency              time.Duration
	gradICI, gradDCN     time.Duration
	gatherICI, gatherDCN time.Duration
	afterICI, afterDCN   time.Duration
	ppICI, ppDCN         time.Duration
}

// dcn is the link of a ring across n slices: n−1 steps per phase at the
// line rate (mesh's DCN link), each paying the DCN latency.
func (t *tally) dcn(n int) collective.Link {
	l := t.dcnLine
	l.Hops, l.HopLatency = max(n-1, 0), t.latency
	return l
}

// perLayer is op on size split into one collective per scanned layer, as
// XLA issues the weight gathers, gradient reductions and (with its
// data-parallel all-reduce optimisation) the cross-slice all-reduces.
func (t *tally) perLayer(op collective.Op, size unit.Bytes, nICI int, ici collective.Link, nDCN int) collective.Cost {
	return collective.Hierarchical(op, size/unit.Bytes(t.sh.ls), nICI, ici, nDCN, t.dcn(nDCN)).Scale(t.sh.ls)
}

func (t *tally) add(axis mesh.Axis, what string, op collective.Op, count int, cost collective.Cost, overlapped bool) {
	if count == 0 || cost == (collective.Cost{}) {
		return
	}
	cost = cost.Scale(count)
	t.est.Comms = append(t.est.Comms, Comm{Axis: axis, What: what, Op: op, Count: count,
		ICIBytes: cost.ICIBytes, DCNBytes: cost.DCNBytes, ICITime: cost.ICITime, DCNTime: cost.DCNTime, Overlapped: overlapped})
}

// dataParallel: gradients summed over the replicas (data), one
// all-reduce per scanned layer, each ring step across slices paying the
// DCN latency. They overlap the backward pass as FSDP's reduce-scatters
// do (overlap): a layer's all-reduce starts when the last micro-batch's
// backward has finished that layer's gradient and runs under the backward
// of the layers below it. MaxText's multislice scripts set
// xla_tpu_enable_data_parallel_all_reduce_opt, which pipelines the
// all-reduces across the scan's iterations, and
// xla_tpu_enable_async_collective_fusion, which runs them beside the
// compute (LIBTPU_INIT_ARGS of configs/v5p/512b.sh @76bd53b0f, as of the
// v5e scripts). Against the published multislice series this overlap
// fits better than an all-reduce on the critical path, which the model
// assumed before: with DCNLatency and SliceJitter refitted on the same
// calibration rows, the calibration rows' summed |MFU ratio error| falls
// from 0.300 to 0.188 and the held-out series' ratios within 0.03 of the
// published go from 7 to 11 of 16 (validate.Fit). The context axis
// holds no replicas: it shards the weights as fsdp does (weightShards),
// so its chips' gradients are summed by fsdp's reduce-scatter.
func (t *tally) dataParallel(grads unit.Bytes) {
	cost, ok := t.dataParallelCost(grads)
	if !ok {
		return
	}
	t.add(mesh.Data, "gradient all-reduce", collective.AllReduce, 1, cost, true)
	t.gradICI += cost.ICITime
	t.gradDCN += cost.DCNTime
}

// dataParallelCost is dataParallel's all-reduce of grads bytes, false
// where the layout has no replicas.
func (t *tally) dataParallelCost(grads unit.Bytes) (collective.Cost, bool) {
	m, sh := &t.est.Mesh, t.sh
	if sh.d <= 1 {
		return collective.Cost{}, false
	}
	d := m.Degree(mesh.Data)
	return t.perLayer(collective.AllReduce, grads, d.ICI, m.Link(mesh.Data).Collective(), d.DCN), true
}

// pipelineHead: the gradients of the embedding, final norm and output
// layer and of the multi-token prediction modules, which a MaxText
// pipeline keeps on every stage (headOnEveryStage, holdsMTP), grads
// bytes per chip after FSDP's reduce-scatter, summed over the stages,
// which ran them on their own shares of the batch: the embedding's output
// enters the pipeline as state_io, the stage axis on its first dimension
// (layers/pipeline.py init_states, lines 248-255 @e591f30c), and the
// logits shard the batch over data, stage, fsdp and expert
// (layers/decoders.py apply_output_head, lines 807-809,
// "activation_embed_and_logits_batch" in configs/base.yml line 538). One
// all-reduce across the stage groups (over slices too with a pipeline
// across DCN) for each part, by when its gradient is ready: the output
// layer's and final norm's come first in the backward pass (the head's
// backward runs before the pipeline's), so their all-reduce overlaps the
// pipeline's backward as the other gradient reductions do; the
// embedding's is made last, by the embedding's backward after the
// pipeline's, so nothing is left to hide its all-reduce under and it is
// on the critical path. The MTP modules' gradients come with the output
// layer's (their losses' backward runs before the pipeline's). With tied
// embeddings the one matrix's gradient is complete only then, so all of
// it is exposed.
func (t *tally) pipelineHead(grads unit.Bytes) {
	if grads == 0 {
		return
	}
	emb := t.embeddingPart(grads)
	early := t.stageAllReduce(grads - emb)
	t.add(mesh.Pipeline, t.headWhat("gradient all-reduce"), collective.AllReduce, 1, early, true)
	t.gradICI += early.ICITime
	t.gradDCN += early.DCNTime
	late := t.stageAllReduce(emb)
	t.add(mesh.Pipeline, "embedding gradient all-reduce", collective.AllReduce, 1, late, false)
	t.afterICI += late.ICITime
	t.afterDCN += late.DCNTime
}

// embeddingPart is the token embedding's bytes of size bytes spread over
// the pipeline's ends (embedding, final norm, output layer and the
// multi-token prediction modules, sh.head) by their parameters on a
// chip: the part whose gradient the backward pass makes last, at its very
// end, so that its reductions cannot hide under it. The MTP modules'
// backward runs with the output layer's, before the pipeline's (their
// loss reads the pipeline's output: holdsMTP).
func (t *tally) embeddingPart(size unit.Bytes) unit.Bytes {
	j, sh := &t.est.Job, t.sh
	pc := j.Model.ParamCount()
	mtp := j.mtpParams(sh) * float64(sh.t*sh.weightShards()*sh.e) // as many as the others, over the same shards
	return unit.Bytes(float64(size) * float64(pc.Embedding) / (float64(pc.Embedding+pc.Output+pc.FinalNorm) + mtp))
}

// headGatherWhat names the all-gather of the pipeline's ends:
// "embedding and output", with MTP where the model has modules.
func (t *tally) headGatherWhat() string {
	if t.est.Job.Model.MTPLayers > 0 {
		return "embedding, output and MTP all-gather"
	}
	return "embedding and output all-gather"
}

// headWhat names the collective of the pipeline's ends but the
// embedding, after what: "final norm and output", with "and MTP" where
// the model has multi-token prediction modules.
func (t *tally) headWhat(what string) string {
	if t.est.Job.Model.MTPLayers > 0 {
		return "final norm, output and MTP " + what
	}
	return "final norm and output " + what
}

// stageAllReduce is an all-reduce of size bytes across the pipeline's
// stages.
func (t *tally) stageAllReduce(size unit.Bytes) collective.Cost {
	m := &t.est.Mesh
	pa := m.Degree(mesh.Pipeline)
	return collective.Hierarchical(collective.AllReduce, size, pa.ICI, m.Link(mesh.Pipeline).Collective(), pa.DCN, t.dcn(pa.DCN))
}

// overlap is what a step's overlapped collectives hide under
// (Time.Passes): the forward and backward compute of all but one layer
// for the weight gathers (each prefetched a layer ahead of its use), and
// for the gradient reductions the backward pass of the last micro-batch
// but its last layer (a layer's reduction can start only when its
// backward has made the layer's gradient; with several micro-batches the
// gradients are summed first).
// The backward pass is two thirds of the compute (twice the forward's
// FLOPs).
type overlap struct {
	window, bwdWindow time.Duration
	layers            float64
}

func newOverlap(compute time.Duration, layers, micro int) overlap {
	c, ls := compute.Seconds(), float64(layers)
	return overlap{
		window:    seconds(c * (ls - 1) / ls),
		bwdWindow: seconds(c * 2 / 3 / float64(micro) * (ls - 1) / ls),
		layers:    ls,
	}
}

// exposed is the part of a link's gradient reductions (grad) and weight
// gathers (gather), every layer's together, that the step waits for. The
// link carries one collective at a time, so with a layer's reduction r
// and its backward b the last reduction ends max(r, L·r − (L−1)·b) after
// the backward does (TestOverlapTimeline walks the timeline); all of it
// must also fit in the compute window, and at least one layer's share
// stays out (the first gather, the last reduction).
func (o overlap) exposed(grad, gather time.Duration) time.Duration {
	total := grad + gather
	x := max(total-o.window, grad-o.bwdWindow, time.Duration(float64(total)/o.layers))
	return min(x, total)
}

// weightGroup is the chips a weight's embed dimension is split over
// (weightShards): fsdp, context where the layout has it, and with expert
// the expert axis; its ICI and DCN degrees and link.
type weightGroup struct {
	ici, dcn int
	link     collective.Link
}

func (t *tally) weightGroup(expert bool) weightGroup {
	m, sh := &t.est.Mesh, t.sh
	var buf [3]mesh.Axis
	axes := append(buf[:0], mesh.FSDP)
	if sh.c > 1 {
		axes = append(axes, mesh.Context)
	}
	if expert {
		axes = append(axes, mesh.Expert)
	}
	g := weightGroup{ici: 1, dcn: 1}
	for _, a := range axes {
		d := m.Degree(a)
		g.ici, g.dcn = g.ici*d.ICI, g.dcn*d.DCN
	}
	g.link = m.Link(axes...).Collective()
	return g
}

// fsdp: gather the weights (in the compute dtype) before forward and again
// before backward, reduce-scatter the gradients, per micro-batch, over
// fsdp and context (weightShards) and, but for the routed experts,
// expert; grads and gathered are the layers' (and, but for MaxText's
// pipelines, the model's ends': fsdpHead).
func (t *tally) fsdp(grads, gathered unit.Bytes) {
	sh := t.sh
	ag, rs, ok := t.fsdpCosts(grads, gathered)
	if !ok {
		return
	}
	t.add(mesh.FSDP, "weight all-gather", collective.AllGather, 2*sh.m, ag, true)
	t.add(mesh.FSDP, "gradient reduce-scatter", collective.ReduceScatter, sh.m, rs, true)
	t.gatherICI += ag.Scale(2 * sh.m).ICITime
	t.gatherDCN += ag.Scale(2 * sh.m).DCNTime
	t.gradICI += rs.Scale(sh.m).ICITime
	t.gradDCN += rs.Scale(sh.m).DCNTime
}

// fsdpCosts is fsdp's weight all-gather (ag, twice a micro-batch) and
// gradient reduce-scatter (rs, once a micro-batch) of one micro-batch,
// false where the weights are not sharded. Neither reads the batch or the
// micro-batches.
func (t *tally) fsdpCosts(grads, gathered unit.Bytes) (ag, rs collective.Cost, ok bool) {
	sh := t.sh
	if sh.weightShards()*sh.e <= 1 {
		return ag, rs, false
	}
	fc := t.weightGroup(false)
	n := unit.Bytes(sh.weightShards())
	if routed := t.est.Job.routedShard(sh); sh.e > 1 || routed > 0 {
		// the routed experts over fsdp and context, the rest over expert too
		share := unit.Bytes(0)
		if params := t.est.Job.paramsPerChip(sh) - sh.head; params > 0 {
			share = unit.Bytes(float64(gathered) * routed / params)
		}
		gshare := unit.Bytes(float64(grads) * float64(share) / max(float64(gathered), 1))
		ag = t.perLayer(collective.AllGather, share*n, fc.ici, fc.link, fc.dcn)
		rs = t.perLayer(collective.ReduceScatter, gshare*n, fc.ici, fc.link, fc.dcn)
		fe := t.weightGroup(true)
		n *= unit.Bytes(sh.e)
		ag = addCost(ag, t.perLayer(collective.AllGather, (gathered-share)*n, fe.ici, fe.link, fe.dcn))
		rs = addCost(rs, t.perLayer(collective.ReduceScatter, (grads-gshare)*n, fe.ici, fe.link, fe.dcn))
	} else {
		ag = t.perLayer(collective.AllGather, gathered*n, fc.ici, fc.link, fc.dcn)
		rs = t.perLayer(collective.ReduceScatter, grads*n, fc.ici, fc.link, fc.dcn)
	}
	return ag, rs, true
}

// fsdpHead: the FSDP gathers and reduce-scatter of the embedding, final
// norm and output layer and the multi-token prediction modules a MaxText
// pipeline keeps on every stage (grads and gathered bytes per chip,
// sh.head's): MaxText applies them once a step, to the whole batch,
// before and after pipeline_module (layers/decoders.py Decoder.__call__,
// lines 871-930 and 1315 @e591f30c; the modules after the decoder,
// models/models.py Transformer.__call__, lines 243-254), not
// once per micro-batch as the pipelined layers, so they are gathered for
// the forward and again for the backward and their gradient reduced once:
// the output layer's and the final norm's under the backward pass, which
// makes them first, the embedding's after it (embeddingPart), as its
// all-reduce over the stages (pipelineHead). embed_vocab and embed shard
// them over fsdp, context and expert (weightShards); an MoE
// MTP layer's routed experts, which MaxText gathers over fsdp and
// context (tally.fsdp, embed_moe), are counted here as the rest.
func (t *tally) fsdpHead(grads, gathered unit.Bytes) {
	sh := t.sh
	if grads == 0 || sh.weightShards()*sh.e <= 1 {
		return
	}
	g := t.weightGroup(sh.e > 1)
	link, nICI, nDCN, n := g.link, g.ici, g.dcn, unit.Bytes(sh.weightShards()*sh.e)
	ag := collective.Hierarchical(collective.AllGather, gathered*n, nICI, link, nDCN, t.dcn(nDCN))
	emb := t.embeddingPart(grads)
	early := collective.Hierarchical(collective.ReduceScatter, (grads-emb)*n, nICI, link, nDCN, t.dcn(nDCN))
	late := collective.Hierarchical(collective.ReduceScatter, emb*n, nICI, link, nDCN, t.dcn(nDCN))
	t.add(mesh.FSDP, t.headGatherWhat(), collective.AllGather, 2, ag, true)
	t.add(mesh.FSDP, t.headWhat("reduce-scatter"), collective.ReduceScatter, 1, early, true)
	t.add(mesh.FSDP, "embedding reduce-scatter", collective.ReduceScatter, 1, late, false)
	t.gatherICI += ag.Scale(2).ICITime
	t.gatherDCN += ag.Scale(2).DCNTime
	t.gradICI += early.ICITime
	t.gradDCN += early.DCNTime
	t.afterICI += late.ICITime
	t.afterDCN += late.DCNTime
}

// context: ring attention passes every chip's K and V blocks around the
// ring — the bytes of an all-gather of K and V — in forward, and K, V and
// their gradients in backward.
func (t *tally) context() {
	j, m, sh := &t.est.Job, &t.est.Mesh, t.sh
	if sh.c <= 1 {
		return
	}
	spec := j.Model
	c := m.Degree(mesh.Context)
	kv := unit.Bytes(2 * float64(sh.b) * float64(sh.s) * float64(spec.KV()*spec.Head()) * float64(j.Precision.Activation) / float64(kvShards(spec.KV(), sh.t)))
	per := 3
	if sh.r.attention {
		per = 4
	}
	cost := collective.Hierarchical(collective.AllGather, kv*unit.Bytes(sh.c), c.ICI, m.Link(mesh.Context).Collective(), c.DCN, t.dcn(c.DCN))
	n := per * sh.ls * sh.m
	t.add(mesh.Context, "ring attention K/V", collective.AllGather, n, cost, true)
	t.gatherICI += cost.Scale(n).ICITime
	t.gatherDCN += cost.Scale(n).DCNTime
}

// pipeline: each micro-batch's activations go forward across every stage
// boundary and their gradients come back. The fill and drain put 2(p−1)
// sends on the critical path (schedule's TestSendDelaysTheFill); the rest
// overlap with other micro-batches' compute.
func (t *tally) pipeline(act unit.Bytes) {
	m, sh := &t.est.Mesh, t.sh
	if sh.p <= 1 {
		return
	}
	pa := m.Degree(mesh.Pipeline)
	msg := act / unit.Bytes(sh.t)
	perChip := 2 * sh.m * sh.v // every chunk boundary, forward and back
	iciSend := collective.Time(collective.SendRecv, 2, msg, m.TierLink(hw.ICI).Collective())
	dcnSend := collective.Time(collective.SendRecv, 2, msg, t.dcn(2))
	dcnBoundaries, iciBoundaries := pa.DCN-1, sh.p-pa.DCN
	// With v chunks a micro-batch crosses p·v−1 boundaries: v passes of
	// the p−1 between stages, and v−1 sends from the last stage round to
	// the first, over DCN when the stages span slices.
	iciAll, dcnAll := sh.v*iciBoundaries, sh.v*dcnBoundaries
	if pa.DCN > 1 {
		dcnAll += sh.v - 1
	} else {
		iciAll += sh.v - 1
	}
	bytes := collective.Bytes(collective.SendRecv, 2, msg) * unit.Bytes(2*sh.m)
	cost := collective.Cost{
		ICIBytes: bytes * unit.Bytes(iciAll) / unit.Bytes(sh.p),
		DCNBytes: bytes * unit.Bytes(dcnAll) / unit.Bytes(sh.p),
		ICITime:  iciSend * time.Duration(perChip),
		DCNTime:  dcnSend * time.Duration(perChip),
	}
	if iciBoundaries == 0 {
		cost.ICITime = 0
	}
	if dcnBoundaries == 0 {
		cost.DCNTime = 0
	}
	t.add(mesh.Pipeline, "stage activations", collective.SendRecv, 1, cost, false)
	t.ppICI = 2 * time.Duration(iciBoundaries) * iciSend
	t.ppDCN = 2 * time.Duration(dcnBoundaries) * dcnSend
}

// tensorParallel adds the tensor-parallel collectives and, with exposure,
// returns their exposed time. Each layer all-reduces its activations twice in the
// forward pass (after attention and after the MLP; with sequence
// parallelism an all-gather and a reduce-scatter of the same bytes),
// twice in the backward pass (Narayanan et al. 2021 §2.3), and again in
// the forward it recomputes. They are not all on the critical path:
// decomposed into t ring steps, each forward collective overlaps the
// projection it feeds or drains (collective matmul: Wang et al., ASPLOS
// 2023, "Overlap communication with dependent computation via
// decomposition"), and each backward one the weight-gradient matmul that
// does not depend on it; one ring step in t stays exposed either way.
func (e *Estimator) tensorParallel(est *Estimate, sh *shape, act unit.Bytes, add func(mesh.Axis, string, collective.Op, int, collective.Cost, bool), exposure bool) time.Duration {
	if sh.t <= 1 {
		return 0
	}
	if est.Job.Model.ParallelBlock {
		return e.parallelTensor(est, sh, act, add, exposure)
	}
	j, m := &est.Job, &est.Mesh
	spec := j.Model
	per := 4
	fwd := 1.0
	if r := sh.r; r.recompute > 0 || r.attention {
		per, fwd = 6, 2
	}
	cost := collective.Hierarchical(collective.AllReduce, act, sh.t, m.Link(mesh.Tensor).Collective(), 1, collective.Link{})
	n := per * sh.ls * sh.m
	moeN, moeCost := j.expertOutputAllReduce(est, sh, fwd)
	add(mesh.Tensor, "activation all-reduce", collective.AllReduce, n-moeN, cost, false)
	if moeN > 0 {
		add(mesh.Tensor, "expert output all-reduce", collective.AllReduce, moeN, moeCost, false)
	}
	if !exposure {
		return 0
	}

	// The matmuls each all-reduce can hide under, per layer and micro-batch.
	d, q, kv := projWidths(&spec)
	mlp := float64(spec.MLPInputs() + 1)
	tokens := float64(sh.b) * float64(sh.s) // per micro-batch, shared by the tensor group
	attnMM := 2 * d * (2*q + 2*kv) * tokens / float64(sh.t)
	mlpMM := 2 * d * mlp * float64(spec.DFF) * tokens / float64(sh.t)
	perFLOP := est.Time.MXU.Seconds() / mxuFLOPsPerChip(est, sh)
	comm := cost.ICITime.Seconds()
	hide := func(mm float64) float64 { return max(comm/float64(sh.t), comm-mm*perFLOP) }
	layer := (fwd + 1) * (hide(attnMM) + hide(mlpMM))
	exposed := layer * float64(sh.ls) * float64(sh.m)
	if moeN > 0 {
		// the expert output's all-reduce is larger than the activation's
		// it stands in for: what it adds is exposed as well, overlapped
		// no more than the one it replaces
		more := moeCost.ICITime.Seconds() - comm
		exposed += float64(moeN) * max(more/float64(sh.t), more-mlpMM*perFLOP)
	}
	return seconds(exposed)
}

// parallelTensor is tensorParallel for a parallel block. Between layers
// the activations are sharded over tensor (MaxText's activation_embed
// rule), so a layer all-gathers its one normed input for both blocks and
// reduce-scatters each block's output: one all-gather and two
// reduce-scatters in the forward pass, where a sequential layer does two
// of each (its two all-reduces). The backward pass is the forward's
// transpose: the two blocks' output gradients are one tensor, all-gathered
// once, and the input's gradient, summed over both blocks, is
// reduce-scattered once. Recomputing any projection that reads the input
// repeats its all-gather; the blocks' outputs, which only the residual sum
// reads, are never recomputed. Each collective hides as in tensorParallel
// under the projections it feeds or drains, but for one ring step in t.
func (e *Estimator) parallelTensor(est *Estimate, sh *shape, act unit.Bytes, add func(mesh.Axis, string, collective.Op, int, collective.Cost, bool), exposure bool) time.Duration {
	j, m := &est.Job, &est.Mesh
	spec := j.Model
	r := sh.r
	re := 0
	if r.recompute > 0 {
		re = 1
	}
	l := m.Link(mesh.Tensor).Collective()
	ag := collective.Hierarchical(collective.AllGather, act, sh.t, l, 1, collective.Link{})
	rs := collective.Hierarchical(collective.ReduceScatter, act, sh.t, l, 1, collective.Link{})
	n := sh.ls * sh.m
	add(mesh.Tensor, "activation all-gather", collective.AllGather, (2+re)*n, ag, false)
	add(mesh.Tensor, "activation reduce-scatter", collective.ReduceScatter, 3*n, rs, false)
	if !exposure {
		return 0
	}

	// The matmuls each collective can hide under, per layer and
	// micro-batch, in seconds.
	d, q, kv := projWidths(&spec)
	mlp := float64(spec.MLPInputs())
	perFLOP := est.Time.MXU.Seconds() / mxuFLOPsPerChip(est, sh)
	mm := func(flopsPerToken float64) float64 {
		return flopsPerToken * float64(sh.b) * float64(sh.s) / float64(sh.t) * perFLOP
	}
	in := mm(2*d*(q+2*kv) + 2*d*mlp*float64(spec.DFF)) // QKV and the MLP's input
	attnOut, mlpOut := mm(2*d*q), mm(2*d*float64(spec.DFF))
	tf := float64(sh.t)
	hide := func(c time.Duration, mm float64) float64 { return max(c.Seconds()/tf, c.Seconds()-mm) }
	layer := hide(ag.ICITime, in) + hide(rs.ICITime, attnOut) + hide(rs.ICITime, mlpOut) // forward
	layer += hide(ag.ICITime, attnOut+mlpOut) + hide(rs.ICITime, in)                     // backward
	if re > 0 {
		layer += hide(ag.ICITime, mm(r.recompute))
	}
	return seconds(layer * float64(n))
}
