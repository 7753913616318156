package budget

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"shardlab/hw"
	"shardlab/plan"
)

// TestParseOptions: the defaults are shardlab budget's, and each bad
// option is an OptionError naming its JSON key (plan's OptionError for
// the job's options).
func TestParseOptions(t *testing.T) {
	r, err := ParseOptions(DefaultOptions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Tokens != 1e12 || r.Region != "us-central1" || len(r.Generations) != 4 || len(r.Modes) != len(Modes()) || r.Plan.Model.Name != plan.DefaultModel || len(r.Prices) == 0 {
		t.Errorf("ParseOptions(DefaultOptions()) = %+v, want 1e12 tokens of %s in us-central1, 4 generations, every mode, the built-in prices", r, plan.DefaultModel)
	}
	for _, c := range []struct {
		edit   func(*Options)
		option string
	}{
		{func(o *Options) { o.Tokens = "-1T" }, "tokens"},
		{func(o *Options) { o.Tokens = "1X" }, "tokens"},
		{func(o *Options) { o.Deadline = "30" }, "deadline"},
		{func(o *Options) { o.Budget = "NaN" }, "budget"},
		{func(o *Options) { o.Region = "mars" }, "region"},
		{func(o *Options) { o.Generations = "v6e,v6e" }, "generations"},
		{func(o *Options) { o.Modes = "free" }, "modes"},
		{func(o *Options) { o.SliceChips = "0" }, "slice_chips"},
		{func(o *Options) { o.SliceCounts = "65" }, "slices"},
		{func(o *Options) { o.SliceChips = "3" }, "slice_chips"},                                 // no generation has it
		{func(o *Options) { o.SliceChips, o.Generations = "256,512", "v5e,v6e" }, "slice_chips"}, // v5p has 512, neither of these
		{func(o *Options) { o.SpotPreemptionsPerHour = -1 }, "spot_preemptions_per_hour"},
		{func(o *Options) { o.SpotPreemptionsPerHour, o.Modes = 0.5, "on-demand,cud-1y" }, "spot_preemptions_per_hour"},
		{func(o *Options) { o.SliceChips = "8,16,32,64,128,256,512,1024"; o.SliceCounts = "1,2,3" }, "generations"}, // 96 configurations
	} {
		o := DefaultOptions()
		c.edit(&o)
		_, err := ParseOptions(o, nil)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != c.option || !errors.Is(err, ErrRequest) {
			t.Errorf("ParseOptions(%+v) = %v, want an OptionError on %s", o, err, c.option)
		}
	}
	o := DefaultOptions()
	o.Model = "llama9"
	var pe *plan.OptionError
	if _, err := ParseOptions(o, nil); !errors.As(err, &pe) || pe.Option != plan.OptionModel {
		t.Errorf("ParseOptions(model llama9) = %v, want plan's OptionError on model", err)
	}
}

// TestSliceSizeNoGenerationHas: a slice size none of the generations
// searched trains on is bad input, named with the sizes each has (it was
// a dropped configuration each and exit 1, "no configuration able to run
// the job"); a size one of them has is searched, and dropped for the
// others.
func TestSliceSizeNoGenerationHas(t *testing.T) {
	o := DefaultOptions()
	o.SliceChips, o.Generations = "3", "v6e,v5p"
	_, err := ParseOptions(o, nil)
	var oe *OptionError
	// v6e's slices (hw's catalog): 1 and 4 to 256 chips; v5p's past 12
	// listed end in its largest, 6144 chips
	if !errors.As(err, &oe) || oe.Option != "slice_chips" || oe.Value != "3" ||
		!strings.Contains(oe.Want, "(3 is none's): v6e 1, 4, 8, 16, 32, 64, 128, 256; v5p 4, 8, 16, ") || !strings.HasSuffix(oe.Want, ", …, 6144") {
		t.Errorf("slice chips 3: %v, want an OptionError on slice_chips naming v6e's and v5p's sizes", err)
	}
	r := Request{Tokens: 1e9, Region: "us-central1", Generations: []hw.Generation{hw.V6e}, Modes: []Mode{OnDemand}, SliceChips: []int{16, 3}}
	if _, err := Sweep(r); !errors.Is(err, ErrRequest) || !strings.Contains(err.Error(), "slice chips 3") {
		t.Errorf("Sweep with 3-chip slices: %v, want a request error naming slice chips 3", err)
	}
	o.SliceChips = "256,512"
	if _, err := ParseOptions(o, nil); err != nil {
		t.Errorf("slice chips 256,512 of v6e and v5p: %v, want searched (v5p has 512)", err)
	}
}

// TestParseCounts: the counts' suffixes by hand.
func TestParseCounts(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
	}{{"1T", 1e12}, {"500B", 5e11}, {"2.5M", 2.5e6}, {"1e12", 1e12}, {"7k", 7e3}} {
		if got, err := ParseTokens(c.in); err != nil || got != c.want {
			t.Errorf("ParseTokens(%q) = %g, %v; want %g", c.in, got, err, c.want)
		}
	}
	if got, err := ParseDollars("$2M"); err != nil || got != 2e6 {
		t.Errorf("ParseDollars($2M) = %g, %v; want 2e6", got, err)
	}
	for _, c := range []struct {
		in   string
		want time.Duration
	}{{"30d", 30 * 24 * time.Hour}, {"36h", 36 * time.Hour}, {"90m", 90 * time.Minute}, {"0", 0}} {
		if got, err := ParseDeadline(c.in); err != nil || got != c.want {
			t.Errorf("ParseDeadline(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	if g, err := ParseGenerations("V6E, tpu7x"); err != nil || len(g) != 2 || g[0] != hw.V6e || g[1] != hw.TPU7x {
		t.Errorf("ParseGenerations(V6E, tpu7x) = %v, %v", g, err)
	}
}

// FuzzParseOptions: any text in the budget's text options is a request
// or an OptionError, never a panic.
func FuzzParseOptions(f *testing.F) {
	f.Add("1T", "30d", "2M", "us-central1", "v6e", "spot", "256", "1,2", "tpu7x=5.5", "v6e=300")
	f.Add("1e99", "-1h", "$", "", ",", "flex,flex", "0", "+1", "tpu7x:=,", "=NaN")
	f.Fuzz(func(t *testing.T, tokens, deadline, dollars, region, gens, modes, chips, counts, price, watts string) {
		o := DefaultOptions()
		o.Tokens, o.Deadline, o.Budget, o.Region, o.Generations, o.Modes, o.SliceChips, o.SliceCounts = tokens, deadline, dollars, region, gens, modes, chips, counts
		o.Price, o.ChipWatts = price, watts
		r, err := ParseOptions(o, Prices{})
		if err == nil && (r.Tokens < 1 || len(r.Generations) == 0 || len(r.Modes) == 0) {
			t.Errorf("ParseOptions(%+v) = %+v: accepted an empty question", o, r)
		}
		for _, p := range r.Prices {
			if !(p.USDPerChipHour > 0 && p.USDPerChipHour <= MaxPrice) {
				t.Errorf("ParseOptions(%+v): price %+v", o, p)
			}
		}
		for _, w := range r.ChipPower.By {
			if !(w > 0 && w <= MaxChipWatts) {
				t.Errorf("ParseOptions(%+v): chip power %+v", o, r.ChipPower)
			}
		}
	})
}

func ExampleParseOptions() {
	o := DefaultOptions()
	o.Tokens, o.Generations, o.Modes, o.Deadline = "500B", "v6e,tpu7x", "on-demand,spot", "30d"
	r, err := ParseOptions(o, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Tokens, r.Generations, r.Modes, r.Deadline, r.SliceChips, r.SliceCounts)
	o.Deadline = "30"
	_, err = ParseOptions(o, nil)
	fmt.Println(err)
	// Output:
	// 5e+11 [v6e tpu7x] [on-demand spot] 720h0m0s [256] [1 2 4]
	// budget: deadline "30": want a duration from 0 (none) to 3650d, in d, h or m (30d, 36h)
}

// TestDroppedInHWsWords: a slice count hw refuses for the slice (two
// tpu7x-2, which no Multislice joins) is dropped with hw's reason in its
// own words, without "hw: " (errtext.Detail; review 145 #5).
func TestDroppedInHWsWords(t *testing.T) {
	c, err := hw.Lookup("tpu7x")
	if err != nil {
		t.Fatal(err)
	}
	r := Request{SliceChips: []int{1}, SliceCounts: []int{1, 2}}
	out, dropped := r.configs(c)
	if len(out) != 1 || len(dropped) != 1 || dropped[0].What != "2 × tpu7x-2" ||
		strings.HasPrefix(dropped[0].Why, "hw: ") || !strings.Contains(dropped[0].Why, "does not join a Multislice") {
		t.Errorf("configs(tpu7x, 1 chip, 1 and 2 slices) = %d configs, dropped %+v; want 1 and 2 × tpu7x-2 dropped in hw's words without its package", len(out), dropped)
	}
}
