package cost

import (
	"fmt"
	"reflect"
	"testing"

	"shardlab/mesh"
	"shardlab/model"
	"shardlab/schedule"
	"shardlab/unit"
)

// batchCase is a job on a layout whose memory the tests below weigh at
// many batches.
type batchCase struct {
	name   string
	j      Job
	accel  string
	slices int
	layout string
}

// batchCases covers what a layout's memory depends on: dense and
// mixture-of-experts models (a dropless ring of experts, a capacity
// factor, dense and MoE layers mixed), latent attention, a parallel
// block, every remat policy, pipelines of each schedule with their
// micro-batches (the first and last stage differ), offload (one bound by
// host memory), a memory calibration, vocabulary tiles, dot-product
// attention, and layouts that cannot run the job at all.
func batchCases(t testing.TB) []batchCase {
	var cases []batchCase
	add := func(spec model.Spec, accel string, slices int, layout string, change func(*Job)) {
		j := NewJob(spec, spec.SeqLen, 1)
		if change != nil {
			change(&j)
		}
		cases = append(cases, batchCase{fmt.Sprintf("%s on %d x %s %s, %s %s", spec.Name, slices, accel, layout, j.Remat, j.Schedule), j, accel, slices, layout})
	}
	for _, r := range Remats() {
		add(lookup(t, "llama3-8b"), "v5p-8", 1, "fsdp=4", func(j *Job) {
			j.Remat = r
			j.Custom, _ = ParseCustom("query_proj=offload,mlpwi_0=device")
		})
	}
	add(lookup(t, "llama3-70b"), "v5p-128", 1, "fsdp=16,tensor=4", nil)
	add(lookup(t, "llama3-70b"), "v5p-128", 2, "fsdp=16,tensor=4,data=2(dcn)", func(j *Job) { j.Remat = RematSaveDotExceptMLP })
	add(lookup(t, "llama3-405b"), "v5p-8", 1, "fsdp=4", nil) // the state alone does not fit
	for _, k := range []struct {
		kind           schedule.Kind
		chunks, micros int
	}{{schedule.GPipe, 1, 8}, {schedule.OneFOneB, 1, 4}, {schedule.Interleaved, 2, 8}, {schedule.Circular, 4, 4}, {schedule.Interleaved, 2, 6}} {
		add(lookup(t, "llama3-70b"), "v5p-128", 2, "fsdp=16,pipeline=4,pipeline=2(dcn)", func(j *Job) {
			j.Schedule, j.Chunks, j.MicroBatches = k.kind, k.chunks, k.micros
			j.Remat = RematMinimal
		})
	}
	add(lookup(t, "llama3-70b"), "v6e-32", 1, "fsdp=32", func(j *Job) {
		j.OptimizerOffload, j.ParameterOffload, j.Precision = true, true, MaxTextBF16Precision()
	})
	add(lookup(t, "llama3-405b"), "tpu7x-512", 1, "fsdp=256", func(j *Job) { // host memory binds before HBM
		j.Remat = RematCustom
		j.Custom, _ = ParseCustom("decoder_layer_input=offload")
	})
	add(lookup(t, "llama3-8b"), "tpu7x-8", 1, "fsdp=2,context=2", func(j *Job) {
		j.TempScale, j.VocabTiles, j.HBMHeadroom, j.Attention = 1.37, 4, 0.1, AttentionDot
	})
	add(lookup(t, "gemma2-9b"), "v5litepod-16", 1, "data=2,tensor=8", func(j *Job) { j.Remat, j.Dropout = RematNone, true })
	add(lookup(t, "mixtral-8x7b"), "v5p-128", 1, "fsdp=8,expert=8", nil)
	add(lookup(t, "mixtral-8x7b"), "v5p-128", 1, "fsdp=8,expert=8", func(j *Job) { j.RingOfExperts = true })
	add(lookup(t, "mixtral-8x7b"), "v5p-64", 1, "fsdp=4,expert=2,tensor=4", func(j *Job) { j.CapacityFactor = 1.25 })
	add(lookup(t, "llama4-maverick"), "v5p-256", 1, "fsdp=16,expert=8", func(j *Job) { j.LoadImbalance = 1.3 })
	add(lookup(t, "deepseek3-671b"), "v5p-512", 1, "fsdp=32,expert=8", nil)
	add(lookup(t, "gemma-2b"), "v5p-32", 1, "tensor=16", nil) // tensor does not divide the heads
	add(lookup(t, "llama3-70b"), "v5p-128", 1, "fsdp=16,pipeline=4", func(j *Job) { j.MicroBatches = 2 })
	add(lookup(t, "llama3-70b"), "v5p-128", 1, "fsdp=64", func(j *Job) { j.MicroBatches = 2 }) // micro-batches without stages
	return cases
}

// TestBatchMemoryIsMemory holds BatchMemory to Memory, its second
// implementation: at every batch, from none to past what fits and batches
// that do not split over the shards, the same total, the same verdict and
// the same error.
func TestBatchMemoryIsMemory(t *testing.T) {
	e := NewEstimator()
	verdicts := map[string]int{}
	cases := batchCases(t)
	// and each once more with the usable HBM just above what one sequence
	// per shard takes, where the state is close to all of it
	for _, c := range cases[:len(cases):len(cases)] {
		m := layout(t, c.accel, c.slices, c.layout)
		j := c.j
		j.GlobalBatch = m.Size(mesh.Data) * m.Size(mesh.FSDP) * m.Size(mesh.Expert) * j.MicroBatches
		mem, err := e.Memory(j, m)
		if err != nil {
			continue
		}
		usable := float64(mem.Total()) + float64(mem.Total()-mem.State())/4
		c.j.HBMHeadroom = 1 - usable/float64(m.Multislice.Slice.Chip.UsableHBM(0))
		if c.j.HBMHeadroom > 0 && c.j.HBMHeadroom < 1 {
			c.name += fmt.Sprintf(", headroom %.4f", c.j.HBMHeadroom)
			cases = append(cases, c)
		}
	}
	for _, c := range cases {
		m := layout(t, c.accel, c.slices, c.layout)
		bm, bmErr := e.BatchMemory(c.j, m)
		shards := max(bm.shards, 1)
		for _, b := range []int{-1, 0, 1, 3, shards, 2 * shards, 3*shards + 1, 5 * shards, 17 * shards, 64 * shards, 300 * shards} {
			j := c.j
			j.GlobalBatch = b
			mem, err := e.Memory(j, m)
			var total unit.Bytes
			var fits bool
			var gotErr, fitsErr error = bmErr, bmErr
			switch {
			case bmErr == nil:
				total, gotErr = bm.Total(b)
				fits, fitsErr = bm.Fits(b)
			case b <= 0:
				continue // BatchMemory's error is Memory's at a positive batch
			}
			if !reflect.DeepEqual(gotErr, err) || !reflect.DeepEqual(fitsErr, err) {
				t.Errorf("%s, batch %d: BatchMemory errors %v and %v, Memory %v", c.name, b, gotErr, fitsErr, err)
				continue
			}
			if err != nil {
				verdicts[fmt.Sprintf("%T", err)]++
				continue
			}
			verdicts[fmt.Sprint("fits ", fits)]++
			if total != mem.Total() || fits != mem.Fits() {
				t.Errorf("%s, batch %d: BatchMemory total %v (fits %v), Memory %v (fits %v)", c.name, b, total, fits, mem.Total(), mem.Fits())
			}
			// the bound Fits rejects by: no batch takes less than the
			// state of the most loaded stage
			if bm.state > mem.Total() || bm.state < mem.State() {
				t.Errorf("%s, batch %d: state bound %v, want between the state %v and the total %v", c.name, b, bm.state, mem.State(), mem.Total())
			}
		}
	}
	t.Logf("verdicts: %v", verdicts)
	if verdicts["fits true"] < 20 || verdicts["fits false"] < 20 || verdicts["*cost.Infeasible"] < 10 || verdicts["*fmt.wrapError"] < 10 {
		t.Errorf("verdicts %v: want each of fits, does not fit, an infeasible layout and an invalid job at least 10 times", verdicts)
	}
}

// TestBoundIsBelowTheStep: the bound a search prunes by never exceeds the
// step Estimate reports, nor falls short of its throughput, for every case
// at a batch that runs and one that does not fit; where it is equal, the
// step has no exposed collectives. Throughput, which the search ranks by,
// is the finished estimate's exactly.
func TestBoundIsBelowTheStep(t *testing.T) {
	e := NewEstimator()
	n := 0
	for _, c := range batchCases(t) {
		m := layout(t, c.accel, c.slices, c.layout)
		shards := m.Size(mesh.Data) * m.Size(mesh.FSDP) * m.Size(mesh.Expert) * c.j.MicroBatches
		for _, b := range []int{1, 8, 256} {
			j := c.j
			j.GlobalBatch = b * shards
			est, err := e.Estimate(j, m)
			bound, boundErr := e.Bound(j, m)
			if !reflect.DeepEqual(err, boundErr) {
				t.Errorf("%s, batch %d: Bound error %v, Estimate error %v", c.name, j.GlobalBatch, boundErr, err)
			}
			if bm, bmErr := e.BatchMemory(c.j, m); bmErr == nil {
				b2, err2 := bm.Bound(j.GlobalBatch)
				if !reflect.DeepEqual(err2, err) || (err == nil && !reflect.DeepEqual(e.Finish(b2), est)) {
					t.Errorf("%s, batch %d: BatchMemory.Bound finishes to another estimate (error %v, want %v)", c.name, j.GlobalBatch, err2, err)
				}
			}
			if err != nil {
				continue
			}
			n++
			if got := bound.Step(); got > est.Time.Step || got < est.Time.Compute {
				t.Errorf("%s, batch %d: bound %v, want between the compute %v and the step %v", c.name, j.GlobalBatch, got, est.Time.Compute, est.Time.Step)
			}
			if got := bound.TokensPerSecondPerChip(); got < est.TokensPerSecondPerChip {
				t.Errorf("%s, batch %d: bound's throughput %v below the estimate's %v", c.name, j.GlobalBatch, got, est.TokensPerSecondPerChip)
			}
			// the search ranks by Throughput and finishes only what it
			// keeps: it must be the finished estimate's, to the bit
			if got := e.Throughput(&bound); got != est.TokensPerSecondPerChip {
				t.Errorf("%s, batch %d: Throughput %v, the finished estimate's %v", c.name, j.GlobalBatch, got, est.TokensPerSecondPerChip)
			}
			if bound.Step() == est.Time.Step && est.Time.ICI+est.Time.DCN > 0 {
				t.Errorf("%s, batch %d: bound %v equals the step with %v of collectives", c.name, j.GlobalBatch, bound.Step(), est.Time.ICI+est.Time.DCN)
			}
		}
	}
	if n < 40 {
		t.Errorf("%d estimates compared, want at least 40", n)
	}
}

// TestBatchMemoryGrowsWithTheBatch: HBM per chip never falls as the batch
// grows, shard by shard, for every case, and a batch that does not fit
// (HBM or host memory) is never followed by one that does: the planner's
// search for the largest batch that fits rests on it.
func TestBatchMemoryGrowsWithTheBatch(t *testing.T) {
	e := NewEstimator()
	stops := map[Reason]int{} // cases whose batches stop fitting, by why
	for _, c := range batchCases(t) {
		m := layout(t, c.accel, c.slices, c.layout)
		bm, err := e.BatchMemory(c.j, m)
		if err != nil {
			continue
		}
		last := unit.Bytes(0)
		var unfit Reason
		for n := 1; n <= 512; n++ {
			total, err := bm.Total(n * bm.shards)
			if err != nil {
				t.Fatalf("%s, %d per shard: %v", c.name, n, err)
			}
			if total < last {
				t.Errorf("%s: %v at %d sequences per shard, %v at %d", c.name, total, n, last, n-1)
				break
			}
			last = total
			why, err := bm.Check(n * bm.shards)
			if err != nil {
				t.Fatalf("%s, %d per shard: %v", c.name, n, err)
			}
			if unfit != "" && why == "" {
				t.Errorf("%s: fits at %d sequences per shard, not at fewer (%s)", c.name, n, unfit)
				break
			}
			if why != "" && unfit == "" {
				unfit = why
				stops[why]++
			}
		}
	}
	t.Logf("batches stop fitting, by why: %v", stops)
	if stops[ReasonHBM] < 10 || stops[ReasonHost] < 1 {
		t.Errorf("batches stop fitting in %v cases, want HBM in at least 10 and host memory in at least 1", stops)
	}
}

// TestBatchMemorySetPolicy holds SetPolicy to BatchMemory: for every case
// and every remat policy, with the ring of experts and without, set in
// turn on one memory, the same memory (its checks, shape, state and
// stages) or the same error and the memory as it was.
func TestBatchMemorySetPolicy(t *testing.T) {
	e := NewEstimator()
	n := 0
	for _, c := range batchCases(t) {
		m := layout(t, c.accel, c.slices, c.layout)
		bm, err := e.BatchMemory(c.j, m)
		if err != nil {
			continue
		}
		for _, r := range append(Remats(), c.j.Remat) {
			for _, ring := range []bool{false, true, c.j.RingOfExperts} {
				j := c.j
				j.Remat, j.RingOfExperts = r, ring
				was := bm
				gotErr := bm.SetPolicy(r, ring)
				want, wantErr := e.BatchMemory(j, m)
				if wantErr != nil {
					want = was
				}
				got := bm
				got.layers, want.layers = layerMemo{}, layerMemo{} // the policies met so far (BatchMemory.layer)
				if !reflect.DeepEqual(gotErr, wantErr) || !reflect.DeepEqual(got, want) {
					t.Errorf("%s as %s, ring %v: Policy differs from BatchMemory (error %v, want %v)", c.name, r, ring, gotErr, wantErr)
				}
				if wantErr == nil {
					n++
				}
			}
		}
	}
	if n < 100 {
		t.Errorf("%d memories compared, want at least 100", n)
	}
}

// TestRescheduleIsReset holds Reschedule to BatchMemory: for every case,
// one memory walked through schedules with their chunks, micro-batch
// counts, remat policies and dispatches in turn (and once a job that
// differs elsewhere too), weighed at two batches after each step so that
// what Reschedule must forget is set, is the same memory as BatchMemory
// of that job on the layout, or returns the same error; what it keeps of
// the layout (the least parameters, compute and collectives' floors:
// forgetLayout) gives the ceilings' terms the fresh memory works out,
// and the one memory is Reset from case to case, so that what Reset
// must forget is set too.
func TestRescheduleIsReset(t *testing.T) {
	e := NewEstimator()
	type step struct {
		k        schedule.Kind
		chunks   int
		micros   []int
		dropout  bool
		policies []Remat
	}
	steps := []step{
		{schedule.GPipe, 1, []int{1, 8, 4}, false, []Remat{RematNone, RematFull}},
		{schedule.OneFOneB, 1, []int{4, 2, 1}, false, []Remat{RematMinimal}},
		{schedule.Interleaved, 2, []int{8, 6, 16}, false, []Remat{RematFull, RematNone}},
		{schedule.Circular, 4, []int{4, 8}, true, []Remat{RematNone}}, // Dropout: Reset's path
		{schedule.Circular, 2, []int{8, 1}, false, []Remat{RematSaveDotExceptMLP}},
	}
	n, errs := 0, 0
	var bm BatchMemory // Reset from one layout to the next, as a search's
	for _, c := range batchCases(t) {
		m := layout(t, c.accel, c.slices, c.layout)
		if err := bm.Reset(e, &c.j, &m); err != nil {
			continue
		}
		for _, s := range steps {
			for _, mb := range s.micros {
				for _, r := range append(s.policies, c.j.Remat) {
					for _, ring := range []bool{c.j.RingOfExperts, c.j.Model.MoE()} {
						j := c.j
						j.Schedule, j.Chunks, j.MicroBatches, j.Remat, j.RingOfExperts = s.k, s.chunks, mb, r, ring
						j.Dropout = j.Dropout != s.dropout
						j.GlobalBatch = 7
						gotErr := bm.Reschedule(&j)
						want, wantErr := e.BatchMemory(j, m)
						if !reflect.DeepEqual(gotErr, wantErr) {
							t.Errorf("%s with %s x %d, %d micro-batches, %s, ring %v: Reschedule's error %v, want %v", c.name, s.k, s.chunks, mb, r, ring, gotErr, wantErr)
							continue
						}
						if wantErr != nil {
							errs++
							continue
						}
						got := bm
						got.ps = stagePhases{}    // Check's scratch, set below
						forgetLayout(&got)        // checked below, against want's
						want.layers = layerMemo{} // its own policy's, which Reset remembers
						if !reflect.DeepEqual(got, want) {
							t.Errorf("%s with %s x %d, %d micro-batches, %s, ring %v: Reschedule differs from BatchMemory before either is staged", c.name, s.k, s.chunks, mb, r, ring)
						}
						got.stage() // as Check and Total do
						want.stage()
						if !reflect.DeepEqual(got, want) {
							t.Errorf("%s with %s x %d, %d micro-batches, %s, ring %v: Reschedule differs from BatchMemory", c.name, s.k, s.chunks, mb, r, ring)
						}
						n++
						sameCeilingTerms(t, &bm, &want, fmt.Sprintf("%s with %s x %d, %d micro-batches, %s, ring %v", c.name, s.k, s.chunks, mb, r, ring))
						_, _ = bm.Check(2 * bm.shards)
						_ = bm.ThroughputCeiling(bm.shards)
					}
				}
			}
		}
	}
	if n < 300 || errs < 50 {
		t.Errorf("%d memories and %d errors compared, want at least 300 and 50", n, errs)
	}
}

// TestMaxThroughputBoundsTheBound: for every case and every remat
// policy, no batch in a range runs faster than MaxThroughput of the range
// says (the search drops a combination by it without finding its batch),
// and the bound is near enough to be of use: within 1.5 times the fastest
// batch's bound in most cases.
func TestMaxThroughputBoundsTheBound(t *testing.T) {
	e := NewEstimator()
	n, near := 0, 0
	for _, c := range batchCases(t) {
		m := layout(t, c.accel, c.slices, c.layout)
		bm, err := e.BatchMemory(c.j, m)
		if err != nil {
			continue
		}
		for _, r := range []struct{ lo, hi int }{{1, 1}, {1, 8}, {3, 40}, {64, 64}, {1, 300}} {
			lo, hi := r.lo*bm.shards, r.hi*bm.shards
			got := bm.MaxThroughput(lo, hi)
			fastest := 0.0
			for b := lo; b <= hi; b += bm.shards {
				bd, err := bm.Bound(b)
				if err != nil {
					t.Fatalf("%s, batch %d: %v", c.name, b, err)
				}
				fastest = max(fastest, bd.TokensPerSecondPerChip())
			}
			n++
			if got < fastest {
				t.Errorf("%s, batches %d to %d: MaxThroughput %v, below the bound %v of one of them", c.name, lo, hi, got, fastest)
			}
			if got <= 1.5*fastest {
				near++
			}
		}
	}
	if n < 50 || near < n*3/4 {
		t.Errorf("MaxThroughput within 1.5 times the fastest bound in %d of %d ranges, want at least 3/4 of at least 50", near, n)
	}
}

// TestThroughputCeiling: for every case and every remat policy, the
// ceiling at a batch is at least the throughput the search ranks by there
// (Throughput of the batch's Bound; the search drops a combination by it
// before its bound is worked out), and near enough to be of use: within
// 1.5 times of it in most cases.
func TestThroughputCeiling(t *testing.T) {
	e := NewEstimator()
	n, near := 0, 0
	for _, c := range batchCases(t) {
		m := layout(t, c.accel, c.slices, c.layout)
		for _, r := range SearchRemats() {
			c.j.Remat = r
			bm, err := e.BatchMemory(c.j, m)
			if err != nil {
				continue
			}
			for _, per := range []int{1, 3, 8, 64} {
				b := per * bm.shards
				bd, err := bm.Bound(b)
				if err != nil {
					t.Fatalf("%s, batch %d: %v", c.name, b, err)
				}
				got, want := bm.ThroughputCeiling(b), e.Throughput(&bd)
				n++
				if got < want {
					t.Errorf("%s, %s, batch %d: ceiling %v, below the throughput %v", c.name, r, b, got, want)
				}
				if got <= 1.5*want {
					near++
				}
			}
		}
	}
	if n < 200 || near < n/2 {
		t.Errorf("ThroughputCeiling within 1.5 times the throughput in %d of %d batches, want at least half of at least 200", near, n)
	}
}

// TestStateExceeds holds StateExceeds to Check: on layouts of a 70B
// model whose state per chip is above and below the usable HBM, with and
// without a pipeline, for every schedule, micro-batch count, remat policy
// and, for a mixture of experts, dispatch (each a fresh BatchMemory), it
// must say the same for every job of a layout, and where it says the
// state exceeds, Check must be ReasonHBM at every batch weighed, the
// smallest to many times it; the state and usable HBM it weighs alone
// must be those the stages' bases (stage) then find. Both answers must
// occur, each with and without a pipeline.
func TestStateExceeds(t *testing.T) {
	e := NewEstimator()
	cases := []struct{ model, accel, layout string }{
		{"llama3-70b", "v5p-16", "fsdp=8"},
		{"llama3-70b", "v5p-64", "fsdp=32"},
		{"llama3-70b", "v5p-64", "data=4,fsdp=8"},
		{"llama3-70b", "v5p-64", "data=2,fsdp=16"},
		{"llama3-70b", "v5p-64", "fsdp=4,pipeline=8"},
		{"llama3-70b", "v5p-64", "data=4,pipeline=8"},
		{"mixtral-8x7b", "v5p-16", "expert=8"},
		{"mixtral-8x7b", "v5p-64", "fsdp=4,expert=8"},
	}
	seen := map[[2]bool]int{}
	for _, c := range cases {
		m := layout(t, c.accel, 1, c.layout)
		spec := lookup(t, c.model)
		p := m.Size(mesh.Pipeline)
		micros, scheds := []int{1, 2, 4}, []rangeSched{{schedule.GPipe, 1}}
		if p > 1 {
			micros, scheds = []int{p, 2 * p, 4 * p, 8 * p}, rangeScheds
		}
		first, n := false, 0
		for _, s := range scheds {
			for _, mb := range micros {
				for _, r := range Remats() {
					for _, ring := range []bool{false, spec.MoE()} {
						j := NewJob(spec, spec.SeqLen, 1)
						j.Schedule, j.Chunks, j.MicroBatches, j.Remat, j.RingOfExperts = s.k, s.v, mb, r, ring
						bm, err := e.BatchMemory(j, m)
						if err != nil {
							continue
						}
						got := bm.StateExceeds()
						if n == 0 {
							first = got
						} else if got != first && (p > 1 || mb == micros[0]) {
							t.Errorf("%s on %s, %s x %d, %d micro-batches, %s, ring %v: StateExceeds %v, %v for the layout's first job", c.model, c.layout, s.k, s.v, mb, r, ring, got, first)
						}
						n++
						state, usable := bm.state, bm.usable // weighed alone (stageState)
						for _, k := range []int{1, 2, 7, 64} {
							if why, err := bm.Check(k * bm.shards); got && (err != nil || why != ReasonHBM) {
								t.Errorf("%s on %s, %s x %d, %d micro-batches, %s, batch %d: StateExceeds, but Check says %q, %v", c.model, c.layout, s.k, s.v, mb, r, k*bm.shards, why, err)
							}
						}
						if bm.state != state || bm.usable != usable {
							t.Errorf("%s on %s, %s x %d, %d micro-batches, %s: StateExceeds weighed %v of %v usable, the stages' bases %v of %v", c.model, c.layout, s.k, s.v, mb, r, state, usable, bm.state, bm.usable)
						}
					}
				}
			}
		}
		seen[[2]bool{first, p > 1}]++
	}
	if len(seen) < 4 {
		t.Errorf("StateExceeds by (its answer, pipelined): %v, want every pair", seen)
	}
}

// forgetLayout forgets what bm remembers of its layout across Reschedule
// and SetPolicy (the least parameters, the compute floors, the
// collectives' floors, layoutComm and the layer shapes), as Reset does.
func forgetLayout(bm *BatchMemory) {
	bm.least, bm.leastOK, bm.floors, bm.comm, bm.lc, bm.layers = [2]float64{}, false, floorMemo{}, commMemo{}, layoutComm{}, layerMemo{}
}

// sameCeilingTerms checks that bm, rescheduled, has the compute floor and
// the ceilings' terms at two batches that want, its job's BatchMemory
// worked out afresh, has: what bm remembers of its layout
// (forgetLayout) answers as working it out again would.
func sameCeilingTerms(t *testing.T, bm, want *BatchMemory, what string) {
	t.Helper()
	gp, gf := bm.computeFloor()
	wp, wf := want.computeFloor()
	if gp != wp || gf != wf {
		t.Errorf("%s: computeFloor %v, %v after Reschedule, want %v, %v", what, gp, gf, wp, wf)
	}
	if got, want := bm.layoutFloor(), want.layoutFloor(); got != want {
		t.Errorf("%s: layoutFloor %v after Reschedule, want %v", what, got, want)
	}
	for _, b := range []int{bm.shards, 3 * bm.shards} {
		got, gotOK := bm.ceilingStep(b)
		want, wantOK := want.ceilingStep(b)
		if gotOK != wantOK || got != want {
			t.Errorf("%s: ceilingStep(%d) %+v, %v after Reschedule, want %+v, %v", what, b, got, gotOK, want, wantOK)
		}
	}
}

// TestRescheduleAfterAnotherSpec: an estimator a BatchMemory was Reset
// with that costs another model's job in between (its caches then hold
// that model's layers and parameters) must give, when the memory is
// rescheduled and set to another policy (Reschedule, SetPolicy, which
// skip comparing the spec while no other spec has passed:
// BatchMemory.validate), what a fresh estimator gives: the same memory
// and ceilings' terms, and the same checks, at every step.
func TestRescheduleAfterAnotherSpec(t *testing.T) {
	a, b := lookup(t, "llama3-70b"), lookup(t, "llama3-8b")
	ma := layout(t, "v5p-128", 2, "fsdp=16,pipeline=4,pipeline=2(dcn)")
	e := NewEstimator()
	var bm BatchMemory
	ja := NewJob(a, a.SeqLen, 1)
	ja.Schedule, ja.MicroBatches = schedule.GPipe, 8
	if err := bm.Reset(e, &ja, &ma); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mb := range []int{16, 4, 8} {
		for _, r := range []Remat{RematFull, RematNone, RematMinimal} {
			jb := NewJob(b, a.SeqLen, 1) // another spec in between, on the same layout
			jb.Schedule, jb.MicroBatches, jb.Remat = schedule.GPipe, mb, r
			bb, err := e.BatchMemory(jb, ma)
			if err != nil {
				t.Fatal(err)
			}
			_ = bb.RangeCeiling(bb.shards, 4*bb.shards, 1) // fills the estimator's caches for b
			j := ja
			j.MicroBatches = mb
			if err := bm.Reschedule(&j); err != nil {
				t.Fatal(err)
			}
			if err := bm.SetPolicy(r, false); err != nil {
				t.Fatal(err)
			}
			j.Remat = r
			want, err := NewEstimator().BatchMemory(j, ma)
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%d micro-batches, %s", mb, r)
			got := bm
			got.e, want.e, got.specs, want.specs = nil, nil, 0, 0
			forgetLayout(&got)
			forgetLayout(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: the memory after another spec differs from a fresh estimator's", name)
			}
			want.e = NewEstimator()
			_ = want.e.validate(&want.est.Job)
			sameCeilingTerms(t, &bm, &want, name)
			n++
		}
	}
	if n != 9 {
		t.Errorf("%d steps compared, want 9", n)
	}
}
