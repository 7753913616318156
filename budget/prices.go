// Package budget answers "which TPU, how long, how much?" for a training
// run: for each generation, slice type, slice count and capacity mode it
// asks package plan for the layout and package capacity for the goodput,
// and prices the time to train with a cited price table (prices.csv).
package budget

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"shardlab/hw"
)

// Mode is a way of renting capacity, with its own price and terms.
type Mode string

// The capacity modes.
const (
	OnDemand Mode = "on-demand"
	Spot     Mode = "spot"
	CUD1y    Mode = "cud-1y"
	CUD3y    Mode = "cud-3y"
	// Flex is flex-start (Dynamic Workload Scheduler): a queued request
	// that runs at most a few days (modes.csv).
	Flex Mode = "flex-start"
)

var modes = []Mode{OnDemand, Spot, CUD1y, CUD3y, Flex}

// Modes names the capacity modes.
func Modes() []string {
	out := make([]string, len(modes))
	for i, m := range modes {
		out[i] = string(m)
	}
	return out
}

// ErrUnknownMode is wrapped by ParseMode's errors.
var ErrUnknownMode = errors.New("unknown capacity mode")

// ParseMode reads a capacity mode (on-demand, spot, cud-1y, cud-3y,
// flex-start; flex is flex-start).
func ParseMode(s string) (Mode, error) {
	m := Mode(strings.ToLower(strings.TrimSpace(s)))
	if m == "flex" {
		m = Flex
	}
	if !slices.Contains(modes, m) {
		return "", fmt.Errorf("budget: mode %q: %w, want one of %s", s, ErrUnknownMode, strings.Join(Modes(), ", "))
	}
	return m, nil
}

// Terms says how a mode works, from Google's docs.
func (m Mode) Terms() string {
	switch m {
	case OnDemand:
		return "no commitment and no preemption, but no guarantee of capacity (Cloud TPU consumption options)"
	case Spot:
		return "preempted at any time, no maximum runtime (TPU Spot VMs, unlike preemptible TPUs, have no 24-hour limit)"
	case CUD1y:
		return "a reservation with a 1-year committed use discount: billed for whole 1-year terms, used or not"
	case CUD3y:
		return "a reservation with a 3-year committed use discount: billed for whole 3-year terms, used or not"
	case Flex:
		return "a queued request (Dynamic Workload Scheduler) that runs up to a cited limit, then its TPU VMs are deleted; offered for the generations and zones modes.csv lists"
	}
	return ""
}

// term is a commitment's length, 0 for none: Compute Engine's commitment
// plans are TWELVE_MONTH (1 year) and THIRTY_SIX_MONTH (3 years), "the
// preset term length of the commitment" (Compute V1 API, Commitment::Plan,
// https://docs.cloud.google.com/ruby/docs/reference/google-cloud-compute-v1/latest/Google-Cloud-Compute-V1-Commitment-Plan),
// taken here as 365 and 3 × 365 days.
func (m Mode) term() time.Duration {
	switch m {
	case CUD1y:
		return 365 * 24 * time.Hour
	case CUD3y:
		return 3 * 365 * 24 * time.Hour
	}
	return 0
}

// AnyRegion is a price row's region when its source names none.
const AnyRegion = "*"

// Price is one row of the price table: what a chip-hour of a generation
// costs in a mode and region, with where the figure was read and when.
type Price struct {
	Generation hw.Generation `json:"generation"`
	Mode       Mode          `json:"mode"`
	// Region is a Google Cloud region (us-central1), or AnyRegion when the
	// source names none.
	Region         string  `json:"region"`
	USDPerChipHour float64 `json:"usd_per_chip_hour"`
	// Source is a URL or a document's title.
	Source string `json:"source"`
	// Read is the date the figure was read, YYYY-MM-DD.
	Read string `json:"read"`
	Note string `json:"note,omitempty"`
	// Given marks a price the user gave (ParseUserPrices): not a
	// published figure, and read on no date. A price table's rows never
	// are.
	Given bool `json:"given_by_user,omitempty"`
}

// Prices is a price table.
type Prices []Price

// MaxPrice is the most a chip-hour may cost in a price table, in dollars.
const MaxPrice = 1000

// priceHeader is the price table's header row, in order.
var priceHeader = []string{"generation", "mode", "region", "usd_per_chip_hour", "source", "read", "note"}

// ErrPrices is wrapped by the price parser's errors.
var ErrPrices = errors.New("invalid price table")

// ParseError is a price table row the parser refused: its line, the field,
// the value and what is accepted.
type ParseError struct {
	Line  int
	Field string
	Value string
	Want  string
}

func (e *ParseError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("budget: prices line %d: %s", e.Line, e.Want)
	}
	return fmt.Sprintf("budget: prices line %d: %s %q: want %s", e.Line, e.Field, e.Value, e.Want)
}

func (e *ParseError) Unwrap() error { return ErrPrices }

// digits reports whether s is one or more decimal digits, the figures'
// spelling: no sign, space, exponent or other base.
func digits(s string) bool { return s != "" && strings.TrimLeft(s, "0123456789") == "" }

// decimal reads a plain decimal number (digits, an optional fraction) in
// [lo, hi]: the form every figure of the package's data tables and the
// user's prices and chip power take.
func decimal(s string, lo, hi float64) (float64, error) {
	whole, frac, dot := strings.Cut(s, ".")
	v, err := strconv.ParseFloat(s, 64)
	if !digits(whole) || dot && !digits(frac) || err != nil || v < lo || v > hi {
		return 0, strconv.ErrSyntax
	}
	return v, nil
}

// parseWhole reads a whole number written in at most nine digits: the
// form the limits table's counts take (modes.csv).
func parseWhole(s string) (int, bool) {
	if !digits(s) || len(s) > 9 {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// ParsePrices reads a price table: CSV with the header
// generation,mode,region,usd_per_chip_hour,source,read,note and one row per
// generation, mode and region. Every field but note is required; a
// generation, mode and region appear at most once. The generation, mode
// and region match in any case and are kept in lower case. A price was
// read on or before today, the caller's date (the package reads no
// clock).
func ParsePrices(r io.Reader, today time.Time) (Prices, error) {
	return parsePrices(r, today.Format(time.DateOnly))
}

// parsePrices is ParsePrices with the last date a price may have been
// read on, YYYY-MM-DD.
func parsePrices(r io.Reader, today string) (Prices, error) {
	seen := map[[3]string]int{}
	return readCSV(r, priceHeader, "price", func(rec []string, line int) (Price, error) {
		p, err := parsePrice(rec, line, today)
		if err != nil {
			return Price{}, err
		}
		key := [3]string{string(p.Generation), string(p.Mode), p.Region}
		if prev, ok := seen[key]; ok {
			return Price{}, &ParseError{Line: line, Field: "region", Value: p.Region,
				Want: fmt.Sprintf("one row per generation, mode and region (line %d has %s %s %s)", prev, p.Generation, p.Mode, p.Region)}
		}
		seen[key] = line
		return p, nil
	})
}

// readCSV reads a data table of the budget package (the prices, the
// modes' limits): CSV whose first record is header and whose every record
// has its fields, each record after the header a row that parse reads
// with its line; a table with no rows is an error naming what (a "price"
// or "limit" row) it lacks.
func readCSV[T any](r io.Reader, header []string, what string, parse func(rec []string, line int) (T, error)) ([]T, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(header)
	var rows []T
	for first := true; ; first = false {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			line := 0
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line, err = pe.Line, pe.Err
			}
			return nil, &ParseError{Line: line, Want: fmt.Sprintf("%d comma-separated fields (%s): %v", len(header), strings.Join(header, ","), err)}
		}
		line, _ := cr.FieldPos(0)
		if first {
			if !slices.Equal(rec, header) {
				return nil, &ParseError{Line: line, Field: "header", Value: strings.Join(rec, ","), Want: strings.Join(header, ",")}
			}
			continue
		}
		row, err := parse(rec, line)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, &ParseError{Line: 1, Want: "a header and at least one " + what + " row"}
	}
	return rows, nil
}

// parsePrice reads one row, read on or before today (YYYY-MM-DD).
func parsePrice(rec []string, line int, today string) (Price, error) {
	refuse := func(field, value, want string) error {
		return &ParseError{Line: line, Field: field, Value: value, Want: want}
	}
	// enumerated values match in any case, as the flags' do; a name, not
	// an alias (trillium, flex)
	p := Price{Region: strings.ToLower(rec[2]), Source: rec[4], Read: rec[5], Note: rec[6]}
	c, err := hw.Lookup(rec[0])
	if err != nil || !strings.EqualFold(string(c.Generation), rec[0]) {
		var names []string
		for _, c := range hw.Chips() {
			names = append(names, string(c.Generation))
		}
		return Price{}, refuse("generation", rec[0], "one of "+strings.Join(names, ", ")+", in any case")
	}
	p.Generation = c.Generation
	if p.Mode, err = ParseMode(rec[1]); err != nil || !strings.EqualFold(string(p.Mode), rec[1]) {
		return Price{}, refuse("mode", rec[1], "one of "+strings.Join(Modes(), ", ")+", in any case")
	}
	if p.Region != AnyRegion && !KnownRegion(p.Region) {
		return Price{}, refuse("region", rec[2], `"*" when the source names no region, or `+regionsWant(rec[2]))
	}
	v, err := decimal(rec[3], 0, MaxPrice)
	if err != nil || v <= 0 {
		return Price{}, refuse("usd_per_chip_hour", rec[3], fmt.Sprintf("dollars per chip-hour, a decimal number above 0 and at most %d", MaxPrice))
	}
	p.USDPerChipHour = v
	if err := checkProvenance(refuse, "price", p.Source, p.Read, p.Note); err != nil {
		return Price{}, err
	}
	if p.Read > today { // dates as YYYY-MM-DD sort as strings
		return Price{}, refuse("read", p.Read, "the date the price was read, on or before today ("+today+")")
	}
	return p, nil
}

// checkProvenance checks a data row's source, the date it was read and its
// note, refusing a bad one by its field; what is "price" or "limit".
func checkProvenance(refuse func(field, value, want string) error, what, source, read, note string) error {
	if strings.TrimSpace(source) == "" || source != strings.TrimSpace(source) || hasControl(source) {
		return refuse("source", source, "a URL or a document's title, without leading or trailing spaces")
	}
	if d, err := time.Parse(time.DateOnly, read); err != nil || d.Format(time.DateOnly) != read {
		return refuse("read", read, "the date the "+what+" was read, YYYY-MM-DD")
	}
	if hasControl(note) || note != strings.TrimSpace(note) {
		return refuse("note", note, "text without control characters or leading or trailing spaces")
	}
	return nil
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f })
}

// WriteCSV writes the table as ParsePrices reads it.
func (ps Prices) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(priceHeader); err != nil {
		return err
	}
	for _, p := range ps {
		rec := []string{string(p.Generation), string(p.Mode), p.Region,
			strconv.FormatFloat(p.USDPerChipHour, 'f', -1, 64), p.Source, p.Read, p.Note}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Lookup is the price of a chip-hour of g in mode m in region: the row for
// that region, else the row whose source names no region.
func (ps Prices) Lookup(g hw.Generation, m Mode, region string) (Price, bool) {
	var any *Price
	for i, p := range ps {
		if p.Generation != g || p.Mode != m {
			continue
		}
		if p.Region == region {
			return p, true
		}
		if p.Region == AnyRegion {
			any = &ps[i]
		}
	}
	if any != nil {
		return *any, true
	}
	return Price{}, false
}

// regions lists the regions the table has rows for g and m in.
func (ps Prices) regions(g hw.Generation, m Mode) []string {
	var out []string
	for _, p := range ps {
		if p.Generation == g && p.Mode == m {
			out = append(out, p.Region)
		}
	}
	return out
}

//go:embed prices.csv
var pricesCSV []byte

// DefaultPrices is the table in prices.csv: every figure with its source
// and the date it was read. Modes and regions without a citable price are
// absent. The package reads no clock: TestTablesReadInThePast holds the
// table's dates before the test's today.
func DefaultPrices() (Prices, error) { return parsePrices(bytes.NewReader(pricesCSV), "9999-12-31") }

// UserSource is the source of a price the user gave (ParseUserPrices):
// not a published figure, and dated by no reading.
const UserSource = "given by the user"

// ParseUserPrices reads prices of the user's own, for generations or
// modes with no published price or to replace one: GEN[:MODE]=DOLLARS,
// comma-separated (tpu7x=5.5,tpu7x:spot=2.2), a chip-hour in region, the
// mode on-demand unless named. Nothing (or 0) is none.
func ParseUserPrices(s, region string) (Prices, error) {
	want := fmt.Sprintf("0 (none) or GEN[:MODE]=DOLLARS a chip-hour, comma-separated (tpu7x=5.5,tpu7x:spot=2.2); GEN one of the generations, MODE one of %s (on-demand when left out), dollars a decimal number above 0 and at most %d, each generation and mode once", strings.Join(Modes(), ", "), MaxPrice)
	t := strings.TrimSpace(s)
	if t == "" || t == "0" {
		return nil, nil
	}
	items, ok := list(t)
	if !ok {
		return nil, &OptionError{"price", s, want + "; the list has an empty or repeated item"}
	}
	var out Prices
	for _, it := range items {
		bad := &OptionError{"price", s, want + fmt.Sprintf("; %q is not", it)}
		key, v, found := strings.Cut(it, "=")
		name, mode, hasMode := strings.Cut(key, ":")
		p := Price{Mode: OnDemand, Region: region, Source: UserSource, Given: true}
		var err error
		if p.Generation, err = generation(name); !found || err != nil {
			return nil, bad
		}
		if hasMode {
			if p.Mode, err = ParseMode(mode); err != nil {
				return nil, bad
			}
		}
		if p.USDPerChipHour, err = decimal(strings.TrimSpace(v), 0, MaxPrice); err != nil || p.USDPerChipHour <= 0 {
			return nil, bad
		}
		if slices.ContainsFunc(out, func(q Price) bool { return q.Generation == p.Generation && q.Mode == p.Mode }) {
			return nil, bad
		}
		out = append(out, p)
	}
	return out, nil
}

// With is the table with the user's prices: each replaces the row of its
// generation, mode and region, and the others are kept.
func (ps Prices) With(user Prices) Prices {
	out := slices.DeleteFunc(slices.Clone(ps), func(p Price) bool {
		return slices.ContainsFunc(user, func(u Price) bool {
			return u.Generation == p.Generation && u.Mode == p.Mode && u.Region == p.Region
		})
	})
	return append(out, user...)
}
