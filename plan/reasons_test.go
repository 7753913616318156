package plan

import (
	"strings"
	"testing"

	"shardlab/hw"
)

// TestQuantizationGain: v5p's fp8 peak is its bf16 peak ([gcp-v5p]), so
// fp8 is warned of, naming int8 as the faster format; v5p's int8 and
// TPU7x's fp8 are faster than bf16 and draw no warning.
func TestQuantizationGain(t *testing.T) {
	v5p, err := hw.Lookup("v5p")
	if err != nil {
		t.Fatal(err)
	}
	tpu7x, err := hw.Lookup("tpu7x")
	if err != nil {
		t.Fatal(err)
	}
	if got := quantizationGain(v5p, hw.FP8); !strings.Contains(got, "fp8 buys no speed on v5p") || !strings.Contains(got, "int8 (918 TFLOP/s) would be faster") {
		t.Errorf("v5p fp8: %q", got)
	}
	for _, c := range []struct {
		chip hw.Chip
		f    hw.Format
	}{{v5p, hw.Int8}, {tpu7x, hw.FP8}} {
		if got := quantizationGain(c.chip, c.f); got != "" {
			t.Errorf("%s %s: %q, want no warning", c.chip.Generation, c.f, got)
		}
	}
}
