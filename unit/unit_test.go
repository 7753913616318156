package unit

import (
	"fmt"
	"testing"
)

func TestString(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{Bytes(512).String(), "512 B"},
		{(3 * GiB / 2).String(), "1.50 GiB"},
		{(192 * GiB).String(), "192 GiB"},
		{FLOPsPerSecond(459e12).String(), "459 TFLOP/s"},
		{FLOPsPerSecond(2.307e15).String(), "2.31 PFLOP/s"},
		{BytesPerSecond(25e9).String(), "25.0 GB/s"},
		{FLOPs(6e21).String(), "6.00 ZFLOP"},
		// InGiB keeps GiB where String would change prefix: 2^29 B is
		// half a GiB, 1.5 TiB is 1536 GiB; 33017561088 B is v4's XLA
		// capacity, 30.75 GiB (MaxText PR #4117's "of 30.75G").
		{(GiB / 2).InGiB(), "0.50 GiB"},
		{(3 * TiB / 2).InGiB(), "1536.00 GiB"},
		{Bytes(33017561088).InGiB(), "30.75 GiB"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
}

func TestBitsPerSecond(t *testing.T) {
	// Cloud TPU v5p doc: 200 Gbps DCN per host = 25 GB/s.
	if got := BitsPerSecond(200e9); got != 25e9 {
		t.Errorf("BitsPerSecond(200e9) = %v, want 25e9", float64(got))
	}
	if got := BytesPerSecond(25e9).Bits(); got != 200e9 {
		t.Errorf("Bits() = %v, want 200e9", got)
	}
}

func TestSeconds(t *testing.T) {
	tests := []struct {
		s    Seconds
		want string
	}{
		{0, "0 s"},
		{14.754280581, "14.8 s"},
		{0.017363051, "17.4 ms"},
		{0.000524288, "524 µs"},
		{0.9996, "1 s"},     // rounds up into seconds, not "1e+03 ms"
		{0.0009996, "1 ms"}, // likewise
		{3600, "3600 s"},    // no exponent above 1000 s
		{5.389e-06, "5.39 µs"},
		{5.71e-10, "0.571 ns"},
		{-0.002, "-2 ms"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("Seconds(%g).String() = %q, want %q", float64(tt.s), got, tt.want)
		}
	}
}

func TestPlural(t *testing.T) {
	tests := []struct {
		n    int
		word string
		want string
	}{
		{1, "host", "1 host"},
		{16, "host", "16 hosts"},
		{0, "chip", "0 chips"},
		{1, "micro-batch", "1 micro-batch"},
		{2, "micro-batch", "2 micro-batches"},
		{4, "NUMA node", "4 NUMA nodes"},
	}
	for _, tt := range tests {
		if got := Plural(tt.n, tt.word); got != tt.want {
			t.Errorf("Plural(%d, %q) = %q, want %q", tt.n, tt.word, got, tt.want)
		}
	}
}

func ExampleSeconds() {
	fmt.Println(Seconds(14.754), Seconds(0.0174), Seconds(0))
	// Output: 14.8 s 17.4 ms 0 s
}

func ExamplePlural() {
	fmt.Println(Plural(1, "host"), "and", Plural(16, "host"))
	// Output: 1 host and 16 hosts
}
