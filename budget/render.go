package budget

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"shardlab/plan"
	"shardlab/schema"
	"shardlab/unit"
)

// Days spells s seconds for a budget with three significant digits: in
// (Julian) years from two years, in days from two days, in hours from one hour, in minutes from 999.5 s
// (where seconds would take a fourth digit: 2653 s is "44.2m"), below
// that as unit.Seconds does ("641 s"). The bounds are weighed after
// rounding, so 3599 s is "1h", not "60m", and 47.97 hours "2d", not "48h".
func Days(s float64) string {
	if per, suffix := dayUnit(s); per > 0 {
		return sig3(s/per) + suffix
	}
	return unit.Seconds(s).String()
}

// dayUnit is the unit Days spells s in, as seconds a unit and its
// suffix; 0 and "" where it spells seconds as unit.Seconds does.
func dayUnit(s float64) (per float64, suffix string) {
	switch {
	case s >= 2*year || round3(s/86400) >= 731:
		return year, "y"
	case s >= 48*3600 || round3(s/3600) >= 48:
		return 86400, "d"
	case s >= 3600 || round3(s/60) >= 60:
		return 3600, "h"
	case s >= 999.5:
		return 60, "m"
	}
	return 0, ""
}

// sig3 spells v with three significant digits, without an exponent: 1234,
// 98.1, 5.26, 0.0479, and "<0.001" below that.
func sig3(v float64) string {
	switch {
	case v > 0 && v < 0.001:
		return "<0.001"
	case v >= 999.5:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// round3 is v rounded to three significant digits, as sig3 prints it.
func round3(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	return r
}

// Dollars spells an amount to the cent below $1000, else with a k, M or
// B suffix and at least three significant digits: $44.54, $1.84k, $102k,
// $16.4M, $1.23B.
func Dollars(v float64) string {
	a := math.Abs(v)
	if a < 999.995 {
		return fmt.Sprintf("$%.2f", v)
	}
	div, suffix := 1e3, "k"
	switch {
	case a >= 999.5e6:
		div, suffix = 1e9, "B"
	case a >= 999.5e3:
		div, suffix = 1e6, "M"
	}
	// decimals keep three significant digits once rounded: 9995 is $10.0k
	x := a / div
	decimals := 2
	if x >= 99.95 {
		decimals = 0
	} else if x >= 9.995 {
		decimals = 1
	}
	return fmt.Sprintf("$%.*f%s", decimals, v/div, suffix)
}

// PricesUsed lists the distinct price rows behind the result's rows, in
// the order they first appear.
func (res Result) PricesUsed() []Price {
	var out []Price
	for _, row := range res.Rows {
		if !slices.Contains(out, row.Price) {
			out = append(out, row.Price)
		}
	}
	return out
}

// WriteText writes the ranked table, the Pareto front, what is unpriced or
// dropped and why, the notes, and every price used with its source and the
// date it was read. show is how the caller's front end shows the plan
// behind row N ("--show N" on the command line), said under the table; ""
// says nothing.
func (res Result) WriteText(w io.Writer, show string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %.3g tokens, prices for %s; searched %s\n\n", res.Model, res.Tokens, res.Region, res.Searched)
	if err := res.Err(); err != nil {
		b.WriteString(res.noRows(err))
		b.WriteString("\n")
	} else {
		res.writeTable(&b)
		b.WriteString("  * on the Pareto front of time against dollars")
		if !slices.ContainsFunc(res.Rows, func(r Row) bool { return r.Pareto }) {
			b.WriteString(" (no row: every row's restarts never complete, stalled)")
		}
		if show != "" {
			fmt.Fprintf(&b, "; %s prints the plan behind row N", show)
		}
		b.WriteString("\n")
		b.WriteString("  " + termBillLegend + "\n")
		b.WriteString("  " + costLegend + "\n")
		if bands, share := res.bands(); len(bands) > 0 {
			fmt.Fprintf(&b, "  bands: time and dollars at the ends of validate's held-out %.0f %% band of the planner's error (%s)\n",
				100*share, strings.Join(bands, "; "))
		}
	}
	for _, row := range res.Rows {
		for _, w := range row.Warnings {
			fmt.Fprintf(&b, "warning: %s\n", w)
		}
	}
	for _, u := range res.Unpriced {
		fmt.Fprintf(&b, "unpriced: %s\n", u)
	}
	for _, t := range res.Timed {
		fmt.Fprintf(&b, "unpriced, timed for the deadline: %s\n", t.Line(res.Deadline))
		for _, w := range t.Warnings {
			fmt.Fprintf(&b, "warning: %s: %s\n", t.Name(), w)
		}
	}
	for _, d := range res.Dropped {
		fmt.Fprintf(&b, "dropped: %s: %s\n", d.What, d.Why)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	for _, p := range res.PricesUsed() {
		fmt.Fprintf(&b, "price: %s %s %s $%g per chip-hour, %s\n", p.Generation, p.Mode, regionWord(p.Region), p.USDPerChipHour, p.provenance())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// termBillHead heads the column of Row.CommitmentUSD, termBillLegend
// says what it is, and costLegend which column the ranking, a budget and
// the Pareto front weigh (Row.Cost), in the text and the page alike.
const (
	termBillHead   = "bill (whole terms)"
	termBillLegend = termBillHead + ": what a commitment bills, its chips for every whole term the job takes (its time to train over the term, rounded up; a warning says where that is more than one)"
	costLegend     = "the ranking, a budget and the Pareto front weigh what a row costs: a commitment's " + termBillHead + ", used or not, else its dollars"
)

// writeTable writes the ranked table, with the energy columns when the
// rows carry energy.
func (res Result) writeTable(b *strings.Builder) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	energy := res.energy()
	head := " #\tTPU\tchips\tmode\tstep\tgoodput\ttime\ttime band\tchip-hours\tdollars\tdollars band\t$/B tokens\t" + termBillHead + "\t"
	if energy {
		head += "MWh\tt CO2e\t"
	}
	fmt.Fprintln(tw, head+"Pareto\t")
	for i, row := range res.Rows {
		front, term := "", "-"
		if row.Pareto {
			front = "*"
		}
		if row.CommitmentUSD > 0 {
			term = dollars(row.CommitmentUSD)
		}
		timeBand, usdBand := "-", "-"
		if b := row.Band; b != nil {
			timeBand = daysBand(b.TimeLow, b.TimeHigh)
			usdBand = dollarsBand(b.USDLow, b.USDHigh)
		}
		fmt.Fprintf(tw, " %d\t%s\t%d\t%s\t%v\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t", i+1, slicesName(row), row.Chips, row.Mode,
			unit.Seconds(row.StepTime.Seconds()), goodput(row.Goodput), days(row.TimeToTrainS), timeBand, chipHours(row.ChipHours), dollars(row.USD), usdBand, dollars(row.USDPerBTokens), term)
		if energy {
			mwh, co2 := row.Energy.columns()
			fmt.Fprintf(tw, "%s\t%s\t", mwh, co2)
		}
		fmt.Fprintf(tw, "%s\t\n", front)
	}
	tw.Flush()
}

// provenance says where a price comes from: the date it was read and its
// source, or that the user gave it.
func (p Price) provenance() string {
	if p.Given {
		return UserSource + " (not a published price)"
	}
	return "read " + p.Read + " from " + p.Source
}

// energy reports whether the rows carry energy estimates.
func (res Result) energy() bool {
	return slices.ContainsFunc(res.Rows, func(row Row) bool { return row.Energy != nil })
}

// columns spells a row's energy in MWh and its emissions in tonnes of
// CO2e, "-" for what it lacks.
func (e *RowEnergy) columns() (mwh, co2 string) {
	if e == nil {
		return "-", "-"
	}
	return sig3(e.KWh / 1000), tonnes(e.KgCO2e)
}

// bands names the distinct bands behind the rows, with their errors, and
// the share of held-out rows a band holds.
func (res Result) bands() (names []string, share float64) {
	for _, row := range res.Rows {
		if b := row.Band; b != nil {
			s := fmt.Sprintf("%s, %d rows: %+.1f %% to %+.1f %%", b.Runs, b.Rows, 100*b.LowError, 100*b.HighError)
			if !slices.Contains(names, s) {
				names = append(names, s)
			}
			share = b.Share
		}
	}
	return names, share
}

func slicesName(row Row) string {
	if row.Slices == 1 {
		return row.AcceleratorType
	}
	return fmt.Sprintf("%d × %s", row.Slices, row.AcceleratorType)
}

func regionWord(r string) string {
	if r == AnyRegion {
		return "(no region named)"
	}
	return "in " + r
}

// WriteJSON writes the result as JSON; durations are in seconds and money
// in dollars, as the keys say. A result without rows leads with why
// (Err, phrased as the result is) under "error", and "fixes" (none), as
// shardlab's JSON error documents do.
func (res Result) WriteJSON(w io.Writer) error {
	out := struct {
		*errorJSON
		Result
		PricesUsed []Price `json:"prices_used"`
	}{nil, res, res.PricesUsed()}
	if err := res.Err(); err != nil {
		out.errorJSON = &errorJSON{Error: err.Error(), Fixes: []string{}}
	}
	if out.Rows == nil {
		out.Rows = []Row{}
	}
	if out.Dropped == nil {
		out.Dropped = []Dropped{}
	}
	if out.Unpriced == nil {
		out.Unpriced = []string{}
	}
	return schema.Write(w, out)
}

// Phrase is the result with each dropped configuration's fixes in a front
// end's words: they change options of the planner that budget does not
// sweep (precision, offload, remat), so Why says which planner would run
// the configuration with them (planner: the CLI's plan command, the web
// UI's plan page), each option spelt by name (its flag, the page's
// label). A result not phrased says no fixes.
func (res Result) Phrase(planner string, name func(plan.Option) string) Result {
	res.Dropped = slices.Clone(res.Dropped)
	for i, d := range res.Dropped {
		if len(d.fixes) == 0 {
			continue
		}
		fixes := make([]string, len(d.fixes))
		for j, f := range d.fixes {
			fixes[j] = plan.Note{Text: f}.Phrase(name)
		}
		res.Dropped[i].Why += fmt.Sprintf("; %s would run it with options budget does not sweep: %s", planner, strings.Join(fixes, "; or "))
		res.Dropped[i].fixes = nil // phrased once
	}
	res.name = name
	return res
}

// errorJSON is the head of a result without rows, as every JSON error
// document of shardlab's leads: the error and the changes under which
// the job would run.
type errorJSON struct {
	Error string   `json:"error"`
	Fixes []string `json:"fixes"`
}

// noRows is the line the text and page say in place of the table: err's
// (Err), with what it points to said as where it is.
func (res Result) noRows(err error) string {
	var nr *NoRowsError
	if !errors.As(err, &nr) {
		return err.Error()
	}
	if !nr.Limited {
		return "no configuration is both priced and able to run the job (unpriced and dropped below)"
	}
	nr2 := *nr
	nr2.Timed = nil // the timed lines below say them
	return nr2.Phrase(res.name)
}
