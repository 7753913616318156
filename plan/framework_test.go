package plan

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"shardlab/cost"
	"shardlab/mesh"
	"shardlab/schedule"
)

func TestFrameworkNotesNameWhatMaxTextCannotRun(t *testing.T) {
	for _, tt := range []struct {
		sched schedule.Kind
		want  string
	}{
		{schedule.OneFOneB, "MaxText cannot run the 1f1b schedule"},
		{schedule.GPipe, "MaxText runs this plan's gpipe pipeline as costed"},
		{schedule.Circular, "MaxText runs this plan's circular pipeline as costed"},
	} {
		r := request(t, "llama3-8b", "v5p-64", 1, 256)
		r.Axes = []mesh.Degree{{Axis: mesh.FSDP, ICI: 8, DCN: 1}, {Axis: mesh.Pipeline, ICI: 4, DCN: 1}}
		r.Schedule = tt.sched
		if tt.sched == schedule.Circular {
			r.Chunks = 2
		}
		p, err := Search(r)
		if err != nil {
			t.Fatal(err)
		}
		got := reasons(p)
		if !strings.Contains(got, "framework: MaxText (JAX)") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: reasons lack %q:\n%s", tt.sched, tt.want, got)
		}
		if tt.sched == schedule.OneFOneB && !strings.Contains(got, "its closest, gpipe") {
			t.Errorf("1f1b: the closest MaxText schedule is not costed:\n%s", got)
		}
	}
	// No pipeline: only the framework line.
	p, err := Search(request(t, "llama3-8b", "v5p-64", 1, 256))
	if err != nil {
		t.Fatal(err)
	}
	if got := reasons(p); !strings.Contains(got, "framework: MaxText") || strings.Contains(got, "MaxText cannot run") {
		t.Errorf("no pipeline: reasons\n%s", got)
	}
}

func TestFrameworkMaxTextSearchesOnlyItsSchedules(t *testing.T) {
	// The slow-DCN case pipelines across slices; limited to MaxText, the
	// search keeps to GPipe and circular, and names no schedule MaxText
	// cannot run.
	r := slowDCNRequest(t)
	r.Framework = FrameworkMaxText
	r.Top = 10
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	pipelined := 0
	for _, c := range append(p.Top, p.Alternatives...) {
		e := c.Estimate
		if e.Mesh.Size(mesh.Pipeline) <= 1 {
			continue
		}
		pipelined++
		if k := e.Job.Schedule; k != schedule.GPipe && k != schedule.Circular {
			t.Errorf("%s: schedule %s, which MaxText does not run", e.Mesh, k)
		}
	}
	if pipelined == 0 {
		t.Fatal("no pipelined layout to check")
	}
	if strings.Contains(reasons(p), "MaxText cannot run") {
		t.Errorf("reasons:\n%s", reasons(p))
	}
}

func TestFrameworkOption(t *testing.T) {
	o := DefaultOptions()
	o.Framework = "megatron"
	if _, err := ParseRequest(o); err == nil || !strings.Contains(err.Error(), `"megatron", want any, maxtext, pytorch`) {
		t.Errorf("framework megatron: %v", err)
	}
	o = DefaultOptions()
	o.Framework, o.Schedule = "maxtext", "1f1b"
	if _, err := ParseRequest(o); err == nil || !strings.Contains(err.Error(), "gpipe") {
		t.Errorf("maxtext with 1f1b: %v", err)
	}
}

// TestNamedNoneNote: MaxText has no remat policy that keeps every
// activation; a plan without remat says what MaxText runs in its place
// (custom with every named tensor on device, cost.NamedNone), costed on
// the same layout: less HBM (the unnamed elementwise tensors are
// recomputed, not held) and a step no shorter (they run again).
func TestNamedNoneNote(t *testing.T) {
	p, err := Search(parsed(t, func(o *Options) {
		o.Model, o.TPU, o.Mesh, o.GlobalBatch, o.Remat = "llama3-8b", "tpu7x-8", "fsdp=8", "8", "none"
	}))
	if err != nil {
		t.Fatal(err)
	}
	e := p.Best.Estimate
	j := e.Job
	j.Remat, j.Custom = cost.RematCustom, cost.NamedNone()
	alt, err := cost.EstimateStep(j, e.Mesh)
	if err != nil {
		t.Fatal(err)
	}
	if !(alt.Memory.Total() < e.Memory.Total() && alt.Time.Step >= e.Time.Step) {
		t.Errorf("named none: %v, step %v; none: %v, step %v", alt.Memory.Total(), alt.Time.Step, e.Memory.Total(), e.Time.Step)
	}
	want := fmt.Sprintf("needs %v of HBM against %v", alt.Memory.Total(), e.Memory.Total())
	var found bool
	for _, n := range p.Reasons {
		found = found || strings.Contains(n.Phrase(nil), "MaxText has no remat policy that keeps every activation") && strings.Contains(n.Phrase(nil), want)
	}
	if !found {
		t.Errorf("no reason says what MaxText runs for remat none (%q): %v", want, p.Reasons)
	}
}

// TestFrameworkPyTorchRequest: under the pytorch framework a request the
// PyTorch/XLA export would refuse is refused when it is read, naming the
// option (a mixture of experts too, the model option, and flash attention
// for a model with sliding windows, the attention option, which
// dot_product passes); MaxText's precision is costed as PyTorch's automatic mixed
// precision (fp32 activations, cost.AMPPrecision) and bf16 stays bf16;
// the search frees tensor only for a Llama-style model; and the fixes of
// a job that does not fit offer no offload, which the export refuses.
func TestFrameworkPyTorchRequest(t *testing.T) {
	for _, c := range []struct {
		edit   func(*Options)
		option Option
	}{
		{func(o *Options) { o.Remat = "minimal" }, OptionRemat},
		{func(o *Options) { o.Precision = "zero" }, OptionPrecision},
		{func(o *Options) { o.Quantization = "int8" }, OptionQuantization},
		{func(o *Options) { o.OptimizerOffload = true }, OptionOptimizerOffload},
		{func(o *Options) { o.ParameterOffload = true }, OptionParameterOffload},
		{func(o *Options) { o.VocabTiles = 2 }, OptionVocabTiles},
		{func(o *Options) { o.Mesh = "fsdp=4,context=2" }, OptionMesh},
		{func(o *Options) { o.Model = "mixtral-8x7b" }, OptionModel},  // a mixture of experts: PyTorchModelLimit
		{func(o *Options) { o.Model = "gemma2-9b" }, OptionAttention}, // flash over sliding windows: PyTorchAttentionLimit
		{func(o *Options) { o.Mesh, o.GlobalBatch, o.GradientAccumulationSteps = "fsdp=8", "16", 2 }, OptionGradientAccumulationSteps},
	} {
		o := DefaultOptions()
		o.Model, o.TPU, o.Framework = "llama3-8b", "v5p-16", string(FrameworkPyTorch)
		c.edit(&o)
		var oe *OptionError
		_, err := ParseRequest(o)
		if !errors.As(err, &oe) || oe.Option != c.option || !strings.Contains(err.Error(), "with framework pytorch") {
			t.Errorf("%s: %v, want a refusal of %s with framework pytorch", c.option, err, c.option)
			continue
		}
		// a front end that implies the framework (export pytorch) words
		// the same refusal as its own: the option, the value, what is
		// accepted, and no framework option (review 159)
		_, want, _ := strings.Cut(err.Error(), " with framework pytorch, want ")
		if oe.PyTorch == nil {
			t.Errorf("%s: %v carries no PyTorch limit", c.option, err)
		} else if got := oe.PyTorch.Phrase("export pytorch", nil); !strings.HasPrefix(got, c.option.String()+" ("+oe.PyTorch.Field+" "+oe.Value+"): export pytorch takes ") ||
			!strings.HasSuffix(got, "takes "+want) || strings.Contains(got, "framework pytorch") {
			t.Errorf("%s: Phrase(export pytorch) = %q, want %q (value %s) then \"export pytorch takes %s\"", c.option, got, c.option.String(), oe.Value, want)
		}
	}
	for precision, want := range map[string]cost.Precision{"maxtext": cost.AMPPrecision(), "bf16": cost.MaxTextBF16Precision()} {
		o := DefaultOptions()
		o.Model, o.TPU, o.Framework, o.Precision = "llama3-8b", "v5p-16", string(FrameworkPyTorch), precision
		r, err := ParseRequest(o)
		if err != nil || r.Precision != want {
			t.Errorf("precision %s with framework pytorch: %+v, %v; want %+v", precision, r.Precision, err, want)
		}
	}
	o := DefaultOptions()
	o.Model, o.TPU, o.Framework, o.Attention = "gemma2-9b", "v5p-16", string(FrameworkPyTorch), "dot_product"
	if _, err := ParseRequest(o); err != nil {
		t.Errorf("gemma2-9b with dot_product attention and framework pytorch: %v, want it read", err)
	}
	for name, free := range map[string]bool{"llama3-8b": true, "mixtral-8x7b": false, "gpt3-175b": false} {
		r := request(t, name, "v5p-16", 1, 64)
		r.Framework = FrameworkPyTorch
		if got := searchAxes(&r); got[mesh.Tensor] != free || got[mesh.Pipeline] || got[mesh.Context] || got[mesh.Expert] {
			t.Errorf("%s under pytorch: axes %v, want tensor %v and no pipeline, context or expert", name, got, free)
		}
	}
	r := request(t, "llama3-8b", "v5e-8", 1, 64)
	r.Framework, r.Precision = FrameworkPyTorch, cost.AMPPrecision()
	for _, f := range openFixes(r) {
		if strings.Contains(string(f.what), "offload") {
			t.Errorf("fix %q under pytorch, whose export offloads nothing", f.what)
		}
	}
}
