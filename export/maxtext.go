// Package export writes a planned layout in the configuration language of
// the engine that runs it for real: MaxText's ici_*/dcn_* parallelism
// settings.
package export

import (
	"fmt"
	"io"
	"strings"

	"shardlab/cost"
	"shardlab/mesh"
	"shardlab/plan"
	"shardlab/unit"
)

// MaxText writes the plan's chosen layout as a MaxText config overlay
// (YAML, for base.yml's keys).
func MaxText(w io.Writer, p plan.Plan) error {
	e := p.Best.Estimate
	ms := p.Request.Multislice
	chip := ms.Slice.Chip
	var b strings.Builder
	fmt.Fprintf(&b, "# shardlab plan: %s on %s\n", p.Request.Model.Name, ms)
	fmt.Fprintf(&b, "# layout %s, %.1f%% MFU estimated, step %v\n", e.Mesh, 100*e.MFU, unit.Seconds(e.Time.Step.Seconds()))
	names := map[mesh.AxisName]string{mesh.Data: "data", mesh.FSDP: "fsdp", mesh.Tensor: "tensor", mesh.Pipeline: "pipeline", mesh.Context: "context"}
	for _, a := range e.Mesh.Axes() {
		fmt.Fprintf(&b, "ici_%s_parallelism: %d\n", names[a.Name], a.ICI)
	}
	for _, a := range e.Mesh.Axes() {
		fmt.Fprintf(&b, "dcn_%s_parallelism: %d\n", names[a.Name], a.DCN)
	}
	fmt.Fprintf(&b, "num_slices: %d\n", ms.Slices)
	if e.Mesh.Size(mesh.Pipeline) > 1 {
		fmt.Fprintf(&b, "num_pipeline_microbatches: %d\n", e.Job.MicroBatches)
	}
	// MaxText's per_device_batch_size counts sequences per JAX device; TPU7x
	// shows each TensorCore as a device, so a chip holds two.
	devices := ms.Chips() * chip.JAXDevicesPerChip
	per := float64(e.Job.GlobalBatch) / float64(devices)
	fmt.Fprintf(&b, "per_device_batch_size: %s\n", trimFloat(per))
	fmt.Fprintf(&b, "max_target_length: %d\n", e.Job.Seq)
	j := e.Job
	remat := string(j.Remat)
	if j.Remat == cost.RematNone {
		// every tagged tensor kept on device
		remat = string(cost.RematCustom)
		j.Custom = cost.Places{}
		for t := range j.Custom {
			j.Custom[t] = cost.Device
		}
	}
	fmt.Fprintf(&b, "remat_policy: '%s'\n", remat)
	if remat == string(cost.RematCustom) {
		for t, pl := range j.Custom {
			if cost.Tensor(t) != cost.LayerInput || pl != cost.Device {
				fmt.Fprintf(&b, "%s: '%s'\n", cost.Tensor(t), pl)
			}
		}
	}
	weight := "float32"
	if j.Precision.Weight == 2 {
		weight = "bfloat16"
	}
	fmt.Fprintf(&b, "weight_dtype: '%s'\n", weight)
	if j.Quantization != cost.QuantNone {
		fmt.Fprintf(&b, "quantization: '%s'\n", j.Quantization)
	}
	if j.OptimizerOffload {
		b.WriteString("optimizer_memory_host_offload: true\n")
	}
	if j.ParameterOffload {
		b.WriteString("parameter_memory_host_offload: true\n")
	}
	if j.VocabTiles > 1 {
		fmt.Fprintf(&b, "num_vocab_tiling: %d\n", j.VocabTiles)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.6f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
