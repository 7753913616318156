package inference

import (
	"math/rand/v2"
	"testing"
	"time"

	"shardlab/hw"
	"shardlab/model"
	"shardlab/unit"
)

// gemma4Request is the tpu-inference daily benchmark's Gemma 4 31B server
// on tpu7x-8 (.buildkite/benchmark/cases/daily/Gemma4-31B-*.json
// @b8692ff0: TP 2 × DP 4, fp8 weights and KV, max_model_len 2048, a
// budget of 4096 tokens, 1024 in and 500 out), at maxLen and a model
// whose window is window.
func gemma4Request(t *testing.T, maxLen, window int) Request {
	t.Helper()
	s, err := hw.ParseAcceleratorType("tpu7x-8")
	if err != nil {
		t.Fatal(err)
	}
	m := lookup(t, "gemma4-31b")
	m.SlidingWindow = window
	r, err := NewRequest(Request{Model: m, Slice: s, MaxModelLen: maxLen, Concurrency: 64, PromptLen: maxLen / 2, OutputLen: maxLen / 4,
		Weights: FP8, KVCache: FP8, MemoryUtilization: 0.9, MaxNumBatchedTokens: 4096, TP: 2})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestWindowKVBytesByHand [ti-kv, ti-swa]: Gemma 4 31B's 50 local layers
// each cache 16 KV heads of 256 and its 10 global layers 4 KV heads of
// 512, keys and values both (the global layers' keys are their values,
// but the cache holds both). bf16 at TP 1: a local row of 32 elements is
// 16 words of 2, 16·2·256·2 = 16,384 bytes, ×50 = 819,200; a global row
// of 8 elements 4 words, 4·2·512·2 = 8,192, ×10 = 81,920: 901,120 bytes
// (880 KiB). fp8 at TP 4: a local layer 4 heads, 8 elements in 2 words of
// 4, 2·4·256 = 2,048, ×50 = 102,400; a global layer one head (4 over 4),
// 2 elements in one word, 4·512 = 2,048, ×10 = 20,480: 122,880. At TP 8
// a local layer's 2 heads fill one word, 4·256 = 1,024, ×50 = 51,200, and
// the global layers' 4 heads still give each device one: 71,680.
func TestWindowKVBytesByHand(t *testing.T) {
	m := lookup(t, "gemma4-31b")
	for _, c := range []struct {
		tp   int
		kv   Dtype
		want unit.Bytes
	}{{1, BF16, 901_120}, {4, FP8, 122_880}, {8, FP8, 71_680}} {
		if got := KVBytesPerToken(m, c.tp, c.kv); got != c.want {
			t.Errorf("KVBytesPerToken(gemma4-31b, TP %d, %s) = %d, want %d", c.tp, c.kv, got, c.want)
		}
	}
	// a sequence within the window reads every token's row in every
	// layer: n × the token's bytes; past it the local layers stop at
	// the window
	for _, n := range []int{1, 100, 1024} {
		if got, want := KVBytes(m, 1, BF16, n), unit.Bytes(n)*901_120; got != want {
			t.Errorf("KVBytes(n %d) = %d, want %d (n × KVBytesPerToken: within the window)", n, got, want)
		}
	}
	for _, n := range []int{1025, 4096, 262144} {
		if got, want := KVBytes(m, 1, BF16, n), unit.Bytes(n)*81_920+1024*819_200; got != want {
			t.Errorf("KVBytes(n %d) = %d, want %d (global layers n tokens, local layers 1024)", n, got, want)
		}
	}
	llama := lookup(t, "llama3-70b")
	if got, want := KVBytes(llama, 8, BF16, 5000), 5000*KVBytesPerToken(llama, 8, BF16); got != want {
		t.Errorf("KVBytes(llama3-70b, 5000) = %d, want %d: no window, every token", got, want)
	}
}

// TestWindowWeightsByHand: Gemma 4 31B's weights on one device at TP 4 in
// bf16. A local layer: queries and output 2·5376·8192/4 = 22,020,096,
// keys and values of the device's 4 heads 2·5376·4·256 = 11,010,048,
// four norms 4·5376 = 21,504; a global layer: queries and output
// 2·5376·16384/4 = 44,040,192, the one key projection (its values are
// its keys) of the device's one head 5376·512 = 2,752,512, norms 21,504;
// the MLP 3·5376·21504/4 = 86,704,128 a layer; the tied embedding
// 262144·5376/4 = 352,321,536 and the final norm 5376.
func TestWindowWeightsByHand(t *testing.T) {
	m := lookup(t, "gemma4-31b")
	local := int64(22_020_096 + 11_010_048 + 21_504 + 86_704_128)
	global := int64(44_040_192 + 2_752_512 + 21_504 + 86_704_128)
	want := unit.Bytes(2 * (50*local + 10*global + 352_321_536 + 5376))
	if got := WeightBytes(m, 4, BF16); got != want {
		t.Errorf("WeightBytes(gemma4-31b, TP 4, bf16) = %d, want %d", got, want)
	}
	if got, want := WeightBytes(m, 1, BF16), unit.Bytes(2*m.ParamCount().Total()); got != want {
		t.Errorf("WeightBytes(TP 1) = %d, want 2 bytes a parameter, %d", got, want)
	}
}

// TestWindowAttentionFLOPs: the attention core of one (query, key) pair,
// 4·H·head a layer (a score and a weighted sum of 2·head each a head):
// 10 global layers of 32 heads of 512 and 50 local layers of 32 of 256.
// A decode query at context 4096 pays the global layers' 4096 keys and
// the local layers' 1024.
func TestWindowAttentionFLOPs(t *testing.T) {
	m := lookup(t, "gemma4-31b")
	global, local := attentionCoreFLOPs(m)
	if global != 10*4*32*512 || local != 50*4*32*256 {
		t.Errorf("attentionCoreFLOPs(gemma4-31b) = %v, %v, want %v, %v", global, local, 10*4*32*512, 50*4*32*256)
	}
	rc := newReplicaCost(gemma4Request(t, 8192, 1024), 2)
	b := Batch{Seqs: 1, PaddedSeqs: 8, Tokens: 1, PaddedTokens: 16, ContextTokens: 4096, AttendedPairs: 4096, DecodeKeys: 4096,
		Window: WindowWork{ContextTokens: 1024, AttendedPairs: 1024, DecodeKeys: 1024}}
	none := b
	none.AttendedPairs, none.Window.AttendedPairs = 0, 0
	// the busiest of TP 2 devices computes half the heads' scores
	if got, want := rc.matmulFLOPs(b)-rc.matmulFLOPs(none), (4096*global+1024*local)/2; got != want {
		t.Errorf("attention FLOPs of a decode query at 4096 = %v, want %v", got, want)
	}
}

// TestWindowWorkByHand: a local layer of window 2 over a prompt of 6
// tokens: keys read 6 (positions 0…5), pairs 1+2+2+2+2+2 = 11. The
// kernel in query blocks of 4 and key blocks of 2 [ti-rpa3, ti-swa]: the
// first block (queries 0…3) starts at key 0 and ends at 4, 4·4 = 16 pairs
// and 4 keys read; the second (queries 4…5, computed whole) starts at
// the block of key 4−2+1 = 3, key 2, and ends at 6: 4·4 = 16 pairs and 4
// keys. A decode query after 10 tokens reads and attends the window's 2.
func TestWindowWorkByHand(t *testing.T) {
	var w WindowWork
	w.add(0, 6, 2, true, 4, 2)
	want := WindowWork{ContextTokens: 6, AttendedPairs: 11, PrefillPairs: 11, KernelPairs: 32, KernelKVTokens: 8, PrefillContext: 6}
	if w != want {
		t.Errorf("add(prompt of 6, window 2) = %+v, want %+v", w, want)
	}
	var d WindowWork
	d.add(10, 1, 2, true, 4, 2)
	if want := (WindowWork{ContextTokens: 2, AttendedPairs: 2, DecodeKeys: 2}); d != want {
		t.Errorf("add(decode after 10, window 2) = %+v, want %+v", d, want)
	}
	if p, kv := prefillKernel(0, 6, 4, 2, 0); p != 40 || kv != 10 {
		t.Errorf("prefillKernel(0, 6, 4, 2, no window) = %v, %v, want 40, 10 (the causal prefix, 4·4 + 4·6 pairs)", p, kv)
	}
}

// TestWindowWithinIsFull: sequences no longer than the window read,
// compute and hold exactly what they would were every layer global (the
// same model with a window past any sequence); past the window the
// decode KV read shrinks to the global layers' context and the local
// layers' window, by hand from the bytes of each kind (TP 2, fp8: a
// local layer 8 heads in 4 words, 4·4·256 = 4,096, ×50 = 204,800; a
// global layer 2 heads in one word, 4·512 = 2,048, ×10 = 20,480).
func TestWindowWithinIsFull(t *testing.T) {
	within, full := Estimate(gemma4Request(t, 1024, 1024), 2, 4), Estimate(gemma4Request(t, 1024, 1<<20), 2, 4)
	if within.ITL != full.ITL || within.TTFT != full.TTFT || within.Memory != full.Memory {
		t.Errorf("max model len 1024, window 1024: ITL %v, TTFT %v, memory %+v; window past it: %v, %v, %+v; want equal",
			within.ITL, within.TTFT, within.Memory, full.ITL, full.TTFT, full.Memory)
	}
	capped, uncapped := Estimate(gemma4Request(t, 8192, 1024), 2, 4), Estimate(gemma4Request(t, 8192, 1<<20), 2, 4)
	if capped.Memory != uncapped.Memory {
		t.Errorf("pages with a window %+v, without %+v: want the same (tpu-inference holds the local layers' pages whole)", capped.Memory, uncapped.Memory)
	}
	// decode at the mean context 4096 + 2048/2 = 5120
	const ctx = 4096 + 1024
	ratio := (20_480*ctx + 204_800*1024.0) / (225_280 * ctx)
	if got := capped.DecodeKV.Seconds() / uncapped.DecodeKV.Seconds(); got < ratio*0.999 || got > ratio*1.001 {
		t.Errorf("decode KV read with the window / without = %.4f, want %.4f", got, ratio)
	}
	if capped.ITL >= uncapped.ITL || capped.TTFT >= uncapped.TTFT {
		t.Errorf("past the window: ITL %v, TTFT %v; every layer global: %v, %v; want less", capped.ITL, capped.TTFT, uncapped.ITL, uncapped.TTFT)
	}
}

// TestWindowKVByLayer checks KVBytes and KVBytesPerToken against a
// second count that walks the layers one by one (model.Spec.IsGlobalLayer)
// and the positions one by one (model.AttendedKeys), for both Gemma 4
// models, at several TP sizes, dtypes and lengths.
func TestWindowKVByLayer(t *testing.T) {
	for _, name := range []string{"gemma4-31b", "gemma4-26b-a4b", "llama3-8b"} {
		m := lookup(t, name)
		for _, tp := range []int{1, 2, 4, 8} {
			for _, kv := range []Dtype{BF16, FP8} {
				var perToken unit.Bytes
				for i := range m.Layers {
					k := m
					if m.IsGlobalLayer(i) {
						k = m.Global()
					}
					perToken += unit.Bytes(kvRow(k, max(k.KV()/tp, 1), kv))
				}
				if got := KVBytesPerToken(m, tp, kv); got != perToken {
					t.Errorf("%s TP %d %s: KVBytesPerToken = %d, layer by layer %d", name, tp, kv, got, perToken)
				}
				for _, n := range []int{1, 1023, 1024, 1025, 3000} {
					var read unit.Bytes
					for i := range m.Layers {
						k, w := m, m.SlidingWindow
						if m.IsGlobalLayer(i) {
							k, w = m.Global(), 0
						}
						row := unit.Bytes(kvRow(k, max(k.KV()/tp, 1), kv))
						for p := range n {
							if w == 0 || p >= n-w { // the last w positions
								read += row
							}
						}
					}
					if got := KVBytes(m, tp, kv, n); got != read {
						t.Errorf("%s TP %d %s n %d: KVBytes = %d, layer by layer and position by position %d", name, tp, kv, n, got, read)
					}
				}
			}
		}
	}
}

// TestWindowKernelBounds: with a window the kernel computes at least the
// window's exact pairs and at most what it computes without one, and
// reads no more keys, for many chunks.
func TestWindowKernelBounds(t *testing.T) {
	for _, c := range []int{0, 1, 100, 1023, 1024, 5000} {
		for _, n := range []int{2, 17, 512, 1024, 3000} {
			for _, w := range []int{1, 64, 1024} {
				p, kv := prefillKernel(c, n, 256, 128, w)
				full, fullKV := prefillKernel(c, n, 256, 128, 0)
				if exact := model.AttendedPairs(c, n, w); p < exact || p > full || kv > fullKV {
					t.Errorf("prefillKernel(%d, %d, 256, 128, window %d) = %v pairs, %v keys; want in [%v, %v] and keys at most %v", c, n, w, p, kv, exact, full, fullKV)
				}
			}
		}
	}
}

// TestSimHandBatchWindow: TestSimHandBatchKernel's first step with keys
// computed 2 at a time and the local layers' window of 3 tokens
// [ti-swa]. Every layer: chunk 0 (6 tokens) is query blocks attending 4
// and 6 keys, 4·4 + 4·6 = 40 pairs, 10 read; chunk 1 (2 tokens) 4·2 = 8
// pairs, 2 read. A local layer: chunk 0 reads keys 0…5 (6) and attends
// 1+2+3+3+3+3 = 15 pairs; the kernel's second query block (queries 4…7)
// starts at the key block of 4−3+1 = 2, so it computes 4·(6−2) = 16
// pairs and reads 4 keys, the first 16 and 4 as before; chunk 1 reads 2
// keys, attends 1+2 = 3 pairs, 8 in the kernel, 2 read.
func TestSimHandBatchWindow(t *testing.T) {
	srv := Server{Engine: VLLM, MaxNumSeqs: 4, MaxNumBatchedTokens: 8, BlockSize: 4, Pages: 100, MaxModelLen: 64, QueryBlock: 4, KeyBlock: 2, Window: 3, WindowQueryBlock: 4}
	var first *Batch
	cost := func(b Batch) time.Duration {
		if first == nil {
			first = &b
		}
		return time.Millisecond
	}
	s, err := NewSim(srv, Load{Mix: FixedMix(6, 3), Concurrency: 3, Requests: 3}, cost, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	s.Step()
	want := Batch{Seqs: 2, PaddedSeqs: 8, Tokens: 8, PaddedTokens: 16, ContextTokens: 8, AttendedPairs: 24,
		PrefillPairs: 24, KernelPairs: 48, KernelKVTokens: 12, PrefillContext: 8,
		Window: WindowWork{ContextTokens: 8, AttendedPairs: 18, PrefillPairs: 18, KernelPairs: 40, KernelKVTokens: 10, PrefillContext: 8}}
	if first == nil || *first != want {
		t.Errorf("first batch %+v, want %+v", first, want)
	}
}

// TestWindowKernelBlocks [ti-rpa3]: on TPU7x at TP 2 a Gemma 4 31B global
// layer has 16 query heads over 2 KV heads, 8 a KV head, so query blocks
// of 2048/8 = 256; a local layer 16 over 8, 2 a KV head, blocks of 1024.
// Keys are computed min(512, 2048/2) = 512 at a time in both.
func TestWindowKernelBlocks(t *testing.T) {
	m := lookup(t, "gemma4-31b")
	if q, k := kernelBlocks(hw.TPU7x, m.Global(), 2, 128, 2048); q != 256 || k != 512 {
		t.Errorf("kernelBlocks(global layer) = %d, %d, want 256, 512", q, k)
	}
	if q, k := kernelBlocks(hw.TPU7x, m, 2, 128, 2048); q != 1024 || k != 512 {
		t.Errorf("kernelBlocks(local layer) = %d, %d, want 1024, 512", q, k)
	}
}

// TestGemma2KVBytesByHand: gemma2-9b's 21 local layers (window 4096) and
// 21 global ones cache 8 KV heads of 256 alike; bf16 at TP 8 a device
// holds one head, a row of 2 elements, 1 word of 2, 1·2·256·2 = 1,024
// bytes a layer: 21,504 bytes a token in each kind, 43,008 in all (the
// serving plan's 42.0 KiB). A 6,656-token sequence reads 6,656 rows in
// a global layer and 4,096 in a local one.
func TestGemma2KVBytesByHand(t *testing.T) {
	m := lookup(t, "gemma2-9b")
	if got := KVBytesPerToken(m, 8, BF16); got != 43_008 {
		t.Errorf("KVBytesPerToken(gemma2-9b, TP 8, bf16) = %d, want 43008", got)
	}
	if got, want := KVBytes(m, 8, BF16, 6656), unit.Bytes(6656*21_504+4096*21_504); got != want {
		t.Errorf("KVBytes(gemma2-9b, 6656) = %d, want %d (global layers 6656 tokens, local layers 4096)", got, want)
	}
}
