package plan

import (
	"shardlab/cost"
	"shardlab/mesh"
	"shardlab/schedule"
)

// The combinations a search costs each layout over (worker.layout): its
// pipeline schedules, micro-batch counts, remat policies and expert
// dispatches, the batches each may take, and, on a multislice, the
// batches a layout of the same sizes found.

// combo is one way to run a mesh: a pipeline schedule and its chunks, the
// micro-batches, the remat policy and the expert dispatch.
type combo struct {
	k    schedule.Kind
	v    int
	mb   int
	r    cost.Remat
	ring bool
}

// job is the request's job run as c.
func (c combo) job(r Request) cost.Job { return c.with(r.job()) }

// with is j run as c.
func (c combo) with(j cost.Job) cost.Job {
	c.set(&j, j.Schedule, j.Chunks)
	return j
}

// set makes j run as c, on schedule k with v chunks where c names none.
func (c combo) set(j *cost.Job, k schedule.Kind, v int) {
	j.Schedule, j.Chunks = k, v
	if c.k != "" {
		j.Schedule, j.Chunks = c.k, c.v
	}
	j.MicroBatches = c.mb
	j.Remat = c.r
	j.RingOfExperts = c.ring
}

// rematsFor is the remat policies r's layouts are costed with: the
// request's, or every one the search weighs (PyTorchRemats for
// FrameworkPyTorch).
func rematsFor(r *Request) []cost.Remat {
	switch {
	case r.Remat != "":
		return []cost.Remat{r.Remat}
	case r.Framework == FrameworkPyTorch:
		return PyTorchRemats
	}
	return cost.SearchRemats()
}

// takeFits is an empty slice of capacity n for the batches of a layout's
// combinations, cut from the worker's chunk: the layouts of a multislice
// remember theirs for the search's length, and one allocation per chunk
// is cheaper than one per layout.
func (w *worker) takeFits(n int) []batchFit {
	if cap(w.fitChunk)-len(w.fitChunk) < n {
		w.fitChunk = make([]batchFit, 0, max(n, 4096))
	}
	l := len(w.fitChunk)
	w.fitChunk = w.fitChunk[:l+n]
	return w.fitChunk[l : l : l+n]
}

// sched is a pipeline schedule and its chunks per stage.
type sched struct {
	k schedule.Kind
	v int
}

// schedules are the pipeline schedules a mesh of p stages is costed with:
// the request's, or when it sets none and the mesh pipelines, GPipe, 1F1B
// and the chunked schedule with 2 and 4 chunks where they divide the
// layers (MaxText's, when the framework is MaxText: no 1F1B, circular).
func (w *worker) schedules(p int) []sched {
	if l, ok := w.scheds[p]; ok {
		return l
	}
	if w.scheds == nil {
		w.scheds = map[int][]sched{}
	}
	l := schedulesFor(&w.req, p)
	w.scheds[p] = l
	return l
}

// schedulesFor is the schedules of r a mesh of p stages is costed with
// (worker.schedules).
func schedulesFor(r *Request, p int) []sched {
	scheds := []sched{{r.Schedule, max(r.Chunks, 1)}}
	if p <= 1 || r.Schedule != "" {
		return scheds
	}
	one, chunked := schedule.OneFOneB, schedule.Interleaved
	if r.Framework == FrameworkMaxText {
		one, chunked = "", schedule.Circular
	}
	scheds = []sched{{schedule.GPipe, 1}}
	if one != "" {
		scheds = append(scheds, sched{one, 1})
	}
	for _, v := range []int{2, 4} {
		if r.Model.Layers%(p*v) == 0 {
			scheds = append(scheds, sched{chunked, v})
		}
	}
	return scheds
}

// rings are the expert dispatches m is costed with: the all-to-alls, and
// for a dropless mixture of experts over an expert axis MaxText's ring of
// experts too.
func (w *worker) rings(m mesh.Mesh) []bool { return ringsFor(&w.req, m.Size(mesh.Expert)) }

// ringsFor is rings of a mesh of r with an expert axis of size e.
func ringsFor(r *Request, e int) []bool {
	if r.Model.MoE() && e > 1 && r.CapacityFactor <= 0 {
		return bothRings[:]
	}
	return bothRings[:1]
}

// bothRings is the expert dispatches rings returns parts of (read only).
var bothRings = [2]bool{false, true}

// batchRange is the global batches fitBatch weighs for m with mb
// micro-batches (Request.batchRange).
func (w *worker) batchRange(m *mesh.Mesh, mb int) (lo, hi int) {
	// the expert axis shards the batch as data and fsdp do
	return w.req.batchRange(m.Size(mesh.Data) * m.Size(mesh.FSDP) * m.Size(mesh.Expert) * mb)
}

// batchRange is the global batches a layout whose batch splits into
// shards (data × fsdp × expert × micro-batches) is weighed at, lo to hi in
// steps of lo; none when hi < lo (the limit, ReasonBatchLimit).
func (r *Request) batchRange(shards int) (lo, hi int) {
	if r.GlobalBatch > 0 {
		return r.GlobalBatch, r.GlobalBatch
	}
	unit := r.batchUnit(shards)
	return unit, r.MaxGlobalBatch / unit * unit
}

// batchUnit is the step of the global batches a layout whose batch splits
// into shards is weighed at. Per-shard batches are multiples of step: 1,
// or the chip's devices when they must split its sequences (microStep).
// With the logits in VocabTiles chunks, MaxText also needs each JAX
// device's tokens (per_device_batch_size × max_target_length) to be a
// multiple of the tile count ([types.py], as export checks it), so the
// batch is a multiple of tiles·devices / gcd(seq, tiles·devices) too.
func (r *Request) batchUnit(shards int) int {
	unit := max(r.microStep, 1) * shards
	if r.VocabTiles > 1 && r.Seq > 0 {
		n := r.VocabTiles * r.Multislice.Chips() * r.Multislice.Slice.Chip.JAXDevicesPerChip
		v := n / gcd(r.Seq, n)
		unit = unit / gcd(unit, v) * v
	}
	return unit
}

// gcd is the greatest common divisor of two positive numbers.
func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// rejectBatchLimit counts n combinations of out, tried in a row, as
// rejected for the batch limit.
func (w *worker) rejectBatchLimit(out *outcome, n int) {
	out.evaluated += n
	for range n {
		w.reject(ReasonBatchLimit)
	}
}

// sizeMemo is what a layout's combinations take from and give to
// worker.batches, in the order layout tries them: the batches a layout of
// the same sizes found (known, when seen), or, for the first layout of its
// sizes on a multislice, those it finds (fits, when remember).
type sizeMemo struct {
	sizes          [mesh.NumAxes]int
	known, fits    []batchFit
	seen, remember bool
	i              int // the next combination's index in known
}

// memo is m's sizeMemo for its n combinations.
func (w *worker) memo(m *mesh.Mesh, n int) sizeMemo {
	var sm sizeMemo
	for a := range mesh.Axis(mesh.NumAxes) {
		sm.sizes[a] = m.Size(a)
	}
	sm.known, sm.seen = w.batches[sm.sizes]
	sm.remember = !sm.seen && w.req.Multislice.Slices > 1
	if sm.remember {
		sm.fits = w.takeFits(n)
	}
	return sm
}

// next is the batch a layout of the same sizes found for the next
// combination, nil when none did.
func (sm *sizeMemo) next() *batchFit {
	if !sm.seen {
		return nil
	}
	sm.i++
	return &sm.known[sm.i-1]
}

// keep remembers f, the next combination's batch, when the layout is the
// first of its sizes.
func (sm *sizeMemo) keep(f batchFit) {
	if sm.remember {
		sm.fits = append(sm.fits, f)
	}
}

// remember keeps what the first layout of its sizes found for the
// layouts of its sizes after it.
func (w *worker) remember(sm *sizeMemo) {
	if !sm.remember {
		return
	}
	if w.batches == nil {
		w.batches = map[[mesh.NumAxes]int][]batchFit{}
	}
	w.batches[sm.sizes] = sm.fits
}
