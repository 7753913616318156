package budget

import (
	"slices"
	"testing"
	"time"

	"shardlab/hw"
)

// TestDeadlineTimesUnpriced: with a deadline alone, TPU7x, which the test
// table does not price, is timed in each unpriced mode (review 123 #11):
// on demand and spot at no preemptions take the same time and make one
// line, while spot at 0.5 preemptions a slice-hour takes longer (the
// goodput falls, as TestSpotPreemptionsCostTime has it for priced rows)
// and makes its own. Each time is the one the same configuration gets as a
// priced row once the table has a price for it. With a budget too,
// nothing unpriced is timed.
func TestDeadlineTimesUnpriced(t *testing.T) {
	r := smallRequest(t)
	r.Generations, r.SliceCounts, r.Deadline = []hw.Generation{hw.TPU7x}, []int{1}, 24*time.Hour
	calm, err := Sweep(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(calm.Rows) != 0 || len(calm.Timed) != 1 || !slices.Equal(calm.Timed[0].Modes, []Mode{OnDemand, Spot}) {
		t.Fatalf("no price, 0 preemptions: rows %v, timed %+v; want one timed line of on-demand and spot", names(calm.Rows), calm.Timed)
	}
	r.SpotPreemptionsPerHour = 0.5
	stormy, err := Sweep(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(stormy.Timed) != 2 || stormy.Timed[0].Modes[0] != OnDemand || stormy.Timed[1].Modes[0] != Spot ||
		!(stormy.Timed[1].TimeToTrainS > stormy.Timed[0].TimeToTrainS) || stormy.Timed[0].TimeToTrainS != calm.Timed[0].TimeToTrainS {
		t.Fatalf("0.5 preemptions an hour: timed %+v; want on-demand as before, then spot slower", stormy.Timed)
	}
	priced := r
	priced.Prices = append(slices.Clone(r.Prices), Price{Generation: hw.TPU7x, Mode: OnDemand, Region: "us-central1", USDPerChipHour: 3},
		Price{Generation: hw.TPU7x, Mode: Spot, Region: "us-central1", USDPerChipHour: 1})
	withPrice, err := Sweep(priced)
	if err != nil {
		t.Fatal(err)
	}
	for i, tm := range stormy.Timed {
		row := withPrice.Rows[slices.IndexFunc(withPrice.Rows, func(row Row) bool { return row.Mode == tm.Modes[0] })]
		if tm.TimeToTrainS != row.TimeToTrainS || tm.MeetsDeadline != (row.TimeToTrainS <= r.Deadline.Seconds()) {
			t.Errorf("timed[%d] %+v: want the priced row's %v s", i, tm, row.TimeToTrainS)
		}
	}
	r.Budget = 1e9
	if both, err := Sweep(r); err != nil || len(both.Timed) != 0 {
		t.Errorf("deadline and budget: timed %+v (%v), want none", both.Timed, err)
	}
}
