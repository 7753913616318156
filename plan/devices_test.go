package plan

import (
	"errors"
	"strings"
	"testing"

	"shardlab/mesh"
)

// devicePlan plans Llama 3 70B on tpu7x-128 (64 chips, 128 JAX devices:
// hw's catalog, 2 a chip) with the mesh asked in devices.
func devicePlan(t *testing.T, meshSpec, batch string) (Plan, error) {
	t.Helper()
	o := DefaultOptions()
	o.Model, o.TPU, o.Mesh, o.GlobalBatch, o.Top = "llama3-70b", "tpu7x-128", meshSpec, batch, 1
	r, err := ParseRequest(o)
	if err != nil {
		return Plan{}, err
	}
	return Search(r)
}

// TestMeshCountsDevices: on TPU7x the {mesh} option counts JAX devices,
// and the plan's MaxText mesh (Plan.Devices, by package maxtext's rule)
// is the mesh asked, with chips half the devices.
func TestMeshCountsDevices(t *testing.T) {
	for _, c := range []struct {
		mesh, batch string
		chips       string // the chip layout the planner costs
		in          mesh.Axis
	}{
		// the Ironwood recipe's ici_fsdp 128 on 64 chips
		// (AI-Hypercomputer/tpu-recipes training/ironwood/llama3.1-70b
		// @c8cfe2f6): two or more sequences a chip, split over its devices
		{"fsdp=128", "", "fsdp=64", mesh.FSDP},
		{"fsdp=128", "256", "fsdp=64", mesh.FSDP},
		// one sequence a chip: the sequence splits over its devices
		{"fsdp=64,context=2", "64", "", 0}, // either chip reading: the planner takes the faster
	} {
		p, err := devicePlan(t, c.mesh, c.batch)
		if err != nil {
			t.Fatalf("--mesh %s: %v", c.mesh, err)
		}
		d, err := p.Devices()
		if err != nil {
			t.Fatalf("--mesh %s: %v", c.mesh, err)
		}
		e := p.Best.Estimate
		if d.String() != c.mesh || d.Devices != 128 || d.Chips != 64 || d.Count() != "128 devices (64 chips)" {
			t.Errorf("--mesh %s: devices %s, %s; want the mesh asked, 128 devices (64 chips)", c.mesh, d, d.Count())
		}
		if c.chips != "" && (e.Mesh.String() != c.chips || d.InChip != c.in) {
			t.Errorf("--mesh %s: chips %s, in-chip axis %s; want %s, %s", c.mesh, e.Mesh, d.InChip, c.chips, c.in)
		}
		if d.InChip == mesh.FSDP && e.MicroBatchSize%2 != 0 {
			t.Errorf("--mesh %s: %d sequences per chip per micro-batch on fsdp, want a multiple of the chip's 2 devices", c.mesh, e.MicroBatchSize)
		}
		if got := p.JSON(nil).Layout.DeviceSpec; got != c.mesh {
			t.Errorf("--mesh %s: JSON device_spec %q", c.mesh, got)
		}
	}
}

// TestMeshInDevicesRefused: a mesh of chips, or one whose devices MaxText
// cannot place, is refused naming the option, the value and what is
// accepted; a batch the mesh's devices cannot split is the batch's fault
// (MaxText shards it over the devices of data and fsdp, layers/
// attention_op.py @e591f30c: "Batch dimension should be shardable among
// the devices in data and fsdp axis"; review170 S4).
func TestMeshInDevicesRefused(t *testing.T) {
	for _, c := range []struct {
		mesh, batch string
		option      Option
		want        string
	}{
		{"fsdp=64", "", OptionMesh, "ICI factors = 64 (fsdp 64), want a product of 128, the JAX devices in one tpu7x-128 slice (64 chips, 2 devices each"},
		{"tensor=128", "", OptionMesh, `"tensor=128" counts JAX devices: a tpu7x chip is 2 of them`},
		{"fsdp=128", "64", OptionGlobalBatch, `global batch "64" is 64 sequences, which mesh "fsdp=128" cannot split (128 batch shards: data x fsdp x expert, MaxText's activation_batch), want a multiple of 128, such as 128`},
	} {
		_, err := devicePlan(t, c.mesh, c.batch)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != c.option || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--mesh %s --global-batch %q: %v, want an OptionError for %s saying %q", c.mesh, c.batch, err, c.option, c.want)
		}
	}
}

// TestMeshOnOneDeviceChips: where a chip is one device (v5p), the mesh
// is the chips' and the plan says chips only.
func TestMeshOnOneDeviceChips(t *testing.T) {
	o := DefaultOptions()
	o.Model, o.TPU, o.Mesh, o.Top = "llama3-8b", "v5p-64", "fsdp=32", 1
	r, err := ParseRequest(o)
	if err != nil {
		t.Fatal(err)
	}
	if r.DeviceAxes != nil {
		t.Errorf("v5p: DeviceAxes %v, want nil (a chip is one device)", r.DeviceAxes)
	}
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Devices()
	if err != nil || d.String() != "fsdp=32" || d.Count() != "32 chips" {
		t.Errorf("v5p-64 fsdp=32: devices %s, %s, %v; want fsdp=32, 32 chips", d, d.Count(), err)
	}
	var b strings.Builder
	if err := p.WriteText(&b, nil); err != nil || strings.Contains(b.String(), "JAX devices") {
		t.Errorf("v5p plan text mentions JAX devices (%v):\n%s", err, b.String())
	}
}

// TestMeshAxisOrder: a mesh asked in devices is the same mesh in any
// order of its axes (review: "context=2,fsdp=64" on tpu7x-128 was refused
// as not being MaxText's "fsdp=64,context=2", which it asked to give).
func TestMeshAxisOrder(t *testing.T) {
	for _, c := range []struct{ mesh, same, batch string }{
		{"context=2,fsdp=64", "fsdp=64,context=2", "64"},
		{"tensor=2,fsdp=64", "fsdp=64,tensor=2", ""},
	} {
		p, err := devicePlan(t, c.mesh, c.batch)
		if err != nil {
			t.Fatalf("--mesh %s: %v", c.mesh, err)
		}
		q, err := devicePlan(t, c.same, c.batch)
		if err != nil {
			t.Fatalf("--mesh %s: %v", c.same, err)
		}
		d, _ := p.Devices()
		e, f := p.Best.Estimate, q.Best.Estimate
		if d.String() != c.same || e.Mesh.String() != f.Mesh.String() || e.Time.Step != f.Time.Step {
			t.Errorf("--mesh %s: devices %s, chips %s, step %v; want those of --mesh %s: %s, %v", c.mesh, d, e.Mesh, e.Time.Step, c.same, f.Mesh, f.Time.Step)
		}
	}
}
