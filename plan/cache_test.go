package plan

import (
	"bytes"
	"encoding/json"
	"reflect"
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

// TestCacheICIFactorizations checks the cache's in-slice factorizations
// against those worked out afresh, for a dense and a mixture-of-experts
// model's axes, asked twice (the second from the cache).
func TestCacheICIFactorizations(t *testing.T) {
	c := new(Cache)
	for _, moe := range []bool{false, true} {
		free := []bool{true, true, true, true, true, moe}
		for _, chips := range []int{1, 8, 96, 256} {
			want := byPipeline(factorizationsOver(chips, free))
			for range 2 {
				if got := c.iciFactorizations(chips, free); !reflect.DeepEqual(got, want) {
					t.Errorf("iciFactorizations(%d, %v) = %d tuples, want %d (%v)", chips, free, len(got), len(want), want[:min(3, len(want))])
				}
			}
		}
	}
	if len(c.ici) != 8 {
		t.Errorf("the cache kept %d lists, want 8", len(c.ici))
	}
}
