package budget

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"shardlab/hw"
)

// RegionCarbon is one row of the carbon table: a Google Cloud region's
// carbon-free energy share and its grid's carbon intensity for a year, as
// Google publishes them (GoogleCloudPlatform/region-carbon-info). The
// share ("Google CFE") is "the average percentage of time your
// application will be running on carbon-free energy" there; the grid's
// intensity, "the average operational gross emissions per unit of energy
// from the grid", is what the rest of the hours emit.
type RegionCarbon struct {
	Region   string  `json:"region"`
	Location string  `json:"location"`
	Year     int     `json:"year"`
	CFEShare float64 `json:"cfe_share_fraction"`
	// GridGCO2PerKWh is grams of CO2-equivalent a kWh from the grid.
	GridGCO2PerKWh float64 `json:"grid_gco2eq_per_kwh"`
	Source         string  `json:"source"`
	Read           string  `json:"read"`
}

// Carbon is a carbon table, one row per region.
type Carbon []RegionCarbon

// carbonHeader is the carbon table's header row, in order.
var carbonHeader = []string{"region", "location", "year", "cfe_share", "grid_gco2eq_per_kwh", "source", "read"}

// The bounds of a carbon row's figures: a share is a fraction, and no
// grid emits more than a coal plant's kilogram a kWh by much.
const (
	minCarbonYear = 2000
	maxCarbonYear = 2100
	MaxGridGCO2   = 2000
)

// regionRE is a Google Cloud region's spelling.
var regionRE = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+$`)

// regionSpelling reports whether s is spelt as a Google Cloud region
// (us-central1, europe-west4): the carbon table's rows, which make the
// list of regions (Regions) others are checked against.
func regionSpelling(s string) bool { return regionRE.MatchString(s) }

// ParseCarbon reads a carbon table: CSV with the header
// region,location,year,cfe_share,grid_gco2eq_per_kwh,source,read and one
// row per region, every field required.
func ParseCarbon(r io.Reader) (Carbon, error) {
	seen := map[string]int{}
	return readCSV(r, carbonHeader, "carbon", func(rec []string, line int) (RegionCarbon, error) {
		c, err := parseCarbon(rec, line)
		if err != nil {
			return RegionCarbon{}, err
		}
		if prev, ok := seen[c.Region]; ok {
			return RegionCarbon{}, &ParseError{Line: line, Field: "region", Value: c.Region, Want: fmt.Sprintf("one row per region (line %d has it)", prev)}
		}
		seen[c.Region] = line
		return c, nil
	})
}

// parseCarbon reads one row.
func parseCarbon(rec []string, line int) (RegionCarbon, error) {
	refuse := func(field, value, want string) error {
		return &ParseError{Line: line, Field: field, Value: value, Want: want}
	}
	c := RegionCarbon{Region: rec[0], Location: rec[1], Source: rec[5], Read: rec[6]}
	if !regionSpelling(c.Region) {
		return c, refuse("region", c.Region, "a region such as us-central1")
	}
	if strings.TrimSpace(c.Location) == "" || c.Location != strings.TrimSpace(c.Location) || hasControl(c.Location) {
		return c, refuse("location", c.Location, "the region's place, without leading or trailing spaces")
	}
	y, err := strconv.Atoi(rec[2])
	if err != nil || y < minCarbonYear || y > maxCarbonYear || strconv.Itoa(y) != rec[2] {
		return c, refuse("year", rec[2], fmt.Sprintf("the year the figures are for, %d to %d", minCarbonYear, maxCarbonYear))
	}
	c.Year = y
	if c.CFEShare, err = decimal(rec[3], 0, 1); err != nil {
		return c, refuse("cfe_share", rec[3], "the carbon-free energy share, a decimal number from 0 to 1")
	}
	if c.GridGCO2PerKWh, err = decimal(rec[4], 0, MaxGridGCO2); err != nil {
		return c, refuse("grid_gco2eq_per_kwh", rec[4], fmt.Sprintf("grams of CO2-equivalent a kWh, a decimal number from 0 to %d", MaxGridGCO2))
	}
	if err := checkProvenance(refuse, "figure", c.Source, c.Read, ""); err != nil {
		return c, err
	}
	return c, nil
}

// Lookup is the region's row.
func (c Carbon) Lookup(region string) (RegionCarbon, bool) {
	i := slices.IndexFunc(c, func(rc RegionCarbon) bool { return rc.Region == region })
	if i < 0 {
		return RegionCarbon{}, false
	}
	return c[i], true
}

//go:embed carbon.csv
var carbonCSV []byte

// DefaultCarbon is the table in carbon.csv: Google's 2024 figures for
// every region, read from GoogleCloudPlatform/region-carbon-info.
func DefaultCarbon() (Carbon, error) { return ParseCarbon(bytes.NewReader(carbonCSV)) }

// regions is the regions of carbon.csv, in its order; nil if the table
// does not parse (TestDefaultCarbon holds it valid).
var regions = sync.OnceValue(func() []string {
	c, err := DefaultCarbon()
	if err != nil {
		return nil
	}
	out := make([]string, len(c))
	for i, rc := range c {
		out[i] = rc.Region
	}
	return out
})

// Regions lists the Google Cloud regions: those of carbon.csv, which
// Google's region-carbon-info gives for every region it runs (44 in its
// 2024 table). It is the one list the package checks a region against
// (ParseRegion, Sweep, a price table's rows); a region opened after it
// is refused until the table has it.
func Regions() []string { return slices.Clone(regions()) }

// KnownRegion reports whether s is one of Regions, spelt in lower case.
func KnownRegion(s string) bool { return slices.Contains(regions(), s) }

// ParseRegion reads a Google Cloud region, one of Regions in any case.
func ParseRegion(s string) (string, error) {
	r := strings.ToLower(strings.TrimSpace(s))
	if !KnownRegion(r) {
		return "", &OptionError{"region", s, regionsWant(s)}
	}
	return r, nil
}

// regionsWant says which regions are accepted in place of s: those of
// its area (us-, europe-), else the areas there are.
func regionsWant(s string) string {
	all := regions()
	want := fmt.Sprintf("a Google Cloud region, one of the %d of budget/carbon.csv (Google's region-carbon-info)", len(all))
	area, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "-")
	var near, areas []string
	for _, r := range all {
		if strings.HasPrefix(r, area+"-") {
			near = append(near, r)
		}
		if a, _, _ := strings.Cut(r, "-"); !slices.Contains(areas, a+"-…") {
			areas = append(areas, a+"-…")
		}
	}
	if len(near) > 0 {
		return want + "; in " + area + "-: " + strings.Join(near, ", ")
	}
	return want + ": " + strings.Join(areas, ", ")
}

// MaxChipWatts bounds a chip's stated power, in watts.
const MaxChipWatts = 5000

// ChipPower is the power a chip draws, in watts: an assumption the user
// states, since no per-chip figure was found for v5e, v5p, v6e or TPU7x.
// By holds a generation's; All, when above 0, every other generation's.
type ChipPower struct {
	All float64
	By  map[hw.Generation]float64
}

// Watts is generation g's chip power, and whether one was given.
func (p ChipPower) Watts(g hw.Generation) (float64, bool) {
	if w, ok := p.By[g]; ok {
		return w, true
	}
	return p.All, p.All > 0
}

// Given reports whether any power was given.
func (p ChipPower) Given() bool { return p.All > 0 || len(p.By) > 0 }

// ParseChipWatts reads the chip power: 0 or nothing (no energy estimate),
// watts for every generation (350), or GEN=W pairs, comma-separated
// (v6e=300,tpu7x=600), each above 0 and at most MaxChipWatts.
func ParseChipWatts(s string) (ChipPower, error) {
	want := fmt.Sprintf("0 (no energy estimate), watts a chip for every generation (350), or GEN=W pairs, comma-separated (v6e=300,tpu7x=600), each a decimal number above 0 and at most %d, each generation once", MaxChipWatts)
	bad := &OptionError{"chip_watts", s, want}
	t := strings.TrimSpace(s)
	if t == "" || t == "0" {
		return ChipPower{}, nil
	}
	watts := func(v string) (float64, bool) {
		w, err := decimal(strings.TrimSpace(v), 0, MaxChipWatts)
		return w, err == nil && w > 0
	}
	if !strings.Contains(t, "=") {
		w, ok := watts(t)
		if !ok {
			return ChipPower{}, bad
		}
		return ChipPower{All: w}, nil
	}
	items, ok := list(t)
	if !ok {
		return ChipPower{}, bad
	}
	p := ChipPower{By: map[hw.Generation]float64{}}
	for _, it := range items {
		bad := &OptionError{"chip_watts", s, want + fmt.Sprintf("; %q is not", it)}
		name, v, found := strings.Cut(it, "=")
		g, err := generation(name)
		w, ok := watts(v)
		if !found || err != nil || !ok {
			return ChipPower{}, bad
		}
		if _, dup := p.By[g]; dup {
			return ChipPower{}, bad
		}
		p.By[g] = w
	}
	return p, nil
}

// generation reads a generation's name (hw.Lookup's spellings), as
// ParseGenerations, ParseChipWatts and ParseUserPrices take it.
func generation(s string) (hw.Generation, error) {
	c, err := hw.Lookup(strings.TrimSpace(s))
	return c.Generation, err
}

// RowEnergy is a row's energy and emissions, estimates from the chip
// power the user gave: chips × watts × time to train, and that energy at
// the region's grid carbon intensity (location-based).
type RowEnergy struct {
	ChipWatts float64 `json:"chip_watts"`
	KWh       float64 `json:"kwh"`
	// KgCO2e is nil when the carbon table has no row for the region.
	KgCO2e *float64 `json:"kg_co2e,omitempty"`
}

// energyOf is the energy of a row of chips running for hours at watts a
// chip, and its emissions where c, the region's carbon row, is known:
// location-based, every kWh at the grid's average intensity (the GHG
// Protocol's location-based method, which Google's Carbon Footprint
// reports beside its market-based one). The region's carbon-free share is
// not taken off: Google's CFE counts the grid's own carbon-free supply,
// which the grid's average intensity already has in it.
func energyOf(chips int, hours, watts float64, c *RegionCarbon) *RowEnergy {
	e := &RowEnergy{ChipWatts: watts, KWh: float64(chips) * watts * hours / 1000}
	if c != nil {
		kg := e.KWh * c.GridGCO2PerKWh / 1000
		e.KgCO2e = &kg
	}
	return e
}

// energyNotes say what the energy and emissions columns rest on.
func (r Request) energyNotes() []string {
	var ws []string
	for _, g := range r.Generations {
		if w, ok := r.ChipPower.Watts(g); ok {
			ws = append(ws, fmt.Sprintf("%s %g W", g, w))
		}
	}
	notes := []string{"energy (an estimate): chips × the chip power you gave (" + strings.Join(ws, ", ") +
		") × time to train; no per-chip power was found for v5e, v5p, v6e or TPU7x, so it counts what your figure counts (the chip alone, or its share of hosts, network and cooling)"}
	if c, ok := r.Carbon.Lookup(r.Region); ok {
		notes = append(notes, fmt.Sprintf("CO2e (an estimate, location-based): energy × %s's grid carbon intensity, %g gCO2eq/kWh; Google matches %.0f %% of its hours there with carbon-free energy, which market-based accounting would credit (Google's %d figures for %s, read %s from %s)",
			c.Region, c.GridGCO2PerKWh, 100*c.CFEShare, c.Year, c.Location, c.Read, c.Source))
	} else {
		notes = append(notes, fmt.Sprintf("CO2e: the carbon table has no row for %s, so no emissions are estimated", r.Region))
	}
	return notes
}

// tonnes spells kilograms as tonnes, or "-" for none.
func tonnes(kg *float64) string {
	if kg == nil || math.IsNaN(*kg) {
		return "-"
	}
	return sig3(*kg / 1000)
}
