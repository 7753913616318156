package budget

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"shardlab/capacity"
	"shardlab/hw"
)

// TestStalledByHand: a row is warned when the mean time between its
// interruptions is no longer than a restart, one step and its checkpoint.
// By hand: a restart of 20 m 30 s (10 m recovery, 10 m startup, a 30 s
// restore), a 1 s step and a 30 s save need 1261 s in one piece; 100
// interruptions an hour come every 36 s (dropped), 2 an hour every 1800 s
// (kept), and 3600/1261 an hour exactly every 1261 s (dropped: the mean
// run ends as the step is kept, so a restart keeps it with probability
// e^-1).
func TestStalledByHand(t *testing.T) {
	e := capacity.Expectation{Restart: 20*time.Minute + 30*time.Second, Save: 30 * time.Second, Goodput: 0.5}
	row := Row{StepTime: time.Second, Mode: Spot}
	for _, tt := range []struct {
		perHour float64
		want    string // "" when not warned
	}{
		{100, "spot preemptions and failures every 36 s on average, no longer than the " + Days(1261) + " a restart, one step and its checkpoint take"},
		{2, ""},
		{3600.0 / 1261, "every " + Days(1261) + " on average"},
		{3600.0 / 1262, ""},
	} {
		e.FailuresPerHour = tt.perHour
		got := stalled(row, e)
		if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("%g interruptions an hour: stalled = %q, want %q", tt.perHour, got, tt.want)
		}
	}
	// not spot: the interruptions are failures alone
	row.Mode = OnDemand
	e.FailuresPerHour = 100
	if got := stalled(row, e); !strings.HasPrefix(got, "failures every 36 s") {
		t.Errorf("on-demand: stalled = %q, want failures named alone", got)
	}
}

// TestSpotStormWarnsRows: spot at 6 preemptions an hour a slice, one
// every 10 minutes against a 20-minute restart, stalls the spot rows
// (goodputs about 0.1 and 0.01, 1 and 2 slices) but they finish within the
// bounds budget answers (neverKeeps). They are kept (a slower row trains,
// and a deadline or budget drops such rows as any other), each with the
// warning worked out by hand from capacity's own rate, marked Stalled,
// after the on-demand rows they cost more than, and off the Pareto front.
func TestSpotStormWarnsRows(t *testing.T) {
	r := smallRequest(t)
	r.Generations, r.SpotPreemptionsPerHour = []hw.Generation{hw.V6e}, 6
	res, err := Sweep(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 4 {
		t.Fatalf("rows %v, want two on-demand and two spot rows", names(res.Rows))
	}
	for i, row := range res.Rows {
		warned := false
		for _, w := range row.Warnings {
			warned = warned || strings.Contains(w, "most restarts are interrupted before they keep a step")
		}
		if (row.Mode == Spot) != warned || warned != row.Stalled {
			t.Errorf("%s: warnings %q, want the stall warning on spot rows only, and Stalled with it (%v)", row.name(), row.Warnings, row.Stalled)
		}
		if row.Mode == Spot && (i < 2 || row.Pareto) {
			t.Errorf("%s ranked %d (Pareto %v), want after the on-demand rows and off the front", row.name(), i+1, row.Pareto)
		}
		if b, err := json.Marshal(row); err != nil || !strings.Contains(string(b), fmt.Sprintf(`"stalled":%v`, row.Mode == Spot)) {
			t.Errorf("%s: JSON %s (%v), want \"stalled\": %v", row.name(), b, err, row.Mode == Spot)
		}
		if row.Mode != Spot {
			continue
		}
		// by hand: 6 preemptions an hour a slice, plus the chips'
		// failures
		rate := 6*float64(row.Slices) + capacity.DefaultChipFailuresPerHour*float64(16*row.Slices)
		want := "spot preemptions and failures every " + Days(3600/rate) + " on average"
		if !strings.Contains(strings.Join(row.Warnings, "|"), want) {
			t.Errorf("%s: warnings %q, want %q", row.name(), row.Warnings, want)
		}
	}
	if len(res.Dropped) != 0 {
		t.Errorf("dropped %v, want none", res.Dropped)
	}
}

// TestNeverFinishingRowDropped: at 100 preemptions an hour on each of 64
// slices a spot restart is interrupted every 0.56 s against the 20
// minutes it takes; e^(−6400/h × 20 min) underflows, so capacity's
// goodput is 0 and its time to train left 0, which the table printed as
// an instant, free row on the Pareto front. On 1 and 2 slices the goodput
// is 1e-59 and 1e-16 or so, times past a thousand years, which were kept
// (review 166): one rule drops all three, saying why; the on-demand rows
// stay.
func TestNeverFinishingRowDropped(t *testing.T) {
	r := smallRequest(t)
	r.Generations, r.SliceCounts, r.SpotPreemptionsPerHour = []hw.Generation{hw.V6e}, []int{1, 2, 64}, 100
	res, err := Sweep(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range res.Rows {
		if row.Mode != OnDemand || row.Stalled {
			t.Errorf("rows %v, want the on-demand rows alone, none stalled", names(res.Rows))
		}
	}
	want := []string{"1 × v6e-16 spot", "2 × v6e-16 spot", "64 × v6e-16 spot"}
	if len(res.Dropped) != len(want) {
		t.Fatalf("dropped %+v, want %v, never finishing", res.Dropped, want)
	}
	for i, d := range res.Dropped {
		if !strings.HasSuffix(d.What, strings.TrimPrefix(want[i], "1 × ")) || !strings.HasPrefix(d.Why, "it never finishes: spot preemptions and failures every ") {
			t.Errorf("dropped %+v, want %s, never finishing", d, want[i])
		}
	}
}
