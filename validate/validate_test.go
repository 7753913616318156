package validate

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"shardlab/cost"
	"shardlab/hw"
	"shardlab/model"
)

// The accuracy README.md states. A change to the cost model that makes the
// held-out error worse than this fails here. They are the fidelity issue's
// targets, all met; README.md says where the model stands.
const (
	maxMedianError = 0.05
	maxP90Error    = 0.12
	maxSeriesGap   = 0.03 // v5e, MFU(32 slices)/MFU(1)
)

func runs(t *testing.T) []Run {
	t.Helper()
	rs, err := Runs()
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestTableIsSourced(t *testing.T) {
	rs := runs(t)
	commit := regexp.MustCompile(`^[0-9a-f]{40}$`)
	gens := map[string]bool{}
	cal := 0
	for _, r := range rs {
		if r.Source.Repo == "" || r.Source.Path == "" || !commit.MatchString(r.Source.Commit) {
			t.Errorf("%s: source %+v, want a repository, a path and a 40-hex commit", r.ID, r.Source)
		}
		gens[r.Generation] = true
		if r.Calibration {
			cal++
		}
	}
	if len(rs) < 30 || len(gens) < 4 {
		t.Errorf("%d runs over %d generations, want at least 30 over 4", len(rs), len(gens))
	}
	if cal == 0 || cal > len(rs)/2 {
		t.Errorf("%d calibration rows of %d, want some, and at most half", cal, len(rs))
	}
}

func TestEveryPublishedLayoutFits(t *testing.T) {
	// They all ran.
	rep, err := Evaluate(runs(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if m := r.Estimate.Memory; !m.Fits() {
			t.Errorf("%s: %v of %v usable HBM: does not fit, but it ran", r.Run.ID, m.Total(), m.Usable)
		}
	}
}

func TestHeldOutError(t *testing.T) {
	rep, err := Evaluate(runs(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	st := rep.Summary(HeldOut)
	t.Logf("held out: %d runs, median |error| %.3f, p90 %.3f, max %.3f", st.N, st.Median, st.P90, st.Max)
	if st.Median > maxMedianError || st.P90 > maxP90Error {
		t.Errorf("held-out MFU error: median %.3f (limit %.3f), 90th percentile %.3f (limit %.3f)", st.Median, maxMedianError, st.P90, maxP90Error)
	}
}

func TestCalibratedIsTheFit(t *testing.T) {
	// cost.Calibrated() must be what Fit gives on this table, so the constants
	// in the cost model are reproducible from the named rows.
	fit, err := Fit(runs(t))
	if err != nil {
		t.Fatal(err)
	}
	got := cost.Calibrated()
	if fit.Attention != got.Attention || math.Abs(fit.Quantized-got.Quantized) > 0.0005 || fit.DCNLatency != got.DCNLatency || fit.SliceJitter != got.SliceJitter {
		t.Errorf("cost.Calibrated(): attention %v, DCN %v, jitter %v; Fit gives %v, %v, %v (run shardlab validate --fit)",
			got.Attention, got.DCNLatency, got.SliceJitter, fit.Attention, fit.DCNLatency, fit.SliceJitter)
	}
	if fit.Contention != got.Contention {
		t.Errorf("cost.Calibrated().Contention = %v, Fit gives %v (run shardlab validate --fit)", got.Contention, fit.Contention)
	}
	if math.Abs(fit.Dropless-got.Dropless) > 0.0005 {
		t.Errorf("cost.Calibrated().Dropless = %.3f, Fit gives %.3f (run shardlab validate --fit)", got.Dropless, fit.Dropless)
	}
	for g, v := range fit.Efficiency {
		if math.Abs(got.Efficiency[g]-v) > 0.0005 {
			t.Errorf("cost.Calibrated().Efficiency[%s] = %.3f, Fit gives %.3f (run shardlab validate --fit)", g, got.Efficiency[g], v)
		}
	}
	for g := range got.Efficiency {
		if _, ok := fit.Efficiency[g]; !ok {
			t.Errorf("cost.Calibrated() has %s, which no calibration row fits", g)
		}
	}
}

func TestMultisliceSeries(t *testing.T) {
	rep, err := Evaluate(runs(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ss []Series
	for _, s := range rep.MultisliceSeries() {
		if s.Slices == 32 { // MaxText's v5e series, 1 to 32 slices of v5e-256
			ss = append(ss, s)
		}
	}
	if len(ss) != 4 {
		t.Fatalf("%d series of 32 slices in the table, want MaxText's four v5e ones", len(ss))
	}
	for _, s := range ss {
		if math.Abs(s.Predicted-s.Published) > maxSeriesGap {
			t.Errorf("%s: MFU(%d slices)/MFU(1) predicted %.3f, published %.3f", s.Key, s.Slices, s.Predicted, s.Published)
		}
	}
}

func TestSetupCountsChipsNotDevices(t *testing.T) {
	// TPU7x: MaxText's ici_fsdp 128 on tpu7x-128 (64 chips of two devices)
	// is fsdp=64 over chips.
	r := Run{Cited: Cited{ID: "x"}, Config: Config{AcceleratorType: "tpu7x-128", Slices: 1, SeqLen: 4096, GlobalBatch: 128,
		Model:       testSpec,
		Layout:      Layout{ICIFSDP: 128},
		RematPolicy: "full"}, Published: Published{MFU: 0.5, FLOPsConvention: "causal"}}
	_, m, err := r.Setup()
	if err != nil {
		t.Fatal(err)
	}
	if got := m.String(); got != "fsdp=64" {
		t.Errorf("layout %s, want fsdp=64", got)
	}
	if m.Multislice.Slice.Chip.Generation != hw.TPU7x {
		t.Errorf("generation %s", m.Multislice.Slice.Chip.Generation)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, in := range []string{
		"- id: a\n  nope: 1\n",
		"- id: a\n  accelerator_type: v9-8\n",
		"not a list",
	} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
}

// TestParseRefusesABadSource checks that a run's source is held to the
// rule the other tables' sources are (Source.check): the built-in table
// with one source spoilt is refused, naming the field.
func TestParseRefusesABadSource(t *testing.T) {
	for _, tt := range []struct{ old, new, field string }{
		{"repo: AI-Hypercomputer/maxtext\n", "repo: maxtext\n", "source.repo"},
		{"commit: 281e04bf31557482e2aa6bb870897e7b7be47f38\n", "commit: main\n", "source.commit"},
		{"config_commit: 281e04bf31557482e2aa6bb870897e7b7be47f38\n", "config_commit: HEAD\n", "source.config_commit"},
	} {
		in := strings.Replace(string(runsYAML), tt.old, tt.new, 1)
		if in == string(runsYAML) {
			t.Fatalf("runs.yaml has no %q to spoil", tt.old)
		}
		_, err := Parse([]byte(in))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.field+" = ") {
			t.Errorf("Parse with %q: %v, want an error naming %s", tt.new, err, tt.field)
		}
	}
}

// TestParseRunsAsTheOtherTables checks that the runs table is read by
// parseTable's rules: a fractional count and a repeated id are refused,
// the first naming the row and field.
func TestParseRunsAsTheOtherTables(t *testing.T) {
	frac := strings.Replace(string(runsYAML), "  slices: 1\n", "  slices: 1.5\n", 1)
	if _, err := Parse([]byte(frac)); err == nil || !strings.Contains(err.Error(), "validate: runs row ") || !strings.Contains(err.Error(), "slices") {
		t.Errorf("Parse with slices 1.5: %v, want an error naming the row and slices", err)
	}
	rs := runs(t)
	twice := strings.Replace(string(runsYAML), "id: "+rs[1].ID+"\n", "id: "+rs[0].ID+"\n", 1)
	if _, err := Parse([]byte(twice)); err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "unique id") {
		t.Errorf("Parse with id %s twice: %v, want a unique id", rs[0].ID, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(runsYAML)
	f.Add([]byte("- id: a\n  accelerator_type: v5p-8\n  global_batch_sequences: 1\n"))
	f.Add([]byte("- id: a\n  accelerator_type: v6e-256\n  global_batch_sequences: 1\n  layout: {ici_fsdp: 64, ici_expert: 4, custom_mesh: hybrid_ring_64x4}\n"))
	f.Add([]byte("- id: a\n  accelerator_type: v5p-8\n  global_batch_sequences: 1\n  batch_tuned: {verdict: memory, evidence: e, source: {repo: a/b, path: p, commit: abcdef0}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := Parse(data)
		if err != nil || len(rs) > 4 { // costing a whole table is the other tests' job
			return
		}
		for _, r := range rs {
			if v := r.Tuning(); v != TunedMemory && v != TunedGlobalBatch && v != TunedUnknown {
				t.Errorf("%s: Parse accepted batch_tuned verdict %q", r.ID, v)
			}
		}
		if _, err := Evaluate(rs, nil); err != nil {
			t.Errorf("a table Parse accepts fails to evaluate: %v", err)
		}
	})
}

var testSpec = model.Spec{Name: "t", Layers: 4, DModel: 1024, Heads: 8, DFF: 4096, Vocab: 32000, SeqLen: 4096, GatedMLP: true}

func TestMoERowsAreHeldOutAndReported(t *testing.T) {
	rep, err := Evaluate(runs(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	st := rep.Summary(MoE)
	if st.N < 6 || st.Fit != st.N {
		t.Errorf("held-out MoE rows: %d, %d fit; want at least 6, all fitting", st.N, st.Fit)
	}
	cal := 0
	for _, r := range rep.Results {
		if r.Run.Model.MoE() && HeldOut(r) {
			t.Errorf("%s: an MoE row must be reported on its own, not join the dense held-out rows", r.Run.ID)
		}
		if r.Run.Model.MoE() && r.Run.Calibration {
			cal++
		}
	}
	if cal > 2 {
		t.Errorf("%d MoE calibration rows; at most 2, so most MoE rows stay held out", cal)
	}
	// Issue 16's target: the held-out MoE rows' median |error| at most 10 %.
	t.Logf("MoE held out: median |error| %.3f, p90 %.3f, max %.3f", st.Median, st.P90, st.Max)
	if st.Median > 0.10 {
		t.Errorf("MoE held-out median |error| %.3f, want at most 0.10", st.Median)
	}
}

func TestCapacityFactorRefused(t *testing.T) {
	for _, cf := range []float64{math.NaN(), math.Inf(1), -2, 65} {
		r := Run{Cited: Cited{ID: "x"}, Config: Config{AcceleratorType: "v5p-8", Slices: 1, SeqLen: 4096, GlobalBatch: 8, RematPolicy: "full",
			Model:  model.Spec{Name: "m", Layers: 2, DModel: 256, Heads: 4, DFF: 512, Vocab: 1000, SeqLen: 4096, GatedMLP: true, Experts: 4, ExpertsPerToken: 2},
			Layout: Layout{ICIFSDP: 4}, CapacityFactor: cf}, Published: Published{MFU: 0.5, MFUSource: "published", FLOPsConvention: "full"}}
		if _, _, err := r.Setup(); err == nil || !strings.Contains(err.Error(), "capacity_factor") {
			t.Errorf("capacity_factor %v: %v, want an error naming capacity_factor", cf, err)
		}
	}
}

func TestAttentionKinds(t *testing.T) {
	// MaxText/layers.py @e47fa1b5d called the flash kernel with causal =
	// False: the v5e rows say flash_noncausal, and cost computes every block.
	for _, tt := range []struct {
		in   string
		want cost.AttentionKind
	}{{"", ""}, {"flash", ""}, {"dot_product", cost.AttentionDot}, {"flash_noncausal", cost.AttentionFlashNonCausal}} {
		r := Run{Cited: Cited{ID: "x"}, Config: Config{AcceleratorType: "v5litepod-16", Slices: 1, SeqLen: 4096, GlobalBatch: 16, Model: testSpec,
			Layout: Layout{ICIFSDP: 16}, RematPolicy: "full", Attention: tt.in}, Published: Published{MFU: 0.5, FLOPsConvention: "full"}}
		j, _, err := r.Setup()
		if err != nil || j.Attention != tt.want {
			t.Errorf("attention %q: %q, %v; want %q", tt.in, j.Attention, err, tt.want)
		}
	}
	r := Run{Cited: Cited{ID: "x"}, Config: Config{AcceleratorType: "v5litepod-16", Slices: 1, SeqLen: 4096, GlobalBatch: 16, Model: testSpec,
		Layout: Layout{ICIFSDP: 16}, RematPolicy: "full", Attention: "splash2"}, Published: Published{MFU: 0.5, FLOPsConvention: "full"}}
	if _, _, err := r.Setup(); err == nil || !strings.Contains(err.Error(), "flash_noncausal") {
		t.Errorf("attention splash2: %v, want an error naming the accepted kinds", err)
	}
	for _, r := range runs(t) {
		if want := r.Generation == "v5e"; (r.Attention == "flash_noncausal") != want {
			t.Errorf("%s: attention %q; the v5e rows (and only they) ran MaxText's non-causal flash call", r.ID, r.Attention)
		}
	}
}

// TestQuantizedRowsGiveBothPeaks checks that the report's JSON says which
// peak its MFUs are against (bf16), and that a quantized run (the tpu7x
// fp8 rows: bf16 2307, fp8 4614 T/s in hw's catalog) also gives its MFU
// against its format's peak, in JSON and in the text.
func TestQuantizedRowsGiveBothPeaks(t *testing.T) {
	rep, err := Evaluate(runs(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	quantized := 0
	for i, row := range rep.JSON().Rows {
		r := rep.Results[i]
		if row.MFUPeak != "bf16" {
			t.Errorf("%s: mfu_peak %q, want bf16", row.ID, row.MFUPeak)
		}
		if r.Run.Quantization == "" {
			if row.QuantizedMFUPeak != "" || row.PredictedQuantized != 0 {
				t.Errorf("%s (bf16): quantized MFU %v against %q, want none", row.ID, row.PredictedQuantized, row.QuantizedMFUPeak)
			}
			continue
		}
		quantized++
		chip := r.Estimate.Mesh.Multislice.Slice.Chip
		if chip.Generation != "tpu7x" || r.Run.Quantization != "fp8" {
			continue
		}
		if row.QuantizedMFUPeak != "fp8" || math.Abs(row.PredictedQuantized-row.Predicted*2307/4614) > 1e-12 ||
			math.Abs(row.PublishedQuantized-row.Published*2307/4614) > 1e-12 {
			t.Errorf("%s: quantized MFU published %v predicted %v against %q, want %v and %v against fp8", row.ID,
				row.PublishedQuantized, row.PredictedQuantized, row.QuantizedMFUPeak, row.Published/2, row.Predicted/2)
		}
		if w := fmt.Sprintf("%.1f%% / %.1f%% fp8", 100*row.Predicted, 100*row.PredictedQuantized); !strings.Contains(text.String(), w) {
			t.Errorf("%s: text lacks %q", row.ID, w)
		}
	}
	if quantized == 0 {
		t.Error("no quantized run in the table")
	}
}

// TestFitReportSaysWhereEachConstantComesFrom: each constant's value is
// Fit's, its fitted rows are calibration rows of its kind and its
// held-out rows are not, every single-slice calibration row fits exactly
// one generation's efficiency, and the errors are what Evaluate gives.
func TestFitReportSaysWhereEachConstantComesFrom(t *testing.T) {
	runs, err := Runs()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := FitReport(runs)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Run{}
	for _, r := range runs {
		byID[r.ID] = r
	}
	cal, err := Fit(runs)
	if err != nil {
		t.Fatal(err)
	}
	effRows := map[string]int{}
	for _, fr := range rows {
		for _, id := range fr.Fitted {
			if !byID[id].Calibration {
				t.Errorf("%s: fitted on %s, which is held out", fr.Constant, id)
			}
			if strings.HasPrefix(fr.Constant, "efficiency ") {
				effRows[id]++
			}
		}
		for _, id := range fr.HeldOut {
			if byID[id].Calibration {
				t.Errorf("%s: holds out %s, which is a calibration row", fr.Constant, id)
			}
		}
		if g, ok := strings.CutPrefix(fr.Constant, "efficiency "); ok {
			if want := fmt.Sprintf("%.3f", cal.Efficiency[hw.Generation(g)]); fr.Value != want {
				t.Errorf("%s = %s, Fit gives %s", fr.Constant, fr.Value, want)
			}
			for _, id := range append(append([]string(nil), fr.Fitted...), fr.HeldOut...) {
				if r := byID[id]; r.Generation != g || kindOf(r) != kindSingle {
					t.Errorf("%s lists %s (%s, kind %d)", fr.Constant, id, r.Generation, kindOf(r))
				}
			}
		}
	}
	for _, r := range runs {
		if r.Calibration && kindOf(r) == kindSingle && effRows[r.ID] != 1 {
			t.Errorf("%s fits %d efficiencies, want 1", r.ID, effRows[r.ID])
		}
	}
	// the contention's held-out error, recomputed
	var single []Run
	for _, r := range runs {
		if !r.Calibration && kindOf(r) == kindSingle {
			single = append(single, r)
		}
	}
	rep, err := Evaluate(single, nil)
	if err != nil {
		t.Fatal(err)
	}
	var errs []float64
	for _, r := range rep.Results {
		errs = append(errs, math.Abs(r.Error))
	}
	for _, fr := range rows {
		if fr.Constant == "contention" && (fr.HeldOutError != median(errs) || len(fr.HeldOut) != len(single)) {
			t.Errorf("contention: held-out error %g over %d rows, want %g over %d", fr.HeldOutError, len(fr.HeldOut), median(errs), len(single))
		}
	}
}

func TestBreakdownHeaderNamesEveryColumn(t *testing.T) {
	rep := builtInReport(t)
	var b strings.Builder
	if err := rep.StepTimes().WriteText(&b); err != nil {
		t.Fatal(err)
	}
	cols := regexp.MustCompile(`\S+(?: \S+)*`)
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	head := len(cols.FindAllString(lines[0], -1))
	for _, l := range lines[1:] {
		if n := len(cols.FindAllString(l, -1)); n != head {
			t.Fatalf("header names %d columns, row %q has %d", head, l, n)
		}
	}
}

// TestHostUncheckedIsNoFit (review 119 #2 and #3): a run that offloads
// to a VM whose RAM the catalog does not publish was counted as fitting
// host RAM (cost.Memory.HostFits is true there). The v4-22b-1slice row
// with its remat full and again with minimal_offloaded, which moves the
// projection outputs to host memory of v4's ct4p-hightpu-4t (RAM not
// published): the first fits, the second is counted as host RAM
// unchecked, not as a fit, in the summary, its text and the row's.
func TestHostUncheckedIsNoFit(t *testing.T) {
	rows := string(runsYAML)
	start := strings.Index(rows, "- id: v4-22b-1slice\n")
	if start < 0 {
		t.Fatal("runs.yaml has no v4-22b-1slice row")
	}
	end := strings.Index(rows[start+1:], "\n- id: ") + start + 2
	row := rows[start:end]
	offload := strings.Replace(strings.Replace(row, "remat_policy: full\n", "remat_policy: minimal_offloaded\n", 1),
		"- id: v4-22b-1slice\n", "- id: v4-22b-1slice-offloaded\n", 1)
	if !strings.Contains(offload, "remat_policy: minimal_offloaded\n") {
		t.Fatal("the v4-22b-1slice row has no remat full")
	}
	rs, err := Parse([]byte(row + offload))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Evaluate(rs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, unchecked := range []bool{false, true} {
		m := rep.Results[i].Estimate.Memory
		if m.Total() > m.Usable || (m.Host > 0) != unchecked || m.HostUsable != 0 {
			t.Fatalf("%s: the case does not hold: HBM %v of %v, host %v of %v", rs[i].ID, m.Total(), m.Usable, m.Host, m.HostUsable)
		}
		if js := rep.JSON().Rows[i]; js.HostRAMUnchecked != unchecked || !js.Fits {
			t.Errorf("%s: row JSON fits %v, host_ram_unchecked %v; want true, %v", rs[i].ID, js.Fits, js.HostRAMUnchecked, unchecked)
		}
	}
	all := func(Result) bool { return true }
	if st := rep.Summary(all); st.N != 2 || st.Fit != 1 || st.HostUnchecked != 1 {
		t.Errorf("Summary = %+v, want 2 runs, 1 fit, 1 host RAM unchecked", st)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fit (HBM, host RAM) 1/2, host RAM unchecked 1\n", ", host RAM unchecked"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text does not say %q:\n%s", want, text.String())
		}
	}
}
