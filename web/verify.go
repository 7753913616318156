package web

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"shardlab/export"
	"shardlab/plan"
)

// specFile is the file the page asks a pasted spec to be saved in, for
// the verify steps' --model.
const specFile = "model.yml"

// verifyView is how the page says to verify a plan before renting TPUs,
// the steps plan --verify prints (export.Verify): compile the MaxText
// config the page downloads ahead of time on a CPU machine, and hold the
// compiler's report to the plan's with shardlab check.
type verifyView struct {
	export.Verification
	// Export and Check are the shardlab commands, with the options
	// the form was given as flags.
	Export, Check string
	// SpecFile is where to save the pasted spec, which --model names;
	// empty for a catalog model.
	SpecFile string
}

// verifyOf is plan p's verify steps for the form's options o.
func verifyOf(p plan.Plan, o plan.Options) verifyView {
	var v verifyView
	model := ""
	if len(o.ModelSpec) > 0 {
		model, v.SpecFile = specFile, specFile
	}
	v.Verification = export.Verify(p, model)
	if err := v.Refused; err != nil {
		text := err.Error()
		if xe := (*export.Error)(nil); errors.As(err, &xe) {
			text = xe.Phrase(label)
		}
		v.Unavailable = "MaxText cannot compile this plan as it is (" + strings.Join(strings.Fields(text), " ") + ")"
	}
	if v.Unavailable == "" {
		args := v.Args(plan.Option.Flag, formFlags(o))
		v.Export = fmt.Sprintf("shardlab export maxtext%s > %s", args, v.ConfigFile)
		v.Check = fmt.Sprintf("shardlab check --compile-log compile.log%s --write-calibration calibration.json", args)
	}
	return v
}

// formFlags spells the options o sets away from their defaults as the
// command line's flags, in the form's order, leaving out those
// export.Verify writes from the plan (export.VerifyOwns): a bool as
// --name=value, the one form the flag package reads it in.
func formFlags(o plan.Options) string {
	vals, defs := planForm.values(reflect.ValueOf(o)), planForm.values(planForm.form.defaults)
	var b strings.Builder
	for _, fl := range planForm.fields {
		if fl.index == nil || export.VerifyOwns(fl.Option) || vals[fl.Option] == defs[fl.Option] {
			continue
		}
		sep := " "
		if planForm.typ.FieldByIndex(fl.index).Type.Kind() == reflect.Bool {
			sep = "="
		}
		fmt.Fprintf(&b, " %s%s%s", fl.Option.Flag(), sep, export.ShellWord(vals[fl.Option]))
	}
	return b.String()
}
