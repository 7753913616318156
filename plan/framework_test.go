package plan

import (
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
