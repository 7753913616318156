package budget

import (
	"strings"
	"testing"
)

// TestDollars: amounts keep three significant digits, by hand, including
// where rounding carries into the next unit.
func TestDollars(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{44.544, "$44.54"},
		{999.994, "$999.99"},
		{999.996, "$1.00k"},
		{1840, "$1.84k"},
		{9995, "$10.0k"},
		{44540, "$44.5k"},
		{101840, "$102k"},
		{999400, "$999k"},
		{999700, "$1.00M"},
		{8.214e6, "$8.21M"},
		{16.42e6, "$16.4M"},
		{999.4e6, "$999M"},
		{999.6e6, "$1.00B"},
		{1.234e9, "$1.23B"}, // it printed $1234M
		{4.293e12, "$4293B"},
	} {
		if got := Dollars(c.v); got != c.want {
			t.Errorf("Dollars(%g) = %s, want %s", c.v, got, c.want)
		}
	}
}

// TestDays: a budget's durations keep three significant digits, as README
// says of every duration in text: minutes where seconds would take a
// fourth digit (2653 s printed as "2653 s"), by hand.
func TestDays(t *testing.T) {
	for _, c := range []struct {
		s    float64
		want string
	}{
		{36, "36 s"},
		{641, "641 s"},
		{999.4, "999 s"},
		{999.5, "16.7m"}, // 999.5 s would round to 1000 s
		{2572, "42.9m"},  // the review's 2572 s-2854 s band
		{2653, "44.2m"},  // and its 2653 s row
		{2854, "47.6m"},
		{3600, "1h"},
		{5148, "1.43h"},
		{48 * 3600, "2d"},
		{3599, "1h"},         // 59.98 minutes round to 60: an hour (it printed "60m")
		{47.97 * 3600, "2d"}, // 47.97 hours round to 48: two days (it printed "48h")
		{47.94 * 3600, "47.9h"},
		{14.7 * 86400, "14.7d"},
		{730 * 86400, "730d"},
		{731 * 86400, "2y"}, // from two years in years: --tokens 1e16 printed day counts of six and seven digits
		{1e5 * 86400, "274y"},
		{4.2e7 * 365.25 * 86400, "42000000y"},
	} {
		if got := Days(c.s); got != c.want {
			t.Errorf("Days(%g) = %s, want %s", c.s, got, c.want)
		}
	}
	// no number below 1000 days takes more than three significant digits
	for s := 1.0; s < 1000*86400; s *= 1.013 {
		got := Days(s)
		digits := 0
		for _, r := range strings.TrimLeft(strings.Split(got, " ")[0], "0.") {
			if r >= '0' && r <= '9' {
				digits++
			}
		}
		if digits > 3 {
			t.Errorf("Days(%g) = %s: more than three significant digits", s, got)
		}
	}
}

// TestLegendWithoutFront: a table whose every row is stalled (off the
// Pareto front) says the front has no row, where the legend alone had
// promised starred rows; a table with a front does not.
func TestLegendWithoutFront(t *testing.T) {
	row := Row{AcceleratorType: "v6e-16", Chips: 16, Mode: "spot", StepS: 1, Goodput: 1e-15, TimeToTrainS: 1e40, USD: 1e40}
	for _, c := range []struct {
		pareto bool
		want   bool
	}{{false, true}, {true, false}} {
		r := row
		r.Pareto, r.Stalled = c.pareto, !c.pareto
		var b strings.Builder
		if err := (Result{Model: "m", Tokens: 1e12, Region: "us-east5", Rows: []Row{r}}).WriteText(&b, ""); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "Pareto front of time against dollars (no row:"); got != c.want {
			t.Errorf("a row on the front %v: legend says no row %v, want %v:\n%s", c.pareto, got, c.want, b.String())
		}
	}
}
