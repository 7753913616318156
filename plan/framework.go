package plan

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"shardlab/cost"
	"shardlab/maxtext"
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
		if m := e.Job.Model; e.Job.RepeatKV && m.KV() < m.Heads {
			n.Text += fmt.Sprintf("; its attention repeats the %d key and value heads to the query's %d before the kernel, which keeps the repeated ones for the backward pass, %d times the keys and values MaxText's kernel keeps (costed so)", m.KV(), m.Heads, m.Heads/m.KV())
		}
		return []Note{n}
	}
	notes := []Note{note("", "framework: MaxText (JAX), which the Cloud TPU guidance points to for training at scale with explicit sharding; PyTorch/XLA SPMD for portable PyTorch code; vLLM with tpu-inference for serving")}
	if n, ok := namedNoneNote(e, est); ok {
		notes = append(notes, n)
	}
	if n, ok := ringNote(&p.Request); ok {
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

// ReasonMaxTextRing rejects, under the MaxText framework, a combination
// whose MaxText mesh (Plan.Devices: in JAX devices, the chip's in-chip
// factor on fsdp or context by the sequences it takes per micro-batch)
// has a context axis that MaxText's ring attention does not run
// (maxtext.Ring.Check: shardlab costs context parallelism as the ring),
// or that has no MaxText mesh at all.
const ReasonMaxTextRing cost.Reason = "MaxText's ring attention does not run the context axis in JAX devices"

// maxTextRing reports, under the MaxText framework, whether MaxText's
// ring attention refuses the context of m's MaxText mesh whatever the
// batch (refused), or refuses it or not by the batch (depends: the
// in-chip factor goes on fsdp or context by the sequences each chip takes
// per micro-batch, maxtext.InChipAxis, and the ring runs one of the two
// contexts only). A search rejects a refused combination before it
// weighs its batches, and one that depends once its batch is found
// (maxTextRefuses). Without the framework both are false: the plan says
// what MaxText runs in its place (export.MaxTextHeld).
func (r *Request) maxTextRing(m *mesh.Mesh) (refused, depends bool) {
	per := max(r.Multislice.Slice.Chip.JAXDevicesPerChip, 1)
	ctx, ici := m.Size(mesh.Context), m.Degree(mesh.Context).ICI
	if r.Framework != FrameworkMaxText || ctx <= 1 && per <= 1 {
		return false, false
	}
	tensor := m.Size(mesh.Tensor)
	onFSDP := r.ring(ctx, tensor).Check() == nil
	if per <= 1 || r.microStep%per == 0 && r.microStep > 0 {
		return !onFSDP, false // the in-chip factor, if any, is on fsdp
	}
	// on context only where the sequence splits so (maxtext.InChipAxis),
	// else the chip's devices have no axis and there is no MaxText mesh
	onContext := r.Seq%(2*ici*per) == 0 && r.ring(ctx*per, tensor).Check() == nil
	return !onFSDP && !onContext, onFSDP != onContext
}

// maxTextRefuses reports whether, under the MaxText framework, MaxText
// cannot run job j at global batch b on m as costed: its MaxText mesh
// (maxtext.Devices, from the sequences per chip per micro-batch) has a
// context axis the ring refuses, or m has no MaxText mesh, as export
// refuses either.
func (r *Request) maxTextRefuses(j *cost.Job, m *mesh.Mesh, b int) bool {
	if r.Framework != FrameworkMaxText {
		return false
	}
	jb := *j
	jb.GlobalBatch = b
	mb, err := cost.MicroBatchSize(jb, *m)
	if err != nil {
		return true // the batch was fitted, so it splits; never here
	}
	var chips maxtext.Factors
	for _, a := range mesh.All() {
		chips[a] = m.Degree(a).ICI
	}
	devices, _, err := maxtext.Devices(chips, mb, j.Seq, r.Multislice.Slice.Chip.JAXDevicesPerChip)
	if err != nil {
		return true // no axis carries the chip's devices: no MaxText mesh
	}
	ctx := devices[mesh.Context] * m.Degree(mesh.Context).DCN
	tensor := devices[mesh.Tensor] * m.Degree(mesh.Tensor).DCN
	return r.ring(ctx, tensor).Check() != nil
}

// ring is r's job as MaxText's ring attention sees it, on a MaxText mesh
// of context ctx and tensor tensor (in JAX devices).
func (r *Request) ring(ctx, tensor int) maxtext.Ring {
	return maxtext.Ring{Context: ctx, Tensor: tensor, Seq: r.Seq, Attention: r.maxTextAttention(), Model: r.Model, Block: r.maxTextBlock}
}

// maxTextAttention is the attention key MaxText runs r with: flash
// unless r asks for another.
func (r *Request) maxTextAttention() string {
	if r.Attention == "" {
		return string(cost.AttentionFlash)
	}
	return string(r.Attention)
}

// flashBlocks is MaxText's refusal of r's sequence on a MaxText mesh
// without context parallelism: its flash attention's splash kernel
// cannot cut it into blocks (maxtext.FlashBlocks); nil where it can, or
// r's attention is not flash. With a context axis the ring's rules hold
// it instead (maxtext.Ring.Check).
func (r *Request) flashBlocks() *maxtext.FlashError {
	var fe *maxtext.FlashError
	if errors.As(maxtext.FlashBlocks(r.maxTextAttention(), r.Seq, 1), &fe) {
		return fe
	}
	return nil
}

// flashFix is what to change where MaxText's flash attention refuses the
// sequence without context parallelism.
const flashFix = "pass such a {seq}, or {attention} dot_product"

// parseMaxText refuses, under the MaxText framework, a sequence MaxText's
// flash attention cannot cut into blocks without context parallelism
// (Request.flashBlocks), unless a fixed {mesh} has a context axis, whose
// ring the search holds to maxtext.Ring.Check, blocks and all. A search
// without a fixed mesh could still find a layout whose ring cuts every
// device's share into blocks (768 tokens over context 2: 384 each); the
// request is refused all the same, naming such a {mesh}'s context where
// there is one (Request.ringContext), and such a {mesh} plans it.
func parseMaxText(r *Request, o Options) error {
	axes := r.Axes
	if r.DeviceAxes != nil {
		axes = r.DeviceAxes
	}
	fe := r.flashBlocks()
	if r.Framework != FrameworkMaxText || fe == nil || fixedSize(axes, mesh.Context) > 1 {
		return nil
	}
	if c := r.ringContext(); c > 0 {
		return refuse(OptionSeq, strconv.Itoa(r.Seq), nil, " %d: %s; %s, or a {mesh} with %s=%d, whose ring runs it", r.Seq, fe.Why(), text(flashFix), mesh.Context, c)
	}
	return refuse(OptionSeq, strconv.Itoa(r.Seq), nil, " %d: %s; %s (no {mesh} with a context axis runs it either)", r.Seq, fe.Why(), text(flashFix))
}

// ringContext is the smallest context size, in JAX devices, that divides
// the slice's devices (any, for a bare generation) and whose ring
// attention MaxText runs r's job on with no tensor axis
// (maxtext.Ring.Check: an even size whose square divides the sequence,
// the model's layers, and each device's share cut into blocks); 0 where
// none does.
func (r *Request) ringContext() int {
	s := r.Multislice.Slice
	devices := s.Chips() * max(s.Chip.JAXDevicesPerChip, 1)
	for c := 2; c*c <= r.Seq; c += 2 {
		if devices > 0 && devices%c != 0 {
			continue
		}
		if r.ring(c, 1).Check() == nil {
			return c
		}
	}
	return 0
}

// maxTextWarning is the plan's warning that MaxText cannot run it as
// costed: ringWarning's where its ring refuses the context axis, else
// flashWarning's where its flash attention refuses the sequence.
func maxTextWarning(p Plan) (Note, bool) {
	if n, ok := ringWarning(p); ok {
		return n, true
	}
	return flashWarning(p)
}

// flashWarning says, for a plan over every framework (the zero
// Framework), that MaxText cannot run it where its MaxText mesh has no
// context axis and MaxText's flash attention refuses the sequence
// (Request.flashBlocks), as an export to MaxText refuses it; with a
// context axis ringWarning says what the ring refuses.
func flashWarning(p Plan) (Note, bool) {
	r := p.Request
	fe := r.flashBlocks()
	if r.Framework != "" || fe == nil {
		return Note{}, false
	}
	d, err := p.Devices()
	if err != nil || fixedSize(d.Degrees, mesh.Context) > 1 {
		return Note{}, false // ringWarning's
	}
	return note(OptionSeq, "sequence %d: %s; so MaxText cannot run this plan, and an export to MaxText refuses it: %s", r.Seq, fe.Why(), text(flashFix)), true
}

// ringNote says, under the MaxText framework where MaxText's ring
// attention runs no context axis of r's job (Request.maxTextStep), why
// no layout has one and each chip's micro-batch is even.
func ringNote(r *Request) (Note, bool) {
	per := r.maxTextStep()
	var re *maxtext.RingError
	if per == 0 || !errors.As(r.ring(per, 1).Check(), &re) {
		return Note{}, false
	}
	return note(OptionFramework, "MaxText runs context parallelism, which shardlab costs as ring attention, only where its ring does, and its ring refuses %s %s (it %s): so no layout has a context axis in JAX devices, and each chip's micro-batch is a multiple of its %d devices, which MaxText's mesh puts on fsdp (else they would go on context)",
		re.Key, re.Value, re.Why, per), true
}

// maxTextStep is the sequences per chip per micro-batch the MaxText
// framework's batches are multiples of (Request.microStep): the chip's
// JAX devices where the ring cannot run the context the in-chip factor
// would make on its own (a chip of 2 devices, context 2: a model with
// sliding-window or chunked layers, multi-token prediction, an attention
// other than flash), so that the factor goes on fsdp (maxtext.InChipAxis)
// whatever the layout; else 0, none, and the search rejects only the
// combinations whose batch puts it on a context the ring refuses
// (Request.maxTextRefuses), weighing the others.
func (r *Request) maxTextStep() int {
	per := r.Multislice.Slice.Chip.JAXDevicesPerChip
	if r.Framework != FrameworkMaxText || per <= 1 || r.ring(per, 1).Check() == nil {
		return 0
	}
	return per
}

// askedRing refuses, under the MaxText framework, a mesh asked in JAX
// devices (value, the {mesh} option as given) whose context MaxText's
// ring attention refuses: the device mesh is MaxText's as asked, so its
// context and tensor sizes are known before any batch.
func (r *Request) askedRing(devices []mesh.Degree, value string) error {
	if r.Framework != FrameworkMaxText {
		return nil
	}
	why, refused := r.ringOn(devices)
	if !refused {
		return nil
	}
	return &OptionError{Option: OptionMesh, Value: value, Err: ErrRequest,
		Text: string(textf("{mesh} %q: %s; give a mesh of another context size or none", value, text(why)))}
}

// ringOn says why MaxText's ring attention refuses the context of a
// MaxText mesh (devices, in JAX devices) for r's job, as costed, whatever
// the framework: "MaxText runs its context 16 in JAX devices as ring
// attention, as costed, and its ring refuses ici_tensor_parallelism 16
// (it needs ...)". false when it runs it, or there is no context.
func (r *Request) ringOn(devices []mesh.Degree) (string, bool) {
	size := [mesh.NumAxes]int{}
	for i := range size {
		size[i] = 1
	}
	for _, d := range devices {
		size[d.Axis] = d.ICI * max(d.DCN, 1)
	}
	var re *maxtext.RingError
	if !errors.As(r.ring(size[mesh.Context], size[mesh.Tensor]).Check(), &re) {
		return "", false
	}
	return fmt.Sprintf("MaxText runs its context %d in JAX devices as ring attention, as costed, and its ring refuses %s %s (it %s)",
		size[mesh.Context], re.Key, re.Value, re.Why), true
}

// ringWarning says, for a plan over every framework (the zero
// Framework), that MaxText cannot run its chosen layout as costed, where
// MaxText's ring attention refuses the context of its MaxText mesh
// (Plan.Devices; ringOn) or it has none, and what MaxText runs instead:
// the best of the same request under FrameworkMaxText (whose search
// rejects what the ring refuses: maxTextRing, maxTextRefuses), the
// layout an export to MaxText holds in its place (export.MaxTextHeld).
// Under a framework the plan is already limited to what it runs. A lean
// search (BestOnly), one of a sweep's many, and a layout the user fixed
// name the refusal without searching again.
func ringWarning(p Plan) (Note, bool) {
	r := p.Request
	if r.Framework != "" {
		return Note{}, false
	}
	d, err := p.Devices()
	why := fmt.Sprintf("this layout has no MaxText mesh (%v)", err)
	if err == nil {
		var refused bool
		if why, refused = r.ringOn(d.Degrees); !refused {
			return Note{}, false
		}
	}
	const cannot = "%s, so MaxText cannot run this layout; "
	switch {
	case r.Axes != nil:
		return note(OptionMesh, cannot+"give {mesh} another layout, or plan without it with {framework} maxtext for MaxText's best", why), true
	case r.BestOnly:
		return note(OptionFramework, cannot+"plan with {framework} maxtext for MaxText's best", why), true
	case r.flashBlocks() != nil:
		// nor does it run the sequence without a context axis (flashWarning)
		return note(OptionSeq, cannot+"and without a context axis its flash attention refuses the sequence: %s; %s", why, r.flashBlocks().Why(), text(flashFix)), true
	}
	q := r
	q.Framework, q.BestOnly, q.Cache = FrameworkMaxText, true, nil
	alt, err := search(q)
	if err != nil {
		return note(OptionFramework, cannot+"and MaxText runs no layout of this job: %v", why, err), true
	}
	e := alt.Best.Estimate
	spec := e.Mesh.String()
	if d, err := alt.Devices(); err == nil && d.Devices != d.Chips {
		spec = d.String() + " in JAX devices"
	}
	return note(OptionFramework, cannot+"its best, planned with {framework} maxtext, is %s, batch %d (MFU %s, step %v, against %.1f%%), which an export to MaxText holds",
		why, spec, e.Job.GlobalBatch, e.MFUPeaks(), unit.Seconds(e.Time.Step.Seconds()), 100*p.Best.Estimate.MFU), true
}
