package plan

import (
	"fmt"
	"io"
	"strings"

	"shardlab/cost"
	"shardlab/internal/braces"
)

// Option names a user-level setting of a planning question: a field of
// Options, by its JSON key. Errors, reasons and warnings carry the option
// they concern, and each front end spells it its own way: the CLI as its
// flag (--max-global-batch), a web form as its label. String is plan's own
// wording ("max global batch").
type Option string

// The options, one per field of Options.
const (
	OptionModel                     Option = "model"
	OptionTPU                       Option = "tpu"
	OptionTopology                  Option = "topology"
	OptionSlices                    Option = "slices"
	OptionDCNGbps                   Option = "dcn_gbps"
	OptionSeq                       Option = "seq"
	OptionGlobalBatch               Option = "global_batch"
	OptionMaxGlobalBatch            Option = "max_global_batch"
	OptionMesh                      Option = "mesh"
	OptionRemat                     Option = "remat"
	OptionRematCustom               Option = "remat_custom"
	OptionSchedule                  Option = "schedule"
	OptionChunks                    Option = "chunks"
	OptionGradientAccumulationSteps Option = "gradient_accumulation_steps"
	OptionFramework                 Option = "framework"
	OptionPrecision                 Option = "precision"
	OptionQuantization              Option = "quantization"
	OptionAttention                 Option = "attention"
	OptionOptimizerOffload          Option = "optimizer_offload"
	OptionParameterOffload          Option = "parameter_offload"
	OptionVocabTiles                Option = "vocab_tiles"
	OptionEfficiency                Option = "efficiency"
	OptionHBMHeadroom               Option = "hbm_headroom"
	OptionTempScale                 Option = "temp_scale"
	OptionCausalFLOPs               Option = "causal_flops"
	OptionCapacityFactor            Option = "capacity_factor"
	OptionLoadImbalance             Option = "load_imbalance"
	OptionTop                       Option = "top"
	OptionExampleCost               Option = "example_cost"
)

// optionWords is plan's own wording of each option, in the order of
// Options' fields.
var optionWords = [...]struct {
	o     Option
	words string
}{
	{OptionModel, "model"}, {OptionTPU, "TPU"}, {OptionTopology, "topology"}, {OptionSlices, "slices"},
	{OptionDCNGbps, "DCN Gbit/s"}, {OptionSeq, "sequence length"}, {OptionGlobalBatch, "global batch"},
	{OptionMaxGlobalBatch, "max global batch"}, {OptionMesh, "mesh"}, {OptionRemat, "remat policy"},
	{OptionRematCustom, "custom remat"}, {OptionSchedule, "pipeline schedule"}, {OptionFramework, "framework"}, {OptionChunks, "chunks"},
	{OptionGradientAccumulationSteps, "gradient accumulation steps"},
	{OptionPrecision, "precision"}, {OptionQuantization, "quantization"}, {OptionAttention, "attention"},
	{OptionOptimizerOffload, "optimizer offload"}, {OptionParameterOffload, "parameter offload"},
	{OptionVocabTiles, "vocab tiles"}, {OptionEfficiency, "efficiency"}, {OptionHBMHeadroom, "HBM headroom"}, {OptionTempScale, "temporaries' calibration"},
	{OptionCausalFLOPs, "causal FLOPs"}, {OptionCapacityFactor, "capacity factor"}, {OptionLoadImbalance, "load imbalance"}, {OptionTop, "top"}, {OptionExampleCost, "example cost"},
}

// AllOptions lists every option, in the order of Options' fields.
func AllOptions() []Option {
	out := make([]Option, len(optionWords))
	for i, w := range optionWords {
		out[i] = w.o
	}
	return out
}

// String is plan's own wording of the option: "max global batch".
func (o Option) String() string {
	for _, w := range optionWords {
		if w.o == o {
			return w.words
		}
	}
	return strings.ReplaceAll(string(o), "_", " ")
}

// Flag is the option as the command line spells it: --max-global-batch.
// The CLI's flags and the web API's JSON (which prints what plan --json
// prints) both spell options this way.
func (o Option) Flag() string { return "--" + strings.ReplaceAll(string(o), "_", "-") }

// Note is a reason or a warning of a plan. Text names options as {key}
// (the efficiency option as {efficiency}); braces of its own are doubled.
// Phrase spells the options.
type Note struct {
	// Option is the option the note concerns, or "". The text need not
	// name it.
	Option Option
	Text   string
}

// Phrase is the note's text with each option it names spelt by name, or
// by Option.String when name is nil.
func (n Note) Phrase(name func(Option) string) string { return phrase(n.Text, name) }

// String is the note in plan's own words.
func (n Note) String() string { return n.Phrase(nil) }

// note makes a note about o (or about no option, o == "") from a format
// that names options as {key}; see textf.
func note(o Option, format string, a ...any) Note { return Note{Option: o, Text: textf(format, a...)} }

// text is a text that names options as {key}, with braces of its own
// doubled; textf embeds it as it is.
type text string

// textf formats a text that names options as {key}: the braces of format
// are the text's own markup, those that the arguments print are escaped
// (doubled), so a value never reads as an option. Arguments of type text
// are embedded as they are.
func textf(format string, a ...any) string {
	args := make([]any, len(a))
	for i, v := range a {
		if t, ok := v.(text); ok {
			args[i] = string(t)
		} else {
			args[i] = literal{v}
		}
	}
	return fmt.Sprintf(format, args...)
}

// literal formats a value as fmt would, with its braces doubled.
type literal struct{ v any }

func (l literal) Format(f fmt.State, verb rune) {
	io.WriteString(f, braces.Literal(fmt.Sprintf(fmt.FormatString(f, verb), l.v)))
}

// phrase spells the options a text names as {key} with name (Option.String
// when nil), and undoubles its other braces (braces.Spell, every key).
func phrase(t string, name func(Option) string) string {
	if name == nil {
		name = Option.String
	}
	return braces.Spell(t, func(k string) string { return name(Option(k)) }, nil)
}

// ReasonBatchLimit rejects a layout whose smallest global batch, one
// sequence per data and fsdp shard and micro-batch, is above the max
// global batch. It names the option as {max_global_batch}.
const ReasonBatchLimit cost.Reason = "needs a global batch above {max_global_batch}"

// rejectedSummary says how many layouts were rejected, by reason, most
// common first, as a text that names options.
func rejectedSummary(rejected map[cost.Reason]int) text {
	parts := rejectedCounts(rejected)
	if len(parts) == 0 {
		return "no layout was tried"
	}
	return text(strings.Join(parts, ", "))
}

// NoPlanError says that no layout can run the job, on what, and why.
type NoPlanError struct {
	// On is the multislice, or the footprints, searched.
	On string
	// Rejected counts the layouts that cannot run, by reason; nil when the
	// error sums up several searches.
	Rejected map[cost.Reason]int
	// Fixes are changes to the options under which the job would run,
	// each with the layout it would get, as texts that name options.
	Fixes []string
}

// Phrase is the error's text, without the package name, with the options
// spelt by name (Option.String when nil).
func (e *NoPlanError) Phrase(name func(Option) string) string {
	s := ErrNoPlan.Error() + " on " + e.On
	if e.Rejected != nil {
		s += ": " + phrase(string(rejectedSummary(e.Rejected)), name)
	}
	if len(e.Fixes) > 0 {
		fixes := make([]string, len(e.Fixes))
		for i, f := range e.Fixes {
			fixes[i] = phrase(f, name)
		}
		s += "; it would run with " + strings.Join(fixes, "; or ")
	}
	return s
}

func (e *NoPlanError) Error() string { return "plan: " + e.Phrase(nil) }

func (e *NoPlanError) Unwrap() error { return ErrNoPlan }

// firstReason is the most common reason of a NoPlanError with its count,
// as a text that names options.
func firstReason(e *NoPlanError) text {
	if parts := rejectedCounts(e.Rejected); len(parts) > 0 {
		return text(parts[0])
	}
	return "no layout was tried"
}
