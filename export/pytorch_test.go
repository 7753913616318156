package export

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"shardlab/plan"
)

func pytorchPlan(t *testing.T, modelName, tpu string, slices int, layout, batch string) plan.Plan {
	t.Helper()
	o := plan.DefaultOptions()
	o.Model, o.TPU, o.Slices, o.Mesh, o.GlobalBatch = modelName, tpu, slices, layout, batch
	r, err := plan.ParseRequest(o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Search(r)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPyTorchMeshCountsTheDevices(t *testing.T) {
	// The mesh's shape multiplies to the PJRT devices of the multislice,
	// its ICI shape to a slice's and its DCN shape to the slices; 'fsdp' is
	// an axis, as FSDPv2 requires.
	for _, tt := range []struct {
		model, tpu string
		slices     int
		layout     string
		batch      string
	}{
		{"llama3-8b", "v5p-64", 1, "fsdp=32", ""},
		{"llama3-8b", "v4-32", 2, "data=2(dcn),fsdp=16", ""},
		{"llama3-8b", "v5litepod-16", 1, "data=2,fsdp=8", ""},
		{"llama3-8b", "v6e-16", 2, "fsdp=2(dcn),fsdp=8,tensor=2", ""},
		{"llama3-70b", "tpu7x-128", 2, "data=2(dcn),fsdp=16,tensor=4", "256"},
		{"llama2-7b", "v3-32", 1, "fsdp=16", "64"},
	} {
		p := pytorchPlan(t, tt.model, tt.tpu, tt.slices, tt.layout, tt.batch)
		m, err := PyTorch(p)
		if err != nil {
			t.Fatalf("%s on %s: %v", tt.layout, tt.tpu, err)
		}
		ms := p.Request.Multislice
		per := ms.Slice.Chip.JAXDevicesPerChip
		prod := func(xs []int) int {
			n := 1
			for _, x := range xs {
				n *= x
			}
			return n
		}
		if got, want := prod(m.Shape()), ms.Chips()*per; got != want || m.Devices != want {
			t.Errorf("%s on %d x %s: mesh of %d devices (Devices %d), want %d", tt.layout, tt.slices, tt.tpu, got, m.Devices, want)
		}
		if got, want := prod(m.ICI), ms.Slice.Chips()*per; got != want {
			t.Errorf("%s on %s: ici_mesh_shape %v multiplies to %d, want %d", tt.layout, tt.tpu, m.ICI, got, want)
		}
		if got := prod(m.DCN); got != ms.Slices {
			t.Errorf("%s: dcn_mesh_shape %v multiplies to %d, want %d slices", tt.layout, m.DCN, got, ms.Slices)
		}
		if strings.Join(m.Names, ",") != "data,fsdp,model" {
			t.Errorf("axis names %v", m.Names)
		}
	}
}

func TestPyTorchRefusesPipelineAndContext(t *testing.T) {
	for _, layout := range []string{"fsdp=16,pipeline=2", "fsdp=16,context=2"} {
		p := pytorchPlan(t, "llama3-8b", "v5p-64", 1, layout, "")
		_, err := PyTorch(p)
		axis := strings.SplitN(strings.Split(layout, ",")[1], "=", 2)[0]
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), axis+" 2") {
			t.Errorf("%s: %v, want a refusal naming %s", layout, err, axis)
		}
	}
}

func TestPyTorchPythonCallsOnlyTorchXLAsAPI(t *testing.T) {
	data, err := os.ReadFile("testdata/torch-xla-api.txt")
	if err != nil {
		t.Fatal(err)
	}
	api := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			api[l] = true
		}
	}
	call := regexp.MustCompile(`\b(xs|xr)\.([A-Za-z_]+)`)
	for _, layout := range []string{"fsdp=32", "data=32", "fsdp=8,tensor=4"} {
		m, err := PyTorch(pytorchPlan(t, "llama3-8b", "v5p-64", 1, layout, ""))
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := m.WritePython(&b); err != nil {
			t.Fatal(err)
		}
		py := b.String()
		for _, c := range call.FindAllString(py, -1) {
			if !api[c] {
				t.Errorf("%s: the export calls %s, which is not in torch_xla's API list", layout, c)
			}
		}
		if !api["SpmdFullyShardedDataParallel"] || !strings.Contains(py, "import SpmdFullyShardedDataParallel as FSDPv2") {
			t.Errorf("%s: FSDPv2's import is not the API's class", layout)
		}
		if strings.Contains(py, "FSDPv2(") != (layout == "fsdp=32") {
			t.Errorf("%s: FSDPv2 used %v, want only for FSDP without tensor parallelism:\n%s", layout, strings.Contains(py, "FSDPv2("), py)
		}
	}
}
