package budget

import (
	"fmt"
	"slices"
	"strings"

	"shardlab/hw"
	"shardlab/plan"
)

// Timed is a configuration of a generation the price table has no price
// for in the region, timed because a deadline alone was asked: its time
// to train needs no price, so whether it meets the deadline is known,
// while its dollars are not. It is listed as unpriced, never as free: it
// has no dollars at all, and no place in the rows ranked by them.
type Timed struct {
	Generation      hw.Generation `json:"generation"`
	AcceleratorType string        `json:"accelerator_type"`
	Slices          int           `json:"slices"`
	Chips           int           `json:"chips"`
	// Modes are the unpriced modes that take this time (on demand and
	// committed take the same; spot with its preemptions may not).
	Modes         []Mode  `json:"modes"`
	Layout        string  `json:"layout"`
	StepS         float64 `json:"step_time_s"`
	Goodput       float64 `json:"goodput_fraction"`
	TimeToTrainS  float64 `json:"time_to_train_s"`
	MeetsDeadline bool    `json:"meets_deadline"`
	// Stalled is Row.Stalled: a mode's interruptions outrun its restarts.
	Stalled  bool     `json:"stalled"`
	Warnings []string `json:"warnings"`
}

// timesUnpriced is whether the sweep times the generations it has no
// price for: where a deadline is the only limit, a time answers it.
func (r Request) timesUnpriced() bool { return r.Deadline > 0 && r.Budget == 0 }

// timed is plan p on ms in the unpriced modes, those of one time merged;
// a mode whose terms drop the row (flex-start's run limit) is dropped in
// res with its reason, as a priced row is.
func (r Request) timed(p *plan.Plan, ms hw.Multislice, modes []Mode, fl flexTerms, res *Result) []Timed {
	var out []Timed
	for _, m := range modes {
		row, e := r.row(p, ms, m, Price{})
		warnings := []string{}
		stall := false
		if w := stalled(row, e); w != "" {
			if why := neverKeeps(row, w); why != "" {
				res.Dropped = append(res.Dropped, Dropped{What: row.name() + " (unpriced)", Why: why})
				continue
			}
			warnings, stall = append(warnings, w), true
		}
		if m == Flex {
			why, ws := fl.check(row)
			if why != "" {
				res.Dropped = append(res.Dropped, Dropped{What: row.name() + " (unpriced)", Why: why})
				continue
			}
			warnings = append(warnings, ws...)
		}
		if i := slices.IndexFunc(out, func(t Timed) bool { return t.TimeToTrainS == row.TimeToTrainS }); i >= 0 {
			out[i].Modes = append(out[i].Modes, m)
			out[i].Warnings = append(out[i].Warnings, warnings...)
			out[i].Stalled = out[i].Stalled || stall
			continue
		}
		out = append(out, Timed{Generation: row.Generation, AcceleratorType: row.AcceleratorType, Slices: row.Slices, Chips: row.Chips,
			Modes: []Mode{m}, Layout: row.Layout, StepS: row.StepS, Goodput: row.Goodput, TimeToTrainS: row.TimeToTrainS,
			MeetsDeadline: row.TimeToTrainS <= r.Deadline.Seconds(), Stalled: stall, Warnings: warnings})
	}
	return out
}

// Name is the configuration and its modes, as a row's name says them.
func (t Timed) Name() string {
	modes := make([]string, len(t.Modes))
	for i, m := range t.Modes {
		modes[i] = string(m)
	}
	return fmt.Sprintf("%d × %s %s", t.Slices, t.AcceleratorType, strings.Join(modes, ", "))
}

// Line is what the text and the page say of t against the deadline.
func (t Timed) Line(deadlineS float64) string {
	verdict := "meets"
	if !t.MeetsDeadline {
		verdict = "over"
	}
	return fmt.Sprintf("%s: %s, %s the %s deadline; dollars unknown (no price)", t.Name(), days(t.TimeToTrainS), verdict, days(deadlineS))
}

// TimedMeeting names the unpriced configurations that meet the deadline.
func (res Result) TimedMeeting() []string {
	var out []string
	for _, t := range res.Timed {
		if t.MeetsDeadline {
			out = append(out, t.Name())
		}
	}
	return out
}
