package plan

import (
	"math/bits"
	"testing"
)

// TestBisect holds bisect to a scan from the top: for every range and
// every largest batch that fits in it, the same batch, never weighing lo
// (it fits) nor a batch outside the range, and in at most log2 of the
// range's length weighings, rounded up.
func TestBisect(t *testing.T) {
	for lo := 1; lo <= 5; lo++ {
		for hi := lo; hi <= 40; hi++ {
			for top := lo; top <= hi+3; top++ {
				calls := 0
				got := bisect(lo, hi, func(n int) bool {
					calls++
					if n <= lo || n > hi {
						t.Fatalf("bisect(%d, %d) weighed %d, want %d to %d", lo, hi, n, lo+1, hi)
					}
					return n <= top
				})
				want := hi
				for want > lo && want > top {
					want--
				}
				if got != want {
					t.Errorf("bisect(%d, %d) with batches to %d fitting = %d, want %d", lo, hi, top, got, want)
				}
				if most := bits.Len(uint(hi - lo)); calls > most {
					t.Errorf("bisect(%d, %d) weighed %d batches, want at most %d", lo, hi, calls, most)
				}
			}
		}
	}
}
