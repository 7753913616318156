package web

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"shardlab/budget"
	"shardlab/cost"
	"shardlab/hw"
	"shardlab/inference"
	"shardlab/mesh"
	"shardlab/model"
	"shardlab/plan"
	"shardlab/schedule"
)

// field is one input of the form: the plan option it sets (its query
// parameter and JSON key), its label (how the page spells the option in
// errors, reasons and warnings), its group, and its kind and default,
// which come from plan.Options: the form has a field for every option,
// of the option's type, starting at plan.DefaultOptions.
type field struct {
	Option  plan.Option
	Label   string
	Group   string
	Kind    string // text, int, float, duration, bool, select or textarea
	Default string // the option's default, as the field holds it
	Choices []choice
	List    string // the id of a datalist of suggestions
	Help    string
	// index is the field of plan.Options the option sets; nil for the
	// pasted spec, which Options keeps out of its JSON.
	index []int
}

type choice struct{ Value, Label string }

// specModel is the model choice that plans the pasted spec.
const specModel = "spec"

// optionModelSpec is the query parameter and JSON key of the pasted spec;
// plan reads the spec's bytes, which Options keeps out of its JSON.
const optionModelSpec plan.Option = "model_spec"

// The groups of the form, in order.
var groups = []string{"Job", "Hardware", "Layout", "Memory", "Advanced"}

// look is how the form shows an option: its group, label and help. What
// the option is (its key, type, default and the rules about its value) is
// plan's; TestFormHasEveryOption holds this list to plan.AllOptions.
type look struct {
	option  plan.Option
	group   string
	label   string
	help    string
	choices func() []choice
}

// withModel is a form's options ls after the two every form begins with:
// the catalog model, and the pasted spec (modelKeys.pick chooses between
// them).
func withModel(ls []look) []look {
	return append([]look{
		{plan.OptionModel, "Job", "Model", "", modelChoices},
		{optionModelSpec, "Job", "Model spec", "YAML or JSON, as shardlab model show reads it; used when Model is pasted spec", nil},
	}, ls...)
}

// meshExample is the layout the Mesh field's help shows,
// data=2(dcn),fsdp=64 as mesh spells it.
var meshExample = mesh.Spell([]mesh.Degree{{Axis: mesh.Data, ICI: 1, DCN: 2}, {Axis: mesh.FSDP, ICI: 64, DCN: 1}})

// looks are the form's options in the order it shows them.
var looks = withModel([]look{
	{plan.OptionSeq, "Job", "Sequence length", "tokens; 0: the model's", nil},
	{plan.OptionGlobalBatch, "Job", "Global batch", "sequences (512) or tokens (4Mitok); empty: the planner chooses", nil},
	{plan.OptionMaxGlobalBatch, "Job", "Batch limit", "the convergence limit, sequences or tokens; empty: " + plan.DefaultMaxGlobalBatch + ", or the global batch when larger", nil},
	{plan.OptionTPU, "Hardware", "TPU type", "an accelerator type (tpu7x-8, v5p-128) or a generation (tpu7x): the smallest footprint that runs the job", nil},
	{plan.OptionTopology, "Hardware", "Topology", "AxB or AxBxC; empty: the accelerator type's", nil},
	{plan.OptionSlices, "Hardware", "Slices", "slices joined by DCN", nil},
	{plan.OptionDCNGbps, "Hardware", "DCN bandwidth", "Gbit/s per host; 0: the catalog's", nil},
	{plan.OptionMesh, "Layout", "Mesh", "one layout to cost, e.g. " + meshExample + "; empty: search all", nil},
	{plan.OptionSchedule, "Layout", "Pipeline schedule", "", scheduleChoices},
	{plan.OptionChunks, "Layout", "Chunks", "layer chunks per pipeline device; 0: 2 for interleaved, 1 for circular", nil},
	{plan.OptionGradientAccumulationSteps, "Layout", "Gradient accumulation", "with a Mesh and a Global batch: micro-batches a step (MaxText gradient_accumulation_steps); 0: the planner chooses", nil},
	{plan.OptionFramework, "Layout", "Framework", "search only what the framework runs", frameworkChoices},
	{plan.OptionTop, "Layout", "Top layouts", "ranked layouts to show", nil},
	{plan.OptionRemat, "Memory", "Remat policy", "MaxText remat_policy", rematChoices},
	{plan.OptionRematCustom, "Memory", "Custom remat", "with Remat policy custom: tensor=device|offload|remat, comma-separated", nil},
	{plan.OptionPrecision, "Memory", "Precision", "maxtext: fp32 weights and Adam, 16 B/param; bf16: 8 B/param; zero: bf16 weights, fp32 master, 16 B/param", precisionChoices},
	{plan.OptionOptimizerOffload, "Memory", "Optimizer offload", "keep the optimizer state in host memory", nil},
	{plan.OptionParameterOffload, "Memory", "Parameter offload", "keep the parameters in host memory", nil},
	{plan.OptionHBMHeadroom, "Memory", "HBM headroom", "fraction of HBM kept free", nil},
	{plan.OptionTempScale, "Memory", "Temporaries' scale", "what a compile reported over the estimate of the temporaries; 0: none", nil},
	{plan.OptionVocabTiles, "Memory", "Vocab tiles", "chunks of the logits and loss (MaxText num_vocab_tiling)", nil},
	{plan.OptionQuantization, "Advanced", "Quantization", "the matmuls' format, at the chip's peak for it", quantizationChoices},
	{plan.OptionAttention, "Advanced", "Attention kernel", "", attentionChoices},
	{plan.OptionEfficiency, "Advanced", "Matmul efficiency", "residual efficiency after the MXU shapes; 0: the generation's calibrated value", nil},
	{plan.OptionCausalFLOPs, "Advanced", "Causal FLOPs", "MFU counts causal attention as half its FLOPs (MaxText); no: in full (PaLM)", nil},
	{plan.OptionCapacityFactor, "Advanced", "Capacity factor", "mixture of experts: rows per expert cap; 0: dropless", nil},
	{plan.OptionLoadImbalance, "Advanced", "Load imbalance", "mixture of experts, dropless: busiest expert over the mean; 0: balanced", nil},
	{plan.OptionExampleCost, "Advanced", "Example cost", "host CPU time per sequence (250ms); 0: skip the input check", nil},
})

func modelChoices() []choice {
	var out []choice
	for _, n := range model.Names() {
		out = append(out, choice{n, n})
	}
	return append(out, choice{specModel, "pasted spec (below)"})
}

func scheduleChoices() []choice {
	out := []choice{{"", "search"}}
	for _, k := range schedule.Kinds() {
		out = append(out, choice{string(k), string(k)})
	}
	return out
}

func rematChoices() []choice {
	out := []choice{{"", "search"}}
	for _, r := range cost.Remats() {
		out = append(out, choice{string(r), string(r)})
	}
	return out
}

func precisionChoices() []choice {
	var names []string
	for n := range cost.Precisions() {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []choice
	for _, n := range names {
		out = append(out, choice{n, n})
	}
	return out
}

// frameworkChoices are the frameworks the web plans for, the one list of
// them: no limit, and MaxText, which its downloads export to (the
// MaxText config and the xpk command). plan also takes pytorch
// (plan.FrameworkPyTorch) for the command line's PyTorch/XLA export,
// which the web does not have; webFramework refuses what is not here.
func frameworkChoices() []choice {
	return []choice{{"", plan.FrameworkAny}, {string(plan.FrameworkMaxText), string(plan.FrameworkMaxText)}}
}

// webFramework refuses a framework plan reads (plan.ParseFramework) that
// the form does not offer (frameworkChoices), naming the option, the
// value and the form's choices; nil for one it offers, and for a value
// plan refuses, which plan's own error names.
func webFramework(s string) *fieldError {
	f, err := plan.ParseFramework(s)
	if err != nil {
		return nil
	}
	var words []string
	for _, c := range frameworkChoices() {
		if cf, _ := plan.ParseFramework(c.Value); cf == f {
			return nil
		}
		words = append(words, c.Label)
	}
	return &fieldError{plan.OptionFramework, func(name func(plan.Option) string) string {
		return fmt.Sprintf("%s %q, want %s or empty: the web plans for the frameworks its downloads export to; plan for %s with shardlab plan on the command line", name(plan.OptionFramework), s, strings.Join(words, ", "), f)
	}}
}

func quantizationChoices() []choice {
	return []choice{{"none", "none (bf16)"}, {string(cost.QuantInt8), "int8"}, {string(cost.QuantFP8), "fp8"}}
}

func attentionChoices() []choice {
	return []choice{{"flash", "flash"}, {"dot_product", "dot_product"}}
}

// durationType is the type of plan's duration options.
var durationType = reflect.TypeFor[time.Duration]()

// planForm is the training form: its fields over the struct fields of
// plan.Options, by JSON key, with the defaults of plan.DefaultOptions.
var planForm = newOptionsForm(looks, plan.DefaultOptions, plan.DefaultModel)

// kindOf is the kind of input that holds a value of type t.
func kindOf(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t.Kind() == reflect.Int:
		return "int"
	case t.Kind() == reflect.Uint64:
		return "uint"
	case t.Kind() == reflect.Float64:
		return "float"
	case t.Kind() == reflect.Bool:
		return "bool"
	}
	return "text"
}

// label spells an option as the form labels it, or in plan's own words
// when the form has no field for it.
func label(o plan.Option) string {
	if l, ok := planForm.label(o); ok {
		return l
	}
	return o.String()
}

// formValues are the form's values as the page shows them, by option.
type formValues map[plan.Option]string

// valuesOf is the form's values for options o with the pasted spec: every
// option's field formatted as its input holds it.
func valuesOf(o plan.Options) formValues {
	v := planForm.values(reflect.ValueOf(o))
	if o.ModelSpec != nil {
		v[plan.OptionModel], v[optionModelSpec] = specModel, string(o.ModelSpec)
	}
	return v
}

// fieldError is bad input, or a search that did not answer, with the
// option it concerns ("" for none) and its text, which each front end
// spells its own way: the page by the form's labels, the API by JSON keys.
type fieldError struct {
	Option plan.Option
	phrase func(name func(plan.Option) string) string
}

func (e *fieldError) Error() string { return e.Phrase(plan.Option.String) }

// Phrase is the error's text with the options it names spelt by name.
func (e *fieldError) Phrase(name func(plan.Option) string) string { return e.phrase(name) }

// fieldErrors are every mistake found in one request, each naming its
// option: the page flags each field at fault at once.
type fieldErrors []*fieldError

func (es fieldErrors) Error() string { return es.Phrase(plan.Option.String) }

// Phrase is the errors' texts, one after another.
func (es fieldErrors) Phrase(name func(plan.Option) string) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Phrase(name)
	}
	return strings.Join(parts, "; ")
}

// has reports whether an error names option o.
func (es fieldErrors) has(o plan.Option) bool {
	for _, e := range es {
		if e.Option == o {
			return true
		}
	}
	return false
}

// textOf is an error about option o: "o: text".
func textOf(o plan.Option, format string, a ...any) *fieldError {
	msg := fmt.Sprintf(format, a...)
	return &fieldError{o, func(name func(plan.Option) string) string { return name(o) + ": " + msg }}
}

// plain is an error that names no option.
func plain(format string, a ...any) *fieldError {
	msg := fmt.Sprintf(format, a...)
	return &fieldError{"", func(func(plan.Option) string) string { return msg }}
}

// setValue sets v, of an input of kind, from its text s: decimal whole
// numbers and finite decimal numbers only (no hexadecimal, underscores,
// NaN or Inf), true or false, a Go duration.
func setValue(v reflect.Value, kind, s string) error {
	t := strings.TrimSpace(s)
	switch kind {
	case "int":
		n, err := strconv.Atoi(t)
		if err != nil {
			return fmt.Errorf("%q, want a whole number", t)
		}
		v.SetInt(int64(n))
	case "uint":
		n, err := strconv.ParseUint(t, 10, 63)
		if err != nil {
			return fmt.Errorf("%q, want a whole number from 0 to %d", t, uint64(1)<<63-1)
		}
		v.SetUint(n)
	case "float":
		f, err := strconv.ParseFloat(t, 64)
		if err != nil || strings.ContainsAny(t, "xXnNiI_") {
			return fmt.Errorf("%q, want a decimal number", t)
		}
		v.SetFloat(f)
	case "bool":
		switch strings.ToLower(t) {
		case "true":
			v.SetBool(true)
		case "false":
			v.SetBool(false)
		default:
			return fmt.Errorf("%q, want true or false", t)
		}
	case "duration":
		d, err := time.ParseDuration(t)
		if t == "0" {
			d, err = 0, nil
		}
		if err != nil {
			return fmt.Errorf("%q, want a duration such as 250ms or 2s", t)
		}
		v.SetInt(int64(d))
	default:
		if kind == "select" && v.Kind() != reflect.String {
			return fmt.Errorf("internal: select of %v", v.Kind())
		}
		v.SetString(t)
	}
	return nil
}

// parseAll checks the options with plan.ParseRequest and finds every
// option at fault (parseEach): the request when nothing is, else
// fieldErrors in the training form's order. A framework the web does not
// plan for (webFramework) is one of them, whatever address or API asks.
func parseAll(o plan.Options, bad fieldErrors) (plan.Request, error) {
	if fe := webFramework(o.Framework); fe != nil && !bad.has(plan.OptionFramework) {
		bad = append(bad, fe)
		o.Framework = plan.DefaultOptions().Framework
	}
	return parseEach(planForm.form, o, bad, plan.ParseRequest)
}

// optionError is an error that refuses one of a form's options, as the
// form shows it, and whether err is one: a *plan.OptionError (plan's
// options, and the job's options of the budget form), a
// *budget.OptionError or a *inference.FieldError. Each names the option
// by its JSON key.
func optionError(err error) (*fieldError, bool) {
	var pe *plan.OptionError
	var be *budget.OptionError
	var ie *inference.FieldError
	var opt plan.Option
	var phrase func(name func(plan.Option) string) string
	switch {
	case errors.As(err, &pe):
		opt, phrase = pe.Option, pe.Phrase
	case errors.As(err, &be):
		opt = plan.Option(be.Option)
		phrase = func(name func(plan.Option) string) string {
			return fmt.Sprintf("%s %q: want %s", name(opt), be.Value, be.Want)
		}
	case errors.As(err, &ie):
		opt = plan.Option(ie.Field)
		phrase = func(name func(plan.Option) string) string {
			return strings.TrimPrefix(ie.Phrase(func(f string) string { return name(plan.Option(f)) }), "inference: ")
		}
	default:
		return nil, false
	}
	return &fieldError{opt, phrase}, true
}

// modelKeys are what a request says of its model: the model key's value
// and the model_spec key's, each with whether it is given at all.
type modelKeys struct {
	model, spec       string
	hasModel, hasSpec bool
}

// pick is the one rule by which every address and the API choose the
// model from modelKeys: the model to plan (def when neither key is given)
// and the spec's bytes (nil for a catalog model), or the error naming the
// keys at fault, with def and no spec, so that the other options are
// checked. A model_spec given (not blank) is planned, named by its own
// name, else by model, else "custom"; model may then be left out, "spec"
// (the form's choice of the pasted spec) or any name but a catalog
// model's, which is a contradiction. A blank model_spec (what the form
// sends beside a catalog model) goes only with a catalog model, and model
// "spec", or a name the catalog lacks, only with a model_spec.
func (k modelKeys) pick(c Config, def string) (string, []byte, *fieldError) {
	_, catalog := model.Lookup(k.model)
	catalog = catalog && k.hasModel
	given := k.hasSpec && strings.TrimSpace(k.spec) != ""
	// refuse names option o in text whose verbs are model's name
	// (%[1]s), model_spec's (%[2]s), model's value (%[3]q) and the
	// catalog's names (%[4]s)
	refuse := func(o plan.Option, text string) *fieldError {
		return &fieldError{o, func(name func(plan.Option) string) string {
			return fmt.Sprintf(text, name(plan.OptionModel), name(optionModelSpec), k.model, strings.Join(model.Names(), ", "))
		}}
	}
	switch {
	case given && catalog:
		return def, nil, refuse(plan.OptionModel, `%[1]s %[3]q is a catalog model and %[2]s is given too: want one of them (beside %[2]s, %[1]s may be left out, "spec", or the spec's name)`)
	case given && len(k.spec) > c.MaxSpecBytes:
		return def, nil, textOf(optionModelSpec, "%d bytes, want at most %d", len(k.spec), c.MaxSpecBytes)
	case given && (!k.hasModel || k.model == specModel):
		return "custom", []byte(k.spec), nil
	case given:
		return k.model, []byte(k.spec), nil
	case catalog:
		return k.model, nil, nil
	case k.hasSpec:
		return def, nil, refuse(optionModelSpec, "%[2]s: empty; paste a YAML or JSON spec, or choose a catalog model")
	case k.model == specModel:
		return def, nil, refuse(optionModelSpec, `%[2]s: none given, and %[1]s %[3]q plans it; paste a YAML or JSON spec, or choose a catalog model`)
	case !k.hasModel:
		return def, nil, nil
	}
	return def, nil, refuse(plan.OptionModel, `%[1]s %[3]q: want a catalog model (%[4]s), or a YAML or JSON spec in %[2]s`)
}

// notText refuses value v of option o when it is not printable text, by
// the rule and in the words with which the CLI refuses such a flag value
// (model.NotText: a control or format character, a line separator, bytes
// that are not UTF-8); the pasted spec, whose lines model.Parse reads, is
// held to it only where the spec's own text fields are.
func notText(o plan.Option, v string) *fieldError {
	if o == optionModelSpec {
		return nil
	}
	if why := model.NotText(v); why != "" {
		return textOf(o, "%q, want printable text: %s", v, why)
	}
	return nil
}

// checkSize refuses a request whose search the server does not run: more
// chips than the limit (the CLI plans any size).
func checkSize(r plan.Request, c Config) error {
	ms := r.Multislice
	if n := ms.Chips(); n > c.MaxChips {
		opt := plan.OptionSlices
		if ms.Slices == 1 {
			opt = plan.OptionTPU
		}
		return textOf(opt, "%s has %d chips, more than this server searches (%d); plan it with shardlab plan on the command line", ms, n, c.MaxChips)
	}
	return nil
}

// tpuNames are the accelerator types the TPU field suggests.
func tpuNames() []string {
	var out []string
	for _, c := range hw.Chips() {
		out = append(out, string(c.Generation))
		out = append(out, c.AcceleratorTypes()...)
	}
	return out
}
