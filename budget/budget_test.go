package budget

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"shardlab/hw"
	"shardlab/plan"
)

// testPrices is a constructed table: v6e on-demand at $2 and spot at $1 in
// us-central1, nothing for TPU7x.
func testPrices(t *testing.T) Prices {
	t.Helper()
	ps, err := ParsePrices(strings.NewReader(header+
		"v6e,on-demand,us-central1,2,test table,2026-12-04,\n"+
		"v6e,spot,us-central1,1,test table,2026-12-04,\n"), testToday)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// smallRequest is Llama 3 8B on one or two v6e-16 slices: fast to plan.
func smallRequest(t *testing.T) Request {
	t.Helper()
	return Request{Plan: planRequest(t, "llama3-8b"), Tokens: 1e10, Region: "us-central1", Generations: []hw.Generation{hw.V6e, hw.TPU7x},
		Modes: []Mode{OnDemand, Spot}, SliceChips: []int{16}, SliceCounts: []int{1, 2}, Prices: testPrices(t)}
}

func TestSweepByHand(t *testing.T) {
	res, err := Sweep(smallRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 4 {
		t.Fatalf("%d rows, want 4 (v6e-16 and 2 × v6e-16, on-demand and spot)", len(res.Rows))
	}
	for _, row := range res.Rows {
		// by hand: whole steps × step time / goodput is the wall time;
		// chips × hours × price the dollars
		e := row.Plan.Best.Estimate
		steps := math.Ceil(1e10 / float64(e.Job.GlobalBatch*e.Job.Seq))
		hours := steps * e.Time.Step.Seconds() / row.Goodput / 3600
		price := map[Mode]float64{OnDemand: 2, Spot: 1}[row.Mode]
		want := float64(row.Chips) * hours * price
		if math.Abs(row.USD-want)/want > 1e-6 {
			t.Errorf("%s: $%.2f, want chips %d × %.2f h × $%g = $%.2f", row.name(), row.USD, row.Chips, hours, price, want)
		}
		if got := row.USDPerBTokens; math.Abs(got-want/10)/want > 1e-9 {
			t.Errorf("%s: $%.2f per billion tokens, want $%.2f", row.name(), got, want/10)
		}
		if row.Chips != 16*row.Slices || row.Price.USDPerChipHour != price {
			t.Errorf("%s: %d chips at $%g, want %d at $%g", row.name(), row.Chips, row.Price.USDPerChipHour, 16*row.Slices, price)
		}
	}
	// cheapest first
	if !slices.IsSortedFunc(res.Rows, func(a, b Row) int { return cmpFloat(a.USD, b.USD) }) {
		t.Errorf("rows not ranked by dollars")
	}
	// TPU7x has no price: listed as unpriced, never planned or free
	var unpriced int
	for _, u := range res.Unpriced {
		if strings.HasPrefix(u, "tpu7x on-demand, spot in us-central1: no public price found") {
			unpriced++
		}
	}
	if unpriced != 1 {
		t.Errorf("unpriced %q, want tpu7x on-demand and spot", res.Unpriced)
	}
	for _, row := range res.Rows {
		if row.Generation == hw.TPU7x {
			t.Errorf("TPU7x priced: %+v", row)
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestSpotPreemptionsCostTime(t *testing.T) {
	r := smallRequest(t)
	r.Modes, r.SliceCounts = []Mode{Spot}, []int{1}
	calm, err := Sweep(r)
	if err != nil {
		t.Fatal(err)
	}
	r.SpotPreemptionsPerHour = 0.5
	stormy, err := Sweep(r)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := calm.Rows[0], stormy.Rows[0]; !(b.Goodput < a.Goodput && b.TimeToTrainS > a.TimeToTrainS && b.USD > a.USD) {
		t.Errorf("0.5 preemptions an hour: goodput %v, time %v, $%.0f; want below %v, above %v and $%.0f",
			b.Goodput, b.TimeToTrainS, b.USD, a.Goodput, a.TimeToTrainS, a.USD)
	}
	if !slices.ContainsFunc(calm.Notes, func(n string) bool { return strings.Contains(n, "preemption rate") }) {
		t.Errorf("notes %q do not say the spot preemption rate is an input", calm.Notes)
	}
}

func TestDeadlineAndBudget(t *testing.T) {
	r := smallRequest(t)
	r.Modes = []Mode{OnDemand}
	all, err := Sweep(r)
	if err != nil {
		t.Fatal(err)
	}
	fast := slices.MinFunc(all.Rows, func(a, b Row) int { return cmpFloat(a.TimeToTrainS, b.TimeToTrainS) })
	cheap := slices.MinFunc(all.Rows, func(a, b Row) int { return cmpFloat(a.USD, b.USD) })
	if fast.name() == cheap.name() {
		t.Skipf("the fastest row is the cheapest (%s): no trade-off to filter", fast.name())
	}
	// a deadline only the fastest meets
	r.Deadline = time.Duration(fast.TimeToTrainS*float64(time.Second)) + time.Second
	res, err := Sweep(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || res.Rows[0].name() != fast.name() {
		t.Errorf("deadline %v: rows %v, want only %s", r.Deadline, names(res.Rows), fast.name())
	}
	if !slices.ContainsFunc(res.Dropped, func(d Dropped) bool { return strings.Contains(d.Why, "over the") }) {
		t.Errorf("dropped %v: no row says it is over the deadline", res.Dropped)
	}
	// and a budget below its price: nothing, and the nearest named
	r.Budget = fast.USD / 2
	res, err = Sweep(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 0 || !strings.HasPrefix(res.Nearest, fast.name()+":") && !strings.HasPrefix(res.Nearest, cheap.name()+":") {
		t.Errorf("deadline and half the budget: rows %v, nearest %q; want none and the nearest named", names(res.Rows), res.Nearest)
	}
}

func names(rows []Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.name())
	}
	return out
}

func TestSweepRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*Request)
	}{
		{"negative tokens", func(r *Request) { r.Tokens = -1 }},
		{"NaN tokens", func(r *Request) { r.Tokens = math.NaN() }},
		{"bad region", func(r *Request) { r.Region = "mars" }},
		{"unknown region", func(r *Request) { r.Region = "mars-north1" }},
		{"no modes", func(r *Request) { r.Modes = nil }},
		{"negative deadline", func(r *Request) { r.Deadline = -time.Hour }},
		{"infinite budget", func(r *Request) { r.Budget = math.Inf(1) }},
		{"too many configurations", func(r *Request) { r.SliceChips = make([]int, 100); r.SliceChips[0] = 16 }},
	} {
		r := smallRequest(t)
		tt.edit(&r)
		if _, err := Sweep(r); !errors.Is(err, ErrRequest) || !strings.HasPrefix(err.Error(), "budget: ") {
			t.Errorf("%s: Sweep = %v, want a budget request error", tt.name, err)
		}
	}
}

// paretoBrute is the front by definition, among the rows that can
// finish (not stalled): such a row is on it when no other such row is
// at least as good in both time and what it bills (a commitment's
// whole-term bill, else its dollars: the larger, as a row outside the
// commitment modes has no bill) and better in one.
func paretoBrute(rows []Row) []int {
	bill := func(r Row) float64 { return math.Max(r.USD, r.CommitmentUSD) }
	var out []int
	for i, a := range rows {
		dominated := a.Stalled // off the front, and dominating nothing
		for j, b := range rows {
			if i != j && !b.Stalled && b.TimeToTrainS <= a.TimeToTrainS && bill(b) <= bill(a) && (b.TimeToTrainS < a.TimeToTrainS || bill(b) < bill(a)) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, i)
		}
	}
	return out
}

func TestParetoAgainstBruteForce(t *testing.T) {
	// a constructed case: (days, dollars); A, C and E are on the front, B
	// is dominated by A, D by C, F ties E exactly and is on it too
	rows := []Row{
		{TimeToTrainS: 10 * 86400, USD: 500}, // A
		{TimeToTrainS: 12 * 86400, USD: 500}, // B
		{TimeToTrainS: 20 * 86400, USD: 300}, // C
		{TimeToTrainS: 25 * 86400, USD: 350}, // D
		{TimeToTrainS: 40 * 86400, USD: 100}, // E
		{TimeToTrainS: 40 * 86400, USD: 100}, // F
	}
	if got, want := Pareto(rows), []int{0, 2, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("Pareto(constructed) = %v, want %v", got, want)
	}
	// stalled rows (review 152 #9) are off it and dominate nothing: G,
	// stalled, would dominate every row; H, stalled, dominates none. The
	// front of the rest is A, C, E and F, as without them
	rows = append(rows, Row{TimeToTrainS: 86400, USD: 1, Stalled: true}, Row{TimeToTrainS: 1e60, USD: 1e70, Stalled: true})
	if got, want := Pareto(rows), []int{0, 2, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("Pareto(constructed, with stalled rows) = %v, want %v", got, want)
	}
	// a commitment is weighed by its bill (review 178 #3): I, as fast as
	// A and with the cheapest chip-hours of all, bills its whole term,
	// $900, and is dominated by A; J's bill, $90, puts it on the front,
	// where it dominates E and F (as fast, cheaper)
	rows = append(rows, Row{TimeToTrainS: 10 * 86400, USD: 50, CommitmentUSD: 900, Mode: CUD3y},
		Row{TimeToTrainS: 40 * 86400, USD: 20, CommitmentUSD: 90, Mode: CUD1y})
	if got, want := Pareto(rows), []int{0, 2, 9}; !slices.Equal(got, want) {
		t.Errorf("Pareto(constructed, with commitments) = %v, want %v", got, want)
	}
	// random cases, with ties and stalled rows, against the definition
	rng := rand.New(rand.NewPCG(31, 0))
	for n := range 500 {
		rows := make([]Row, rng.IntN(12))
		for i := range rows {
			rows[i] = Row{TimeToTrainS: float64(rng.IntN(6)) * 3600, USD: float64(rng.IntN(6)), Stalled: rng.IntN(4) == 0}
			if rng.IntN(3) == 0 { // a commitment, whose bill is at least its dollars
				rows[i].Mode, rows[i].CommitmentUSD = CUD1y, rows[i].USD+float64(rng.IntN(4))
			}
		}
		if got, want := Pareto(rows), paretoBrute(rows); !slices.Equal(got, want) {
			t.Fatalf("case %d: Pareto = %v, brute force %v; rows %+v", n, got, want, rows)
		}
	}
}

// TestModesShareOneSearch: a configuration is planned once, whatever its
// modes and prices: its rows in every mode carry the one plan (the layout
// and step depend only on the generation, slice and count and the job).
func TestModesShareOneSearch(t *testing.T) {
	res, err := Sweep(smallRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	plans := map[string]*plan.Plan{}
	for _, row := range res.Rows {
		config := row.AcceleratorType + " x " + string(rune('0'+row.Slices))
		if p, ok := plans[config]; ok && p != row.Plan {
			t.Errorf("%s: mode %s carries a plan of its own, want the configuration's one", config, row.Mode)
		}
		plans[config] = row.Plan
	}
	if len(plans) != 2 || len(res.Rows) != 4 {
		t.Errorf("%d configurations in %d rows, want 2 in 4 (two modes each)", len(plans), len(res.Rows))
	}
}

// TestWholeSteps: a job trains whole steps, so fewer tokens than one batch
// are one step (it counted 0.000238 steps, 0 chip-hours and $0.00), with a
// warning; the time is that step's.
func TestWholeSteps(t *testing.T) {
	r := smallRequest(t)
	r.Tokens, r.Modes, r.SliceCounts = 1000, []Mode{OnDemand}, []int{1}
	res, err := Sweep(r)
	if err != nil || len(res.Rows) == 0 {
		t.Fatalf("Sweep: %v, %d rows", err, len(res.Rows))
	}
	for _, row := range res.Rows {
		step := row.Plan.Best.Estimate.Time.Step.Seconds()
		if row.Steps != 1 || row.TimeToTrainS < step || row.USD <= 0 || len(row.Warnings) == 0 || !strings.Contains(row.Warnings[0], "the job is one step") {
			t.Errorf("%s: %g steps, %g s (a step is %g s), $%g, warnings %q; want one step, a warning", row.name(), row.Steps, row.TimeToTrainS, step, row.USD, row.Warnings)
		}
	}
}

func TestSweepBeyondDurationRange(t *testing.T) {
	// 1e16 tokens (the most a request takes) on one v6e-16 take thousands
	// of years, past time.Duration's 292 (9.22e9 s): the row is still
	// whole steps × step time / goodput, and chips × hours × price, all
	// positive, and the table prints no negative time or dollars.
	r := smallRequest(t)
	r.Tokens, r.Generations, r.Modes, r.SliceCounts = 1e16, []hw.Generation{hw.V6e}, []Mode{OnDemand}, []int{1}
	res, err := Sweep(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 {
		t.Fatalf("%d rows, want 1 (v6e-16 on-demand)", len(res.Rows))
	}
	row := res.Rows[0]
	e := row.Plan.Best.Estimate
	steps := math.Ceil(1e16 / float64(e.Job.GlobalBatch*e.Job.Seq))
	secs := steps * e.Time.Step.Seconds() / row.Goodput
	if secs < 1e10 {
		t.Fatalf("by hand %g s: not past time.Duration's range, the test proves nothing", secs)
	}
	if math.Abs(row.TimeToTrainS-secs)/secs > 1e-9 {
		t.Errorf("time to train %g s, want %g steps × %v / %v = %g s", row.TimeToTrainS, steps, e.Time.Step, row.Goodput, secs)
	}
	if want := float64(row.Chips) * secs / 3600 * 2; math.Abs(row.USD-want)/want > 1e-9 {
		t.Errorf("$%g, want %d chips × %g h × $2 = $%g", row.USD, row.Chips, secs/3600, want)
	}
	if b := row.Band; b == nil || !(0 < b.TimeLow && b.TimeLow <= row.TimeToTrainS && row.TimeToTrainS <= b.TimeHigh) {
		t.Errorf("band %+v does not hold the time to train %g s", b, row.TimeToTrainS)
	}
	var text strings.Builder
	if err := res.WriteText(&text, ""); err != nil {
		t.Fatal(err)
	}
	// 2871 years: past the thousand the table spells in full (review 152
	// #9), where the JSON keeps the float checked above
	if days := days(secs); days != ">1000y" || !strings.Contains(text.String(), " "+days+" ") || strings.Contains(text.String(), "$-") {
		t.Errorf("table does not print %s (%g s) or prints negative dollars:\n%s", days, secs, text.String())
	}
}

// TestUnusedFlexPrice: a flex-start price given for a generation
// flex-start is not offered for in the region is named unused, as a price
// for a generation or mode the sweep does not search is (defects100 #12:
// v6e:flex-start=1 in us-central1 was silently unused); where it is
// offered (v6e in us-east5-a) it is used and not named.
func TestUnusedFlexPrice(t *testing.T) {
	ls, err := DefaultLimits()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		region string
		unused bool
	}{{"us-central1", true}, {"us-east5", false}} {
		r := smallRequest(t)
		r.Region, r.Generations, r.Modes, r.SliceCounts, r.Limits = tc.region, []hw.Generation{hw.V6e}, []Mode{OnDemand, Flex}, []int{1}, ls
		user, err := ParseUserPrices("v6e=2,v6e:flex-start=1", r.Region)
		if err != nil {
			t.Fatal(err)
		}
		r.Prices = r.Prices.With(user)
		res, err := Sweep(r)
		if err != nil {
			t.Fatal(err)
		}
		notes := strings.Join(res.Notes, "\n")
		want := "your v6e flex-start price is unused: flex-start is not offered for v6e in " + tc.region
		if got := strings.Contains(notes, want); got != tc.unused || strings.Contains(notes, "on-demand price is unused") {
			t.Errorf("%s: the notes name the flex-start price unused %v, want %v (and the on-demand price used):\n%s",
				tc.region, got, tc.unused, notes)
		}
	}
}

// TestDroppedFixesArePlanners: a configuration no layout runs is dropped
// with the planner's fixes, which change options budget does not sweep
// (precision, offload, remat): the result says them only as a front end
// spells them (Phrase), naming the planner that takes them, never in
// plan's words as if budget took them (defects100 #13: "it would run with
// precision bf16: …" under budget, which has no precision option).
func TestDroppedFixesArePlanners(t *testing.T) {
	r := smallRequest(t)
	r.Generations, r.Modes, r.SliceChips, r.SliceCounts = []hw.Generation{hw.V6e}, []Mode{OnDemand}, []int{4}, []int{1}
	res, err := Sweep(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Dropped) != 1 || res.Dropped[0].What != "1 × v6e-4" || len(res.Dropped[0].fixes) == 0 {
		t.Fatalf("dropped %+v, want 1 × v6e-4 with the planner's fixes", res.Dropped)
	}
	if why := res.Dropped[0].Why; strings.Contains(why, "precision") || strings.Contains(why, "would run") {
		t.Errorf("unphrased, the dropped line names plan's options in plan's words: %s", why)
	}
	named := res.Phrase("PLANNER", func(o plan.Option) string { return "<" + string(o) + ">" })
	why := named.Dropped[0].Why
	if want := "; PLANNER would run it with options budget does not sweep: <precision> bf16: "; !strings.Contains(why, want) {
		t.Errorf("phrased: %s\nwant it to contain %q", why, want)
	}
	if strings.Count(why, "would run") != 1 || strings.Contains(why, "{") || strings.Contains(why, "precision bf16") {
		t.Errorf("phrased: %s\nwant the fixes said once, every option by the front end's name", why)
	}
	if again := named.Phrase("PLANNER", nil).Dropped[0].Why; again != why || res.Dropped[0].Why == why {
		t.Errorf("phrasing twice gives %q, and the unphrased result %q: want the first phrasing kept and the result unchanged", again, res.Dropped[0].Why)
	}
}
