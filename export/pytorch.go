package export

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"shardlab/maxtext"
	"shardlab/mesh"
	"shardlab/plan"
)

// The PyTorch/XLA SPMD API the export writes against, from pytorch/xla @
// 41398bfff334fc8d3b1c00be6ea8cc5411f6d6bf:
//   - torch_xla/distributed/spmd/__init__.py exports Mesh, HybridMesh,
//     mark_sharding and set_global_mesh;
//   - xla_sharding.py: HybridMesh(*, ici_mesh_shape, dcn_mesh_shape,
//     axis_names), whose mesh shape is the element-wise product, ordered
//     "by increasing network-intensity"; Mesh(device_ids, mesh_shape,
//     axis_names) for one slice;
//   - experimental/spmd_fully_sharded_data_parallel.py:
//     SpmdFullyShardedDataParallel(module, *, mesh=None, shard_output=None,
//     auto_wrap_policy=None, auto_wrapper_callable=None,
//     extra_data_axis=None): mesh and the rest are keyword-only. It needs a
//     mesh axis named 'fsdp', shards each parameter not sharded yet over it
//     on the parameter's largest dimension (shard_maximal=True), and the
//     forward's output on dimension 0, over (extra_data_axis, 'fsdp') when
//     extra_data_axis is given;
//   - docs/source/perf/spmd_basic.md: SPMD is enabled with xr.use_spmd(),
//     and the devices are xr.global_runtime_device_count().
//
// PyTorch/XLA runs on PJRT, the runtime JAX uses, so a chip is as many
// devices as JAX counts (hw.Chip.JAXDevicesPerChip).

// PyTorchAxes are the mesh axes the export writes, in HybridMesh's order
// (increasing network intensity): data, fsdp, then tensor as 'model'.
var PyTorchAxes = []struct {
	Axis mesh.Axis
	Name string
}{{mesh.Data, "data"}, {mesh.FSDP, "fsdp"}, {mesh.Tensor, "model"}}

// PyTorchMesh is a plan's layout as a PyTorch/XLA SPMD device mesh.
type PyTorchMesh struct {
	Names []string
	// ICI and DCN are HybridMesh's ici_mesh_shape and dcn_mesh_shape, in
	// device counts; their element-wise product is the mesh shape.
	ICI, DCN []int
	// Devices is the devices of the whole multislice: the mesh's size.
	Devices  int
	Comments []string
	// Job is the job the plan was costed as.
	Job PyTorchJob
}

// PyTorch lays the plan's layout out as a PyTorch/XLA SPMD mesh, with the
// job it was costed as (PyTorchMesh.Job). What the export cannot write as
// costed is refused, naming it (pytorchRefusal).
func PyTorch(p plan.Plan) (PyTorchMesh, error) {
	e := p.Best.Estimate
	ms := p.Request.Multislice
	chip := ms.Slice.Chip
	if err := pytorchRefusal(p); err != nil {
		return PyTorchMesh{}, err
	}
	out := PyTorchMesh{Comments: []string{
		fmt.Sprintf("shardlab plan: %s on %s", e.Job.Model.Name, ms),
		layoutComment(p),
	}}
	if p.Request.Efficiency == 0 {
		out.Comments = append(out.Comments, "residual efficiency "+plan.PyTorchEfficiency+"; no error band")
	}
	for _, a := range PyTorchAxes {
		d := e.Mesh.Degree(a.Axis)
		out.Names = append(out.Names, a.Name)
		out.ICI = append(out.ICI, d.ICI)
		out.DCN = append(out.DCN, d.DCN)
	}
	perChip := chip.JAXDevicesPerChip
	if perChip > 1 {
		if maxtext.InChipAxis(e.MicroBatchSize, e.Job.Seq, e.Mesh.Size(mesh.Context), perChip) != mesh.FSDP {
			return PyTorchMesh{}, unsupported("pytorch", "micro-batch per chip", strconv.Itoa(e.MicroBatchSize),
				fmt.Sprintf("a multiple of %d: each %s chip is %d PJRT devices, and the chip's sequences per micro-batch must split over them; pass a {global_batch} that gives each chip a multiple of %d", perChip, chip.Generation, perChip, perChip))
		}
		out.ICI[1] *= perChip
		out.Comments = append(out.Comments, fmt.Sprintf("each %s chip is %d PJRT devices (TensorCores): fsdp carries the in-chip factor %d", chip.Generation, perChip, perChip))
	}
	out.Devices = ms.Chips() * perChip
	shape := out.Shape()
	out.Job = pytorchJob(p, shape[0]*shape[1])
	return out, nil
}

// pytorchRefusal is why the export cannot write plan p as it was costed,
// nil when it can: what plan's PyTorch rules refuse (plan.PyTorchAxisLimit,
// plan.PyTorchModelLimit, plan.PyTorchAttentionLimit,
// plan.PyTorchSettingsLimit), gradient accumulation (a training loop's),
// and a precision the script has no words for (pytorchPrecisions).
func pytorchRefusal(p plan.Plan) error {
	e := p.Best.Estimate
	if l, ok := plan.PyTorchAxisLimit(e.Mesh.Size, e.Job.Model); ok {
		return unsupported("pytorch", l.Field, l.Value, l.Want)
	}
	if l, ok := plan.PyTorchModelLimit(e.Job.Model); ok {
		return unsupported("pytorch", l.Field, l.Value, l.Want)
	}
	if l, ok := plan.PyTorchAttentionLimit(e.Job.Attention, e.Job.Model); ok {
		return unsupported("pytorch", l.Field, l.Value, l.Want)
	}
	if g := accumulation(e); g > 1 {
		given := ""
		if p.Request.Accumulation > 1 {
			// the planner did not choose it: the user's option asked for it
			given = "{gradient_accumulation_steps} 1 (or 0) and "
		}
		return unsupported("pytorch", "gradient accumulation", strconv.Itoa(g),
			fmt.Sprintf("none: the PyTorch/XLA SPMD export writes a mesh and shardings, not the training loop that would run the step as %d micro-batches of %d sequences; plan with %sa {global_batch} of at most one micro-batch's %d sequences, or export to MaxText (gradient_accumulation_steps)", g, e.Job.GlobalBatch/g, given, e.Job.GlobalBatch/g))
	}
	if l, ok := plan.PyTorchSettingsLimit(e.Job.Remat, e.Job.Settings); ok {
		return unsupported("pytorch", l.Field, l.Value, l.Want)
	}
	if name := e.Job.Precision.Name(); pytorchPrecisions[name] == "" {
		return unsupported("pytorch", "precision", name, "amp or bf16: MaxText's bf16 activations beside fp32 weights are not what torch.autocast keeps (its residual stream stays fp32); plan with {framework} pytorch, which costs an fp32 model under autocast as amp")
	}
	return nil
}

// Shape is the mesh shape: ICI times DCN, axis by axis.
func (m PyTorchMesh) Shape() []int {
	s := make([]int, len(m.ICI))
	for i := range s {
		s[i] = m.ICI[i] * m.DCN[i]
	}
	return s
}

func tuple(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func names(xs []string) string { return "('" + strings.Join(xs, "', '") + "')" }

// WritePython writes the mesh, the input sharding and the parameters'
// sharding (with tensor parallelism the partition specs of a Llama-style
// model's layers and embeddings, torch nn.Linear weights being [out, in],
// then FSDPv2; with FSDP FSDPv2), as Python for a PyTorch/XLA SPMD
// training script.
func (m PyTorchMesh) WritePython(w io.Writer) error {
	var b strings.Builder
	for _, c := range m.Comments {
		fmt.Fprintf(&b, "# %s\n", c)
	}
	m.writeMesh(&b)
	m.Job.writeJob(&b)
	m.Job.writeAttention(&b, m.Shape()[2] > 1)
	writeParamSharding(&b, m.Shape())
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMesh writes the SPMD setup: a check of the device count, the mesh
// (a HybridMesh when any axis spans slices) and the input's sharding.
func (m PyTorchMesh) writeMesh(b *strings.Builder) {
	multi := false
	for _, d := range m.DCN {
		multi = multi || d > 1
	}
	fmt.Fprintf(b, `# Environment: PJRT_DEVICE=TPU on every host.
import numpy as np
import torch_xla.runtime as xr
import torch_xla.distributed.spmd as xs
from torch_xla.experimental.spmd_fully_sharded_data_parallel import SpmdFullyShardedDataParallel as FSDPv2
%s
xr.use_spmd()
assert xr.global_runtime_device_count() == %d, "the plan is for %d devices"
`, m.Job.imports(), m.Devices, m.Devices)
	if multi {
		fmt.Fprintf(b, "mesh = xs.HybridMesh(ici_mesh_shape=%s, dcn_mesh_shape=%s, axis_names=%s)\n", tuple(m.ICI), tuple(m.DCN), names(m.Names))
	} else {
		fmt.Fprintf(b, "mesh = xs.Mesh(np.arange(%d), %s, %s)\n", m.Devices, tuple(m.Shape()), names(m.Names))
	}
	b.WriteString(`xs.set_global_mesh(mesh)

# The batch over the data-parallel axes, tokens [batch, seq].
def shard_input(input_ids):
    xs.mark_sharding(input_ids, mesh, (('data', 'fsdp'), None))
`)
}

// writeParamSharding writes how the parameters are sharded for a mesh of
// shape (data, fsdp, model): with tensor parallelism by partition specs
// and FSDPv2 for the rest, by FSDPv2 with FSDP alone, not at all with data
// parallelism alone.
func writeParamSharding(b *strings.Builder, shape []int) {
	switch {
	case shape[2] > 1:
		b.WriteString(tensorParallelPython)
	case shape[1] > 1:
		b.WriteString(fsdpPython)
	default:
		b.WriteString(`
# Data parallelism only: the parameters are replicated; only the input is sharded.
def wrap_model(model):
    return remat(model)
`)
	}
}

// fsdpPython wraps the model in FSDPv2, which shards each parameter over
// 'fsdp' on its largest dimension, with a shard_output of its own: FSDPv2's
// default marks a tensor or a tuple's first element and raises
// RuntimeError ("The output type is not supported") on anything else,
// which a Hugging Face causal LM's ModelOutput (an OrderedDict) is
// (torch_xla/experimental/spmd_fully_sharded_data_parallel.py lines
// 130-150 @41398bff; docs/source/perf/fsdp_spmd.md, "Sharding output").
// The output's batch goes over ('data', 'fsdp') as the input's, which
// the default would do only when told extra_data_axis.
const fsdpPython = `
# The forward's output, its batch over the data-parallel axes as the input's: a
# Hugging Face causal LM's logits, a tuple's first element, or a tensor (FSDPv2's
# own default takes only the last two and raises on a ModelOutput).
def shard_batch_output(output, mesh):
    out = output.logits if hasattr(output, 'logits') else output[0] if isinstance(output, tuple) else output
    xs.mark_sharding(out, mesh, (('data', 'fsdp'),) + (None,) * (out.dim() - 1))

# FSDP: FSDPv2 shards each parameter over 'fsdp' on its largest dimension.
# mesh is keyword-only.
def wrap_model(model):
    return FSDPv2(remat(model), mesh=mesh, shard_output=shard_batch_output)
`

// tensorParallelPython shards a Llama-style model (Hugging Face
// LlamaForCausalLM: model.embed_tokens, model.layers, model.norm, lm_head)
// as cost shards it (cost.Job.stageParams, after MaxText's
// logical_axis_rules): every matmul weight over tensor and fsdp, the
// embedding and output layer with the vocabulary over tensor ("vocab")
// and d_model over fsdp ("embed_vocab"), the logits' vocabulary over
// tensor. The decoder layers and the two [vocab, d_model] tables are
// marked by hand; FSDPv2 then shards "only ... params which are not
// already sharded", the norms, over 'fsdp' on their one dimension (cost
// also splits them over tensor: d_model of a layer's 2 norms, a few MB a
// device even for Llama 3 70B), and marks the forward's output with its
// shard_output, which its default cannot do for a Hugging Face
// ModelOutput (a tensor or a tuple only): torch_xla/experimental/
// spmd_fully_sharded_data_parallel.py and docs/source/perf/fsdp_spmd.md
// ("Sharding output", output.logits) @41398bff. mark_sharding annotates
// an XLA tensor (its docstring's nn.Linear(32, 10).to('xla')), so the
// model moves to the device first.
//
// The residual stream, each decoder layer's input [batch, seq, d_model],
// is pinned as cost holds it: d_model over 'model' (MaxText's
// activation_embed -> tensor, cost.Job.backwardWidths), the batch as the
// input's. Marked only on the weights, GSPMD may keep it whole on every
// 'model' device, as Megatron's tensor parallelism without sequence
// parallelism does, tensor times the layer inputs the plan counts (review
// 152 #6: 220 GiB, not 55, for Llama 3 70B at fsdp=16,tensor=4); so the
// script says what the plan costs rather than the plan guessing what
// GSPMD picks. The pin is xs.mark_sharding_with_gradients, which marks
// an intermediate tensor and its gradient in the backward pass
// (xla_sharding.py 749 and MarkShardingFunction, @41398bff), in a
// forward pre-hook on each layer (torch.nn.Module.register_forward_pre_hook
// with_kwargs=True: the hook returns the args and kwargs the forward gets),
// which runs outside checkpoint_module's wrapped forward, so a
// recomputed layer reads the pinned input.
const tensorParallelPython = `
# Tensor parallelism with FSDP (2D sharding; nn.Linear weights are [out, in]):
# column-parallel projections split their outputs over 'model', row-parallel
# ones their inputs, and the other dimension goes over 'fsdp'.
def shard_decoder_layer(layer):
    for w in (layer.self_attn.q_proj.weight, layer.self_attn.k_proj.weight, layer.self_attn.v_proj.weight,
              layer.mlp.gate_proj.weight, layer.mlp.up_proj.weight):
        xs.mark_sharding(w, mesh, ('model', 'fsdp'))
    for w in (layer.self_attn.o_proj.weight, layer.mlp.down_proj.weight):
        xs.mark_sharding(w, mesh, ('fsdp', 'model'))
    layer.register_forward_pre_hook(shard_residual, with_kwargs=True)

# The residual stream as costed: each decoder layer's input hidden states [batch, seq, d_model], the batch
# as the input's and d_model over 'model' (the plan's HBM holds a layer input split so), pinned with its
# gradient. Left to GSPMD it may stay whole on every 'model' device: 'model' times the activations costed.
def shard_residual(layer, args, kwargs):
    spec = (('data', 'fsdp'), None, 'model')
    if args:
        return (xs.mark_sharding_with_gradients(args[0], mesh, spec),) + tuple(args[1:]), kwargs
    kwargs['hidden_states'] = xs.mark_sharding_with_gradients(kwargs['hidden_states'], mesh, spec)
    return args, kwargs

# The logits [batch, seq, vocab] of a Hugging Face causal LM's output: the batch
# as the input's, the vocabulary over 'model' as the output layer splits it.
def shard_logits(output, mesh):
    xs.mark_sharding(output.logits, mesh, (('data', 'fsdp'), None, 'model'))

# The whole model (LlamaForCausalLM), before its optimizer is made: the decoder
# layers as above; the input embedding and the output layer, [vocab, d_model]
# both, vocab over 'model' and d_model over 'fsdp' (a tied output layer is the
# embedding); then FSDPv2, which shards only the parameters not sharded yet (the
# norms, over 'fsdp') and the output. mesh is keyword-only.
def wrap_model(model):
    model = model.to('xla')
    for layer in model.model.layers:
        shard_decoder_layer(layer)
    embed = model.model.embed_tokens.weight
    xs.mark_sharding(embed, mesh, ('model', 'fsdp'))
    if model.lm_head.weight is not embed:
        xs.mark_sharding(model.lm_head.weight, mesh, ('model', 'fsdp'))
    return FSDPv2(remat(model), mesh=mesh, shard_output=shard_logits)
`
