package cost

import (
	"testing"

	"shardlab/mesh"
	"shardlab/schedule"
)

// TestRangeCeiling holds RangeCeiling to what it bounds, pipelined layout
// by layout of dense models (tensor, context, fsdp, data and pipeline over
// ICI and DCN): for every micro-batch count and remat policy, the ceiling
// over a range of batches with the least stretch of the schedules is at
// least every schedule's ThroughputCeiling and Throughput at every batch
// of the range; and near enough to be of use, within 1.5 times the
// fastest in most ranges.
func TestRangeCeiling(t *testing.T) {
	e := NewEstimator()
	type sc struct {
		k schedule.Kind
		v int
	}
	scheds := []sc{{schedule.GPipe, 1}, {schedule.OneFOneB, 1}, {schedule.Interleaved, 2}, {schedule.Interleaved, 4}, {schedule.Circular, 2}}
	cases := []struct {
		model, accel string
		slices       int
		layout       string
	}{
		{"llama3-70b", "v5p-128", 2, "fsdp=16,pipeline=4,pipeline=2(dcn)"},
		{"llama3-70b", "v5p-128", 2, "data=2(dcn),tensor=8,pipeline=4,context=2"},
		{"llama3-70b", "tpu7x-128", 4, "data=2,tensor=4,pipeline=2,context=4,pipeline=4(dcn)"},
		{"llama3-8b", "v5litepod-64", 2, "fsdp=4,tensor=4,pipeline=4,fsdp=2(dcn)"},
		{"gemma2-9b", "v6e-64", 1, "data=2,tensor=4,pipeline=2,context=4"},
		{"qwen3-32b", "v5p-256", 1, "fsdp=4,tensor=8,pipeline=4"},
		{"gpt3-175b", "v4-256", 2, "tensor=8,pipeline=8,context=2,data=2(dcn)"},
	}
	n, near := 0, 0
	for _, c := range cases {
		m := layout(t, c.accel, c.slices, c.layout)
		spec := lookup(t, c.model)
		p := m.Size(mesh.Pipeline)
		for _, mb := range []int{p, 2 * p, 4 * p, 8 * p} {
			for _, r := range SearchRemats() {
				j := NewJob(spec, spec.SeqLen, 1)
				j.Schedule, j.Chunks, j.MicroBatches, j.Remat = schedule.GPipe, 1, mb, r
				bm, err := e.BatchMemory(j, m)
				if err != nil {
					t.Fatalf("%s on %s: %v", c.model, c.layout, err)
				}
				var ok []sc
				stretch := 0.0
				for _, s := range scheds {
					if spec.Layers%(p*s.v) == 0 {
						ok = append(ok, s)
						if st := bm.Stretch(s.k, s.v); stretch == 0 || st < stretch {
							stretch = st
						}
					}
				}
				for _, rg := range []struct{ lo, hi int }{{1, 1}, {1, 8}, {2, 30}, {1, 64}} {
					lo, hi := rg.lo*bm.shards, rg.hi*bm.shards
					got := bm.RangeCeiling(lo, hi, stretch)
					fastest := 0.0
					for _, s := range ok {
						js := j
						js.Schedule, js.Chunks = s.k, s.v
						bs, err := e.BatchMemory(js, m)
						if err != nil {
							t.Fatalf("%s on %s, %s: %v", c.model, c.layout, s.k, err)
						}
						for b := lo; b <= hi; b += lo {
							bd, err := bs.Bound(b)
							if err != nil {
								t.Fatalf("%s on %s, batch %d: %v", c.model, c.layout, b, err)
							}
							tp, ceil := e.Throughput(&bd), bs.ThroughputCeiling(b)
							fastest = max(fastest, tp)
							if got < tp || got < ceil {
								t.Errorf("%s on %s, %d micro-batches, %s, %s with %d chunks, batch %d of %d to %d: RangeCeiling %v, below the ceiling %v or the throughput %v",
									c.model, c.layout, mb, r, s.k, s.v, b, lo, hi, got, ceil, tp)
							}
						}
					}
					n++
					if got <= 1.5*fastest {
						near++
					}
				}
			}
		}
	}
	t.Logf("%d ranges, %d within 1.5 times", n, near)
	if n < 300 || near < n/2 {
		t.Errorf("RangeCeiling within 1.5 times the fastest in %d of %d ranges, want at least half of at least 300", near, n)
	}
}
