package inference

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"shardlab/hw"
	"shardlab/model"
	"shardlab/unit"
)

func llama70B(t testing.TB) model.Spec {
	m, ok := model.Lookup("llama3-70b")
	if !ok {
		t.Fatal("llama3-70b missing from the catalog")
	}
	return m
}

func slice(t testing.TB, name string) hw.Slice {
	s, err := hw.ParseAcceleratorType(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func request(t testing.TB) Request {
	r, err := NewRequest(Request{
		Model: llama70B(t), Slice: slice(t, "tpu7x-8"), MaxModelLen: 8192,
		Concurrency: 64, PromptLen: 1024, OutputLen: 1024,
		MemoryUtilization: 0.9, MaxNumBatchedTokens: 4096,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestKVBytesPerToken: Llama 3 70B has 80 layers, 8 KV heads of width 128.
// Unsharded, K and V take 2·8·128·80·2 B = 327,680 B (320 KiB) a token in
// bf16. With TP 8 each device holds one KV head: one 32-bit word row of two
// bf16 (K and V) × 128 lanes × 2 B = 512 B a layer, 40 KiB a token, and
// the eight devices together hold the 320 KiB. In fp8 the kernel packs four
// elements per word, but K and V of one head fill only two of them, so the
// row is padded to four: 4 × 128 × 1 B = 512 B, no saving over bf16. With
// TP 4 (two heads, four elements) fp8 fills its words: 512 B a layer, half
// of bf16's 1024 B.
func TestKVBytesPerToken(t *testing.T) {
	m := llama70B(t)
	for _, c := range []struct {
		tp   int
		kv   Dtype
		want unit.Bytes
	}{
		{1, BF16, 2 * 8 * 128 * 80 * 2},
		{8, BF16, 40 * unit.KiB},
		{8, FP8, 40 * unit.KiB},
		{4, BF16, 80 * unit.KiB},
		{4, FP8, 40 * unit.KiB},
		{1, FP8, 2 * 8 * 128 * 80},
	} {
		if got := KVBytesPerToken(m, c.tp, c.kv); got != c.want {
			t.Errorf("KVBytesPerToken(llama3-70b, TP %d, %s) = %d, want %d", c.tp, c.kv, got, c.want)
		}
	}
	// head_dim below 128 is padded to 128 lanes [ti-kv]
	small := model.Spec{Name: "hd64", Layers: 1, DModel: 512, Heads: 8, KVHeads: 8, HeadDim: 64, DFF: 1024, Vocab: 100, SeqLen: 128}
	if got, want := KVBytesPerToken(small, 1, BF16), unit.Bytes(8*2*128*2); got != want {
		t.Errorf("KVBytesPerToken(head_dim 64) = %d, want %d (padded to 128)", got, want)
	}
	if got := KVUsefulSplit(m, FP8); got != 4 {
		t.Errorf("KVUsefulSplit(llama3-70b, fp8) = %d, want 4 (2·8/4)", got)
	}
}

// TestWeightBytes: with TP 8 each device of Llama 3 70B holds an eighth of
// every matrix (its one KV head is an eighth too) and the norms whole:
// 70,553,706,496 params; the replicated norms are 80·2·8192 + 8192; so a
// device holds (70,553,706,496 − 1,318,912)/8 + 1,318,912 params, 2 B each.
func TestWeightBytes(t *testing.T) {
	m := llama70B(t)
	total := m.ParamCount().Total()
	if total != 70_553_706_496 {
		t.Fatalf("llama3-70b has %d params, want 70,553,706,496", total)
	}
	norms := int64(80*2*8192 + 8192)
	want := unit.Bytes(((total-norms)/8 + norms) * 2)
	if got := WeightBytes(m, 8, BF16); got != want {
		t.Errorf("WeightBytes(llama3-70b, TP 8, bf16) = %d, want %d", got, want)
	}
	if got := WeightBytes(m, 1, FP8); got != unit.Bytes(total) {
		t.Errorf("WeightBytes(llama3-70b, TP 1, fp8) = %d, want %d", got, total)
	}
}

// TestMaxConcurrencyTPU7xVM: one tpu7x-8 VM is 4 chips, 8 devices
// [ti-info: 2 cores per TPU7x chip], each of which the runtime lets hold
// 94.74 GiB (bytes_limit, XLA's capacity: hw/xla_hbm.csv's TPU7x row, an
// out-of-memory message) = 101,726,300,406 B (rounded), not the published 96 GiB.
// At TP 8 and gpu_memory_utilization 0.9, a device has 0.9 of that less
// the weights (about 16.4 GiB) and activations for pages; a sequence of
// 8192 tokens needs 32 pages of 256 tokens × 40 KiB = 320 MiB. Worked by
// hand: 91,553,670,364 − 17,640,734,720 − (4096·66,048 + 64·4·16,032 =
// 274,636,800) = 73,638,298,844 B → 7022 pages → 219 sequences.
func TestMaxConcurrencyTPU7xVM(t *testing.T) {
	r := request(t)
	l := Estimate(r, 8, 1)
	m := l.Memory
	if m.Capacity != 101_726_300_406 {
		t.Errorf("device HBM = %d B, want 101,726,300,406 (94.74 GiB)", m.Capacity)
	}
	if m.BlockSize != 256 {
		t.Errorf("block size = %d, want 256 (8192 → 8192/16 = 512, capped at 256)", m.BlockSize)
	}
	if m.Weights != 17_640_734_720 {
		t.Errorf("weights = %d, want 17,640,734,720", m.Weights)
	}
	if m.Pages != 7022 || m.MaxSeqs != 219 {
		t.Errorf("pages %d, max sequences %d; want 7022 and 219", m.Pages, m.MaxSeqs)
	}
	// second computation: the KV bytes of the sequences fit and one more does not
	seq := unit.Bytes(8192) * KVBytesPerToken(r.Model, 8, BF16)
	if used := m.Weights + m.Activations + unit.Bytes(m.MaxSeqs)*seq; used > m.Budget || used+seq <= m.Budget {
		t.Errorf("%d sequences use %v of %v: not the largest that fits", m.MaxSeqs, used, m.Budget)
	}
}

// TestBlockSize follows get_page_size and get_min_page_size [ti-page].
func TestBlockSize(t *testing.T) {
	for _, c := range []struct{ mml, seqs, want int }{
		{8192, 64, 256}, {2048, 64, 128}, {100, 1, 16}, {16384, 64, 16},
		{131072, 256, 256}, // 131072 / (131072/256) = 256 tokens per page at least
	} {
		if got := BlockSize(c.mml, c.seqs); got != c.want {
			t.Errorf("BlockSize(%d, %d) = %d, want %d", c.mml, c.seqs, got, c.want)
		}
	}
}

// TestDecodeRoofline derives the decode step of TP 8 on tpu7x-8 by hand:
// each device streams its weights and its sequences' KV from HBM at
// 7.38 TB/s / 2 per device.
func TestDecodeRoofline(t *testing.T) {
	r := request(t)
	l := Estimate(r, 8, 1)
	ctx := 1024 + 512
	bytes := float64(l.Memory.Weights) + float64(64*ctx)*float64(40*unit.KiB)
	want := bytes / (7380e9 / 2)
	if got := l.DecodeMemory.Seconds(); math.Abs(got-want) > 1e-8 {
		t.Errorf("decode memory time = %g s, want %g", got, want)
	}
	if l.ITL < l.DecodeMemory || l.DecodeAllReduce <= 0 {
		t.Errorf("ITL %v, memory %v, all-reduce %v: the ITL must add the TP all-reduces", l.ITL, l.DecodeMemory, l.DecodeAllReduce)
	}
	if got := l.PerChip * float64(l.Chips); math.Abs(got-l.TokensPerSecond) > 1e-6 {
		t.Errorf("per chip × chips = %g, want %g", got, l.TokensPerSecond)
	}
	// TP 8 is 4 chips, a 2x2 of tpu7x-8 (mesh: 200 GB/s, 2 hops, no
	// wraparound). Two all-reduces a layer of 64 tokens × 8192 × 2 B =
	// 1 MiB: each chip sends 2·3/4 MiB = 1,572,864 B in 7.864 µs, plus
	// 2·2 hops of 1 µs, so 11.864 µs, and 160 of them take 1.898 ms.
	if got, want := l.DecodeAllReduce, 160*11864*time.Nanosecond; got < want-160*time.Nanosecond || got > want+160*time.Nanosecond {
		t.Errorf("TP 8 decode all-reduce = %v, want %v", got, want)
	}
	// one chip (TP 2) passes nothing over ICI
	if l2 := Estimate(r, 2, 1); l2.DecodeAllReduce != 0 {
		t.Errorf("TP 2 on one TPU7x chip: all-reduce %v over ICI, want 0", l2.DecodeAllReduce)
	}
}

func TestSearch(t *testing.T) {
	r := request(t)
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	// every replica holds all 141 GB of bf16 weights across its TP devices
	if unit.Bytes(p.Best.TP)*p.Best.Memory.Weights < 140e9 {
		t.Errorf("best TP %d cannot hold the weights", p.Best.TP)
	}
	if !p.Best.Fits || len(p.Reasons) == 0 {
		t.Errorf("best %+v, reasons %v", p.Best, p.Reasons)
	}
	for _, l := range p.Layouts {
		if l.Fits && l.PerChip > p.Best.PerChip {
			t.Errorf("layout TP %d DP %d has %g tok/s/chip, more than the best's %g", l.TP, l.DP, l.PerChip, p.Best.PerChip)
		}
	}
	// every candidate uses the whole VM: TP · DP = its 8 devices
	for _, l := range p.Layouts {
		if l.Devices() != 8 || l.Chips != 4 {
			t.Errorf("layout TP %d DP %d uses %d devices on %d chips, want all 8 on 4", l.TP, l.DP, l.Devices(), l.Chips)
		}
	}
	// vLLM starts a server whose pages hold one sequence of max_model_len
	// tokens and preempts when they run out: 50000 sequences fit and preempt
	r.Concurrency, r.MaxNumBatchedTokens = 100000/2, 1<<16
	if p, err := Search(r); err != nil || !p.Best.Fits || !p.Best.Preempts {
		t.Errorf("50000 sequences of 1024+1024 tokens on tpu7x-8: %v, fits %v, preempts %v; want a plan that fits and preempts", err, p.Best.Fits, p.Best.Preempts)
	}
}

func TestNewRequestErrors(t *testing.T) {
	base := request(t)
	for _, c := range []struct {
		name string
		edit func(*Request)
		want []string
	}{
		// 48 heads, 8 KV heads: 12 divides the heads and is neither a
		// divisor nor a multiple of the KV heads; 16, 24 and 48 are
		// multiples (tpu-inference replicates the KV heads)
		{"tp neither divisor nor multiple of kv heads", func(r *Request) {
			r.Model, r.MaxModelLen, r.TP, r.Slice = lookupT(t, "mixtral-8x22b"), 4096, 12, slice(t, "tpu7x-384")
		}, []string{"tensor_parallel_size 12", "one of 1, 2, 4, 8, 16, 24, 48", "divisor or a multiple of the 8 KV heads"}},
		{"tp not dividing", func(r *Request) { r.TP = 3 }, []string{"tensor_parallel_size 3"}},
		{"max model len", func(r *Request) { r.MaxModelLen = 8193 }, []string{"max_model_len 8193", "2 to 8192"}},
		{"zero concurrency", func(r *Request) { r.Concurrency = 0 }, []string{"concurrency 0"}},
		{"nan utilization", func(r *Request) { r.MemoryUtilization = math.NaN() }, []string{"gpu_memory_utilization NaN", "(0, 1]"}},
		{"inf utilization", func(r *Request) { r.MemoryUtilization = math.Inf(1) }, []string{"gpu_memory_utilization +Inf"}},
		{"int8 kv", func(r *Request) { r.KVCache = Int8 }, []string{"kv_cache_dtype \"int8\"", "bf16 or fp8"}},
		{"v4", func(r *Request) { r.Slice = slice(t, "v4-8") }, []string{"tpu v4", "tpu7x (the generations tpu-inference recommends) or v5p"}},
		{"vllm kv int8", func(r *Request) { r.KVCacheDtype = "int8_per_token_head" }, []string{`kv_cache_dtype "int8_per_token_head"`, "auto, bfloat16, fp8, fp8_e4m3, fp8_e5m2"}},
		{"shardlab name as vllm kv", func(r *Request) { r.KVCacheDtype = "bf16" }, []string{`kv_cache_dtype "bf16"`, "bfloat16"}},
		{"negative max_num_seqs", func(r *Request) { r.MaxNumSeqs = -1 }, []string{"max_num_seqs -1"}},
		{"max_num_seqs and rate", func(r *Request) { r.MaxNumSeqs = 8; r.RequestRate = 2 }, []string{"max_num_seqs 8", "request_rate"}},
		{"too long", func(r *Request) { r.PromptLen = 8000; r.OutputLen = 500 }, []string{"output_len 500", "1 to 192"}},
		{"objective", func(r *Request) { r.Objective = "fast" }, []string{`objective "fast"`, "throughput or latency"}},
		{"negative itl slo", func(r *Request) { r.ITLSLO = -time.Millisecond }, []string{"itl_slo -1ms", "0 (no target)"}},
		{"negative ttft slo", func(r *Request) { r.TTFTSLO = -time.Second }, []string{"ttft_slo -1s"}},
		{"dp beyond the slice", func(r *Request) { r.TP = 4; r.DP = 3 }, []string{"data_parallel_size 3", "1 to 2 replicas"}},
		{"negative dp", func(r *Request) { r.DP = -1 }, []string{"data_parallel_size -1"}},
		{"all rows of a dense model", func(r *Request) { r.MoEAllRows = true }, []string{"moe_all_rows true", "no experts"}},
		{"mla tp", func(r *Request) { r.Model = lookupT(t, "deepseek3-671b"); r.MaxModelLen = 4096; r.TP = 3 }, []string{"tensor_parallel_size 3", "latent attention", "256 experts"}},
	} {
		r := base
		c.edit(&r)
		_, err := NewRequest(r)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.name, err, w)
			}
		}
		if !strings.HasPrefix(err.Error(), "inference: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q is not one line naming the package", c.name, err)
		}
	}
}

func lookupT(t testing.TB, name string) model.Spec { return lookup(t, name) }

func FuzzParseDtype(f *testing.F) {
	for _, s := range []string{"bf16", "FP8", " int8 ", "fp16", ""} {
		f.Add("weights", s)
		f.Add("kv_cache_dtype", s)
	}
	f.Fuzz(func(t *testing.T, field, s string) {
		d, err := ParseDtype(field, s)
		if err != nil {
			return
		}
		if d2, err := ParseDtype(field, string(d)); err != nil || d2 != d {
			t.Errorf("ParseDtype(%q) = %q, reparsed %q, %v", s, d, d2, err)
		}
		if d.Bytes() != 1 && d.Bytes() != 2 {
			t.Errorf("%s: %d bytes", d, d.Bytes())
		}
	})
}

// TestAtRate: the concurrency under a rate is Little's law at the mean
// step with the arriving prompts' chunks, N = ⌈rate × (TTFT + output ×
// MeanStep)⌉, and that mean step is longer than the decode-only step at
// the same batch (Estimate's ITL at N), which a step carrying a chunk of
// a 1024-token prompt only lengthens: so N is above the least N with
// N ≥ rate × (TTFT + output × ITL(N)), the decode-only fixed point.
func TestAtRate(t *testing.T) {
	r := request(t)
	r.RequestRate = 2
	r, err := NewRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	decodeOnly := func(n int) (float64, time.Duration) {
		q := r
		q.Concurrency = n
		l := Estimate(q, 8, 1)
		return r.RequestRate * (l.TTFT.Seconds() + float64(r.OutputLen)*l.ITL.Seconds()), l.ITL
	}
	l := AtRate(r, 8, 1)
	n := l.Concurrency
	little := r.RequestRate * (l.LoadTTFT.Mean.Seconds() + float64(r.OutputLen)*l.MeanStep.Seconds())
	if !l.Fits || n != int(math.Ceil(little)) || math.Abs(l.MeanSeqs-little) > 1e-6*little {
		t.Errorf("AtRate(2/s) = %d sequences, mean %.3f (fits %v); rate × (TTFT at the load %v + output × mean step %v) = %.3f", n, l.MeanSeqs, l.Fits, l.LoadTTFT.Mean, l.MeanStep, little)
	}
	least := 1
	for need, _ := decodeOnly(least); float64(least) < need; need, _ = decodeOnly(least) {
		least = int(math.Ceil(need))
	}
	if _, itl := decodeOnly(n); l.MeanStep <= itl || n <= least {
		t.Errorf("AtRate(2/s): mean step %v at %d sequences, decode-only %v; decode-only fixed point %d; want the mixed step and its N above them", l.MeanStep, n, itl, least)
	}
	r.RequestRate = 1e5
	if l := AtRate(r, 8, 1); l.Fits {
		t.Errorf("100000 requests/s fit on one tpu7x-8 VM at %d sequences", l.Concurrency)
	}
}

// TestKVCacheDtypes: every value of vLLM's CacheDType literal, as
// testdata/vllm_kv_cache_dtypes.txt lists it from vLLM's source, is either
// accepted with the format listed beside it or refused; and every value
// shardlab accepts is one vLLM defines.
func TestKVCacheDtypes(t *testing.T) {
	data, err := os.ReadFile("testdata/vllm_kv_cache_dtypes.txt")
	if err != nil {
		t.Fatal(err)
	}
	vllm := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != 2 {
			t.Fatalf("line %q: want a value and a format or -", line)
		}
		vllm[f[0]] = true
		got, err := ParseKVCacheDtype(f[0])
		switch {
		case f[1] == "-" && err == nil:
			t.Errorf("ParseKVCacheDtype(%q) = %s, want refused", f[0], got)
		case f[1] != "-" && (err != nil || string(got) != f[1]):
			t.Errorf("ParseKVCacheDtype(%q) = %q, %v; want %s", f[0], got, err, f[1])
		}
	}
	for _, v := range KVCacheDtypes {
		if !vllm[v] {
			t.Errorf("KVCacheDtypes has %q, which vLLM's CacheDType lacks", v)
		}
	}
}

// TestKVCacheDtypeRequest: a request given vLLM's value keeps it and
// stores the KV cache in its format (auto and bfloat16: 2 bytes an element
// for a bf16 model; the fp8 formats: 1); one given only a format gets the
// value that stores it.
func TestKVCacheDtypeRequest(t *testing.T) {
	for _, c := range []struct {
		given   string
		kv      Dtype
		want    string
		element int
	}{
		{"auto", "", "auto", 2},
		{"bfloat16", "", "bfloat16", 2},
		{"fp8", "", "fp8", 1},
		{"fp8_e4m3", "", "fp8_e4m3", 1},
		{"fp8_e5m2", "", "fp8_e5m2", 1},
		{"", BF16, "auto", 2},
		{"", FP8, "fp8", 1},
	} {
		r := request(t)
		r.KVCacheDtype, r.KVCache = c.given, c.kv
		got, err := NewRequest(r)
		if err != nil {
			t.Errorf("kv %q/%q: %v", c.given, c.kv, err)
			continue
		}
		if got.KVCacheDtype != c.want || got.KVCache.Bytes() != c.element {
			t.Errorf("kv %q/%q: KVCacheDtype %q, %d bytes an element; want %q, %d", c.given, c.kv, got.KVCacheDtype, got.KVCache.Bytes(), c.want, c.element)
		}
	}
}

// TestMaxNumSeqs: with vLLM's max_num_seqs every layout runs that many
// sequences a replica (what vllm serve --max-num-seqs sets), so its
// concurrency is that times its replicas.
func TestMaxNumSeqs(t *testing.T) {
	r := request(t)
	r.MaxNumSeqs = 24
	r, p := searched(t, r)
	for _, l := range p.Layouts {
		if l.SeqsEach != 24 || l.Concurrency != 24*l.DP {
			t.Errorf("TP %d DP %d: %d sequences a replica, %d in all; want 24, %d", l.TP, l.DP, l.SeqsEach, l.Concurrency, 24*l.DP)
		}
	}
	// max_num_seqs caps the scheduler and reserves no pages: the most a
	// replica may run fits, preempting
	r.MaxNumSeqs, r.MaxNumBatchedTokens = MaxConcurrency, MaxConcurrency
	if p, err := Search(r); err != nil || !p.Best.Preempts || !strings.Contains(strings.Join(p.Warnings, "\n"), "preemption") {
		t.Errorf("%d sequences a replica: %v, preempts %v, warnings %q; want a plan warning of preemption", MaxConcurrency, err, p.Best.Preempts, p.Warnings)
	}
}

// TestSchedulerBudget: vLLM refuses max_num_batched_tokens below
// max_num_seqs (SchedulerConfig.verify_max_model_len, vllm/config/scheduler.py
// @1f8758d584e8), so Search refuses a budget below the max_num_seqs of the
// chosen layout's schedulers: Llama 3 70B on tpu7x-8 at 64 sequences
// chooses TP 8 × DP 1, one scheduler of 64; DeepSeek V3 on tpu7x-16 at
// max_num_seqs 64 runs TP 16 as 16 attention-DP schedulers of 64 each,
// each built from the same scheduler config ("Per-rank limits:
// max_seqs=", tpu_inference/core/sched/dp_scheduler.py:525-532
// @b8692ff0 [ti-dps]), so the budget is checked against 64, not 64/16.
func TestSchedulerBudget(t *testing.T) {
	ds := request(t)
	ds.Model, ds.Slice, ds.MaxModelLen, ds.Weights, ds.MaxNumSeqs = lookupT(t, "deepseek3-671b"), slice(t, "tpu7x-16"), 4096, FP8, 64
	for _, c := range []struct {
		name   string
		r      Request
		budget int
		want   string // "" accepted, else the least budget the error names
	}{
		{"70b at its max_num_seqs", request(t), 64, ""},
		{"70b one below", request(t), 63, "64 to 2097152"},
		{"70b one token", request(t), 1, "64 to 2097152"},
		{"deepseek a rank's 64", ds, 64, ""},
		{"deepseek below a rank's", ds, 63, "64 to 2097152"},
	} {
		r := c.r
		r.MaxNumBatchedTokens = c.budget
		r, err := NewRequest(r)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		p, err := Search(r)
		var fe *FieldError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: budget %d refused: %v", c.name, c.budget, err)
		case c.want == "" && p.Best.SchedulerSeqs() > c.budget:
			t.Errorf("%s: budget %d accepted for %d sequences a scheduler", c.name, c.budget, p.Best.SchedulerSeqs())
		case c.want != "" && (!errors.As(err, &fe) || fe.Field != "max_num_batched_tokens" || !strings.Contains(fe.Want, c.want) || !strings.Contains(fe.Want, "max_num_seqs")):
			t.Errorf("%s: budget %d: %v, want a max_num_batched_tokens error accepting %s", c.name, c.budget, err, c.want)
		}
	}
}

// TestPrefillChunks: the scheduler gives a prompt at most
// max_num_batched_tokens tokens a step, so Estimate's TTFT is
// ⌈prompt / budget⌉ steps, each at its roofline plus the step's fixed
// time (to the nanosecond each step's terms are truncated to). Derived
// by hand for Llama 3 8B at TP 1 on one v6e chip (no all-reduce):
//   - a 64-token prompt in a budget of 16 is 4 steps of 16 tokens, each
//     bound by HBM (16 tokens are 16 × 2 × 8e9 ≈ 2.6e11 FLOPs, 0.3 ms at
//     918 TFLOP/s, against 16 GB of weights at 1.6 TB/s, ~10 ms): TTFT =
//     4 × (WeightBytes / HBM bandwidth + StepOverhead);
//   - an 8192-token prompt in a budget of 4096 is 2 compute-bound steps
//     (4096 tokens ≈ 6.6e13 FLOPs, 71 ms) whose FLOPs are the one step's
//     of a budget of 8192: the second chunk's 4096 queries attend the
//     first's 4096 keys and half their own, 4096² + 4096²/2, with the
//     first's 4096²/2 the 8192²/2 of one step; so the TTFT is one step
//     overhead more.
func TestPrefillChunks(t *testing.T) {
	base := Request{Model: lookupT(t, "llama3-8b"), Slice: slice(t, "v6e-1"), MaxModelLen: 8192 + 1,
		Concurrency: 1, PromptLen: 64, OutputLen: 1, MemoryUtilization: 0.9, MaxNumBatchedTokens: 16}
	base.Model.SeqLen, base.Model.MaxPositions = 8192+1, 8192+1
	r, err := NewRequest(base)
	if err != nil {
		t.Fatal(err)
	}
	l := Estimate(r, 1, 1)
	c := r.Slice.Chip
	step := float64(WeightBytes(r.Model, 1, BF16))/float64(c.HBMBandwidth) + StepOverhead(VLLM).Seconds()
	if got, want := l.TTFT.Seconds(), 4*step; l.PrefillSteps != 4 || math.Abs(got-want) > 1e-8 {
		t.Errorf("64 tokens in a budget of 16: TTFT %v in %d steps, want 4 × %.6f s = %.6f s", l.TTFT, l.PrefillSteps, step, want)
	}
	r.MaxNumBatchedTokens = 64
	if one := Estimate(r, 1, 1); one.PrefillSteps != 1 || math.Abs(one.TTFT.Seconds()-step) > 1e-8 {
		t.Errorf("64 tokens in a budget of 64: TTFT %v in %d steps, want 1 × %.6f s", one.TTFT, one.PrefillSteps, step)
	}
	r.PromptLen, r.MaxNumBatchedTokens = 8192, 8192
	whole := Estimate(r, 1, 1)
	r.MaxNumBatchedTokens = 4096
	halves := Estimate(r, 1, 1)
	diff := halves.TTFT - whole.TTFT
	if whole.PrefillSteps != 1 || halves.PrefillSteps != 2 || halves.PrefillAllReduce != 0 ||
		(diff-StepOverhead(VLLM)).Abs() > 2*time.Nanosecond || (halves.PrefillCompute-whole.PrefillCompute).Abs() > 2*time.Nanosecond {
		t.Errorf("8192 tokens: budget 4096 TTFT %v (compute %v, %d steps), budget 8192 TTFT %v (compute %v, %d steps); want the same compute and one step overhead (%v) more",
			halves.TTFT, halves.PrefillCompute, halves.PrefillSteps, whole.TTFT, whole.PrefillCompute, whole.PrefillSteps, StepOverhead(VLLM))
	}
}

// TestSingleHostVM: v6e's ct6e-standard-4t VM holds 4 chips, but v6e-8
// is also one ct6e-standard-8t VM ([gcp-v6e]: "optimized for inference";
// hw.Chip.SingleHost), which the v6e-8 serving recipes run on: a layout
// of all 8 devices is planned as one host, not warned of as multi-host;
// on v6e-16 16 devices span hosts (and no 8t is claimed).
func TestSingleHostVM(t *testing.T) {
	for _, c := range []struct {
		tpu      string
		oneHost  bool
		reasonVM bool
	}{{"v6e-8", true, true}, {"v6e-4", true, false}, {"v6e-16", false, false}} {
		r := request(t)
		r.Slice = slice(t, c.tpu)
		r.Model, _ = model.Lookup("llama3-8b")
		_, p := searched(t, r)
		all := strings.Join(p.Warnings, "\n")
		reasons := strings.Join(p.Reasons, "\n")
		if multi := strings.Contains(all, "span"); multi == c.oneHost {
			t.Errorf("%s with %d devices: warnings %q, want one host %v", c.tpu, p.Best.Devices(), all, c.oneHost)
		}
		if vm := strings.Contains(reasons, "one ct6e-standard-8t VM (8 chips)"); vm != c.reasonVM {
			t.Errorf("%s: reasons %q, want the 8-chip VM named %v", c.tpu, reasons, c.reasonVM)
		}
	}
}

// searched is NewRequest(r) and its plan, failing the test on either's
// error.
func searched(t testing.TB, r Request) (Request, Plan) {
	t.Helper()
	r, err := NewRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	return r, p
}

// TestAtRateThroughput: under an offered rate a layout that keeps up
// serves what is offered and no more. By hand: 2 requests/s of 1024
// output tokens each are 2 × 1024 = 2048 output tokens/s, 512 a chip on
// the 4 chips of tpu7x-8, on every layout that keeps up (whatever its
// concurrency rounds up to). With every layout on the same chips and the
// same throughput, the throughput objective takes the least ITL.
func TestAtRateThroughput(t *testing.T) {
	r := request(t)
	r.RequestRate = 2
	r, err := NewRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, l := range p.Layouts {
		if !l.Fits {
			continue
		}
		kept++
		if l.TokensPerSecond != 2048 || l.PerChip != 512 {
			t.Errorf("TP %d × DP %d at 2 requests/s of 1024 tokens: %g output tokens/s (%g a chip), want 2048 (512)", l.TP, l.DP, l.TokensPerSecond, l.PerChip)
		}
		if l.ITL < p.Best.ITL {
			t.Errorf("chose TP %d × DP %d (ITL %v) over TP %d × DP %d (ITL %v), which serves the same load on as many chips", p.Best.TP, p.Best.DP, p.Best.ITL, l.TP, l.DP, l.ITL)
		}
	}
	if kept < 2 {
		t.Errorf("%d layouts keep up with 2 requests/s on tpu7x-8, want at least 2 for the tie", kept)
	}
}
