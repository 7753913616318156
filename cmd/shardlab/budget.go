package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"shardlab/budget"
	"shardlab/chart"
	"shardlab/internal/errtext"
	"shardlab/plan"
)

// budgetFlags are the options of 'shardlab budget'.
type budgetFlags struct {
	model, maxBatch, region, prices  string
	userPrice, chipWatts             string
	html                             string
	tokens, deadline, dollars        string
	generations, modes, chips, count string
	seq, show                        int
	spot                             float64
	json                             bool
}

// maxPriceBytes bounds a --prices file: a table is a few dozen rows.
const maxPriceBytes = 1 << 20

func newBudgetFlags() (*flag.FlagSet, *budgetFlags) {
	fs := flag.NewFlagSet("budget", flag.ContinueOnError)
	f := &budgetFlags{}
	d := budget.DefaultOptions()
	fs.StringVar(&f.model, "model", d.Model, "catalog model name or a YAML/JSON spec file of at most 1 MiB")
	parsedVar(fs, &f.tokens, "tokens", d.Tokens, parseTokens, "tokens to train: a number from 1 to 1e16 with an optional k, M, B or T (1T, 500B)")
	intVar(fs, &f.seq, "seq", 0, 0, plan.MaxSeq, "0: the model's", "sequence length in tokens")
	fs.StringVar(&f.maxBatch, "max-global-batch", d.MaxGlobalBatch, "convergence limit on the global batch, in sequences (512) or tokens (default "+plan.DefaultMaxGlobalBatch+")")
	parsedVar(fs, &f.deadline, "deadline", d.Deadline, parseDeadline, "drop configurations that take longer: a duration from 0 (none) to 3650d, in d, h or m (30d, 36h)")
	parsedVar(fs, &f.dollars, "budget", d.Budget, parseDollars, "drop configurations that cost more, a commitment by its bill for whole terms: dollars from 0 (none) to 1e12 with an optional k or M (2M, 500k)")
	parsedVar(fs, &f.region, "region", d.Region, parseRegion, "Google Cloud region to price in, one of the 44 of budget/carbon.csv (Google's region-carbon-info), in any case (us-central1, europe-west4)")
	parsedVar(fs, &f.generations, "generations", d.Generations, parseGenerations, "comma-separated TPU generations ("+budget.Generations()+")")
	parsedVar(fs, &f.modes, "modes", d.Modes, parseModes, "comma-separated capacity modes ("+strings.Join(budget.Modes(), ", ")+")")
	parsedVar(fs, &f.chips, "slice-chips", d.SliceChips, parseChipList, "comma-separated slice sizes in chips to search, each from 1 to 9216 and one a generation searched has")
	parsedVar(fs, &f.count, "slices", d.SliceCounts, parseCountList, "comma-separated slice counts to search, each from 1 to 64")
	floatVar(fs, &f.spot, "spot-preemptions-per-hour", 0, floatFlag{lo: 0, hi: 100, unit: "per slice per hour"},
		"spot preemptions: no public rate was found, so it is an input (0: none)")
	fs.StringVar(&f.prices, "prices", "", "a price table (CSV, as budget/prices.csv) to use instead of the built-in one")
	parsedVar(fs, &f.userPrice, "price", d.Price, parseUserPrice, "prices of your own, GEN[:MODE]=DOLLARS a chip-hour in --region, comma-separated (tpu7x=5.5,tpu7x:spot=2.2; on-demand when MODE is left out), for a generation or mode with no published price or to replace one (0: none)")
	parsedVar(fs, &f.chipWatts, "chip-watts", d.ChipWatts, parseChipWatts, "add an energy and CO2e estimate at this chip power, an assumption (no per-chip TPU power is published): watts for every generation (350) or GEN=W pairs (v6e=300,tpu7x=600) (0: none)")
	intVar(fs, &f.show, "show", 0, 0, 1000, "0: the table", "print the plan behind row N of the table")
	fs.BoolVar(&f.json, "json", false, "print JSON")
	fs.StringVar(&f.html, "html", "", "also write the table with its chart of time against dollars as one self-contained HTML `file`")
	return fs, f
}

// parsedFlag is a string flag whose value a parser checks as it is set;
// the command parses it again, knowing it is valid.
type parsedFlag struct {
	flagValue[string]
	parse func(string) error
	usage string
}

func (f *parsedFlag) Set(s string) error {
	if err := f.parse(s); err != nil {
		return f.refuse(s, err.Error())
	}
	*f.p = s
	return nil
}

func parsedVar(fs *flag.FlagSet, p *string, name, value string, parse func(string) error, usage string) {
	*p = value
	fs.Var(&parsedFlag{flagValue: flagValue[string]{p: p}, parse: parse, usage: usage}, name, usage)
}

// check adapts an option parser of package budget to a flag's check,
// whose error says what the flag accepts.
func check[T any](parse func(string) (T, error)) func(string) error {
	return func(s string) error {
		var oe *budget.OptionError
		if _, err := parse(s); errors.As(err, &oe) {
			return errors.New(oe.Want)
		} else if err != nil {
			return err
		}
		return nil
	}
}

var (
	parseTokens      = check(budget.ParseTokens)
	parseDollars     = check(budget.ParseDollars)
	parseDeadline    = check(budget.ParseDeadline)
	parseGenerations = check(budget.ParseGenerations)
	parseModes       = check(budget.ParseModes)
	parseChipList    = check(budget.ParseSliceChips)
	parseCountList   = check(budget.ParseSliceCounts)
	parseChipWatts   = check(budget.ParseChipWatts)
	parseRegion      = check(budget.ParseRegion)
	// the region only places the prices: any known one checks the syntax
	parseUserPrice = check(func(s string) (budget.Prices, error) { return budget.ParseUserPrices(s, budget.DefaultRegion) })
)

// request is the budget question the flags ask, through
// budget.ParseOptions as the web page's form asks it.
func (f *budgetFlags) request() (budget.Request, error) {
	o := budget.Options{Model: f.model, Tokens: f.tokens, Seq: f.seq, MaxGlobalBatch: f.maxBatch, Deadline: f.deadline, Budget: f.dollars,
		Region: f.region, Generations: f.generations, Modes: f.modes, SliceChips: f.chips, SliceCounts: f.count, SpotPreemptionsPerHour: f.spot,
		Price: f.userPrice, ChipWatts: f.chipWatts}
	spec, err := specFile("--model", f.model)
	if err != nil {
		return budget.Request{}, err
	}
	o.ModelSpec = spec
	prices, err := f.priceTable()
	if err != nil {
		return budget.Request{}, err
	}
	r, err := budget.ParseOptions(o, prices)
	r.PriceTable = f.prices // "" for the built-in table
	var oe *budget.OptionError
	switch {
	case errors.As(err, &oe):
		return r, bad("budget: --%s %q: want %s", strings.ReplaceAll(oe.Option, "_", "-"), oe.Value, oe.Want)
	case err != nil:
		return r, planError(err)
	}
	return r, nil
}

// priceTable is --prices, or the built-in table.
func (f *budgetFlags) priceTable() (budget.Prices, error) {
	if f.prices == "" {
		return budget.DefaultPrices()
	}
	data, err := readFile("--prices", f.prices, maxPriceBytes)
	if err != nil {
		return nil, err
	}
	ps, err := budget.ParsePrices(bytes.NewReader(data), time.Now())
	if err != nil {
		return nil, bad("budget: --prices %s: %s", f.prices, errtext.Detail(err))
	}
	return ps, nil
}

func runBudget(args []string, stdout io.Writer) error {
	fs, f := newBudgetFlags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if f.html != "" {
		if err := checkOutputFile("budget: --html", f.html); err != nil {
			return err
		}
	}
	r, err := f.request()
	if err != nil {
		return err
	}
	res, err := budget.Sweep(r)
	if errors.Is(err, budget.ErrRequest) {
		return usageError{err}
	} else if err != nil {
		return f.fail(stdout, planError(err))
	}
	// a dropped configuration's fixes are plan's options, which budget
	// does not take: name the command that does, with its flags
	res = res.Phrase("shardlab plan", flagName)
	if f.show > 0 && len(res.Rows) == 0 {
		return f.fail(stdout, fmt.Errorf("budget: --show %d: the table is empty, so it has no row to show: %s; run without --show for the table and what it dropped", f.show, errtext.Detail(res.Err())))
	}
	if f.show > len(res.Rows) {
		return bad("budget: --show %d: the table has %d rows, want 1 to %d", f.show, len(res.Rows), len(res.Rows))
	}
	// the page is the table's, with --show too
	if f.html != "" {
		if err := writeBudgetHTML(f.html, res); err != nil {
			return err
		}
	}
	if f.show > 0 {
		row := res.Rows[f.show-1]
		p, err := row.FullPlan()
		if err != nil {
			return f.fail(stdout, planError(err))
		}
		if f.json {
			return p.WriteJSON(stdout, flagName)
		}
		fmt.Fprintf(stdout, "row %d: %d × %s, %s\n\n", f.show, row.Slices, row.AcceleratorType, row.Mode)
		return p.WriteText(stdout, flagName)
	}
	return writeBudget(stdout, res, f.json)
}

// fail is err, written on stdout as JSON too with --json (failJSON).
func (f *budgetFlags) fail(stdout io.Writer, err error) error {
	if f.json {
		return failJSON(stdout, err)
	}
	return err
}

// writeBudget writes the table, and returns why it has no rows (exit 1,
// budget.Result.Err): with --json the document carries that error too.
func writeBudget(w io.Writer, res budget.Result, asJSON bool) error {
	var err error
	if asJSON {
		err = res.WriteJSON(w)
	} else {
		err = res.WriteText(w, "--show N")
	}
	if err != nil {
		return err
	}
	return res.Err()
}

// writeBudgetHTML writes the budget's page with its chart to path; a
// result without rows has no chart, and the page says why.
func writeBudgetHTML(path string, res budget.Result) error {
	var svgs [][]byte
	c, err := chart.Budget(res)
	switch {
	case err == nil:
		svg, err := c.SVG()
		if err != nil {
			return err
		}
		svgs = append(svgs, svg)
	case !errors.Is(err, chart.ErrNotApplicable):
		return err
	}
	var b bytes.Buffer
	if err := res.WriteHTML(&b, "shardlab budget --show N", svgs...); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	return nil
}

// tokensFlag is a count of tokens as budget --tokens reads it (1T, 500B,
// 1e12: budget.ParseTokens), for every command's --tokens.
type tokensFlag struct{ flagValue[float64] }

func (f *tokensFlag) Set(s string) error {
	v, err := budget.ParseTokens(s)
	if err != nil {
		msg := err.Error()
		var oe *budget.OptionError
		if errors.As(err, &oe) {
			msg = oe.Want
		}
		return f.refuse(s, msg)
	}
	*f.p = v
	return nil
}

// tokensVar defines a --tokens flag read as tokensFlag.
func tokensVar(fs *flag.FlagSet, p *float64, value float64, usage string) {
	*p = value
	fs.Var(&tokensFlag{flagValue[float64]{p: p}}, "tokens", usage+": a `number` from 1 to 1e16 with an optional k, M, B or T (1T, 500B)")
}
