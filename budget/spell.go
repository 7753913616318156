package budget

import (
	"fmt"
	"strconv"
)

// The bounds past which the budget's text, page and reasons spell a
// time or an amount as past them rather than in full: a row whose
// interruptions outrun its restarts (stalled) takes e^(λR) times as
// long, 1e50 days and more, which printed as a 58-digit number (review
// 152 #9). A thousand years is a hundred times the longest deadline
// (MaxDeadline) and a trillion dollars the largest budget (MaxDollars);
// nothing past them answers a question budget takes. JSON keeps the
// floats.
const (
	maxYears = 1000
	year     = 365.25 * 86400 // a Julian year, as Days counts them
	// maxSeconds is maxYears in seconds, the time past which a row is
	// spelt ">1000y" and, stalled, dropped (Row.Stalled).
	maxSeconds = maxYears * year
)

// days is Days within maxYears, and ">1000y" past it.
func days(s float64) string {
	if s > maxSeconds {
		return fmt.Sprintf(">%dy", maxYears)
	}
	return Days(s)
}

// dollars is Dollars within MaxDollars, and ">$1T" past it.
func dollars(v float64) string {
	if v > MaxDollars {
		return fmt.Sprintf(">$%gT", MaxDollars/1e12)
	}
	return Dollars(v)
}

// goodput spells a goodput fraction to four decimals, and below 1e-4,
// where that would read 0.0000, with two significant digits (8.5e-16).
func goodput(g float64) string {
	if g > 0 && g < 1e-4 {
		return strconv.FormatFloat(g, 'g', 2, 64)
	}
	return strconv.FormatFloat(g, 'f', 4, 64)
}

// chipHours spells chip-hours whole, and from a billion with three
// significant digits (9.82e+19), not twenty.
func chipHours(h float64) string {
	if h >= 1e9 {
		return strconv.FormatFloat(h, 'g', 3, 64)
	}
	return strconv.FormatFloat(h, 'f', 0, 64)
}

// daysBand spells a band of times lo to hi in one unit, the one Days
// spells hi in: 1.93d-2.31d, where each end in its own read 46.2h-2.31d.
// Seconds, and an end past maxYears, are spelt as days spells them; a
// band wholly past it is ">1000y".
func daysBand(lo, hi float64) string {
	if lo > maxSeconds {
		return days(lo)
	}
	per, suffix := dayUnit(hi)
	if per == 0 || hi > maxSeconds {
		return days(lo) + "-" + days(hi)
	}
	return sig3(lo/per) + suffix + "-" + sig3(hi/per) + suffix
}

// dollarsBand spells a band of amounts lo to hi as dollars does; a band
// wholly past MaxDollars is ">$1T".
func dollarsBand(lo, hi float64) string {
	if lo > MaxDollars {
		return dollars(lo)
	}
	return dollars(lo) + "-" + dollars(hi)
}
