package plan

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"shardlab/cost"
	"shardlab/mesh"
	"shardlab/schedule"
)

// TestSearchMatchesReference holds the search to the search as it was
// before issue 31's speed work (searchReference): the same plan — layout,
// batch, every estimate, the runners-up, the reasons, the layouts
// evaluated and the rejections by reason — or the same error, for dense
// and mixture-of-experts jobs, one slice and several, the batch chosen or
// given, a layout asked for, and the settings that change what a layout
// holds (offload, a memory calibration, a fixed policy and schedule).
func TestSearchMatchesReference(t *testing.T) {
	type tc struct {
		name string
		r    Request
	}
	var cases []tc
	add := func(name string, r Request, change func(*Request)) {
		if change != nil {
			change(&r)
		}
		r.Top = 3
		cases = append(cases, tc{name, r})
	}
	add("8b one slice", request(t, "llama3-8b", "v5p-64", 1, 256), nil)
	add("70b two slices", request(t, "llama3-70b", "tpu7x-32", 2, 512), nil)
	add("70b v5e four slices", request(t, "llama3-70b", "v5litepod-64", 4, 256), nil)
	add("mixtral two slices", request(t, "mixtral-8x7b", "v5p-16", 2, 256), nil)
	add("mixtral capacity factor", request(t, "mixtral-8x7b", "v5p-32", 1, 256), func(r *Request) { r.CapacityFactor = 1.25 })
	add("global batch given", request(t, "llama3-8b", "v5p-64", 1, 256), func(r *Request) { r.GlobalBatch = 96 })
	add("offload and bf16", request(t, "llama3-70b", "v6e-32", 1, 64), func(r *Request) {
		r.OptimizerOffload, r.Precision = true, cost.MaxTextBF16Precision()
	})
	add("temp scale and headroom", request(t, "llama3-70b", "tpu7x-32", 2, 256), func(r *Request) { r.TempScale, r.HBMHeadroom = 1.7, 0.1 })
	add("remat and schedule given", request(t, "llama3-70b", "v5p-64", 2, 256), func(r *Request) {
		r.Remat, r.Schedule, r.Chunks = cost.RematSaveQKVProj, schedule.Interleaved, 2
	})
	add("maxtext schedules", request(t, "llama3-70b", "v5p-64", 2, 256), func(r *Request) { r.Framework = FrameworkMaxText })
	// MaxText's ring runs none of gemma2's and llama4's context: the
	// in-chip factor on fsdp, an even batch per chip (review 128 #2)
	add("maxtext ring, gemma2", request(t, "gemma2-27b", "tpu7x-8", 1, 512), func(r *Request) { r.Framework = FrameworkMaxText })
	add("maxtext ring, llama4", request(t, "llama4-maverick", "tpu7x-256", 1, 512), func(r *Request) { r.Framework = FrameworkMaxText })
	// llama3-8b's 8 K/V heads: the ring refuses tensor 16 with context
	add("maxtext ring, K/V heads", request(t, "llama3-8b", "v5p-64", 1, 256), func(r *Request) { r.Framework, r.Seq = FrameworkMaxText, 32768 })
	add("mesh given", request(t, "llama3-70b", "tpu7x-128", 2, 512), func(r *Request) {
		r.Axes = []mesh.Degree{{Axis: mesh.FSDP, ICI: 64, DCN: 1}, {Axis: mesh.Data, ICI: 1, DCN: 2}}
	})
	add("mesh given does not fit", request(t, "llama3-405b", "v5litepod-4", 1, 512), func(r *Request) {
		r.Axes = []mesh.Degree{{Axis: mesh.Data, ICI: 4, DCN: 1}}
	})
	add("nothing fits", request(t, "llama3-405b", "v5litepod-4", 1, 512), nil)
	add("two workers", request(t, "llama3-70b", "v5p-64", 4, 128), func(r *Request) { r.Workers = 2 })
	for _, c := range cases {
		if testing.Short() && c.name != "8b one slice" {
			continue
		}
		got, gotErr := Search(c.r)
		want, wantErr := searchReference(c.r)
		if (gotErr != nil) != (c.name == "nothing fits") {
			t.Errorf("%s: Search error %v", c.name, gotErr)
		}
		if gotErr != nil || wantErr != nil {
			// Search looks for fixes when nothing fits; the reference does
			// not: compare what both say of the job.
			var none, refNone *NoPlanError
			if !errors.As(gotErr, &none) || !errors.As(wantErr, &refNone) || !reflect.DeepEqual(none.Rejected, refNone.Rejected) || none.On != refNone.On {
				t.Errorf("%s: Search error %v, reference error %v", c.name, gotErr, wantErr)
			}
			continue
		}
		if !reflect.DeepEqual(got, want) {
			g, _ := json.MarshalIndent(got.JSON(nil), "", " ")
			w, _ := json.MarshalIndent(want.JSON(nil), "", " ")
			t.Errorf("%s: Search and the reference plan differently:\n%s\nreference:\n%s", c.name, g, w)
		}
	}
}
