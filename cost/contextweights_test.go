package cost

import (
	"testing"

	"shardlab/mesh"
	"shardlab/unit"
)

// llama8bParams is Llama 3 8B whole by hand: 32 layers of 218,112,000
// (pipehead_test.go), the embedding and the untied output layer of
// 525,336,576 each and the final norm of 4096: 8,030,261,248.
const llama8bParams = 32*218_112_000 + 2*llama8bVocabMatrix + llama8bFinalNorm

// TestContextShardsWeights holds the state of a layout with context
// parallelism to a hand derivation: MaxText's rules put context beside
// fsdp on every weight's embed dimension (weightShards), so Llama 3 8B
// on v5p-16 as fsdp=4,context=2 holds 8,030,261,248 / 8 = 1,003,782,656
// parameters a chip (fp32 weights and gradients, two fp32 Adam moments:
// 16 bytes each, 16,060,522,496), not the quarter fsdp alone leaves; and
// they are gathered and reduce-scattered over the 8 chips of fsdp ×
// context, with no all-reduce over context: the weights gathered in bf16
// for the forward and the backward, 2 × 7 × 2,007,565,312 =
// 28,105,914,368 bytes a chip, the fp32 gradient reduce-scattered once,
// 7 × 4,015,130,624 = 28,105,914,368.
func TestContextShardsWeights(t *testing.T) {
	if got := int64(llama8bParams); got != 8_030_261_248 {
		t.Fatalf("hand derivation: %d parameters, want 8,030,261,248", got)
	}
	j := NewJob(lookup(t, "llama3-8b"), 8192, 4)
	m := layout(t, "v5p-16", 1, "fsdp=4,context=2")
	mem, err := NewEstimator().Memory(j, m)
	if err != nil {
		t.Fatal(err)
	}
	const perChip = llama8bParams / 8
	if got, want := mem.Weights+mem.Gradients+mem.Optimizer, unit.Bytes(perChip*16); got != want {
		t.Errorf("weights, gradients, optimizer %d + %d + %d bytes, want %d", mem.Weights, mem.Gradients, mem.Optimizer, want)
	}
	est, err := EstimateStep(j, m)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		count int
		bytes unit.Bytes
	}{
		"weight all-gather":       {2, 2 * 7 * perChip * 2},
		"gradient reduce-scatter": {1, 7 * perChip * 4},
	}
	for _, c := range est.Comms {
		if c.Axis == mesh.Data || c.Axis == mesh.Context && c.What != "ring attention K/V" {
			t.Errorf("%s over %s: want no reduction over the context axis", c.What, c.Axis)
		}
		w, ok := want[c.What]
		if !ok {
			continue
		}
		delete(want, c.What)
		// one collective per layer, each rounded down to the byte
		if c.Count != w.count || c.ICIBytes > w.bytes || c.ICIBytes < w.bytes-unit.Bytes(32*c.Count) || c.DCNBytes != 0 {
			t.Errorf("%s: %d of them, ICI %d, DCN %d bytes; want %d, %d, 0", c.What, c.Count, c.ICIBytes, c.DCNBytes, w.count, w.bytes)
		}
	}
	if len(want) > 0 {
		t.Errorf("not found: %v in %v", want, est.Comms)
	}
}

// TestContextGathersWeights holds the layer backward of a layout with
// context parallelism and no fsdp to a hand derivation: Llama 3 8B on
// v5p-8 as data=2,context=2 shards its weights over context's 2 chips,
// so each layer is gathered in bf16 for its recompute and backward,
// 218,112,000 × 2 = 436,224,000 bytes, beside its largest weight's
// unreduced gradient, 4096 × 14,336 × 2 = 117,440,512 (not the bf16 copy
// of unsharded fp32 weights); the gradients are all-reduced over data
// alone, a ring of 2 sending the whole 8,030,261,248 / 2 × 4 =
// 16,060,522,496 bytes a chip.
func TestContextGathersWeights(t *testing.T) {
	j := NewJob(lookup(t, "llama3-8b"), 8192, 2)
	m := layout(t, "v5p-8", 1, "data=2,context=2")
	mem, err := NewEstimator().Memory(j, m)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]unit.Bytes{"gathered weights (FSDP)": 436_224_000, "unreduced weight gradient (FSDP)": 117_440_512}
	for _, b := range mem.Phases[0].Buffers {
		if w, ok := want[b.Name]; ok {
			if b.Bytes != w {
				t.Errorf("%s: %d bytes, want %d", b.Name, b.Bytes, w)
			}
			delete(want, b.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("the layer backward %v lacks %v", mem.Phases[0].Buffers, want)
	}
	est, err := EstimateStep(j, m)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range est.Comms {
		if c.What == "gradient all-reduce" {
			found = true
			if w := unit.Bytes(llama8bParams / 2 * 4); c.Axis != mesh.Data || c.ICIBytes > w || c.ICIBytes < w-32 {
				t.Errorf("gradient all-reduce over %s: %d bytes, want over data, %d", c.Axis, c.ICIBytes, w)
			}
		}
	}
	if !found {
		t.Errorf("no gradient all-reduce in %v", est.Comms)
	}
}
