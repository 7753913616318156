package budget

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestParseRegion: a region is one of carbon.csv's (Google's
// region-carbon-info lists every region), in any case, as README says of
// every enumerated value. A made-up region was accepted and priced
// ("mars-north1"), and "EUROPE-WEST4" refused.
func TestParseRegion(t *testing.T) {
	for in, want := range map[string]string{"europe-west4": "europe-west4", "EUROPE-WEST4": "europe-west4", " us-central1 ": "us-central1", "US-Central2": "us-central2"} {
		if got, err := ParseRegion(in); err != nil || got != want {
			t.Errorf("ParseRegion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"mars-north1", "africa-…, asia-…"},             // no such area: the areas
		{"europe-west5", "in europe-: europe-central2"}, // its area's regions
		{"us-central1-a", "us-central1, us-central2"},   // a zone, not a region
		{"", "one of the 44"},
	} {
		_, err := ParseRegion(tt.in)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != "region" || oe.Value != tt.in || !strings.Contains(oe.Want, tt.want) || !errors.Is(err, ErrRequest) {
			t.Errorf("ParseRegion(%q) = %v, want an OptionError on region listing %q", tt.in, err, tt.want)
		}
	}
}

// TestTablesNameKnownRegions: the price table's regions and flex-start's
// zones are in the list of regions.
func TestTablesNameKnownRegions(t *testing.T) {
	if n := len(Regions()); n != 44 {
		t.Fatalf("%d regions, want carbon.csv's 44", n)
	}
	ps, err := DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Region != AnyRegion && !KnownRegion(p.Region) {
			t.Errorf("prices.csv prices %s %s in %q, not a known region", p.Generation, p.Mode, p.Region)
		}
	}
	ls, err := DefaultLimits()
	if err != nil {
		t.Fatal(err)
	}
	fl, _ := flex(ls)
	for g, zones := range fl.zones {
		for _, z := range zones {
			if !KnownRegion(z[:strings.LastIndex(z, "-")]) {
				t.Errorf("modes.csv offers %s in zone %q, not in a known region", g, z)
			}
		}
	}
}

func ExampleParseRegion() {
	r, err := ParseRegion("EUROPE-WEST4")
	fmt.Println(r, err, KnownRegion(r))
	_, err = ParseRegion("mars-north1")
	fmt.Println(err != nil, len(Regions()))
	// Output:
	// europe-west4 <nil> true
	// true 44
}
