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
		Precision: pytorchPrecisions[e.Job.Precision.Name()],
		HBM:       fmt.Sprintf("%v of %v usable", m.Total(), m.Usable),
	}
}

// imports is the import the job's remat needs, "" when none.
func (j PyTorchJob) imports() string {
	if j.Remat == cost.RematFull {
		return "from torch_xla.distributed.fsdp import checkpoint_module\n"
	}
	return ""
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
		b.WriteString("# Attention: a flash kernel, as costed, which holds no [seq, seq] scores: torch_xla.experimental.custom_kernel.flash_attention(q, k, v, causal=True)\n# in the attention layers (a Hugging Face model's eager attention holds them, which the plan's HBM does not count).\n")
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
