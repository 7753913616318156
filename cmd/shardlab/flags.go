package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"shardlab/internal/accept"
	"shardlab/internal/errtext"
	"shardlab/model"
)

// Numeric flags are bounded: each one accepts only finite values inside a
// documented range, so NaN, ±Inf and values whose products overflow are
// refused while the flags are parsed, before any work. The range is part of
// the flag's usage text (-h) and of the error. Enumerated flags accept their
// values in any case.

// flagValueError is what a bounded flag's Set returns; parseFlags turns it
// into a one-line usage error naming the flag.
type flagValueError struct {
	input, want string
}

func (e *flagValueError) Error() string { return "want " + e.want }

// flagValue is what every checked flag holds: where the value goes, and the
// error of the value it last refused (failed reads it after parsing).
type flagValue[T any] struct {
	p   *T
	err *flagValueError
}

// String is the value as fmt prints it; the zero Value that -h makes
// (p nil) prints T's zero, so that -h leaves out "(default 0)".
func (v *flagValue[T]) String() string {
	if v == nil || v.p == nil {
		var zero T
		return fmt.Sprint(zero)
	}
	return fmt.Sprint(*v.p)
}

func (v *flagValue[T]) Get() any { return *v.p }

// refuse records input s as refused, with what is accepted, and returns
// that error for Set to return.
func (v *flagValue[T]) refuse(s, want string) error {
	v.err = &flagValueError{s, want}
	return v.err
}

// refused is the error of the value last refused, nil if none.
func (v *flagValue[T]) refused() *flagValueError { return v.err }

// floatFlag is a float64 flag that accepts a finite value in [lo, hi]
// (either end open), and 0 when zero says what 0 means.
type floatFlag struct {
	flagValue[float64]
	lo, hi         float64
	loOpen, hiOpen bool
	zero           string // what 0 means when it lies outside the range ("the catalog's")
	unit           string // appended to the range ("Gbit/s per host")
}

func (f *floatFlag) Set(s string) error {
	// decimal only: ParseFloat also reads Go's hexadecimal floats (0x1p-2)
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || strings.ContainsAny(s, "xX") || !f.accepts(v) {
		return f.refuse(s, f.want())
	}
	*f.p = v
	return nil
}

// rangeOf is f's range as package accept words it.
func (f *floatFlag) rangeOf() accept.Decimal {
	return accept.Decimal{Lo: f.lo, Hi: f.hi, LoOpen: f.loOpen, HiOpen: f.hiOpen, Zero: f.zero, Unit: f.unit}
}

func (f *floatFlag) accepts(v float64) bool { return f.rangeOf().Contains(v) }

func (f *floatFlag) want() string { return f.rangeOf().Want() }

// usage is the accepted range for -h, with the placeholder name in back
// quotes (flag.UnquoteUsage).
func (f *floatFlag) usage() string { return f.rangeOf().Usage() }

// intFlag is an int, int64 or uint64 flag that accepts a whole decimal
// number in [lo, hi]; note says what special values inside the range mean
// ("0: the model's").
type intFlag[T int | int64 | uint64] struct {
	flagValue[T]
	lo, hi T
	note   string
}

func (f *intFlag[T]) Set(s string) error {
	v, ok := parseWhole[T](strings.TrimSpace(s))
	if !ok || v < f.lo || v > f.hi {
		return f.refuse(s, f.want())
	}
	*f.p = v
	return nil
}

// parseWhole reads a whole number written in decimal, with an optional
// sign: no base prefix (0x10, 0o7, 0b1), no underscores (1_000), no
// fraction or exponent, as the flag package's own integers (strconv's base
// 0) would accept. ok is false too when the value does not fit in T.
func parseWhole[T int | int64 | uint64](s string) (v T, ok bool) {
	digits, neg := s, false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		digits, neg = s[1:], s[0] == '-'
	}
	u, err := strconv.ParseUint(digits, 10, 64) // base 10: digits alone
	switch {
	case err != nil:
		return 0, false
	case neg:
		if u > 1<<63 {
			return 0, false
		}
		n := -int64(u)
		v = T(n)
		return v, int64(v) == n && (v < 0 || u == 0) // v < 0: T is signed
	}
	v = T(u)
	return v, uint64(v) == u && v >= 0
}

// lowest is the range's low end, for tests.
func (f *intFlag[T]) lowest() int64 { return int64(f.lo) }

func (f *intFlag[T]) want() string { return accept.Whole[T]{Lo: f.lo, Hi: f.hi, Note: f.note}.Want() }

func (f *intFlag[T]) rangeText() string { return accept.Whole[T]{Lo: f.lo, Hi: f.hi}.Usage() }

// durationFlag is a time.Duration flag that accepts a duration in [lo, hi].
type durationFlag struct {
	flagValue[time.Duration]
	lo, hi time.Duration
	note   string
}

func (f *durationFlag) Set(s string) error {
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || v < f.lo || v > f.hi {
		return f.refuse(s, f.want())
	}
	*f.p = v
	return nil
}

func (f *durationFlag) want() string {
	return accept.Duration{Lo: f.lo, Hi: f.hi, Note: f.note}.Want()
}

func (f *durationFlag) rangeText() string { return accept.Duration{Lo: f.lo, Hi: f.hi}.Usage() }

// usageNote is the range for -h: "(a whole `number` from 0 to 10; 0: the
// default)".
func usageNote(rangeText, note string) string { return accept.UsageNote(rangeText, note) }

// choiceFlag is a string flag with enumerated values, matched in any case:
// the value is lower-cased and must be one of choices (or an alias that
// parse, the owning package's parser, accepts).
type choiceFlag struct {
	flagValue[string]
	choices []string
	parse   func(string) error // optional: accepts aliases the owner allows
}

func (f *choiceFlag) Set(s string) error {
	v := strings.ToLower(strings.TrimSpace(s))
	ok := false
	for _, c := range f.choices {
		ok = ok || v == c
	}
	if !ok && f.parse != nil {
		ok = f.parse(v) == nil
	}
	if !ok {
		return f.refuse(s, f.want())
	}
	*f.p = v
	return nil
}

func (f *choiceFlag) want() string {
	return errtext.OrList(f.choices)
}

// addrFlag is a listen address, host:port, with a numeric port.
type addrFlag struct{ flagValue[string] }

func (f *addrFlag) Set(s string) error {
	host, port, err := net.SplitHostPort(strings.TrimSpace(s))
	n, ok := parseWhole[int](port)
	if err != nil || !ok || strings.Trim(port, "0123456789") != "" || n > 65535 || !listenHost(host) {
		return f.refuse(s, f.want())
	}
	*f.p = net.JoinHostPort(host, port)
	return nil
}

func (f *addrFlag) want() string {
	return "host:port with an IP address or a host name (none: every interface) and a port from 0 to 65535 (127.0.0.1:8080, localhost:0)"
}

// listenHost reports whether host can name a local address: empty (every
// interface), an IP address (an IPv6 one may carry a %zone), or a host
// name of letters, digits and dashes (RFC 1123) whose last label is not
// all digits (RFC 3696 section 2), so that 999.999.999.999 is refused
// here rather than looked up in DNS.
func listenHost(host string) bool {
	if host == "" || net.ParseIP(host) != nil {
		return true
	}
	if ip, zone, ok := strings.Cut(host, "%"); ok && zone != "" && net.ParseIP(ip) != nil && strings.Contains(ip, ":") {
		return true
	}
	host = strings.TrimSuffix(host, ".")
	if host == "" || len(host) > 253 {
		return false
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	_, allDigits := parseWhole[uint64](labels[len(labels)-1])
	return !allDigits
}

func addrVar(fs *flag.FlagSet, p *string, name, value, usage string) {
	*p = value
	f := &addrFlag{flagValue[string]{p: p}}
	fs.Var(f, name, usage+" (an `address`: "+f.want()+")")
}

// failed is the error of the flag value that stopped parsing, if any.
func failed(v flag.Value) *flagValueError {
	if f, ok := v.(interface{ refused() *flagValueError }); ok {
		return f.refused()
	}
	return nil
}

// The constructors define a bounded flag on fs; the accepted range is
// appended to the usage text.

func floatVar(fs *flag.FlagSet, p *float64, name string, value float64, f floatFlag, usage string) {
	*p = value
	f.p = p
	fs.Var(&f, name, usage+" ("+f.usage()+")")
}

func intVar(fs *flag.FlagSet, p *int, name string, value, lo, hi int, note, usage string) {
	*p = value
	f := &intFlag[int]{flagValue: flagValue[int]{p: p}, lo: lo, hi: hi, note: note}
	fs.Var(f, name, usage+usageNote(f.rangeText(), note))
}

func int64Var(fs *flag.FlagSet, p *int64, name string, value, lo, hi int64, note, usage string) {
	*p = value
	f := &intFlag[int64]{flagValue: flagValue[int64]{p: p}, lo: lo, hi: hi, note: note}
	fs.Var(f, name, usage+usageNote(f.rangeText(), note))
}

func uint64Var(fs *flag.FlagSet, p *uint64, name string, value, lo, hi uint64, note, usage string) {
	*p = value
	f := &intFlag[uint64]{flagValue: flagValue[uint64]{p: p}, lo: lo, hi: hi, note: note}
	fs.Var(f, name, usage+usageNote(f.rangeText(), note))
}

func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value, lo, hi time.Duration, note, usage string) {
	*p = value
	f := &durationFlag{flagValue: flagValue[time.Duration]{p: p}, lo: lo, hi: hi, note: note}
	fs.Var(f, name, usage+usageNote(f.rangeText(), note))
}

func choiceVar(fs *flag.FlagSet, p *string, name, value string, choices []string, parse func(string) error, usage string) {
	*p = value
	f := &choiceFlag{flagValue: flagValue[string]{p: p}, choices: choices, parse: parse}
	fs.Var(f, name, usage+" (a `string`: "+f.want()+", in any case)")
}

// pointer-returning forms, for commands that keep their flags in locals

func newFloat(fs *flag.FlagSet, name string, value float64, f floatFlag, usage string) *float64 {
	p := new(float64)
	floatVar(fs, p, name, value, f, usage)
	return p
}

func newInt(fs *flag.FlagSet, name string, value, lo, hi int, note, usage string) *int {
	p := new(int)
	intVar(fs, p, name, value, lo, hi, note, usage)
	return p
}

func newInt64(fs *flag.FlagSet, name string, value, lo, hi int64, note, usage string) *int64 {
	p := new(int64)
	int64Var(fs, p, name, value, lo, hi, note, usage)
	return p
}

func newUint64(fs *flag.FlagSet, name string, value, lo, hi uint64, note, usage string) *uint64 {
	p := new(uint64)
	uint64Var(fs, p, name, value, lo, hi, note, usage)
	return p
}

func newDuration(fs *flag.FlagSet, name string, value, lo, hi time.Duration, note, usage string) *time.Duration {
	p := new(time.Duration)
	durationVar(fs, p, name, value, lo, hi, note, usage)
	return p
}

func newChoice(fs *flag.FlagSet, name, value string, choices []string, parse func(string) error, usage string) *string {
	p := new(string)
	choiceVar(fs, p, name, value, choices, parse, usage)
	return p
}

// guarded holds a FlagSet's flags wrapped while its command line is
// parsed: a flag given twice is refused rather than silently taking the
// last value, and so is a value that is not printable text (a NUL, an
// escape sequence, U+202E), which errors and output would print raw.
type guarded struct {
	fs   *flag.FlagSet
	orig map[string]flag.Value
	err  error // the first refusal, naming the flag
}

func guard(fs *flag.FlagSet) *guarded {
	g := &guarded{fs: fs, orig: map[string]flag.Value{}}
	fs.VisitAll(func(f *flag.Flag) {
		g.orig[f.Name] = f.Value
		o := &onceValue{Value: f.Value, g: g, name: f.Name}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			o.isBool = true
			f.Value = onceBool{o}
		} else {
			f.Value = o
		}
	})
	return g
}

// restore puts the flags' own values back, for -h and for failed.
func (g *guarded) restore() { g.fs.VisitAll(func(f *flag.Flag) { f.Value = g.orig[f.Name] }) }

// onceValue is a flag's Value that takes one printable value.
type onceValue struct {
	flag.Value
	g      *guarded
	name   string
	isBool bool
	first  *string
}

func (o *onceValue) Set(s string) error {
	var err error
	if o.first != nil && o.isBool {
		err = bad("%s: --%s given twice, want it once", o.g.fs.Name(), o.name)
	} else if o.first != nil {
		err = bad("%s: --%s given twice (%s, then %s), want it once", o.g.fs.Name(), o.name, strconv.Quote(*o.first), strconv.Quote(s))
	} else if why := model.NotText(s); why != "" {
		err = bad("%s: --%s %s, want printable text: %s", o.g.fs.Name(), o.name, strconv.Quote(s), why)
	} else if !o.isBool && strings.TrimSpace(s) == "" {
		err = bad("%s: --%s %s is empty, want %s; leave --%s out for its default", o.g.fs.Name(), o.name, strconv.Quote(s), emptyWant(o.name, o.Value), o.name)
	}
	if err != nil {
		if o.g.err == nil {
			o.g.err = err
		}
		return err
	}
	o.first = &s
	return o.Value.Set(s)
}

// acceptedText says what the plain string flags accept, by flag name (one
// name has one meaning in every command), for the error that refuses an
// empty value: an explicitly empty value took the default silently.
// Flags of the bounded kinds say it themselves (want).
var acceptedText = map[string]string{
	"model":             "a catalog model name (shardlab model list) or a YAML/JSON spec file",
	"tpu":               "an accelerator type (v5p-128) or a generation (v5p)",
	"topology":          "a slice topology AxB or AxBxC (4x4x8)",
	"mesh":              "a layout of axis=degree pairs, e.g. " + meshExample,
	"global-batch":      "N sequences or Ntok tokens (512, 4Mitok)",
	"max-global-batch":  "N sequences or Ntok tokens (512, 4Mitok)",
	"remat-custom":      "tensor=device|offload|remat pairs, comma-separated",
	"calibration":       "a calibration file that 'shardlab check --write-calibration' wrote",
	"compile-log":       "a compile log file",
	"write-calibration": "a file to write",
	"html":              "a file to write",
	"svg":               "a file to write",
	"png":               "a file to write",
	"trace":             "a file to write",
	"prices":            "a price table file (CSV, as budget/prices.csv)",
	"hf-model":          "a Hugging Face repository id owner/name or a path",
	"length-mix":        "fixed, uniform:A-B or a histogram file",
	"array":             "an array size ROWSxCOLS (128x128)",
	"checkpoint":        "a directory to write checkpoints to",
	"data":              "a text file or a directory of .go/.txt/.md files",
	"fail-link":         "two device numbers A-B (3-4)",
	"plan":              "a file that 'shardlab plan --json' wrote",
	"cluster":           "a GKE cluster name",
	"workload":          "a workload name",
	"docker-image":      "a container image",
	"base-docker-image": "a container image",
	"reservation":       "a reservation name, or projects/PROJECT/reservations/NAME",
	"tokens":            "a number of tokens from 1 to 1e16 with an optional k, M, B or T (1T, 500B)",
}

// emptyWant is what flag name, holding v, accepts: v's own range where it
// has one, else acceptedText's line.
func emptyWant(name string, v flag.Value) string {
	switch v := v.(type) {
	case interface{ want() string }:
		return v.want()
	case *parsedFlag:
		return v.usage
	}
	if w, ok := acceptedText[name]; ok {
		return w
	}
	return "a value"
}

// onceBool is onceValue for a boolean flag, which takes no value.
type onceBool struct{ *onceValue }

func (onceBool) IsBoolFlag() bool { return true }

// helpText is a command's usage, asked for with -h, --help or 'shardlab
// help CMD': run prints it on stdout and exits 0. It is flag.ErrHelp.
type helpText string

func (h helpText) Error() string        { return string(h) }
func (h helpText) Is(target error) bool { return target == flag.ErrHelp }

// parseFlags parses a subcommand's flags: -h gives the flags as helpText,
// anything wrong is a one-line usage error naming the flag, the value and
// what is accepted.
func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	g := guard(fs)
	err := fs.Parse(args)
	g.restore()
	switch {
	case err != nil && g.err != nil:
		return g.err
	case errors.Is(err, flag.ErrHelp):
		var b strings.Builder
		fmt.Fprintf(&b, "usage of shardlab %s:\n", fs.Name())
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		return helpText(b.String())
	case err != nil:
		var msg string
		fs.VisitAll(func(f *flag.Flag) {
			if e := failed(f.Value); e != nil && msg == "" {
				msg = fmt.Sprintf("%s: --%s %s, %s", fs.Name(), f.Name, strconv.Quote(e.input), e.Error())
			}
		})
		if msg != "" {
			return bad("%s", msg)
		}
		return bad("%s: %v (run 'shardlab %s -h' for the flags)", fs.Name(), err, fs.Name())
	case fs.NArg() > 0:
		return bad("%s: unexpected argument %s", fs.Name(), strconv.QuoteToASCII(fs.Arg(0)))
	}
	return nil
}

// setFlags reports which flags the command line set.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// warn notes on stderr input that has no effect but does no harm.
func warn(stderr io.Writer, cmd, format string, a ...any) {
	fmt.Fprintf(stderr, "shardlab: %s: warning: %s\n", cmd, fmt.Sprintf(format, a...))
}
