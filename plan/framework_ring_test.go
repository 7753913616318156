package plan

import (
	"errors"
	"strings"
	"testing"

	"shardlab/maxtext"
	"shardlab/mesh"
)

// ringOK reports whether MaxText's ring runs c's MaxText mesh (Plan.Devices)
// as costed, and that mesh's context size in JAX devices.
func ringOK(t *testing.T, r Request, c Candidate) (bool, int) {
	t.Helper()
	d, err := Plan{Request: r, Best: c}.Devices()
	if err != nil {
		return false, 0
	}
	size := map[mesh.Axis]int{mesh.Context: 1, mesh.Tensor: 1}
	for _, g := range d.Degrees {
		size[g.Axis] = g.ICI * g.DCN
	}
	return r.ring(size[mesh.Context], size[mesh.Tensor]).Check() == nil, size[mesh.Context]
}

// TestMaxTextFrameworkRunsTheRing: review 128 #2. gemma2-27b on tpu7x-8
// and llama4-maverick on tpu7x-256 were planned with each chip's second
// JAX device on context (an odd batch per chip), which MaxText's ring
// refuses for their sliding-window and chunked layers (configs/types.py
// line 4041 @e591f30c). Under the MaxText framework every layout the plan
// shows runs as costed: no context in JAX devices, the in-chip factor on
// fsdp, an even batch per chip; and the reasons say why. Without the
// framework the plan is still the faster one MaxText refuses, as the
// review found (so the cases exercise the rule).
func TestMaxTextFrameworkRunsTheRing(t *testing.T) {
	for _, c := range []struct{ model, tpu string }{{"gemma2-27b", "tpu7x-8"}, {"llama4-maverick", "tpu7x-256"}} {
		any := searchOptions(t, func(o *Options) { o.Model, o.TPU, o.Top = c.model, c.tpu, 3 })
		if ok, ctx := ringOK(t, any.Request, any.Best); ok || ctx != 2 {
			t.Errorf("%s on %s, any framework: ring runs %v, context %d; want the review's plan, context 2 refused", c.model, c.tpu, ok, ctx)
		}
		p := searchOptions(t, func(o *Options) { o.Model, o.TPU, o.Top, o.Framework = c.model, c.tpu, 3, "maxtext" })
		for _, cand := range append(append([]Candidate{p.Best}, p.Top...), p.Alternatives...) {
			e := cand.Estimate
			if ok, ctx := ringOK(t, p.Request, cand); !ok || ctx != 1 || e.MicroBatchSize%2 != 0 {
				t.Errorf("%s on %s, maxtext: %s at %d sequences per chip: ring runs %v, context %d in JAX devices; want no context, an even batch per chip",
					c.model, c.tpu, e.Mesh, e.MicroBatchSize, ok, ctx)
			}
		}
		if d, err := p.Devices(); err != nil || d.InChip != mesh.FSDP {
			t.Errorf("%s on %s, maxtext: devices %v (%v), want the in-chip factor on fsdp", c.model, c.tpu, d, err)
		}
		if got := reasons(p); !strings.Contains(got, "its ring refuses decoder_block") {
			t.Errorf("%s on %s, maxtext: the reasons do not say why there is no context:\n%s", c.model, c.tpu, got)
		}
		if p.Rejected[ReasonMaxTextRing] == 0 {
			t.Errorf("%s on %s, maxtext: no layout rejected for the ring: %v", c.model, c.tpu, p.Rejected)
		}
	}
}

// TestMaxTextRing: which layouts MaxText's ring refuses whatever the
// batch, and which by the batch, by the chip's devices: on v5p (a chip
// is a device) the chip mesh is MaxText's; on TPU7x the in-chip factor
// goes on fsdp for an even batch per chip, else on context.
func TestMaxTextRing(t *testing.T) {
	for _, c := range []struct {
		name, model, tpu, framework string
		axes                        []mesh.Degree
		refused, depends            bool
		odd, even                   bool // maxTextRefuses at 3 and 4 sequences per chip
	}{
		// llama3-8b's 8 K/V heads do not split over tensor 16
		{"v5p tensor 16 context 2", "llama3-8b", "v5p-64", "maxtext", axes(mesh.Tensor, 16, mesh.Context, 2), true, false, true, true},
		{"v5p fsdp 16 context 2", "llama3-8b", "v5p-64", "maxtext", axes(mesh.FSDP, 16, mesh.Context, 2), false, false, false, false},
		{"v5p any framework", "llama3-8b", "v5p-64", "", axes(mesh.Tensor, 16, mesh.Context, 2), false, false, false, false},
		// on TPU7x, tensor 16 with no context: an odd batch per chip puts
		// the second device on context, 2, which the ring refuses
		{"tpu7x tensor 16", "llama3-8b", "tpu7x-32", "maxtext", axes(mesh.Tensor, 16, mesh.Context, 1), false, true, true, false},
		{"tpu7x fsdp 16", "llama3-8b", "tpu7x-32", "maxtext", axes(mesh.FSDP, 16, mesh.Context, 1), false, false, false, false},
		// gemma2: the ring runs no context, so the batch is even per chip
		// (maxTextStep) and only a context axis is refused
		{"tpu7x gemma2 fsdp 16", "gemma2-27b", "tpu7x-32", "maxtext", axes(mesh.FSDP, 16, mesh.Context, 1), false, false, true, false},
		{"tpu7x gemma2 context 2", "gemma2-27b", "tpu7x-32", "maxtext", axes(mesh.FSDP, 8, mesh.Context, 2), true, false, true, true},
	} {
		r := parsed(t, func(o *Options) { o.Model, o.TPU, o.Framework = c.model, c.tpu, c.framework })
		if err := r.defaults(); err != nil {
			t.Fatal(err)
		}
		r.microStep = r.maxTextStep()
		m, err := mesh.New(r.Multislice, c.axes...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		refused, depends := r.maxTextRing(&m)
		if refused != c.refused || depends != c.depends {
			t.Errorf("%s: maxTextRing = %v, %v; want %v, %v", c.name, refused, depends, c.refused, c.depends)
		}
		j := r.job()
		j.MicroBatches = 1
		shards := m.Size(mesh.Data) * m.Size(mesh.FSDP)
		for _, b := range []struct {
			perChip int
			want    bool
		}{{3, c.odd}, {4, c.even}} {
			if got := r.maxTextRefuses(&j, &m, b.perChip*shards); got != b.want {
				t.Errorf("%s: maxTextRefuses at %d sequences per chip = %v, want %v", c.name, b.perChip, got, b.want)
			}
		}
	}
}

// axes is a chip mesh of two ICI axes.
func axes(a mesh.Axis, n int, b mesh.Axis, k int) []mesh.Degree {
	return []mesh.Degree{{Axis: a, ICI: n, DCN: 1}, {Axis: b, ICI: k, DCN: 1}}
}

// TestMaxTextStep: the batch is even per chip under the MaxText framework
// only where the ring runs no context the in-chip factor would make.
func TestMaxTextStep(t *testing.T) {
	for _, c := range []struct {
		model, tpu, framework string
		want                  int
	}{
		{"gemma2-27b", "tpu7x-8", "maxtext", 2},
		{"llama4-maverick", "tpu7x-256", "maxtext", 2},
		{"gemma2-27b", "tpu7x-8", "", 0},
		{"gemma2-27b", "v5p-8", "maxtext", 0}, // a chip is one device
		{"llama3-8b", "tpu7x-8", "maxtext", 0},
	} {
		r := parsed(t, func(o *Options) { o.Model, o.TPU, o.Framework = c.model, c.tpu, c.framework })
		if err := r.defaults(); err != nil {
			t.Fatal(err)
		}
		if got := r.maxTextStep(); got != c.want {
			t.Errorf("%s on %s, framework %q: maxTextStep = %d, want %d", c.model, c.tpu, c.framework, got, c.want)
		}
	}
}

// TestMaxTextRingMeshAsked: a mesh asked whose context MaxText's ring
// refuses is refused under the MaxText framework, naming the mesh and
// the setting; without it, it is planned.
func TestMaxTextRingMeshAsked(t *testing.T) {
	for _, c := range []struct{ model, tpu, mesh, key string }{
		{"gemma2-27b", "tpu7x-8", "fsdp=4,context=2", maxtext.DecoderBlock},
		{"llama3-8b", "v5p-64", "tensor=16,context=2", "ici_tensor_parallelism"},
	} {
		_, err := Search(parsed(t, func(o *Options) { o.Model, o.TPU, o.Mesh, o.Framework = c.model, c.tpu, c.mesh, "maxtext" }))
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != OptionMesh || !strings.Contains(err.Error(), "its ring refuses "+c.key) {
			t.Errorf("%s %s, maxtext: %v, want the mesh refused for %s", c.model, c.mesh, err, c.key)
		}
		if _, err := Search(parsed(t, func(o *Options) { o.Model, o.TPU, o.Mesh = c.model, c.tpu, c.mesh })); err != nil {
			t.Errorf("%s %s, any framework: %v", c.model, c.mesh, err)
		}
	}
}
