package plan

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"shardlab/hw"
	"shardlab/unit"
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

// TestHostUncheckedWarning (review 119 #3): a plan that offloads on a
// slice whose VM's RAM the catalog does not publish (v4's
// ct4p-hightpu-4t: cloud.google.com/tpu/docs/v4 gives no RAM) carries a
// warning, in its text and its JSON's warnings, naming what is offloaded
// and the VM; before, only the text's memory line said "not checked".
// Offload by the remat policy and by the optimizer offload both warn; the
// same job on v6e-4, whose ct6e-standard-4t publishes 720 GB, and a v4
// plan that offloads nothing do not.
func TestHostUncheckedWarning(t *testing.T) {
	for _, c := range []struct {
		tpu, remat string
		optimizer  bool
		want       bool
	}{
		{"v4-8", "minimal_offloaded", false, true},
		{"v4-8", "full", true, true},
		{"v6e-4", "minimal_offloaded", false, false},
		{"v4-8", "full", false, false},
	} {
		o := DefaultOptions()
		o.Model, o.TPU, o.Remat, o.Precision, o.OptimizerOffload = "llama3-8b", c.tpu, c.remat, "bf16", c.optimizer
		r, err := ParseRequest(o)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Search(r)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		m := p.Best.Estimate.Memory
		if c.want != (m.Host > 0 && m.HostUsable == 0) {
			t.Fatalf("%+v: the case does not hold: %v offloaded of %v a chip", c, m.Host, m.HostUsable)
		}
		want := fmt.Sprintf("host RAM not checked: %v a chip is offloaded to host memory, and the RAM of the %s VM is not published",
			m.Host, r.Multislice.Slice.Host().MachineType)
		var text, js strings.Builder
		if err := p.WriteText(&text, nil); err != nil {
			t.Fatal(err)
		}
		if err := p.WriteJSON(&js, nil); err != nil {
			t.Fatal(err)
		}
		var doc struct{ Warnings []string }
		if err := json.Unmarshal([]byte(js.String()), &doc); err != nil {
			t.Fatal(err)
		}
		inJSON := slices.Contains(doc.Warnings, want)
		if got := strings.Contains(warns(p), "host RAM not checked"); got != c.want || inJSON != c.want || strings.Contains(text.String(), want) != c.want {
			t.Errorf("%+v: warned %v (JSON %v), want %v: %q\nwarnings:\n%s", c, got, inJSON, c.want, want, warns(p))
		}
	}
}

// TestV6e1VMNotPublished (review 128 #9, review 119 #6): v6e-1 is one
// ct6e-standard-1t (cloud.google.com/tpu/docs/v6e slice shapes; xpk
// @367c838 system_characteristics.py, export/xpk-tpu-types.txt), whose
// vCPUs and RAM no stored source gives. Its plan names that VM, leaves
// its offloaded bytes unchecked against RAM with a warning, and its input
// check counts the one chip's vCPUs and says the VM's count is not
// published instead of comparing with a 4t's 180 (it said "0.2 per chip
// ... the VM has 180" and checked RAM against a quarter of the 4t's 720
// GB). The same job on v6e-4 is still one ct6e-standard-4t of 180 vCPUs
// and 180 GB a chip ([gcp-7x]). tpu7x-2 (review 140 #1), one
// tpu7x-standard-1t, is held to the same rule beside tpu7x-8.
func TestV6e1VMNotPublished(t *testing.T) {
	for _, c := range []struct {
		tpu, vm, input string
		hostRAM        unit.Bytes
	}{
		{"v6e-1", "ct6e-standard-1t", "the ct6e-standard-1t VM's vCPU count is not published", 0},
		{"v6e-4", "ct6e-standard-4t", "the VM has 180", 180 * unit.GB},
		// tpu7x-2 is one tpu7x-standard-1t (xpk @367c838
		// system_characteristics.py: machine_type='tpu7x-standard-1t',
		// topology 1x1x1), whose vCPUs and RAM no stored source gives;
		// tpu7x-8 one tpu7x-standard-4t of 224 vCPUs and 960 GB ([gcp-7x])
		{"tpu7x-2", "tpu7x-standard-1t", "the tpu7x-standard-1t VM's vCPU count is not published", 0},
		{"tpu7x-8", "tpu7x-standard-4t", "the VM has 224", 240 * unit.GB},
	} {
		o := DefaultOptions()
		o.Model, o.TPU, o.Precision, o.OptimizerOffload, o.ExampleCost = "gemma-2b", c.tpu, "bf16", true, 10*time.Millisecond
		r, err := ParseRequest(o)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Search(r)
		if err != nil {
			t.Fatalf("%s: %v", c.tpu, err)
		}
		// both slices are one VM (the doc's table), so the VM's chips are the slice's
		m, chips := p.Best.Estimate.Memory, r.Multislice.Slice.Chips()
		if m.Host == 0 || m.HostUsable != c.hostRAM || m.HostUnchecked() != (c.hostRAM == 0) {
			t.Errorf("%s: %v offloaded of %v host RAM a chip (unchecked %v), want some of %v", c.tpu, m.Host, m.HostUsable, m.HostUnchecked(), c.hostRAM)
		}
		if got := strings.Contains(warns(p), "host RAM not checked"); got != (c.hostRAM == 0) {
			t.Errorf("%s: warned host RAM not checked %v, want %v:\n%s", c.tpu, got, c.hostRAM == 0, warns(p))
		}
		vm := fmt.Sprintf("single host: %s is one %s VM with %s", c.tpu, c.vm, unit.Plural(chips, "chip"))
		if rs := reasons(p); !strings.Contains(rs, vm) || !strings.Contains(rs, c.input) || strings.Contains(warns(p), "input-bound") {
			t.Errorf("%s: want %q and an input check with %q, not input-bound:\n%s\n%s", c.tpu, vm, c.input, rs, warns(p))
		}
		// the vCPUs a chip needs are the VM's over its chips
		got := regexp.MustCompile(`fed with (\d+) vCPUs? per host \(([0-9.]+) per chip\)`).FindStringSubmatch(reasons(p))
		if got == nil {
			t.Fatalf("%s: no input check in the reasons:\n%s", c.tpu, reasons(p))
		}
		n, _ := strconv.Atoi(got[1])
		if want := fmt.Sprintf("%.1f", float64(n)/float64(chips)); got[2] != want {
			t.Errorf("%s: %s vCPUs per host are %s per chip, want %s (%d chips a VM)", c.tpu, got[1], got[2], want, chips)
		}
	}
}

// TestPastPositions: llama3-8b's released checkpoint has 8192 positions
// (its config.json's max_position_embeddings, model.Spec.MaxPositions):
// a plan at 16384 warns, naming the option; one at 8192 does not, nor
// does a spec that states no positions (a pasted spec without the key).
func TestPastPositions(t *testing.T) {
	o := DefaultOptions()
	o.Model, o.TPU, o.Top = "llama3-8b", "v5p-32", 1
	for _, c := range []struct {
		seq  int
		warn bool
	}{{16384, true}, {8192, false}} {
		o.Seq = c.seq
		r, err := ParseRequest(o)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := pastPositions(r)
		if ok != c.warn {
			t.Fatalf("seq %d: warned %v, want %v", c.seq, ok, c.warn)
		}
		if ok && (n.Option != OptionSeq || !strings.Contains(n.Phrase(nil), "sequence 16384 is past the 8192 positions llama3-8b's released checkpoint has")) {
			t.Errorf("seq %d: %+v %q", c.seq, n, n.Phrase(nil))
		}
		r.Model.MaxPositions = 0
		if _, ok := pastPositions(r); ok {
			t.Errorf("seq %d: a spec without positions warned", c.seq)
		}
	}
}
