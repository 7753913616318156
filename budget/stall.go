package budget

import (
	"fmt"
	"math"

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

// Stalled reports whether the row's interruptions come as often as a
// restart, one step and its checkpoint take (its warning says so): the
// row stays in the table, ranked by its dollars, and is off the Pareto
// front.
func (row Row) Stalled() bool { return row.stalled }

// neverKeeps is why a stalled row (warning w) is dropped, "" when it
// is kept: where its goodput underflows to 0, or its time or dollars
// pass the largest float, there is no time to train to rank it by
// (capacity.ExpectInterrupted leaves the time 0 at a goodput of 0,
// which the table read as free and instant).
func neverKeeps(row Row, w string) string {
	if row.Goodput > 0 && !math.IsInf(row.TimeToTrainS, 0) && !math.IsInf(row.USD, 0) {
		return ""
	}
	return "it never finishes: " + w
}
