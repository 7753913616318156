package plan

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestSearchIsTheSameWithACache plans requests of different models, chips,
// slices and batches one after the other on one Cache, so that each
// search reuses estimators the ones before it filled, and checks each plan
// against the same search on fresh estimators.
func TestSearchIsTheSameWithACache(t *testing.T) {
	reqs := []Request{
		request(t, "llama3-70b", "v5p-1024", 4, 128),
		request(t, "llama3-8b", "v5p-64", 1, 256),
		request(t, "mixtral-8x7b", "v6e-64", 2, 512),
		request(t, "llama3-70b", "tpu7x-128", 2, 512),
		request(t, "llama3-8b", "v6e-8", 1, 64),
	}
	cache := new(Cache)
	for _, workers := range []int{1, 2} {
		for _, r := range reqs {
			r.Workers = workers
			want, err := Search(r)
			if err != nil {
				t.Fatal(err)
			}
			r.Cache = cache
			got, err := Search(r)
			if err != nil {
				t.Fatal(err)
			}
			gj, _ := json.Marshal(got.JSON(nil))
			wj, _ := json.Marshal(want.JSON(nil))
			if !bytes.Equal(gj, wj) {
				t.Errorf("%s on %v, %d workers: the plan with a shared cache differs from one without", r.Model.Name, r.Multislice, workers)
			}
			if got.Request.Cache != nil {
				t.Errorf("%s on %v: the plan holds the cache", r.Model.Name, r.Multislice)
			}
		}
	}
	if len(cache.ests) == 0 {
		t.Error("the cache kept no estimator")
	}
}
