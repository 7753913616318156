package web

import (
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"shardlab/internal/accept"
	"shardlab/internal/braces"
	"slices"
	"sort"
	"strconv"
	"strings"

	"shardlab/plan"
)

// form is a form over the fields of an options struct (inference.Options,
// budget's options): which field each option sets, and the fields with
// their defaults, in order.
type form struct {
	typ      reflect.Type
	index    map[plan.Option][]int
	fields   []field
	defaults reflect.Value
	// accepted is the range of a numeric option as its package gives it
	// (inference.Accepted), which a field's text that is no number of it
	// is refused with, as the CLI refuses the flag; nil where the package
	// gives none.
	accepted func(key string) (accept.Range, bool)
}

// newForm is the form of looks over struct type t, whose default value
// is defaults.
func newForm(t reflect.Type, looks []look, defaults reflect.Value) *form {
	f := &form{typ: t, index: map[plan.Option][]int{}, defaults: defaults}
	kinds := map[plan.Option]string{}
	for sf := range t.Fields() {
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			f.index[plan.Option(name)] = sf.Index
			kinds[plan.Option(name)] = kindOf(sf.Type)
		}
	}
	vals := f.values(defaults)
	for _, l := range looks {
		fl := field{Option: l.option, Label: l.label, Group: l.group, Help: l.help, Default: vals[l.option], index: f.index[l.option], Kind: kinds[l.option]}
		if l.choices != nil {
			fl.Choices = l.choices()
		}
		switch {
		case l.option == optionModelSpec:
			fl.Kind = "textarea"
		case fl.Choices != nil:
			fl.Kind = "select"
		case l.option == "tpu":
			fl.List = "tpus"
		}
		f.fields = append(f.fields, fl)
	}
	return f
}

// values are the form's values for options v, each field formatted as its
// input holds it.
func (f *form) values(v reflect.Value) formValues {
	out := formValues{optionModelSpec: ""}
	for opt, idx := range f.index {
		fv := v.FieldByIndex(idx)
		switch kindOf(fv.Type()) {
		case "duration":
			out[opt] = fmt.Sprint(fv.Interface())
		case "int":
			out[opt] = fmt.Sprint(fv.Int())
		case "uint":
			out[opt] = fmt.Sprint(fv.Uint())
		case "float":
			out[opt] = fmt.Sprint(fv.Float())
		case "bool":
			out[opt] = fmt.Sprint(fv.Bool())
		default:
			out[opt] = fv.String()
		}
	}
	return out
}

// read sets the options ov (a pointer to a struct of f's type, at its
// defaults) from the query: a field whose text is not printable text
// (notText) or no value of its type is an error and keeps its default.
func (f *form) read(q url.Values, ov reflect.Value) (formValues, fieldErrors) {
	vals := f.values(ov.Elem())
	var bad fieldErrors
	refused := map[plan.Option]bool{}
	for _, fl := range f.fields {
		if vs, ok := q[string(fl.Option)]; ok && len(vs) > 0 {
			vals[fl.Option] = vs[0]
			if fe := notText(fl.Option, vs[0]); fe != nil {
				bad, refused[fl.Option] = append(bad, fe), true
			}
		}
	}
	for _, fl := range f.fields {
		if fl.index == nil || refused[fl.Option] {
			continue
		}
		if err := setValue(ov.Elem().FieldByIndex(fl.index), fl.Kind, vals[fl.Option]); err != nil {
			bad = append(bad, f.notNumber(fl.Option, vals[fl.Option], err))
		}
	}
	return vals, bad
}

// notNumber is the error of text v of option o that setValue refused
// with err: in the words of the option's range where its package gives
// one (accepted), the options its note names spelt as the page names
// them, else err's.
func (f *form) notNumber(o plan.Option, v string, err error) *fieldError {
	var r accept.Range
	ok := false
	if f.accepted != nil {
		r, ok = f.accepted(string(o))
	}
	if !ok {
		return textOf(o, "%s", err)
	}
	return &fieldError{o, func(name func(plan.Option) string) string {
		spell := func(k string) string { return name(plan.Option(k)) }
		return fmt.Sprintf("%s: %q, want %s", name(o), strings.TrimSpace(v), braces.Spell(r.Want(), spell, nil))
	}}
}

// view is the form's groups with the values and each field's errors, and
// the text of the errors that concern no field.
func (f *form) view(vals formValues, fes fieldErrors, name func(plan.Option) string) ([]groupView, string) {
	byOption := map[plan.Option][]string{}
	var general []string
	for _, fe := range fes {
		if fe.Option == "" || !f.has(fe.Option) {
			general = append(general, fe.Phrase(name))
			continue
		}
		byOption[fe.Option] = append(byOption[fe.Option], fe.Phrase(name))
	}
	var groups []groupView
	for _, fl := range f.fields {
		fv := fieldView{field: fl, Key: string(fl.Option), Value: vals[fl.Option], Error: strings.Join(byOption[fl.Option], "; ")}
		if fl.Kind == "select" && !hasChoice(fl.Choices, fv.Value) {
			fv.Choices = append(append([]choice(nil), fl.Choices...), choice{fv.Value, fv.Value})
		}
		if len(groups) == 0 || groups[len(groups)-1].Name != fl.Group {
			groups = append(groups, groupView{Name: fl.Group})
		}
		g := &groups[len(groups)-1]
		g.Fields = append(g.Fields, fv)
		g.Open = g.Open || fv.Error != "" || (fl.Option != optionModelSpec && fv.Value != fl.Default)
	}
	return groups, strings.Join(general, "; ")
}

// parseEach checks options o of form f with parse and finds every option
// at fault, not only the first: each option parse refuses (an
// optionError) goes back to its default, the model with its pasted spec,
// and the rest are checked again, until they pass. Options in bad
// (refused before, and at their defaults in o) are not checked again. It
// returns what parse does when nothing is at fault, else bad and the
// errors found, in the form's order, as fieldErrors; an error that names
// no option ends the search, and is returned alone when nothing else is
// at fault.
func parseEach[O, R any](f *form, o O, bad fieldErrors, parse func(O) (R, error)) (R, error) {
	ov := reflect.ValueOf(&o).Elem()
	for range len(f.index) + 1 {
		r, err := parse(o)
		if err == nil && len(bad) == 0 {
			return r, nil
		}
		fe, ok := optionError(err)
		if err == nil || !ok {
			if len(bad) == 0 {
				return r, err
			}
			return r, f.inOrder(bad)
		}
		idx, inForm := f.index[fe.Option]
		if !inForm || bad.has(fe.Option) {
			// the option at its default is refused with the others: no
			// default clears it, report what is found
			if !bad.has(fe.Option) {
				bad = append(bad, fe)
			}
			return r, f.inOrder(bad)
		}
		bad = append(bad, fe)
		ov.FieldByIndex(idx).Set(f.defaults.FieldByIndex(idx))
		if spec := ov.FieldByName("ModelSpec"); fe.Option == plan.OptionModel && spec.IsValid() {
			spec.SetZero()
		}
	}
	var none R
	return none, f.inOrder(bad)
}

// inOrder sorts errors by their fields' order on the form (errors that
// name no field last), as the page shows them.
func (f *form) inOrder(es fieldErrors) fieldErrors {
	at := map[plan.Option]int{}
	for i, fl := range f.fields {
		at[fl.Option] = i
	}
	pos := func(o plan.Option) int {
		if i, ok := at[o]; ok {
			return i
		}
		return len(f.fields)
	}
	out := append(fieldErrors(nil), es...)
	sort.SliceStable(out, func(i, j int) bool { return pos(out[i].Option) < pos(out[j].Option) })
	return out
}

// has reports whether the form has a field for option o.
func (f *form) has(o plan.Option) bool {
	_, ok := f.label(o)
	return ok
}

// label spells option o as the form labels it, and reports whether the
// form has a field for it.
func (f *form) label(o plan.Option) (string, bool) {
	for _, fl := range f.fields {
		if fl.Option == o {
			return fl.Label, true
		}
	}
	return "", false
}

// keyLabel spells option o as form f labels it, or by its JSON key when
// f has no field for it.
func (f *form) keyLabel(o plan.Option) string {
	if l, ok := f.label(o); ok {
		return l
	}
	return string(o)
}

// optionsForm is a form over the options O of the package that checks
// them (plan.Options, inference.Options, budget.Options): its fields start
// at the package's defaults, and a pasted spec it refuses puts the model
// (O's Model, with the spec in ModelSpec) back to the package's default
// model.
type optionsForm[O any] struct {
	*form
	defaults func() O
	model    string
	// unset are the fields set to their zero (unset) where the query
	// leaves their key out, though the form shows their default: the
	// package then takes its default as not given, as the CLI's
	// flag.Visit does (withUnset).
	unset []plan.Option
}

// withUnset is f with fields keys zeroed where a query leaves them out:
// the options whose "given" the package reads from a nonzero value
// (inference's max_num_batched_tokens, whose error says "(the default)"
// only where it was not given).
func (f optionsForm[O]) withUnset(keys ...plan.Option) optionsForm[O] {
	f.unset = keys
	return f
}

// withAccepted is f refusing a numeric field's text that is no number
// in the words of the range accepted gives (form.accepted).
func (f optionsForm[O]) withAccepted(accepted func(key string) (accept.Range, bool)) optionsForm[O] {
	f.accepted = accepted
	return f
}

func newOptionsForm[O any](looks []look, defaults func() O, model string) optionsForm[O] {
	return optionsForm[O]{form: newForm(reflect.TypeFor[O](), looks, reflect.ValueOf(defaults())), defaults: defaults, model: model}
}

// options reads the form's query, raw as in the address, into options
// over the defaults, with the pasted spec. It only turns text into values
// of the options' types: every rule about the values is the package's
// (see parseEach). A field whose text is no value of its type is an error
// in the fieldErrors it returns, and keeps its default in the options, so
// that parseEach can check the others; so is what the address does not
// read: a pair that is no key=value (url.ParseQuery drops it), a key
// neither the form's nor in also, or one given twice (checkQuery).
func (f optionsForm[O]) options(raw string, c Config, also queryKeys) (O, formValues, fieldErrors) {
	q, err := url.ParseQuery(raw)
	bad := f.checkQuery(q, also)
	if err != nil {
		bad = append(fieldErrors{plain("malformed query: %v, want key=value pairs joined by &", err)}, bad...)
	}
	o := f.defaults()
	ov := reflect.ValueOf(&o)
	vals, read := f.read(q, ov)
	bad = append(bad, read...)
	for _, fl := range f.fields {
		if fl.index != nil && slices.Contains(f.unset, fl.Option) && !q.Has(string(fl.Option)) {
			v := ov.Elem().FieldByIndex(fl.index)
			v.Set(reflect.Zero(v.Type()))
		}
	}
	model := ov.Elem().FieldByName("Model").Addr().Interface().(*string)
	spec := ov.Elem().FieldByName("ModelSpec").Addr().Interface().(*[]byte)
	keys := modelKeys{model: *model, hasModel: q.Has(string(plan.OptionModel)), spec: vals[optionModelSpec], hasSpec: q.Has(string(optionModelSpec))}
	var fe *fieldError
	if *model, *spec, fe = keys.pick(c, f.model); fe != nil {
		bad = append(bad, fe)
	} else if *spec != nil {
		vals[plan.OptionModel] = specModel // the form shows the spec it planned
	}
	return o, vals, bad
}

// queryKeys are the query keys an address reads besides its form's
// fields, each with whether it may be given more than once (the page's
// pins).
type queryKeys map[string]bool

// checkQuery refuses, each by its key, what an address with form f does
// not read: a key that is neither a field of f nor in also (a misspelt
// "slicez" would leave slices at its default), and a key given more than
// once that also does not let repeat (only the first was read). The
// page's form and links send each field once.
func (f *form) checkQuery(q url.Values, also queryKeys) fieldErrors {
	var bad fieldErrors
	for _, k := range slices.Sorted(maps.Keys(q)) {
		repeat, extra := also[k]
		switch {
		case !extra && !f.has(plan.Option(k)):
			bad = append(bad, f.unknownKey(k, also))
		case len(q[k]) > 1 && !repeat:
			vs := make([]string, len(q[k]))
			for i, v := range q[k] {
				vs[i] = strconv.Quote(clip(v, 40))
			}
			msg := fmt.Sprintf("query key %q given %d times (%s), want it once", k, len(vs), strings.Join(vs, ", "))
			bad = append(bad, &fieldError{plan.Option(k), func(func(plan.Option) string) string { return msg }})
		}
	}
	return bad
}

// unknownKey refuses query key k, which neither form f nor also has,
// naming the key it misses by case or else every key the address reads.
func (f *form) unknownKey(k string, also queryKeys) *fieldError {
	var keys []string
	for _, fl := range f.fields {
		keys = append(keys, string(fl.Option))
	}
	keys = append(keys, slices.Sorted(maps.Keys(also))...)
	for _, want := range keys {
		if strings.EqualFold(want, k) {
			msg := fmt.Sprintf("unknown query key %q; keys are case-sensitive, want %q", k, want)
			return &fieldError{plan.Option(want), func(func(plan.Option) string) string { return msg }}
		}
	}
	return plain("unknown query key %q, want one of %s", k, strings.Join(keys, ", "))
}

// clip is s cut to at most n runes, with an ellipsis when cut.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func hasChoice(cs []choice, v string) bool {
	for _, c := range cs {
		if c.Value == v {
			return true
		}
	}
	return false
}
