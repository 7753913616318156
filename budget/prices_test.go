package budget

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"shardlab/hw"
)

const header = "generation,mode,region,usd_per_chip_hour,source,read,note\n"

// testToday is the date the tests read their price tables on.
var testToday = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func TestDefaultPrices(t *testing.T) {
	ps, err := DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	// the figures issue 31 quotes, each from the row's cited source
	for _, c := range []struct {
		g      hw.Generation
		m      Mode
		region string
		want   float64
	}{
		{hw.V6e, OnDemand, "us-east1", 2.70}, // Trillium GA: $2.7000 per chip-hour
		{hw.V6e, CUD1y, "us-east1", 1.89},    // 1-year: $1.8900
		{hw.V6e, CUD3y, "us-east1", 1.22},    // 3-year: $1.2200
		{hw.V5e, OnDemand, "us-west4", 1.20},
		{hw.V5p, OnDemand, "us-east5", 4.20},
		{hw.V4, OnDemand, "us-central2", 3.22}, // the pricing page on 2022-08-11
	} {
		p, ok := ps.Lookup(c.g, c.m, c.region)
		if !ok || p.USDPerChipHour != c.want {
			t.Errorf("Lookup(%s, %s, %s) = %v, %v; want %v", c.g, c.m, c.region, p.USDPerChipHour, ok, c.want)
		}
	}
	// no citable price: absent, never zero
	for _, c := range []struct {
		g      hw.Generation
		m      Mode
		region string
	}{
		{hw.TPU7x, OnDemand, "us-central1"},
		{hw.V6e, Spot, "us-east1"},
		{hw.V4, OnDemand, "us-central1"}, // v4's price is us-central2's
	} {
		if p, ok := ps.Lookup(c.g, c.m, c.region); ok {
			t.Errorf("Lookup(%s, %s, %s) = %+v, want no price", c.g, c.m, c.region, p)
		}
	}
}

func TestParsePricesErrors(t *testing.T) {
	good := "v6e,on-demand,*,2.70,https://example.com/a,2026-12-04,\n"
	tests := []struct {
		name, in, field string
		line            int
	}{
		{"empty", "", "", 1},
		{"header only", header, "", 1},
		{"wrong header", "gen,mode,region,price,source,read,note\n" + good, "header", 1},
		{"too few fields", header + "v6e,on-demand,*,2.70,src,2026-12-04\n", "", 2},
		{"unknown generation", header + "v9,on-demand,*,2.70,src,2026-12-04,\n", "generation", 2},
		{"alias, not the name", header + "trillium,on-demand,*,2.70,src,2026-12-04,\n", "generation", 2},
		{"unknown mode", header + "v6e,flex,*,2.70,src,2026-12-04,\n", "mode", 2},
		{"bad region", header + "v6e,on-demand,US Central,2.70,src,2026-12-04,\n", "region", 2},
		{"unknown region", header + "v6e,on-demand,mars-north1,2.70,src,2026-12-04,\n", "region", 2},
		{"zero price", header + "v6e,on-demand,*,0,src,2026-12-04,\n", "usd_per_chip_hour", 2},
		{"negative price", header + "v6e,on-demand,*,-2.70,src,2026-12-04,\n", "usd_per_chip_hour", 2},
		{"NaN price", header + "v6e,on-demand,*,NaN,src,2026-12-04,\n", "usd_per_chip_hour", 2},
		{"dollar sign", header + "v6e,on-demand,*,$2.70,src,2026-12-04,\n", "usd_per_chip_hour", 2},
		{"huge price", header + "v6e,on-demand,*,1e9,src,2026-12-04,\n", "usd_per_chip_hour", 2},
		{"no source", header + "v6e,on-demand,*,2.70,,2026-12-04,\n", "source", 2},
		{"bad date", header + "v6e,on-demand,*,2.70,src,2026-13-04,\n", "read", 2},
		{"no date", header + "v6e,on-demand,*,2.70,src,,\n", "read", 2},
		{"read tomorrow", header + "v6e,on-demand,*,2.70,src,2026-12-07,\n", "read", 2},
		{"read in 2099", header + "v6e,on-demand,*,2.70,src,2099-01-01,\n", "read", 2},
		{"duplicate row", header + good + good, "region", 3},
		{"duplicate row in another case", header + good + "V6E,On-Demand,*,2.70,https://example.com/a,2026-12-04,\n", "region", 3},
		{"space around the generation", header + " v6e,on-demand,*,2.70,src,2026-12-04,\n", "generation", 2},
		{"control in note", header + "v6e,on-demand,*,2.70,src,2026-12-04,\"a\x01\"\n", "note", 2},
		{"bare quote", header + "v6e,on-demand,*,2.70,sr\"c,2026-12-04,\n", "", 2},
	}
	for _, tt := range tests {
		_, err := ParsePrices(strings.NewReader(tt.in), testToday)
		var pe *ParseError
		if !errors.As(err, &pe) || !errors.Is(err, ErrPrices) {
			t.Errorf("%s: ParsePrices = %v, want a *ParseError", tt.name, err)
			continue
		}
		if pe.Field != tt.field || pe.Line != tt.line {
			t.Errorf("%s: error on line %d field %q, want line %d field %q (%v)", tt.name, pe.Line, pe.Field, tt.line, tt.field, err)
		}
		if !strings.HasPrefix(err.Error(), "budget: prices line ") {
			t.Errorf("%s: error %q does not name the package and line", tt.name, err)
		}
	}
}

// TestParsePricesAnyCase: a price table's generation, mode and region
// match in any case, as README says of every enumerated value and as the
// flags do (V6E and On-Demand exited 2), and are kept as the names.
func TestParsePricesAnyCase(t *testing.T) {
	ps, err := ParsePrices(strings.NewReader(header+"V6E,On-Demand,EUROPE-WEST4,2.7,src,2026-12-04,\nTPU7X,CUD-1Y,*,3,src,2026-12-04,\n"), testToday)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := ps.Lookup(hw.V6e, OnDemand, "europe-west4"); !ok || p.Region != "europe-west4" || p.USDPerChipHour != 2.7 {
		t.Errorf("V6E,On-Demand,EUROPE-WEST4: Lookup(v6e, on-demand, europe-west4) = %+v, %v", p, ok)
	}
	if _, ok := ps.Lookup(hw.TPU7x, CUD1y, "us-east1"); !ok {
		t.Errorf("TPU7X,CUD-1Y,*: no tpu7x cud-1y price")
	}
}

// TestParsePricesReadByToday: a price was read on or before the caller's
// today (2099-01-01 was accepted and printed as "read 2099-01-01"); today
// itself is in the past enough, and the day after is not.
func TestParsePricesReadByToday(t *testing.T) {
	row := func(read string) string { return header + "v6e,on-demand,*,2.70,src," + read + ",\n" }
	if ps, err := ParsePrices(strings.NewReader(row("2026-12-06")), testToday); err != nil || ps[0].Read != "2026-12-06" {
		t.Errorf("read today: %v, %v; want accepted", ps, err)
	}
	_, err := ParsePrices(strings.NewReader(row("2026-12-07")), testToday)
	if err == nil || !strings.Contains(err.Error(), `read "2026-12-07": want the date the price was read, on or before today (2026-12-06)`) {
		t.Errorf("read tomorrow: %v; want refused naming today", err)
	}
	// today is the caller's date where it is: late on the 6th in UTC is
	// already the 7th in Tokyo
	tokyo := time.FixedZone("JST", 9*3600)
	if _, err := ParsePrices(strings.NewReader(row("2026-12-07")), time.Date(2026, 12, 6, 20, 0, 0, 0, time.UTC).In(tokyo)); err != nil {
		t.Errorf("read on the 7th in Tokyo, where it is the 7th: %v", err)
	}
}

// TestTablesReadInThePast: the built-in tables were read before the test
// runs (the package reads no clock, so their dates are checked here).
func TestTablesReadInThePast(t *testing.T) {
	today := time.Now().Format(time.DateOnly)
	ps, err := DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Read > today {
			t.Errorf("prices.csv: %s %s read %s, after today (%s)", p.Generation, p.Mode, p.Read, today)
		}
	}
	ls, err := DefaultLimits()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if l.Read > today {
			t.Errorf("modes.csv: %+v read after today (%s)", l, today)
		}
	}
	c, err := DefaultCarbon()
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range c {
		if rc.Read > today {
			t.Errorf("carbon.csv: %s read %s, after today (%s)", rc.Region, rc.Read, today)
		}
	}
}

func TestPricesRoundTrip(t *testing.T) {
	ps, err := DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := ps.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	got, err := ParsePrices(&b, testToday)
	if err != nil || !reflect.DeepEqual(got, ps) {
		t.Errorf("ParsePrices(WriteCSV(prices)) = %+v, %v; want %+v", got, err, ps)
	}
}

// FuzzParsePrices checks that the parser never panics, that every error is
// a *ParseError, and that what it accepts it writes back and reads again
// unchanged.
func FuzzParsePrices(f *testing.F) {
	f.Add([]byte(pricesCSV))
	f.Add([]byte(header + "v6e,on-demand,*,2.70,https://example.com/a,2026-12-04,\n"))
	f.Add([]byte(header + "v4,cud-1y,us-central2,3,\"a, b\",2022-08-11,\"say \"\"x\"\"\"\n"))
	f.Add([]byte("generation,mode\n"))
	f.Add([]byte(header + "v6e,on-demand,mars-north1,2.7,http://x,2026-12-04,n\n"))
	f.Add([]byte(header + "v6e,on-demand,*,2.7,http://x,2099-01-01,n\n"))
	f.Add([]byte(header + "v6e,on-demand,*,2.7,http://x,2026-12-06,n\n"))
	f.Add([]byte(header + "V6E,On-Demand,EUROPE-WEST4,2.7,http://x,2026-12-04,n\nv6e,on-demand,europe-west4,2.7,http://x,2026-12-04,n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := ParsePrices(bytes.NewReader(data), testToday)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			return
		}
		for _, p := range ps {
			if p.Region != AnyRegion && !KnownRegion(p.Region) {
				t.Fatalf("accepted region %q", p.Region)
			}
			if p.Read > "2026-12-06" {
				t.Fatalf("accepted a price read on %s, after today (2026-12-06)", p.Read)
			}
			if _, err := ParseMode(string(p.Mode)); err != nil || strings.ToLower(string(p.Generation)) != string(p.Generation) {
				t.Fatalf("accepted %q %q, not the names in lower case", p.Generation, p.Mode)
			}
		}
		var b bytes.Buffer
		if err := ps.WriteCSV(&b); err != nil {
			t.Fatal(err)
		}
		again, err := ParsePrices(&b, testToday)
		if err != nil || !reflect.DeepEqual(again, ps) {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, ps)
		}
	})
}

func ExampleParsePrices() {
	ps, err := ParsePrices(strings.NewReader("generation,mode,region,usd_per_chip_hour,source,read,note\n"+
		"v6e,on-demand,*,2.70,Trillium GA announcement,2026-12-04,starting price\n"), time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC))
	if err != nil {
		panic(err)
	}
	p, ok := ps.Lookup(hw.V6e, OnDemand, "us-east1")
	fmt.Println(p.USDPerChipHour, ok, p.Read)
	_, ok = ps.Lookup(hw.TPU7x, OnDemand, "us-east1")
	fmt.Println(ok)
	// Output:
	// 2.7 true 2026-12-04
	// false
}

// TestUserPriceEchoedAsTyped: a bad --price item is echoed as the user
// typed it (review171: "tpu7x=Inf" read back as "tpu7x=inf"), while
// generations and modes still match in any case.
func TestUserPriceEchoedAsTyped(t *testing.T) {
	for _, in := range []string{"tpu7x=Inf", "v6e:SPOT=NaN", "TPU7x=-1"} {
		_, err := ParseUserPrices(in, "us-central1")
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q is not", in)) {
			t.Errorf("ParseUserPrices(%q) = %v, want the item echoed as typed", in, err)
		}
	}
	p, err := ParseUserPrices("TPU7x:SPOT=2.5", "us-central1")
	if err != nil || len(p) != 1 || p[0].Generation != "tpu7x" || p[0].Mode != Spot {
		t.Errorf("ParseUserPrices(TPU7x:SPOT=2.5) = %+v, %v, want tpu7x spot", p, err)
	}
	if _, err := ParseUserPrices("v6e=1,V6E=1", "us-central1"); err == nil {
		t.Error("a generation given twice in two cases was accepted")
	}
}
