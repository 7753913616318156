package validate

import (
	"errors"
	"strings"
	"testing"
)

// builtInBatches is the built-in runs and their batch report.
func builtInBatches(t *testing.T) ([]Run, BatchReport) {
	t.Helper()
	runs, err := Runs()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := EvaluateBatches(runs, 8)
	if err != nil {
		t.Fatal(err)
	}
	return runs, rep
}

// TestNoPublishedBatchRefused: every published run fits at its published
// batch at the usable-HBM rule validate checks fit at (ratio at least 1):
// what really ran must fit.
func TestNoPublishedBatchRefused(t *testing.T) {
	runs, rep := builtInBatches(t)
	if len(rep.Fits) != len(runs) {
		t.Fatalf("%d runs costed, want %d", len(rep.Fits), len(runs))
	}
	for _, f := range rep.Fits {
		if f.MostThatFits < f.Published {
			t.Errorf("%s: published %d sequences per batch shard per micro-batch, cost says at most %d fit", f.ID, f.Published, f.MostThatFits)
		}
	}
}

// TestBatchReportCounts holds the summary lines to hand-made ratios: all
// runs, and the memory-tuned ones apart, named.
func TestBatchReportCounts(t *testing.T) {
	rep := BatchReport{Fits: []BatchFit{
		{ID: "a", Published: 4, MostThatFits: 3, Ratio: 0.75, Tuned: TunedUnknown},
		{ID: "b", Published: 4, MostThatFits: 4, Ratio: 1, Tuned: TunedMemory},
		{ID: "c", Published: 2, MostThatFits: 3, Ratio: 1.5, Tuned: TunedGlobalBatch},
		{ID: "d", Published: 2, MostThatFits: 5, Ratio: 2.5, Tuned: TunedMemory},
	}}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"all runs: refused at their published batch (ratio below 1): 1/4; within 1.0-1.5x: 2/4; above 1.5x: 1/4\n",
		"memory-tuned runs (2 of 4: b, d): refused at their published batch (ratio below 1): 0/2; within 1.0-1.5x: 1/2; above 1.5x: 1/2\n",
		"runs whose batch was held for a global batch: 1; with no evidence: 1\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report\n%s\nlacks\n%s", b.String(), want)
		}
	}
	if i, k := strings.Index(b.String(), "\na "), strings.Index(b.String(), "\nd "); i < 0 || k < i {
		t.Errorf("rows not by ratio:\n%s", b.String())
	}
	if got := len(rep.Tuned(TunedMemory).Fits); got != 2 {
		t.Errorf("Tuned(memory) = %d runs, want 2", got)
	}
}

// TestBatchReportNoMemoryTuned: with no memory-tuned run the line says
// none rather than a share of nothing.
func TestBatchReportNoMemoryTuned(t *testing.T) {
	rep := BatchReport{Fits: []BatchFit{{ID: "a", Published: 2, MostThatFits: 2, Ratio: 1, Tuned: TunedUnknown}}}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if want := "memory-tuned runs (0 of 1: none): refused at their published batch (ratio below 1): 0/0"; !strings.Contains(b.String(), want) {
		t.Errorf("report\n%s\nlacks %q", b.String(), want)
	}
}

// TestBatchTunedTable: every memory or global_batch verdict in the
// built-in table carries evidence and a source at a commit (Parse checks
// it; this holds the table to it), and the report's verdicts are the
// table's.
func TestBatchTunedTable(t *testing.T) {
	runs, rep := builtInBatches(t)
	for i, r := range runs {
		if got := rep.Fits[i].Tuned; got != r.Tuning() {
			t.Errorf("%s: report says %s, table %s", r.ID, got, r.Tuning())
		}
		if b := r.BatchTuned; b != nil && b.Verdict != TunedUnknown && (b.Evidence == "" || b.Source == nil || b.Source.Commit == "") {
			t.Errorf("%s: verdict %s without evidence and a source at a commit: %+v", r.ID, b.Verdict, b)
		}
	}
}

// TestParseBatchTuned: the batch_tuned field is read and checked, each bad
// value refused with an error naming the run, the field and what is
// accepted.
func TestParseBatchTuned(t *testing.T) {
	row := func(bt string) []byte {
		return []byte(`- id: r1
  source: {repo: AI-Hypercomputer/maxtext, path: README.md, commit: e286533d8}
  generation: v5p
  accelerator_type: v5p-8
  slices: 1
  model: {name: m, layers: 2, d_model: 1024, heads: 8, kv_heads: 8, head_dim: 128, d_ff: 4096, vocab: 32000}
  seq_len: 2048
  per_device_batch_size: 2
  global_batch_sequences: 8
  devices: 4
  chips: 4
  layout: {ici_fsdp: 4}
  remat_policy: full
  weight_dtype: float32
  quantization: ''
  published: {mfu: 0.5, mfu_source: published, flops_convention: none}
  calibration: false
` + bt)
	}
	good := `  batch_tuned:
    verdict: memory
    evidence: "PR #260: Maximize per_device_batch_size in 1024b config"
    source: {repo: AI-Hypercomputer/maxtext, issue: 'PR #260', commit: 54bdd800ae39564794f889a1a5b64a418bab7f0d}
`
	runs, err := Parse(row(good))
	if err != nil {
		t.Fatalf("Parse(good batch_tuned) error %v", err)
	}
	if got := runs[0].Tuning(); got != TunedMemory {
		t.Errorf("Tuning() = %q, want memory", got)
	}
	if runs, err := Parse(row("")); err != nil || runs[0].Tuning() != TunedUnknown {
		t.Errorf("Parse(no batch_tuned) = %v, %v, want unknown", runs, err)
	}
	bad := []struct {
		name, bt, want string
	}{
		{"verdict", "  batch_tuned: {verdict: maybe, evidence: x}\n", `batch_tuned.verdict = "maybe", want memory`},
		{"no evidence", "  batch_tuned: {verdict: memory, source: {repo: a/b, path: p, commit: abcdef0}}\n", "batch_tuned.evidence"},
		{"no source", "  batch_tuned: {verdict: global_batch, evidence: x}\n", "batch_tuned.source = none"},
		{"no commit", "  batch_tuned: {verdict: memory, evidence: x, source: {repo: a/b, path: p}}\n", "batch_tuned.source.commit"},
		{"bad repo", "  batch_tuned: {verdict: memory, evidence: x, source: {repo: ab, path: p, commit: abcdef0}}\n", "batch_tuned.source.repo"},
		{"bad commit", "  batch_tuned: {verdict: unknown, evidence: x, source: {repo: a/b, path: p, commit: XYZ}}\n", "batch_tuned.source.commit"},
		{"unknown field", "  batch_tuned: {verdict: memory, evidence: x, why: y}\n", "field why not found"},
	}
	for _, tc := range bad {
		_, err := Parse(row(tc.bt))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Parse error = %v, want one containing %q and wrapping ErrInvalid", tc.name, err, tc.want)
			continue
		}
		if tc.name != "unknown field" && !strings.Contains(err.Error(), "r1") {
			t.Errorf("%s: error %v does not name the run", tc.name, err)
		}
	}
}
