package plan

import (
	"fmt"
	"strconv"
	"strings"

	"shardlab/cost"
	"shardlab/mesh"
	"shardlab/unit"
)

// Gradient accumulation: a request that fixes its global batch may ask a
// layout without a pipeline for more sequences per step than one
// forward and backward pass fits. MaxText then runs the step as
// gradient_accumulation_steps micro-batches one after another, summing
// their gradients (utils/gradient_accumulation.py, maxtext e591f30), and
// cost costs such a job as its micro-batches without a pipeline.
//
// The search chooses the micro-batches of each layout it tries
// (accumulation). A layout given as {mesh} with a fixed {global_batch}
// runs in the micro-batches {gradient_accumulation_steps} names; with 0
// (the planner chooses) in the fewest that fit, of the counts that divide
// the batch into micro-batches its batch shards split
// (fixedAccumulation), which the plan's reasons name
// (accumulationNote); the plan, its export and check then all cost the
// job MaxText runs with that key (export.Verify names it).

// MaxAccumulationSteps is the largest {gradient_accumulation_steps}: the
// steps divide the global batch, at most MaxBatch sequences.
const MaxAccumulationSteps = MaxBatch

// parseAccumulation reads {gradient_accumulation_steps}: 0 lets the planner
// choose; a count is of a fixed layout ({mesh}, without a pipeline: MaxText
// runs a pipeline's micro-batches as num_pipeline_microbatches, and the
// two together are not modelled) and a fixed {global_batch} it divides,
// for MaxText trains on int(devices x per_device_batch_size) x
// gradient_accumulation_steps sequences a step (configs/types.py
// calculate_global_batch_sizes @e591f30c), and it refuses fp8 with
// accumulation (its validation there: "FP8 quantization is not compatible
// with gradient accumulation").
func parseAccumulation(r *Request, o Options) error {
	g := o.GradientAccumulationSteps
	v := strconv.Itoa(g)
	switch {
	case g < 0 || g > MaxAccumulationSteps:
		return refuse(OptionGradientAccumulationSteps, v, nil, " %d, want 0 to %d (0: the planner chooses)", g, MaxAccumulationSteps)
	case g == 0:
		return nil
	case r.Axes == nil:
		return refuse(OptionGradientAccumulationSteps, v, nil, " %d needs {mesh}: a search chooses each layout's micro-batches itself; give the layout as {mesh}, or 0", g)
	case r.GlobalBatch == 0:
		return refuse(OptionGradientAccumulationSteps, v, nil, " %d needs {global_batch}: MaxText's step is gradient_accumulation_steps micro-batches of a batch it is given (configs/types.py), so give {global_batch}, or 0", g)
	case r.GlobalBatch%g != 0:
		return refuse(OptionGradientAccumulationSteps, v, nil, " %d does not divide {global_batch} %d: MaxText's step is gradient_accumulation_steps micro-batches of one size (configs/types.py calculate_global_batch_sizes), want a divisor of %d", g, r.GlobalBatch, r.GlobalBatch)
	case g > 1 && fixedPipeline(r.Axes) > 1:
		return refuse(OptionGradientAccumulationSteps, v, nil, " %d with {mesh} %q, which has a pipeline: a pipeline's micro-batches are its own (MaxText num_pipeline_microbatches) and accumulation over a pipeline is not modelled, want 1 or 0, or a {mesh} without %s", g, o.Mesh, mesh.Pipeline)
	}
	if n := batchShards(r.Axes); g > 1 && r.DeviceAxes == nil && (r.GlobalBatch/g)%n != 0 {
		return refuse(OptionGradientAccumulationSteps, v, nil, " %d leaves micro-batches of %d sequences, which do not split over {mesh} %q's %d batch shards (data x fsdp x expert, MaxText's activation_batch), want one of %s",
			g, r.GlobalBatch/g, o.Mesh, n, accumulationsThatSplit(r.GlobalBatch, n))
	}
	r.Accumulation = g
	return nil
}

// parseFixedBatch refuses a {global_batch} that a fixed layout ({mesh})
// cannot split, an input error: cost shards the batch over data, fsdp and
// expert (MaxText's activation_batch rule) and each shard into
// micro-batches, at least one, and with a pipeline at least one a stage
// (worker.layout weighs p, 2p, 4p and 8p), so every search of it would
// reject every combination for the batch (cost.ReasonBatch). A mesh asked
// in JAX devices splits the batch over its own data, fsdp and expert
// (either chip reading holds a multiple of them, plan's chipReadings).
// {gradient_accumulation_steps} is parseAccumulation's to check.
func parseFixedBatch(r *Request, o Options) error {
	axes := r.Axes
	if r.DeviceAxes != nil {
		axes = r.DeviceAxes
	}
	if axes == nil || r.GlobalBatch == 0 {
		return nil
	}
	shards, stages := batchShards(axes), fixedPipeline(axes)
	step, why := shards, "data x fsdp x expert, MaxText's activation_batch"
	if stages > 1 {
		step *= stages
		why += fmt.Sprintf(", times at least one micro-batch for each of its %d pipeline stages", stages)
	}
	if r.GlobalBatch%step == 0 {
		return nil
	}
	return refuse(OptionGlobalBatch, o.GlobalBatch, nil, " %q is %s, which {mesh} %q cannot split (%d batch shards: %s), want a multiple of %d, such as %s",
		o.GlobalBatch, unit.Plural(r.GlobalBatch, "sequence"), o.Mesh, shards, why, step, nearMultiples(r.GlobalBatch, step))
}

// nearMultiples are the multiples of step nearest n, "64" or "64 or
// 128": the one below (when positive) and the one above.
func nearMultiples(n, step int) string {
	above := (n/step + 1) * step
	if below := n / step * step; below > 0 {
		return strconv.Itoa(below) + " or " + strconv.Itoa(above)
	}
	return strconv.Itoa(above)
}

// batchShards is the batch's shards of a layout asked as axes: data, fsdp
// and expert split it (MaxText's activation_batch rule; cost's shape
// refuses a batch they do not divide).
func batchShards(axes []mesh.Degree) int {
	n := 1
	for _, d := range axes {
		if d.Axis == mesh.Data || d.Axis == mesh.FSDP || d.Axis == mesh.Expert {
			n *= d.ICI * d.DCN
		}
	}
	return n
}

// accumulationsThatSplit lists the step counts whose micro-batches of
// batch the n batch shards divide: "1, 2, 4" (at most twelve, then
// "...").
func accumulationsThatSplit(batch, n int) string {
	var ok []string
	for g := 1; g <= batch && len(ok) <= 12; g++ {
		if batch%g == 0 && (batch/g)%n == 0 {
			ok = append(ok, strconv.Itoa(g))
		}
	}
	if len(ok) > 12 {
		ok = append(ok[:12], "...")
	}
	if len(ok) == 0 {
		return "none: the batch itself does not split over them"
	}
	return strings.Join(ok, ", ")
}

// maxAccumulation is the most micro-batches the search accumulates a
// layout's step over.
const maxAccumulation = 64

// accumulation is the micro-batches a mesh m without a pipeline is costed
// with: the request's Accumulation when it gives one; else 1 where the
// request lets the planner choose the batch (a smaller batch fits better
// than accumulating); for a layout the request names, the fewest of the
// counts MaxText can run that fit (fixedAccumulation); else 1 where one
// micro-batch of the request's global batch runs under some remat policy
// and dispatch; else the fewest of 2, 4, 8, … with which one does, so
// that the batch still splits into whole sequences per shard
// (Request.batchUnit); 1 where none does. It reads memory alone, never
// the search's bars, so the lean search and the whole one cost a layout
// alike.
func (w *worker) accumulation(m *mesh.Mesh, remats []cost.Remat, rings []bool) int {
	if w.req.Accumulation > 0 && m.Size(mesh.Pipeline) == 1 {
		return w.req.Accumulation
	}
	b := w.req.GlobalBatch
	if b == 0 || m.Size(mesh.Pipeline) > 1 || w.req.Framework == FrameworkPyTorch {
		return 1
	}
	shards := m.Size(mesh.Data) * m.Size(mesh.FSDP) * m.Size(mesh.Expert)
	if w.req.Axes != nil {
		return w.fixedAccumulation(m, shards, remats, rings)
	}
	for g := 1; g <= maxAccumulation && b%w.req.batchUnit(shards*g) == 0; g *= 2 {
		if w.runs(m, g, remats, rings) {
			return g
		}
	}
	return 1
}

// fixedAccumulation is the micro-batches of a layout the request names
// (m, whose batch splits into shards) when the request leaves them to the
// planner: the fewest g that fit under some remat policy and dispatch
// (runs) of those MaxText can run, which divide the global batch into g
// micro-batches of one size (it trains on int(devices x
// per_device_batch_size) x gradient_accumulation_steps sequences a step:
// configs/types.py calculate_global_batch_sizes @e591f30c) that split
// into whole sequences per shard (Request.batchUnit, as parseAccumulation
// asks of a count given); 1, one pass, where none fits, so that the plan
// shows the layout as asked and by how much it misses.
func (w *worker) fixedAccumulation(m *mesh.Mesh, shards int, remats []cost.Remat, rings []bool) int {
	b, u := w.req.GlobalBatch, w.req.batchUnit(shards)
	for g := 1; g <= min(b, MaxAccumulationSteps); g++ {
		if b%g == 0 && (b/g)%u == 0 && w.runs(m, g, remats, rings) {
			return g
		}
	}
	return 1
}

// runs reports whether the request's global batch in g micro-batches fits
// m under any of remats and rings.
func (w *worker) runs(m *mesh.Mesh, g int, remats []cost.Remat, rings []bool) bool {
	sc := w.schedules(1)[0]
	j := w.cur
	for _, r := range remats {
		for _, ring := range rings {
			combo{sc.k, sc.v, g, r, ring}.set(&j, w.job.Schedule, w.job.Chunks)
			bm, err := w.memory(&j, m)
			if err != nil {
				continue
			}
			if why, err := bm.Check(w.req.GlobalBatch); err == nil && why == "" {
				return true
			}
		}
	}
	return false
}

// accumulationNote is the reason a plan of a layout the request names
// runs its global batch in micro-batches the request did not give
// (fixedAccumulation): one pass misses, by the shortfall est costs it at,
// and the count is the fewest that fit of those MaxText can run. ok is
// false for any other plan.
func accumulationNote(p Plan, est *cost.Estimator) (n Note, ok bool) {
	r, e := p.Request, p.Best.Estimate
	g := p.ChosenAccumulation()
	if g == 0 {
		return Note{}, false
	}
	one := e.Job
	one.MicroBatches = 1
	miss := "it does not fit"
	if o, err := est.Estimate(one, e.Mesh); err == nil && o.Memory.Shortfall() != "" {
		miss = "misses " + o.Memory.Shortfall()
	}
	shards := e.Mesh.Size(mesh.Data) * e.Mesh.Size(mesh.FSDP) * e.Mesh.Size(mesh.Expert)
	return note(OptionGradientAccumulationSteps, "gradient accumulation, chosen by the planner: {global_batch} %d in one pass on %s under remat %s %s, so the step runs as %d micro-batches of %d sequences (MaxText gradient_accumulation_steps %d), the fewest that fit of the counts MaxText can run here (%s: configs/types.py trains on micro-batches of one size, and each must split over the layout's %d batch shards); {gradient_accumulation_steps} fixes another count",
		r.GlobalBatch, e.Mesh, e.Job.Remat, miss, g, r.GlobalBatch/g, g, accumulationsThatSplit(r.GlobalBatch, r.batchUnit(shards)), shards), true
}

// ChosenAccumulation is the micro-batches, above 1, the planner chose to
// run the global batch of a layout the request names in
// (fixedAccumulation), the request giving none; 0 for a plan in one pass,
// of a count given, of a search or with a pipeline. A compile log does
// not say which count it compiled, so check asks for it then.
func (p Plan) ChosenAccumulation() int {
	r, e := p.Request, p.Best.Estimate
	if r.Axes == nil && r.DeviceAxes == nil || r.Accumulation > 0 || e.Mesh.Size(mesh.Pipeline) > 1 || e.Job.MicroBatches <= 1 || !e.Memory.Fits() {
		return 0
	}
	return e.Job.MicroBatches
}
