package budget

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"shardlab/capacity"
	"shardlab/cost"
	"shardlab/hw"
	"shardlab/internal/errtext"
	"shardlab/plan"
)

// The search's bounds when a Request leaves them empty: slices of 256
// chips (v4, v5e, v5p, v6e and TPU7x all have one), 1, 2 or 4 of them.
// Each configuration is one lean plan.Search (plan.Request.BestOnly:
// planAll), at most about 0.04 s of CPU for a 70B
// model on a 256-chip slice on the development machine, the
// configurations sharing their estimators (plan.Cache) and planned side
// by side on every CPU (BenchmarkSweep: the default sweep of 4
// generations, 12 configurations, in about 0.5 s of CPU).
var (
	DefaultSliceChips  = []int{256}
	DefaultSliceCounts = []int{1, 2, 4}
)

// MaxConfigs bounds the (generation, slice, count) configurations one
// request plans, so that a sweep answers in seconds. In issue 31's whole
// sweep (BenchmarkSweepWhole: every slice size of five generations, 1 to
// 4 slices, about 880 configurations in 7 to 8 s of CPU, each a lean
// search), the costliest configurations for a 70B model take 40 to 65 ms
// of CPU (2 and 4 slices of the largest tpu7x sizes, timed one by one on
// 2026-12-07), so 64 configurations take at most about 4 s of CPU, half
// that in wall time on two cores.
const MaxConfigs = 64

// Request is a budget question.
type Request struct {
	// Plan is the job: model, sequence, batch limits and the rest. Its
	// Multislice is ignored; the sweep sets it.
	Plan plan.Request
	// Tokens is how many tokens to train.
	Tokens float64
	// Region is a Google Cloud region; prices are looked up there.
	Region      string
	Generations []hw.Generation
	Modes       []Mode
	// SliceChips and SliceCounts bound the search: slices of these many
	// chips, this many of them. Empty takes the defaults.
	SliceChips, SliceCounts []int
	// Deadline and Budget drop configurations that take longer or cost
	// more (Row.Cost: a commitment's whole-term bill); 0 keeps all.
	Deadline time.Duration
	Budget   float64 // dollars
	// SpotPreemptionsPerHour is how often a spot slice is preempted. No
	// public figure was found: it is an input, 0 unless given.
	SpotPreemptionsPerHour float64
	Prices                 Prices
	// PriceTable names Prices when they are the user's table in place of
	// the built-in one (its file), "" for the built-in table: what the
	// user's table leaves out is said to be missing from it, not to have
	// no public price (review 152).
	PriceTable string
	// Limits are the capacity modes' cited terms; nil takes modes.csv.
	Limits []Limit
	// ChipPower, when given, adds each row's energy and emissions,
	// estimates (RowEnergy) with Carbon, the regions' carbon table (nil
	// takes carbon.csv).
	ChipPower ChipPower
	Carbon    Carbon
}

// Row is one configuration in one capacity mode.
type Row struct {
	Generation      hw.Generation `json:"generation"`
	AcceleratorType string        `json:"accelerator_type"`
	Slices          int           `json:"slices"`
	Chips           int           `json:"chips"`
	Mode            Mode          `json:"mode"`
	// Layout is the planner's chosen mesh.
	Layout string `json:"layout"`
	// StepTime is the planner's step; Steps is the whole steps that train
	// Tokens (the last batch, partial or not, is a step).
	StepTime time.Duration `json:"-"`
	StepS    float64       `json:"step_time_s"`
	Steps    float64       `json:"steps"`
	// Goodput is the fraction of wall time spent on kept work
	// (capacity.ExpectInterrupted).
	Goodput float64 `json:"goodput_fraction"`
	// TimeToTrainS is the wall time in seconds: steps × step time /
	// goodput. It is a float, not a time.Duration: a legitimate question
	// (1e16 tokens on one small slice) takes thousands of years, past
	// time.Duration's 292.
	TimeToTrainS float64 `json:"time_to_train_s"`
	ChipHours    float64 `json:"chip_hours"`
	Price        Price   `json:"price"`
	USD          float64 `json:"usd"`
	// USDPerBTokens is dollars per billion tokens trained.
	USDPerBTokens float64 `json:"usd_per_billion_tokens"`
	// CommitmentTerms is how many whole terms of its commitment a
	// commitment mode's job takes: its time to train over the term,
	// rounded up (termBill); 0 in other modes.
	CommitmentTerms float64 `json:"commitment_terms,omitempty"`
	// CommitmentUSD is what a commitment mode bills: its chips for every
	// whole term the job takes (CommitmentTerms), used or not, so never
	// less than USD; 0 in other modes.
	CommitmentUSD float64 `json:"commitment_usd,omitempty"`
	// Band is the time to train and the dollars at the ends of the
	// planner's measured error band (plan.Plan.Band); nil when the plan
	// has none.
	Band *RowBand `json:"prediction_band,omitempty"`
	// Pareto is true when no other row is both faster and cheaper (Pareto,
	// by Row.Cost).
	Pareto bool `json:"pareto"`
	// Energy is the row's energy and emissions, estimates from the chip
	// power the user gave; nil when none was.
	Energy *RowEnergy `json:"energy,omitempty"`
	// Warnings are the mode's terms the row may break (flex-start's run
	// limit at the band's high end, its quota).
	Warnings []string `json:"warnings"`
	// Stalled is whether the row's interruptions come as often as a
	// restart, one step and its checkpoint take (stalled; its warning
	// says so): it stays in the table, ranked by its dollars, off the
	// Pareto front, where it finishes within the bounds budget answers
	// (neverKeeps), and is dropped where it does not.
	Stalled bool `json:"stalled"`
	// Plan is the plan behind the row, as a lean search finds it
	// (plan.Request.BestOnly): its Best, Rule and Band are the full
	// search's, its other fields partial. FullPlan searches it in full.
	Plan *plan.Plan `json:"-"`
}

// FullPlan is the row's plan as a full search finds it (plan.Search of
// its request without BestOnly): the plan `shardlab plan` prints for the
// row's configuration, with every layout ranked and every reason.
func (row Row) FullPlan() (plan.Plan, error) {
	r := row.Plan.Request
	r.BestOnly = false
	return plan.Search(r)
}

// RowBand is a row's time to train and dollars at the two ends of the
// step-time model's measured error band: validate's held-out rows of the
// plan's generation and model class (cost.StepBand, the one the plan
// carries as Plan.Band). Goodput does not depend on the step time
// (capacity.ExpectInterrupted), so time to train, chip-hours and dollars
// scale with the step time: T·(1+low error) to T·(1+high error).
type RowBand struct {
	Runs      string  `json:"runs"`
	Rows      int     `json:"held_out_rows"`
	Share     float64 `json:"share_of_held_out_rows_fraction"`
	LowError  float64 `json:"low_relative_error"`
	HighError float64 `json:"high_relative_error"`
	TimeLow   float64 `json:"low_time_to_train_s"`
	TimeHigh  float64 `json:"high_time_to_train_s"`
	USDLow    float64 `json:"low_usd"`
	USDHigh   float64 `json:"high_usd"`
}

// bandOf is the row's band from its plan's; nil when the plan has none.
func bandOf(b cost.StepBand, row Row) *RowBand {
	if b.Rows == 0 {
		return nil
	}
	rb := &RowBand{Runs: b.Runs(), Rows: b.Rows, Share: cost.BandHigh - cost.BandLow, LowError: b.Low, HighError: b.High}
	rb.TimeLow, rb.TimeHigh = b.Step(row.TimeToTrainS)
	rb.USDLow, rb.USDHigh = b.Step(row.USD)
	return rb
}

// Dropped is a configuration or row the answer leaves out, and why.
type Dropped struct {
	What string `json:"what"`
	Why  string `json:"why"`
	// fixes are changes to the planner's options under which the
	// configuration would run (plan.NoPlanError.Fixes), texts that name
	// plan options as {key}: options budget does not sweep, which Why
	// says once a front end spells them (Result.Phrase).
	fixes []string
}

// Result is the answer: the rows that meet the limits, cheapest first
// (Row.Cost), and everything left out with its reason.
type Result struct {
	Model    string  `json:"model"`
	Tokens   float64 `json:"tokens"`
	Region   string  `json:"region"`
	Searched string  `json:"searched"`
	Rows     []Row   `json:"rows"`
	// Unpriced names the generations and modes the table has no price for
	// in the region.
	Unpriced []string `json:"unpriced"`
	// Timed are the configurations of generations without a price, timed
	// where a deadline is the only limit (Timed), fastest first.
	Timed   []Timed   `json:"unpriced_rows,omitempty"`
	Dropped []Dropped `json:"dropped"`
	// Nearest, when no row meets the deadline or budget, names the row
	// that comes closest (Request.nearer) with its time and dollars, and
	// NearestRow is that row.
	Nearest    string   `json:"nearest,omitempty"`
	NearestRow *Row     `json:"nearest_row,omitempty"`
	Deadline   float64  `json:"deadline_s,omitempty"`
	Budget     float64  `json:"budget_usd,omitempty"`
	Notes      []string `json:"notes"`
	// Carbon is the region's carbon figures behind the rows' emissions,
	// when the rows carry energy and the table has the region.
	Carbon *RegionCarbon `json:"carbon,omitempty"`
	// name spells options as the front end does, once phrased (Phrase).
	name func(plan.Option) string
}

// ErrRequest is wrapped by the errors of a request Sweep refuses.
var ErrRequest = errors.New("invalid budget request")

func refuse(field string, value any, want string) error {
	return fmt.Errorf("budget: %s %v: want %s: %w", field, value, want, ErrRequest)
}

// check validates the request and fills the defaults.
func (r *Request) check() error {
	switch {
	case !(r.Tokens >= 1 && r.Tokens <= 1e16):
		return refuse("tokens", r.Tokens, "from 1 to 1e16")
	case !KnownRegion(r.Region):
		return refuse("region", fmt.Sprintf("%q", r.Region), regionsWant(r.Region))
	case len(r.Generations) == 0:
		return refuse("generations", "[]", "at least one generation")
	case len(r.Modes) == 0:
		return refuse("modes", "[]", "at least one mode")
	case r.Deadline < 0:
		return refuse("deadline", r.Deadline, "0 (none) or more")
	case !(r.Budget >= 0 && r.Budget < math.Inf(1)):
		return refuse("budget", r.Budget, "0 (none) or a finite number of dollars")
	case !(r.SpotPreemptionsPerHour >= 0 && r.SpotPreemptionsPerHour <= 1000):
		return refuse("spot preemptions per hour", r.SpotPreemptionsPerHour, "from 0 to 1000")
	}
	if r.Limits == nil {
		ls, err := DefaultLimits()
		if err != nil {
			return err
		}
		r.Limits = ls
	}
	if r.Carbon == nil && r.ChipPower.Given() {
		c, err := DefaultCarbon()
		if err != nil {
			return err
		}
		r.Carbon = c
	}
	if slices.Contains(r.Modes, Flex) {
		if _, ok := flex(r.Limits); !ok {
			return refuse("limits", "[]", "a flex-start run limit (max_run_days) to plan the flex-start mode")
		}
	}
	if len(r.SliceChips) == 0 {
		r.SliceChips = DefaultSliceChips
	}
	if len(r.SliceCounts) == 0 {
		r.SliceCounts = DefaultSliceCounts
	}
	for _, n := range r.SliceChips {
		if n < 1 {
			return refuse("slice chips", n, "a positive number of chips")
		}
	}
	if bad, want, ok := unknownSize(r.Generations, r.SliceChips); !ok {
		return refuse("slice chips", bad, want)
	}
	for _, n := range r.SliceCounts {
		if n < 1 || n > plan.MaxSlices {
			return refuse("slice count", n, fmt.Sprintf("from 1 to %d", plan.MaxSlices))
		}
	}
	if n := len(r.Generations) * len(r.SliceChips) * len(r.SliceCounts); n > MaxConfigs {
		return refuse("configurations", n, fmt.Sprintf("at most %d generations × slice sizes × slice counts", MaxConfigs))
	}
	return nil
}

// config is one multislice to plan.
type config struct {
	ms hw.Multislice
}

// configs lists the multislices to plan for chip c, and the sizes it has
// no slice of.
func (r Request) configs(c hw.Chip) ([]config, []Dropped) {
	var out []config
	var dropped []Dropped
	for _, chips := range r.SliceChips {
		s, ok := trainingSlice(c, chips)
		if !ok {
			dropped = append(dropped, Dropped{What: fmt.Sprintf("%s, %d-chip slices", c.Generation, chips),
				Why: fmt.Sprintf("%s has no %d-chip training slice", c.Generation, chips)})
			continue
		}
		for _, n := range r.SliceCounts {
			if n > 1 && c.DCNPerChip == 0 {
				dropped = append(dropped, Dropped{What: fmt.Sprintf("%d × %s", n, s.AcceleratorType()),
					Why: fmt.Sprintf("%s has no multislice (no DCN in the catalog)", c.Generation)})
				continue
			}
			ms, err := hw.NewMultislice(s, n, 0)
			if err != nil {
				// hw's own words, without its package name (errtext.Detail)
				dropped = append(dropped, Dropped{What: fmt.Sprintf("%d × %s", n, s.AcceleratorType()), Why: errtext.Detail(err)})
				continue
			}
			out = append(out, config{ms: ms})
		}
	}
	return out, dropped
}

// Sweep plans the job on every configuration the request bounds, prices it
// in every mode the table has a price for, and ranks the rows that meet the
// deadline and budget by cost (Row.Cost), then time. Each configuration is planned
// once, whatever its modes: the layout and step time do not depend on the
// mode, only the goodput and the price.
func Sweep(r Request) (Result, error) {
	if err := r.check(); err != nil {
		return Result{}, err
	}
	return r.sweep()
}

// sweep is Sweep on a checked request.
func (r Request) sweep() (Result, error) {
	res := Result{Model: r.Plan.Model.Name, Tokens: r.Tokens, Region: r.Region, Deadline: r.Deadline.Seconds(), Budget: r.Budget,
		Searched: fmt.Sprintf("slices of %s chips, %s of them", joinInts(r.SliceChips), joinInts(r.SliceCounts))}
	fl, _ := flex(r.Limits)
	gens, tasks, err := r.generations(&res, fl)
	if err != nil {
		return Result{}, err
	}
	plans := r.planAll(tasks)
	var all []Row
	for _, gw := range gens {
		res.Dropped = append(res.Dropped, gw.dropped...)
		for i, cf := range gw.cfgs {
			p, err := plans[gw.first+i].p, plans[gw.first+i].err
			var none *plan.NoPlanError
			if errors.As(err, &none) {
				what := fmt.Sprintf("%d × %s", cf.ms.Slices, cf.ms.Slice.AcceleratorType())
				reasons := *none
				reasons.Fixes = nil // the planner's options: Phrase says them
				res.Dropped = append(res.Dropped, Dropped{What: what, Why: "no layout runs the job: " + oneLine(reasons.Phrase(nil)), fixes: none.Fixes})
				continue
			}
			if err != nil {
				return Result{}, err
			}
			all = append(all, r.priced(p, cf.ms, gw, fl, &res)...)
			if len(gw.priced) == 0 {
				res.Timed = append(res.Timed, r.timed(p, cf.ms, gw.unpriced, fl, &res)...)
			}
		}
	}
	slices.SortStableFunc(res.Timed, func(a, b Timed) int { return cmp.Compare(a.TimeToTrainS, b.TimeToTrainS) })
	res.Rows = r.limit(all, &res)
	slices.SortStableFunc(res.Rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.Cost(), b.Cost()), cmp.Compare(a.TimeToTrainS, b.TimeToTrainS))
	})
	for _, i := range Pareto(res.Rows) {
		res.Rows[i].Pareto = true
	}
	res.Notes = r.notes(res.Rows, res.Timed, fl)
	if c, ok := r.Carbon.Lookup(r.Region); ok && res.energy() {
		res.Carbon = &c
	}
	return res, nil
}

// priced is plan p on ms in each of the generation's priced modes: its
// rows, and in res those dropped with their reasons (flex-start's run
// limit). A row whose interruptions come as often as it can keep a step
// (stalled) is kept, with that warning, where it finishes within the
// bounds budget answers (neverKeeps): it trains, slowly, and a deadline or
// budget drops it like any other row.
func (r Request) priced(p *plan.Plan, ms hw.Multislice, gw generationWork, fl flexTerms, res *Result) []Row {
	var rows []Row
	for _, m := range gw.priced {
		price, _ := r.Prices.Lookup(gw.chip.Generation, m, r.Region)
		row, e := r.row(p, ms, m, price)
		if w := stalled(row, e); w != "" {
			if why := neverKeeps(row, w); why != "" {
				res.Dropped = append(res.Dropped, Dropped{What: row.name(), Why: why})
				continue
			}
			row.Warnings, row.Stalled = append(row.Warnings, w), true
		}
		why := ""
		if m == Flex {
			var warnings []string
			why, warnings = fl.check(row)
			row.Warnings = append(row.Warnings, warnings...)
		}
		if why != "" {
			res.Dropped = append(res.Dropped, Dropped{What: row.name(), Why: why})
			continue
		}
		rows = append(rows, row)
	}
	return rows
}

// generations sorts the request's generations into what to plan: each
// one's priced modes and configurations, with the unpriced modes and the
// generations flex-start does not offer noted in res.
func (r Request) generations(res *Result, fl flexTerms) ([]generationWork, []config, error) {
	var gens []generationWork
	var tasks []config
	var notOffered []string
	for _, g := range r.Generations {
		c, err := hw.Lookup(string(g))
		if err != nil {
			return nil, nil, fmt.Errorf("budget: generation %q: %w", g, err)
		}
		gw := generationWork{chip: c}
		var whys []string
		missing := map[string][]string{} // reason → modes
		for _, m := range r.Modes {
			if !r.offered(fl, c.Generation, m) {
				notOffered = append(notOffered, string(c.Generation))
				continue
			}
			if _, ok := r.Prices.Lookup(c.Generation, m, r.Region); ok {
				gw.priced = append(gw.priced, m)
				continue
			}
			why := "no public price found"
			if r.PriceTable != "" {
				why = "not in the price table " + r.PriceTable
			}
			if regs := r.Prices.regions(c.Generation, m); len(regs) > 0 {
				why = "the table prices it only in " + strings.Join(regs, ", ")
			}
			gw.unpriced = append(gw.unpriced, m)
			if missing[why] == nil {
				whys = append(whys, why)
			}
			missing[why] = append(missing[why], string(m))
		}
		for _, why := range whys {
			res.Unpriced = append(res.Unpriced, fmt.Sprintf("%s %s in %s: %s; give one of your own (a price, or a price table)",
				c.Generation, strings.Join(missing[why], ", "), r.Region, why))
		}
		if len(gw.priced) == 0 && (len(gw.unpriced) == 0 || !r.timesUnpriced()) {
			continue // nothing to price nor to time: do not plan it
		}
		gw.cfgs, gw.dropped = r.configs(c)
		gw.first = len(tasks)
		tasks = append(tasks, gw.cfgs...)
		gens = append(gens, gw)
	}
	if len(notOffered) > 0 {
		res.Dropped = append(res.Dropped, Dropped{What: fmt.Sprintf("flex-start in %s for %s", r.Region, strings.Join(notOffered, ", ")),
			Why: fl.offers("", r.Region) + fl.gkeRoute(notOffered)})
	}
	return gens, tasks, nil
}

// generationWork is what a generation's part of the sweep plans: its
// priced modes, its unpriced ones (offered, without a price), its
// configurations (tasks[first:first+len(cfgs)]) and the sizes it has no
// slice of.
type generationWork struct {
	chip     hw.Chip
	priced   []Mode
	unpriced []Mode
	cfgs     []config
	first    int
	dropped  []Dropped
}

// planned is one configuration's plan, or why there is none.
type planned struct {
	p   *plan.Plan
	err error
}

// planAll plans every configuration, in their order, once each: its rows
// in every mode share the plan. The configurations are planned side by
// side on Plan.Workers goroutines (0: one per CPU), each search on one:
// a search's plan does not depend on how many workers cost its layouts
// (plan.Request.Workers), and a sweep's many searches keep every CPU busy
// where one search's merges and finish run on one. Each search is lean
// (plan.Request.BestOnly): a row reads its plan's Best and Band, and the
// error of a configuration nothing runs on is the full search's, naming
// every rejection.
func (r Request) planAll(tasks []config) []planned {
	out := make([]planned, len(tasks))
	cache := new(plan.Cache) // the configurations share their estimators
	workers := r.Plan.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, len(tasks)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(tasks); i = int(next.Add(1) - 1) {
				pr := r.Plan
				pr.Cache, pr.Workers, pr.BestOnly = cache, 1, true // a row needs the plan's Best and Band
				pr.Multislice = tasks[i].ms
				p, err := plan.Search(pr)
				p.Request.Workers = r.Plan.Workers // as the request asked
				out[i] = planned{&p, err}
			}
		})
	}
	wg.Wait()
	return out
}

// row prices plan p on ms in mode m; e is the goodput behind it.
func (r Request) row(p *plan.Plan, ms hw.Multislice, m Mode, price Price) (row Row, e capacity.Expectation) {
	est := p.Best.Estimate
	job := capacity.JobOf(*p)
	extra := 0.0
	if m == Spot {
		extra = r.SpotPreemptionsPerHour * float64(ms.Slices)
	}
	// a job trains whole steps (capacity.Job.Steps), as capacity and plan
	// --goodput count them
	e = capacity.ExpectInterrupted(job, ms.Chips(), ms.Hosts(), r.Tokens, extra)
	row = Row{
		Generation: ms.Slice.Chip.Generation, AcceleratorType: ms.Slice.AcceleratorType(), Slices: ms.Slices, Chips: ms.Chips(),
		Mode: m, Layout: est.Mesh.String(), StepTime: est.Time.Step, Steps: job.Steps(r.Tokens),
		Goodput: e.Goodput, TimeToTrainS: float64(e.TimeToTrain), Price: price, Plan: p, Warnings: []string{},
	}
	if r.Tokens < job.BatchTokens {
		row.Warnings = append(row.Warnings, fmt.Sprintf("%.3g tokens are less than one step's batch of %.3g: the job is one step", r.Tokens, job.BatchTokens))
	}
	row.StepS = row.StepTime.Seconds()
	row.ChipHours = float64(row.Chips) * row.TimeToTrainS / 3600
	row.USD = row.ChipHours * price.USDPerChipHour
	row.USDPerBTokens = row.USD / (r.Tokens / 1e9)
	band, _ := p.PredictionBand()
	row.Band = bandOf(band, row)
	termBill(&row, m.term())
	if w, ok := r.ChipPower.Watts(row.Generation); ok {
		var c *RegionCarbon
		if rc, ok := r.Carbon.Lookup(r.Region); ok {
			c = &rc
		}
		row.Energy = energyOf(row.Chips, row.TimeToTrainS/3600, w, c)
	}
	return row, e
}

// limit drops the rows over the deadline or budget (Row.Cost: what a
// commitment bills, used or not), with their reasons, and names the
// nearest when none is left: its time and dollars, and its bill where
// that is more.
func (r Request) limit(rows []Row, res *Result) []Row {
	var kept, over []Row
	for _, row := range rows {
		var why []string
		if r.Deadline > 0 && row.TimeToTrainS > r.Deadline.Seconds() {
			why = append(why, fmt.Sprintf("takes %s, over the %s deadline", days(row.TimeToTrainS), days(r.Deadline.Seconds())))
		}
		if r.Budget > 0 && row.Cost() > r.Budget {
			why = append(why, fmt.Sprintf("%s, over the %s budget", row.costs(), dollars(r.Budget)))
		}
		if len(why) == 0 {
			kept = append(kept, row)
			continue
		}
		over = append(over, row)
		res.Dropped = append(res.Dropped, Dropped{What: row.name(), Why: strings.Join(why, "; ")})
	}
	if len(kept) == 0 && len(over) > 0 {
		best := slices.MinFunc(over, r.nearer)
		res.Nearest = fmt.Sprintf("%s: %s, %s", best.name(), days(best.TimeToTrainS), dollars(best.USD))
		if best.Cost() > best.USD {
			res.Nearest += ", " + best.costs()
		}
		res.NearestRow = &best
	}
	return kept
}

// nearer orders rows over the limits, nearest first: by their worst
// relative excess over the deadline and budget, ties by the other one
// (both limits given), then the cheaper, then the faster, cost and
// budget weighing Row.Cost. A tie over a deadline alone goes to the
// cheaper row (the same configuration on demand and committed takes the
// same time, where a commitment bills its whole term), one over a budget
// alone to the faster.
func (r Request) nearer(a, b Row) int {
	excess := func(row Row) (worst, other float64) {
		var x []float64
		if r.Deadline > 0 {
			x = append(x, row.TimeToTrainS/r.Deadline.Seconds())
		}
		if r.Budget > 0 {
			x = append(x, row.Cost()/r.Budget)
		}
		slices.Sort(x)
		switch len(x) {
		case 0:
			return 0, 0
		case 1:
			return x[0], 0
		}
		return x[1], x[0]
	}
	wa, oa := excess(a)
	wb, ob := excess(b)
	return cmp.Or(cmp.Compare(wa, wb), cmp.Compare(oa, ob), cmp.Compare(a.Cost(), b.Cost()), cmp.Compare(a.TimeToTrainS, b.TimeToTrainS))
}

// notes are the assumptions the rows and the unpriced timed rows rest on.
func (r Request) notes(rows []Row, timed []Timed, fl flexTerms) []string {
	notes := []string{
		"time to train = steps × step time / goodput; goodput from capacity's failure and checkpoint model (Daly's interval, its default failure rate and storage bandwidth)",
		"dollars = chips × time to train × price per chip-hour; prices are list prices as cited, without taxes, storage or network",
	}
	var spot, cud bool
	for _, m := range r.Modes {
		if slices.ContainsFunc(rows, func(row Row) bool { return row.Mode == m }) ||
			slices.ContainsFunc(timed, func(t Timed) bool { return slices.Contains(t.Modes, m) }) {
			notes = append(notes, fmt.Sprintf("%s: %s", m, m.Terms()))
			spot = spot || m == Spot
			cud = cud || m == CUD1y || m == CUD3y
		}
	}
	if spot && r.SpotPreemptionsPerHour == 0 {
		notes = append(notes, "spot: no public preemption rate was found; it is an input and 0 was given, so spot times are lower bounds")
	} else if spot {
		notes = append(notes, fmt.Sprintf("spot: %g preemptions per slice-hour, as given", r.SpotPreemptionsPerHour))
	}
	if fl, ok := flex(r.Limits); ok && slices.Contains(r.Modes, Flex) {
		notes = append(notes, fmt.Sprintf("flex-start: at most %s a request (%s); a longer job is dropped, as it needs new requests that each wait for capacity", limitDays(fl.maxRun), fl.source))
	}
	if cud {
		notes = append(notes, "cud-1y, cud-3y: the dollars are the job's chip-hours; what the commitment bills, used or not, is the column "+termBillHead+": chips × the term's hours × the price for every whole term the job takes (its time to train over the term, rounded up); the ranking, a budget and the Pareto front weigh that bill")
	}
	if slices.ContainsFunc(rows, func(row Row) bool { return row.Energy != nil }) {
		notes = append(notes, r.energyNotes()...)
	}
	return append(notes, r.unused(fl)...)
}

// unused names the user's prices and chip powers that no searched
// generation and mode uses: a generation or mode the request does not
// name, or flex-start where fl does not offer it for the generation in
// the request's region (the sweep drops it, as generations does).
func (r Request) unused(fl flexTerms) []string {
	var out []string
	for _, p := range r.Prices {
		switch {
		case !p.Given:
		case !slices.Contains(r.Generations, p.Generation) || !slices.Contains(r.Modes, p.Mode):
			out = append(out, fmt.Sprintf("your %s %s price is unused: the sweep does not search %s %s", p.Generation, p.Mode, p.Generation, p.Mode))
		case !r.offered(fl, p.Generation, p.Mode):
			out = append(out, fmt.Sprintf("your %s %s price is unused: %s is not offered for %s in %s", p.Generation, p.Mode, p.Mode, p.Generation, r.Region))
		}
	}
	for g := range r.ChipPower.By {
		if !slices.Contains(r.Generations, g) {
			out = append(out, fmt.Sprintf("your chip power for %s is unused: the sweep does not search %s", g, g))
		}
	}
	slices.Sort(out)
	return out
}

// name is the row's configuration and mode.
func (row Row) name() string {
	return fmt.Sprintf("%d × %s %s", row.Slices, row.AcceleratorType, row.Mode)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
