package plan

import (
	"shardlab/cost"
	"shardlab/mesh"
)

// Gradient accumulation: a request that fixes its global batch may ask a
// layout without a pipeline for more sequences per step than one
// forward and backward pass fits. MaxText then runs the step as
// gradient_accumulation_steps micro-batches one after another, summing
// their gradients (utils/gradient_accumulation.py, maxtext e591f30), and
// cost costs such a job as its micro-batches without a pipeline.

// maxAccumulation is the most micro-batches the search accumulates a
// layout's step over.
const maxAccumulation = 64

// accumulation is the micro-batches a mesh m without a pipeline is costed
// with: 1 where the request lets the planner choose the batch (a smaller
// batch fits better than accumulating), where it names the layout (the
// plan then costs that layout as given and shows by how much it misses,
// what check compares a compile log with), or where one micro-batch of the
// request's global batch runs under some remat policy and dispatch; else
// the fewest of 2, 4, 8, … with which one does, so that the batch still
// splits into whole sequences per shard (Request.batchUnit); 1 where none
// does. It reads memory alone, never the search's bars, so the lean
// search and the whole one cost a layout alike.
func (w *worker) accumulation(m *mesh.Mesh, remats []cost.Remat, rings []bool) int {
	b := w.req.GlobalBatch
	if b == 0 || w.req.Axes != nil || m.Size(mesh.Pipeline) > 1 {
		return 1
	}
	shards := m.Size(mesh.Data) * m.Size(mesh.FSDP) * m.Size(mesh.Expert)
	for g := 1; g <= maxAccumulation && b%w.req.batchUnit(shards*g) == 0; g *= 2 {
		if w.runs(m, g, remats, rings) {
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
