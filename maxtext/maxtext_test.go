package maxtext

import (
	"slices"
	"strings"
	"testing"

	"shardlab/mesh"
)

func TestInChipAxis(t *testing.T) {
	tests := []struct {
		name                          string
		microBatch, seq, context, per int
		want                          mesh.Axis
	}{
		// tpu-recipes training/ironwood/llama3.1-70b @c8cfe2f6: pdbs 2 on
		// 128 devices of 64 chips, ici_fsdp 128: 4 sequences per chip.
		{"Ironwood 70B recipe", 4, 8192, 1, 2, mesh.FSDP},
		{"one sequence per chip, 8k", 1, 8192, 1, 2, mesh.Context},
		// 2 x context x 2 chunks must divide the sequence: 2*8*2 = 32.
		{"128k over context 8", 1, 131072, 8, 2, mesh.Context},
		{"odd sequence", 1, 8190, 1, 2, NoAxis},
		{"megacore chip", 1, 8190, 1, 1, NoAxis},
	}
	for _, tt := range tests {
		if got := InChipAxis(tt.microBatch, tt.seq, tt.context, tt.per); got != tt.want {
			t.Errorf("%s: InChipAxis(%d, %d, %d, %d) = %v, want %v", tt.name, tt.microBatch, tt.seq, tt.context, tt.per, got, tt.want)
		}
	}
}

// batchOver is the sequences per chip per micro-batch of batch sequences
// sharded over data, fsdp and expert, as package cost shards them.
func batchOver(batch int) func(Factors) (int, error) {
	return func(c Factors) (int, error) {
		return batch / (max(c[mesh.Data], 1) * max(c[mesh.FSDP], 1) * max(c[mesh.Expert], 1)), nil
	}
}

// TestChipsInvertsDevices holds the reading of a MaxText device mesh to
// the chip layout it was written from, for every chip layout of a small
// grid on a two-device chip (the reading validate had took the factor off
// the larger of data and fsdp, and misread a config with it on context).
// One device mesh can have two chip readings: chips fsdp f, context c
// with one sequence per chip and the factor on context, and fsdp f/2,
// context 2c with two sequences per chip and the factor on fsdp, are the
// same devices running the same program (only which two devices share a
// chip differs, which MaxText's config does not state). There Chips gives
// the fsdp reading, and the test holds that both write the same devices.
func TestChipsInvertsDevices(t *testing.T) {
	const per = 2
	n, aliases := 0, 0
	for _, seq := range []int{4096, 131072} {
		for _, batch := range []int{16, 64, 256} {
			for _, f := range []int{1, 2, 8, 32} {
				for _, d := range []int{1, 2} {
					for _, c := range []int{1, 2, 8} {
						var chips Factors
						for i := range chips {
							chips[i] = 1
						}
						chips[mesh.FSDP], chips[mesh.Data], chips[mesh.Context] = f, d, c
						b, _ := batchOver(batch)(chips)
						if b == 0 || batch%(f*d) != 0 {
							continue
						}
						dev, a, err := Devices(chips, b, seq, per)
						if err != nil {
							continue
						}
						n++
						back, from, err := Chips(dev, seq, per, batchOver(batch))
						if err != nil {
							t.Errorf("seq %d, batch %d, chips %v: devices %v (on %v) not read back: %v", seq, batch, chips, dev, a, err)
							continue
						}
						alias := a == mesh.Context && f%per == 0
						if !alias && (back != chips || from != a) {
							t.Errorf("seq %d, batch %d, chips %v: devices %v (on %v) read back as %v (off %v), want the chips", seq, batch, chips, dev, a, back, from)
						}
						if alias {
							b2, _ := batchOver(batch)(back)
							again, _, err := Devices(back, b2, seq, per)
							if from != mesh.FSDP || again != dev || err != nil {
								t.Errorf("seq %d, batch %d, chips %v: devices %v read back as %v (off %v), which writes %v, want the fsdp reading of the same devices", seq, batch, chips, dev, back, from, again)
							}
							aliases++
						}
					}
				}
			}
		}
	}
	if n < 50 || aliases == 0 || aliases == n {
		t.Fatalf("%d layouts checked, %d of them with two readings", n, aliases)
	}
}

func TestChipsFallsBackToData(t *testing.T) {
	// A published run with the devices' factor only on data: a replica
	// per device. It ran, so the reading keeps it.
	var dev Factors
	for i := range dev {
		dev[i] = 1
	}
	dev[mesh.Data], dev[mesh.FSDP] = 8, 3
	got, a, err := Chips(dev, 4095, 2, batchOver(24))
	if err != nil || a != mesh.Data || got[mesh.Data] != 4 || got[mesh.FSDP] != 3 {
		t.Errorf("Chips(data 8, fsdp 3) = %v off %v, %v; want data 4, fsdp 3 off data", got, a, err)
	}
	dev[mesh.Data] = 3
	if _, _, err := Chips(dev, 4095, 2, batchOver(9)); err == nil {
		t.Error("Chips(data 3, fsdp 3) on 2 devices per chip: no error")
	}
}

func TestName(t *testing.T) {
	for _, a := range mesh.All() {
		n := Name(a)
		found := false
		for _, x := range Axes {
			found = found || x == n
		}
		if !found {
			t.Errorf("Name(%v) = %q, not one of MaxText's axes %v", a, n, Axes)
		}
	}
	if Name(-1) != "" || Name(mesh.NumAxes) != "" {
		t.Error("Name of an axis out of range is not empty")
	}
}

// TestKeys: the keys as base.yml spells them (AI-Hypercomputer/maxtext
// src/maxtext/configs/base.yml @e591f30c lines 659-684, and
// per_device_batch_size); export's tests hold every key it writes to
// base.yml's list.
func TestKeys(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{ICIKey(Name(mesh.FSDP)), "ici_fsdp_parallelism"},
		{DCNKey(Name(mesh.Data)), "dcn_data_parallelism"},
		{ICIKey("context_usp_ulysses"), "ici_context_usp_ulysses_parallelism"},
		{PerDeviceBatchSize, "per_device_batch_size"},
	} {
		if tt.got != tt.want {
			t.Errorf("key %q, want %q", tt.got, tt.want)
		}
	}
}

// TestIsCompileTopology: the names MaxText's accelerator_to_spec_map.py
// @e591f30c has and has not (no v2 or v3 key; v4 up to v4-4096), and
// CompileTopologies lists exactly the names IsCompileTopology accepts.
func TestIsCompileTopology(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{
		{"v5p-8", true}, {"v5e-256", true}, {"v6e-4", true}, {"tpu7x-8", true}, {"v4-4096", true}, {"v4-8", true},
		{"v3-8", false}, {"v2-8", false}, {"v3-32", false}, {"v4-8192", false}, {"v5litepod-16", false}, {"", false},
	} {
		if got := IsCompileTopology(tt.name); got != tt.want {
			t.Errorf("IsCompileTopology(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
	list := CompileTopologies()
	seen := map[string]bool{}
	for _, n := range list {
		if !IsCompileTopology(n) || seen[n] || strings.TrimSpace(n) != n || strings.HasPrefix(n, "#") {
			t.Errorf("CompileTopologies has %q (accepted %v, repeated %v), want each accepted name once", n, IsCompileTopology(n), seen[n])
		}
		seen[n] = true
	}
	if len(seen) != len(topologies) {
		t.Errorf("CompileTopologies has %d names, IsCompileTopology accepts %d", len(seen), len(topologies))
	}
	// accelerator_to_spec_map.py @e591f30c: its first key and its v4 keys' last
	if len(list) == 0 || list[0] != "tpu7x-2" || !seen["v4-4096"] {
		t.Errorf("CompileTopologies = %.5q..., want MaxText's keys from tpu7x-2, with v4-4096", list)
	}
	list[0] = "changed"
	if CompileTopologies()[0] == "changed" {
		t.Error("CompileTopologies returns its own slice, want a copy")
	}
}

// TestMeshAxes: MaxText's mesh_axes ([base.yml] line 531: diloco, data,
// stage, fsdp, fsdp_transpose, context, context_usp_ulysses,
// context_autoregressive, tensor, tensor_sequence, expert, autoregressive),
// each named by its ici_<axis>_parallelism key, so one of Axes; pipelined,
// stage comes before data (configs/types.py @e591f30c lines 3633-3640).
func TestMeshAxes(t *testing.T) {
	want := []string{"diloco", "data", "pipeline", "fsdp", "fsdp_transpose", "context", "context_usp_ulysses",
		"context_autoregressive", "tensor", "tensor_sequence", "expert", "autoregressive"}
	if got := MeshAxes(false); !slices.Equal(got, want) {
		t.Errorf("MeshAxes(false) = %q, want %q", got, want)
	}
	got := MeshAxes(true)
	if got[1] != "pipeline" || got[2] != "data" || !slices.Equal(got[3:], want[3:]) {
		t.Errorf("MeshAxes(true) = %q, want stage (pipeline) before data", got)
	}
	for _, a := range got {
		if !slices.Contains(Axes, a) {
			t.Errorf("mesh axis %q has no ici_%s_parallelism key in Axes", a, a)
		}
	}
	MeshAxes(true)[0] = "changed"
	if MeshAxes(false)[0] != "diloco" {
		t.Error("MeshAxes returns its own table: a caller changed it")
	}
}

// TestPerDeviceBatch: review 163 #1's counts (8 sequences on 16 devices,
// 0.5; 16 on 512, 0.03125, what export maxtext wrote), and MaxText's
// int(devices x per_device_batch_size) ([types.py]) giving back the batch
// every time, thirds included.
func TestPerDeviceBatch(t *testing.T) {
	for _, c := range []struct {
		batch, devices int
		want           float64
	}{{8, 16, 0.5}, {16, 512, 0.03125}, {1024, 512, 2}} {
		if got, err := PerDeviceBatch(c.batch, c.devices); err != nil || got != c.want {
			t.Errorf("PerDeviceBatch(%d, %d) = %g, %v, want %g", c.batch, c.devices, got, err, c.want)
		}
	}
	for devices := 1; devices <= 1024; devices *= 3 {
		for batch := 1; batch <= 300; batch += 7 {
			v, err := PerDeviceBatch(batch, devices)
			if err != nil || int(float64(devices)*v) != batch {
				t.Errorf("PerDeviceBatch(%d, %d) = %g, %v: MaxText would train on %d", batch, devices, v, err, int(float64(devices)*v))
			}
		}
	}
	if _, err := PerDeviceBatch(8, 0); err == nil || !strings.Contains(err.Error(), "maxtext: ") {
		t.Errorf("PerDeviceBatch(8, 0) error %v, want maxtext's refusal", err)
	}
}
