package cost

import (
	"testing"

	"shardlab/mesh"
)

// TestParamsCacheIsFresh holds Estimator.setParamsEnds, whose answers
// come from its last entry (lastParams), its map (params: a mixture of
// experts' or multi-token prediction's) or, for a dense model, the
// ParamCount and dense layers it keeps (endsParams), to stagesParams and
// headParams worked out afresh on a shape no estimator made (shapeOf),
// for every layout of the ends: the batch cases' layouts and a dense
// model's with multi-token prediction, pipelined, forwards, then
// backwards so that each is asked for again after others (the map's
// entries, not the last one), with the models changing between them as
// validate clears what the estimator keeps.
func TestParamsCacheIsFresh(t *testing.T) {
	e := NewEstimator()
	cases := batchCases(t)
	mtp := NewJob(lookup(t, "llama3-8b"), 8192, 1)
	mtp.Model.MTPLayers = 1
	cases = append(cases, batchCase{"llama3-8b with an MTP layer on v5p-32 fsdp=4,pipeline=4", mtp, "v5p-32", 1, "fsdp=4,pipeline=4"})
	n := 0
	for pass := range 2 {
		for i := range cases {
			c := cases[i]
			if pass == 1 {
				c = cases[len(cases)-1-i]
			}
			m := layout(t, c.accel, c.slices, c.layout)
			c.j.GlobalBatch = m.Size(mesh.Data) * m.Size(mesh.FSDP) * m.Size(mesh.Expert) * c.j.MicroBatches
			sh, err := shapeOf(c.j, m)
			if err != nil || e.validate(&c.j) != nil {
				continue
			}
			for _, ends := range []endsLayout{endsSplit, endsEvery, endsNone, endsSplit} {
				got := sh
				e.setParamsEnds(&got, &c.j, ends)
				want, head := c.j.stagesParams(&sh, ends), c.j.headParams(&sh, ends)
				if got.params != want || got.head != head {
					t.Errorf("%s, ends %d: params %v, head %g; want %v, %g", c.name, ends, got.params, got.head, want, head)
				}
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("no layout weighed")
	}
	t.Logf("%d look-ups", n)
}
