package budget

import "testing"

// TestSpellPastTheBounds: the table spells an impossible row (review 152
// #9: goodput 8.5e-16 printed as 0.0000, 1e50 years in 58 digits) within
// its columns, and a band in one unit, each by hand.
func TestSpellPastTheBounds(t *testing.T) {
	const y = 365.25 * 86400
	for _, c := range []struct {
		name, got, want string
	}{
		{"goodput 0.9906", goodput(0.99057), "0.9906"},
		{"goodput 1e-4", goodput(1e-4), "0.0001"},
		{"goodput below 1e-4", goodput(8.5e-16), "8.5e-16"},
		{"goodput 0", goodput(0), "0.0000"},
		{"999 years", days(999 * y), "999y"},
		{"1000 years", days(1000 * y), "1000y"},
		{"past 1000 years", days(1.7e14 * y), ">1000y"},
		{"$1T", dollars(1e12), "$1000B"},
		{"past $1T", dollars(3.8e23), ">$1T"},
		{"chip-hours", chipHours(336614.4), "336614"},
		{"chip-hours past a billion", chipHours(3.82e20), "3.82e+20"},
		// 40 h to 2.31 d: 40/24 = 1.67 d, where each end alone read 40h-2.31d
		{"band across hours and days", daysBand(40*3600, 2.31*86400), "1.67d-2.31d"},
		{"band in one unit", daysBand(26.6*86400, 29.5*86400), "26.6d-29.5d"},
		{"band in seconds", daysBand(600, 641), "600 s-641 s"},
		// 998 s and 1100 s: minutes, 16.6m-18.3m, not 998 s-18.3m
		{"band across seconds and minutes", daysBand(998, 1100), "16.6m-18.3m"},
		{"band reaching past 1000 years", daysBand(950*y, 1100*y), "950y->1000y"},
		{"band past 1000 years", daysBand(2000*y, 2200*y), ">1000y"},
		{"dollars band past $1T", dollarsBand(2e12, 3e12), ">$1T"},
		{"dollars band", dollarsBand(398e3, 442e3), "$398k-$442k"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
}
