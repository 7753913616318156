package budget

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"shardlab/hw"
	"shardlab/unit"
)

// Limit is one cited term of a capacity mode (modes.csv): a name, its
// value, where it was read and when.
type Limit struct {
	Mode   Mode   `json:"mode"`
	Name   string `json:"limit"`
	Value  string `json:"value"`
	Source string `json:"source"`
	Read   string `json:"read"`
	Note   string `json:"note,omitempty"`
}

// The limits modes.csv may hold, and what each value is.
var limitValues = map[string]string{
	"max_run_days":              "a whole number of days from 1 to 3650",
	"zone":                      "generation@zone, such as v6e@us-east5-a",
	"default_quota_tensorcores": "a whole number of TensorCores from 1 to 1000000",
	"gke_max_run_days":          "a whole number of days from 1 to 3650",
	"gke_unsupported":           "a generation, such as v4",
	"xpk_unsupported":           "a generation, such as v2",
	"price":                     "none (no public figure)",
}

var limitHeader = []string{"mode", "limit", "value", "source", "read", "note"}

// ParseLimits reads a table of capacity modes' limits: CSV with the
// header mode,limit,value,source,read,note. Every field but note is
// required, and each value is checked against its limit's form.
func ParseLimits(r io.Reader) ([]Limit, error) {
	return readCSV(r, limitHeader, "limit", parseLimit)
}

func parseLimit(rec []string, line int) (Limit, error) {
	refuse := func(field, value, want string) error {
		return &ParseError{Line: line, Field: field, Value: value, Want: want}
	}
	l := Limit{Name: rec[1], Value: rec[2], Source: rec[3], Read: rec[4], Note: rec[5]}
	m, err := ParseMode(rec[0])
	if err != nil || string(m) != rec[0] {
		return Limit{}, refuse("mode", rec[0], "one of "+strings.Join(Modes(), ", "))
	}
	l.Mode = m
	want, ok := limitValues[l.Name]
	if !ok {
		names := make([]string, 0, len(limitValues))
		for n := range limitValues {
			names = append(names, n)
		}
		slices.Sort(names)
		return Limit{}, refuse("limit", l.Name, "one of "+strings.Join(names, ", "))
	}
	if !validLimit(l.Name, l.Value) {
		return Limit{}, refuse("value", l.Value, want)
	}
	if err := checkProvenance(refuse, "limit", l.Source, l.Read, l.Note); err != nil {
		return Limit{}, err
	}
	return l, nil
}

func validLimit(name, v string) bool {
	switch name {
	case "max_run_days", "gke_max_run_days":
		n, ok := parseWhole(v)
		return ok && n >= 1 && n <= 3650
	case "default_quota_tensorcores":
		n, ok := parseWhole(v)
		return ok && n >= 1 && n <= 1000000
	case "zone":
		g, zone, ok := strings.Cut(v, "@")
		c, err := hw.Lookup(g)
		return ok && err == nil && string(c.Generation) == g && zoneRE.MatchString(zone)
	case "price":
		return v == "none"
	case "gke_unsupported", "xpk_unsupported":
		c, err := hw.Lookup(v)
		return err == nil && string(c.Generation) == v
	}
	return false
}

// zoneRE is a zone: a region and a letter (us-east5-a).
var zoneRE = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+-[a-z]$`)

//go:embed modes.csv
var modesCSV []byte

// DefaultLimits is the table in modes.csv.
func DefaultLimits() ([]Limit, error) { return ParseLimits(bytes.NewReader(modesCSV)) }

// flexTerms are flex-start's limits, read from the limits table. The
// run limit, zones and quota are the Cloud TPU queued-resources API's
// (TPU VMs, what budget's rows price); gkeMaxRun is GKE's, for a
// workload on flex-start node pools (GKEWarnings).
type flexTerms struct {
	maxRun time.Duration
	zones  map[hw.Generation][]string
	// quota is the default preemptible quota in TensorCores; 0: none cited.
	quota int
	// source is where the run limit was read, and when.
	source string
	// gkeMaxRun is GKE's run limit a request, and gkeSource where it was
	// read and when; 0: none cited.
	gkeMaxRun time.Duration
	gkeSource string
	// gkeUnsupported is the generations GKE's flex-start does not
	// provision, each with where that was read and when.
	gkeUnsupported map[hw.Generation]string
	// xpkUnsupported is the generations xpk makes no slice of, so that
	// no xpk export asks GKE for their flex-start node pools (gkeRoute).
	xpkUnsupported map[hw.Generation]bool
}

// flex reads flex-start's terms from the table; ok is false when it
// holds no run limit for flex-start.
func flex(ls []Limit) (flexTerms, bool) {
	t := flexTerms{zones: map[hw.Generation][]string{}, gkeUnsupported: map[hw.Generation]string{}, xpkUnsupported: map[hw.Generation]bool{}}
	for _, l := range ls {
		if l.Mode != Flex {
			continue
		}
		switch l.Name {
		case "max_run_days":
			n, _ := parseWhole(l.Value)
			t.maxRun = time.Duration(n) * 24 * time.Hour
			t.source = fmt.Sprintf("%s, read %s", l.Source, l.Read)
		case "zone":
			g, zone, _ := strings.Cut(l.Value, "@")
			c, _ := hw.Lookup(g)
			t.zones[c.Generation] = append(t.zones[c.Generation], zone)
		case "default_quota_tensorcores":
			t.quota, _ = parseWhole(l.Value)
		case "gke_max_run_days":
			n, _ := parseWhole(l.Value)
			t.gkeMaxRun = time.Duration(n) * 24 * time.Hour
			t.gkeSource = fmt.Sprintf("%s, read %s", l.Source, l.Read)
		case "xpk_unsupported":
			c, _ := hw.Lookup(l.Value)
			t.xpkUnsupported[c.Generation] = true
		case "gke_unsupported":
			c, _ := hw.Lookup(l.Value)
			t.gkeUnsupported[c.Generation] = fmt.Sprintf("%s, read %s", l.Source, l.Read)
		}
	}
	return t, t.maxRun > 0
}

// offers is why flex-start does not offer generation g in region, or "";
// for g "", where it is offered.
func (t flexTerms) offers(g hw.Generation, region string) string {
	for _, z := range t.zones[g] {
		if strings.HasPrefix(z, region+"-") {
			return ""
		}
	}
	var where []string
	for _, gen := range hw.Chips() {
		if zs := t.zones[gen.Generation]; len(zs) > 0 {
			where = append(where, fmt.Sprintf("%s in %s", gen.Generation, strings.Join(zs, ", ")))
		}
	}
	if len(where) == 0 {
		return "the limits table lists no zone for flex-start"
	}
	return "the queued-resources API (TPU VMs) offers flex-start for " + strings.Join(where, "; ") + " (" + t.source + ")"
}

// gkeRoute is what a budget dropping flex-start for gens (generation
// names) says of the route it does not price: GKE's flex-start node pools,
// which an xpk export of flex-start capacity asks for (GKEWarnings), on
// the generations GKE serves so; GKE bills them at Dynamic Workload
// Scheduler pricing, which publishes no figure (GKE's flex-start page,
// the gke_max_run_days row's source; modes.csv's price row), so they are
// not in the price table. "" when GKE serves none of gens so, or xpk
// makes no slice of them (v2 and v3: review 152 said "GKE flex-start node
// pools of v2", which xpk makes no slice of).
func (t flexTerms) gkeRoute(gens []string) string {
	var served []string
	for _, g := range gens {
		if c, err := hw.Lookup(g); err == nil && t.gkeMaxRun > 0 && t.gkeUnsupported[c.Generation] == "" && !t.xpkUnsupported[c.Generation] {
			served = append(served, g)
		}
	}
	if len(served) == 0 {
		return ""
	}
	return fmt.Sprintf("; GKE flex-start node pools of %s (what an xpk export of flex-start capacity asks for) are not in the price table: "+
		"GKE bills them at Dynamic Workload Scheduler pricing, which publishes no price (%s)", strings.Join(served, ", "), t.gkeSource)
}

// GKEWarnings are the terms of capacity mode mode (a name ParseMode
// reads: flex is flex-start) that bound a GKE workload (export xpk's) on
// generation g, by the default limits table (modes.csv): for flex-start,
// that GKE does not provision g (v3 and v4) or else GKE's run limit a
// request. Not the queued-resources API's zones, which are for TPU VMs:
// GKE makes flex-start node pools of any other TPU slice it runs, and xpk
// @367c8382 does so for TPU7x single- and multi-host slices
// (docs/usage/tpu7x/recipes/flex_filestore_recipe.md lines 34 and 69-76,
// src/xpk/core/capacity.py 137-144). None for the other modes, whose
// terms hold for any slice, and for a name that is no mode of the table
// (a reservation, or none).
func GKEWarnings(mode string, g hw.Generation) []string {
	m, err := ParseMode(mode)
	ls, lerr := DefaultLimits()
	fl, _ := flex(ls)
	if err != nil || m != Flex || lerr != nil {
		return nil
	}
	if src, ok := fl.gkeUnsupported[g]; ok {
		return []string{fmt.Sprintf("flex-start on GKE does not support TPU %s (%s): GKE makes no flex-start node pool of it; choose another capacity mode", g, src)}
	}
	if fl.gkeMaxRun == 0 {
		return nil
	}
	return []string{fmt.Sprintf("flex-start on GKE provisions the TPUs for at most %s a request (%s): a longer job needs more than one request, so let it resume from a checkpoint", limitDays(fl.gkeMaxRun), fl.gkeSource)}
}

// limitDays spells a limit of whole days as its source does: "7 days".
func limitDays(d time.Duration) string { return unit.Plural(int(d.Hours()/24), "day") }

// offered is whether generation g is on offer in mode m in the request's
// region: every mode is but flex-start, which fl offers in a few zones.
// The sweep searches only what is offered.
func (r Request) offered(fl flexTerms, g hw.Generation, m Mode) bool {
	return m != Flex || fl.offers(g, r.Region) == ""
}

// check is why a flex-start row cannot run (its time to train is over
// the queued-resources API's run limit), or the terms it may break: the
// limit at the band's high end, the default quota.
func (t flexTerms) check(row Row) (why string, warnings []string) {
	if row.TimeToTrainS > t.maxRun.Seconds() {
		return fmt.Sprintf("takes %s, over flex-start's run limit of %s a request (%s)", days(row.TimeToTrainS), limitDays(t.maxRun), t.source), nil
	}
	if b := row.Band; b != nil && b.TimeHigh > t.maxRun.Seconds() {
		warnings = append(warnings, fmt.Sprintf("%s: the band's high end, %s, is over flex-start's %s limit",
			row.name(), days(b.TimeHigh), limitDays(t.maxRun)))
	}
	if c := row.Plan.Request.Multislice.Slice.Chip; t.quota > 0 && row.Chips*c.TensorCores > t.quota {
		warnings = append(warnings, fmt.Sprintf("%s: %d TensorCores, over the default preemptible quota of %d that flex-start draws on: ask for more quota", row.name(), row.Chips*c.TensorCores, t.quota))
	}
	return "", warnings
}
