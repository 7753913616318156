package export

import (
	"errors"
	"testing"

	"shardlab/cost"
	"shardlab/maxtext"
	"shardlab/mesh"
	"shardlab/plan"
	"shardlab/validate"
)

// TestMaxTextReadsBackAsPlanned writes each export case's plan as a
// MaxText config, reads the config's ici_* and dcn_* factors back as a
// published run would be read (validate's Setup), and holds the layout
// read to the plan's: export and validate share one rule for the chips'
// own devices (package maxtext), so a config export writes is costed as
// the plan was. Where the devices have two chip readings (maxtext's
// TestChipsInvertsDevices), the reading must write the same devices.
// It is over 80 lines because of its table of plans, one per generation
// and per way the chip's devices are carried.
func TestMaxTextReadsBackAsPlanned(t *testing.T) {
	layout := func(tpu, m, batch string) func(*plan.Options) {
		return func(o *plan.Options) { o.Model, o.TPU, o.Mesh, o.GlobalBatch = "llama3-8b", tpu, m, batch }
	}
	cases := []struct {
		name string
		edit func(*plan.Options)
	}{
		// two sequences per chip: the factor on fsdp, never data (the
		// reading validate had took it off data, the larger)
		{"data parallel, 2 per chip", layout("tpu7x-32", "data=16,fsdp=2", "32")},
		{"fsdp, 4 per chip", layout("tpu7x-32", "fsdp=32", "64")},
		// one sequence per chip: on context, with fsdp (two readings) and
		// without (the reading validate had refused it)
		{"fsdp, 1 per chip", layout("tpu7x-32", "fsdp=16,context=2", "16")},
		{"fsdp and context, 1 per chip", layout("tpu7x-32", "fsdp=8,context=4", "8")},
		{"tensor alone, 1 sequence", layout("tpu7x-32", "tensor=8,context=4", "1")},
		{"data over slices", func(o *plan.Options) {
			o.Model, o.TPU, o.Slices, o.Mesh, o.GlobalBatch = "llama3-8b", "tpu7x-32", 2, "data=2(dcn),fsdp=32", "64"
		}},
		// every other generation: v2 and v3 are two devices per chip
		// like TPU7x, the rest one
		{"v2", layout("v2-32", "data=2,fsdp=8,context=2", "16")},
		{"v3, 1 per chip", layout("v3-32", "fsdp=16,context=2", "16")},
		{"v4", layout("v4-32", "fsdp=16", "16")},
		{"v5e", layout("v5litepod-16", "fsdp=8,tensor=2", "16")},
		{"v5p", layout("v5p-32", "fsdp=16", "16")},
		{"v6e over slices", func(o *plan.Options) {
			o.Model, o.TPU, o.Slices, o.Mesh, o.GlobalBatch = "llama3-8b", "v6e-16", 2, "fsdp=2(dcn),fsdp=16", "64"
		}},
	}
	perChipCases, generations := 0, map[string]bool{}
	for _, tt := range cases {
		p := search(t, tt.edit)
		c, err := MaxText(p)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		e := p.Best.Estimate
		factor := func(prefix string, a mesh.Axis) int {
			v, ok := c.Get(prefix + "_" + maxtext.Name(a) + "_parallelism")
			if !ok {
				t.Fatalf("%s: no %s_%s_parallelism", tt.name, prefix, maxtext.Name(a))
			}
			return v.(int)
		}
		ms := p.Request.Multislice
		run := validate.Config{
			AcceleratorType: ms.Slice.AcceleratorType(), Slices: ms.Slices, Model: e.Job.Model, SeqLen: e.Job.Seq,
			GlobalBatch: e.Job.GlobalBatch, RematPolicy: "full", WeightDType: "float32",
			Layout: validate.Layout{
				ICIData: factor("ici", mesh.Data), ICIFSDP: factor("ici", mesh.FSDP), ICITensor: factor("ici", mesh.Tensor),
				ICIContext: factor("ici", mesh.Context), ICIPipeline: factor("ici", mesh.Pipeline), ICIExpert: factor("ici", mesh.Expert),
				DCNData: factor("dcn", mesh.Data), DCNFSDP: factor("dcn", mesh.FSDP), DCNPipeline: factor("dcn", mesh.Pipeline),
				DCNExpert: factor("dcn", mesh.Expert),
			},
		}.Run(tt.name)
		_, got, err := run.Setup()
		if err != nil {
			t.Errorf("%s: the exported layout does not read back: %v", tt.name, err)
			continue
		}
		per := ms.Slice.Chip.JAXDevicesPerChip
		generations[string(ms.Slice.Chip.Generation)] = true
		if per > 1 {
			perChipCases++
		}
		var want, read maxtext.Factors
		for _, a := range mesh.All() {
			want[a], read[a] = e.Mesh.Degree(a).ICI, got.Degree(a).ICI
			if g, w := got.Degree(a).DCN, e.Mesh.Degree(a).DCN; g != w {
				t.Errorf("%s: %v across slices read back as %d, planned %d", tt.name, a, g, w)
			}
		}
		t.Logf("%s: planned %v per chip, read back %v", tt.name, want, read)
		if read == want {
			continue
		}
		wrote, _, err1 := maxtext.Devices(want, e.MicroBatchSize, e.Job.Seq, per)
		j, m, err2 := run.Setup()
		b, err4 := cost.MicroBatchSize(j, m)
		again, _, err3 := maxtext.Devices(read, b, e.Job.Seq, per)
		if err := errors.Join(err1, err2, err3, err4); err != nil || wrote != again {
			t.Errorf("%s: planned %v per chip, read back %v, which is not the same devices (%v, %v): %v", tt.name, want, read, wrote, again, err)
		}
	}
	if perChipCases == 0 || len(generations) < 7 {
		t.Fatalf("%d cases on a chip of several devices, generations %v: want some, and all seven", perChipCases, generations)
	}
}
