package plan

import (
	"errors"
	"strconv"
	"testing"

	"shardlab/cost"
	"shardlab/mesh"
)

// TestFixedBatchRefusedAsCostRefuses holds parseFixedBatch to cost's own
// shape rule, a second implementation: with a fixed {mesh} and
// {global_batch}, the request is refused exactly where cost refuses the
// batch for a split (cost.ReasonBatch) at the fewest micro-batches any
// search tries (1, or one a stage with a pipeline), and then names the
// global batch with an input error (review170 S4: it was a search with no
// layout, exit 1).
func TestFixedBatchRefusedAsCostRefuses(t *testing.T) {
	for _, m := range []string{"fsdp=64", "fsdp=16,pipeline=4", "data=2,fsdp=8,tensor=4"} {
		o := DefaultOptions()
		o.Model, o.TPU, o.Mesh = "llama3-8b", "v5p-128", m
		r, err := ParseRequest(o)
		if err != nil {
			t.Fatalf("--mesh %s: %v", m, err)
		}
		lay, err := mesh.New(r.Multislice, r.Axes...)
		if err != nil {
			t.Fatalf("--mesh %s: %v", m, err)
		}
		refusals := 0
		for b := 1; b <= 200; b++ {
			o.GlobalBatch = strconv.Itoa(b)
			_, err := ParseRequest(o)
			var oe *OptionError
			refused := errors.As(err, &oe) && oe.Option == OptionGlobalBatch
			if err != nil && !refused {
				t.Fatalf("--mesh %s --global-batch %d: %v", m, b, err)
			}
			j := r.job()
			j.GlobalBatch, j.MicroBatches = b, max(lay.Size(mesh.Pipeline), 1)
			_, err = cost.MicroBatchSize(j, lay)
			var inf *cost.Infeasible
			costRefuses := errors.As(err, &inf) && inf.Reason == cost.ReasonBatch
			if refused != costRefuses {
				t.Errorf("--mesh %s --global-batch %d: refused %v (%v), cost refuses the split %v (%v)", m, b, refused, oe, costRefuses, err)
			}
			if refused {
				refusals++
			}
		}
		if refusals == 0 || refusals == 200 {
			t.Errorf("--mesh %s: %d of 200 batches refused, want some and not all", m, refusals)
		}
	}
}
