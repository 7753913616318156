package web

import (
	"bytes"
	"context"
	"errors"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strings"

	"shardlab/budget"
	"shardlab/chart"
	"shardlab/plan"
)

// budgetLooks are the budget form's options, in the order it shows them:
// one for each field of budget.Options (its JSON key, which is also the
// option a *budget.OptionError or, for the job's, a *plan.OptionError
// names), and the pasted spec. TestBudgetFormHasEveryOption holds this
// list to budget.Options.
var budgetLooks = withModel([]look{
	{"tokens", "Job", "Tokens", "tokens to train, with k, M, B or T (1T, 500B)", nil},
	{"seq", "Job", "Sequence length", "tokens; 0: the model's", nil},
	{"max_global_batch", "Job", "Batch limit", "the convergence limit, sequences (512) or tokens (4Mitok); empty: " + plan.DefaultMaxGlobalBatch, nil},
	{"generations", "Hardware", "Generations", "TPU generations, comma-separated (" + budget.Generations() + ")", nil},
	{"slice_chips", "Hardware", "Slice sizes", "chips a slice, comma-separated (128,256)", nil},
	{"slices", "Hardware", "Slice counts", "slices joined by DCN, comma-separated (1,2,4)", nil},
	{"modes", "Price", "Capacity modes", "comma-separated: " + strings.Join(budget.Modes(), ", "), nil},
	{"region", "Price", "Region", "the Google Cloud region prices are read for", nil},
	{"deadline", "Price", "Deadline", "drop what takes longer: 30d, 36h, 90m; 0: none", nil},
	{"budget", "Price", "Budget", "drop what costs more, a commitment by its bill for whole terms: dollars with k or M (2M); 0: none", nil},
	{"spot_preemptions_per_hour", "Price", "Spot preemptions", "per slice per hour: no public rate was found, so it is yours; 0: none", nil},
	{"price", "Price", "Your prices", "GEN[:MODE]=dollars a chip-hour, comma-separated (tpu7x=5.5,tpu7x:spot=2.2), for what has no published price or to replace one; 0: none", nil},
	{"chip_watts", "Energy", "Chip power", "watts a chip for an energy and CO2e estimate, an assumption (none was found for v5e, v5p, v6e or TPU7x): 350, or v6e=300,tpu7x=600; 0: none", nil},
})

// budgetForm is the budget form over budget.Options.
var budgetForm = newOptionsForm(budgetLooks, budget.DefaultOptions, plan.DefaultModel)

// budgetQuestion is the budget page (GET /budget) and its JSON download
// (GET /download/budget.json, as shardlab budget --json prints it): the
// sweep's time and dollars per generation, slice and mode, ranked, with
// the Pareto front and the time-against-dollars chart, as shardlab budget
// --html draws them.
var budgetQuestion = question[budget.Options, budgetView]{
	optionsForm: budgetForm,
	answer:      (*Handler).budgetRun,
	name:        "budget",
	json:        func(w io.Writer, v *budgetView) error { return v.Result.WriteJSON(w) },
	status:      budgetStatus,
}

// budgetStatus is the status of the budget download v: 422 where the
// table has no row (budget.Result.Err), whose document then carries the
// error, as shardlab budget --json prints it and exits 1; else 200.
func budgetStatus(v *budgetView) int {
	if v.Result.Err() != nil {
		return http.StatusUnprocessableEntity
	}
	return http.StatusOK
}

// parseBudget checks the options with budget.ParseOptions and finds every
// option at fault (parseEach), as parseAll does for plans.
func parseBudget(o budget.Options, bad fieldErrors) (budget.Request, error) {
	return parseEach(budgetForm.form, o, bad, func(o budget.Options) (budget.Request, error) { return budget.ParseOptions(o, nil) })
}

// budgetView is a budget as the page shows it: the budget package's own
// HTML of the result (its chart, ranked table and notes).
type budgetView struct {
	Result budget.Result
	Body   template.HTML
}

// budgetRun sweeps the options under the handler's bounds: a search slot
// and the request's deadline, as run has for plans.
func (h *Handler) budgetRun(ctx context.Context, o budget.Options, bad fieldErrors) (*budgetView, error) {
	req, err := parseBudget(o, bad)
	if err != nil {
		return nil, err
	}
	var res budget.Result
	late := timeoutError{what: "the budget", ended: "was abandoned", advice: "use shardlab budget on the command line"}
	if err := h.work(ctx, late, func(<-chan struct{}) (e error) {
		res, e = budget.Sweep(req)
		return e
	}); err != nil {
		return nil, err
	}
	var svgs [][]byte
	c, err := chart.Budget(res)
	switch {
	case err == nil:
		svg, err := inlineSVG(c)
		if err != nil {
			return nil, err
		}
		svgs = append(svgs, []byte(svg))
	case !errors.Is(err, chart.ErrNotApplicable):
		return nil, err
	}
	var b bytes.Buffer
	var link func(budget.Row) string
	if len(o.ModelSpec) <= maxLinkSpecBytes {
		link = planLink(o)
	}
	// a dropped configuration's fixes are plan's options, which budget
	// does not take: the page names the plan page's fields, and the JSON
	// download, as budget --json prints it, shardlab plan's flags
	if err := res.Phrase("the plan page", label).WriteHTMLBody(&b, "", link, svgs...); err != nil {
		return nil, err
	}
	return &budgetView{Result: res.Phrase("shardlab plan", plan.Option.Flag), Body: template.HTML(b.String())}, nil
}

// maxLinkSpecBytes bounds the pasted spec a budget row's plan link
// carries: every row's link repeats it, so a larger spec leaves the rows
// without links rather than the page at megabytes.
const maxLinkSpecBytes = 2 << 10

// planLink is the address of the plan page that plans a budget row's
// configuration as the budget did (budget.Options.PlanOptions, with the
// row's accelerator type and slice count), its options that are not
// plan's defaults in the query. The plan page's best layout is the row's.
func planLink(o budget.Options) func(budget.Row) string {
	return func(row budget.Row) string {
		po := o.PlanOptions()
		po.TPU, po.Slices, po.Top = row.AcceleratorType, row.Slices, plan.DefaultOptions().Top
		v := valuesOf(po)
		q := url.Values{}
		for _, k := range []plan.Option{plan.OptionModel, optionModelSpec, plan.OptionTPU, plan.OptionSlices, plan.OptionSeq, plan.OptionMaxGlobalBatch} {
			if s, ok := v[k]; ok && s != "" {
				q.Set(string(k), s)
			}
		}
		return "/?" + q.Encode()
	}
}
