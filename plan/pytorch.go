package plan

import (
	"fmt"
	"slices"

	"shardlab/cost"
	"shardlab/mesh"
	"shardlab/model"
)

// What PyTorch/XLA runs as the PyTorch/XLA SPMD export (package export)
// writes it: the rules live here, so that the search under
// FrameworkPyTorch, the request's check (ParseRequest) and the export ask
// one place.

// PyTorchRemats are the remat policies PyTorch/XLA is told here: none (no
// checkpointing), and full as torch_xla's checkpoint_module on each
// decoder layer, which runs the layer's forward under
// torch_xla.utils.checkpoint.checkpoint: the layer keeps its inputs and is
// recomputed in the backward pass, what MaxText's full keeps
// (torch_xla/distributed/fsdp/utils.py, checkpoint_module, and
// docs/source/perf/fsdp_spmd.md, "Gradient checkpointing", pytorch/xla
// @41398bff). MaxText's other policies keep chosen tensors of a layer
// (jax.checkpoint policies), which checkpoint_module has no form of.
var PyTorchRemats = []cost.Remat{cost.RematNone, cost.RematFull}

// PyTorchLimit is a setting PyTorch/XLA, as the export writes it, does
// not run as costed: the option that sets it, the setting's name and
// value, and what is accepted and why ({option} markup, as a Note's).
type PyTorchLimit struct {
	Option       Option
	Field, Value string
	Want         string
}

// PyTorchTensorModules is why a Hugging Face model of spec s lacks the
// modules the export's tensor-parallel sharding names (a Llama-style
// decoder layer's self_attn.q_proj, k_proj, v_proj, o_proj and
// mlp.gate_proj, up_proj, down_proj); "" when it has them.
func PyTorchTensorModules(s model.Spec) string {
	switch {
	case s.MLA():
		return "its latent attention projects through q_a_proj, q_b_proj, kv_a_proj_with_mqa and kv_b_proj"
	case s.MoE():
		return "its experts are other modules (Mixtral's block_sparse_moe.experts[i].w1, w2, w3; DeepSeek's mlp.experts)"
	case s.Hybrid():
		return "its linear-attention layers have other projections"
	case !s.GatedMLP:
		return "its MLP has no gate projection"
	}
	return ""
}

// PyTorchSettingsLimit is the first of job settings s and remat policy r
// that PyTorch/XLA, as the export writes it, does not run as costed: a
// remat policy not in PyTorchRemats, a precision other than amp (what
// MaxText's becomes in PyTorch: cost.AMPPrecision) or bf16, quantization,
// a host offload, vocab tiling. false when there is none.
func PyTorchSettingsLimit(r cost.Remat, s cost.Settings) (PyTorchLimit, bool) {
	const instead = "; plan with %s, or export to MaxText"
	switch p := s.Precision.Name(); {
	case r != "" && !slices.Contains(PyTorchRemats, r):
		return PyTorchLimit{OptionRemat, "remat", string(r), textf("none or full: PyTorch/XLA checkpoints whole modules (checkpoint_module), not the tensors MaxText's %s keeps"+instead, r, text("{remat} none or full"))}, true
	case p != "amp" && p != "bf16" && p != "maxtext":
		return PyTorchLimit{OptionPrecision, "precision", p, textf("maxtext (an fp32 model under autocast) or bf16: the export writes no fp32 master copy of bf16 weights"+instead, text("{precision} maxtext or bf16"))}, true
	case s.Quantization != cost.QuantNone:
		return PyTorchLimit{OptionQuantization, "quantization", string(s.Quantization), textf("none: the export writes no quantized training"+instead, text("{quantization} none"))}, true
	case s.OptimizerOffload:
		return PyTorchLimit{OptionOptimizerOffload, "optimizer offload", "on", textf("off: the export keeps the optimizer state in HBM"+instead, text("no {optimizer_offload}"))}, true
	case s.ParameterOffload:
		return PyTorchLimit{OptionParameterOffload, "parameter offload", "on", textf("off: the export keeps the parameters in HBM"+instead, text("no {parameter_offload}"))}, true
	case s.VocabTiles > 1:
		return PyTorchLimit{OptionVocabTiles, "vocab tiles", fmt.Sprint(s.VocabTiles), textf("1: the export computes the logits and the loss whole"+instead, text("{vocab_tiles} 1"))}, true
	}
	return PyTorchLimit{}, false
}

// PyTorchAxisLimit is the first axis of a layout with these sizes that
// the export does not write for spec: pipeline, context or expert (no
// SPMD form here), or tensor where the model lacks the modules its
// sharding names (PyTorchTensorModules). false when there is none.
func PyTorchAxisLimit(size func(mesh.Axis) int, spec model.Spec) (PyTorchLimit, bool) {
	for _, a := range []mesh.Axis{mesh.Pipeline, mesh.Context, mesh.Expert} {
		if n := size(a); n > 1 {
			return PyTorchLimit{OptionMesh, a.String(), fmt.Sprint(n), "a layout of data, fsdp and tensor only: the PyTorch/XLA SPMD export writes no pipeline, context or expert parallelism; plan with {mesh} without it"}, true
		}
	}
	if n := size(mesh.Tensor); n > 1 {
		if why := PyTorchTensorModules(spec); why != "" {
			return PyTorchLimit{OptionMesh, mesh.Tensor.String(), fmt.Sprint(n), textf("no tensor parallelism for %s: the tensor-parallel sharding the export writes names a Llama-style decoder layer's modules (self_attn.q_proj, k_proj, v_proj, o_proj; mlp.gate_proj, up_proj, down_proj), and %s; plan with {mesh} without tensor", spec.Name, why)}, true
		}
	}
	return PyTorchLimit{}, false
}

// PyTorchModelLimit is why the export does not write a model of spec s
// as costed: a mixture of experts, whose routed MLP the plan costs as
// MaxText runs it, a dropless grouped GEMM (megablox) over the batch's
// shards (cost's sparse_matmul), which a Hugging Face model with the
// export's sharding does not run. Its MoE block loops over the experts,
// gathering each one's tokens with torch.where (modeling_mixtral.py
// MixtralSparseMoeBlock.forward, huggingface/transformers @00d4b3d2):
// shapes that follow the routing, which XLA compiles anew. torch_xla's
// grouped GEMM, custom_kernel.gmm(lhs, rhs, group_sizes, tiling,
// group_offset, transpose_rhs), takes no mesh or partition spec and
// calls the Pallas kernel on the tensors it is given, without the
// shard_map that flash_attention's partition_spec turns on
// (torch_xla/experimental/custom_kernel.py 1419-1459 against 404-462,
// pytorch/xla @41398bff): under SPMD it is not split over the batch as
// costed, and the routing, sort and combine around it would be a model
// of the export's own, which nothing here has run. false for a dense
// model.
func PyTorchModelLimit(s model.Spec) (PyTorchLimit, bool) {
	if !s.MoE() {
		return PyTorchLimit{}, false
	}
	return PyTorchLimit{OptionModel, "experts", fmt.Sprint(s.Experts), textf("a dense model (no experts): %s is a mixture of experts, which the plan costs as MaxText's grouped GEMM (megablox) split over the batch, and a Hugging Face MoE block with the PyTorch/XLA export's sharding does not run that (it loops over the experts; torch_xla's custom_kernel.gmm takes no mesh or partition spec); plan it with {framework} maxtext and export to MaxText", s.Name)}, true
}

// PyTorchAttentionLimit is why the export's flash attention does not run
// spec s's attention a as the plan costs it: a model with sliding-window
// layers, whose local layers attend over the window alone (and are
// costed so: model.Spec.SlidingWindow), while torch_xla's flash_attention
// masks the whole causal prefix and has no window parameter, nor one for
// the logit soft-cap Gemma 2's attention applies (flash_attention(q, k, v,
// causal, q_segment_ids, kv_segment_ids, sm_scale, *, ab,
// partition_spec, mesh), custom_kernel.py 854-866, pytorch/xla
// @41398bff; Hugging Face's Gemma attention passes sliding_window and
// softcap to its attention function). Dot-product attention is Hugging
// Face's eager path, which applies both. false when there is none.
func PyTorchAttentionLimit(a cost.AttentionKind, s model.Spec) (PyTorchLimit, bool) {
	if a == cost.AttentionDot || !s.Windowed() {
		return PyTorchLimit{}, false
	}
	return PyTorchLimit{OptionAttention, "attention", string(a), textf("dot_product for %s: its sliding-window layers attend over the last %d tokens alone, and torch_xla's flash_attention has no window (nor the logit soft-cap Gemma 2 applies); plan with %s, which the script runs as Hugging Face's eager attention", s.Name, s.SlidingWindow, text("{attention} dot_product"))}, true
}

// PyTorchEfficiency is where, under FrameworkPyTorch, the residual
// efficiency a plan costs its step with comes from (cost's calibration,
// unless the efficiency option sets it): the plan's text and the
// PyTorch/XLA export's header say it (pyTorchUncalibrated says why).
const PyTorchEfficiency = "MaxText's, calibrated on MaxText runs in shardlab validate; uncalibrated for PyTorch/XLA"

// pyTorchUncalibrated says, under FrameworkPyTorch, that the step time is
// MaxText's: the residual efficiency (cost's calibration) and the error
// band (cost.StepBands) were fitted and held out on validate's run table,
// which holds published MaxText runs only (validate/runs.yaml: "Published
// MaxText training runs on Cloud TPU", no PyTorch/XLA row). A PyTorch/XLA
// SPMD step (an fp32 model under autocast, lazy tensors traced into XLA,
// Hugging Face modules) is another program, whose efficiency nothing here
// has measured; so the plan gives no band (Plan.PredictionBand), and says
// why. false under any other framework.
func pyTorchUncalibrated(p Plan) (Note, bool) {
	if p.Request.Framework != FrameworkPyTorch {
		return Note{}, false
	}
	eff := fmt.Sprintf("its %.0f%% residual efficiency and its error band were", 100*p.Best.Estimate.Job.EfficiencyFor(p.Request.Multislice.Slice.Chip))
	if p.Request.Efficiency > 0 {
		eff = "its error band was"
	}
	return note(OptionFramework, "{framework} pytorch: the step is costed as MaxText runs it, and %s fitted and held out on MaxText runs (shardlab validate holds no PyTorch/XLA run): uncalibrated for PyTorch/XLA, so no error band is given; time the first steps on the TPUs", eff), true
}

// parsePyTorch checks a request under FrameworkPyTorch once the rest of
// it is read: what the export would refuse is refused here, naming the
// option (a mixture of experts too, PyTorchModelLimit, and flash attention
// over sliding windows, PyTorchAttentionLimit); MaxText's precision becomes PyTorch's automatic mixed
// precision (cost.AMPPrecision), whose residual stream stays fp32; the
// attention core reads keys and values repeated to the query's heads
// (cost.Settings.RepeatKV: Hugging Face's eager attention and the export's
// flash function both repeat them); and on
// a chip of several devices the batch puts a multiple of them on each
// chip, since only fsdp may carry the in-chip factor.
func parsePyTorch(r *Request, _ Options) error {
	if r.Framework != FrameworkPyTorch {
		return nil
	}
	if r.Precision == cost.MaxTextPrecision() {
		r.Precision = cost.AMPPrecision()
	}
	r.RepeatKV = true
	if per := r.Multislice.Slice.Chip.JAXDevicesPerChip; per > 1 {
		// the chip's PJRT devices split its sequences (fsdp carries the
		// in-chip factor: no context axis here)
		r.microStep = per
	}
	if l, ok := PyTorchSettingsLimit(r.Remat, r.Settings); ok {
		return l.refusal()
	}
	if r.Axes != nil {
		size := func(a mesh.Axis) int { return fixedSize(r.Axes, a) }
		if l, ok := PyTorchAxisLimit(size, r.Model); ok {
			return l.refusal()
		}
	}
	if l, ok := PyTorchModelLimit(r.Model); ok {
		return l.refusal()
	}
	if l, ok := PyTorchAttentionLimit(r.Attention, r.Model); ok {
		return l.refusal()
	}
	if r.Accumulation > 1 {
		return PyTorchLimit{OptionGradientAccumulationSteps, "gradient accumulation steps", fmt.Sprint(r.Accumulation), "0 or 1: the PyTorch/XLA SPMD export writes no training loop to accumulate in"}.refusal()
	}
	return nil
}

// refusal is l as the request's error, under FrameworkPyTorch: the
// option, "with {framework} pytorch", and what is accepted, carrying l
// (OptionError.PyTorch) for a front end that implies the framework.
func (l PyTorchLimit) refusal() error {
	e := refuse(l.Option, l.Value, nil, " (%s %s) with {framework} pytorch, want %s", l.Field, l.Value, text(l.Want))
	e.PyTorch = &l
	return e
}

// Phrase is l as a refusal by by, a front end whose command implies the
// PyTorch framework and so has no framework option to name (the CLI's
// export pytorch): "{option} (field value): by takes want", with the
// options spelt by name (Option.String when nil).
func (l PyTorchLimit) Phrase(by string, name func(Option) string) string {
	return phrase("{"+string(l.Option)+"}"+textf(" (%s %s): %s takes %s", l.Field, l.Value, by, text(l.Want)), name)
}
