package budget

import (
	"strings"
	"testing"
	"time"

	"shardlab/capacity"
	"shardlab/hw"
)

// TestStalledByHand: a row is dropped when the mean time between its
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
		want    string // "" when kept
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

// TestSpotStormDropsRows: the review's case, spot at 100 preemptions an
// hour a slice (a documented rate), kept spot rows with a goodput of
// 8.7e-59 and times past 1e57 days. They are dropped with the reason,
// by hand from capacity's own restart, save and rate, and on-demand is
// kept.
func TestSpotStormDropsRows(t *testing.T) {
	r := smallRequest(t)
	r.Generations, r.SpotPreemptionsPerHour = []hw.Generation{hw.V6e}, 100
	res, err := Sweep(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 {
		t.Errorf("rows %v, want the two on-demand rows", names(res.Rows))
	}
	for _, row := range res.Rows {
		if row.Mode != OnDemand {
			t.Errorf("%s kept: goodput %g, time %g s", row.name(), row.Goodput, row.TimeToTrainS)
		}
	}
	for _, slices := range []int{1, 2} {
		what := []string{"", "1 × v6e-16 spot", "2 × v6e-16 spot"}[slices]
		// by hand: 100 preemptions an hour a slice, plus the chips'
		// failures; one piece of restart + step + save
		rate := 100*float64(slices) + capacity.DefaultChipFailuresPerHour*float64(16*slices)
		between := Days(3600 / rate)
		found := false
		for _, d := range res.Dropped {
			if d.What == what {
				found = true
				if !strings.HasPrefix(d.Why, "spot preemptions and failures every "+between+" on average") || !strings.Contains(d.Why, "most restarts are interrupted before they keep a step") {
					t.Errorf("%s dropped: %q, want an interruption every %s named", what, d.Why, between)
				}
			}
		}
		if !found {
			t.Errorf("%s not dropped: %v", what, res.Dropped)
		}
	}
}
