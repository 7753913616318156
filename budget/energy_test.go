package budget

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"shardlab/hw"
)

// The energy and emissions of a row by hand: chips × watts × hours, and
// that energy at the grid's intensity (location-based). A constructed
// carbon table gives us-central1 a quarter carbon-free at 400 g/kWh; v6e
// chips draw 250 W, TPU7x chips (unpriced here, so no rows) 900 W.
func TestEnergyByHand(t *testing.T) {
	r := smallRequest(t)
	var err error
	if r.ChipPower, err = ParseChipWatts("v6e=250,tpu7x=900"); err != nil {
		t.Fatal(err)
	}
	if r.Carbon, err = ParseCarbon(strings.NewReader(strings.Join(carbonHeader, ",") + "\n" +
		"us-central1,Iowa,2024,0.25,400,test table,2026-12-06\n")); err != nil {
		t.Fatal(err)
	}
	res, err := Sweep(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) == 0 {
		t.Fatal("no rows")
	}
	for _, row := range res.Rows {
		hours := row.TimeToTrainS / 3600
		kwh := float64(row.Chips) * 250 * hours / 1000
		e := row.Energy
		if e == nil || e.ChipWatts != 250 || math.Abs(e.KWh-kwh) > 1e-9*kwh {
			t.Fatalf("%s: energy %+v, want %d chips × 250 W × %.3f h = %.3f kWh", row.name(), e, row.Chips, hours, kwh)
		}
		if want := kwh * 400 / 1000; e.KgCO2e == nil || math.Abs(*e.KgCO2e-want) > 1e-9*want {
			t.Errorf("%s: %v kg CO2e, want %.3f kWh × 400 g (location-based) = %.3f kg", row.name(), e.KgCO2e, kwh, want)
		}
	}
	var b bytes.Buffer
	if err := res.WriteText(&b, ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"MWh", "t CO2e", "energy (an estimate)", "v6e 250 W", "location-based", "400 gCO2eq/kWh", "25 % of its hours"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the text lacks %q:\n%s", want, b.String())
		}
	}
	if res.Carbon == nil || res.Carbon.Region != "us-central1" || res.Carbon.GridGCO2PerKWh != 400 {
		t.Errorf("the result's carbon figures: %+v, want us-central1's", res.Carbon)
	}
	// no row for the region: energy, but no emissions
	r.Region = "europe-west4"
	r.Prices = append(r.Prices, Price{Generation: hw.V6e, Mode: OnDemand, Region: "europe-west4", USDPerChipHour: 2, Source: "test", Read: "2026-12-06"})
	if res, err = Sweep(r); err != nil {
		t.Fatal(err)
	}
	for _, row := range res.Rows {
		if row.Energy == nil || row.Energy.KgCO2e != nil {
			t.Errorf("%s in europe-west4: energy %+v, want kWh without CO2e", row.name(), row.Energy)
		}
	}
	// no chip power: no energy
	r.ChipPower = ChipPower{}
	if res, err = Sweep(r); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := res.WriteText(&b, ""); err != nil {
		t.Fatal(err)
	}
	if res.Rows[0].Energy != nil || strings.Contains(b.String(), "MWh") {
		t.Errorf("without a chip power the rows carry energy: %+v", res.Rows[0].Energy)
	}
}

func TestDefaultCarbon(t *testing.T) {
	c, err := DefaultCarbon()
	if err != nil {
		t.Fatal(err)
	}
	// GoogleCloudPlatform/region-carbon-info data/yearly/2024.csv @49f3f26b
	for _, tt := range []struct {
		region    string
		cfe, grid float64
	}{
		{"us-central1", 0.87, 412.72},
		{"europe-west4", 0.83, 208.81},
		{"asia-northeast1", 0.17, 452.85},
	} {
		rc, ok := c.Lookup(tt.region)
		if !ok || rc.CFEShare != tt.cfe || rc.GridGCO2PerKWh != tt.grid || rc.Year != 2024 {
			t.Errorf("%s: %+v, want CFE %g and %g g/kWh in 2024", tt.region, rc, tt.cfe, tt.grid)
		}
	}
	if len(c) != 44 {
		t.Errorf("%d regions, want the source's 44", len(c))
	}
}

func TestParseCarbonRefuses(t *testing.T) {
	head := strings.Join(carbonHeader, ",") + "\n"
	ok := "us-central1,Iowa,2024,0.87,412.72,src,2026-12-06\n"
	for _, tt := range []struct {
		name, body, field string
	}{
		{"empty", "", ""},
		{"header only", head, ""},
		{"bad header", "region,where\n" + ok, ""},
		{"region", head + "Iowa,Iowa,2024,0.87,412.72,src,2026-12-06\n", "region"},
		{"repeat", head + ok + ok, "region"},
		{"location", head + "us-central1, ,2024,0.87,412.72,src,2026-12-06\n", "location"},
		{"year", head + "us-central1,Iowa,24,0.87,412.72,src,2026-12-06\n", "year"},
		{"share above 1", head + "us-central1,Iowa,2024,1.5,412.72,src,2026-12-06\n", "cfe_share"},
		{"share NaN", head + "us-central1,Iowa,2024,NaN,412.72,src,2026-12-06\n", "cfe_share"},
		{"grid negative", head + "us-central1,Iowa,2024,0.87,-1,src,2026-12-06\n", "grid_gco2eq_per_kwh"},
		{"grid Inf", head + "us-central1,Iowa,2024,0.87,Inf,src,2026-12-06\n", "grid_gco2eq_per_kwh"},
		{"no source", head + "us-central1,Iowa,2024,0.87,412.72,,2026-12-06\n", "source"},
		{"date", head + "us-central1,Iowa,2024,0.87,412.72,src,yesterday\n", "read"},
	} {
		_, err := ParseCarbon(strings.NewReader(tt.body))
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Field != tt.field {
			t.Errorf("%s: %v, want a ParseError on %q", tt.name, err, tt.field)
		}
	}
}

func FuzzParseCarbon(f *testing.F) {
	f.Add(carbonCSV)
	f.Add([]byte(strings.Join(carbonHeader, ",") + "\nus-central1,Iowa,2024,0.87,412.72,src,2026-12-06\n"))
	f.Add([]byte("region\n\"unterminated"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCarbon(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, rc := range c {
			if !(rc.CFEShare >= 0 && rc.CFEShare <= 1 && rc.GridGCO2PerKWh >= 0 && rc.GridGCO2PerKWh <= MaxGridGCO2) || !regionSpelling(rc.Region) {
				t.Errorf("accepted %+v", rc)
			}
		}
	})
}

func TestParseChipWatts(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want map[hw.Generation]float64 // by generation; nil: none given
	}{
		{"", nil},
		{"0", nil},
		{"350", map[hw.Generation]float64{hw.V5e: 350, hw.TPU7x: 350}},
		{"v6e=300, TPU7x=600.5", map[hw.Generation]float64{hw.V6e: 300, hw.TPU7x: 600.5}},
	} {
		p, err := ParseChipWatts(tt.in)
		if err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		if p.Given() != (tt.want != nil) {
			t.Errorf("%q: given %v", tt.in, p.Given())
		}
		for g, w := range tt.want {
			if got, ok := p.Watts(g); !ok || got != w {
				t.Errorf("%q: %s %g W (%v), want %g", tt.in, g, got, ok, w)
			}
		}
	}
	if _, ok := (ChipPower{By: map[hw.Generation]float64{hw.V6e: 300}}).Watts(hw.V5p); ok {
		t.Error("a generation not named has a power")
	}
	for _, in := range []string{"-1", "5001", "NaN", "Inf", "1e3", "v6e", "v6e=", "v6e=0", "v9=300", "v6e=300,v6e=310", "v6e=300,", "300,400"} {
		_, err := ParseChipWatts(in)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != "chip_watts" {
			t.Errorf("%q: %v, want an OptionError on chip_watts", in, err)
		}
	}
}

func TestParseUserPrices(t *testing.T) {
	ps, err := ParseUserPrices("tpu7x=5.5, tpu7x:spot=2.2,v6e:cud-1y=1.5", "europe-west4")
	if err != nil {
		t.Fatal(err)
	}
	want := Prices{
		{Generation: hw.TPU7x, Mode: OnDemand, Region: "europe-west4", USDPerChipHour: 5.5, Source: UserSource, Given: true},
		{Generation: hw.TPU7x, Mode: Spot, Region: "europe-west4", USDPerChipHour: 2.2, Source: UserSource, Given: true},
		{Generation: hw.V6e, Mode: CUD1y, Region: "europe-west4", USDPerChipHour: 1.5, Source: UserSource, Given: true},
	}
	if len(ps) != len(want) {
		t.Fatalf("%+v, want %+v", ps, want)
	}
	for i := range want {
		if ps[i] != want[i] {
			t.Errorf("price %d: %+v, want %+v", i, ps[i], want[i])
		}
	}
	// With: the user's v6e on-demand in us-central1 replaces that row,
	// and the table's "*" row stays behind the region's
	table := Prices{
		{Generation: hw.V6e, Mode: OnDemand, Region: AnyRegion, USDPerChipHour: 2.7, Source: "s", Read: "2026-12-04"},
		{Generation: hw.V6e, Mode: OnDemand, Region: "us-central1", USDPerChipHour: 2.9, Source: "s", Read: "2026-12-04"},
	}
	user, _ := ParseUserPrices("v6e=3.1", "us-central1")
	got := table.With(user)
	if p, _ := got.Lookup(hw.V6e, OnDemand, "us-central1"); p.USDPerChipHour != 3.1 || p.Source != UserSource {
		t.Errorf("us-central1: %+v, want the user's $3.1", p)
	}
	if p, _ := got.Lookup(hw.V6e, OnDemand, "europe-west4"); p.USDPerChipHour != 2.7 {
		t.Errorf("europe-west4: %+v, want the table's $2.7", p)
	}
	if len(table) != 2 || table[1].USDPerChipHour != 2.9 {
		t.Errorf("With changed the table: %+v", table)
	}
	if ps, err := ParseUserPrices("0", "us-central1"); ps != nil || err != nil {
		t.Errorf("0: %v, %v, want none", ps, err)
	}
	for _, in := range []string{"tpu7x", "tpu7x=", "tpu7x=0", "tpu7x=-1", "tpu7x=NaN", "tpu7x=1001", "tpu7x:daily=1", "v9=1", "tpu7x=1,tpu7x:on-demand=2", "tpu7x=1,,v6e=2", "tpu7x=1e2"} {
		_, err := ParseUserPrices(in, "us-central1")
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != "price" {
			t.Errorf("%q: %v, want an OptionError on price", in, err)
		}
	}
}

// A price table cannot pass its rows off as the user's: only
// ParseUserPrices marks a price given.
func TestTablePriceIsNotGiven(t *testing.T) {
	ps, err := ParsePrices(strings.NewReader(header+"tpu7x,on-demand,*,5,"+UserSource+",2026-12-06,\n"), testToday)
	if err != nil {
		t.Fatal(err)
	}
	if ps[0].Given || !strings.Contains(ps[0].provenance(), "read 2026-12-06") {
		t.Errorf("a table row with the user's source: given %v, %q", ps[0].Given, ps[0].provenance())
	}
}

// Prices and chip powers the sweep never uses are named in its notes; an
// error names the item at fault.
func TestUnusedAndBadItems(t *testing.T) {
	r := smallRequest(t)
	user, err := ParseUserPrices("v5p=3,v6e:cud-3y=1", r.Region)
	if err != nil {
		t.Fatal(err)
	}
	r.Prices = r.Prices.With(user)
	if r.ChipPower, err = ParseChipWatts("v6e=300,v4=200"); err != nil {
		t.Fatal(err)
	}
	res, err := Sweep(r)
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(res.Notes, "\n")
	for _, want := range []string{"your v5p on-demand price is unused", "your v6e cud-3y price is unused", "your chip power for v4 is unused"} {
		if !strings.Contains(notes, want) {
			t.Errorf("the notes lack %q:\n%s", want, notes)
		}
	}
	for _, tt := range []struct {
		err  error
		item string
	}{
		{func() error { _, err := ParseUserPrices("v6e=2,tpu7x=1e3", "us-central1"); return err }(), `"tpu7x=1e3" is not`},
		{func() error { _, err := ParseChipWatts("v6e=300,v5p=-1"); return err }(), `"v5p=-1" is not`},
	} {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.item) {
			t.Errorf("%v, want it to name %s", tt.err, tt.item)
		}
	}
	if got := sig3(0.04791); got != "0.0479" {
		t.Errorf("sig3(0.04791) = %q", got)
	}
	if got := sig3(1234.5); got != "1234" && got != "1235" {
		t.Errorf("sig3(1234.5) = %q", got)
	}
}

func ExampleParseUserPrices() {
	ps, err := ParseUserPrices("tpu7x=5.5,tpu7x:spot=2.2", "us-central1")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range ps {
		fmt.Println(p.Generation, p.Mode, p.Region, p.USDPerChipHour, p.provenance())
	}
	_, err = ParseUserPrices("tpu7x=-1", "us-central1")
	fmt.Println(err != nil)
	// Output:
	// tpu7x on-demand us-central1 5.5 given by the user (not a published price)
	// tpu7x spot us-central1 2.2 given by the user (not a published price)
	// true
}

func ExampleParseChipWatts() {
	p, _ := ParseChipWatts("v6e=300,tpu7x=600")
	for _, g := range []hw.Generation{hw.V6e, hw.TPU7x, hw.V5p} {
		w, ok := p.Watts(g)
		fmt.Println(g, w, ok)
	}
	// Output:
	// v6e 300 true
	// tpu7x 600 true
	// v5p 0 false
}
