package plan

import (
	"strings"
	"testing"

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
