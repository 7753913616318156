package maxtext

import (
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"shardlab/model"
)

// splashRules reads testdata/splash-rules.txt: MaxText's own text of the
// splash kernels' block sizes and the checks that raise on them at
// e591f30c, as extracted.
func splashRules(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/splash-rules.txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// splashSources are the lines of the excerpt the transcription below
// follows, each found in it as MaxText writes it.
var splashSources = []string{
	"block_q=min(self.block_q, query.shape[2]),",
	"block_kv_compute=min(self.block_kv_compute, key.shape[2]),",
	"block_kv_dq=None if self.use_fused_bwd_kernel else min(self.block_kv_dq, query.shape[2]),",
	"or (self.attention_kernel == \"autoselected\" and length < 128)",
	"elif self.attention_kernel in (\"flash\", \"autoselected\"):",
	"### jax: splash_attention_kernel.py 39-40\nNUM_LANES = 128\n",
	"    raise ValueError(f\"{bkv=} must be a multiple of {bkv_compute=}.\")",
	"  if bkv_compute % NUM_LANES:\n    raise ValueError(f\"{bkv_compute=} must be a multiple of {NUM_LANES}.\")",
	"(_splash_attention_bwd_dq)\n  if bkv % NUM_LANES:\n    raise ValueError(f\"{bkv=} must be a multiple of {NUM_LANES}.\")",
	"if self.attention_type == AttentionType.COMPRESSED and (",
	"mask_shape = (query.shape[2], key.shape[2])  # (q_seq_len, kv_seq_len)",
	"q_seq_len_per_shard = q_seq_len // context_parallel_size",
	"block_q = min(config.sa_block_q, q_seq_len_per_shard)",
	"block_q_dkv = min(config.sa_block_q_dkv, q_seq_len_per_shard)",
	"if config.context_parallel_load_balance and block_q_dkv % tokamax_splash_kernel.NUM_LANES != 0:",
	"q_blocks_count, q_mod = divmod(q_seq_len, q_block_size)",
	"q_seq_len_per_shard, mod = divmod(q_seq_len, q_seq_shards)",
	"q_blocks_per_shard, mod = divmod(q_seq_len_per_shard, q_block_size)",
}

// excerptInt reads key's integer from the excerpt's "key: N" or
// "key = N" lines, which must agree where there are several (NUM_LANES,
// JAX's kernel's and Tokamax's).
func excerptInt(t *testing.T, src, key string) int {
	t.Helper()
	ms := regexp.MustCompile(`(?m)^`+key+`(?:: | = )(\d+)$`).FindAllStringSubmatch(src, -1)
	if ms == nil {
		t.Fatalf("testdata/splash-rules.txt has no %s", key)
	}
	n, _ := strconv.Atoi(ms[0][1])
	for _, m := range ms[1:] {
		if m[1] != ms[0][1] {
			t.Fatalf("testdata/splash-rules.txt has %s %s and %s", key, ms[0][1], m[1])
		}
	}
	return n
}

// excerptBool reads key's "key: true" or "key: false" line.
func excerptBool(t *testing.T, src, key string) bool {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + key + `: (true|false)$`).FindStringSubmatch(src)
	if m == nil {
		t.Fatalf("testdata/splash-rules.txt has no %s", key)
	}
	return m[1] == "true"
}

// transcribedSplash is whether MaxText's flash attention raises for a
// causal sequence of seq tokens over context cp (at most 1: none), the
// excerpt's lines followed one by one with its block sizes, lane count
// and fused-backward key: a second implementation of FlashBlocks.
// Without context JAX's kernel runs with blocks of min(sa_block_*, seq)
// (create_sa_config): its forward needs the key/value compute block a
// multiple of the lanes, as does its dq backward (not fused) its
// key/value block, and its mask is the unpadded sequence, one shard.
// With context (the load-balanced ring export writes) the blocks are of
// min(sa_block_q, seq // cp), the dkv block must be a multiple of the
// lanes, and the mask of seq tokens is processed over cp shards.
func transcribedSplash(block, lanes, seq, cp int, fused bool) bool {
	shards, blockQ := 1, min(block, seq)
	if cp > 1 {
		perShard := seq / cp // Python's //
		shards, blockQ = cp, min(block, perShard)
		if blockQ == 0 {
			return true // divmod by zero raises
		}
		if blockQ%lanes != 0 { // block_q_dkv, clamped the same
			return true
		}
	} else {
		// block_kv, block_kv_compute; _splash_attention_forward
		bkv, bkvCompute := min(block, seq), min(block, seq)
		if bkv%bkvCompute != 0 || bkvCompute%lanes != 0 {
			return true
		}
		// block_kv_dq (None when fused); _splash_attention_bwd_dq
		if bkvDQ := min(block, seq); !fused && bkvDQ%lanes != 0 {
			return true
		}
	}
	if seq%blockQ != 0 { // q_mod
		return true
	}
	if seq%shards != 0 {
		return true
	}
	return (seq/shards)%blockQ != 0
}

// TestFlashBlocksAgainstTranscription: over every sequence to 20,000
// tokens and context sizes 1 to 16, FlashBlocks refuses exactly what the
// transcription of MaxText's kernels raises on, with the excerpt's own
// block size and lanes (which the package's constants must equal).
func TestFlashBlocksAgainstTranscription(t *testing.T) {
	src := splashRules(t)
	for _, s := range splashSources {
		if !strings.Contains(src, s) {
			t.Errorf("testdata/splash-rules.txt has no %q", s)
		}
	}
	block, lanes := excerptInt(t, src, "sa_block_q"), excerptInt(t, src, "NUM_LANES")
	if block != SplashBlock || lanes != splashLanes {
		t.Fatalf("SplashBlock %d, lanes %d; MaxText's sa_block_q %d, NUM_LANES %d", SplashBlock, splashLanes, block, lanes)
	}
	fused := excerptBool(t, src, "sa_use_fused_bwd_kernel")
	for _, key := range []string{"sa_block_kv", "sa_block_kv_compute", "sa_block_q_dkv", "sa_block_kv_dkv", "sa_block_kv_dkv_compute", "sa_block_q_dq", "sa_block_kv_dq"} {
		if n := excerptInt(t, src, key); n != block {
			t.Errorf("%s %d, want sa_block_q's %d: FlashBlocks reads one block for all", key, n, block)
		}
	}
	refused := 0
	for _, cp := range []int{1, 2, 4, 6, 8, 16} {
		for seq := 1; seq <= 20000; seq++ {
			want := transcribedSplash(block, lanes, seq, cp, fused)
			err := FlashBlocks("flash", seq, cp)
			if got := err != nil; got != want {
				t.Fatalf("FlashBlocks(flash, %d, %d) = %v; MaxText's kernels raise: %v", seq, cp, err, want)
			}
			if err != nil {
				refused++
			}
			if err := FlashBlocks("dot_product", seq, cp); err != nil {
				t.Fatalf("FlashBlocks(dot_product, %d, %d) = %v, want nil: dot_product has no blocks", seq, cp, err)
			}
		}
	}
	if refused == 0 {
		t.Error("no sequence refused: the grid tests nothing")
	}
}

// TestFlashBlocks: the review's cases (review170 finding 2) and the
// ring's, each with the words a refusal gives.
func TestFlashBlocks(t *testing.T) {
	for _, tt := range []struct {
		seq, cp int
		want    string // "" for accepted
	}{
		{8192, 1, ""}, {512, 1, ""}, {384, 1, ""}, {128, 1, ""}, {1024, 1, ""},
		{12000, 1, "max_target_length 12000: MaxText's flash attention (JAX's splash kernel) cuts the sequence into blocks of min(512, max_target_length) tokens"},
		{12000, 1, "needs its key/value blocks a multiple of 128 (the kernel's lanes), so it needs it a multiple of 512, or exactly 128, 256 or 384 (such as 11776 or 12288)"},
		{768, 1, "(such as 512 or 1024)"},
		{513, 1, "(such as 512 or 1024)"},
		// review178 finding 1: JAX's kernel raises "bkv_compute=300 must
		// be a multiple of 128"
		{300, 1, "max_target_length 300: "}, {300, 1, "(such as 256 or 384)"},
		{200, 1, "(such as 128 or 256)"}, {64, 1, "(such as 128 or 256)"}, {500, 1, "(such as 384 or 512)"},
		{8192, 4, ""}, {768, 2, ""}, {1024, 8, ""}, {131072, 128, ""},
		{12000, 4, "max_target_length / context_parallel_size = 12000 / 4 = 3000 tokens"},
		{12000, 4, "it needs it a multiple of 4 x 512 = 2048, or exactly 512, 1024 or 1536 (shares of 128, 256 or 384)"},
		{800, 2, "= 800 / 2 = 400 tokens"},
		{100, 8, "context_parallel_size 8, which does not divide it"},
	} {
		err := FlashBlocks("flash", tt.seq, tt.cp)
		var fe *FlashError
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("FlashBlocks(flash, %d, %d) = %v, want nil", tt.seq, tt.cp, err)
		case tt.want != "" && (!errors.As(err, &fe) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("FlashBlocks(flash, %d, %d) = %v, want a *FlashError saying %q", tt.seq, tt.cp, err, tt.want)
		}
	}
}

// TestRingRefusesUnblockedShares: the ring's check names
// max_target_length where each device's share does not cut into the
// kernel's blocks, after the config's rules (seq 12000 over context 4
// passes types.py's 4 x 4, then the kernel refuses its 3000-token
// shares).
func TestRingRefusesUnblockedShares(t *testing.T) {
	llama, _ := model.Lookup("llama3-8b")
	r := Ring{Context: 4, Tensor: 1, Seq: 12000, Attention: "flash", Model: llama, Block: "llama2"}
	var re *RingError
	if err := r.Check(); !errors.As(err, &re) || re.Key != MaxTargetLength || re.Value != "12000" || !strings.Contains(err.Error(), "MaxText's ring cuts each device's share") {
		t.Errorf("%s: Check = %v, want a *RingError on max_target_length 12000 saying the ring cuts each share", show(r), err)
	}
	r.Seq = 12288
	if err := r.Check(); err != nil {
		t.Errorf("%s: Check = %v, want nil (3072-token shares)", show(r), err)
	}
}
