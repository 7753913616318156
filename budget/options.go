package budget

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"shardlab/hw"
	"shardlab/plan"
)

// Options are a budget question as a user states it, in the words and
// units a front end takes (shardlab budget's flags, the web page's form):
// counts with their suffixes (1T tokens, 2M dollars, 30d), lists
// separated by commas. ParseOptions checks them once and turns them into
// a Request. Each JSON key is the option an OptionError names; the job's
// own options (model, seq, max_global_batch) are plan's and plan's
// OptionError names them. Start from DefaultOptions.
type Options struct {
	// Model is a catalog model name, or, with ModelSpec, the spec's name.
	Model string `json:"model"`
	// ModelSpec is a YAML or JSON model spec; the front end reads it.
	ModelSpec []byte `json:"-"`
	// Tokens is how many tokens to train (1T, 500B; k, M, B or T).
	Tokens string `json:"tokens"`
	// Seq is the sequence length in tokens; 0 takes the model's.
	Seq int `json:"seq"`
	// MaxGlobalBatch is the convergence limit on the global batch, in
	// sequences or tokens (plan.ParseBatch); "" takes
	// plan.DefaultMaxGlobalBatch.
	MaxGlobalBatch string `json:"max_global_batch"`
	// Deadline drops configurations that take longer: 30d, 36h, 90m; 0:
	// none.
	Deadline string `json:"deadline"`
	// Budget drops configurations that cost more (Row.Cost: a
	// commitment's whole-term bill): dollars with an optional k or M; 0:
	// none.
	Budget string `json:"budget"`
	// Region is the Google Cloud region prices are looked up in.
	Region string `json:"region"`
	// Generations and Modes are comma-separated lists.
	Generations string `json:"generations"`
	Modes       string `json:"modes"`
	// SliceChips and SliceCounts are the slice sizes in chips and the
	// slice counts to search, comma-separated.
	SliceChips  string `json:"slice_chips"`
	SliceCounts string `json:"slices"`
	// SpotPreemptionsPerHour is an input: no public rate was found.
	SpotPreemptionsPerHour float64 `json:"spot_preemptions_per_hour"`
	// Price is prices of the user's own, GEN[:MODE]=DOLLARS a chip-hour in
	// Region, comma-separated (ParseUserPrices); "" or 0: none.
	Price string `json:"price"`
	// ChipWatts is the chip power for an energy estimate: watts for every
	// generation, or GEN=W pairs (ParseChipWatts); "" or 0: none.
	ChipWatts string `json:"chip_watts"`
}

// The bounds of the options.
const (
	MaxTokens           = 1e16
	MaxDollars          = 1e12
	MaxDeadline         = 3650 * 24 * time.Hour
	MaxSliceChips       = 9216
	MaxSliceCounts      = 64
	MaxSpotPreemptions  = 100 // per slice per hour
	DefaultRegion       = "us-central1"
	DefaultTokens       = "1T"
	DefaultGenerations  = "v5e,v5p,v6e,tpu7x"
	defaultSliceChips   = "256"
	defaultSliceCounts  = "1,2,4"
	defaultDeadline     = "0"
	defaultBudgetDollar = "0"
)

// DefaultOptions are shardlab budget's defaults: Llama 3 8B on 1T tokens
// in us-central1, every generation and mode, one to four slices of 256
// chips.
func DefaultOptions() Options {
	return Options{Model: plan.DefaultModel, Tokens: DefaultTokens, MaxGlobalBatch: plan.DefaultOptions().MaxGlobalBatch,
		Deadline: defaultDeadline, Budget: defaultBudgetDollar, Region: DefaultRegion, Generations: DefaultGenerations,
		Modes: strings.Join(Modes(), ","), SliceChips: defaultSliceChips, SliceCounts: defaultSliceCounts, Price: "0", ChipWatts: "0"}
}

// OptionError is an option ParseOptions (or one of the option parsers)
// refuses: its JSON key, its value as given and what is accepted. It
// wraps ErrRequest.
type OptionError struct {
	Option, Value, Want string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("budget: %s %q: want %s", e.Option, e.Value, e.Want)
}

func (e *OptionError) Unwrap() error { return ErrRequest }

// ParseOptions checks o and returns the request with prices (nil: the
// built-in table). The first option at fault is an *OptionError, or
// plan's *plan.OptionError for the job's options.
func ParseOptions(o Options, prices Prices) (Request, error) {
	var r Request
	for _, parse := range []func() error{
		into(&r.Tokens, ParseTokens, o.Tokens),
		into(&r.Deadline, ParseDeadline, o.Deadline),
		into(&r.Budget, ParseDollars, o.Budget),
		into(&r.Region, ParseRegion, o.Region),
		into(&r.Generations, ParseGenerations, o.Generations),
		into(&r.Modes, ParseModes, o.Modes),
		into(&r.SliceChips, ParseSliceChips, o.SliceChips),
	} {
		if err := parse(); err != nil {
			return r, err
		}
	}
	var err error
	if _, want, ok := unknownSize(r.Generations, r.SliceChips); !ok {
		return r, &OptionError{"slice_chips", o.SliceChips, want}
	}
	if r.SliceCounts, err = ParseSliceCounts(o.SliceCounts); err != nil {
		return r, err
	}
	if s := o.SpotPreemptionsPerHour; !(s >= 0 && s <= MaxSpotPreemptions) {
		return r, &OptionError{"spot_preemptions_per_hour", strconv.FormatFloat(s, 'g', -1, 64), fmt.Sprintf("0 (none) to %d per slice per hour", MaxSpotPreemptions)}
	}
	if s := o.SpotPreemptionsPerHour; s != 0 && !slices.Contains(r.Modes, Spot) {
		return r, &OptionError{"spot_preemptions_per_hour", strconv.FormatFloat(s, 'g', -1, 64), fmt.Sprintf("0 unless the modes (%s) include %s: the rate applies to spot capacity only", o.Modes, Spot)}
	}
	r.SpotPreemptionsPerHour = o.SpotPreemptionsPerHour
	if r.ChipPower, err = ParseChipWatts(o.ChipWatts); err != nil {
		return r, err
	}
	user, err := ParseUserPrices(o.Price, r.Region)
	if err != nil {
		return r, err
	}
	if n := len(r.Generations) * len(r.SliceChips) * len(r.SliceCounts); n > MaxConfigs {
		return r, &OptionError{"generations", o.Generations, fmt.Sprintf("with slice_chips and slices at most %d configurations; these make %d", MaxConfigs, n)}
	}
	if r.Plan, err = plan.ParseRequest(o.PlanOptions()); err != nil {
		return r, err
	}
	if prices == nil {
		if prices, err = DefaultPrices(); err != nil {
			return r, err
		}
	}
	r.Prices = prices.With(user)
	return r, nil
}

// into is the step of ParseOptions that parses option s into the
// request's field dst.
func into[T any](dst *T, parse func(string) (T, error), s string) func() error {
	return func() (err error) {
		*dst, err = parse(s)
		return err
	}
}

// PlanOptions are the planner's options a budget plans each
// configuration with: plan's defaults, the job's own options (the model or
// its spec, the sequence, the batch limit), the best plan only; the sweep
// sets the TPU and the slices.
func (o Options) PlanOptions() plan.Options {
	po := plan.DefaultOptions()
	po.Model, po.ModelSpec, po.Seq, po.MaxGlobalBatch, po.Top = o.Model, o.ModelSpec, o.Seq, o.MaxGlobalBatch, 1
	return po
}

// countSuffixes are the decimal multipliers tokens and dollars take.
var countSuffixes = map[string]float64{"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}

// countRE is a decimal number, with an optional exponent: 1, 2.5, 1e12.
var countRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?([eE][0-9]+)?$`)

// count reads a decimal number with an optional suffix, one of suffixes.
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

// ParseTokens reads a number of tokens: 1 to 1e16 with an optional k, M,
// B or T (1T, 500B).
func ParseTokens(s string) (float64, error) {
	if v, ok := count(s, "kKMBGT"); ok && v >= 1 && v <= MaxTokens {
		return v, nil
	}
	return 0, &OptionError{"tokens", s, "a number of tokens from 1 to 1e16, with an optional k, M, B or T (1T, 500B)"}
}

// ParseDollars reads dollars: 0 (none) to 1e12 with an optional $ and k
// or M (2M, 500k).
func ParseDollars(s string) (float64, error) {
	if v, ok := count(strings.TrimPrefix(strings.TrimSpace(s), "$"), "kKM"); ok && v >= 0 && v <= MaxDollars {
		return v, nil
	}
	return 0, &OptionError{"budget", s, "dollars from 0 (none) to 1e12, with an optional k or M (2M, 500k)"}
}

// ParseDeadline reads 30d, 36h, 90m or 0 (none), at most 3650 days.
func ParseDeadline(s string) (time.Duration, error) {
	bad := &OptionError{"deadline", s, "a duration from 0 (none) to 3650d, in d, h or m (30d, 36h)"}
	t := strings.TrimSpace(s)
	if t == "0" {
		return 0, nil
	}
	per := map[string]time.Duration{"d": 24 * time.Hour, "h": time.Hour, "m": time.Minute}
	if len(t) < 2 || per[t[len(t)-1:]] == 0 {
		return 0, bad
	}
	v, ok := count(t[:len(t)-1], "")
	if !ok || v < 0 || v*float64(per[t[len(t)-1:]]) > float64(MaxDeadline) {
		return 0, bad
	}
	return time.Duration(v * float64(per[t[len(t)-1:]])), nil
}

// list splits a comma-separated value, refusing empty items and repeats.
func list(s string) ([]string, bool) {
	var out []string
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item) // as typed: errors echo it (review171)
		for _, o := range out {
			if strings.EqualFold(o, item) {
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

// listOf reads a list (list) whose every item parse reads.
func listOf[T any](s string, parse func(item string) (T, error)) ([]T, bool) {
	items, ok := list(s)
	if !ok {
		return nil, false
	}
	out := make([]T, 0, len(items))
	for _, it := range items {
		v, err := parse(it)
		if err != nil {
			return nil, false
		}
		out = append(out, v)
	}
	return out, true
}

// ParseGenerations reads distinct TPU generations separated by commas,
// each one of Generations.
func ParseGenerations(s string) ([]hw.Generation, error) {
	out, ok := listOf(s, generation)
	if !ok {
		return nil, &OptionError{"generations", s, "distinct generations separated by commas, from " + Generations()}
	}
	return out, nil
}

// Generations names the generations a budget takes, every one of hw's
// catalog ("v2, v3, v4, v5e, v5p, v6e, tpu7x"): the help and the form say
// this list, which they once cut to v4 and later (review 152).
func Generations() string {
	var names []string
	for _, c := range hw.Chips() {
		names = append(names, string(c.Generation))
	}
	return strings.Join(names, ", ")
}

// ParseModes reads distinct capacity modes separated by commas.
func ParseModes(s string) ([]Mode, error) {
	out, ok := listOf(s, ParseMode)
	if !ok {
		return nil, &OptionError{"modes", s, "distinct capacity modes separated by commas, from " + strings.Join(Modes(), ", ")}
	}
	return out, nil
}

// ints reads distinct whole numbers from 1 to hi separated by commas.
func ints(s string, hi int) ([]int, bool) {
	return listOf(s, func(it string) (int, error) {
		n, err := strconv.ParseUint(it, 10, 31)
		if err == nil && (n < 1 || int(n) > hi) {
			err = strconv.ErrRange
		}
		return int(n), err
	})
}

// ParseSliceChips reads the slice sizes to search, in chips.
func ParseSliceChips(s string) ([]int, error) {
	if v, ok := ints(s, MaxSliceChips); ok {
		return v, nil
	}
	return nil, &OptionError{"slice_chips", s, "distinct whole numbers of chips from 1 to 9216, separated by commas (128,256)"}
}

// ParseSliceCounts reads the slice counts to search.
func ParseSliceCounts(s string) ([]int, error) {
	if v, ok := ints(s, MaxSliceCounts); ok {
		return v, nil
	}
	return nil, &OptionError{"slices", s, "distinct whole numbers from 1 to 64, separated by commas (1,2,4)"}
}
