package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"shardlab/cost"
	"shardlab/unit"
)

// RejectedWords counts rejected layouts by reason in words, most common
// first, ties in the reasons' order: "3,672 layouts do not fit in HBM, 12
// layouts where pipeline does not divide the layers" (JSON's "rejected",
// its reasons already spelt). It is the one wording of rejections: the
// text output, NoPlanError and the web page say it so.
func RejectedWords(rejected []RejectedJSON) string {
	if len(rejected) == 0 {
		return "no layout was tried"
	}
	return strings.Join(rejectedParts(rejected), ", ")
}

// rejectedParts is each reason counted in words, most common first.
func rejectedParts(rejected []RejectedJSON) []string {
	rs := slices.Clone(rejected)
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Count != rs[j].Count {
			return rs[i].Count > rs[j].Count
		}
		return rs[i].Reason < rs[j].Reason
	})
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = countWords(r.Count, r.Reason)
	}
	return parts
}

// rejectedCounts is each reason of a rejection map counted in words, most
// common first, as texts that name options.
func rejectedCounts(rejected map[cost.Reason]int) []string {
	rs := make([]RejectedJSON, 0, len(rejected))
	for r, n := range rejected {
		rs = append(rs, RejectedJSON{Reason: string(r), Count: n})
	}
	return rejectedParts(rs)
}

// plurals are the verbs a rejection reason starts with when the layout is
// its subject ("does not fit in HBM"), and their plurals.
var plurals = map[string]string{"does": "do", "needs": "need", "is": "are", "has": "have"}

// countWords is n layouts and a reason: a reason that starts with a verb
// takes the layouts as its subject ("3,672 layouts do not fit in HBM"); a
// clause with its own subject and verb follows "where" ("12 layouts where
// pipeline does not divide the layers"); a noun phrase follows "with"
// ("4 layouts with tensor parallelism over DCN").
func countWords(n int, reason string) string {
	noun := "layouts"
	if n == 1 {
		noun = "layout"
	}
	verb, rest, _ := strings.Cut(reason, " ")
	if plural, ok := plurals[verb]; ok {
		if n != 1 {
			verb = plural
		}
		return fmt.Sprintf("%s %s %s %s", unit.Count(n), noun, verb, rest)
	}
	for _, v := range []string{" does ", " do ", " is ", " are "} {
		if strings.Contains(reason, v) {
			return fmt.Sprintf("%s %s where %s", unit.Count(n), noun, reason)
		}
	}
	return fmt.Sprintf("%s %s with %s", unit.Count(n), noun, reason)
}

// layouts counts layouts: "1 layout", "3,672 layouts".
func layouts(n int) string {
	if n == 1 {
		return "1 layout"
	}
	return unit.Count(n) + " layouts"
}
