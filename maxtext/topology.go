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

// topologies is compileTopologies as a set.
var topologies = func() map[string]bool {
	set := map[string]bool{}
	for _, l := range strings.Split(compileTopologies, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			set[l] = true
		}
	}
	return set
}()

// IsCompileTopology reports whether MaxText's ahead-of-time compile
// (train_compile) knows the compile_topology name: one of its
// accelerator_to_spec_map.py keys ("v5p-128", "v5e-256", "tpu7x-8"); its
// get_system_characteristics refuses any other as an invalid compile
// topology.
func IsCompileTopology(name string) bool { return topologies[name] }
