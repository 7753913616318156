package maxtext

import (
	_ "embed"
	"strings"
)

// compileTopologies is the keys of MaxText's
// UserFacingNameToSystemCharacteristics (src/maxtext/utils/
// accelerator_to_spec_map.py @e591f30c), one a line: the names its
// ahead-of-time compile takes as compile_topology. It has no v2 or v3
// slice, and v4 up to v4-4096.
//
//go:embed compile-topologies.txt
var compileTopologies string

// topologyNames is compileTopologies' names in the file's order, and topologies
// the same as a set.
var topologyNames, topologies = func() ([]string, map[string]bool) {
	var list []string
	set := map[string]bool{}
	for _, l := range strings.Split(compileTopologies, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") && !set[l] {
			list = append(list, l)
			set[l] = true
		}
	}
	return list, set
}()

// CompileTopologies is every compile_topology name MaxText's ahead-of-time
// compile knows (those IsCompileTopology accepts), in the order of its
// accelerator_to_spec_map.py, including some shardlab does not plan
// ("tpu7x-2", GPU systems). The slice is the caller's.
func CompileTopologies() []string { return append([]string(nil), topologyNames...) }

// IsCompileTopology reports whether MaxText's ahead-of-time compile
// (train_compile) knows the compile_topology name: one of its
// accelerator_to_spec_map.py keys ("v5p-128", "v5e-256", "tpu7x-8"); its
// get_system_characteristics refuses any other as an invalid compile
// topology.
func IsCompileTopology(name string) bool { return topologies[name] }
