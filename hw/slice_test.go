package hw

import (
	"slices"
	"testing"
)

func TestSliceSizes(t *testing.T) {
	// v5e (v5litepod) slices are 1 to 256 chips, v6e's the same sizes:
	// each size once, smallest first, as AcceleratorTypes lists them
	got, err := SliceSizes(V5e, V6e, V5e)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{1, 4, 8, 16, 32, 64, 128, 256}
	if !slices.Equal(got, want) {
		t.Errorf("SliceSizes(v5e, v6e) = %v, want %v", got, want)
	}
	if _, err := SliceSizes("v9"); err == nil {
		t.Error("SliceSizes(v9): no error")
	}
}
