package cost

import (
	"errors"
	"strings"
	"testing"

	"shardlab/hw"
)

// TestQuantizationErrorListsChipFormats: a quantization the chip publishes
// no peak for is refused with every quantization it does publish one for
// (review170 S1: v5e's fp8 refusal named only none, where v5e takes int8).
// The peaks are hw's catalog's: [gcp-v5e] publishes int8 for v5e,
// [gcp-7x] fp8 and no int8 for TPU7x, and v3 only bf16.
func TestQuantizationErrorListsChipFormats(t *testing.T) {
	for _, tt := range []struct {
		chip string
		q    Quantization
		want string
	}{
		{"v5e", QuantFP8, "want none (bf16) or int8"},
		{"tpu7x", QuantInt8, "want none (bf16) or fp8"},
		{"v4", QuantFP8, "want none (bf16) or int8"},
		{"v3", QuantInt8, "want none (bf16):"},
	} {
		chip, err := hw.Lookup(tt.chip)
		if err != nil {
			t.Fatal(err)
		}
		_, err = quantized(tt.q).MatmulPeak(chip)
		if err == nil || !errors.Is(err, ErrJob) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s quantization %s: MatmulPeak error %v, want one with %q", tt.chip, tt.q, err, tt.want)
		}
	}
}

// TestQuantizationErrorAgreesWithPeaks holds the list to the catalog for
// every chip and refused quantization: each quantization it names has a
// peak (MatmulPeak takes it), and each it leaves out has none.
func TestQuantizationErrorAgreesWithPeaks(t *testing.T) {
	all := []Quantization{QuantNone, QuantInt8, QuantFP8}
	for _, chip := range hw.Chips() {
		for _, refused := range all {
			_, err := quantized(refused).MatmulPeak(chip)
			if err == nil {
				continue
			}
			_, want, _ := strings.Cut(err.Error(), ", want ")
			for _, q := range all {
				word := string(q)
				if q == QuantNone {
					word = "none (bf16)"
				}
				_, err := quantized(q).MatmulPeak(chip)
				if listed := strings.Contains(want, word); listed != (err == nil) {
					t.Errorf("%s, %s refused: want %q lists %s = %v, but MatmulPeak's error for it is %v", chip.Name, refused, want, q, listed, err)
				}
			}
		}
	}
}

// quantized is a job of quantization q.
func quantized(q Quantization) Job {
	var j Job
	j.Quantization = q
	return j
}
