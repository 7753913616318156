package budget

import (
	"fmt"
	"strings"

	"shardlab/plan"
)

// NoRowsError is why a sweep's table has no row, the one rule every front
// end asks (Result.Err): where a deadline or budget was asked, no priced
// configuration meets them, with the nearest that does not and the
// unpriced configurations that would meet the deadline; without one, no
// configuration is both priced and able to run. The command line exits 1
// with it and the web's JSON download answers 422, each with the result's
// document carrying it (Result.WriteJSON).
type NoRowsError struct {
	// Limited is whether a deadline or budget was asked.
	Limited bool
	// Nearest names the row nearest the limits (Result.Nearest), "" when
	// none was over them.
	Nearest string
	// Timed names the unpriced configurations that meet the deadline
	// (Result.TimedMeeting).
	Timed []string
	// name spells an option as the front end does (Result.Phrase); nil
	// says the library's words.
	name func(plan.Option) string
}

func (e *NoRowsError) Error() string { return "budget: " + e.Phrase(e.name) }

// Phrase is the error without the package's name, the options that give
// a price spelt by name (a flag, a JSON key); name nil says them in the
// library's words.
func (e *NoRowsError) Phrase(name func(plan.Option) string) string {
	if !e.Limited {
		return "no configuration is both priced and able to run the job: see unpriced and dropped"
	}
	msg := "no priced configuration meets the limits"
	if e.Nearest != "" {
		msg += "; nearest: " + e.Nearest
	}
	if len(e.Timed) > 0 {
		give := "a price of your own (a price, or a price table)"
		if name != nil {
			give = name(OptionPrice) + " or " + name(OptionPrices)
		}
		msg += fmt.Sprintf("; without a price, %s meets the deadline: give its price with %s to rank it", strings.Join(e.Timed, "; "), give)
	}
	return msg
}

// The options that give prices, as Phrase names them: a price of the
// user's own (Options.Price) and a price table in place of the built-in
// one (the table ParseOptions takes).
const (
	OptionPrice  plan.Option = "price"
	OptionPrices plan.Option = "prices"
)

// Err is why the table has no row (a *NoRowsError, phrased as the result
// is: Phrase), nil when it has one.
func (res Result) Err() error {
	if len(res.Rows) > 0 {
		return nil
	}
	return &NoRowsError{Limited: res.Deadline > 0 || res.Budget > 0, Nearest: res.Nearest, Timed: res.TimedMeeting(), name: res.name}
}
