package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// small is a budget command line that plans fast: Llama 3 8B on v6e-16.
var small = []string{"budget", "--model", "llama3-8b", "--tokens", "100B", "--generations", "v6e", "--modes", "on-demand", "--slice-chips", "16", "--slices", "1,2"}

func TestBudgetRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	badPrices := filepath.Join(dir, "prices.csv")
	if err := os.WriteFile(badPrices, []byte("generation,mode,region,usd_per_chip_hour,source,read,note\nv6e,on-demand,*,-2,src,2026-12-04,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	futurePrices := filepath.Join(dir, "future.csv")
	if err := os.WriteFile(futurePrices, []byte("generation,mode,region,usd_per_chip_hour,source,read,note\nv6e,on-demand,*,2.7,http://x,2099-01-01,n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	marsPrices := filepath.Join(dir, "mars.csv")
	if err := os.WriteFile(marsPrices, []byte("generation,mode,region,usd_per_chip_hour,source,read,note\nv6e,on-demand,mars-north1,2.7,http://x,2026-12-04,n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{withFlags(small, "--tokens", "-1T"), []string{`budget: --tokens "-1T"`, "from 1 to 1e16"}},
		{withFlags(small, "--tokens", "1X"), []string{`--tokens "1X"`, "k, M, B or T"}},
		{withFlags(small, "--region", "mars"), []string{`budget: --region "mars"`, "one of the 44 of budget/carbon.csv", "us-…"}},
		{withFlags(small, "--region", "mars-north1"), []string{`budget: --region "mars-north1"`, "one of the 44 of budget/carbon.csv"}},
		{withFlags(small, "--prices", futurePrices), []string{"budget: --prices " + futurePrices, "line 2", `read "2099-01-01"`, "on or before today"}},
		{withFlags(small, "--prices", marsPrices), []string{"budget: --prices " + marsPrices, "line 2", `region "mars-north1"`, "one of the 44"}},
		{withFlags(small, "--modes", "on-demand,flexi"), []string{`budget: --modes "on-demand,flexi"`, "on-demand, spot, cud-1y, cud-3y, flex-start"}},
		{withFlags(small, "--html", filepath.Join(dir, "no", "such", "dir", "b.html")), []string{"budget: --html"}},
		{withFlags(small, "--generations", "v9"), []string{`budget: --generations "v9"`, "v6e"}},
		{withFlags(small, "--deadline", "30"), []string{`budget: --deadline "30"`, "in d, h or m"}},
		{withFlags(small, "--budget", "-5"), []string{`budget: --budget "-5"`, "dollars from 0"}},
		{withFlags(small, "--slices", "1,1"), []string{`budget: --slices "1,1"`, "distinct"}},
		{withFlags(small, "--slice-chips", "3"), []string{`budget: --slice-chips "3": want slice sizes`, "v6e 1, 4, 8, 16, 32, 64, 128, 256"}},
		{withFlags(small, "--prices", badPrices), []string{"budget: --prices " + badPrices, "line 2", "usd_per_chip_hour \"-2\""}},
		{withFlags(small, "--show", "9"), []string{"budget: --show 9", "the table has 2 rows"}},
		{withFlags(small, "--price", "tpu7x=-5"), []string{`budget: --price "tpu7x=-5"`, "GEN[:MODE]=DOLLARS"}},
		{withFlags(small, "--price", "tpu7x:daily=5"), []string{`budget: --price "tpu7x:daily=5"`, "on-demand, spot"}},
		{withFlags(small, "--chip-watts", "NaN"), []string{`budget: --chip-watts "NaN"`, "watts a chip"}},
		{withFlags(small, "--chip-watts", "v6e=0"), []string{`budget: --chip-watts "v6e=0"`, "at most 5000"}},
	} {
		fail(t, tt.args, tt.want...)
	}
}

// TestBudgetRegionAnyCase: --region is an enumerated value, matched in
// any case as README says (EUROPE-WEST4 was refused).
func TestBudgetRegionAnyCase(t *testing.T) {
	out, errOut, code := runCmd(withFlags(small, "--slices", "1", "--region", "EUROPE-WEST4")...)
	if code != 0 || !strings.Contains(out, "prices for europe-west4;") {
		t.Errorf("--region EUROPE-WEST4: exit %d %s, stdout:\n%s", code, errOut, out)
	}
}

func TestBudgetNoAnswerNamesTheNearest(t *testing.T) {
	out, errOut, code := runCmd(withFlags(small, "--deadline", "1h")...)
	if code != exitError || !strings.Contains(errOut, "no priced configuration meets the limits; nearest: 2 × v6e-16 on-demand") {
		t.Errorf("--deadline 1h: exit %d, stderr %q; want exit %d naming the nearest (2 × v6e-16)", code, errOut, exitError)
	}
	if !strings.Contains(out, "over the 1h deadline") {
		t.Errorf("--deadline 1h: stdout does not say why rows were dropped:\n%s", out)
	}
	// --json: the nearest as text and as a row to act on
	out, _, code = runCmd(withFlags(small, "--deadline", "1h", "--json")...)
	var j struct {
		Nearest    string `json:"nearest"`
		NearestRow *struct {
			AcceleratorType string  `json:"accelerator_type"`
			Slices          int     `json:"slices"`
			Mode            string  `json:"mode"`
			TimeToTrainS    float64 `json:"time_to_train_s"`
			USD             float64 `json:"usd"`
		} `json:"nearest_row"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil || code != exitError {
		t.Fatalf("--deadline 1h --json: exit %d, %v", code, err)
	}
	if n := j.NearestRow; n == nil || n.AcceleratorType != "v6e-16" || n.Slices != 2 || n.Mode != "on-demand" || !(n.TimeToTrainS > 3600) || !(n.USD > 0) ||
		!strings.HasPrefix(j.Nearest, "2 × v6e-16 on-demand: ") {
		t.Errorf("--deadline 1h --json: nearest %q, nearest_row %+v; want 2 × v6e-16 on-demand, over an hour", j.Nearest, n)
	}
}

func TestBudgetPricesFile(t *testing.T) {
	// a user's price for TPU7x prices it, and its date is printed
	f := filepath.Join(t.TempDir(), "prices.csv")
	if err := os.WriteFile(f, []byte("generation,mode,region,usd_per_chip_hour,source,read,note\ntpu7x,on-demand,us-central1,5,my quote,2026-11-30,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCmd(withFlags(small, "--generations", "tpu7x,v6e", "--slice-chips", "64", "--slices", "1", "--prices", f)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// v6e has a public price, which the user's table leaves out (review
	// 152: it said "no public price found")
	for _, w := range []string{"tpu7x-128", "price: tpu7x on-demand in us-central1 $5 per chip-hour, read 2026-11-30 from my quote",
		"unpriced: v6e on-demand in us-central1: not in the price table " + f + "; give one of your own"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// TestBudgetHTML: --html writes one page with the chart of time against
// dollars (an inline SVG with the generation and the Pareto front in its
// legend) and the table, and stdout still has the text.
func TestBudgetHTML(t *testing.T) {
	path := filepath.Join(t.TempDir(), "budget.html")
	out, errOut, code := runCmd(withFlags(small, "--html", path)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"<!DOCTYPE html>", `<figure class="chart"><?xml`, "<svg", "time to train, days", ">v6e<", ">Pareto front<",
		"<table>", `<tr class="pareto"><td>1</td><td>v6e-16</td>`, "2 × v6e-16", "price: v6e on-demand", "<a href=\"https://"} {
		if !strings.Contains(string(page), w) {
			t.Errorf("page lacks %q", w)
		}
	}
	if strings.Contains(string(page), "<script") || strings.Contains(string(page), `src="http`) {
		t.Errorf("page is not self-contained: it loads a script or an outside resource")
	}
	if !strings.Contains(out, "v6e-16") {
		t.Errorf("stdout lacks the table:\n%s", out)
	}
	// with --show, stdout has the row's plan and the page is still written
	shown := filepath.Join(t.TempDir(), "shown.html")
	out, errOut, code = runCmd(withFlags(small, "--show", "1", "--html", shown)...)
	if page, err := os.ReadFile(shown); code != 0 || err != nil || !strings.Contains(string(page), "<table>") || !strings.Contains(out, "row 1:") {
		t.Errorf("--show 1 --html: exit %d %s, page %v (%d bytes)", code, errOut, err, len(page))
	}
}

func TestBudgetPriceAndEnergy(t *testing.T) {
	// --price prices TPU7x, said to be the user's; --chip-watts adds the
	// energy and CO2e columns and says what they rest on
	out, errOut, code := runCmd(withFlags(small, "--generations", "tpu7x,v6e", "--slice-chips", "64", "--slices", "1",
		"--price", "tpu7x=5,v6e=2.5", "--chip-watts", "tpu7x=700,v6e=300")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{"tpu7x-128", "price: tpu7x on-demand in us-central1 $5 per chip-hour, given by the user (not a published price)",
		"price: v6e on-demand in us-central1 $2.5 per chip-hour, given by the user", "MWh", "t CO2e",
		"energy (an estimate): chips × the chip power you gave (tpu7x 700 W, v6e 300 W)", "us-central1's grid carbon intensity, 412.72 gCO2eq/kWh", "87 % of its hours"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "unpriced: tpu7x on-demand") {
		t.Errorf("tpu7x on-demand priced by --price is still unpriced:\n%s", out)
	}
}

// TestTokensOneSyntax: every command's --tokens reads budget's counts
// (1T, 500B, 1e12): plan --goodput and capacity answer 1T as 1e12, and
// refuse what budget refuses, in one line.
func TestTokensOneSyntax(t *testing.T) {
	for _, cmd := range [][]string{{"plan", "--goodput", "--tpu", "v5p-8"}, {"capacity"}} {
		a, errA, codeA := runCmd(append(cmd, "--tokens", "1T")...)
		b, _, _ := runCmd(append(cmd, "--tokens", "1e12")...)
		if codeA != 0 || a != b {
			t.Errorf("%v --tokens 1T: exit %d %s; output differs from 1e12: %v", cmd, codeA, errA, a != b)
		}
		fail(t, append(cmd, "--tokens", "1X"), `--tokens "1X", want a number of tokens from 1 to 1e16`)
	}
}

// TestBudgetNothingPriced: with no deadline or budget, a sweep whose rows
// are all unpriced does not blame limits the user never gave.
func TestBudgetNothingPriced(t *testing.T) {
	out, errOut, code := runCmd("budget", "--model", "llama3-8b", "--generations", "v4", "--modes", "cud-3y", "--slice-chips", "16", "--slices", "1")
	if code != exitError || !strings.Contains(errOut, "no configuration is both priced and able to run the job") || !strings.Contains(out, "unpriced: v4 cud-3y") {
		t.Errorf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
}

// TestBudgetDroppedNamesPlanFlags: a configuration no layout runs is
// dropped with the fixes the planner finds, which are plan's options:
// the line names shardlab plan and spells them as its flags, each one
// plan has and budget does not (defects100 #13: "it would run with
// precision bf16 …; or optimizer offload …", in the web form's words,
// options budget -h does not list).
func TestBudgetDroppedNamesPlanFlags(t *testing.T) {
	out, errOut, code := runCmd("budget", "--tokens", "10B", "--slice-chips", "4", "--slices", "1", "--generations", "v6e", "--modes", "on-demand")
	// v6e-4 is the only configuration: the table is empty, exit 1
	if code != 1 || !strings.Contains(errOut, "no configuration is both priced and able to run the job") {
		t.Fatalf("exit %d: %s; want 1, no configuration runs", code, errOut)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "dropped: 1 × v6e-4: no layout runs the job") {
			line = l
		}
	}
	const says = "; shardlab plan would run it with options budget does not sweep: --precision bf16: "
	if !strings.Contains(line, says) {
		t.Fatalf("budget says of v6e-4 %q, want it to contain %q:\n%s", line, says, out)
	}
	planFS, _ := newPlanFlags("plan", false)
	budgetFS, _ := newBudgetFlags()
	flags := regexp.MustCompile(`--[a-z][a-z0-9-]*`).FindAllString(line, -1)
	for _, f := range flags {
		name := strings.TrimPrefix(f, "--")
		if planFS.Lookup(name) == nil || budgetFS.Lookup(name) != nil {
			t.Errorf("the dropped line names %s: plan has it %v, budget %v; want a flag of plan's alone", f, planFS.Lookup(name) != nil, budgetFS.Lookup(name) != nil)
		}
	}
	if words := regexp.MustCompile(`(^|[^-])(precision|optimizer offload|remat policy)`).FindString(line); words != "" {
		t.Errorf("the dropped line names an option in plan's own words, %q: %s", words, line)
	}
}

// TestBudgetDeadlineTimesUnpriced: with a deadline alone, a generation
// without a price (TPU7x) was planned not at all, so whether it would
// meet the deadline went unsaid (review 123 #11). It is now timed and
// listed as unpriced, without dollars (no usd key, never free), and when
// no priced row meets the deadline the exit is 1 with the nearest and the
// unpriced that would meet it named. Its time is the one the same
// configuration gets as a priced row once a price is given (--price
// tpu7x=2), whose dollars are then chips × hours × 2 by hand. With a
// budget as well, dollars are asked for and nothing unpriced is timed.
func TestBudgetDeadlineTimesUnpriced(t *testing.T) {
	job := []string{"budget", "--model", "llama3-70b", "--generations", "v6e,tpu7x", "--modes", "on-demand", "--deadline", "5d"}
	out, errOut, code := runCmd(job...)
	if code != exitError || !strings.Contains(out, "unpriced, timed for the deadline: 4 × tpu7x-512 on-demand: ") ||
		!strings.Contains(out, "meets the 5d deadline; dollars unknown (no price)") ||
		!strings.Contains(errOut, "no priced configuration meets the limits; nearest: 4 × v6e-256 on-demand") ||
		!strings.Contains(errOut, "without a price, 4 × tpu7x-512 on-demand meets the deadline") {
		t.Fatalf("--deadline 5d: exit %d (want %d)\nstderr %s\nstdout %s", code, exitError, errOut, out)
	}
	js, _, _ := runCmd(append(job, "--json")...)
	var doc struct {
		Timed []map[string]any `json:"unpriced_rows"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil || len(doc.Timed) != 3 {
		t.Fatalf("--json: %v, unpriced_rows %v, want 3 (1, 2, 4 slices)", err, doc.Timed)
	}
	first := doc.Timed[0]
	if _, ok := first["usd"]; ok || first["accelerator_type"] != "tpu7x-512" || first["slices"] != 4.0 || first["meets_deadline"] != true {
		t.Errorf("unpriced_rows[0] = %v, want 4 × tpu7x-512 meeting the deadline, without dollars", first)
	}
	priced, _, _ := runCmd(append(job, "--json", "--price", "tpu7x=2")...)
	var p struct {
		Rows []struct {
			AcceleratorType string  `json:"accelerator_type"`
			Slices          int     `json:"slices"`
			Chips           int     `json:"chips"`
			TimeToTrainS    float64 `json:"time_to_train_s"`
			USD             float64 `json:"usd"`
		} `json:"rows"`
		Timed []any `json:"unpriced_rows"`
	}
	if err := json.Unmarshal([]byte(priced), &p); err != nil || len(p.Rows) != 1 || len(p.Timed) != 0 {
		t.Fatalf("--price tpu7x=2 --json: %v, rows %+v, unpriced_rows %v: want the one priced row", err, p.Rows, p.Timed)
	}
	r := p.Rows[0]
	if want := float64(r.Chips) * r.TimeToTrainS / 3600 * 2; r.AcceleratorType != "tpu7x-512" || r.Slices != 4 || r.TimeToTrainS != first["time_to_train_s"] || math.Abs(r.USD-want) > 1e-6*want {
		t.Errorf("priced row %+v: want 4 × tpu7x-512 in the unpriced row's %v s, at $%.0f", r, first["time_to_train_s"], want)
	}
	js, _, _ = runCmd(append(job, "--json", "--budget", "1B")...)
	if strings.Contains(js, "unpriced_rows") {
		t.Errorf("--deadline 5d --budget 1B: unpriced rows timed though dollars are asked for:\n%.500s", js)
	}
}
