package cost

import (
	"math"
	"strings"
	"testing"
	"time"

	"shardlab/collective"
	"shardlab/hw"
	"shardlab/mesh"
	"shardlab/unit"
)

const (
	expertAxis = mesh.Expert
	hwDCN      = hw.DCN
)

// Mixtral 8x7B (Jiang et al. 2024, Table 1): d_model 4096, 8 experts,
// top-2, expert d_ff 14336, 32 layers, all of them MoE.
func TestExpertCapacityAndAllToAllBytes(t *testing.T) {
	// one 4096-token sequence per device, capacity factor 1.25:
	// ceil(1.25 · 4096 · 2 / 8) = 1280 rows per expert
	if got := ExpertCapacity(1.25, 4096, 2, 8); got != 1280 {
		t.Errorf("ExpertCapacity(1.25, 4096, 2, 8) = %d, want 1280", got)
	}
	if got := ExpertCapacity(1, 7, 2, 8); got != 2 { // ceil(14/8)
		t.Errorf("ExpertCapacity(1, 7, 2, 8) = %d, want 2", got)
	}
	// MaxText's rounding: ⌈s·k/E⌉ first, then the factor, truncated:
	// ⌈100·2/64⌉ = 4, × 1.3 = 5.2 -> 5; and at least one row, where
	// MaxText's int(max(1 × 0.5, 0.5)) = 0 would drop every token
	if got := ExpertCapacity(1.3, 100, 2, 64); got != 5 {
		t.Errorf("ExpertCapacity(1.3, 100, 2, 64) = %d, want 5", got)
	}
	if got := ExpertCapacity(0.5, 1, 1, 64); got != 1 {
		t.Errorf("ExpertCapacity(0.5, 1, 1, 64) = %d, want 1", got)
	}
	if got := ExpertRows(1.25, 3, 4096, 2, 8); got != 3*8*1280 {
		t.Errorf("ExpertRows(3 sequences) = %d, want %d", got, 3*8*1280)
	}
	if got := ExpertRows(0, 3, 4096, 2, 8); got != 3*4096*2 {
		t.Errorf("ExpertRows(dropless) = %d, want %d", got, 3*4096*2)
	}
	if got := ExpertCapacity(0, 4096, 2, 8); got != 0 {
		t.Errorf("ExpertCapacity(0 = dropless) = %d, want 0", got)
	}
	for _, c := range []struct {
		name string
		n    int
		cf   float64
		want unit.Bytes
	}{
		// 8 experts × 1280 rows × 4096 × 2 B = 83,886,080 B; 7/8 leave
		{"capacity 1.25 over 8", 8, 1.25, 73_400_320},
		// dropless: 4096 × 2 × 4096 × 2 B = 67,108,864 B; 7/8 leave
		{"dropless over 8", 8, 0, 58_720_256},
		// over 2 devices half leaves
		{"capacity 1.25 over 2", 2, 1.25, 41_943_040},
		{"one device", 1, 1.25, 0},
	} {
		if got := ExpertAllToAllBytes(c.n, c.cf, 1, 4096, 2, 8, 4096, 2); got != c.want {
			t.Errorf("%s: ExpertAllToAllBytes = %d, want %d", c.name, got, c.want)
		}
	}
	if ExpertAllToAllsPerLayer(false) != 4 || ExpertAllToAllsPerLayer(true) != 6 {
		t.Errorf("all-to-alls per layer = %d, %d, want 4 and 6", ExpertAllToAllsPerLayer(false), ExpertAllToAllsPerLayer(true))
	}
}

func TestTokensPerExpert(t *testing.T) {
	j := NewJob(lookup(t, "mixtral-8x7b"), 4096, 64)
	j.CapacityFactor = 1.25
	// 8 devices each send 1280 rows to every expert
	if got := j.TokensPerExpert(1, 4096, 8); got != 8*1280 {
		t.Errorf("TokensPerExpert(capacity 1.25) = %g, want %d", got, 8*1280)
	}
	j.CapacityFactor, j.LoadImbalance = 0, 1.5
	// dropless: 8 × 4096 × 2 / 8 = 8192, × 1.5 for the busiest expert
	if got := j.TokensPerExpert(1, 4096, 8); got != 12288 {
		t.Errorf("TokensPerExpert(dropless, 1.5) = %g, want 12288", got)
	}
}

// Expert memory per chip, by hand: one Mixtral expert is 3 × 4096 × 14336
// = 176,160,768 parameters; 8 of them in each of 32 layers, over expert=8
// and fsdp=8, leave 32 × 8 × 176,160,768 / 64 = 704,643,072 routed
// parameters per chip. MaxText shards every other weight's embed
// dimension over fsdp and expert (base.yml @e591f30c line 605), so
// fsdp=8,expert=8 holds what fsdp=64 does.
func TestExpertParamsPerChip(t *testing.T) {
	spec := lookup(t, "mixtral-8x7b")
	j := NewJob(spec, 4096, 64)
	ep, err := shapeOf(j, layout(t, "v5p-128", 1, "fsdp=8,expert=8"))
	if err != nil {
		t.Fatal(err)
	}
	fsdp, err := shapeOf(j, layout(t, "v5p-128", 1, "fsdp=64"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := j.routedPerChip(&ep), 704_643_072.0; got != want {
		t.Errorf("routed experts per chip = %.0f, want %.0f", got, want)
	}
	if got, want := j.stageParams(&ep, firstStage, endsSplit), j.stageParams(&fsdp, firstStage, endsSplit); math.Abs(got-want) > 1 {
		t.Errorf("params per chip on fsdp=8,expert=8 = %.0f, want fsdp=64's %.0f", got, want)
	}
	if got, want := j.stageParams(&fsdp, firstStage, endsSplit), float64(spec.ParamCount().Total())/64; math.Abs(got-want) > 1 {
		t.Errorf("params per chip on fsdp=64 = %.0f, want total/64 = %.0f", got, want)
	}
	if ep.b != 1 || fsdp.b != 1 {
		t.Errorf("sequences per chip = %d, %d, want 1 (the expert axis shards the batch)", ep.b, fsdp.b)
	}
}

// MFU counts the active parameters, as MaxText does: Mixtral's model
// FLOPs per token are 6 × 12.88B active, not 6 × 46.7B.
func TestMoEMFUUsesActiveParams(t *testing.T) {
	spec := lookup(t, "mixtral-8x7b")
	j := NewJob(spec, 4096, 64)
	j.CapacityFactor = 1.25
	est, err := EstimateStep(j, layout(t, "v5p-128", 1, "fsdp=8,expert=8"))
	if err != nil {
		t.Fatal(err)
	}
	tokens := 64.0 * 4096
	perToken := float64(est.ModelFLOPs) / tokens
	active, total := float64(spec.MatmulParams()), float64(spec.ParamCount().Total())
	if perToken < 6*active || perToken > 6*active*1.2 || perToken > 6*total/2 {
		t.Errorf("model FLOPs per token = %.3g, want about 6 × %.3g active (not 6 × %.3g total)", perToken, active, total)
	}
	var a2a bool
	for _, c := range est.Comms {
		if c.What == "expert dispatch/combine all-to-all" {
			a2a = true
			// 32 layers × 6 all-to-alls (full remat recomputes), one
			// micro-batch; 1 sequence of 4096 tokens per chip
			if c.Count != 192 {
				t.Errorf("all-to-alls per step = %d, want 192", c.Count)
			}
			if want := ExpertAllToAllBytes(8, 1.25, 1, 4096, 2, 8, 4096, 2) * 192; c.ICIBytes != want {
				t.Errorf("all-to-all ICI bytes = %d, want %d", c.ICIBytes, want)
			}
		}
	}
	if !a2a {
		t.Errorf("no expert all-to-all in %v", est.Comms)
	}
	if est.TokensPerExpert != 8*1280 {
		t.Errorf("TokensPerExpert = %g, want %d", est.TokensPerExpert, 8*1280)
	}
}

// All-to-all time by hand: over expert=8 inside a v5p slice, each device
// sends 7/8 of its E × capacity × d_model buffer at the expert axis's ICI
// bandwidth, times the ring factor 8/4 = 2 (a V-byte all-to-all takes
// V/(4W) on a bidirectional ring: the scaling book), plus the ring's hop
// latencies; over expert=2(dcn) on top, the share for the other slice's
// 4 devices (4/7 of what leaves) crosses DCN at its line rate.
func TestExpertAllToAllTime(t *testing.T) {
	j := NewJob(lookup(t, "mixtral-8x7b"), 4096, 128)
	j.CapacityFactor = 1.25
	for _, c := range []struct {
		name, mesh string
		slices     int
	}{{"ICI", "fsdp=8,expert=8", 1}, {"ICI and DCN", "fsdp=16,expert=4,expert=2(dcn)", 2}} {
		m := layout(t, "v5p-128", c.slices, c.mesh)
		est, err := EstimateStep(j, m)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got Comm
		for _, cm := range est.Comms {
			if cm.Axis.String() == "expert" {
				got = cm
			}
		}
		ed := m.Degree(expertAxis)
		e := ed.Size()
		buffer := float64(est.MicroBatchSize*8*ExpertCapacity(1.25, 4096, 2, 8)) * 4096 * 2
		leaves := buffer * float64(e-1) / float64(e)
		ici := leaves * float64(ed.ICI-1) / float64(e-1)
		l := m.Link(expertAxis)
		wantICI := ici/float64(l.Bandwidth)*collective.TorusAllToAllFactor(ed.ICI, l.Dims) + float64(l.Hops)*l.HopLatency.Seconds()
		if c.name == "ICI" && l.Dims == 1 && collective.TorusAllToAllFactor(ed.ICI, l.Dims) != 2 {
			t.Errorf("expert=8 on one ring: factor %g, want 8/4 = 2", collective.TorusAllToAllFactor(ed.ICI, l.Dims))
		}
		if d := got.ICITime.Seconds()/float64(got.Count) - wantICI; math.Abs(d) > 1e-6 {
			t.Errorf("%s: ICI time per all-to-all = %v, want %.6f s", c.name, got.ICITime/time.Duration(got.Count), wantICI)
		}
		if d := float64(got.ICIBytes)/float64(got.Count) - ici; math.Abs(d) > 1 {
			t.Errorf("%s: ICI bytes per all-to-all = %d, want %.0f", c.name, int64(got.ICIBytes)/int64(got.Count), ici)
		}
		if ed.DCN > 1 {
			dcn := leaves - ici
			line := m.TierLink(hwDCN)
			want := dcn / float64(line.Bandwidth) // plus one hop's latency
			perOp := got.DCNTime.Seconds() / float64(got.Count)
			if perOp < want || perOp > want+0.01 {
				t.Errorf("%s: DCN time per all-to-all = %.6f s, want %.6f s plus a hop's latency", c.name, perOp, want)
			}
			if d := float64(got.DCNBytes)/float64(got.Count) - dcn; math.Abs(d) > 1 {
				t.Errorf("%s: DCN bytes per all-to-all = %d, want %.0f", c.name, int64(got.DCNBytes)/int64(got.Count), dcn)
			}
		} else if got.DCNBytes != 0 || got.DCNTime != 0 {
			t.Errorf("%s: DCN %v / %v, want none", c.name, got.DCNBytes, got.DCNTime)
		}
	}
}

// Capacity padding by hand: at capacity factor 1.25 Mixtral's routed
// experts compute a quarter more rows than the active count, 0.25 × 6 ×
// 32 layers × 2 experts × 176,160,768 params × tokens extra FLOPs, and
// full remat recomputes the padded w_i0, w_i1 and w_o (the combine's
// router-weight gradient reads w_o's output: 3 × 2·d·f of an expert's
// 6 × 3·d·f, so 3/9 more); 1.0 adds none, and dropless at load
// imbalance 1.5 adds half (the ragged rows are the tokens' own, so the
// recompute adds nothing). A capacity factor also brings the dense
// dispatch's einsums (denseDispatchFLOPs, held by hand in
// TestDenseDispatchFLOPsByHand), taken out here.
func TestExpertPaddingFLOPs(t *testing.T) {
	spec := lookup(t, "mixtral-8x7b")
	m := layout(t, "v5p-128", 1, "fsdp=8,expert=8")
	hwFLOPs := func(cf, imb float64) float64 {
		j := NewJob(spec, 4096, 64)
		j.CapacityFactor, j.LoadImbalance = cf, imb
		est, err := EstimateStep(j, m)
		if err != nil {
			t.Fatal(err)
		}
		return float64(est.HardwareFLOPs) - j.denseDispatchFLOPs(64*4096)
	}
	tokens := 64.0 * 4096
	routed := 6 * 32 * 2 * 176_160_768.0 * tokens
	base := hwFLOPs(1, 0)
	if got := hwFLOPs(0, 0); got != base {
		t.Errorf("dropless balanced = %g FLOPs, want capacity 1's %g", got, base)
	}
	if got, want := hwFLOPs(1.25, 0)-base, 0.25*routed*(1+3.0/9); math.Abs(got-want) > 1e-6*want {
		t.Errorf("capacity 1.25 adds %g FLOPs, want %g", got, want)
	}
	if got, want := hwFLOPs(0, 1.5)-base, 0.5*routed; math.Abs(got-want) > 1e-6*want {
		t.Errorf("load imbalance 1.5 adds %g FLOPs, want %g", got, want)
	}
}

// TestDenseDispatchFLOPsByHand: Mixtral 8x7B at sequence 4096 and
// capacity factor 1.25 gives each of its 8 experts C = ⌈4096·2/8⌉·1.25 =
// 1,280 rows a sequence; one dispatch or combine einsum over a sequence is
// 2·4096·8·1280·4096 FLOPs, 32 MoE layers; full remat recomputes the
// experts' input, so six einsums (two forward, three backward, one
// redone), a token 6·2·8·1280·4096·32 FLOPs. A policy that keeps mlpwi_0
// runs five; dropless, none. Against the experts' own GEMMs (6·2·3·d·f a
// token at the padded capacity) that is S/(3·d_ff) an einsum: 9.5 %.
func TestDenseDispatchFLOPsByHand(t *testing.T) {
	j := NewJob(lookup(t, "mixtral-8x7b"), 4096, 64)
	j.CapacityFactor, j.Remat = 1.25, RematFull
	tokens := 1000.0
	want := 6 * 2 * 8 * 1280 * 4096 * 32 * tokens
	if got := j.denseDispatchFLOPs(tokens); math.Abs(got-want) > 1e-9*want {
		t.Errorf("full remat: denseDispatchFLOPs = %g, want %g", got, want)
	}
	j.Remat = RematNone
	if got := j.denseDispatchFLOPs(tokens); math.Abs(got-want*5/6) > 1e-9*want {
		t.Errorf("no remat: denseDispatchFLOPs = %g, want %g", got, want*5/6)
	}
	one := 2 * 4096 * 8 * 1280 * 4096.0
	experts := 2 * 8 * 1280 * 3 * 4096 * 14336.0 // forward GEMMs of the padded capacity
	if r := one / experts; math.Abs(r-4096.0/(3*14336)) > 1e-12 {
		t.Errorf("an einsum is %.4f of the experts' forward GEMMs, want S/(3·d_ff) = %.4f", r, 4096.0/(3*14336))
	}
	j.CapacityFactor = 0
	if got := j.denseDispatchFLOPs(tokens); got != 0 {
		t.Errorf("dropless: denseDispatchFLOPs = %g, want 0", got)
	}
	dense := NewJob(lookup(t, "llama3-8b"), 4096, 64)
	dense.CapacityFactor = 1.25
	if got := dense.denseDispatchFLOPs(tokens); got != 0 {
		t.Errorf("dense model: denseDispatchFLOPs = %g, want 0", got)
	}
}

func TestDroplessExtraByHand(t *testing.T) {
	// Mixtral 8x7B by hand: 32 MoE layers, 2 of 8 experts per token, one
	// expert 3·4096·14336 matmul parameters; at a dropless width of 3,000
	// each routed row costs the GEMMs of a 3,000-wide expert more:
	// 6·32·2·3·4096·3000 FLOPs per token, the routed FLOPs × 3000/14336.
	spec := lookup(t, "mixtral-8x7b")
	j := NewJob(spec, 4096, 64)
	j.Calibration = &Calibration{Dropless: 3000}
	tokens := 1000.0
	want := 6 * 32 * 2 * 3 * 4096 * 3000 * tokens
	if got := j.droplessExtra(tokens); math.Abs(got-want) > 1e-6*want {
		t.Errorf("droplessExtra = %g, want %g", got, want)
	}
	j.LoadImbalance = 1.5
	if got := j.droplessExtra(tokens); math.Abs(got-1.5*want) > 1e-6*want {
		t.Errorf("droplessExtra at imbalance 1.5 = %g, want %g", got, 1.5*want)
	}
	j.CapacityFactor = 1.25 // dense dispatch: padding, not ragged GEMMs
	if got := j.droplessExtra(tokens); got != 0 {
		t.Errorf("droplessExtra with a capacity factor = %g, want 0", got)
	}
	dense := NewJob(lookup(t, "llama3-8b"), 4096, 64)
	if got := dense.droplessExtra(tokens); got != 0 {
		t.Errorf("droplessExtra of a dense model = %g, want 0", got)
	}
}

// TestMoEAndMLAWidthsByHand: the activation widths of an MoE layer's MLP
// and of latent attention, derived by hand from the published configs.
func TestMoEAndMLAWidthsByHand(t *testing.T) {
	// DeepSeek-V3 (arXiv 2412.19437 §4.2): 61 layers, the first 3 dense
	// with d_ff 18,432, 58 MoE layers of 8 routed + 1 shared experts of
	// 2,048: (3·18432 + 58·9·2048) / 61 = 18,432 per token, dropless.
	ds := NewJob(lookup(t, "deepseek3-671b"), 4096, 64)
	if got := ds.mlpWidth(); got != 18432 {
		t.Errorf("deepseek3-671b MLP width %v, want 18432", got)
	}
	// Mixtral 8x7B at capacity factor 1.25: every layer MoE, 2 experts of
	// 14,336 each padded by 1.25: 35,840.
	mx := NewJob(lookup(t, "mixtral-8x7b"), 4096, 64)
	mx.CapacityFactor = 1.25
	if got := mx.mlpWidth(); got != 35840 {
		t.Errorf("mixtral-8x7b MLP width %v at capacity 1.25, want 35840", got)
	}
	// MLA: 128 heads with 128 + 64 query/key dims and 128 value dims; at
	// tensor 4 a chip holds 32 heads.
	w := ds.tensorWidths(4)
	want := map[Tensor]float64{Query: 32 * 192, Key: 32 * 192, Value: 32 * 128, Context: 32 * 128, MLPWi0: 18432 / 4}
	for x, v := range want {
		if w[x] != v {
			t.Errorf("deepseek3-671b %s width %v at tensor 4, want %v", x, w[x], v)
		}
	}
	// a dense model is unchanged: Llama 3 8B's d_ff and GQA heads
	ll := NewJob(lookup(t, "llama3-8b"), 8192, 64)
	w = ll.tensorWidths(2)
	if w[MLPWi0] != 14336/2 || w[Query] != 4096/2 || w[Key] != 1024/2 {
		t.Errorf("llama3-8b widths at tensor 2: %v", w)
	}
	// the dispatch buffers: 2 × experts × capacity × d_model × 2 bytes,
	// and the dense dispatch's masks of one 4,096-token sequence: 4096 ×
	// 8 × 1280 elements, a bf16 combine mask, a bool dispatch mask and
	// the combine mask's bf16 gradient, 5 bytes an element (168 MB)
	mx.Precision.Activation = 2
	c := ExpertCapacity(1.25, 4096, 2, 8)
	masks := 4096 * 8 * 1280 * 5.0
	if got, want := mx.expertBuffers(1, 4096), float64(2*8*c*4096*2)+masks; got != want {
		t.Errorf("mixtral dispatch buffers %v bytes, want %v", got, want)
	}
	if got := mx.dispatchMasks(3, 4096); got != 3*masks {
		t.Errorf("mixtral masks of 3 sequences %v bytes, want %v", got, 3*masks)
	}
	mx.CapacityFactor = 0
	if got := mx.dispatchMasks(1, 4096); got != 0 {
		t.Errorf("dropless masks %v bytes, want 0", got)
	}
}

// TestRingOfExpertsByHand: Mixtral 8x7B on fsdp=8, expert=8 with one
// 4,096-token sequence per chip and full remat: each of the 32 MoE
// layers runs three all-gathers and three reduce-scatters (forward,
// recomputed forward, backward), each of 8 × 4,096 × (4,096 + 8) bf16
// elements of which a chip sends 7/8, and no all-to-all. The ring needs
// a dropless mixture of experts.
func TestRingOfExpertsByHand(t *testing.T) {
	spec := lookup(t, "mixtral-8x7b")
	m := layout(t, "v5p-128", 1, "fsdp=8,expert=8")
	j := NewJob(spec, 4096, 64)
	j.RingOfExperts = true
	est, err := EstimateStep(j, m)
	if err != nil {
		t.Fatal(err)
	}
	size := 8.0 * 4096 * (4096 + 8) * 2
	want := 32 * 3 * size * 7 / 8
	got := map[collective.Op]float64{}
	for _, c := range est.Comms {
		if c.Axis == mesh.Expert {
			got[c.Op] += float64(c.ICIBytes + c.DCNBytes)
		}
	}
	for _, op := range []collective.Op{collective.AllGather, collective.ReduceScatter} {
		if math.Abs(got[op]-want) > 1e-9*want {
			t.Errorf("%s: %g bytes per chip, want %g", op, got[op], want)
		}
	}
	if got[collective.AllToAll] != 0 {
		t.Errorf("ring of experts still runs %g bytes of all-to-all", got[collective.AllToAll])
	}
	if b := RingOfExpertsBytes(8, 4096, 4096, 8, 2); float64(b) != size {
		t.Errorf("RingOfExpertsBytes = %d, want %g", b, size)
	}
	j.CapacityFactor = 1.25
	if _, err := EstimateStep(j, m); err == nil || !strings.Contains(err.Error(), "ring of experts") {
		t.Errorf("ring of experts with a capacity factor: %v, want refused by name", err)
	}
	dense := NewJob(lookup(t, "llama3-8b"), 4096, 64)
	dense.RingOfExperts = true
	if _, err := EstimateStep(dense, layout(t, "v5p-128", 1, "fsdp=64")); err == nil {
		t.Error("ring of experts accepted for a dense model")
	}
}

func TestFSDPGathersTheExpertShardsExperts(t *testing.T) {
	// Mixtral 8x7B on 64 v5p chips, fsdp=16 x expert=4: MaxText's
	// sparse_matmul gathers its expert shard's kernels over fsdp
	// (("exp", None, "mlp_no_fsdp") with fsdp removed, layers/moe.py
	// @e591f30c), so a chip computes with 8/4 = 2 whole experts. By hand:
	// attention 2·4096² + 2·4096·1024 = 41,943,040; two RMSNorm scales
	// 8,192; the router 4096·8 = 32,768; two experts 2·3·4096·14336 =
	// 352,321,536: 394,305,536 parameters, 788,611,072 bf16 bytes. The
	// largest tensor is a stacked projection of the two experts:
	// 2·4096·14336·2 = 234,881,024 bytes of unreduced gradient.
	j := NewJob(lookup(t, "mixtral-8x7b"), 4096, 256)
	j.Remat = RematFull
	mem, err := NewEstimator().Memory(j, layout(t, "v5p-128", 1, "fsdp=16,expert=4"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"gathered weights (FSDP)": 788611072, "unreduced weight gradient (FSDP)": 234881024}
	for _, b := range mem.Phases[0].Buffers {
		if w, ok := want[b.Name]; ok {
			if math.Abs(float64(b.Bytes)-w) > 1 {
				t.Errorf("%s: %d bytes, want %.0f", b.Name, b.Bytes, w)
			}
			delete(want, b.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("layer phase %v lacks %v", mem.Phases[0].Buffers, want)
	}
}

func TestDroplessSortIsNotQuantized(t *testing.T) {
	// The token sort, permutation and combine of a dropless MoE move data
	// in the activation dtype: fp8_full quantizes the GEMMs, not them. So
	// the time they add (the step with the calibrated Dropless width less
	// the step with none) is the same for a bf16 job and its fp8 twin.
	m := layout(t, "tpu7x-256", 1, "fsdp=128")
	added := func(q Quantization) time.Duration {
		t.Helper()
		var mxu [2]time.Duration
		for i, d := range []float64{Calibrated().Dropless, 0} {
			j := NewJob(lookup(t, "deepseek3-671b"), 4096, 2048)
			j.Quantization = q
			c := Calibrated()
			c.Dropless = d
			j.Calibration = &c
			est, err := NewEstimator().Estimate(j, m)
			if err != nil {
				t.Fatal(err)
			}
			mxu[i] = est.Time.MXU
		}
		return mxu[0] - mxu[1]
	}
	bf16, fp8 := added(QuantNone), added(QuantFP8)
	if bf16 <= 0 {
		t.Fatalf("the dropless work adds %v to a bf16 step, want more than 0", bf16)
	}
	if d := bf16 - fp8; d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("the dropless work adds %v to a bf16 step and %v to its fp8 twin, want the same", bf16, fp8)
	}
}

func TestOutputLayerIsNotQuantized(t *testing.T) {
	// MaxText quantizes the decoder layers' matmuls only (qwix
	// module_path "decoder/.*layers.*"; "We do not quantize the logits
	// matmul"); the output layer and a multi-token prediction module (the
	// model's mtp_block, beside the decoder) run in bf16. Llama 3 70B in
	// fp8, no remat, on tpu7x, and the same with one MTP module: by hand,
	// the MXU time is the step's matmul FLOPs but the head's (6·vocab·d_model
	// a token, plus the MTP module's matmuls) at the fp8 peak times the
	// quantized efficiency, and the head's at the bf16 peak, both times the
	// MXU and residual efficiencies.
	m := layout(t, "tpu7x-128", 1, "fsdp=64")
	chip := m.Multislice.Slice.Chip
	tokens, chips := 64.0*8192, float64(m.Chips())
	for _, mtp := range []int{0, 1} {
		spec := lookup(t, "llama3-70b")
		spec.MTPLayers = mtp
		j := NewJob(spec, 8192, 64)
		j.Quantization, j.Remat = QuantFP8, RematNone
		est, err := NewEstimator().Estimate(j, m)
		if err != nil {
			t.Fatal(err)
		}
		fp8, err := j.MatmulPeak(chip)
		if err != nil {
			t.Fatal(err)
		}
		eff := est.MatmulEfficiency * j.efficiency(&chip)
		mtpParams := float64(spec.MTPMatmulParams())
		if (mtp > 0) != (mtpParams > 0) {
			t.Fatalf("%d MTP layers: %g MTP matmul parameters", mtp, mtpParams)
		}
		head := 6 * (float64(spec.Vocab)*float64(spec.DModel) + mtpParams) * tokens / chips
		all := 6 * (float64(spec.MatmulParams()) + mtpParams) * tokens / chips
		want := (all-head)/(fp8*eff*Calibrated().Quantized) + head/(float64(chip.PeakBF16)*eff)
		if got := est.Time.MXU.Seconds(); math.Abs(got-want) > 1e-6*want {
			t.Errorf("%d MTP layers: fp8 MXU time %.6g s, want %.6g s (the output layer and MTP in bf16)", mtp, got, want)
		}
	}
}

func TestDroplessSortIsNotSplitOverTensor(t *testing.T) {
	// Every tensor rank routes and sorts the same tokens (MaxText shards
	// the MoE layer's tokens over the batch and sequence axes, not
	// tensor), so the time the sort adds per chip is the sort's work over
	// the chips, times tensor, at the bf16 GEMM rate of the layout.
	m := layout(t, "v5p-256", 1, "fsdp=32,tensor=4")
	var est [2]Estimate
	for i, d := range []float64{Calibrated().Dropless, 0} {
		j := NewJob(lookup(t, "llama4-maverick"), 8192, 512)
		c := Calibrated()
		c.Dropless = d
		j.Calibration = &c
		var err error
		if est[i], err = NewEstimator().Estimate(j, m); err != nil {
			t.Fatal(err)
		}
	}
	j := est[0].Job
	chip := m.Multislice.Slice.Chip
	tokens := 512.0 * 8192
	want := j.droplessExtra(tokens) * 4 / float64(m.Chips()) / (float64(chip.PeakBF16) * est[0].MatmulEfficiency * j.efficiency(&chip))
	if got := (est[0].Time.MXU - est[1].Time.MXU).Seconds(); math.Abs(got-want) > 1e-6*want+1e-9 {
		t.Errorf("the dropless sort adds %.6g s per step with tensor=4, want %.6g s (four tensor ranks sorting the same tokens)", got, want)
	}
}

func TestMoEBackwardStepsByHand(t *testing.T) {
	// DeepSeek-V3, dropless, no remat, one 4,096-token sequence per chip,
	// tensor 1: d = 7,168, k = 8 routed rows a token, and the MLP's hidden
	// width f = 18,432 a token averaged over the layers ((3·18,432 +
	// 58·9·2,048)/61). The gradients per token, in elements:
	//   combine: d(out) d, the routed rows' gradient unsorted and sorted
	//            2·k·d: 7,168 + 114,688 = 121,856.
	//   down-projection: d(out) d, d(act) f, and the routed output
	//            gradient the grouped GEMM reads, k·d: 82,944.
	//   activation: d(out) d, d(wi_0) and d(wi_1) 2f: 44,032.
	//   up-projections: d(out) d, 2f, the shared experts' input gradient
	//            d, and the routed rows' k·d: 108,544.
	// Nothing is recomputed (no remat), and nothing else is live.
	j := NewJob(lookup(t, "deepseek3-671b"), 4096, 256)
	j.Remat = RematNone
	ws := j.backwardSteps(j.layerAt(1), 4096, 4096)
	want := map[string]float64{
		"MoE combine backward": 121856,
		"MLP down-projection":  82944,
		"MLP activation":       44032,
		"MLP up-projections":   108544,
	}
	for i, st := range ws.step[:ws.n] {
		st = j.moeStep(&ws, i, st, 8)
		if w, ok := want[st.name.String()]; ok {
			if st.live != 0 || st.grads != w {
				t.Errorf("%s: live %v and gradients %v a token, want 0 and %v", st.name, st.live, st.grads, w)
			}
			delete(want, st.name.String())
		}
	}
	if len(want) > 0 {
		t.Errorf("the walk lacks the steps %v", want)
	}
}

func TestMoECombineBackwardByHand(t *testing.T) {
	// DeepSeek-V3, dropless, no remat, one 4,096-token sequence per chip:
	// the layer's backward peaks at the MoE combine, where the gradient of
	// the outputs (7,168 wide) is live with the gradient of the experts'
	// 8 routed rows per token, unsorted and sorted: (1 + 2·8)·7168
	// elements a token, 17·7168·4096·2 = 998,244,352 bytes in bf16.
	j := NewJob(lookup(t, "deepseek3-671b"), 4096, 256)
	j.Remat = RematNone
	mem, err := NewEstimator().Memory(j, layout(t, "v5p-512", 1, "fsdp=256"))
	if err != nil {
		t.Fatal(err)
	}
	ph := mem.Phases[0]
	if ph.Name != PhaseLayerBackward+" (MoE combine backward)" {
		t.Fatalf("layer phase %q, want it to peak at the MoE combine backward", ph.Name)
	}
	for _, b := range ph.Buffers {
		if b.Name == BufferActivationGradients && b.Bytes != 998244352 {
			t.Errorf("activation gradients %d bytes, want 998244352", b.Bytes)
		}
	}
}

func TestEachDeviceOfAChipHoldsItsGatheredLayer(t *testing.T) {
	// Llama 3 8B's decoder layer, by hand: attention 2·4096² +
	// 2·4096·1024 = 41,943,040; MLP 3·4096·14336 = 176,160,768; two
	// RMSNorm scales 8,192: 218,112,000 parameters, 436,224,000 bf16
	// bytes gathered. Its largest tensor, 4096·14336, leaves 117,440,512
	// bytes of unreduced gradient. The output layer, 128256·4096 bf16,
	// is gathered with its unreduced gradient: 2,101,346,304 bytes. A
	// TPU7x chip is two JAX devices and each holds all of them: twice
	// that a chip, with fsdp over the chips or pure data parallelism (the
	// chip's devices then sit on context, over which MaxText shards the
	// weights too). A v6e chip is one device: once, and nothing gathered
	// without fsdp.
	j := NewJob(lookup(t, "llama3-8b"), 4096, 64)
	j.Remat = RematFull
	type want struct{ layer, matrix, output float64 }
	for _, c := range []struct {
		acc, layout string
		want        want
	}{
		{"tpu7x-8", "fsdp=4", want{2 * 436224000, 2 * 117440512, 2 * 2101346304}},
		{"tpu7x-8", "data=4", want{2 * 436224000, 2 * 117440512, 2 * 2101346304}},
		{"v6e-4", "fsdp=4", want{436224000, 117440512, 2101346304}},
		{"v6e-4", "data=4", want{}},
	} {
		mem, err := NewEstimator().Memory(j, layout(t, c.acc, 1, c.layout))
		if err != nil {
			t.Fatal(err)
		}
		var got want
		for _, p := range mem.Phases {
			for _, b := range p.Buffers {
				switch b.Name {
				case "gathered weights (FSDP)":
					got.layer = float64(b.Bytes)
				case "unreduced weight gradient (FSDP)":
					got.matrix = float64(b.Bytes)
				case "gathered output layer and its unreduced gradient (FSDP)":
					got.output = float64(b.Bytes)
				}
			}
		}
		if math.Abs(got.layer-c.want.layer) > 1 || math.Abs(got.matrix-c.want.matrix) > 1 || math.Abs(got.output-c.want.output) > 1 {
			t.Errorf("%s %s: gathered layer, gradient, output layer %.0f, %.0f, %.0f bytes a chip; want %.0f, %.0f, %.0f",
				c.acc, c.layout, got.layer, got.matrix, got.output, c.want.layer, c.want.matrix, c.want.output)
		}
	}
}

// An MoE layer's mlpwo is its routed experts' output, which the combine's
// router-weight gradient reads: Mixtral (2 routed rows a token, d_model
// 4,096, every layer MoE), dropless, one 4,096-token sequence at tensor
// 1, keeps 4,096·2·4,096 bf16 elements a layer when a policy saves it,
// 67,108,864 bytes, and its dispatch buffers (2·2·4,096 elements a token)
// lose that one of them; a dense model's mlpwo is never kept.
func TestMoEMLPWoKeptByHand(t *testing.T) {
	j := NewJob(lookup(t, "mixtral-8x7b"), 4096, 256)
	j.CapacityFactor = 0
	j.Remat = RematCustom
	var err error
	if j.Custom, err = ParseCustom("mlpwo=device"); err != nil {
		t.Fatal(err)
	}
	kept := j.rematOf(1, 4096, 4096, 1).device
	v := j.layerAt(1)
	dispatch := j.dispatchBuffers(&v, 1, 4096)
	j.Custom, _ = ParseCustom("")
	if got := kept - j.rematOf(1, 4096, 4096, 1).device; got != 67_108_864 {
		t.Errorf("mlpwo=device keeps %.0f bytes a layer, want 67108864", got)
	}
	if got, want := dispatch, j.expertBuffers(1, 4096)-67_108_864; got != want {
		t.Errorf("dispatch buffers with mlpwo kept = %.0f, want %.0f", got, want)
	}
	d := NewJob(lookup(t, "llama3-8b"), 4096, 256)
	d.Remat = RematCustom
	base := d.LayerActivations(1, 4096, 4096, 1)
	d.Custom, _ = ParseCustom("mlpwo=device")
	if got := d.LayerActivations(1, 4096, 4096, 1) - base; got != 0 || d.places()[MLPWo] != Recompute {
		t.Errorf("a dense model's mlpwo=device keeps %.0f bytes, want 0 (place %v)", got, d.places()[MLPWo])
	}
}

// MaxText's sparse_matmul tags the routed experts' wi_1 output only
// "moe_mlpwi_1", so mlpwi_1=device keeps nothing of Mixtral's (every
// layer MoE, no shared expert) when dropless: the held bytes do not
// change, the 2·14,336 routed elements a token are recomputed all the
// same (the same FLOPs, 2·4,096·28,672 a token), and they are a
// recomputed residual of the backward. With a capacity factor (1.25,
// dense_matmul, which tags mlpwi_1) it keeps 4,096 tokens · 2·1.25·14,336
// elements · 2 bytes = 293,601,280 bytes a layer.
func TestRoutedWi1IsNotMLPWi1ByHand(t *testing.T) {
	j := NewJob(lookup(t, "mixtral-8x7b"), 4096, 256)
	j.Remat, j.CapacityFactor = RematCustom, 0
	keep := func(cf float64, custom string) (held, recompute, residual float64) {
		j.CapacityFactor = cf
		var err error
		if j.Custom, err = ParseCustom(custom); err != nil {
			t.Fatal(err)
		}
		v := j.layerAt(1)
		bw := j.backwardWidths(&v, 4096, 4096)
		return j.rematIn(v, 1, 4096, 4096).device, v.recompute, j.recomputed(&v, &bw)[resRoutedWi1]
	}
	h0, r0, _ := keep(0, "")
	h1, r1, res := keep(0, "mlpwi_1=device")
	if h1 != h0 || r1 != r0 || res != 28672 {
		t.Errorf("dropless mlpwi_1=device: held +%.0f bytes, recompute FLOPs %.0f against %.0f, routed residual %.0f; want +0, equal, 28672", h1-h0, r1, r0, res)
	}
	h0, _, _ = keep(1.25, "")
	h1, _, res = keep(1.25, "mlpwi_1=device")
	if h1-h0 != 293_601_280 || res != 0 {
		t.Errorf("capacity 1.25 mlpwi_1=device: held +%.0f bytes, routed residual %.0f; want +293601280, 0", h1-h0, res)
	}
}

// A policy that does not keep an MoE layer's mlpwo redoes its routed
// down-projection in the backward pass: Mixtral (d_model 4,096, 2 routed
// experts of d_ff 14,336 a token, every layer MoE), dropless, redoes
// 2·(2·14,336)·4,096 = 234,881,024 FLOPs a token and layer more under
// full remat than with mlpwo=device beside everything full saves (its
// layer input); with a capacity factor of 1.25 the padded rows are
// computed too, 1.25 times that. A dense model's mlpwo redoes nothing.
func TestMoEMLPWoRecomputedByHand(t *testing.T) {
	for _, tt := range []struct {
		cf   float64
		want float64
	}{
		{0, 2 * 2 * 14336 * 4096},
		{1.25, 1.25 * 2 * 2 * 14336 * 4096},
	} {
		j := NewJob(lookup(t, "mixtral-8x7b"), 4096, 256)
		j.CapacityFactor = tt.cf
		j.Remat = RematCustom
		var err error
		if j.Custom, err = ParseCustom("mlpwo=device"); err != nil {
			t.Fatal(err)
		}
		kept := j.rematOf(1, 4096, 4096, 1).recompute
		j.Custom, _ = ParseCustom("")
		if got := j.rematOf(1, 4096, 4096, 1).recompute - kept; got != tt.want {
			t.Errorf("capacity factor %v: recomputing mlpwo adds %.0f FLOPs a token, want %.0f", tt.cf, got, tt.want)
		}
	}
	d := NewJob(lookup(t, "llama3-8b"), 4096, 256)
	if got := d.tensorFLOPs(MLPWo); got != 0 {
		t.Errorf("a dense model's mlpwo recompute = %.0f FLOPs, want 0", got)
	}
}

// Which routed GEMMs a quantized MoE job runs in bf16, by hand for
// Mixtral 8x7B (32 MoE layers, 2 routed experts of 3·4,096·14,336 =
// 176,160,768 parameters a token) under full remat: dropless in fp8
// (fp8_full's qwix rule names gmm) only the output layer stays in bf16
// (6·32,000·4,096 FLOPs a token); in int8 (its rule names dot_general
// alone) the routed GEMMs too, 6·32·2·176,160,768 a token forward and
// backward and, full remat redoing wi_0, wi_1 and wo, a third of that
// again; with a capacity factor of 1.25 (dense_matmul's jnp.einsum, which
// neither rule names) fp8 leaves them in bf16 as well, padded rows
// included, 1.25 times as many.
func TestUnquantizedExpertsByHand(t *testing.T) {
	m := layout(t, "v5p-128", 1, "fsdp=64")
	tokens := 64.0 * 4096
	head := 6 * 32000 * 4096 * tokens
	routed := 6 * 32 * 2 * 176_160_768.0 * tokens
	for _, tt := range []struct {
		q    Quantization
		cf   float64
		want float64
	}{
		{QuantFP8, 0, head},
		// dropless, each device's one sequence is 8,192 routed rows in 8
		// groups: 512-row tiles compute 7 × 511 rows more (gmmTilePadding)
		{QuantInt8, 0, head + routed*(1+1.0/3)*(1+7*511.0/8192)},
		{QuantFP8, 1.25, head + 1.25*routed*(1+1.0/3)},
		{QuantInt8, 1.25, head + 1.25*routed*(1+1.0/3)},
		{QuantNone, 0, 0},
	} {
		j := NewJob(lookup(t, "mixtral-8x7b"), 4096, 64)
		j.Quantization, j.CapacityFactor, j.Remat = tt.q, tt.cf, RematFull
		sh, err := shapeOf(j, m)
		if err != nil {
			t.Fatal(err)
		}
		if got := j.computeFLOPs(&sh, tokens).bf16; math.Abs(got-tt.want) > 1e-9*tt.want {
			t.Errorf("%s, capacity factor %v: %g FLOPs in bf16, want %g", tt.q, tt.cf, got, tt.want)
		}
	}
}

// The routed experts' share of a layer's recompute, under every policy:
// Mixtral's MLP is all routed experts (every layer MoE, no shared expert),
// so the share is the recompute less the attention projections' (Q, K, V
// and the output projection, 2·d_model·width each where the policy redoes
// them), with or without a capacity factor, and with mlpwi_1 kept (a
// policy that saves it still redoes the routed part, redoneWi1).
func TestRoutedRecomputeShare(t *testing.T) {
	policies := append(Remats(), RematCustom)
	for _, cf := range []float64{0, 1.25} {
		for _, r := range policies {
			j := NewJob(lookup(t, "mixtral-8x7b"), 4096, 64)
			j.CapacityFactor, j.Remat = cf, r
			if r == RematCustom {
				var err error
				if j.Custom, err = ParseCustom("mlpwi_1=device,query_proj=device"); err != nil {
					t.Fatal(err)
				}
			}
			v := j.layerAt(1)
			attn := 0.0
			for _, x := range []Tensor{Query, Key, Value, OutProj} {
				if v.places[x] == Recompute && j.needed(x) {
					attn += j.tensorFLOPs(x)
				}
			}
			if got, want := v.routed, v.recompute-attn; math.Abs(got-want) > 1e-9*max(want, 1) {
				t.Errorf("%s, capacity factor %v: routed recompute %g FLOPs a token, want %g (the recompute %g less the attention's %g)",
					r, cf, got, want, v.recompute, attn)
			}
		}
	}
}
