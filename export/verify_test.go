package export

import (
	"strconv"
	"strings"
	"testing"

	"shardlab/hw"
	"shardlab/maxtext"
	"shardlab/plan"
)

// TestCompileTopologyIsMaxTexts holds CompileTopology to MaxText's own list
// of compile_topology names (maxtext.CompileTopologies, from
// accelerator_to_spec_map.py @e591f30c): every name of a generation
// shardlab plans, read as an accelerator type (v5e's as v5litepod), comes
// back as itself, and every slice shardlab accepts for those names maps to
// a name in the list.
func TestCompileTopologyIsMaxTexts(t *testing.T) {
	var checked int
	for _, l := range maxtext.CompileTopologies() {
		accel, ok := strings.CutPrefix(l, "v5e-")
		if ok {
			accel = "v5litepod-" + accel
		} else {
			accel = l
		}
		s, err := hw.ParseAcceleratorType(accel)
		if err != nil {
			continue // a type shardlab does not plan (a3, tpu7x-2, ...)
		}
		checked++
		if got := CompileTopology(s); got != l {
			t.Errorf("CompileTopology(%s) = %q, want MaxText's %q", accel, got, l)
		}
	}
	if checked < 100 {
		t.Errorf("only %d of MaxText's names read as accelerator types; the list or the parser changed", checked)
	}
	for _, accel := range []string{"v4-8", "v5litepod-256", "v5p-128", "v6e-8", "tpu7x-8", "tpu7x-128"} {
		s, err := hw.ParseAcceleratorType(accel)
		if err != nil {
			t.Fatal(err)
		}
		if got := CompileTopology(s); !maxtext.IsCompileTopology(got) {
			t.Errorf("CompileTopology(%s) = %q, not a name MaxText accepts", accel, got)
		}
	}
}

func TestCompileCommand(t *testing.T) {
	p := search(t, func(o *plan.Options) { o.Model, o.TPU, o.Slices = "llama3-70b", "tpu7x-128", 2 })
	c, err := MaxText(p)
	if err != nil {
		t.Fatal(err)
	}
	want := "python3 -m maxtext.trainers.pre_train.train_compile shardlab-llama3-70b.yml run_name=shardlab-llama3-70b compile_topology=tpu7x-128 compile_topology_num_slices=2"
	if got := CompileCommand(p, c); got != want {
		t.Errorf("CompileCommand = %q, want %q", got, want)
	}
}

// TestVerifyLayoutNamesAccumulation: a plan that accumulates gradients
// (64 sequences of Llama 3 8B on v6e-8, 8 micro-batches) gives its
// steps in the verification's layout, since with its mesh given plan
// accumulates only when told to; a plan in one pass and one whose
// micro-batches are a pipeline's do not.
func TestVerifyLayoutNamesAccumulation(t *testing.T) {
	steps := func(p plan.Plan) string {
		for _, ov := range Verify(p, "").Layout {
			if ov.Option == plan.OptionGradientAccumulationSteps {
				return ov.Value
			}
		}
		return ""
	}
	p := search(t, func(o *plan.Options) { o.Model, o.TPU, o.GlobalBatch = "llama3-8b", "v6e-8", "64" })
	if g, got := p.Best.Estimate.Job.MicroBatches, steps(p); g < 2 || got != strconv.Itoa(g) {
		t.Errorf("accumulating over %d micro-batches: %s %q, want %d", g, plan.OptionGradientAccumulationSteps, got, g)
	}
	for _, edit := range []func(*plan.Options){
		func(o *plan.Options) { o.Model, o.TPU, o.GlobalBatch = "llama3-8b", "v6e-8", "8" },
		func(o *plan.Options) {
			o.Model, o.TPU, o.Mesh, o.GlobalBatch, o.Schedule = "llama3-8b", "v5p-8", "pipeline=2,fsdp=2", "16", "gpipe"
		},
	} {
		p := search(t, edit)
		if e, got := p.Best.Estimate, steps(p); got != "" {
			t.Errorf("%s with %d micro-batches: %s %q, want none", e.Mesh, e.Job.MicroBatches, plan.OptionGradientAccumulationSteps, got)
		}
	}
}
