package validate

import (
	"fmt"
	"strconv"
	"strings"
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
