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

// TestRoomierLayout: a plan at the edge of HBM told the user to verify it
// but not what a safer choice costs. Llama 3 405B on v5p-1024 is chosen
// 4.2 GiB short of its usable HBM, inside the dense band; the warning
// names the fastest layout the plan shows that leaves more than the band,
// which must really do so and fit, and its MFU beside the chosen one's.
// A plan whose shown layouts are all at the edge gets no such name.
func TestRoomierLayout(t *testing.T) {
	p, err := Search(parsed(t, func(o *Options) { o.Model, o.TPU = "llama3-405b", "v5p-1024" }))
	if err != nil {
		t.Fatal(err)
	}
	band := p.Best.Estimate.Job.MemoryError()
	got := roomier(p, band)
	if !strings.HasPrefix(got, "; the fastest layout shown that leaves more is ") {
		t.Fatalf("405B on v5p-1024: %q, want a roomier layout named", got)
	}
	var found bool
	for _, c := range append(append([]Candidate{}, p.Top...), p.Alternatives...) {
		e := c.Estimate
		if strings.Contains(got, " is "+e.Mesh.String()+", remat "+string(e.Job.Remat)+",") {
			found = true
			if total, usable := e.Memory.Total(), e.Memory.Usable; !e.Memory.Fits() || band.AtEdge(total, usable) {
				t.Errorf("named %s at %v of %v, at the edge", e.Mesh.String(), total, usable)
			}
			break
		}
	}
	if !found {
		t.Errorf("%q names no layout the plan shows", got)
	}
	q, err := Search(parsed(t, func(o *Options) { o.Model, o.TPU = "llama3-8b", "v5litepod-16" }))
	if err != nil {
		t.Fatal(err)
	}
	if got := roomier(q, q.Best.Estimate.Job.MemoryError()); got != "" {
		t.Errorf("8B on v5litepod-16, every shown layout at the edge: %q, want none", got)
	}
}
