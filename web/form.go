package web

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/model"
	"shardlab/plan"
)

// field is one input of the form: the plan option it sets (its query
// parameter and JSON key), its label (how the page spells the option in
// errors, reasons and warnings), and its kind.
type field struct {
	Option  plan.Option
	Label   string
	Kind    string // text, number, select or textarea
	Choices []choice
	List    string // the id of a datalist of suggestions
	Help    string
}

type choice struct{ Value, Label string }

// specModel is the model choice that plans the pasted spec.
const specModel = "spec"

// optionModelSpec is the query parameter and JSON key of the pasted spec;
// plan reads the spec's bytes, which Options keeps out of its JSON.
const optionModelSpec plan.Option = "model_spec"

// fields are the form's inputs, in order.
func fields() []field {
	models := []choice{}
	for _, n := range model.Names() {
		models = append(models, choice{n, n})
	}
	models = append(models, choice{specModel, "pasted spec (below)"})
	remats := []choice{{"", "search"}}
	for _, r := range cost.Remats() {
		remats = append(remats, choice{string(r), string(r)})
	}
	schedules := []choice{{"", "search"}, {"gpipe", "gpipe"}, {"1f1b", "1f1b"}, {"interleaved", "interleaved"}, {"circular", "circular"}}
	return []field{
		{Option: plan.OptionModel, Label: "Model", Kind: "select", Choices: models},
		{Option: optionModelSpec, Label: "Model spec", Kind: "textarea", Help: "YAML or JSON, as shardlab model show reads it; used when Model is pasted spec"},
		{Option: plan.OptionTPU, Label: "TPU type", Kind: "text", List: "tpus", Help: "an accelerator type (tpu7x-8, v5p-128) or a generation (tpu7x)"},
		{Option: plan.OptionSlices, Label: "Slices", Kind: "number"},
		{Option: plan.OptionSeq, Label: "Sequence length", Kind: "number", Help: "tokens; 0: the model's"},
		{Option: plan.OptionGlobalBatch, Label: "Global batch", Kind: "text", Help: "sequences (512) or tokens (4Mitok); empty: the planner chooses"},
		{Option: plan.OptionMaxGlobalBatch, Label: "Batch limit", Kind: "text", Help: "the convergence limit, sequences or tokens"},
		{Option: plan.OptionRemat, Label: "Remat policy", Kind: "select", Choices: remats},
		{Option: plan.OptionPrecision, Label: "Precision", Kind: "select", Choices: []choice{{"maxtext", "maxtext"}, {"bf16", "bf16"}, {"zero", "zero"}}},
		{Option: plan.OptionSchedule, Label: "Pipeline schedule", Kind: "select", Choices: schedules},
		{Option: plan.OptionTop, Label: "Top layouts", Kind: "number"},
	}
}

// label spells an option as the form labels it, or in plan's own words
// when the form has no field for it.
func label(o plan.Option) string {
	for _, f := range fields() {
		if f.Option == o {
			return f.Label
		}
	}
	return o.String()
}

// formValues are the form's values as the page shows them, by option.
type formValues map[plan.Option]string

// valuesOf is the form's values for options o with the pasted spec.
func valuesOf(o plan.Options) formValues {
	v := formValues{
		plan.OptionModel: o.Model, plan.OptionTPU: o.TPU, plan.OptionSlices: strconv.Itoa(o.Slices),
		plan.OptionSeq: strconv.Itoa(o.Seq), plan.OptionGlobalBatch: o.GlobalBatch, plan.OptionMaxGlobalBatch: o.MaxGlobalBatch,
		plan.OptionRemat: o.Remat, plan.OptionPrecision: o.Precision, plan.OptionSchedule: o.Schedule, plan.OptionTop: strconv.Itoa(o.Top),
	}
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

// optionsFrom reads the form's query into plan options over
// plan.DefaultOptions; plan.ParseRequest then checks them. It only turns
// text into numbers: every rule about the values is plan's.
func optionsFrom(q url.Values, c Config) (plan.Options, formValues, error) {
	o := plan.DefaultOptions()
	vals := valuesOf(o)
	for _, f := range append(fields(), field{Option: optionModelSpec}) {
		if vs, ok := q[string(f.Option)]; ok && len(vs) > 0 {
			vals[f.Option] = vs[0]
		}
	}
	bad := func(opt plan.Option, format string, a ...any) error { return textOf(opt, format, a...) }
	num := func(opt plan.Option, p *int) error {
		s := strings.TrimSpace(vals[opt])
		n, err := strconv.Atoi(s)
		if err != nil {
			return bad(opt, "%q, want a whole number", s)
		}
		*p = n
		return nil
	}
	for _, f := range []struct {
		opt plan.Option
		p   *int
	}{{plan.OptionSlices, &o.Slices}, {plan.OptionSeq, &o.Seq}, {plan.OptionTop, &o.Top}} {
		if err := num(f.opt, f.p); err != nil {
			return o, vals, err
		}
	}
	o.Model, o.TPU = strings.TrimSpace(vals[plan.OptionModel]), strings.TrimSpace(vals[plan.OptionTPU])
	o.GlobalBatch, o.MaxGlobalBatch = vals[plan.OptionGlobalBatch], vals[plan.OptionMaxGlobalBatch]
	o.Remat, o.Precision, o.Schedule = vals[plan.OptionRemat], vals[plan.OptionPrecision], vals[plan.OptionSchedule]
	if o.Model == specModel {
		spec := vals[optionModelSpec]
		if err := checkSpec(spec, c); err != nil {
			return o, vals, err
		}
		o.Model, o.ModelSpec = "custom", []byte(spec)
	}
	return o, vals, nil
}

// checkSpec bounds a pasted spec.
func checkSpec(spec string, c Config) error {
	switch {
	case strings.TrimSpace(spec) == "":
		return textOf(optionModelSpec, "empty; paste a YAML or JSON spec, or choose a catalog model")
	case len(spec) > c.MaxSpecBytes:
		return textOf(optionModelSpec, "%d bytes, want at most %d", len(spec), c.MaxSpecBytes)
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
