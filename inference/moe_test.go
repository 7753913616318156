package inference

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"shardlab/hw"
	"shardlab/model"
	"shardlab/unit"
)

func lookup(t testing.TB, name string) model.Spec {
	m, ok := model.Lookup(name)
	if !ok {
		t.Fatalf("%s missing from the catalog", name)
	}
	return m
}

// TestMLAKVBytesPerToken: DeepSeek-V2's Table 1 (arXiv 2405.04434) gives
// MLA's cache as (d_c + d_h^R)·l elements a token; DeepSeek-V3's config has
// d_c = kv_lora_rank 512, d_h^R = qk_rope_head_dim 64 and l = 61 layers, so
// 576·61 = 35,136 elements, 70,272 B in bf16. DeepSeek publishes that
// figure: "Insights into DeepSeek-V3" (Zhao et al. 2025, arXiv 2505.09343)
// Table 1, KV cache per token 70.272 KB for DeepSeek-V3 (MLA) beside
// 516.096 KB for LLaMA-3.1 405B (GQA), which shardlab's unsharded GQA
// layout gives too (126 layers · 2 · 8 heads · 128 · 2 B). tpu-inference stores the two parts padded to 128
// lanes each [ti-mla]: 512 + 128 = 640 lanes, 78,080 B in bf16 and 39,040 B
// in fp8, on the one device holding the sequence, whatever the TP.
func TestMLAKVBytesPerToken(t *testing.T) {
	m := lookup(t, "deepseek3-671b")
	if got := LatentElements(m); got != 576 {
		t.Errorf("LatentElements(deepseek3-671b) = %d, want 512 + 64 = 576", got)
	}
	if got, want := LatentElements(m)*m.Layers*BF16.Bytes(), 70_272; got != want {
		t.Errorf("logical MLA KV a token = %d B, want %d (DeepSeek-V2 Table 1 at V3's sizes)", got, want)
	}
	if got := KVBytesPerToken(lookup(t, "llama3-405b"), 1, BF16); got != 516_096 {
		t.Errorf("KVBytesPerToken(llama3-405b, TP 1, bf16) = %d, want 516,096 (arXiv 2505.09343 Table 1)", got)
	}
	for _, c := range []struct {
		tp   int
		kv   Dtype
		want unit.Bytes
	}{{1, BF16, 78_080}, {16, BF16, 78_080}, {8, FP8, 39_040}} {
		if got := KVBytesPerToken(m, c.tp, c.kv); got != c.want {
			t.Errorf("KVBytesPerToken(deepseek3-671b, TP %d, %s) = %d, want %d", c.tp, c.kv, got, c.want)
		}
	}
	// multi-head attention would have cached 2·128 heads·(128+64) keys and values
	mha := 2 * m.Heads * m.QKHead() * m.Layers * 2
	if mha/78_080 < 50 {
		t.Errorf("MHA's %d B a token is not ~60x the latent's", mha)
	}
	if LatentElements(lookup(t, "llama3-70b")) != 0 {
		t.Error("LatentElements of a model without latent attention is not 0")
	}
}

// TestActiveExperts holds the closed form E·(1 − (1 − k/E)^B) to its
// limits (k for one token, the union bound min(E, B·k), E for many
// tokens) and to a second implementation: routing tokens at random,
// each to k distinct experts, and counting the experts touched.
func TestActiveExperts(t *testing.T) {
	for _, name := range []string{"mixtral-8x7b", "deepseek3-671b", "qwen3-235b-a22b"} {
		m := lookup(t, name)
		E, k := m.Experts, m.ExpertsPerToken
		if got := ActiveExperts(m, 1); math.Abs(got-float64(k)) > 1e-9 {
			t.Errorf("%s: one token touches %g experts, want k = %d", name, got, k)
		}
		rng := rand.New(rand.NewPCG(7, 0))
		for _, B := range []int{1, 2, 8, 32, 64, 256} {
			got := ActiveExperts(m, B)
			if bound := float64(min(E, B*k)); got > bound+1e-9 {
				t.Errorf("%s: %d tokens touch %g experts, above min(E, B·k) = %g", name, B, got, bound)
			}
			const trials = 300
			sum := 0
			for range trials {
				touched := make([]bool, E)
				n := 0
				for range B {
					for _, e := range rng.Perm(E)[:k] {
						if !touched[e] {
							touched[e] = true
							n++
						}
					}
				}
				sum += n
			}
			if mc := float64(sum) / trials; math.Abs(mc-got) > 0.02*got+0.1 {
				t.Errorf("%s: %d tokens: closed form %g experts, simulated routing %g", name, B, got, mc)
			}
		}
		if got := ActiveExperts(m, 1<<16); math.Abs(got-float64(E)) > 1e-6 {
			t.Errorf("%s: 65536 tokens touch %g experts, want all %d", name, got, E)
		}
	}
	if ActiveExperts(lookup(t, "llama3-70b"), 64) != 0 {
		t.Error("a dense model has active experts")
	}
}

// TestExpertParallelWeights derives the weights per device by hand.
// Mixtral 8x7B at TP 8 with expert parallelism 8: one expert a layer per
// device, 32 layers × 3·4096·14336 = 5,637,144,576 params, 11,274,289,152 B
// in bf16. Everything else but the norms and routers (and the final norm)
// is split 8 ways, so eight devices hold the model once plus seven more
// copies of those: 8·n = total + 7·(32·(2·4096 + 4096·8) + 4096).
func TestExpertParallelWeights(t *testing.T) {
	m := lookup(t, "mixtral-8x7b")
	if ep := ExpertParallel(m, 8); ep != 8 {
		t.Errorf("ExpertParallel(mixtral, 8) = %d, want 8", ep)
	}
	if ep := ExpertParallel(m, 3); ep != 1 {
		t.Errorf("ExpertParallel(mixtral, 3) = %d, want 1 (3 does not divide 8 experts)", ep)
	}
	if ep := ExpertParallel(lookup(t, "llama3-70b"), 8); ep != 1 {
		t.Errorf("ExpertParallel(dense, 8) = %d, want 1", ep)
	}
	if got, want := ExpertWeightBytes(m, 8, BF16), unit.Bytes(32*3*4096*14336*2); got != want {
		t.Errorf("ExpertWeightBytes(mixtral, EP 8) = %d, want %d", got, want)
	}
	total := m.ParamCount().Total()
	replicated := int64(32*(2*4096+4096*8) + 4096)
	if got, want := 8*int64(WeightBytes(m, 8, BF16))/2, total+7*replicated; got != want {
		t.Errorf("8 × weights per device at TP 8 = %d params, want %d", got, want)
	}
	// DeepSeek-V3 under latent attention keeps attention whole on every
	// device: from TP 1 to TP 16 only the rest shrinks, by 15/16.
	ds := lookup(t, "deepseek3-671b")
	p := ds.ParamCount()
	whole := int64(ds.Layers)*(p.Attention+p.Norms) + int64(p.MoELayers)*p.Router + p.FinalNorm
	split := p.Total() - whole
	if got, want := int64(WeightBytes(ds, 1, FP8)-WeightBytes(ds, 16, FP8)), split-split/16; math.Abs(float64(got-want)) > 64 {
		t.Errorf("deepseek3-671b fp8 weights TP 1 − TP 16 = %d B, want 15/16 of the %d split params", got, want)
	}
}

// TestMoEDecodeReads: one sequence decoding on Mixtral at TP 8 reads the
// experts its token routes to (2 a layer), an eighth of each, not all
// eight: the decode HBM time is (weights − the experts held + 32·2·expert/8
// + its KV) / bandwidth.
func TestMoEDecodeReads(t *testing.T) {
	r := moeRequest(t, "mixtral-8x7b", "tpu7x-8")
	r.Concurrency = 1
	l := Estimate(r, 8, 1)
	expert := float64(3 * 4096 * 14336 * 2)
	read := float64(l.Memory.Weights) - float64(ExpertWeightBytes(r.Model, 8, BF16)) + 32*2*expert/8
	kv := float64(r.PromptLen+r.OutputLen/2) * float64(l.Memory.KVPerToken)
	want := (read + kv) / (7380e9 / 2)
	if got := l.DecodeMemory.Seconds(); math.Abs(got-want) > 1e-9 {
		t.Errorf("mixtral one-sequence decode HBM time = %g s, want %g", got, want)
	}
	// at 64 sequences every expert is read: the step reads all the weights
	r.Concurrency = 64
	l = Estimate(r, 8, 1)
	if l.ActiveExperts < 7.99 {
		t.Errorf("64 tokens touch %g of 8 experts, want all", l.ActiveExperts)
	}
}

func moeRequest(t testing.TB, name, tpu string) Request {
	r := DefaultRequest()
	r.Model, r.Slice = lookup(t, name), slice(t, tpu)
	r, err := NewRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestMoEPlans: mixture-of-experts models get serving plans with expert
// parallelism; DeepSeek-V3 with latent attention needs more than one VM in
// fp8 (its 671B weights alone are ~88 % of a tpu7x-8's usable HBM) and
// fits a tpu7x-16, all 16 devices in one replica.
func TestMoEPlans(t *testing.T) {
	p, err := Search(moeRequest(t, "mixtral-8x7b", "tpu7x-8"))
	if err != nil {
		t.Fatal(err)
	}
	if b := p.Best; b.Chips != 4 || b.EP != b.TP || b.EP < 2 {
		t.Errorf("mixtral on tpu7x-8: TP %d EP %d on %d chips, want EP = TP on all 4", b.TP, b.EP, b.Chips)
	}
	r := moeRequest(t, "deepseek3-671b", "tpu7x-8")
	r.Weights, r.KVCache, r.KVCacheDtype = FP8, FP8, "fp8"
	if _, err := Search(r); !errors.Is(err, ErrNoFit) {
		t.Errorf("deepseek3-671b fp8 on tpu7x-8: %v, want ErrNoFit", err)
	}
	r.Slice = slice(t, "tpu7x-16")
	r, err = NewRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	p, err = Search(r)
	if err != nil {
		t.Fatal(err)
	}
	b := p.Best
	if b.TP != 16 || b.EP != 16 || b.AttentionDP != 16 || b.Memory.BlockSize != 1024 || b.Memory.KVPerToken != 39_040 {
		t.Errorf("deepseek3-671b on tpu7x-16: TP %d EP %d attention DP %d, page %d, KV %d B; want 16, 16, 16, 1024, 39,040",
			b.TP, b.EP, b.AttentionDP, b.Memory.BlockSize, b.Memory.KVPerToken)
	}
	// the replica's pages are its 16 devices': whole sequences on each
	per := int(b.Memory.KVCache / (b.Memory.KVPerToken * 1024))
	if b.Memory.Pages != 16*per || b.Memory.MaxSeqs != 16*(per/4) {
		t.Errorf("pages %d, max seqs %d; want 16·%d and 16·%d", b.Memory.Pages, b.Memory.MaxSeqs, per, per/4)
	}
}

// TestObjectiveAndSLOs: llama3-8b on tpu7x-8 at max_num_seqs 64 a
// replica: the most tokens/s per chip is TP 1 × DP 8 (ITL 7.9 ms beyond
// vLLM's fixed step time h, which every layout's TTFT and ITL carry); an
// ITL SLO of h + 5 ms moves it to TP 2 × DP 4; a TTFT SLO of h + 7 ms
// also to TP 2; the latency objective to TP 8; an SLO no layout meets
// (h + 1 ms) gives the best effort, marked, with what it misses.
func TestObjectiveAndSLOs(t *testing.T) {
	base := moeRequest(t, "llama3-8b", "tpu7x-8")
	base.MaxNumSeqs = 64
	h := StepOverhead(VLLM)
	for _, c := range []struct {
		name   string
		edit   func(*Request)
		tp     int
		effort bool
	}{
		{"throughput", func(*Request) {}, 1, false},
		{"itl slo", func(r *Request) { r.ITLSLO = h + 5*time.Millisecond }, 2, false},
		{"ttft slo", func(r *Request) { r.TTFTSLO = h + 7*time.Millisecond }, 2, false},
		{"latency", func(r *Request) { r.Objective = Latency }, 8, false},
		{"unmeetable", func(r *Request) { r.ITLSLO = h + time.Millisecond }, 1, true},
	} {
		r := base
		c.edit(&r)
		r, err := NewRequest(r)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Search(r)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if p.Best.TP != c.tp || p.Best.Devices() != 8 || p.BestEffort != c.effort {
			t.Errorf("%s: TP %d on %d devices, best effort %v; want TP %d on 8, %v", c.name, p.Best.TP, p.Best.Devices(), p.BestEffort, c.tp, c.effort)
		}
		for _, l := range p.Layouts {
			if miss := (r.ITLSLO > 0 && l.ITL > r.ITLSLO) || (r.TTFTSLO > 0 && l.TTFT > r.TTFTSLO); miss != (len(l.Misses) > 0) {
				t.Errorf("%s: TP %d misses %v, want missing: %v", c.name, l.TP, l.Misses, miss)
			}
		}
		if c.effort && (len(p.Warnings) == 0 || !strings.Contains(p.Warnings[0], "no layout meets ITL ≤ "+unit.Seconds(r.ITLSLO.Seconds()).String())) {
			t.Errorf("%s: warnings %q, want one saying no layout meets the SLO", c.name, p.Warnings)
		}
	}
}

// TestFewerChipsOnlyWhenAsked: a fixed TP and DP that leave chips idle
// are served as asked, with a reason saying so.
func TestFewerChipsOnlyWhenAsked(t *testing.T) {
	r := request(t)
	r.TP, r.DP = 4, 1
	r, p := searched(t, r)
	if p.Best.Chips != 2 || len(p.Layouts) != 1 || !strings.Contains(strings.Join(p.Reasons, "\n"), "the other 2 chips idle") {
		t.Errorf("TP 4 × DP 1 on tpu7x-8: %d chips, %d layouts, reasons %q", p.Best.Chips, len(p.Layouts), p.Reasons)
	}
	r.DP = 0 // TP 4 alone fills the VM with 2 replicas
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	if p.Best.DP != 2 || p.Best.Chips != 4 {
		t.Errorf("TP 4 on tpu7x-8: DP %d on %d chips, want 2 on 4", p.Best.DP, p.Best.Chips)
	}
}

// TestMoEDispatch, by hand [ti-ep]: Qwen3-Coder-480B at TP 8 (expert
// parallel 8) on tpu7x-8, a step of 8192 tokens: 8192·8/8 = 8192 rows a
// device, 62 layers × 8192 × 3 × 2·6144 bytes over the device's HBM
// bandwidth; at TP 1 (no expert parallelism) all 8192·8 rows, and so at
// EP 8 on tpu-inference before PR #2294 [ti-ep-rows]; a dense model
// none.
func TestMoEDispatch(t *testing.T) {
	r := qwenCoderRequest(t)
	rc := newReplicaCost(r, 8)
	if got, want := rc.moeDispatch(8192), 62*8192*3*2*6144/rc.bw; got != want {
		t.Errorf("moeDispatch(8192) at EP 8 = %v s, want %v s", got, want)
	}
	rc1 := newReplicaCost(r, 1)
	if got, want := rc1.moeDispatch(8192), 62*8192*8*3*2*6144/rc1.bw; got != want {
		t.Errorf("moeDispatch(8192) at TP 1 = %v s, want %v s", got, want)
	}
	// tpu-inference before #2294: all 8192·8 rows on every device at EP 8
	r.MoEAllRows = true
	if got, want := newReplicaCost(r, 8).moeDispatch(8192), 62*8192*8*3*2*6144/rc.bw; got != want {
		t.Errorf("moeDispatch(8192) at EP 8 with all rows = %v s, want %v s", got, want)
	}
	dense := DefaultRequestFor(t, "llama3-70b")
	if got := newReplicaCost(dense, 8).moeDispatch(8192); got != 0 {
		t.Errorf("a dense model's dispatch = %v s, want 0", got)
	}
}

// TestGroupRows holds groupRows [ti-gmm] to hand-worked cases.
func TestGroupRows(t *testing.T) {
	for _, c := range []struct {
		name   string
		tokens int
		p      float64
		rows   int
		want   float64
	}{
		// one token routed with probability 1/20 among 8 rows: tiles of
		// min(128, 8) = 8 rows, a sublane of min(16, 8) = 8; one row at any
		// offset o < 8 fits one tile: 8 rows, with probability 1/20
		{"one token", 1, 1.0 / 20, 8, 8.0 / 20},
		// every one of 200 tokens routed to the group: 200 rows, offsets 0
		// to 15 give 200..215 rows, 2 tiles of 128 each time
		{"always routed", 200, 1, 1600, 256},
		// 2 tokens with p = 1/2 among 4 rows: tiles and sublane of 4; n = 1
		// (p 1/2) is 1 tile at every offset, 4 rows; n = 2 (p 1/4) is 1
		// tile at offsets 0, 1, 2 and 2 at offset 3, (3·4 + 8)/4 = 5 rows:
		// 0.5·4 + 0.25·5
		{"two tokens", 2, 0.5, 4, 3.25},
		{"no tokens", 0, 0.5, 4, 0},
	} {
		if got := groupRows(c.tokens, c.p, c.rows); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: groupRows(%d, %v, %d) = %v, want %v", c.name, c.tokens, c.p, c.rows, got, c.want)
		}
	}
}

// TestExpertRowsFillMetadata checks ExpertRows against a second
// implementation: seeded steps route every token to k distinct experts
// drawn uniformly, then walk gmm_v2's fill_metadata over the groups in
// expert order as the kernel does [ti-gmm] (each group's first row at the
// sum of the groups before it; a non-empty group of the device's experts
// in cdiv(size + offset mod sublane, tile_m) tiles of tile_m rows), and
// average the rows each device computes. The closed form takes the
// offsets as uniform over the sublane; the walk has the real ones.
func TestExpertRowsFillMetadata(t *testing.T) {
	coder, mixtral := lookup(t, "qwen3-coder-480b-a35b"), lookup(t, "mixtral-8x7b")
	rng := rand.New(rand.NewPCG(3, 0))
	for _, c := range []struct {
		m          model.Spec
		tp, tokens int
	}{
		{coder, 8, 1}, {coder, 8, 64}, {coder, 8, 1024}, {coder, 8, 8192},
		{coder, 1, 64}, {mixtral, 8, 16}, {mixtral, 8, 4096},
	} {
		e, k, ep := c.m.Experts, c.m.ExpertsPerToken, ExpertParallel(c.m, c.tp)
		size := c.tokens * k
		tm, sub := min(128, size), min(16, size)
		trials := max(4, 200000/size)
		var rows float64
		perm := make([]int, e)
		sizes := make([]int, e)
		for range trials {
			clear(sizes)
			for range c.tokens {
				for i := range perm {
					perm[i] = i
				}
				for j := range k { // k distinct experts
					i := j + rng.IntN(e-j)
					perm[j], perm[i] = perm[i], perm[j]
					sizes[perm[j]]++
				}
			}
			start := 0
			for _, n := range sizes {
				if n > 0 {
					rows += float64(ceilDiv(n+start%sub, tm) * tm)
				}
				start += n
			}
		}
		want := rows / float64(trials) / float64(ep) // a device's share of all groups' rows
		got := ExpertRows(c.m, c.tp, c.tokens)
		if math.Abs(got-want) > 0.02*want {
			t.Errorf("%s TP %d, %d tokens: ExpertRows = %.1f, fill_metadata walk %.1f", c.m.Name, c.tp, c.tokens, got, want)
		}
		if low := float64(size) / float64(ep); got < low {
			t.Errorf("%s TP %d, %d tokens: ExpertRows = %.1f, below the %v rows routed", c.m.Name, c.tp, c.tokens, got, low)
		}
	}
}

// TestExpertFLOPs: the grouped matmuls' FLOPs are ExpertRows at one
// row's FLOPs. One token of Qwen3-Coder at TP 8 (EP 8, 20 experts a
// device): its 8 experts are 1/8 on average on a device, each a group of
// 1 row computed as a tile of 8 (its 8 rows in all): 8 rows, 8× the one
// row routed there, each 2·62·3·6144·2560 FLOPs over the MoE layers. A
// dense model has none, and matmulFLOPs is the same with or without the
// experts' split out.
func TestExpertFLOPs(t *testing.T) {
	r := qwenCoderRequest(t)
	rc := newReplicaCost(r, 8)
	row := 2.0 * 62 * 3 * 6144 * 2560
	if got, want := rc.expertFLOPs(1), 8*row; math.Abs(got-want) > 1e-6*want {
		t.Errorf("expertFLOPs(1) at TP 8 = %v, want %v", got, want)
	}
	// without the tiles it would be the row routed to the device
	if got, want := rc.routed/8, row; math.Abs(got-want) > 1e-6*want {
		t.Errorf("routed FLOPs of a token over 8 devices = %v, want %v", got, want)
	}
	b := Batch{Seqs: 1, PaddedSeqs: 8, Tokens: 1, PaddedTokens: 16, ContextTokens: 1, AttendedPairs: 1}
	if got, want := rc.matmulFLOPs(b)-rc.expertFLOPs(16), 16*(rc.matmul-rc.attnMatmul-rc.logits-rc.routed)/8+8*rc.logits/8+(16*rc.attnMatmul+rc.core)/8; math.Abs(got-want) > 1e-9*want {
		t.Errorf("matmulFLOPs less the experts' = %v, want %v", got, want)
	}
	dense := newReplicaCost(DefaultRequestFor(t, "llama3-70b"), 8)
	if got := dense.expertFLOPs(8192); got != 0 || dense.routed != 0 {
		t.Errorf("a dense model's expert FLOPs = %v (routed %v), want 0", got, dense.routed)
	}
}

// qwenCoderRequest is Qwen3-Coder-480B served on tpu7x-8 with fp8 weights
// and KV cache and sequences of up to 10,240 tokens, as the tpu-recipes
// rows of validate/serving.yaml serve it.
func qwenCoderRequest(t *testing.T) Request {
	t.Helper()
	s, _ := hw.ParseAcceleratorType("tpu7x-8")
	r := DefaultRequest()
	r.Model, r.Slice, r.MaxModelLen, r.Weights, r.KVCache = lookup(t, "qwen3-coder-480b-a35b"), s, 10240, FP8, FP8
	r, err := NewRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestWeightPeak, by hand: tpu-inference multiplies an fp8 checkpoint's
// linear layers and experts in fp8, so on TPU7x (2,307 bf16 and 4,614 fp8
// TFLOP/s a chip, two JAX devices) a step's weight matmuls run at 2,307
// TFLOP/s a device and its output projection and attention scores at
// 1,153.5; with bf16 weights all at 1,153.5. v6e publishes an fp8 peak
// equal to its bf16 one, so there fp8 changes nothing.
func TestWeightPeak(t *testing.T) {
	r := qwenCoderRequest(t)
	rc := newReplicaCost(r, 8)
	if rc.wPeak != 4614e12/2 || rc.peak != 2307e12/2 {
		t.Fatalf("tpu7x fp8: wPeak %g, peak %g FLOP/s, want 2.307e15 and 1.1535e15", rc.wPeak, rc.peak)
	}
	b := Batch{Seqs: 4, PaddedSeqs: 8, Tokens: 512, PaddedTokens: 512, ContextTokens: 4096, AttendedPairs: 300000}
	w, rest := rc.matmulByPeak(b)
	if got, want := rc.matmulTime(b), w/2307e12+rest/1153.5e12; math.Abs(got-want) > 1e-12*want {
		t.Errorf("matmulTime = %g s, want %g s", got, want)
	}
	if got, want := rest, 8*rc.logits/8+(300000*rc.core)/8; math.Abs(got-want) > 1e-9*want {
		t.Errorf("the bf16 part = %g FLOPs, want the sampled sequences' output projection and the scores, %g", got, want)
	}
	r.Weights = BF16
	if rc := newReplicaCost(r, 8); rc.wPeak != rc.peak {
		t.Errorf("tpu7x bf16: wPeak %g, want the bf16 peak %g", rc.wPeak, rc.peak)
	}
	s, _ := hw.ParseAcceleratorType("v6e-8")
	r.Slice, r.Weights = s, FP8
	if rc := newReplicaCost(r, 8); rc.wPeak != rc.peak {
		t.Errorf("v6e fp8: wPeak %g, want the bf16 peak %g (v6e's fp8 peak is its bf16 one)", rc.wPeak, rc.peak)
	}
}
