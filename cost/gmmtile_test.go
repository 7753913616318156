package cost

import (
	"math"
	"math/rand/v2"
	"testing"
)

// megabloxTiles is a second implementation of the tiles a grouped GEMM
// visits, as megablox's make_group_metadata counts them (gmm.py
// @9ca35d7e, visit_empty_groups=False for gmm): each non-empty group
// visits every tile from the one holding its first row to the one
// holding its last, ⌈end/tm⌉ − ⌊start/tm⌋, so a tile two groups share is
// computed twice.
func megabloxTiles(sizes []int, tm int) int {
	tiles, start := 0, 0
	for _, n := range sizes {
		if n > 0 {
			end := start + n
			tiles += (end+tm-1)/tm - start/tm
		}
		start += n
	}
	return tiles
}

// TestGMMTilePaddingMatchesMegablox routes Maverick's rows on one device
// (16 sequences of 8,192 tokens, top-1 of 128 experts: m = 131,072) to
// experts at random (seeded), counts the tiles megablox's metadata visits,
// and holds the mean extra rows, tiles × 512 − m, to gmmTilePadding's
// expectation (G − 1)·(tm − 1) = 127 × 511.
func TestGMMTilePaddingMatchesMegablox(t *testing.T) {
	const m, g, tm, trials = 131072, 128, 512, 200
	rng := rand.New(rand.NewPCG(29, 3))
	sum := 0.0
	for range trials {
		sizes := make([]int, g)
		for range m {
			sizes[rng.IntN(g)]++
		}
		sum += float64(megabloxTiles(sizes, tm)*tm - m)
	}
	got := sum / trials
	want := float64((g - 1) * (tm - 1))
	if math.Abs(got-want) > 0.01*want {
		t.Errorf("megablox computes %.0f extra rows on average, want (G−1)(tm−1) = %.0f", got, want)
	}
	j := NewJob(lookup(t, "llama4-maverick"), 8192, 512)
	sh := shape{b: 16, s: 8192, e: 1, dev: 1}
	if got, want := j.gmmTilePadding(&sh), want/m; math.Abs(got-want) > 1e-12 {
		t.Errorf("gmmTilePadding = %.6f, want %.6f", got, want)
	}
	if aligned := megabloxTiles([]int{1024, 512, 2048}, tm); aligned != 7 {
		t.Errorf("groups on tile boundaries visit %d tiles, want 7 (no tile twice)", aligned)
	}
}

// TestGMMTilePaddingFLOPsByHand: Llama 4 Maverick (24 MoE layers of 48,
// top-1 of 128 experts of d_ff 8,192, d_model 5,120) on v5p-256 as
// fsdp=32,tensor=4 at 512 sequences of 8,192: each fsdp shard's 16
// sequences, m = 131,072 routed rows, go through one grouped GEMM per
// tensor rank, (128 − 1)(512 − 1)/131,072 = 0.4951 more rows than routed.
// Full remat runs the routed GEMMs forward, backward (twice the forward)
// and forward again: 8 × 3 × 5120 × 8192 FLOPs a routed row and layer,
// so the hardware FLOPs grow by 0.4951 × 8 × 3 × 5120 × 8192 × 24 ×
// 512 × 8192 over a tile of one row (which computes no other rows); the
// model FLOPs do not.
func TestGMMTilePaddingFLOPsByHand(t *testing.T) {
	spec := lookup(t, "llama4-maverick")
	if spec.MoELayers() != 24 || spec.Experts != 128 || spec.ExpertsPerToken != 1 || spec.ExpertFF() != 8192 || spec.DModel != 5120 {
		t.Fatalf("llama4-maverick: %d MoE layers, %d experts, top-%d, d_ff %d, d_model %d; the hand count assumes 24, 128, 1, 8192, 5120",
			spec.MoELayers(), spec.Experts, spec.ExpertsPerToken, spec.ExpertFF(), spec.DModel)
	}
	m := layout(t, "v5p-256", 1, "fsdp=32,tensor=4")
	est := func(tile, cf float64) Estimate {
		j := NewJob(spec, 8192, 512)
		j.Remat, j.GMMTile, j.CapacityFactor = RematFull, tile, cf
		e, err := EstimateStep(j, m)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	pad := 127.0 * 511 / 131072
	want := pad * 8 * 3 * 5120 * 8192 * 24 * 512 * 8192
	big, one := est(512, 0), est(1, 0)
	if got := float64(big.HardwareFLOPs - one.HardwareFLOPs); math.Abs(got-want) > 1e-6*want {
		t.Errorf("512-row tiles add %.6g hardware FLOPs, want %.6g", got, want)
	}
	if def := est(0, 0); def.HardwareFLOPs != big.HardwareFLOPs {
		t.Errorf("GMMTile 0 gives %g hardware FLOPs, want MaxText's 512 rows' %g", float64(def.HardwareFLOPs), float64(big.HardwareFLOPs))
	}
	if big.ModelFLOPs != one.ModelFLOPs {
		t.Errorf("the tiles change the model FLOPs: %g, want %g", float64(big.ModelFLOPs), float64(one.ModelFLOPs))
	}
	if a, b := est(512, 1.25), est(1, 1.25); a.HardwareFLOPs != b.HardwareFLOPs {
		t.Errorf("with a capacity factor the tile changes the FLOPs (%g, %g): dense_matmul has no groups", float64(a.HardwareFLOPs), float64(b.HardwareFLOPs))
	}
}

// TestGMMTilePaddingEdges: one local expert (expert parallelism as wide
// as the experts) or a dense model has nothing to pad; a device whose
// rows are fewer than its experts pads only the groups that hold a row.
func TestGMMTilePaddingEdges(t *testing.T) {
	j := NewJob(lookup(t, "mixtral-8x7b"), 4096, 64)
	if got := j.gmmTilePadding(&shape{b: 1, s: 4096, e: 8, dev: 1}); got != 0 {
		t.Errorf("one expert a device: gmmTilePadding = %g, want 0", got)
	}
	dense := NewJob(lookup(t, "llama3-8b"), 4096, 64)
	if got := dense.gmmTilePadding(&shape{b: 1, s: 4096, e: 1, dev: 1}); got != 0 {
		t.Errorf("dense model: gmmTilePadding = %g, want 0", got)
	}
	// one sequence of 4 tokens, top-2, over a chip's 2 JAX devices: m = 4
	// rows a device, at most 4 of the 8 groups hold a row, and a tile is
	// min(512, 4) = 4 rows, all of them: each of the 4 groups computes the
	// one tile whole, 16 rows for 4 (megabloxTiles), 3 extra a row.
	few := shape{b: 1, s: 4, e: 1, dev: 2}
	want := float64(megabloxTiles([]int{1, 1, 1, 1}, 4)*4-4) / 4
	if got := j.gmmTilePadding(&few); want != 3 || math.Abs(got-want) > 1e-12 {
		t.Errorf("m = 4 rows over 8 experts: gmmTilePadding = %g, want %g (megablox's tiles)", got, want)
	}
	j.GMMTile = -1
	if err := j.validate(); err == nil {
		t.Errorf("GMMTile -1 validates, want an error")
	}
}
