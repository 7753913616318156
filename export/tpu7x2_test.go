package export

import (
	"testing"

	"shardlab/maxtext"
	"shardlab/plan"
)

// TestTPU7x2Engines (review 140 #1): the plan of tpu7x-2, one TPU7x chip
// on one tpu7x-standard-1t, exports under the names the engines give it:
//   - xpk @367c838 src/xpk/core/system_characteristics.py 572-582 makes
//     'tpu7x' on machine_type 'tpu7x-standard-1t' for supported_topologies
//     ['1x1x1'], keyed f'{prefix}-{topology}' (234-281): --tpu-type
//     tpu7x-1x1x1, one VM of 1 chip (compute_chips_per_vm, 285-286), the
//     VM hw's catalog has, so no warning;
//   - MaxText @e591f30c src/maxtext/utils/accelerator_to_spec_map.py:37
//     compiles "tpu7x-2" as tpu7x:1x1x1 (compile_topology=tpu7x-2).
func TestTPU7x2Engines(t *testing.T) {
	p := search(t, func(o *plan.Options) { o.Model, o.TPU = "gemma-2b", "tpu7x-2" })
	if got, err := XPKTPUType(p); err != nil || got != "tpu7x-1x1x1" {
		t.Errorf("XPKTPUType(tpu7x-2) = %q, %v, want tpu7x-1x1x1", got, err)
	}
	if got := XPKWarnings(p, XPKOptions{}); len(got) != 0 {
		t.Errorf("XPKWarnings(tpu7x-2) = %q, want none (xpk and the catalog make it one tpu7x-standard-1t)", got)
	}
	if got := CompileTopology(p.Request.Multislice.Slice); got != "tpu7x-2" || !maxtext.IsCompileTopology(got) {
		t.Errorf("CompileTopology(tpu7x-2) = %q (MaxText knows it: %v), want tpu7x-2", got, maxtext.IsCompileTopology(got))
	}
}
