package export

import (
	"fmt"
	"strings"

	"shardlab/cost"
	"shardlab/plan"
)

// pytorchPrecisions are the precisions the export writes, by name
// (cost.Precision.Name), with what to do in PyTorch/XLA for each: amp
// (cost.AMPPrecision, what MaxText's precision becomes under
// plan.FrameworkPyTorch) is an fp32 model whose forward and loss run under
// autocast, which casts the matmuls to bfloat16 and leaves the rest in
// their inputs' type (docs/source/perf/amp.md @41398bff), so the residual
// stream stays float32; bf16's are a model cast to bfloat16, whose
// gradients and whose torch.optim.AdamW moments (zeros_like the
// parameter) are bfloat16 too.
var pytorchPrecisions = map[string]string{
	"amp":  "float32 parameters, gradients and Adam moments (16 bytes a parameter), the forward and the loss under torch.autocast('xla', dtype=torch.bfloat16): bfloat16 matmuls, while the residual stream (each decoder layer's input), the norms and the gathered weights stay float32, as costed (4 bytes an activation)",
	"bf16": "bfloat16 parameters, gradients and Adam moments (8 bytes a parameter): model.to(torch.bfloat16) before the optimizer is made",
}

// PyTorchJob is the job a PyTorch/XLA export's plan was costed as, which
// the training script must run for the plan's HBM and step time to hold.
type PyTorchJob struct {
	GlobalBatch, Seq int
	// PerDevice is the sequences a PJRT device holds: the global batch
	// over the batch's axes (data and fsdp).
	PerDevice int
	Remat     cost.Remat
	Attention cost.AttentionKind
	// Heads, KVHeads and HeadDim are the model's query heads, key and
	// value heads and head width, which the flash kernel's call reads.
	Heads, KVHeads, HeadDim int
	// RepeatKV says the plan costed K and V repeated to the query's heads
	// (cost.Settings.RepeatKV), as the script's attention holds them.
	RepeatKV bool
	// Precision says what the precision costed is in PyTorch/XLA.
	Precision string
	// HBM is the plan's HBM a chip, "X of Y usable".
	HBM string
}

// pytorchJob is plan p's job, on a mesh of devices whose batch axes hold
// shards devices.
func pytorchJob(p plan.Plan, shards int) PyTorchJob {
	e := p.Best.Estimate
	m := e.Memory
	return PyTorchJob{
		GlobalBatch: e.Job.GlobalBatch, Seq: e.Job.Seq, PerDevice: e.Job.GlobalBatch / max(shards, 1),
		Remat: e.Job.Remat, Attention: e.Job.Attention,
		Heads: e.Job.Model.Heads, KVHeads: e.Job.Model.KV(), HeadDim: e.Job.Model.Head(), RepeatKV: e.Job.RepeatKV,
		Precision: pytorchPrecisions[e.Job.Precision.Name()],
		HBM:       fmt.Sprintf("%v of %v usable", m.Total(), m.Usable),
	}
}

// imports is the imports the job's remat and attention need, "" when
// none.
func (j PyTorchJob) imports() string {
	s := ""
	if j.Remat == cost.RematFull {
		s += "from torch_xla.distributed.fsdp import checkpoint_module\n"
	}
	if j.Attention != cost.AttentionDot {
		s += "import math\nimport torch\nfrom torch_xla.experimental.custom_kernel import flash_attention\nfrom transformers import AttentionInterface\n"
	}
	return s
}

// writeJob writes the job as the script's constants and what to train it
// with, and remat(model), which wrap_model applies.
func (j PyTorchJob) writeJob(b *strings.Builder) {
	fmt.Fprintf(b, `
# The job shardlab costed (HBM a chip: %s); train it so, or the plan's HBM and step time do not hold.
GLOBAL_BATCH = %d  # sequences an optimizer step, one forward and backward pass
SEQ_LEN = %d  # tokens a sequence
BATCH_PER_DEVICE = %d  # sequences a device holds: GLOBAL_BATCH over the 'data' and 'fsdp' axes
# Precision: %s.
`, j.HBM, j.GlobalBatch, j.Seq, j.PerDevice, j.Precision)
	if j.Attention == cost.AttentionDot {
		b.WriteString("# Attention: dot-product, as costed: the [seq, seq] scores are held (a Hugging Face model's eager attention).\n")
	} else {
		b.WriteString("# Attention: a flash kernel, as costed: xla_flash_attention below (load the model with attn_implementation=ATTENTION).\n")
	}
	if j.Remat == cost.RematFull {
		b.WriteString(`
# Remat full, as costed: each decoder layer keeps its input and is recomputed in the backward pass.
# checkpoint_module wraps a module's forward; it goes on before FSDPv2 wraps the model. The KV cache
# goes off: a Hugging Face model keeps one unless told, holding every layer's keys and values, and the
# recomputed forward would extend it.
def remat(model):
    model.config.use_cache = False
    layers = getattr(getattr(model, 'model', None), 'layers', None)  # a Hugging Face causal LM's decoder layers
    if layers is None:
        raise ValueError("remat full: no decoder layers at model.model.layers; apply checkpoint_module to each of yours")
    for layer in layers:
        checkpoint_module(layer)
    return model
`)
		return
	}
	b.WriteString(`
# Remat none, as costed: every activation is kept for the backward pass (no checkpointing), and no
# KV cache (a Hugging Face model keeps one unless told, holding every layer's keys and values).
def remat(model):
    model.config.use_cache = False
    return model
`)
}

// writeAttention writes, for a flash plan, the attention the plan costs as
// a Hugging Face attention function (AttentionInterface.register, then
// attn_implementation: huggingface.co/docs/transformers/attention_interface;
// the function is called as modeling_llama.py's attention_interface(self,
// query, key, value, attention_mask, dropout=..., scaling=self.scaling,
// ...) and returns [batch, seq, heads, head_dim], huggingface/transformers
// @00d4b3d2) over torch_xla's Pallas kernel, flash_attention(q, k, v,
// causal=False, q_segment_ids=None, kv_segment_ids=None, sm_scale=1.0, *,
// ab=None, partition_spec=None, mesh=None) (torch_xla/experimental/
// custom_kernel.py 854-866, pytorch/xla @41398bff; testdata/
// torch-xla-api.txt). Three of its rules are the call's: sm_scale
// defaults to 1.0, no scale, so the model's own (Hugging Face's scaling,
// 1/sqrt(head_dim) for Llama) is passed, as torch_xla's example divides
// the query (examples/flash_attention/train_decoder_only_flash_attention
// .py 14-15); the kernel is split over the mesh only when given a
// partition_spec (fa_custom_forward, custom_kernel.py 431-462: _shard_map,
// else _fa_custom_forward_single_device on the global tensors; every SPMD
// test passes one, test/test_pallas_spmd.py 72, 97, 203), here the
// batch over ('data', 'fsdp') as the input's and, with tensor
// parallelism, the heads over 'model' as the column-parallel projections
// split them; and q, k and v have one head count (its q, k, v shapes are
// [batch, num_heads, seq, d]), so grouped-query keys and values are
// repeated as Hugging Face's repeat_kv does (torch.repeat_interleave on
// dim 1, its docstring), which the kernel then keeps for the backward at
// the query's heads, as a plan made for plan.FrameworkPyTorch costs them
// (cost.Settings.RepeatKV; the comment says whether this plan did). Nothing here is a sliding window or a logit
// soft-cap, which the kernel has not: the function refuses them.
//
// The fourth rule is the dtype. Under the amp precision's autocast the
// query and key arrive float32 beside a bfloat16 value: Hugging Face's
// rotary embedding returns cos and sin in its input's dtype, the float32
// embeddings (LlamaRotaryEmbedding.forward, cos.to(dtype=x.dtype), called
// on inputs_embeds in LlamaModel.forward, modeling_llama.py
// @5dd4a635), and q*cos + rotate_half(q)*sin promotes the bf16
// projections to float32, while autocast casts only the aten ops it lists
// and falls through for the rest (torch_xla/csrc/autocast_mode.cpp 25-27
// @41398bff), a custom autograd Function included (torch_xla's own
// XLAPatchedLinear asks for the cast with custom_fwd(cast_inputs=...),
// distributed/spmd/xla_sharding.py 1037, 1056). The kernel casts nothing:
// it takes its output's dtype from q (custom_kernel.py 343-344) and its
// gradients' from q, k and v (587, 628). So the function casts q, k and v
// to autocast's dtype when autocast is on, else to the value's (the
// projections'), as Hugging Face's own flash_attention_2 function picks
// its target_dtype for float32 queries (integrations/flash_attention.py
// @bc681cd9), with the calls torch_xla's checkpoint makes
// (torch.is_autocast_enabled("xla"), torch.get_autocast_dtype("xla"),
// utils/checkpoint.py 106-107 @41398bff): bfloat16 under both precisions
// the export writes, the dtype the plan costs the attention's matmuls at.
// The output comes back in it, as Hugging Face's attention functions
// return it (flash_attention_2 in its target_dtype; the eager one in
// bfloat16 under autocast, its second matmul being autocast's), and
// o_proj, a linear, takes bfloat16 either way. What the kernel keeps for
// the backward (its clones of q, k and v, and its output) is then 2 bytes
// an element, where the float32 q, k and output were 4: under, not at,
// cost.AMPPrecision's 4-byte activations, which bound it; the repeated K
// and V, which this cast alone makes bfloat16, the plan costs at 2 bytes
// (cost's repeatedKVBytes).
func (j PyTorchJob) writeAttention(b *strings.Builder, tensor bool) {
	if j.Attention == cost.AttentionDot {
		return
	}
	heads := "None"
	if tensor {
		heads = "'model'"
	}
	repeat := ""
	switch {
	case j.KVHeads < j.Heads && j.RepeatKV:
		repeat = fmt.Sprintf(`
# Repeated, K and V are held at the query's %d heads, as the plan counts them (MaxText's kernel keeps the %d):
# (%d - %d) x %d x 2 = %d more elements a token in each layer the backward keeps (every layer with remat none;
# with full, the one being recomputed).`, j.Heads, j.KVHeads, j.Heads, j.KVHeads, j.HeadDim, 2*(j.Heads-j.KVHeads)*j.HeadDim)
	case j.KVHeads < j.Heads:
		repeat = fmt.Sprintf(`
# Repeated, K and V are held at the query's %d heads, not the %d the plan counts (a plan made for the pytorch
# framework counts them): (%d - %d) x %d x 2 = %d more elements a token in each layer the backward keeps (every layer with
# remat none; with full, the one being recomputed).`, j.Heads, j.KVHeads, j.Heads, j.KVHeads, j.HeadDim, 2*(j.Heads-j.KVHeads)*j.HeadDim)
	}
	fmt.Fprintf(b, `
# The attention, as costed: torch_xla's Pallas flash_attention, which holds no [seq, seq] scores (a Hugging
# Face model's eager attention holds them, which the plan's HBM does not count), as a Hugging Face attention
# function. The kernel takes q, k and v at one head count, so grouped-query keys and values are repeated to
# the query's heads (Hugging Face's repeat_kv); it scales the scores by sm_scale, whose default 1.0 is no
# scale, so the model's own goes in (1/sqrt(head_dim) if it gives none); and it is split over the mesh only
# when given partition_spec (without one each device computes the whole global batch's attention):
# the batch over ('data', 'fsdp') as the input's, the heads over %s.
# It is causal and reads no mask: pack the sequences, with no padding. Autocast does not reach the kernel, and
# Hugging Face's rotary embedding returns cos and sin in the float32 embeddings' dtype, so under autocast the
# query and key arrive float32 beside a bfloat16 value: all three go in at autocast's dtype (else the value's),
# bfloat16 as costed, and the output comes back in it, as Hugging Face's own attention functions return it.%s
ATTENTION = 'xla_flash_spmd'

def xla_flash_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    window, softcap = kwargs.get('sliding_window'), kwargs.get('softcap')
    if (window and window < query.shape[2]) or softcap:
        raise ValueError(f"torch_xla's flash_attention has no sliding window ({window}) or logit soft-cap ({softcap})")
    dtype = torch.get_autocast_dtype('xla') if torch.is_autocast_enabled('xla') else value.dtype
    query, key, value = query.to(dtype), key.to(dtype), value.to(dtype)
    groups = query.shape[1] // key.shape[1]
    key, value = key.repeat_interleave(groups, dim=1), value.repeat_interleave(groups, dim=1)
    scale = scaling if scaling is not None else 1 / math.sqrt(query.shape[-1])
    out = flash_attention(query, key, value, causal=True, sm_scale=scale,
                          partition_spec=(('data', 'fsdp'), %s, None, None), mesh=mesh)
    return out.transpose(1, 2), None  # [batch, seq, heads, head_dim], as Hugging Face's attention functions return

AttentionInterface.register(ATTENTION, xla_flash_attention)
`, map[bool]string{true: "'model' as the column-parallel projections split them", false: "none (no tensor parallelism)"}[tensor], repeat, heads)
}
