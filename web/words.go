package web

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"shardlab/cost"
	"shardlab/plan"
)

// noPlanWords is a *plan.NoPlanError in words, from its data: plan's own
// text (what was searched and the fixes), with the layouts it rejected
// counted in words, most common first ("3,672 layouts do not fit in HBM")
// where plan's text counts them as "does not fit in HBM ×3672".
func noPlanWords(e *plan.NoPlanError) func(name func(plan.Option) string) string {
	return func(name func(plan.Option) string) string {
		head := (&plan.NoPlanError{On: e.On}).Phrase(name)
		s := head
		if e.Rejected != nil {
			s += ": " + rejectedWords(e.Rejected, name)
		}
		return s + strings.TrimPrefix((&plan.NoPlanError{On: e.On, Fixes: e.Fixes}).Phrase(name), head)
	}
}

// rejectedWords counts rejected layouts by reason in words, most common
// first, ties in the reasons' order.
func rejectedWords(rejected map[cost.Reason]int, name func(plan.Option) string) string {
	var rs []plan.RejectedJSON
	for r, n := range rejected {
		rs = append(rs, plan.RejectedJSON{Reason: plan.Note{Text: string(r)}.Phrase(name), Count: n})
	}
	return countedWords(rs)
}

// countedWords is rejections, their reasons already spelt, in words, most
// common first, ties in the reasons' order: plan JSON's "rejected".
func countedWords(rejected []plan.RejectedJSON) string {
	if len(rejected) == 0 {
		return "no layout was tried"
	}
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
	return strings.Join(parts, ", ")
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
		return fmt.Sprintf("%s %s %s %s", thousands(n), noun, verb, rest)
	}
	for _, v := range []string{" does ", " do ", " is ", " are "} {
		if strings.Contains(reason, v) {
			return fmt.Sprintf("%s %s where %s", thousands(n), noun, reason)
		}
	}
	return fmt.Sprintf("%s %s with %s", thousands(n), noun, reason)
}

// thousands writes n with commas between groups of three digits: 3,672.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
