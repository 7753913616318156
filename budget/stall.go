package budget

import (
	"fmt"

	"shardlab/capacity"
)

// stalled is the warning for a row whose interruptions come as often as
// it can keep a step, "" for the others. The job
// keeps work only when a restart (recovery, startup and the restore,
// e.Restart), a step and the checkpoint that keeps it (e.Save) run
// through without an interruption. When its interruptions (hardware
// failures, and spot preemptions in spot mode: e.FailuresPerHour, λ)
// come on average at least that often, the mean run between two of
// them ends before a step is kept: each restart keeps its first step
// with probability e^(−λ·(R+step+C)) ≤ 1/e, and the expected time to
// keep work grows as e^(λR) (capacity.ExpectedGoodput's renewal
// model). At 100 preemptions an hour and a 20-minute restart that is
// e^33: a goodput of about 1e-59, a time to train past 1e50 days; at the
// threshold itself the goodput is still about a third, a configuration
// that trains. So the row stays, and the warning says why it is slow.
func stalled(row Row, e capacity.Expectation) string {
	if !(e.FailuresPerHour > 0) {
		return ""
	}
	between := 3600 / e.FailuresPerHour // seconds
	need := (e.Restart + row.StepTime + e.Save).Seconds()
	if between > need {
		return ""
	}
	what := "failures"
	if row.Mode == Spot {
		what = "spot preemptions and failures"
	}
	return fmt.Sprintf("%s every %s on average, no longer than the %s a restart, one step and its checkpoint take: most restarts are interrupted before they keep a step (goodput %.2g)",
		what, days(between), days(need), e.Goodput)
}

// neverKeeps is why a stalled row (warning w) is dropped, "" when it
// is kept. One rule, whatever the floats do past it: a stalled row whose
// time to train passes a thousand years or whose cost (Row.Cost: a
// commitment's bill) passes $1T (the bounds no question budget takes
// reaches, spell.go: a hundred times MaxDeadline, MaxDollars) never
// finishes, as does one whose goodput is
// 0 (capacity.ExpectInterrupted leaves its time 0, which the table read
// as free and instant). Goodputs of 8.5e-16 and 3.1e-59 are dropped as
// the one that underflows to 0 is (review 166); a stalled row at the
// threshold, goodput about a third, trains and stays.
func neverKeeps(row Row, w string) string {
	if row.Goodput > 0 && row.TimeToTrainS <= maxSeconds && row.Cost() <= MaxDollars {
		return ""
	}
	return "it never finishes: " + w
}
