package budget

import (
	"fmt"
	"math"
	"time"
)

// termBill fills in a commitment mode's row (term > 0, the
// commitment's length) the whole terms its job takes and what they
// bill, and warns where the job, or its band's high end, runs past one
// term. A committed use discount bills its resources monthly "for the
// duration of the term you selected, whether or not you use" them, a
// term of 1 or 3 years (Compute Engine, "Committed use discounts",
// https://cloud.google.com/compute/docs/instances/signing-up-committed-use-discounts),
// and a term that ends is renewed for another of the same length, or
// lapses (https://cloud.google.com/compute/docs/instances/renew-commitments-automatically):
// a job longer than its term takes whole further terms, so the bill is
// never below the job's own chip-hours (Row.USD). The further terms are
// priced at the row's committed price, though a renewal is repriced
// when it starts (the same page): the warning says so.
func termBill(row *Row, term time.Duration) {
	if term <= 0 {
		return
	}
	row.CommitmentTerms = wholeTerms(row.TimeToTrainS, term)
	row.CommitmentUSD = row.CommitmentTerms * termUSD(*row, term)
	length := termLength(term)
	if row.CommitmentTerms > 1 {
		row.Warnings = append(row.Warnings, fmt.Sprintf("%s: takes %s, past one %s term: the commitment bills %g whole terms, %s, where the job's chip-hours are %s; "+
			"the terms after the first are priced here at today's committed price, where a renewal is repriced when it starts",
			row.name(), days(row.TimeToTrainS), length, row.CommitmentTerms, dollars(row.CommitmentUSD), dollars(row.USD)))
	}
	if b := row.Band; b != nil {
		if n := wholeTerms(b.TimeHigh, term); n > row.CommitmentTerms {
			row.Warnings = append(row.Warnings, fmt.Sprintf("%s: the band's high end, %s, runs into a %s %s term: it would bill %g whole terms, %s",
				row.name(), days(b.TimeHigh), ordinal(n), length, n, dollars(n*termUSD(*row, term))))
		}
	}
}

// wholeTerms is how many whole terms a job of s seconds takes: s over
// the term, rounded up, and at least one (a commitment bills its first
// term whatever runs on it). A float, as Row.Steps is: a stalled row's
// time, before neverKeeps drops it, may pass what an int holds.
func wholeTerms(s float64, term time.Duration) float64 {
	return math.Max(1, math.Ceil(s/term.Seconds()))
}

// termUSD is what one term of the row's chips bills at its price.
func termUSD(row Row, term time.Duration) float64 {
	return float64(row.Chips) * term.Hours() * row.Price.USDPerChipHour
}

// termLength spells a commitment's term as the modes name it: "1-year".
func termLength(term time.Duration) string {
	return fmt.Sprintf("%g-year", math.Round(term.Hours()/(365*24)))
}

// ordinal spells n as "2nd", "3rd", "11th", "21st".
func ordinal(n float64) string {
	suffix := "th"
	switch m := math.Mod(n, 100); {
	case m >= 11 && m <= 13:
	case math.Mod(n, 10) == 1:
		suffix = "st"
	case math.Mod(n, 10) == 2:
		suffix = "nd"
	case math.Mod(n, 10) == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%g%s", n, suffix)
}

// Cost is what the row costs its user, the dollars the budget, the
// ranking and the Pareto front weigh: a commitment's bill
// (CommitmentUSD), every whole term it takes, billed "whether or not
// you use" it (the Compute Engine page termBill cites), else the job's
// chip-hour dollars (USD), which other modes bill. The bill is never
// below USD (termBill); the larger of the two keeps a row without a
// bill (0 outside the commitment modes) at its dollars.
func (row Row) Cost() float64 {
	return max(row.USD, row.CommitmentUSD)
}

// costs spells what the row costs (Cost), as a reason over a budget
// says it: "costs $1.77M" outside the commitment modes, "bills $8.21M
// for a 3-year term" or "bills $8.48M for 2 whole 1-year terms" in them.
func (row Row) costs() string {
	term := row.Mode.term()
	if term <= 0 || row.CommitmentUSD < row.USD {
		return "costs " + dollars(row.Cost())
	}
	if row.CommitmentTerms > 1 {
		return fmt.Sprintf("bills %s for %g whole %s terms", dollars(row.Cost()), row.CommitmentTerms, termLength(term))
	}
	return fmt.Sprintf("bills %s for a %s term", dollars(row.Cost()), termLength(term))
}
