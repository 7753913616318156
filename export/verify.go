package export

import (
	"fmt"
	"strconv"
	"strings"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/maxtext"
	"shardlab/mesh"
	"shardlab/plan"
	"shardlab/unit"
)

// compileModule is MaxText's ahead-of-time compile (src/maxtext/trainers/
// pre_train/train_compile.py @e591f30c): it compiles the training step for
// compile_topology on a CPU machine, with no TPU, and fails with the same
// out-of-memory message the TPU's compile would give (docs/guides/
// monitoring_and_debugging/features_and_diagnostics.md @e591f30c). It
// does not load the program, which can still fail on the TPU (LoadNote).
const compileModule = "python3 -m maxtext.trainers.pre_train.train_compile"

// CompileTopology is MaxText's compile_topology name for the plan's slice:
// its accelerator type, with v5e's v5litepod prefix as MaxText spells it,
// v5e (utils/accelerator_to_spec_map.py @e591f30c: "v5e-256"; v4, v5p and
// TPU7x count TensorCores there, as their accelerator types do). Whether
// MaxText knows the name is package maxtext's to say (its list of names,
// maxtext.IsCompileTopology): it has none for v2 or v3.
func CompileTopology(s hw.Slice) string {
	t := s.AcceleratorType()
	if rest, ok := strings.CutPrefix(t, s.Chip.AcceleratorPrefix+"-"); ok && s.Chip.Generation == hw.V5e {
		return "v5e-" + rest
	}
	return t
}

// CompileCommand is the command that compiles the plan's MaxText config
// ahead of time for its slice type and slice count (train_compile.py
// validate_config requires compile_topology and a positive
// compile_topology_num_slices), so that a plan can be checked on a CPU
// machine before TPUs are rented: the config file WriteYAML wrote, then
// the two keys. The compile prints "Memory analysis: ..." (jax's
// memory_analysis) or XLA's out-of-memory message, which `shardlab check
// --compile-log` reads.
func CompileCommand(p plan.Plan, c MaxTextConfig) string {
	return ShellQuote(CompileArgs(p, c))
}

// CompileArgs is CompileCommand as the program and its arguments, one
// word each.
func CompileArgs(p plan.Plan, c MaxTextConfig) []string {
	ms := p.Request.Multislice
	return append(strings.Fields(compileModule), c.File(), "run_name="+c.RunName,
		"compile_topology="+CompileTopology(ms.Slice), "compile_topology_num_slices="+strconv.Itoa(ms.Slices))
}

// Verification is how to check a plan's memory with MaxText's compiler
// before renting TPUs (plan --verify, and the web page): export the
// plan's config, compile it ahead of time on a CPU machine
// (CompileCommand), and hold the compiler's report to the plan's with
// shardlab check. Where there is no compile, Unavailable says why and the
// rest is empty.
type Verification struct {
	Unavailable string
	// Why names the kind of reason there is no compile, for a script to
	// branch on (WhyUnfit, WhyNoCompileTopology, WhyRefused, WhyPyTorch); empty with
	// the steps.
	Why string
	// Refused is why MaxText cannot run the plan as it is (export's
	// error, which names options for the front end to spell); the rest
	// is empty then.
	Refused error
	// TopologyNote says, for a slice whose topology is not its type's
	// default, that the compile is of the type's own (CompileTopologyNote).
	TopologyNote string
	// Job names the job, from the plan (the model, the accelerator type, a
	// topology other than the type's default, a slice count above one),
	// so that export and check plan this job and no default or example;
	// Layout is the plan's layout (in JAX devices: a TPU7x chip is two),
	// batch and remat (for none, the custom policy the export writes), its gradient_accumulation_steps when above 1 (with
	// a mesh given, plan, export and check accumulate only when told to),
	// and a pipeline's schedule and chunks. Each value is quoted for a
	// POSIX shell (OptionValue); the front end spells the options
	// (Verification.Steps).
	Job, Layout []OptionValue
	ConfigFile  string
	// Compile is the compile's command line (CompileCommand), CompileArgs
	// its words.
	Compile     string
	CompileArgs []string
	// Report is what XLA's memory report should read a JAX device by the
	// plan (plan.Plan.XLAReport), or for a plan without remat by the
	// policy the export writes for it (namedReport).
	Report unit.Bytes
	// Recomputes says XLA recomputes to reach Report, at most
	// XLACapacity, the HBM XLA lets a JAX device hold (hw.Chip.XLACapacity
	// over the chip's devices): a compile above it fails with XLA's
	// out-of-memory message.
	Recomputes  bool
	XLACapacity unit.Bytes
	// TempScale is the temporaries' factor the plan was made with (0:
	// none): check's calibration file replaces it, so plan takes the file
	// in its place. NamedNone says the plan has no remat and the commands
	// carry the policy MaxText runs for it (cost.NamedNone): the file's
	// factor is that policy's, to plan with it.
	TempScale float64
	NamedNone bool
}

// Why a verification has no compile (Verification.Why).
const (
	// WhyUnfit: the layout does not fit, and export writes no config of it.
	WhyUnfit = "layout_does_not_fit"
	// WhyNoCompileTopology: MaxText's train_compile has no
	// compile_topology for the slice.
	WhyNoCompileTopology = "no_compile_topology"
	// WhyRefused: MaxText cannot run the plan as it is (Refused).
	WhyRefused = "maxtext_refuses"
	// WhyPyTorch: the plan is PyTorch/XLA's (plan.FrameworkPyTorch), and
	// the compile check is MaxText's program, not the PyTorch script.
	WhyPyTorch = "pytorch_plan"
)

// OptionValue is an option of a verification's commands and its value:
// Arg as one argument, Value quoted for a POSIX shell.
type OptionValue struct {
	Option plan.Option
	Value  string
	Arg    string
}

// word is option o with value arg, quoted where a shell needs it.
func word(o plan.Option, arg string) OptionValue { return OptionValue{o, ShellWord(arg), arg} }

// options are the commands' options, as arguments and as shell text: the
// job's, then other, the caller's further options of the job as it
// spells them (one argument each), then the layout's, each spelt by
// spell (the front end's words for an option).
func (v Verification) options(spell func(plan.Option) string, other []string) (args []string, line string) {
	var b strings.Builder
	write := func(ovs []OptionValue) {
		for _, ov := range ovs {
			args = append(args, spell(ov.Option), ov.Arg)
			fmt.Fprintf(&b, " %s %s", spell(ov.Option), ov.Value)
		}
	}
	write(v.Job)
	for _, a := range other {
		args = append(args, a)
		b.WriteString(" " + ShellWord(a))
	}
	write(v.Layout)
	return args, b.String()
}

// Verify is plan p's Verification: model is how the caller names the
// model (a spec's file), or empty for the plan's model's name. A layout
// that does not fit has none: export writes no config of it.
func Verify(p plan.Plan, model string) Verification {
	if p.Request.Framework == plan.FrameworkPyTorch {
		return Verification{Why: WhyPyTorch, Unavailable: "the plan is for PyTorch/XLA (framework pytorch), and the ahead-of-time compile shardlab checks a plan with is MaxText's train_compile, another program than the PyTorch script export pytorch writes; PyTorch/XLA has no compile for a slice without its TPUs, so check the script's memory on the TPUs in a first step"}
	}
	if mem := p.Best.Estimate.Memory; !mem.Fits() {
		// export writes no config of a layout that does not fit
		return Verification{Why: WhyUnfit, Unavailable: fmt.Sprintf("the layout does not fit (%s), and export writes no config of a layout that does not fit, so there is nothing to compile; a layout that fits can be verified", mem.Shortfall())}
	}
	cfg, err := MaxText(p)
	if err != nil {
		return Verification{Why: WhyRefused, Refused: err}
	}
	if t := CompileTopology(p.Request.Multislice.Slice); !maxtext.IsCompileTopology(t) {
		return Verification{Why: WhyNoCompileTopology, Unavailable: fmt.Sprintf("MaxText has no ahead-of-time compile target for this slice: compile_topology %s is not among the names its train_compile knows (utils/accelerator_to_spec_map.py), so there is no compile to check the plan with before renting TPUs", t)}
	}
	e := p.Best.Estimate
	spec := e.Mesh.String()
	if d, err := p.Devices(); err == nil {
		spec = d.String()
	}
	// the mesh is quoted always, as a layout's parentheses need
	layout := []OptionValue{{plan.OptionMesh, "'" + spec + "'", spec}, word(plan.OptionGlobalBatch, strconv.Itoa(e.Job.GlobalBatch))}
	switch e.Job.Remat {
	case cost.RematNone:
		// the policy the export writes for it, which the compile runs
		layout = append(layout, word(plan.OptionRemat, string(cost.RematCustom)), word(plan.OptionRematCustom, cost.NamedNone().String()))
	case cost.RematCustom:
		layout = append(layout, word(plan.OptionRemat, string(cost.RematCustom)), word(plan.OptionRematCustom, e.Job.Custom.String()))
	default:
		layout = append(layout, word(plan.OptionRemat, fmt.Sprint(e.Job.Remat)))
	}
	if g := accumulation(e); g > 1 {
		layout = append(layout, word(plan.OptionGradientAccumulationSteps, strconv.Itoa(g)))
	}
	if e.Mesh.Size(mesh.Pipeline) > 1 {
		layout = append(layout, word(plan.OptionSchedule, fmt.Sprint(e.Job.Schedule)), word(plan.OptionChunks, strconv.Itoa(max(e.Job.Chunks, 1))))
	}
	report, recomputes, err := namedReport(p)
	if err != nil {
		return Verification{Why: WhyRefused, Refused: err}
	}
	return Verification{TopologyNote: CompileTopologyNote(p.Request.Multislice.Slice), Job: jobIdentity(p, model), Layout: layout,
		ConfigFile: cfg.File(), Compile: CompileCommand(p, cfg), CompileArgs: CompileArgs(p, cfg), Report: report, Recomputes: recomputes,
		XLACapacity: e.Memory.XLACapacityPerDevice(p.Request.Multislice.Slice.Chip.JAXDevicesPerChip),
		TempScale:   e.Job.TempScale, NamedNone: e.Job.Remat == cost.RematNone}
}

// namedReport is what XLA's memory report of the exported config should
// read a JAX device: the plan's (plan.Plan.XLAReport), or for a plan
// without remat, of the policy the export writes for it (cost.NamedNone),
// which MaxText compiles.
func namedReport(p plan.Plan) (report unit.Bytes, recomputes bool, err error) {
	if j := p.Best.Estimate.Job; j.Remat == cost.RematNone {
		j.Remat, j.Custom = cost.MaxTextRemat(j.Remat, j.Custom)
		e, err := cost.EstimateStep(j, p.Best.Estimate.Mesh)
		if err != nil {
			return 0, false, err
		}
		p.Best.Estimate = e
	}
	report, recomputes = p.XLAReport()
	return report, recomputes, nil
}

// jobIdentity is the options that name plan p's job: model (or the
// plan's model's name), the accelerator type, a topology other than the
// type's default and a slice count above one.
func jobIdentity(p plan.Plan, model string) []OptionValue {
	ms := p.Request.Multislice
	if model == "" {
		model = p.Request.Model.Name
	}
	ovs := []OptionValue{word(plan.OptionModel, model), word(plan.OptionTPU, ms.Slice.AcceleratorType())}
	if def, err := hw.ParseAcceleratorType(ms.Slice.AcceleratorType()); err == nil && def.Topology != ms.Slice.Topology {
		ovs = append(ovs, word(plan.OptionTopology, ms.Slice.Topology.String()))
	}
	if ms.Slices > 1 {
		ovs = append(ovs, word(plan.OptionSlices, strconv.Itoa(ms.Slices)))
	}
	return ovs
}

// CompileTopologyNote is what a verification says of a slice whose
// topology is not its accelerator type's default (plan --topology):
// MaxText's compile_topology names the type only
// (accelerator_to_spec_map.py @e591f30c has one topology a type), so the
// compile is of the type's own topology. The HBM a device needs is the
// same program's: the mesh's shape and every device's arrays do not
// depend on the torus's shape. Empty for a default topology.
func CompileTopologyNote(s hw.Slice) string {
	def, err := hw.ParseAcceleratorType(s.AcceleratorType())
	if err != nil || def.Topology == s.Topology {
		return ""
	}
	return fmt.Sprintf("compile_topology names the accelerator type only, so MaxText's compile lays %s out on the topology its table gives the type (utils/accelerator_to_spec_map.py), not the %s given; the HBM it reports a device is the same program's (the mesh and each device's arrays do not depend on the torus's shape), the collectives' placement is not",
		s.AcceleratorType(), s.Topology)
}

// VerifyOwns reports whether Verify's flags leave option o to Verify: it
// writes the job's identity (model, TPU, topology, slices) and the
// plan's layout, batch, remat, accumulation and schedule from the plan
// itself, and the
// options that only steer plan's search (the batch limit, the framework,
// how many layouts to show, the input pipeline's example cost) do not
// describe the job that export and check plan. A caller leaves these out
// of the job flags it passes.
func VerifyOwns(o plan.Option) bool {
	switch o {
	case plan.OptionModel, plan.OptionTPU, plan.OptionTopology, plan.OptionSlices,
		plan.OptionMesh, plan.OptionGlobalBatch, plan.OptionRemat, plan.OptionRematCustom, plan.OptionGradientAccumulationSteps, plan.OptionSchedule, plan.OptionChunks,
		plan.OptionMaxGlobalBatch, plan.OptionFramework, plan.OptionTop, plan.OptionExampleCost:
		return true
	}
	return false
}
