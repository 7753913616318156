package budget

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"shardlab/hw"
)

func TestDefaultLimits(t *testing.T) {
	ls, err := DefaultLimits()
	if err != nil {
		t.Fatal(err)
	}
	fl, ok := flex(ls)
	// Cloud TPU flex-start doc, read 2026-12-05: "up to 7 days"; v6e in
	// asia-northeast1-b and us-east5-a, v5e (training) in us-west4-a; 64
	// preemptible cores by default. GKE's flex-start page (concepts/dws,
	// read 2026-12-07): "for up to seven days".
	if !ok || fl.maxRun != 7*24*time.Hour || fl.quota != 64 || fl.gkeMaxRun != 7*24*time.Hour {
		t.Errorf("flex-start terms %+v, want 7-day run limits (queued resources and GKE) and a 64-core quota", fl)
	}
	if got := fl.zones[hw.V6e]; !slices.Equal(got, []string{"asia-northeast1-b", "us-east5-a"}) {
		t.Errorf("v6e flex-start zones %q", got)
	}
	if why := fl.offers(hw.V5p, "us-east5"); !strings.Contains(why, "the queued-resources API (TPU VMs) offers flex-start for v5e in us-west4-a; v6e in asia-northeast1-b, us-east5-a") {
		t.Errorf("v5p flex-start: %q, want the zones it is offered in", why)
	}
	if why := fl.offers(hw.V6e, "us-east5"); why != "" {
		t.Errorf("v6e flex-start in us-east5: %q, want offered", why)
	}
	// no public price: modes.csv says so and prices.csv has no flex row
	ps, _ := DefaultPrices()
	for _, p := range ps {
		if p.Mode == Flex {
			t.Errorf("prices.csv has a flex-start price %+v; modes.csv says none is public", p)
		}
	}
	if !slices.ContainsFunc(ls, func(l Limit) bool { return l.Mode == Flex && l.Name == "price" && l.Value == "none" }) {
		t.Errorf("modes.csv does not say flex-start has no public price")
	}
}

// flexRequest is smallRequest in us-east5, where v6e has flex-start, with
// a flex-start price the user gives.
func flexRequest(t *testing.T, tokens float64) Request {
	t.Helper()
	ps, err := ParsePrices(strings.NewReader(header+
		"v6e,on-demand,us-east5,2,test table,2026-12-04,\n"+
		"v6e,flex-start,us-east5,1,test table,2026-12-04,\n"), testToday)
	if err != nil {
		t.Fatal(err)
	}
	r := smallRequest(t)
	r.Region, r.Prices, r.Tokens, r.Generations, r.Modes = "us-east5", ps, tokens, []hw.Generation{hw.V6e}, []Mode{OnDemand, Flex}
	return r
}

// TestFlexStartCap: a job that takes longer than flex-start's 7 days is
// dropped from flex-start with the reason and kept on demand; a shorter
// one is priced.
func TestFlexStartCap(t *testing.T) {
	long, err := Sweep(flexRequest(t, 1e11)) // Llama 3 8B, 100B tokens on 16 or 32 v6e chips: 5-11 days
	if err != nil {
		t.Fatal(err)
	}
	var capped int
	for _, row := range long.Rows {
		if row.Mode == Flex && row.TimeToTrainS > 7*86400 {
			t.Errorf("%s takes %s, over flex-start's 7 days, but is in the table", row.name(), Days(row.TimeToTrainS))
		}
	}
	for _, d := range long.Dropped {
		if strings.HasSuffix(d.What, " flex-start") && strings.Contains(d.Why, "over flex-start's run limit of 7 days") {
			capped++
		}
	}
	onDemandLong := 0
	for _, row := range long.Rows {
		if row.Mode == OnDemand && row.TimeToTrainS > 7*86400 {
			onDemandLong++
		}
	}
	if onDemandLong == 0 || capped != onDemandLong {
		t.Errorf("%d flex-start rows dropped for the run limit, want one per on-demand row over 7 days (%d); dropped %+v", capped, onDemandLong, long.Dropped)
	}
	short, err := Sweep(flexRequest(t, 1e10))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(short.Rows, func(r Row) bool { return r.Mode == Flex }) {
		t.Errorf("10B tokens: no flex-start row; dropped %+v", short.Dropped)
	}
	// A multi-host row (v6e-16 is 4 hosts) carries no GKE term: budget's
	// flex-start rows are the queued-resources API's TPU VMs, whose page
	// lists no host limit (review 145 #1).
	multi := 0
	for _, row := range short.Rows {
		if row.Mode == Flex && row.Plan.Request.Multislice.Slice.Hosts() > 1 {
			multi++
			if slices.ContainsFunc(row.Warnings, func(w string) bool { return strings.Contains(w, "GKE") || strings.Contains(w, "single-host") }) {
				t.Errorf("%s: warnings %q name a GKE rule on a TPU VM row", row.name(), row.Warnings)
			}
		}
	}
	if multi == 0 {
		t.Errorf("10B tokens: no multi-host flex-start row to check")
	}
	// us-central1 has no flex-start zone: dropped with the zones, not unpriced
	r := flexRequest(t, 1e10)
	r.Region = "us-central1"
	r.Prices = append(r.Prices, Price{Generation: hw.V6e, Mode: Flex, Region: "us-central1", USDPerChipHour: 1, Source: "test", Read: "2026-12-04"})
	elsewhere, err := Sweep(r)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(elsewhere.Rows, func(r Row) bool { return r.Mode == Flex }) ||
		!slices.ContainsFunc(elsewhere.Dropped, func(d Dropped) bool {
			return strings.Contains(d.Why, "queued-resources API (TPU VMs) offers flex-start")
		}) {
		t.Errorf("v6e flex-start in us-central1: rows or no reason; dropped %+v", elsewhere.Dropped)
	}
}

func TestParseLimitsErrors(t *testing.T) {
	for _, c := range []struct{ in, field string }{
		{"mode,limit\n", ""},
		{"mode,limit,value,source,read,nota\nflex-start,price,none,s,2026-01-01,\n", "header"},
		{limitHead + "flex,price,none,s,2026-01-01,\n", "mode"},
		{limitHead + "flex-start,max_run,7,s,2026-01-01,\n", "limit"},
		{limitHead + "flex-start,max_run_days,-7,s,2026-01-01,\n", "value"},
		{limitHead + "flex-start,zone,v9@us-east5-a,s,2026-01-01,\n", "value"},
		{limitHead + "flex-start,zone,v6e@us-east5,s,2026-01-01,\n", "value"},
		{limitHead + "flex-start,gke_unsupported,v9,s,2026-01-01,\n", "value"},
		{limitHead + "flex-start,gke_unsupported,v5litepod,s,2026-01-01,\n", "value"},
		{limitHead + "flex-start,price,none, s,2026-01-01,\n", "source"},
		{limitHead + "flex-start,price,none,s,2026-13-01,\n", "read"},
		{limitHead, ""},
	} {
		_, err := ParseLimits(strings.NewReader(c.in))
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Field != c.field || !errors.Is(err, ErrPrices) {
			t.Errorf("ParseLimits(%q) = %v, want a ParseError of field %q", c.in, err, c.field)
		}
	}
}

const limitHead = "mode,limit,value,source,read,note\n"

func FuzzParseLimits(f *testing.F) {
	f.Add(modesCSV)
	f.Add([]byte(limitHead + "flex-start,zone,v6e@us-east5-a,s,2026-01-01,n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ls, err := ParseLimits(bytes.NewReader(data))
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || strings.ContainsRune(err.Error(), '\n') {
				t.Fatalf("error %q: want a one-line ParseError", err)
			}
			return
		}
		for _, l := range ls {
			if !validLimit(l.Name, l.Value) {
				t.Fatalf("accepted %+v", l)
			}
		}
		flex(ls) // never panics
	})
}

func ExampleParseLimits() {
	ls, err := ParseLimits(strings.NewReader("mode,limit,value,source,read,note\n" +
		"flex-start,max_run_days,7,Cloud TPU flex-start doc,2026-12-05,up to 7 days\n"))
	if err != nil {
		panic(err)
	}
	fmt.Println(ls[0].Mode, ls[0].Name, ls[0].Value, ls[0].Read)
	// Output:
	// flex-start max_run_days 7 2026-12-05
}

// TestGKEWarnings: the terms of a mode that bound a GKE workload (export
// xpk's), by modes.csv. Flex-start's only one is GKE's run limit, "for up
// to seven days" (GKE concepts/dws, read 2026-12-07), whatever the
// generation and the slice: the queued-resources zone list (v5e, v6e) is
// the TPU VMs' (as is tpu-inference's docs/getting_started/tpu_setup.md
// @b8692ff line 91, "TPU v7x ... do[es] not support Flex-start", a TPU VM
// setup), while xpk @367c8382 runs Ironwood flex-start recipes, multi-host
// included: README.md line 40; docs/usage/tpu7x/recipes/
// flex_filestore_recipe.md line 34 ("For **multi-host** provisioning use
// an ACCELERATOR_TYPE with ... more than 8 chips, e.g. tpu7x-2x2x2 or
// tpu7x-16") and 69-76 (xpk cluster create --tpu-type=${ACCELERATOR_TYPE}
// --flex); src/xpk/core/capacity.py 137-144 (--flex-start on every TPU
// node pool). Spot, on-demand, a reservation and no mode have no such
// terms.
func TestGKEWarnings(t *testing.T) {
	const limit = "flex-start on GKE provisions the TPUs for at most 7 days a request (https://cloud.google.com/kubernetes-engine/docs/concepts/dws, read 2026-12-07)"
	// the same page: "TPU v3 and v4 are not supported" (review 149 #2)
	const v4 = "flex-start on GKE does not support TPU v4 (https://cloud.google.com/kubernetes-engine/docs/concepts/dws, read 2026-12-07)"
	const v3 = "flex-start on GKE does not support TPU v3 ("
	for _, c := range []struct {
		mode string
		gen  hw.Generation
		want []string
	}{
		{"flex", hw.TPU7x, []string{limit}},
		{"flex-start", hw.V6e, []string{limit}},
		{"FLEX", hw.V5e, []string{limit}},
		{"flex", hw.V5p, []string{limit}},
		{"flex", hw.V4, []string{v4}},
		{"flex", hw.V3, []string{v3}},
		{"spot", hw.V4, nil},
		{"on-demand", hw.TPU7x, nil},
		{"reservation", hw.TPU7x, nil},
		{"", hw.TPU7x, nil},
	} {
		got := GKEWarnings(c.mode, c.gen)
		ok := len(got) == len(c.want)
		for i := 0; ok && i < len(got); i++ {
			ok = strings.HasPrefix(got[i], c.want[i]) && !strings.Contains(got[i], "zone") && !strings.Contains(got[i], "single-host")
		}
		if !ok {
			t.Errorf("GKEWarnings(%q, %s) = %q, want %q", c.mode, c.gen, got, c.want)
		}
	}
}

// TestGKERoute (review 149 #6): a budget that drops flex-start for a
// generation names the route it does not price, GKE's flex-start node
// pools (what export xpk's flex asks for), with why: GKE bills them at
// Dynamic Workload Scheduler pricing, "billed using Dynamic Workload
// Scheduler pricing" on GKE's flex-start page (concepts/dws, read
// 2026-12-07), with no figure (modes.csv's price row). Not for v3 or v4,
// which that page says GKE's flex-start does not support.
func TestGKERoute(t *testing.T) {
	ls, err := DefaultLimits()
	if err != nil {
		t.Fatal(err)
	}
	fl, _ := flex(ls)
	const dws = "https://cloud.google.com/kubernetes-engine/docs/concepts/dws, read 2026-12-07"
	for _, c := range []struct {
		gens []string
		want string
	}{
		{[]string{"tpu7x"}, "; GKE flex-start node pools of tpu7x (what an xpk export of flex-start capacity asks for) are not in the price table: GKE bills them at Dynamic Workload Scheduler pricing, which publishes no price (" + dws + ")"},
		{[]string{"v5p", "v4", "tpu7x"}, "; GKE flex-start node pools of v5p, tpu7x ("},
		{[]string{"v4"}, ""},
		{[]string{"v3", "v4"}, ""},
		// xpk makes no v2 or v3 slice (its system characteristics
		// @367c8382): the route is not there (review 152: "GKE flex-start
		// node pools of v2")
		{[]string{"v2"}, ""},
		{[]string{"v2", "v6e"}, "; GKE flex-start node pools of v6e ("},
	} {
		got := fl.gkeRoute(c.gens)
		if c.want == "" && got != "" || !strings.HasPrefix(got, c.want) {
			t.Errorf("gkeRoute(%v) = %q, want %q", c.gens, got, c.want)
		}
	}
	var none flexTerms
	if got := none.gkeRoute([]string{"tpu7x"}); got != "" {
		t.Errorf("gkeRoute with no GKE row = %q, want none", got)
	}
}
