package web

import (
	"reflect"

	"shardlab/export"
	"shardlab/plan"
)

// specFile is the file the page asks a pasted spec to be saved in, for
// the verify steps' --model.
const specFile = "model.yml"

// verifyView is how the page says to verify a plan before renting TPUs,
// the steps plan --verify prints (export.Verify, export.Steps): compile
// the MaxText config the page downloads ahead of time on a CPU machine,
// and hold the compiler's report to the plan's with shardlab check.
type verifyView struct {
	export.Verification
	// Steps are the steps as plan.json carries them.
	Steps export.Steps
	// Export and Check are the shardlab commands' lines, with the options
	// the form was given as flags.
	Export, Check string
	// SpecFile is where to save the pasted spec, which --model names;
	// empty for a catalog model.
	SpecFile string
	// HeldWhy, where the steps are of the layout the MaxText download
	// holds (Steps.Held) and not of the plan shown, says why the shown
	// one is not it, in the form's labels.
	HeldWhy string
	// LoadNote is what a compile that passes does not promise
	// (export.LoadNote).
	LoadNote string
}

// webCommands is how the page spells shardlab's commands in the verify
// steps: as the command line does (the user runs them there), with the
// options o sets away from their defaults as flags (formFlags).
func webCommands(o plan.Options) export.Commands {
	return export.Commands{Spell: plan.Option.Flag, Job: formFlags(o)}
}

// stepsOf is plan p's verify steps for the form's options o, and the file
// a pasted spec is to be saved in (empty for a catalog model).
func stepsOf(p plan.Plan, o plan.Options) (export.Steps, string) {
	model, file := modelOf(o)
	return specNoted(export.Verify(p, model).Steps(webCommands(o)), file), file
}

// specNoted is steps s with a note, where the commands name a pasted spec
// by the file it is to be saved in, saying so: plan.json carries no
// page to say it (review 123 #12).
func specNoted(s export.Steps, file string) export.Steps {
	if file != "" && s.Available {
		s.Notes = append(s.Notes, "save the model spec pasted into the page as "+file+": the commands' "+plan.OptionModel.Flag()+" names it")
	}
	return s
}

// heldStepsOf is stepsOf of the plan held, which the MaxText download
// holds in place of the plan shown (export.Held.Steps).
func heldStepsOf(held *export.Held, o plan.Options) (export.Steps, string) {
	model, file := modelOf(o)
	return specNoted(held.Steps(model, webCommands(o)), file), file
}

// modelOf is how the verify steps' commands name the model of options o
// (export.Verify's model: empty for a catalog model, which they name),
// and the file a pasted spec is to be saved in.
func modelOf(o plan.Options) (model, file string) {
	if len(o.ModelSpec) > 0 {
		return specFile, specFile
	}
	return "", ""
}

// viewOf is the view of steps s; specFile is where a pasted spec is to be
// saved ("" for none).
func viewOf(s export.Steps, specFile string) verifyView {
	v := verifyView{Verification: s.Of, Steps: s, SpecFile: specFile, LoadNote: export.LoadNote}
	v.Unavailable = s.Unavailable
	if s.Available {
		v.Export, v.Check = s.Commands[0].Line, s.Commands[2].Line
	}
	return v
}

// verifyOf is plan p's verify steps for the form's options o, a refusal
// phrased with the form's labels, as the page's other errors are.
func verifyOf(p plan.Plan, o plan.Options) verifyView {
	v := viewOf(stepsOf(p, o))
	if err := v.Refused; err != nil {
		v.Unavailable = export.Refusal(err, label)
	}
	return v
}

// heldVerifyOf is verifyOf for a page whose MaxText download holds
// MaxText's best in place of the plan shown: the steps of the layout
// downloaded, labelled with why the shown one is not it.
func heldVerifyOf(held *export.Held, o plan.Options) verifyView {
	v := viewOf(heldStepsOf(held, o))
	if err := v.Refused; err != nil {
		v.Unavailable = export.Refusal(err, label)
	}
	v.HeldWhy = export.Refusal(held.Refused, label)
	return v
}

// formFlags spells the options o sets away from their defaults as the
// command line's flags, in the form's order, one argument each, leaving
// out those export.Verify writes from the plan (export.VerifyOwns): a
// bool as --name=value, the one form the flag package reads it in.
func formFlags(o plan.Options) []string {
	vals, defs := planForm.values(reflect.ValueOf(o)), planForm.values(planForm.form.defaults)
	var args []string
	for _, fl := range planForm.fields {
		if fl.index == nil || export.VerifyOwns(fl.Option) || vals[fl.Option] == defs[fl.Option] {
			continue
		}
		if planForm.typ.FieldByIndex(fl.index).Type.Kind() == reflect.Bool {
			args = append(args, fl.Option.Flag()+"="+vals[fl.Option])
			continue
		}
		args = append(args, fl.Option.Flag(), vals[fl.Option])
	}
	return args
}
