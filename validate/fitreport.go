package validate

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/schema"
	"shardlab/unit"
)

// FitRow is one constant of the calibration: its value as Fit finds it,
// the calibration rows it is fitted on, the held-out rows of the same
// kind, and cost's median |MFU error| on each (at cost.Calibrated()). The
// rows to fit and to test are fixed in the table (calibration: true or
// false) before any fit.
type FitRow struct {
	Constant string
	// Value is the constant as the text prints it; Amount is the same
	// constant unrounded in SI units: seconds where Unit is "s" (the DCN
	// latency), else a plain number as cost.Calibration holds it (an
	// efficiency, a share, a coefficient of variation, the dropless width).
	Value  string
	Amount float64
	Unit   string
	// Fit is false for a constant Fit does not fit (the attention factor,
	// cost.Calibrated's).
	Fit     bool
	Fitted  []string // run IDs
	HeldOut []string
	// FittedError and HeldOutError are the median |error| of the
	// predicted MFU; NaN with no rows.
	FittedError, HeldOutError float64
}

// FitRows is the fit report, a row per constant (FitReport).
type FitRows []FitRow

// FitReport fits the calibration on runs (Fit) and says, for each
// constant, on which rows and how far off it is on the rest. The
// efficiencies are fitted per generation on its single-slice rows with
// the contention, which all single-slice rows share; the DCN latency and
// the slice jitter on the multislice rows; the quantized efficiency on
// the int8 and fp8 rows; the dropless width on the dropless MoE rows. The
// attention factor is not fitted.
func FitReport(runs []Run) (FitRows, error) {
	cal, err := Fit(runs)
	if err != nil {
		return nil, err
	}
	rep, err := Evaluate(runs, nil)
	if err != nil {
		return nil, err
	}
	row := func(name, value string, amount float64, in func(Run) bool) FitRow {
		fr := FitRow{Constant: name, Value: value, Amount: amount, Fit: true}
		var fitted, held []float64
		for _, r := range rep.Results {
			if !in(r.Run) {
				continue
			}
			if r.Run.Calibration {
				fr.Fitted = append(fr.Fitted, r.Run.ID)
				fitted = append(fitted, math.Abs(r.Error))
			} else {
				fr.HeldOut = append(fr.HeldOut, r.Run.ID)
				held = append(held, math.Abs(r.Error))
			}
		}
		fr.FittedError, fr.HeldOutError = medianOrNaN(fitted), medianOrNaN(held)
		return fr
	}
	of := func(k fitKind) func(Run) bool { return func(r Run) bool { return kindOf(r) == k } }
	var out []FitRow
	var gens []string
	for g := range cal.Efficiency {
		gens = append(gens, string(g))
	}
	slices.Sort(gens)
	for _, g := range gens {
		eff := cal.Efficiency[hw.Generation(g)]
		out = append(out, row("efficiency "+g, fmt.Sprintf("%.3f", eff), eff, func(r Run) bool {
			return kindOf(r) == kindSingle && r.Generation == g
		}))
	}
	latency := row("dcn latency", cal.DCNLatency.String(), cal.DCNLatency.Seconds(), of(kindMulti))
	latency.Unit = "s"
	attention := cost.Calibrated().Attention
	out = append(out,
		row("contention", fmt.Sprintf("%.2f", cal.Contention), cal.Contention, of(kindSingle)),
		row("quantized", fmt.Sprintf("%.3f", cal.Quantized), cal.Quantized, of(kindQuantized)),
		row("dropless moe", fmt.Sprintf("%.0f (per-row width)", cal.Dropless), cal.Dropless, of(kindDropless)),
		latency,
		row("slice jitter", fmt.Sprintf("%.4f", cal.SliceJitter), cal.SliceJitter, of(kindMulti)),
		FitRow{Constant: "attention", Value: fmt.Sprintf("%.2f (not fitted: cost.Calibrated's)", attention), Amount: attention,
			FittedError: math.NaN(), HeldOutError: math.NaN()},
	)
	return out, nil
}

func medianOrNaN(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return median(xs)
}

// WriteText prints the constants, then the rows each was fitted on and
// held out from (shardlab validate --fit).
func (rows FitRows) WriteText(w io.Writer) error {
	pct := func(x float64) string {
		if math.IsNaN(x) {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*x)
	}
	var b strings.Builder
	b.WriteString("The calibration, fitted on the rows marked calibration: true in validate/runs.yaml (fixed before the fit);\n")
	b.WriteString("error = median |predicted - published| / published MFU, on the rows it was fitted on and on the held-out rows of the same kind\n")
	b.WriteString("(the DCN latency and the slice jitter are fitted on each multislice row's MFU ratio to its series' one-slice row).\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "constant\tvalue\tfitted on\terror\theld out\terror")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Constant, r.Value, unit.Plural(len(r.Fitted), "row"), pct(r.FittedError), unit.Plural(len(r.HeldOut), "row"), pct(r.HeldOutError))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if len(r.Fitted)+len(r.HeldOut) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s\n  fitted on: %s\n  held out:  %s\n", r.Constant, orNone(r.Fitted), orNone(r.HeldOut))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// FitJSON is the machine-readable fit report (shardlab validate --fit
// --json).
type FitJSON struct {
	Constants []FitRowJSON `json:"constants"`
}

// FitRowJSON is one constant of the calibration: its value (Value, or
// ValueS for a time), the runs it was fitted on and held out from, and
// the median |relative error| of the predicted MFU on each, absent with
// no runs.
type FitRowJSON struct {
	Constant     string   `json:"constant"`
	Value        *float64 `json:"value,omitempty"`
	ValueS       *float64 `json:"value_s,omitempty"`
	Fit          bool     `json:"fitted"`
	FittedRuns   []string `json:"fitted_runs"`
	FittedError  *float64 `json:"fitted_median_abs_error,omitempty"`
	HeldOutRuns  []string `json:"held_out_runs"`
	HeldOutError *float64 `json:"held_out_median_abs_error,omitempty"`
}

// JSON returns the fit report's machine-readable form.
func (rows FitRows) JSON() FitJSON {
	out := FitJSON{Constants: []FitRowJSON{}}
	for _, r := range rows {
		amount := r.Amount
		row := FitRowJSON{Constant: r.Constant, Fit: r.Fit, FittedRuns: append([]string{}, r.Fitted...),
			FittedError: finite(r.FittedError), HeldOutRuns: append([]string{}, r.HeldOut...), HeldOutError: finite(r.HeldOutError)}
		if r.Unit == "s" {
			row.ValueS = &amount
		} else {
			row.Value = &amount
		}
		out.Constants = append(out.Constants, row)
	}
	return out
}

// WriteJSON writes the fit report as indented JSON.
func (rows FitRows) WriteJSON(w io.Writer) error {
	return schema.Write(w, rows.JSON())
}
