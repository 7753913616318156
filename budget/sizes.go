package budget

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"shardlab/hw"
)

// trainingSlice is chip c's slice of chips chips, if it has one to train
// on: a listed slice of whole VMs (hw.Slice.WholeHosts), the rule by which
// plan.SearchScope plans a generation alone, so that budget and plan agree:
// v6e-1 is one whole ct6e-standard-1t ([gcp-v6e] in hw's catalog) and
// trains, as the v6e doc's "training for up to 256 v6e chips" allows.
func trainingSlice(c hw.Chip, chips int) (hw.Slice, bool) {
	s, err := hw.ParseAcceleratorType(c.AcceleratorType(chips))
	return s, err == nil && chips <= c.MaxSliceChips && s.WholeHosts()
}

// unknownSize is a size of sizes none of gens has a training slice of,
// and the sizes each has (at most 12 a generation named); ok is false
// when every size is some generation's.
func unknownSize(gens []hw.Generation, sizes []int) (bad int, want string, ok bool) {
	var chips []hw.Chip
	for _, g := range gens {
		if c, err := hw.Lookup(string(g)); err == nil {
			chips = append(chips, c)
		}
	}
	for _, n := range sizes {
		if !slices.ContainsFunc(chips, func(c hw.Chip) bool { _, ok := trainingSlice(c, n); return ok }) {
			bad = n
			break
		}
	}
	if bad == 0 {
		return 0, "", true
	}
	var each []string
	for _, c := range chips {
		all, _ := hw.SliceSizes(c.Generation)
		var has []string
		for _, n := range all {
			if _, ok := trainingSlice(c, n); ok {
				has = append(has, strconv.Itoa(n))
			}
		}
		if len(has) > 12 {
			has = append(has[:10:10], "…", has[len(has)-1])
		}
		each = append(each, fmt.Sprintf("%s %s", c.Generation, strings.Join(has, ", ")))
	}
	return bad, fmt.Sprintf("slice sizes in chips the generations searched train on (%d is none's): %s", bad, strings.Join(each, "; ")), false
}
