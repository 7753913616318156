package export

import (
	"fmt"
	"strconv"
	"strings"

	"shardlab/hw"
	"shardlab/plan"
)

// compileModule is MaxText's ahead-of-time compile (src/maxtext/trainers/
// pre_train/train_compile.py @e591f30c): it compiles the training step for
// compile_topology on a CPU machine, with no TPU, and fails with the same
// out-of-memory message the TPU would give (docs/guides/
// monitoring_and_debugging/features_and_diagnostics.md @e591f30c).
const compileModule = "python3 -m maxtext.trainers.pre_train.train_compile"

// CompileTopology is MaxText's compile_topology name for the plan's slice:
// its accelerator type, with v5e's v5litepod prefix as MaxText spells it,
// v5e (utils/accelerator_to_spec_map.py @e591f30c: "v5e-256"; v4, v5p and
// TPU7x count TensorCores there, as their accelerator types do). Whether
// MaxText knows the name is package maxtext's to say (its list of names,
// maxtext.IsCompileTopology): it has none for v2 or v3.
func CompileTopology(s hw.Slice) string {
	t := s.AcceleratorType()
	if rest, ok := strings.CutPrefix(t, s.Chip.AcceleratorPrefix+"-"); ok && s.Chip.Generation == hw.V5e {
		return "v5e-" + rest
	}
	return t
}

// CompileCommand is the command that compiles the plan's MaxText config
// ahead of time for its slice type and slice count (train_compile.py
// validate_config requires compile_topology and a positive
// compile_topology_num_slices), so that a plan can be checked on a CPU
// machine before TPUs are rented: the config file WriteYAML wrote, then
// the two keys. The compile prints "Memory analysis: ..." (jax's
// memory_analysis) or XLA's out-of-memory message, which `shardlab check
// --compile-log` reads.
func CompileCommand(p plan.Plan, c MaxTextConfig) string {
	ms := p.Request.Multislice
	return fmt.Sprintf("%s %s run_name=%s compile_topology=%s compile_topology_num_slices=%s",
		compileModule, c.File(), c.RunName, CompileTopology(ms.Slice), strconv.Itoa(ms.Slices))
}
