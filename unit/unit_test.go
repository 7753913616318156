package unit

import "testing"

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
