package cost

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"shardlab/collective"
	"shardlab/hw"
	"shardlab/mesh"
	"shardlab/model"
	"shardlab/schedule"
	"shardlab/systolic"
	"shardlab/unit"
)

func layout(t testing.TB, accel string, slices int, spec string) mesh.Mesh {
	t.Helper()
	m, err := mesh.ParseOn(accel, slices, spec)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func lookup(t testing.TB, name string) model.Spec {
	s, ok := model.Lookup(name)
	if !ok {
		t.Fatalf("no model %s", name)
	}
	return s
}

// gptLike is a GPT-style layer (multi-head attention, 4h GeLU MLP, dropout),
// the shape Korthikanti et al.'s Table 2 counts.
var gptLike = model.Spec{Name: "gpt-like", Layers: 4, DModel: 1024, Heads: 16, DFF: 4096, Vocab: 1000, SeqLen: 2048, LayerNorm: true, Biases: true}

func TestLayerActivationsKorthikanti(t *testing.T) {
	// Korthikanti et al. 2022 (arXiv 2205.05198) Table 2, 16-bit activations:
	//   TP + SP, no recompute:        s·b·h/t · (34 + 5·a·s/h)
	//   TP + SP + selective:          34·s·b·h/t   (everything but the s² terms:
	//                                 our none with flash attention)
	//   full recompute:               2·s·b·h (/t when stored sequence-sharded)
	j := NewJob(gptLike, 2048, 8)
	j.Dropout = true
	s, b, h, a := 2048.0, 4.0, 1024.0, 16.0
	for _, tp := range []int{1, 2, 8} {
		tf := float64(tp)
		tests := []struct {
			r    Remat
			attn AttentionKind
			want float64
		}{
			// none adds the fp32 statistics to the table's count: two
			// LayerNorms' mean and rsqrt per token (sequence-parallel), and
			// flash attention's log-sum-exp per head
			{RematNone, AttentionDot, s*b*h/tf*(34+5*a*s/h) + s*b*2*2*4/tf},
			{RematNone, AttentionFlash, 34*s*b*h/tf + s*b*(2*2+a)*4/tf},
			{RematFull, AttentionFlash, 2 * s * b * h / tf},
			// minimal_with_context keeps the tagged tensors of a GPT layer:
			// layer input, Q, K, V, context and out_proj (h each) and mlpwi (4h),
			// 10h elements of 2 bytes.
			{RematMinimalWithContext, AttentionFlash, 20 * s * b * h / tf},
			// save_qkv_proj: layer input, Q, K, V.
			{RematSaveQKVProj, AttentionFlash, 8 * s * b * h / tf},
		}
		for _, tt := range tests {
			j.Remat, j.Attention = tt.r, tt.attn
			if got := j.LayerActivations(4, 2048, 2048, tp); math.Abs(got-tt.want) > 1e-6*tt.want {
				t.Errorf("LayerActivations(t=%d, %s, %s) = %.0f, want %.0f", tp, tt.r, tt.attn, got, tt.want)
			}
		}
	}
}

func TestRematRecompute(t *testing.T) {
	// What each policy redoes, per token and layer, derived by hand for a
	// gated layer: Q and O projections 2·d·q FLOPs each, K and V 2·d·kv,
	// each MLP input 2·d·f; mlpwo's output is never needed again.
	spec := model.Spec{Name: "g", Layers: 2, DModel: 512, Heads: 8, KVHeads: 2, DFF: 1536, Vocab: 1000, SeqLen: 256, GatedMLP: true}
	d, q, kv, f := 512.0, 512.0, 128.0, 1536.0
	qkv := 2*d*q + 4*d*kv
	tests := []struct {
		r         Remat
		recompute float64
		attention bool
		offload   bool
	}{
		{RematNone, 0, false, false},
		{RematMinimalWithContext, 0, false, false},
		{RematMinimal, 0, true, false},
		{RematSaveDotExceptMLP, 4 * d * f, true, false},
		{RematSaveQKVProj, 2*d*q + 4*d*f, true, false},
		{RematSaveOutProj, qkv + 4*d*f, true, false},
		{RematQKVProjOffloaded, 2*d*q + 4*d*f, true, true},
		{RematFull, qkv + 2*d*q + 4*d*f, true, false},
	}
	for _, tt := range tests {
		j := NewJob(spec, 256, 8)
		j.Remat = tt.r
		r := j.rematOf(1, 256, 256, 1)
		if r.recompute != tt.recompute || r.attention != tt.attention || (r.offload > 0) != tt.offload {
			t.Errorf("%s: recompute %v attention %v offload %v, want %v %v %v", tt.r, r.recompute, r.attention, r.offload, tt.recompute, tt.attention, tt.offload)
		}
	}
}

func TestZeROMemory(t *testing.T) {
	// Rajbhandari et al. 2019 (ZeRO) Table 1 / Figure 1: with mixed-precision
	// Adam (K = 12) model states take 16Ψ bytes per replica for data
	// parallelism and 16Ψ/N_d with stage 3 (FSDP), e.g. 120 GB and 1.9 GB for
	// Ψ = 7.5B on N_d = 64.
	spec := lookup(t, "llama2-7b")
	j := NewJob(spec, 4096, 64)
	j.Precision = ZeROPrecision()
	psi := float64(spec.ParamCount().Total())
	e := NewEstimator()
	dp, err := e.Memory(j, layout(t, "v5p-128", 1, "data=64"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := float64(dp.State()), 16*psi; math.Abs(got-want) > 16 {
		t.Errorf("DP state = %.0f bytes, want 16Ψ = %.0f", got, want)
	}
	fsdp, err := e.Memory(j, layout(t, "v5p-128", 1, "fsdp=64"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := float64(fsdp.State()), 16*psi/64; math.Abs(got-want) > 16 {
		t.Errorf("FSDP state = %.0f bytes, want 16Ψ/64 = %.0f", got, want)
	}
	// The paper's own example, by the same formula.
	if got := 16 * 7.5e9 / 64 / 1e9; math.Abs(got-1.9) > 0.05 {
		t.Errorf("ZeRO-3 7.5B/64 = %.2f GB, want 1.9", got)
	}
}

func TestSingleChipComputeIsFLOPsOverRate(t *testing.T) {
	// One chip, no remat, dot-product attention: nothing but compute; the
	// matmuls and the attention core take their FLOPs at peak × residual
	// efficiency × the MXU efficiency of their own GEMMs, and the step adds
	// the memory-bound work and the optimizer at HBM bandwidth.
	spec := model.Spec{Name: "small", Layers: 4, DModel: 512, Heads: 8, DFF: 2048, Vocab: 1024, SeqLen: 512, GatedMLP: true}
	j := NewJob(spec, 512, 8)
	j.Remat, j.Attention = RematNone, AttentionDot
	m := layout(t, "v5litepod-1", 1, "data=1")
	chip := m.Multislice.Slice.Chip
	est, err := EstimateStep(j, m)
	if err != nil {
		t.Fatal(err)
	}
	tokens := 8 * 512.0
	rate := float64(chip.PeakBF16) * j.EfficiencyFor(chip)
	mm, attn := 6*float64(spec.MatmulParams())*tokens, 3*spec.AttentionFLOPsPerToken(512)*tokens
	if got, want := est.Time.MXU.Seconds(), mm/(rate*est.MatmulEfficiency); math.Abs(got-want) > 1e-9+1e-6*want {
		t.Errorf("matmul time %v s, want FLOPs/rate %v s", got, want)
	}
	if got, want := est.Time.Attention.Seconds(), attn/(rate*est.AttentionEfficiency); math.Abs(got-want) > 1e-9+1e-6*want {
		t.Errorf("attention time %v s, want FLOPs/rate %v s", got, want)
	}
	if mm+attn != float64(est.HardwareFLOPs) {
		t.Errorf("hardware FLOPs %v, want matmuls %v + attention %v", est.HardwareFLOPs, mm, attn)
	}
	// the blend is the FLOP-weighted harmonic mean of the two, over the
	// layer's GEMMs: between them
	if lo, hi := min(est.MatmulEfficiency, est.AttentionEfficiency), max(est.MatmulEfficiency, est.AttentionEfficiency); est.MXUEfficiency < lo || est.MXUEfficiency > hi {
		t.Errorf("MXU efficiency %v outside matmuls %v and attention %v", est.MXUEfficiency, est.MatmulEfficiency, est.AttentionEfficiency)
	}
	if est.Time.ICI != 0 || est.Time.DCN != 0 || est.Time.Bubble != 0 || est.Time.Step != est.Time.Compute {
		t.Errorf("single chip: ICI %v DCN %v bubble %v step %v compute %v", est.Time.ICI, est.Time.DCN, est.Time.Bubble, est.Time.Step, est.Time.Compute)
	}
	if est.HardwareFLOPs != est.ModelFLOPs {
		t.Errorf("no remat, no causal skip: hardware FLOPs %v, model %v", est.HardwareFLOPs, est.ModelFLOPs)
	}
	// Full remat redoes every projection but mlpwo, and the attention core:
	// HFU/MFU = (6N + 2R + 4A) / (6N + 3A).
	j.Remat = RematFull
	est, _ = EstimateStep(j, m)
	n := float64(spec.MatmulParams())
	d, q, f := 512.0, 512.0, 2048.0
	rc := 4 * (2*d*q*4 + 2*2*d*f) // 4 layers: Q, K, V, O and both MLP inputs
	attn = spec.AttentionFLOPsPerToken(512)
	if want := (6*n + rc + 4*attn) / (6*n + 3*attn); math.Abs(est.HFU/est.MFU-want) > 1e-9 {
		t.Errorf("HFU/MFU = %v, want %v", est.HFU/est.MFU, want)
	}
}

func TestCausalFLOPsChangeOnlyMFU(t *testing.T) {
	// The MFU convention must not change the step time: flash attention
	// skips the masked blocks whichever way MFU counts them.
	spec := lookup(t, "llama3-8b")
	j := NewJob(spec, 8192, 64)
	m := layout(t, "v5p-128", 1, "fsdp=64")
	a, err := EstimateStep(j, m)
	if err != nil {
		t.Fatal(err)
	}
	j.CausalFLOPs = true
	b, _ := EstimateStep(j, m)
	if a.Time.Step != b.Time.Step || b.MFU >= a.MFU {
		t.Errorf("causal MFU convention: step %v vs %v, MFU %v vs %v; want the same step and a lower MFU", a.Time.Step, b.Time.Step, a.MFU, b.MFU)
	}
	// Each estimate also gives the other convention's MFU: the other's own.
	if math.Abs(a.MFUOther-b.MFU) > 1e-12 || math.Abs(b.MFUOther-a.MFU) > 1e-12 {
		t.Errorf("other convention: full %v says causal %v (is %v); causal %v says full %v (is %v)", a.MFU, a.MFUOther, b.MFU, b.MFU, b.MFUOther, a.MFU)
	}
}

func TestNonCausalFlashComputesEveryBlock(t *testing.T) {
	// Flash attention without its causal flag does the attention core's
	// full 12·L·H·Q·T FLOPs per token (PaLM's count), the causal kernel half
	// of them; the matmuls and MFU do not change.
	spec := lookup(t, "llama3-8b")
	j := NewJob(spec, 8192, 64)
	j.Remat = RematNone
	m := layout(t, "v5p-128", 1, "fsdp=64")
	causal, err := EstimateStep(j, m)
	if err != nil {
		t.Fatal(err)
	}
	j.Attention = AttentionFlashNonCausal
	full, err := EstimateStep(j, m)
	if err != nil {
		t.Fatal(err)
	}
	attn := 3 * spec.AttentionFLOPsPerToken(8192) * 64 * 8192
	if got := float64(full.HardwareFLOPs - causal.HardwareFLOPs); math.Abs(got-attn/2) > 1e-6*attn {
		t.Errorf("non-causal flash adds %v FLOPs, want half the attention core's %v", got, attn)
	}
	if d := full.Time.Attention - 2*causal.Time.Attention; d < -2 || d > 2 || full.Time.MXU != causal.Time.MXU || full.ModelFLOPs != causal.ModelFLOPs {
		t.Errorf("attention %v vs %v, matmuls %v vs %v: want twice the attention and the same matmuls", full.Time.Attention, causal.Time.Attention, full.Time.MXU, causal.Time.MXU)
	}
}

func TestFSDPTrafficIsOneAndAHalfDP(t *testing.T) {
	// ZeRO §7: stage 3 moves 1.5x the bytes of data parallelism, when the
	// weights gathered and the gradients reduced have one dtype (ZeRO's
	// fp16/bf16 copies).
	spec := lookup(t, "llama2-7b")
	j := NewJob(spec, 4096, 64)
	j.Precision = ZeROPrecision()
	e := NewEstimator()
	dp, err := e.Estimate(j, layout(t, "v5p-128", 1, "data=64"))
	if err != nil {
		t.Fatal(err)
	}
	fsdp, err := e.Estimate(j, layout(t, "v5p-128", 1, "fsdp=64"))
	if err != nil {
		t.Fatal(err)
	}
	ratio := float64(fsdp.ICIBytesPerChip) / float64(dp.ICIBytesPerChip)
	if math.Abs(ratio-1.5) > 1e-6 {
		t.Errorf("FSDP/DP bytes per chip = %v, want 1.5", ratio)
	}
}

func TestDCNBitsPerParam(t *testing.T) {
	// Multislice guidance: DP across two slices moves 32 bits of DCN traffic
	// per parameter per step from each slice; more slices approach 64.
	spec := lookup(t, "llama3-8b")
	psi := float64(spec.ParamCount().Total())
	for _, c := range []struct {
		slices int
		want   float64
	}{{2, 32}, {4, 48}, {8, 56}} {
		j := NewJob(spec, 8192, 64*c.slices)
		est, err := EstimateStep(j, layout(t, "v5p-128", c.slices, fmt.Sprintf("fsdp=64,data=%d(dcn)", c.slices)))
		if err != nil {
			t.Fatal(err)
		}
		bits := float64(est.DCNBytesPerStep) * 8 / psi / float64(c.slices)
		if math.Abs(bits-c.want) > 0.01 {
			t.Errorf("%d slices: %.3f DCN bits per parameter per slice, want %v (ring 2(n−1)/n·32)", c.slices, bits, c.want)
		}
		if c.slices == 2 && bits != float64(collective.MultisliceBitsPerParam(2)) {
			t.Errorf("two slices: %v bits, want the guidance's %d", bits, collective.MultisliceBitsPerParam(2))
		}
	}
}

func TestDCNStrongScalingThreshold(t *testing.T) {
	dense := model.Spec{Name: "wide", Layers: 64, DModel: 4096, Heads: 32, DFF: 16384, Vocab: 256, SeqLen: 128, TiedEmbeddings: true}
	// the same with 8 experts, 2 a token: the backward pass runs about
	// half the parameters the all-reduce carries, so the break-even is
	// about twice the dense one (collective.MinTokensPerSlice)
	moe := dense
	moe.Name, moe.Experts, moe.ExpertsPerToken, moe.ExpertDFF = "wide-moe", 8, 2, 4096
	for _, spec := range []model.Spec{dense, moe} {
		t.Run(spec.Name, func(t *testing.T) { dcnStrongScalingThreshold(t, spec) })
	}
}

func dcnStrongScalingThreshold(t *testing.T, spec model.Spec) {
	// The Multislice rule's break-even, collective.MinTokensPerSlice (the
	// seed's 4·B/32 FLOP per bit against the chip's FLOP/s per DCN bit),
	// must fall out of this package's overlap model: just above the
	// minimum tokens per slice the data-parallel all-reduce over DCN hides
	// under the backward pass but for its last layer's share, just below
	// it does not. The rule knows bandwidth only, so the DCN latency and
	// the slice jitter are 0 here; a tiny vocabulary keeps the gradients
	// the layers'.
	m := layout(t, "v4-8", 2, "data=4,data=2(dcn)")
	chip := m.Multislice.Slice.Chip
	cal := Calibrated()
	cal.DCNLatency, cal.SliceJitter = 0, 0
	estimate := func(seqs int) Estimate {
		j := NewJob(spec, 128, 2*seqs)
		j.Remat, j.Attention = RematNone, AttentionDot
		j.Efficiency, j.Calibration = 1, &cal
		est, err := EstimateStep(j, m)
		if err != nil {
			t.Fatal(err)
		}
		return est
	}
	// The rule assumes the chip computes the backward's 4 FLOPs per
	// active parameter per token at a rate C; here C is what the model's
	// forward and backward compute (matmuls, attention and vector work,
	// not the optimizer) make of 6 FLOPs per active parameter per token.
	rate := func(seqs int) unit.FLOPsPerSecond {
		e := estimate(seqs)
		tm := e.Time
		tokens := float64(seqs) * 128 / 4 // per chip
		return unit.FLOPsPerSecond(6 * float64(spec.ParamCount().Active()) * tokens / (tm.MXU + tm.Attention + tm.Vector).Seconds())
	}
	n := spec.ParamCount()
	raw := collective.MinTokensPerSlice(chip.PeakBF16, chip.DCNPerChip, 2, n.Active(), n.Total())
	min := collective.MinTokensPerSlice(rate(int(raw/128/4)*4), chip.DCNPerChip, 2, n.Active(), n.Total())
	for _, c := range []struct {
		factor float64
		hidden bool
	}{{1.05, true}, {0.95, false}} {
		seqs := int(min*c.factor/128/4) * 4 // tokens per slice / seq, a multiple of the 4 chips
		est := estimate(seqs)
		var dcn time.Duration
		for _, cm := range est.Comms {
			dcn += cm.DCNTime
		}
		lastLayer := time.Duration(float64(dcn) / float64(spec.Layers))
		if hidden := est.Time.DCN <= lastLayer+time.Microsecond; hidden != c.hidden {
			t.Errorf("%.2f x minimum (%d sequences a slice): DCN all-reduce %v, exposed %v (its last layer's share %v), want hidden=%v",
				c.factor, seqs, dcn, est.Time.DCN, lastLayer, c.hidden)
		}
	}
}

// TestOverlapTimeline holds overlap.exposed to a walk of the backward
// pass's timeline: L layers' backward, b each, one after another; each
// layer's gradient reduction, r, queued on the link when its backward
// ends, the link carrying one at a time; the step waits from the end of
// the backward to the end of the last reduction. By hand: r ≤ b leaves
// the last layer's r; r > b leaves L·r − (L−1)·b (the link is the
// bottleneck from the first reduction on).
func TestOverlapTimeline(t *testing.T) {
	walk := func(layers int, b, r time.Duration) time.Duration {
		var link time.Duration // when the link is next free
		for i := 1; i <= layers; i++ {
			link = max(link, time.Duration(i)*b) + r
		}
		return link - time.Duration(layers)*b
	}
	for _, layers := range []int{1, 2, 32, 126} {
		for _, ratio := range []float64{0, 0.25, 0.999, 1, 1.5, 4} {
			b := 30 * time.Millisecond
			r := time.Duration(ratio * float64(b))
			// the backward is two thirds of the compute, one micro-batch
			compute := time.Duration(layers) * b * 3 / 2
			o := newOverlap(compute, layers, 1)
			got := o.exposed(time.Duration(layers)*r, 0)
			if want := walk(layers, b, r); absDuration(got-want) > time.Microsecond {
				t.Errorf("%d layers, r = %.3g b: exposed %v, the timeline %v", layers, ratio, got, want)
			}
		}
	}
	// The weight gathers: L layers' compute, c each, one gather per layer
	// on the link, each prefetched at most one layer ahead (it may start
	// once the layer before it has started); a layer starts when its
	// gather is done. The step waits from the end of the compute to the
	// end of the last layer: gl ≤ c leaves the first gather, gl > c leaves
	// L·gl − (L−1)·c.
	gathers := func(layers int, c, gl time.Duration) time.Duration {
		var link, start time.Duration // the link free, the last layer's start
		for i := range layers {
			if i > 0 {
				link = max(link, start) // at most one layer ahead
			}
			link += gl
			start = max(link, start+time.Duration(min(i, 1))*c)
		}
		return start + c - time.Duration(layers)*c
	}
	for _, layers := range []int{2, 32, 126} {
		for _, ratio := range []float64{0.25, 1, 1.5, 4} {
			c := 20 * time.Millisecond
			gl := time.Duration(ratio * float64(c))
			o := newOverlap(time.Duration(layers)*c, layers, 1)
			got := o.exposed(0, time.Duration(layers)*gl)
			if want := gathers(layers, c, gl); absDuration(got-want) > time.Microsecond {
				t.Errorf("%d layers, gathers of %.3g c: exposed %v, the timeline %v", layers, ratio, got, want)
			}
		}
	}
	// With micro-batches the gradients are summed first: the reductions
	// hide only under the last micro-batch's backward.
	o := newOverlap(4*48*30*time.Millisecond*3/2, 48, 4)
	if got, want := o.exposed(48*60*time.Millisecond, 0), 48*60*time.Millisecond-47*30*time.Millisecond; absDuration(got-want) > time.Microsecond {
		t.Errorf("4 micro-batches, r = 2b of one: exposed %v, want %v", got, want)
	}
}

func absDuration(d time.Duration) time.Duration { return max(d, -d) }

func TestBubbleFraction(t *testing.T) {
	spec := lookup(t, "llama2-7b")
	for _, k := range []schedule.Kind{schedule.GPipe, schedule.OneFOneB} { // the schedules the emulator runs
		j := NewJob(spec, 4096, 128)
		j.MicroBatches = 8
		j.Schedule = k
		est, err := EstimateStep(j, layout(t, "v5p-128", 1, "pipeline=4,fsdp=16"))
		if err != nil {
			t.Fatal(err)
		}
		got := est.Time.Bubble.Seconds() / (est.Time.Compute + est.Time.Bubble).Seconds()
		if want := 3.0 / 11; math.Abs(got-want) > 1e-6 {
			t.Errorf("%s: bubble share %v, want (p−1)/(m+p−1) = %v", k, got, want)
		}
	}
}

func TestInfeasible(t *testing.T) {
	spec := lookup(t, "llama3-8b")
	tests := []struct {
		layout string
		batch  int
		micro  int
		reason Reason
	}{
		{"tensor=64", 64, 1, ReasonHeads},    // 32 heads
		{"pipeline=64", 64, 8, ReasonLayers}, // 32 layers
		{"data=64", 65, 1, ReasonBatch},
		{"data=64", 64, 2, ReasonBatch}, // 64 sequences in 2 micro-batches over 64 chips
	}
	for _, tt := range tests {
		j := NewJob(spec, 8192, tt.batch)
		j.MicroBatches = tt.micro
		_, err := EstimateStep(j, layout(t, "v5p-128", 1, tt.layout))
		var inf *Infeasible
		if !errors.As(err, &inf) || inf.Reason != tt.reason {
			t.Errorf("%s batch %d: error %v, want reason %q", tt.layout, tt.batch, err, tt.reason)
		}
	}
	// MaxText refuses gradient accumulation with quantization "fp8" and
	// its GPU variants (configs/types.py @e591f30c), not with "fp8_full",
	// the Qwix recipe shardlab's fp8 is exported as: it runs
	fp8 := NewJob(spec, 8192, 128)
	fp8.MicroBatches, fp8.Quantization = 2, QuantFP8
	if _, err := EstimateStep(fp8, layout(t, "v5p-128", 1, "data=64")); err != nil {
		t.Errorf("fp8 with 2 micro-batches of gradient accumulation: %v, want an estimate", err)
	}
	j := NewJob(spec, 8100, 64)
	var inf *Infeasible
	if _, err := EstimateStep(j, layout(t, "v5p-128", 1, "context=64")); !errors.As(err, &inf) || inf.Reason != ReasonSeq {
		t.Errorf("context=64 over 8100 tokens: %v, want %q", err, ReasonSeq)
	}
	j = NewJob(spec, 8192, -1)
	if _, err := EstimateStep(j, layout(t, "v5p-128", 1, "data=64")); !errors.Is(err, ErrJob) {
		t.Errorf("negative batch: %v, want ErrJob", err)
	}
}

func ExampleEstimator_Estimate() {
	spec, _ := model.Lookup("llama3-70b")
	s, _ := hw.ParseAcceleratorType("tpu7x-128")
	ms, _ := hw.NewMultislice(s, 2, 0)
	m, _ := mesh.New(ms, mesh.Degree{Axis: mesh.FSDP, ICI: 64, DCN: 1}, mesh.Degree{Axis: mesh.Data, ICI: 1, DCN: 2})
	j := NewJob(spec, 8192, 256)
	est, _ := NewEstimator().Estimate(j, m)
	fmt.Printf("state %v, fits %v, MFU %.2f\n", est.Memory.State(), est.Memory.Fits(), est.MFU)
	// Output:
	// state 16.4 GiB, fits true, MFU 0.50
}

func TestKVHeadsReplicatedBeyondTheirCount(t *testing.T) {
	// Llama 3 70B has 8 KV heads: tensor=16 splits Q, O and the MLP 16 ways
	// but K and V only 8 ways (each KV head lives on two chips). By hand, per
	// chip: (80·(per-layer − kv)/16 + 80·kv/8 + embeddings/16), kv = 2·8192·1024.
	spec := lookup(t, "llama3-70b")
	j := NewJob(spec, 8192, 4)
	mem, err := NewEstimator().Memory(j, layout(t, "v5p-128", 1, "tensor=16,data=4"))
	if err != nil {
		t.Fatal(err)
	}
	pc := spec.ParamCount()
	kv := 2.0 * 8192 * 1024
	want := 80*(float64(pc.PerLayer())-kv)/16 + 80*kv/8 + float64(pc.Embedding+pc.Output+pc.FinalNorm)/16
	if got := float64(mem.Weights) / 4; math.Abs(got-want) > 1 {
		t.Errorf("weights per chip = %.0f params, want %.0f", got, want)
	}
	// tensor=3 divides neither 64 heads nor 8 KV heads.
	if _, err := NewEstimator().Memory(j, layout(t, "v5p-384", 1, "tensor=3,data=64")); err == nil {
		t.Error("tensor=3 accepted for 64 heads")
	}
}

func TestMXUPaddingLoss(t *testing.T) {
	// Llama 3 8B's head_dim of 128 fills half the rows of a 256x256 MXU in
	// the attention-score GEMM (K = 128), but all of a 128x128 one.
	spec := lookup(t, "llama3-8b")
	j := NewJob(spec, 8192, 64)
	j.Remat = RematNone
	e := NewEstimator()
	big, err := e.Estimate(j, layout(t, "tpu7x-128", 1, "fsdp=64"))
	if err != nil {
		t.Fatal(err)
	}
	small, err := e.Estimate(j, layout(t, "v5p-128", 1, "fsdp=64"))
	if err != nil {
		t.Fatal(err)
	}
	ragged := append([]string(nil), big.RaggedGEMMs...)
	sort.Strings(ragged)
	if big.PaddingLoss <= small.PaddingLoss || strings.Join(ragged, ",") != "attention scores,attention values" || len(small.RaggedGEMMs) != 0 {
		t.Errorf("tpu7x padding %.4f %v, v5p padding %.4f %v", big.PaddingLoss, big.RaggedGEMMs, small.PaddingLoss, small.RaggedGEMMs)
	}
	// A d_ff that is no multiple of 128 pads the MLP on both: in the pass
	// that contracts over it (the other two can stream it, unpadded), by
	// 124 of 4224 rows.
	odd := spec
	odd.DFF = 4100
	j.Model = odd
	r, err := e.Estimate(j, layout(t, "v5p-128", 1, "fsdp=64"))
	if err != nil {
		t.Fatal(err)
	}
	if r.PaddingLoss <= small.PaddingLoss || r.MXUEfficiency >= small.MXUEfficiency {
		t.Errorf("d_ff 4100: padding %.4f efficiency %.4f; d_ff 14336: %.4f %.4f", r.PaddingLoss, r.MXUEfficiency, small.PaddingLoss, small.MXUEfficiency)
	}
	found := false
	for _, g := range r.RaggedGEMMs {
		found = found || strings.HasPrefix(g, "MLP")
	}
	if !found {
		t.Errorf("d_ff 4100 ragged GEMMs %v lack the MLP", r.RaggedGEMMs)
	}
}

func TestFSDPHoldsTheLayerAndOneUnreducedGradient(t *testing.T) {
	// GPT-3 175B with bf16 weights on v6e-256, as the tpu-recipes run it
	// (fsdp=256, full remat): with FSDP the layer phase holds the whole
	// layer gathered in bf16 (the recompute and the backward read the same
	// gathered value) and the unreduced bf16 gradient of its largest matrix
	// (the MLP's 12288×49152), beyond the same job without FSDP, whose bf16
	// weights need no copy. By hand: attention 4·12288² + biases 3·96·128 +
	// 12288; MLP 2·12288·49152 + biases 49152 + 12288; two LayerNorms
	// 2·2·12288: 1,812,099,072 parameters, 3,624,198,144 bytes; the
	// gradient 12288·49152·2 = 1,207,959,552 bytes.
	spec := lookup(t, "gpt3-175b")
	j := NewJob(spec, 2048, 256)
	j.Precision = MaxTextBF16Precision()
	j.Remat = RematFull
	e := NewEstimator()
	fsdp, err := e.Memory(j, layout(t, "v6e-256", 1, "fsdp=256"))
	if err != nil {
		t.Fatal(err)
	}
	dp, err := e.Memory(j, layout(t, "v6e-256", 1, "data=256"))
	if err != nil {
		t.Fatal(err)
	}
	layer := 4*12288.0*12288 + 3*96*128 + 12288 + 2*12288*49152 + 49152 + 12288 + 2*2*12288
	want := layer*2 + 12288*49152*2
	if got := float64(fsdp.Transient - dp.Transient); math.Abs(got-want) > 1 {
		t.Errorf("FSDP transient − DP transient = %.4g bytes, want %.4g", got, want)
	}
	if !fsdp.Fits() {
		t.Errorf("GPT-3 175B on v6e-256 fsdp=256: %v of %v, does not fit (the published run did)", fsdp.Total(), fsdp.Usable)
	}
}

func TestParallelBlock(t *testing.T) {
	// MaxText's 2023 decoder layer (MaxText/layers/models.py @76bd53b0:
	// attention and MLP both read lnx and "next_layer_addition = mlp_lnx +
	// attention_lnx"): only the residual sum reads the attention's output,
	// so full remat redoes Q, K, V and the MLP input, not the output
	// projection (by hand: 2·d·(q + 2·kv) + 2·d·f for a ReLU MLP).
	seq := model.Spec{Name: "p", Layers: 4, DModel: 1024, Heads: 8, HeadDim: 256, DFF: 4096, Vocab: 32768, SeqLen: 2048, NormsPerLayer: 1}
	par := seq
	par.ParallelBlock = true
	d, q, f := 1024.0, 2048.0, 4096.0
	for _, tt := range []struct {
		spec model.Spec
		want float64
	}{{seq, 2*d*3*q + 2*d*q + 2*d*f}, {par, 2*d*3*q + 2*d*f}} {
		j := NewJob(tt.spec, 2048, 64)
		if got := j.rematOf(1, 2048, 2048, 1).recompute; got != tt.want {
			t.Errorf("parallel %v: full remat recomputes %v FLOPs per token, want %v", tt.spec.ParallelBlock, got, tt.want)
		}
		// minimal keeps the projections' outputs: out_proj is no residual of
		// a parallel block, so it costs no HBM there
		j.Remat = RematMinimal
		kept := 2 * 2048 * (d + 3*q + f) // layer input, Q, K, V, mlpwi
		if !tt.spec.ParallelBlock {
			kept += 2 * 2048 * d // out_proj
		}
		if got := j.LayerActivations(1, 2048, 2048, 1); got != kept {
			t.Errorf("parallel %v: minimal keeps %v bytes, want %v", tt.spec.ParallelBlock, got, kept)
		}
	}

	// Tensor parallelism: a sequential layer all-reduces its activations
	// twice forward and twice backward; a parallel one all-gathers once and
	// reduce-scatters twice forward, and backward (the transpose, its two
	// all-gathers of one gradient done once) once each: 5 half-all-reduces
	// for 8. Full remat adds 2 all-reduces (sequential) or 1 all-gather.
	m := layout(t, "v5p-64", 1, "fsdp=8,tensor=4")
	e := NewEstimator()
	act := unit.Bytes(64 / 8 * 2048 * 1024 * 2) // b·s·d bf16 per tensor group
	ar, ag := collective.Bytes(collective.AllReduce, 4, act), collective.Bytes(collective.AllGather, 4, act)
	for _, tt := range []struct {
		spec  model.Spec
		remat Remat
		want  unit.Bytes
	}{
		{seq, RematNone, 4 * ar}, {par, RematNone, 5 * ag},
		{seq, RematFull, 6 * ar}, {par, RematFull, 6 * ag},
		{par, RematMinimal, 5 * ag}, // the attention core alone needs no collective
	} {
		j := NewJob(tt.spec, 2048, 64)
		j.Remat = tt.remat
		est, err := e.Estimate(j, m)
		if err != nil {
			t.Fatal(err)
		}
		var got unit.Bytes
		for _, c := range est.Comms {
			if c.Axis == mesh.Tensor {
				got += c.ICIBytes
			}
		}
		if want := tt.want * 4; got != want { // per layer, 4 layers
			t.Errorf("parallel %v, %s: tensor ICI bytes %v, want %v", tt.spec.ParallelBlock, tt.remat, got, want)
		}
	}

	// One residual sum of three operands instead of two of two: 2·d
	// elements of traffic less per token, layer and pass.
	j := NewJob(seq, 2048, 64)
	sh := shape{d: 1, f: 64, t: 1, p: 1, c: 1, e: 1, m: 1, b: 1, s: 2048, ls: 4, v: 1}
	r := j.rematOf(1, 2048, 2048, 1)
	jp := NewJob(par, 2048, 64)
	if got, want := j.vectorBytes(&sh, r)-jp.vectorBytes(&sh, r), 4*2048*2*(2*d)*4.0; got != want {
		t.Errorf("vector bytes, sequential − parallel = %v, want %v (4 layers, 2048 tokens, bf16, 2·d, 4 passes)", got, want)
	}
}

func TestPassTakesTheBetterOrientation(t *testing.T) {
	// Flash attention's dK for one head of 128 over 8192 tokens: as
	// dKᵀ = Qᵀ·dS (M=128 streamed) on a 256x256 array each of 32x32 folds
	// streams 128 rows behind a 256+256−2 cycle skew; as dK = dSᵀ·Q
	// (M=8192 streamed, N=128) each of 32 folds streams 8192 rows through
	// half the columns. By the closed form (first fill 256, then per fold
	// Sr+Sc+T−2 cycles):
	//   M=128:  8192·8192·128 / (65536 · (256 + 1024·638))  = 0.2005
	//   M=8192: 8192·8192·128 / (65536 · (256 + 32·8574))   = 0.4773
	chip, err := hw.ParseAcceleratorType("v6e-8")
	if err != nil {
		t.Fatal(err)
	}
	p := systolic.PresetFor(chip.Chip)
	macs := 8192.0 * 8192 * 128
	want := macs / (65536 * (256 + 32*8574))
	for _, g := range []systolic.GEMM{{M: 128, K: 8192, N: 8192}, {M: 8192, K: 8192, N: 128}} {
		eff, used, err := NewEstimator().passEfficiency(g, p)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(eff-want) > 1e-4 || used.M != 8192 {
			t.Errorf("passEfficiency(%v) = %.4f as %v, want %.4f as M=8192", g, eff, used, want)
		}
	}
	if direct, _ := p.Efficiency(systolic.GEMM{M: 128, K: 8192, N: 8192}); math.Abs(direct-macs/(65536*(256+1024*638))) > 1e-4 {
		t.Errorf("closed form M=128: %.4f, want %.4f by hand", direct, macs/(65536*(256+1024*638)))
	}
}

func TestLayerGEMMsAreTheModelsMatmuls(t *testing.T) {
	// A second count of a dense model's matmul work: the GEMMs of one layer,
	// each weighted by how often it runs per layer, times the layers, are
	// model.MatmulParams MACs per token (the output layer, once per
	// micro-batch, a 1/L share of each layer), split over tensor t.
	for _, tt := range []struct {
		name string
		t    int
	}{{"llama3-8b", 1}, {"llama3-8b", 4}, {"gpt3-175b", 8}} {
		spec := lookup(t, tt.name)
		j := NewJob(spec, 2048, 8)
		sh := shape{d: 1, f: 1, t: tt.t, p: 1, c: 1, e: 1, m: 1, b: 1, s: 2048, ls: spec.Layers, v: 1}
		var macs float64
		for _, g := range j.layerGEMMs(&sh) {
			if !g.attention {
				macs += g.count * float64(g.g.M) * float64(g.g.K) * float64(g.g.N)
			}
		}
		got := macs * float64(spec.Layers) / 2048
		if want := float64(spec.MatmulParams()) / float64(tt.t); math.Abs(got-want) > 1e-6*want { // vocab/t rounds down
			t.Errorf("%s, tensor=%d: layer GEMMs × layers = %.0f MACs per token, want MatmulParams/t = %.0f", tt.name, tt.t, got, want)
		}
	}
	// Llama 4 Maverick alternates dense and MoE layers: each MLP counts
	// for half the layers.
	spec := lookup(t, "llama4-maverick")
	j := NewJob(spec, 2048, 8)
	sh := shape{d: 1, f: 1, t: 1, p: 1, c: 1, e: 1, m: 1, b: 1, s: 2048, ls: spec.Layers, v: 1}
	counts := map[string]float64{}
	for _, g := range j.layerGEMMs(&sh) {
		counts[g.what] = g.count
	}
	if counts["MLP in"] != 1 || counts["MLP out"] != 0.5 || counts["expert MLP out"] != 0.5*float64(spec.Experts) || counts["shared expert out"] != 0.5 {
		t.Errorf("maverick GEMM counts %v: want the dense MLP and the experts at half weight each", counts)
	}
}

func TestEstimatorCacheIsKeyedOnTheStage(t *testing.T) {
	// The output layer's share of a layer's GEMMs depends on the layers per
	// stage: an estimate must not depend on what the estimator costed
	// before.
	j := NewJob(lookup(t, "llama3-8b"), 8192, 64)
	j.MicroBatches = 4
	staged := layout(t, "v5p-128", 1, "fsdp=16,pipeline=4")
	fresh, err := NewEstimator().Estimate(j, staged)
	if err != nil {
		t.Fatal(err)
	}
	e := NewEstimator()
	one := j
	one.MicroBatches = 1
	if _, err := e.Estimate(one, layout(t, "v5p-128", 1, "fsdp=64")); err != nil {
		t.Fatal(err)
	}
	after, err := e.Estimate(j, staged)
	if err != nil {
		t.Fatal(err)
	}
	if after.MXUEfficiency != fresh.MXUEfficiency || after.Time.Step != fresh.Time.Step {
		t.Errorf("after another layout: MXU efficiency %v step %v; fresh: %v %v", after.MXUEfficiency, after.Time.Step, fresh.MXUEfficiency, fresh.Time.Step)
	}
}

func TestContentionSlowsByTheHiddenShare(t *testing.T) {
	// Calculon's processor_usage (Isaev et al., SC'23): a collective that
	// hides under compute still takes a share of the chip, so the step
	// grows by that share of the hidden time. By hand: with no pipeline
	// and the data-parallel all-reduce over DCN only, every ICI collective
	// is an FSDP gather or reduction or a tensor-parallel one, so the
	// hidden ICI time is all ICI collective time less the exposed; DCN
	// transfers, through the host, are not slowed.
	spec := lookup(t, "llama3-8b")
	for _, c := range []struct {
		slices int
		layout string
	}{{1, "fsdp=16,tensor=4"}, {2, "data=2(dcn),fsdp=16,tensor=4"}} {
		m := layout(t, "v5p-128", c.slices, c.layout)
		at := func(contention float64) Estimate {
			j := NewJob(spec, 8192, 64*c.slices)
			j.Efficiency = 0.8
			j.Calibration = &Calibration{Attention: 1, DCNLatency: Calibrated().DCNLatency, Contention: contention}
			est, err := EstimateStep(j, m)
			if err != nil {
				t.Fatal(err)
			}
			return est
		}
		free, slowed := at(0), at(0.5)
		var all float64
		for _, cm := range free.Comms {
			all += cm.ICITime.Seconds()
		}
		hidden := all - free.Time.ICI.Seconds()
		if hidden <= 0 {
			t.Fatalf("%s: nothing hidden (%v of %vs exposed)", c.layout, free.Time.ICI, all)
		}
		got := slowed.Time.ICI.Seconds() - free.Time.ICI.Seconds()
		if math.Abs(got-0.5*hidden) > 1e-6 {
			t.Errorf("%s: contention 0.5 added %.6fs, want half the hidden %.6fs", c.layout, got, hidden)
		}
		if math.Abs(slowed.Time.Contention.Seconds()-0.5*hidden) > 1e-6 || free.Time.Contention != 0 {
			t.Errorf("%s: Time.Contention %v at 0.5 and %v at 0, want %.6fs and 0", c.layout, slowed.Time.Contention, free.Time.Contention, 0.5*hidden)
		}
		if slowed.Time.DCN != free.Time.DCN || slowed.Time.Compute != free.Time.Compute {
			t.Errorf("%s: contention changed DCN %v→%v or compute %v→%v", c.layout, free.Time.DCN, slowed.Time.DCN, free.Time.Compute, slowed.Time.Compute)
		}
	}
}

// TestLayerBackwardWalk holds the layer backward phase to a hand walk of
// Llama 3 8B's decoder layer (d_model 4096, 32 query heads and 8 KV heads
// of 128, gated MLP of 14336, two norms, sequential), 2 sequences of 1024
// tokens per chip on v5p-8 (fsdp=4), full remat. Elements per token:
// recomputed Q 4096, K 1024, V 1024, context 4096, out_proj 4096, wi_0 and
// wi_1 14336 each, the norms' outputs 8192 and the activation product
// 14336: 65536. The MLP down-projection holds all of them with d(out) 4096
// and d(act) 14336: 83968, the peak; the activation step ties it (51200
// left, d(out) and d(wi_0), d(wi_1), d(wi_0) in d(act)'s buffer: 32768),
// and the forward recompute (65536) and the up-projections (22528 + 36864)
// stay below. Times 2048 tokens and 2 bytes. With dot_product attention the
// exponentiated scores are recomputed too, 32·1024 per token (MaxText
// attention_op.py compute_local_attention @e591f30c): 116736 at the same
// step; the attention core's 47104 + 47104 stays below. The held
// activations do not change.
func TestLayerBackwardWalk(t *testing.T) {
	j := NewJob(lookup(t, "llama3-8b"), 1024, 8)
	j.Remat = RematFull
	m := layout(t, "v5p-8", 1, "fsdp=4")
	e := NewEstimator()
	flash, err := e.Memory(j, m)
	if err != nil {
		t.Fatal(err)
	}
	j.Attention = AttentionDot
	dot, err := e.Memory(j, m)
	if err != nil {
		t.Fatal(err)
	}
	buffer := func(ph Phase, name string) unit.Bytes {
		for _, b := range ph.Buffers {
			if b.Name == name {
				return b.Bytes
			}
		}
		t.Fatalf("no buffer %q in %+v", name, ph)
		return 0
	}
	const tok = 2048 * 2
	fl := flash.Phases[0]
	if want := PhaseLayerBackward + " (MLP down-projection)"; fl.Name != want {
		t.Errorf("flash: peak step %q, want %q", fl.Name, want)
	}
	// 65536 bytes per token of the activation dtype, and 136 of fp32
	// statistics: two RMSNorms' scales and 32 heads' log-sum-exp
	if got, want := buffer(fl, "recomputed activations still live"), unit.Bytes((65536+68)*tok); got != want {
		t.Errorf("flash: recomputed activations %d bytes, want %d", got, want)
	}
	if got, want := buffer(fl, BufferActivationGradients), unit.Bytes(18432*tok); got != want {
		t.Errorf("flash: activation gradients %d bytes, want %d", got, want)
	}
	dp := dot.Phases[0]
	if got, want := buffer(dp, "recomputed activations still live")+buffer(dp, BufferActivationGradients), unit.Bytes((116736+4)*tok); got != want {
		t.Errorf("dot_product: activations and gradients %d bytes, want %d", got, want)
	}
	if dot.Activations != flash.Activations {
		t.Errorf("held activations: dot_product %d, flash %d bytes; full remat keeps only the layer inputs", dot.Activations, flash.Activations)
	}
}

// TestMaxMicroBatchIsTheLargestThatFits holds MaxMicroBatch to a scan (a
// second implementation): the batch it returns fits, one more sequence per
// chip does not, on layouts with data, fsdp, expert and pipeline axes.
func TestMaxMicroBatchIsTheLargestThatFits(t *testing.T) {
	e := NewEstimator()
	for _, tt := range []struct {
		model, accel, layout string
		micro                int
		remat                Remat
	}{
		{"llama3-8b", "v5p-8", "fsdp=4", 1, RematFull},
		{"llama3-8b", "v6e-8", "fsdp=8", 1, RematSaveQKVProj},
		{"llama3-70b", "v5p-128", "fsdp=16,tensor=4", 1, RematFull},
		{"llama3-70b", "v5p-128", "fsdp=32,pipeline=2", 4, RematFull},
		{"mixtral-8x7b", "v5p-128", "fsdp=8,expert=8", 1, RematFull},
	} {
		j := NewJob(lookup(t, tt.model), 8192, 1)
		j.Remat, j.MicroBatches = tt.remat, tt.micro
		m := layout(t, tt.accel, 1, tt.layout)
		shards := m.Size(mesh.Data) * m.Size(mesh.FSDP) * m.Size(mesh.Expert) * tt.micro
		got, err := e.MaxMicroBatch(j, m, 4096)
		if err != nil {
			t.Fatalf("%s on %s %s: %v", tt.model, tt.accel, tt.layout, err)
		}
		want := 0
		for b := 1; b <= 4096; b++ {
			j.GlobalBatch = b * shards
			mem, err := e.Memory(j, m)
			if err != nil {
				t.Fatal(err)
			}
			if !mem.Fits() {
				break
			}
			want = b
		}
		if got != want || got == 0 {
			t.Errorf("%s on %s %s: MaxMicroBatch = %d, the scan finds %d (want at least 1: each layout fits one)", tt.model, tt.accel, tt.layout, got, want)
		}
		t.Logf("%s on %s %s: %d sequences per chip per micro-batch", tt.model, tt.accel, tt.layout, got)
	}
	j := NewJob(lookup(t, "llama3-405b"), 8192, 1)
	if got, err := e.MaxMicroBatch(j, layout(t, "v5p-8", 1, "fsdp=4"), 64); got != 0 || err != nil {
		t.Errorf("405B on v5p-8: MaxMicroBatch = %d, %v; want 0: its state alone does not fit", got, err)
	}
}

// TestTempScaleScalesTheTemporaries: a memory calibration's factor scales
// what a compiler counts as temporaries (gradients, held activations, the
// largest phase) and leaves the arguments (weights, optimizer state).
func TestTempScaleScalesTheTemporaries(t *testing.T) {
	j := NewJob(lookup(t, "llama3-8b"), 4096, 8)
	m := layout(t, "v5p-8", 1, "fsdp=4")
	e := NewEstimator()
	base, err := e.Memory(j, m)
	if err != nil {
		t.Fatal(err)
	}
	j.TempScale = 1.5
	got, err := e.Memory(j, m)
	if err != nil {
		t.Fatal(err)
	}
	if got.Weights != base.Weights || got.Optimizer != base.Optimizer {
		t.Errorf("arguments changed: weights %v -> %v, optimizer %v -> %v", base.Weights, got.Weights, base.Optimizer, got.Optimizer)
	}
	temp := func(m Memory) float64 { return float64(m.Gradients + m.Activations + m.Transient) }
	if r := temp(got) / temp(base); math.Abs(r-1.5) > 1e-6 {
		t.Errorf("temporaries scaled by %v, want 1.5", r)
	}
	j.TempScale = 9
	if _, err := e.Memory(j, m); err == nil {
		t.Error("TempScale 9 accepted")
	}
}

func TestParseMemoryCalibration(t *testing.T) {
	good := `{"temp_scale": 1.25, "reported_temp_bytes_per_device": 5, "predicted_temp_bytes_per_device": 4, "source": "compile.log"}`
	c, err := ParseMemoryCalibration([]byte(good))
	if err != nil || c.TempScale != 1.25 || c.Source != "compile.log" {
		t.Fatalf("%+v, %v", c, err)
	}
	for _, bad := range []string{
		``, `null`, `[]`, `{}`,
		`{"temp_scale": 1.25, "reported_temp_bytes_per_device": 5, "predicted_temp_bytes_per_device": 4}`,
		`{"Temp_Scale": 1.25, "reported_temp_bytes_per_device": 5, "predicted_temp_bytes_per_device": 4, "source": "x"}`,
		`{"temp_scale": 1.5, "reported_temp_bytes_per_device": 5, "predicted_temp_bytes_per_device": 4, "source": "x"}`,
		`{"temp_scale": 10, "reported_temp_bytes_per_device": 40, "predicted_temp_bytes_per_device": 4, "source": "x"}`,
		`{"temp_scale": 1.25, "reported_temp_bytes_per_device": 5, "predicted_temp_bytes_per_device": 4, "source": "x\u0000"}`,
		`{"temp_scale": 1.25, "reported_temp_bytes_per_device": 5, "predicted_temp_bytes_per_device": 4, "source": "x", "extra": 1}`,
	} {
		if _, err := ParseMemoryCalibration([]byte(bad)); err == nil || !errors.Is(err, ErrJob) {
			t.Errorf("ParseMemoryCalibration(%s) = %v, want an ErrJob error", bad, err)
		}
	}
}

// FuzzParseMemoryCalibration: never panics; what it accepts is a factor
// in bounds.
func FuzzParseMemoryCalibration(f *testing.F) {
	f.Add([]byte(`{"temp_scale": 1.25, "reported_temp_bytes_per_device": 5, "predicted_temp_bytes_per_device": 4, "source": "compile.log"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseMemoryCalibration(data)
		if err == nil && !(c.TempScale >= MinTempScale && c.TempScale <= MaxTempScale) {
			t.Errorf("accepted temp_scale %v", c.TempScale)
		}
	})
}

func TestQuantizedMFUIsAgainstTheFormatsPeak(t *testing.T) {
	// MFU is against the bf16 peak whatever the format, so that plans in
	// different formats compare; a quantized job also has its MFU against
	// its format's peak: the same model FLOPs over that peak (hw's catalog:
	// v5p bf16 459, fp8 459, int8 918 T/s; tpu7x bf16 2307, fp8 4614).
	spec := lookup(t, "llama3-8b")
	for _, tc := range []struct {
		tpu, mesh string
		q         Quantization
		bf16OverQ float64
	}{
		{"v5p-128", "fsdp=64", QuantInt8, 459.0 / 918},
		{"v5p-128", "fsdp=64", QuantFP8, 1},
		{"tpu7x-128", "fsdp=64", QuantFP8, 2307.0 / 4614},
	} {
		j := NewJob(spec, 8192, 64)
		m := layout(t, tc.tpu, 1, tc.mesh)
		b, err := EstimateStep(j, m)
		if err != nil {
			t.Fatal(err)
		}
		if b.QuantizedMFU != 0 {
			t.Errorf("%s bf16: QuantizedMFU = %v, want 0", tc.tpu, b.QuantizedMFU)
		}
		j.Quantization = tc.q
		e, err := EstimateStep(j, m)
		if err != nil {
			t.Fatal(err)
		}
		chip := m.Multislice.Slice.Chip
		peak := float64(chip.PeakBF16) * float64(m.Chips())
		if want := float64(e.ModelFLOPs) / (peak * e.Time.Step.Seconds()); math.Abs(e.MFU-want) > 1e-12 {
			t.Errorf("%s %s: MFU = %v, want model FLOPs over the bf16 peak %v", tc.tpu, tc.q, e.MFU, want)
		}
		if want := e.MFU * tc.bf16OverQ; math.Abs(e.QuantizedMFU-want) > 1e-9 {
			t.Errorf("%s %s: QuantizedMFU = %v, want MFU %v x %v = %v", tc.tpu, tc.q, e.QuantizedMFU, e.MFU, tc.bf16OverQ, want)
		}
		if got, want := e.MFUPeaks(), fmt.Sprintf("%.1f%% of the bf16 peak, %.1f%% of the %s peak", 100*e.MFU, 100*e.QuantizedMFU, tc.q); got != want {
			t.Errorf("%s %s: MFUPeaks() = %q, want %q", tc.tpu, tc.q, got, want)
		}
	}
}

func TestCalibratedIsACopy(t *testing.T) {
	// a caller changing what Calibrated returns changes nothing the
	// planner costs
	j := NewJob(lookup(t, "llama3-8b"), 8192, 64)
	m := layout(t, "v5p-64", 1, "fsdp=32")
	before, err := NewEstimator().Estimate(j, m)
	if err != nil {
		t.Fatal(err)
	}
	c := Calibrated()
	c.Efficiency[hw.V5p] = 0.1
	c.Contention = 9
	after, err := NewEstimator().Estimate(j, m)
	if err != nil {
		t.Fatal(err)
	}
	if before.Time.Step != after.Time.Step || Calibrated().Efficiency[hw.V5p] == 0.1 {
		t.Errorf("changing Calibrated's copy changed the planner: step %v -> %v", before.Time.Step, after.Time.Step)
	}
}

// TestLayerBackwardWalkTensor holds the walk with tensor parallelism to a
// hand walk of Llama 3 8B's layer (as TestLayerBackwardWalk) on v5p-8 at
// fsdp=2,tensor=2, 4 sequences of 1024 tokens per chip, full remat, flash.
// Elements per token, each tensor halved by tensor: recomputed Q 2048, K
// and V 512 each (8 KV heads over 2), context and out_proj 2048, wi_0 and
// wi_1 7168 each, the norms' outputs 2048 + 2048, the activation product
// 7168: 32768, and fp32 statistics as layerStats counts them, the two
// RMSNorms' scales over tensor (1) and 16 heads' log-sum-exp, 68 bytes (34
// elements). MaxText shards the residual stream and the norms'
// outputs over tensor (activation_embed -> tensor), so the attention's and
// the MLP's inputs are gathered to the full 4096 for their projections
// and live until their weight gradients: 8192 more, 40994 in all. The MLP
// down-projection reads d(out) gathered to 4096 beside d(out) 2048 and
// d(act) 7168: 13312, the peak (54306; the activation step holds 33826 +
// 16384, the up-projections 19490 + 20480). The up-projections' input
// gradient is a full-width partial sum (4096) before its reduce-scatter.
// Without tensor the gathered inputs are the norms' outputs themselves.
func TestLayerBackwardWalkTensor(t *testing.T) {
	j := NewJob(lookup(t, "llama3-8b"), 1024, 8)
	j.Remat = RematFull
	mem, err := NewEstimator().Memory(j, layout(t, "v5p-8", 1, "fsdp=2,tensor=2"))
	if err != nil {
		t.Fatal(err)
	}
	ph := mem.Phases[0]
	if want := PhaseLayerBackward + " (MLP down-projection)"; ph.Name != want {
		t.Errorf("peak step %q, want %q", ph.Name, want)
	}
	const tok = 4 * 1024 * 2 // tokens times bytes of bf16
	want := map[string]unit.Bytes{"recomputed activations still live": 40994 * tok, BufferActivationGradients: 13312 * tok}
	for _, b := range ph.Buffers {
		if w, ok := want[b.Name]; ok && b.Bytes != w {
			t.Errorf("%s: %d bytes, want %d", b.Name, b.Bytes, w)
		}
		delete(want, b.Name)
	}
	if len(want) > 0 {
		t.Errorf("no buffers %v in %+v", want, ph)
	}
}
