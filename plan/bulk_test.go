package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"shardlab/cost"
	"shardlab/schedule"
)

// TestBulkRejectionChangesNothing holds the search, which rejects in one
// step the layouts and micro-batch counts with no batch within the limit
// (searcher.bulk), to the same search trying every combination: the same
// plan to the byte (layout, estimates, runners-up, reasons, layouts
// evaluated and rejections by reason) or the same error, over dense and
// mixture-of-experts models, one to four slices of several generations,
// batch limits from tight to loose, a batch given, and a schedule or
// framework that changes the combinations.
func TestBulkRejectionChangesNothing(t *testing.T) {
	var cases []Request
	for _, c := range []struct {
		model, accel string
		slices       int
	}{
		{"llama3-8b", "v5p-64", 1}, {"llama3-8b", "tpu7x-32", 2}, {"llama3-70b", "v5p-128", 4},
		{"llama3-70b", "v6e-64", 3}, {"llama3-70b", "tpu7x-128", 2}, {"mixtral-8x7b", "v5p-32", 2},
		{"llama3-405b", "v5litepod-256", 4}, {"llama3-70b", "v4-128", 1},
	} {
		for _, maxBatch := range []int{16, 64, 256, 2048} {
			cases = append(cases, request(t, c.model, c.accel, c.slices, maxBatch))
		}
	}
	given := request(t, "llama3-8b", "v5p-64", 2, 256)
	given.GlobalBatch = 96
	sched := request(t, "llama3-70b", "v5p-64", 2, 64)
	sched.Schedule, sched.Chunks = schedule.Interleaved, 2
	maxtext := request(t, "llama3-70b", "v5p-64", 2, 64)
	maxtext.Framework = FrameworkMaxText
	remat := request(t, "llama3-70b", "tpu7x-64", 4, 128)
	remat.Remat = cost.RematFull
	cases = append(cases, given, sched, maxtext, remat)
	limited := 0
	for _, r := range cases {
		name := fmt.Sprintf("%s on %v, batch ≤ %d", r.Model.Name, r.Multislice, r.MaxGlobalBatch)
		if err := r.defaults(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, gotErr := searchWith(r, (*worker).layout, true)
		want, wantErr := searchWith(r, (*worker).layout, false)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Errorf("%s: error %v, trying every combination %v", name, gotErr, wantErr)
			continue
		}
		g, _ := json.Marshal(got.JSON(nil))
		w, _ := json.Marshal(want.JSON(nil))
		if !bytes.Equal(g, w) {
			t.Errorf("%s: the search and the search trying every combination plan differently:\n%s\nevery combination:\n%s", name, g, w)
		}
		if got.Rejected[ReasonBatchLimit] > 0 {
			limited++
		}
	}
	if limited < len(cases)/2 {
		t.Errorf("%d of %d cases reject a layout for the batch limit, want at least half: the test does not exercise the bulk rejection", limited, len(cases))
	}
}
