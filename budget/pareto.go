package budget

import (
	"cmp"
	"slices"
)

// Pareto returns the indices of the rows on the front of time against
// cost (Row.Cost: what a commitment bills for its whole terms, used or
// not, else the job's dollars), among the rows that keep their steps (not
// Stalled): those no other such row matches or beats on both with one
// strictly better. Equal
// rows are all on it. A stalled row is never on it: its time and dollars
// grow as e^(λR) with the interruption rate λ (stalled), so the cheapest
// spot row can be one that in practice never finishes (review 152 #9).
func Pareto(rows []Row) []int {
	var idx []int
	for i, row := range rows {
		if !row.Stalled {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(rows[a].TimeToTrainS, rows[b].TimeToTrainS), cmp.Compare(rows[a].Cost(), rows[b].Cost()))
	})
	var front []int
	var last *Row
	for _, i := range idx {
		row := &rows[i]
		switch {
		case last == nil || row.Cost() < last.Cost():
			front, last = append(front, i), row
		case row.Cost() == last.Cost() && row.TimeToTrainS == last.TimeToTrainS:
			front = append(front, i)
		}
	}
	slices.Sort(front)
	return front
}
