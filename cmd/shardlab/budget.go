package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"shardlab/budget"
	"shardlab/chart"
	"shardlab/hw"
	"shardlab/plan"
)

// budgetFlags are the options of 'shardlab budget'.
type budgetFlags struct {
	model, maxBatch, region, prices  string
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
	fs.StringVar(&f.model, "model", plan.DefaultModel, "catalog model name or a YAML/JSON spec file of at most 1 MiB")
	parsedVar(fs, &f.tokens, "tokens", "1T", parseTokens, "tokens to train: a number from 1 to 1e16 with an optional k, M, B or T (1T, 500B)")
	intVar(fs, &f.seq, "seq", 0, 0, plan.MaxSeq, "0: the model's", "sequence length in tokens")
	fs.StringVar(&f.maxBatch, "max-global-batch", plan.DefaultOptions().MaxGlobalBatch, "convergence limit on the global batch, in sequences (512) or tokens (4Mitok)")
	parsedVar(fs, &f.deadline, "deadline", "0", parseDeadline, "drop configurations that take longer: a duration from 0 (none) to 3650d, in d, h or m (30d, 36h)")
	parsedVar(fs, &f.dollars, "budget", "0", parseDollars, "drop configurations that cost more: dollars from 0 (none) to 1e12 with an optional k or M (2M, 500k)")
	parsedVar(fs, &f.region, "region", "us-central1", parseRegion, "Google Cloud region to price in (us-central1, europe-west4)")
	parsedVar(fs, &f.generations, "generations", "v5e,v5p,v6e,tpu7x", parseGenerations, "comma-separated TPU generations (v4, v5e, v5p, v6e, tpu7x)")
	parsedVar(fs, &f.modes, "modes", strings.Join(budget.Modes(), ","), parseModes, "comma-separated capacity modes ("+strings.Join(budget.Modes(), ", ")+")")
	parsedVar(fs, &f.chips, "slice-chips", "256", parseChipList, "comma-separated slice sizes in chips to search, each from 1 to 9216")
	parsedVar(fs, &f.count, "slices", "1,2,4", parseCountList, "comma-separated slice counts to search, each from 1 to 64")
	floatVar(fs, &f.spot, "spot-preemptions-per-hour", 0, floatFlag{lo: 0, hi: 100, unit: "per slice per hour"},
		"spot preemptions: no public rate was found, so it is an input (0: none)")
	fs.StringVar(&f.prices, "prices", "", "a price table (CSV, as budget/prices.csv) to use instead of the built-in one")
	intVar(fs, &f.show, "show", 0, 0, 1000, "0: the table", "print the plan behind row N of the table")
	fs.BoolVar(&f.json, "json", false, "print JSON")
	fs.StringVar(&f.html, "html", "", "also write the table with its chart of time against dollars as one self-contained HTML `file`")
	return fs, f
}

// parsedFlag is a string flag whose value a parser checks as it is set;
// the command parses it again, knowing it is valid.
type parsedFlag struct {
	p     *string
	parse func(string) error
	usage string
	err   *flagValueError
}

func (f *parsedFlag) String() string {
	if f == nil || f.p == nil {
		return ""
	}
	return *f.p
}

func (f *parsedFlag) Get() any { return *f.p }

func (f *parsedFlag) Set(s string) error {
	if err := f.parse(s); err != nil {
		f.err = &flagValueError{s, err.Error()}
		return f.err
	}
	*f.p = s
	return nil
}

func parsedVar(fs *flag.FlagSet, p *string, name, value string, parse func(string) error, usage string) {
	*p = value
	fs.Var(&parsedFlag{p: p, parse: parse, usage: usage}, name, usage)
}

// countSuffixes are the decimal multipliers --tokens and --budget take.
var countSuffixes = map[string]float64{"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}

// countRE is a decimal number, with an optional exponent: 1, 2.5, 1e12.
var countRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?([eE][0-9]+)?$`)

// count reads a decimal number with an optional suffix, one of suffixes
// (k, M, B or T: thousands, millions, billions, trillions).
func count(s, suffixes string) (float64, bool) {
	s = strings.TrimSpace(s)
	mul := 1.0
	if n := len(s); n > 0 && strings.ContainsRune(suffixes, rune(s[n-1])) {
		mul, s = countSuffixes[s[n-1:]], s[:n-1]
	}
	v, err := strconv.ParseFloat(s, 64)
	if !countRE.MatchString(s) || err != nil || math.IsInf(v*mul, 0) {
		return 0, false
	}
	return v * mul, true
}

func parseTokens(s string) error {
	if v, ok := count(s, "kKMBGT"); !ok || v < 1 || v > 1e16 {
		return errors.New("a number of tokens from 1 to 1e16, with an optional k, M, B or T (1T, 500B)")
	}
	return nil
}

func parseDollars(s string) error {
	if v, ok := count(strings.TrimPrefix(strings.TrimSpace(s), "$"), "kKM"); !ok || v < 0 || v > 1e12 {
		return errors.New("dollars from 0 (none) to 1e12, with an optional k or M (2M, 500k)")
	}
	return nil
}

func dollarsOf(s string) float64 {
	v, _ := count(strings.TrimPrefix(strings.TrimSpace(s), "$"), "kKM")
	return v
}

func tokensOf(s string) float64 { v, _ := count(s, "kKMBGT"); return v }

// deadlineOf reads 30d, 36h, 90m or 0.
func deadlineOf(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, true
	}
	per := map[string]time.Duration{"d": 24 * time.Hour, "h": time.Hour, "m": time.Minute}
	if len(s) < 2 || per[s[len(s)-1:]] == 0 {
		return 0, false
	}
	v, ok := count(s[:len(s)-1], "")
	if !ok || v < 0 || v*float64(per[s[len(s)-1:]]) > float64(3650*24*time.Hour) {
		return 0, false
	}
	return time.Duration(v * float64(per[s[len(s)-1:]])), true
}

func parseDeadline(s string) error {
	if _, ok := deadlineOf(s); !ok {
		return errors.New("a duration from 0 (none) to 3650d, in d, h or m (30d, 36h)")
	}
	return nil
}

func parseRegion(s string) error {
	if !budget.ValidRegion(strings.TrimSpace(s)) {
		return errors.New("a Google Cloud region such as us-central1 or europe-west4")
	}
	return nil
}

// list splits a comma-separated flag value, refusing empty items and
// repeats.
func list(s string) ([]string, bool) {
	var out []string
	for _, item := range strings.Split(s, ",") {
		item = strings.ToLower(strings.TrimSpace(item))
		for _, o := range out {
			if o == item {
				return nil, false
			}
		}
		if item == "" {
			return nil, false
		}
		out = append(out, item)
	}
	return out, true
}

func generationsOf(s string) ([]hw.Generation, bool) {
	items, ok := list(s)
	var out []hw.Generation
	for _, it := range items {
		c, err := hw.Lookup(it)
		if err != nil {
			return nil, false
		}
		out = append(out, c.Generation)
	}
	return out, ok
}

func parseGenerations(s string) error {
	if _, ok := generationsOf(s); !ok {
		var names []string
		for _, c := range hw.Chips() {
			names = append(names, string(c.Generation))
		}
		return errors.New("distinct generations separated by commas, from " + strings.Join(names, ", "))
	}
	return nil
}

func modesOf(s string) ([]budget.Mode, bool) {
	items, ok := list(s)
	var out []budget.Mode
	for _, it := range items {
		m, err := budget.ParseMode(it)
		if err != nil {
			return nil, false
		}
		out = append(out, m)
	}
	return out, ok
}

func parseModes(s string) error {
	if _, ok := modesOf(s); !ok {
		return errors.New("distinct capacity modes separated by commas, from " + strings.Join(budget.Modes(), ", "))
	}
	return nil
}

func intsOf(s string, hi int) ([]int, bool) {
	items, ok := list(s)
	var out []int
	for _, it := range items {
		n, okN := parseWhole[int](it)
		if !okN || n < 1 || n > hi {
			return nil, false
		}
		out = append(out, n)
	}
	return out, ok
}

func parseChipList(s string) error {
	if _, ok := intsOf(s, 9216); !ok {
		return errors.New("distinct whole numbers of chips from 1 to 9216, separated by commas (128,256)")
	}
	return nil
}

func parseCountList(s string) error {
	if _, ok := intsOf(s, 64); !ok {
		return errors.New("distinct whole numbers from 1 to 64, separated by commas (1,2,4)")
	}
	return nil
}

// request is the budget question the flags ask.
func (f *budgetFlags) request() (budget.Request, error) {
	o := plan.DefaultOptions()
	o.Model, o.Seq, o.MaxGlobalBatch, o.Top = f.model, f.seq, f.maxBatch, 1
	spec, err := specFile("--model", f.model)
	if err != nil {
		return budget.Request{}, err
	}
	o.ModelSpec = spec
	pr, err := plan.ParseRequest(o)
	if err != nil {
		return budget.Request{}, planError(err)
	}
	prices, err := f.priceTable()
	if err != nil {
		return budget.Request{}, err
	}
	r := budget.Request{Plan: pr, Tokens: tokensOf(f.tokens), Region: strings.TrimSpace(f.region), Budget: dollarsOf(f.dollars),
		SpotPreemptionsPerHour: f.spot, Prices: prices}
	r.Deadline, _ = deadlineOf(f.deadline)
	r.Generations, _ = generationsOf(f.generations)
	r.Modes, _ = modesOf(f.modes)
	r.SliceChips, _ = intsOf(f.chips, 9216)
	r.SliceCounts, _ = intsOf(f.count, 64)
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
	ps, err := budget.ParsePrices(bytes.NewReader(data))
	if err != nil {
		return nil, bad("budget: --prices %s: %s", f.prices, strings.TrimPrefix(err.Error(), "budget: "))
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
	if n := len(r.Generations) * len(r.SliceChips) * len(r.SliceCounts); n > budget.MaxConfigs {
		return bad("budget: --generations × --slice-chips × --slices make %d configurations, want at most %d", n, budget.MaxConfigs)
	}
	res, err := budget.Sweep(r)
	if err != nil {
		if errors.Is(err, budget.ErrRequest) {
			return usageError{err}
		}
		return planError(err)
	}
	if f.show > 0 {
		if f.show > len(res.Rows) {
			return bad("budget: --show %d: the table has %d rows, want 1 to %d", f.show, len(res.Rows), len(res.Rows))
		}
		row := res.Rows[f.show-1]
		if f.json {
			return row.Plan.WriteJSON(stdout, flagName)
		}
		fmt.Fprintf(stdout, "row %d: %d × %s, %s\n\n", f.show, row.Slices, row.AcceleratorType, row.Mode)
		return row.Plan.WriteText(stdout, flagName)
	}
	if f.html != "" {
		if err := writeBudgetHTML(f.html, res); err != nil {
			return err
		}
	}
	if f.json {
		err = res.WriteJSON(stdout)
	} else {
		err = res.WriteText(stdout)
	}
	if err == nil && len(res.Rows) == 0 {
		err = errors.New("budget: no priced configuration meets the limits" + nearest(res))
	}
	return err
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
	if err := res.WriteHTML(&b, svgs...); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	return nil
}

func nearest(res budget.Result) string {
	if res.Nearest == "" {
		return ""
	}
	return "; nearest: " + res.Nearest
}
