package plan

import (
	"fmt"
	"strings"

	"shardlab/cost"
	"shardlab/mesh"
	"shardlab/schedule"
	"shardlab/unit"
)

// The Cloud TPU guidance draws one line between frameworks: JAX with
// MaxText for large-scale training with explicit sharding, PyTorch/XLA for
// portable PyTorch training, vLLM with tpu-inference for serving. A plan is
// a training plan, so it is advised for MaxText, and says which of its
// choices MaxText cannot run.

// Framework is a training framework a plan can be limited to.
type Framework string

// FrameworkMaxText limits the search to what MaxText runs.
const FrameworkMaxText Framework = "maxtext"

// FrameworkPyTorch limits the search to what the PyTorch/XLA SPMD export
// writes: data, fsdp and tensor parallelism (no pipeline, context or
// expert axis), the step in one pass (no gradient accumulation, a
// training loop's), and the remat policies PyTorchRemats; tensor
// parallelism only for a model with a Llama-style decoder layer's modules
// (PyTorchTensorModules). The rules are pytorch.go's.
const FrameworkPyTorch Framework = "pytorch"

// FrameworkAny is the framework option's word for no limit, the zero
// Framework (as is the empty option).
const FrameworkAny = "any"

// Frameworks are the framework option's words, in the order a front end
// lists them: every one ParseFramework accepts but the empty option.
func Frameworks() []string {
	return []string{FrameworkAny, string(FrameworkMaxText), string(FrameworkPyTorch)}
}

// ParseFramework reads the framework option, in any case: "" or any (no
// limit: the zero Framework), maxtext (FrameworkMaxText) or pytorch
// (FrameworkPyTorch); anything else is an *OptionError naming
// the option.
func ParseFramework(s string) (Framework, error) {
	switch f := strings.ToLower(strings.TrimSpace(s)); f {
	case "", FrameworkAny:
		return "", nil
	case string(FrameworkMaxText), string(FrameworkPyTorch):
		return Framework(f), nil
	}
	return "", refuse(OptionFramework, s, nil, " %q, want %s or empty (any: every schedule; maxtext: what MaxText runs; pytorch: what the PyTorch/XLA export writes)", s, strings.Join(Frameworks(), ", "))
}

// maxTextSchedule is the schedule MaxText runs for a pipeline that asks
// for k, and whether it is k itself. MaxText's pipeline is one scan over
// iterations whose backward pass is autodiff of the forward scan
// (AI-Hypercomputer/maxtext src/maxtext/layers/pipeline.py @ e591f30c,
// and maxtext issue #752): every forward before every backward, GPipe
// order, with layers assigned circularly when num_pipeline_repeats > 1.
// 1F1B runs as GPipe, interleaved 1F1B as the circular pipeline.
func maxTextSchedule(k schedule.Kind) (schedule.Kind, bool) {
	switch k {
	case schedule.OneFOneB:
		return schedule.GPipe, false
	case schedule.Interleaved:
		return schedule.Circular, false
	}
	return k, true
}

// frameworkNotes advises MaxText for the plan and, when the chosen layout
// pipelines with a schedule MaxText does not run, costs the same layout
// under the schedule it does run.
func frameworkNotes(p Plan, est *cost.Estimator) []Note {
	e := p.Best.Estimate
	if p.Request.Framework == FrameworkPyTorch {
		n := note(OptionFramework, "framework: PyTorch/XLA SPMD, {framework} pytorch: the search kept to what its export writes, data, fsdp and tensor parallelism (tensor for a Llama-style model) in one pass a step with remat none or full (torch_xla's checkpoint_module on each decoder layer)")
		if e.Job.Precision == cost.AMPPrecision() {
			n.Text += " and precision amp: MaxText's fp32 weights as an fp32 model under torch.autocast, whose matmuls run in bf16 while the residual stream, the norms and the gathered weights stay fp32 (costed at 4 bytes an activation: safe for the fit, pessimistic for the step where tensor parallelism carries bf16 matmul outputs)"
		}
		return []Note{n}
	}
	notes := []Note{note("", "framework: MaxText (JAX), which the Cloud TPU guidance points to for training at scale with explicit sharding; PyTorch/XLA SPMD for portable PyTorch code; vLLM with tpu-inference for serving")}
	if n, ok := namedNoneNote(e, est); ok {
		notes = append(notes, n)
	}
	if e.Mesh.Size(mesh.Pipeline) <= 1 {
		return notes
	}
	k, ok := maxTextSchedule(e.Job.Schedule)
	if ok {
		return append(notes, note("", "MaxText runs this plan's %s pipeline as costed", e.Job.Schedule))
	}
	j := e.Job
	j.Schedule = k
	alt, err := est.Estimate(j, e.Mesh)
	switch {
	case err != nil:
		return append(notes, note(OptionSchedule, "MaxText cannot run the %s schedule (its backward pass is autodiff of a forward scan: all forwards, then all backwards), and %s on the same layout cannot be costed: %v", e.Job.Schedule, k, err))
	case !alt.Memory.Fits():
		return append(notes, note(OptionSchedule, "MaxText cannot run the %s schedule (its backward pass is autodiff of a forward scan: all forwards, then all backwards); its closest, %s, does not fit on this layout (over in %s: every micro-batch's activations are held until the backward pass); plan with {schedule} %s to see what does",
			e.Job.Schedule, k, alt.Memory.Shortfall(), k))
	}
	cmp := "takes about as long"
	if slower := alt.Time.Step.Seconds()/e.Time.Step.Seconds() - 1; slower >= 0.005 {
		cmp = fmt.Sprintf("takes %.1f%% longer per step", 100*slower)
	}
	return append(notes, note(OptionSchedule, "MaxText cannot run the %s schedule (its backward pass is autodiff of a forward scan: all forwards, then all backwards); its closest, %s on the same layout, %s (%v of HBM, step %v); plan with {schedule} %s to choose among what MaxText runs",
		e.Job.Schedule, k, cmp, alt.Memory.Total(), unit.Seconds(alt.Time.Step.Seconds()), k))
}

// namedNoneNote says, for a plan without remat, what MaxText runs in its
// place: it has no policy that keeps every activation, and its closest,
// a custom policy with every named tensor on device (cost.NamedNone, what
// export writes and plan --verify's check compares with), recomputes the
// unnamed elementwise tensors: costed on the same layout.
func namedNoneNote(e cost.Estimate, est *cost.Estimator) (Note, bool) {
	if e.Job.Remat != cost.RematNone {
		return Note{}, false
	}
	j := e.Job
	j.Remat, j.Custom = cost.MaxTextRemat(j.Remat, j.Custom)
	alt, err := est.Estimate(j, e.Mesh)
	if err != nil {
		return note(OptionRemat, "MaxText has no remat policy that keeps every activation, and its closest, custom with every named tensor on device, cannot be costed on this layout: %v", err), true
	}
	return note(OptionRemat, "MaxText has no remat policy that keeps every activation: export writes its closest, {remat} custom with every named tensor on device ({remat_custom} %s), under which MaxText recomputes the norms' outputs and the MLP's activation product; so costed it needs %v of HBM against %v, step %v against %v",
		j.Custom.String(), alt.Memory.Total(), e.Memory.Total(), unit.Seconds(alt.Time.Step.Seconds()), unit.Seconds(e.Time.Step.Seconds())), true
}
