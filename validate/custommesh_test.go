package validate

import (
	"errors"
	"strings"
	"testing"

	"shardlab/mesh"
)

// customRow is the row whose config sets custom_mesh: hybrid_ring_64x4
// (benchmarks/maxtext_trillium_model_configs.py mixtral_8x22b_dropped
// @449b4fe, unchanged at e591f30).
const customRow = "v6e-mixtral-8x22b-dropped-256"

func rowByID(t *testing.T, id string) Run {
	t.Helper()
	for _, r := range runs(t) {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no row %s", id)
	return Run{}
}

// TestCustomMeshRowIsPlaced checks that the row stating a custom mesh is
// costed on it, and the others on create_device_mesh's placement: its
// expert axis gets a closed ring of 4 (twice the one-way bandwidth of
// the open line of 4 the standard placement gives it, package mesh's
// TestHybridRing64x4Links) and its fsdp axis the squares.
func TestCustomMeshRowIsPlaced(t *testing.T) {
	for _, r := range runs(t) {
		_, m, err := r.Setup()
		if err != nil {
			t.Fatal(err)
		}
		want := mesh.Standard
		if r.ID == customRow {
			want = mesh.HybridRing64x4
		}
		if m.Custom() != want || (r.Layout.CustomMesh != "") != (want != mesh.Standard) {
			t.Errorf("%s: custom_mesh %q costed on %q, want %q", r.ID, r.Layout.CustomMesh, m.Custom(), want)
		}
	}
	r := rowByID(t, customRow)
	_, m, err := r.Setup()
	if err != nil {
		t.Fatal(err)
	}
	std, err := mesh.New(m.Multislice, m.Degrees()...)
	if err != nil {
		t.Fatal(err)
	}
	if got, line := m.Link(mesh.Expert), std.Link(mesh.Expert); !got.Wrap || line.Wrap || got.Bandwidth != 2*line.Bandwidth {
		t.Errorf("%s: expert link %+v, want a closed ring of twice the open line's %+v", r.ID, got, line)
	}
	if got := m.Link(mesh.FSDP); got.Size != 64 || got.Hops != 16 {
		t.Errorf("%s: fsdp link %+v, want 64 chips at stride 2 (16 hops)", r.ID, got)
	}
}

// TestCustomMeshRefused checks that a custom_mesh MaxText would not
// apply as package mesh models it is refused, naming the row, the field,
// the value and what is accepted.
func TestCustomMeshRefused(t *testing.T) {
	in := strings.Replace(string(runsYAML), "custom_mesh: hybrid_ring_64x4\n", "custom_mesh: hybrid_ring_32x8\n", 1)
	if in == string(runsYAML) {
		t.Fatal("runs.yaml states no custom_mesh to spoil")
	}
	_, err := Parse([]byte(in))
	if !errors.Is(err, ErrInvalid) || !errors.Is(err, mesh.ErrInvalid) {
		t.Errorf("Parse with custom_mesh hybrid_ring_32x8: %v, want the table's and mesh's ErrInvalid", err)
	}
	for _, want := range []string{customRow, `custom_mesh = "hybrid_ring_32x8"`, "hybrid_ring_64x4"} {
		if !strings.Contains(errString(err), want) {
			t.Errorf("Parse with custom_mesh hybrid_ring_32x8: %v, want %q in it", err, want)
		}
	}
	base := rowByID(t, customRow)
	for _, tt := range []struct {
		name string
		edit func(*Run)
		want string
	}{
		{"expert 64, fsdp 4", func(r *Run) { r.Layout.ICIFSDP, r.Layout.ICIExpert = 4, 64 }, "axis of 64 (expert) comes before its axis of 4 (fsdp)"},
		{"fsdp 256", func(r *Run) { r.Layout.ICIFSDP, r.Layout.ICIExpert = 256, 1 }, "one axis of 64 and one of 4"},
		{"v5p", func(r *Run) { r.AcceleratorType, r.Generation = "v5p-512", "v5p" }, "a 16x16 slice"},
		{"tpu7x", func(r *Run) { r.AcceleratorType, r.Generation = "tpu7x-512", "tpu7x" }, "2 JAX devices"},
	} {
		r := base
		tt.edit(&r)
		_, _, err := r.Setup()
		if !errors.Is(err, ErrInvalid) && !errors.Is(err, mesh.ErrInvalid) || !strings.Contains(errString(err), "custom_mesh") ||
			!strings.Contains(errString(err), tt.want) {
			t.Errorf("%s: Setup error %v, want one naming custom_mesh and %q", tt.name, err, tt.want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestCustomMeshShown: the report says which rows were placed on a custom
// mesh, in its text (the layout column) and its JSON (custom_mesh), so a
// reader can tell that plan, which places create_device_mesh's way, will
// not reproduce that row's step (review 119 #5).
func TestCustomMeshShown(t *testing.T) {
	rep, err := Evaluate([]Run{rowByID(t, customRow)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var text, js strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "fsdp=64,expert=4 on hybrid_ring_64x4") || !strings.Contains(js.String(), `"custom_mesh": "hybrid_ring_64x4"`) {
		t.Errorf("%s: text and JSON do not name its custom mesh:\n%s\n%.600s", customRow, text.String(), js.String())
	}
}
