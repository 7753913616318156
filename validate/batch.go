package validate

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"shardlab/cost"
	"shardlab/maxtext"
	"shardlab/mesh"
)

// The verdicts on how a published run's per_device_batch_size was chosen.
const (
	// TunedMemory: the recipe's own words or history say the batch was
	// pushed to what fits in HBM (raised to the largest that fits, or
	// lowered after an out-of-memory failure of this configuration).
	TunedMemory = "memory"
	// TunedGlobalBatch: the recipe says the batch was held to reach or
	// keep a global batch, not to fill HBM.
	TunedGlobalBatch = "global_batch"
	// TunedUnknown: no evidence either way (the default when a run has no
	// batch_tuned).
	TunedUnknown = "unknown"
)

// BatchTuning is the evidence on how a run's per_device_batch_size was
// chosen: a verdict, the words or history that support it, and where they
// are (a file at a commit, or a pull request with the commit it merged
// as). A memory or global_batch verdict needs evidence and a source with
// a commit; unknown may carry notes on what was searched.
type BatchTuning struct {
	Verdict  string  `yaml:"verdict" json:"verdict"`
	Evidence string  `yaml:"evidence" json:"evidence"`
	Source   *Source `yaml:"source,omitempty" json:"source,omitempty"`
}

// Tuning is the run's batch verdict: TunedUnknown when it has no
// batch_tuned.
func (r Run) Tuning() string {
	if r.BatchTuned == nil {
		return TunedUnknown
	}
	return r.BatchTuned.Verdict
}

// check validates the evidence once it is decoded.
func (b *BatchTuning) check() error {
	switch b.Verdict {
	case TunedMemory, TunedGlobalBatch, TunedUnknown:
	default:
		return bad("batch_tuned.verdict", strconv.Quote(b.Verdict), "memory (pushed to what fits), global_batch (held for a global batch) or unknown")
	}
	if b.Verdict == TunedUnknown {
		if b.Source != nil {
			if err := b.Source.check(); err != nil {
				return fmt.Errorf("batch_tuned.%w", err)
			}
		}
		return nil
	}
	if strings.TrimSpace(b.Evidence) == "" {
		return bad("batch_tuned.evidence", `""`, fmt.Sprintf("the source's words or history behind verdict %s", b.Verdict))
	}
	if b.Source == nil {
		return bad("batch_tuned.source", "none", fmt.Sprintf("repo, path or issue, and commit for verdict %s", b.Verdict))
	}
	if err := b.Source.check(); err != nil {
		return fmt.Errorf("batch_tuned.%w", err)
	}
	if b.Source.Commit == "" {
		return bad("batch_tuned.source.commit", `""`, fmt.Sprintf("the commit the evidence is read at, for verdict %s", b.Verdict))
	}
	return nil
}

// BatchFit is one published run's batch against the most its layout fits
// by cost's count: sequences per batch shard per micro-batch (the chips of
// one data × fsdp × expert shard hold the same sequences, which tensor,
// context and pipeline split between them: per_device_batch_size times
// the shard's JAX devices, over its micro-batches).
// Recipes push their batch to near what fits, so a sound memory model says
// a little more than the published batch fits, and never less.
type BatchFit struct {
	ID           string  `json:"id"`
	Published    int     `json:"published_per_batch_shard"`
	MostThatFits int     `json:"most_that_fits_per_batch_shard"`
	Ratio        float64 `json:"ratio"`
	// Tuned is how the recipe chose its batch (Run.Tuning): memory,
	// global_batch or unknown.
	Tuned string `json:"batch_tuned"`
}

// BatchReport is the published runs' batches against what cost says fits.
type BatchReport struct {
	Fits []BatchFit `json:"runs"`
}

// EvaluateBatches costs, for every run, the most sequences per batch shard
// per micro-batch its layout fits (cost.Estimator.MaxMicroBatch, at the usable
// HBM validate checks fit at), up to limit times the published batch.
func EvaluateBatches(runs []Run, limit int) (BatchReport, error) {
	var rep BatchReport
	est := cost.NewEstimator()
	for _, r := range runs {
		j, m, err := r.Setup()
		if err != nil {
			return rep, fmt.Errorf("validate: run %s: %w", r.ID, err)
		}
		shards := m.Size(mesh.Data) * m.Size(mesh.FSDP) * m.Size(mesh.Expert) * max(j.MicroBatches, 1)
		pub := j.GlobalBatch / shards
		most, err := est.MaxMicroBatch(j, m, limit*pub)
		if err != nil {
			return rep, fmt.Errorf("validate: run %s: %w", r.ID, err)
		}
		rep.Fits = append(rep.Fits, BatchFit{ID: r.ID, Published: pub, MostThatFits: most, Ratio: float64(most) / float64(pub), Tuned: r.Tuning()})
	}
	return rep, nil
}

// Within counts the runs whose ratio is in [lo, hi].
func (rep BatchReport) Within(lo, hi float64) int {
	n := 0
	for _, f := range rep.Fits {
		if f.Ratio >= lo && f.Ratio <= hi {
			n++
		}
	}
	return n
}

// Tuned is the report over the runs whose recipes chose their batch the
// way verdict says (TunedMemory, TunedGlobalBatch, TunedUnknown).
func (rep BatchReport) Tuned(verdict string) BatchReport {
	var out BatchReport
	for _, f := range rep.Fits {
		if f.Tuned == verdict {
			out.Fits = append(out.Fits, f)
		}
	}
	return out
}

// counts is the summary of a set of runs: refused (ratio below 1), within
// 1.0-1.5x and above.
func (rep BatchReport) counts() string {
	n := len(rep.Fits)
	return fmt.Sprintf("refused at their published batch (ratio below 1): %d/%d; within 1.0-1.5x: %d/%d; above 1.5x: %d/%d",
		n-rep.Within(1, 1e18), n, rep.Within(1, 1.5), n, n-rep.Within(0, 1.5), n)
}

// WriteText writes the runs by ratio with how each recipe chose its batch,
// and how many are refused (below 1), within 1 to 1.5, and above: over
// every run, and over the runs whose recipes pushed their batch to what
// fits (the only ones whose ratio should be near 1), named.
func (rep BatchReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintln(&b, "Published batches against the most their layout fits by cost's count (sequences per batch shard per micro-batch):")
	fits := append([]BatchFit(nil), rep.Fits...)
	sort.SliceStable(fits, func(i, k int) bool { return fits[i].Ratio < fits[k].Ratio })
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tpublished\tmost that fits\tratio\tbatch tuned")
	for _, f := range fits {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%s\n", f.ID, f.Published, f.MostThatFits, f.Ratio, f.Tuned)
	}
	tw.Flush()
	fmt.Fprintln(&b, "batch tuned: how the recipe chose "+maxtext.PerDeviceBatchSize+", by the evidence in runs.yaml's batch_tuned (memory: pushed to")
	fmt.Fprintln(&b, "what fits; global_batch: held for a global batch; unknown: no evidence either way).")
	fmt.Fprintf(&b, "all runs: %s\n", rep.counts())
	mem := rep.Tuned(TunedMemory)
	var ids []string
	for _, f := range mem.Fits {
		ids = append(ids, f.ID)
	}
	if len(ids) == 0 {
		ids = []string{"none"}
	}
	fmt.Fprintf(&b, "memory-tuned runs (%d of %d: %s): %s\n", len(mem.Fits), len(rep.Fits), strings.Join(ids, ", "), mem.counts())
	fmt.Fprintf(&b, "runs whose batch was held for a global batch: %d; with no evidence: %d\n",
		len(rep.Tuned(TunedGlobalBatch).Fits), len(rep.Tuned(TunedUnknown).Fits))
	_, err := io.WriteString(w, b.String())
	return err
}

// BatchLimit is how far past the published batch EvaluateBatches looks in
// the built-in report: 8 times.
const BatchLimit = 8

// BuiltInMemoryReport costs the built-in memory table and the published
// runs' batches: what `shardlab validate --memory` prints.
func BuiltInMemoryReport() (MemoryReport, error) {
	cases, err := MemoryCases()
	if err != nil {
		return MemoryReport{}, err
	}
	rep, err := EvaluateMemory(cases)
	if err != nil {
		return rep, err
	}
	runs, err := Runs()
	if err != nil {
		return rep, err
	}
	batches, err := EvaluateBatches(runs, BatchLimit)
	if err != nil {
		return rep, err
	}
	rep.Batches = &batches
	return rep, nil
}
