package plan

import "testing"

// TestLargest holds largest to a scan from the top: for every limit and
// every largest batch that fits below it, the same batch, and where the
// limit fits, one weighing.
func TestLargest(t *testing.T) {
	for hi := 1; hi <= 40; hi++ {
		for top := 1; top <= hi+3; top++ {
			calls := 0
			got := largest(hi, func(n int) bool {
				calls++
				if n < 1 || n > hi {
					t.Fatalf("largest(%d) weighed %d, want 1 to %d", hi, n, hi)
				}
				return n <= top
			})
			want := hi
			for want > 1 && want > top {
				want--
			}
			if got != want {
				t.Errorf("largest(%d) with batches to %d fitting = %d, want %d", hi, top, got, want)
			}
			if hi > 1 && top >= hi && calls != 1 {
				t.Errorf("largest(%d) with the limit fitting weighed %d batches, want 1", hi, calls)
			}
		}
	}
}
