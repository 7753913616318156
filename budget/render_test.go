package budget

import "testing"

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
		{1.234e9, "$1234M"},
	} {
		if got := Dollars(c.v); got != c.want {
			t.Errorf("Dollars(%g) = %s, want %s", c.v, got, c.want)
		}
	}
}
