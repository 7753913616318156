package inference

import (
	"testing"

	"shardlab/hw"
	"shardlab/model"
)

// TestKernelBlocks holds the kernel's default blocks [ti-rpa3] to
// hand-worked cases of get_default_block_sizes.
func TestKernelBlocks(t *testing.T) {
	llama70, _ := model.Lookup("llama3-70b")
	coder, _ := model.Lookup("qwen3-coder-480b-a35b")
	llama7, _ := model.Lookup("llama2-7b")
	for _, c := range []struct {
		name            string
		g               hw.Generation
		m               model.Spec
		tp, page, mml   int
		wantQ, wantKeys int
	}{
		// 64 heads, 8 KV heads over 8 devices: 8 query heads a KV head; 1024/8; max_kv 2048, 512 ≤ 1024
		{"v6e llama3-70b tp8", hw.V6e, llama70, 8, 128, 2048, 128, 512},
		// 96 heads, 8 KV heads over 8: 12 a KV head, rounded up to 16; 2048/16 on v7
		{"tpu7x coder tp8", hw.TPU7x, coder, 8, 256, 10240, 128, 512},
		// 32 heads, 32 KV heads at TP 1: 1 a KV head; max_kv 512: keys align(256, 32) = 256
		{"v5e llama2-7b tp1", hw.V5e, llama7, 1, 32, 512, 1024, 256},
		// a page of 256 and max_kv 300 -> 512: align(256, 256) = 256
		{"page rounding", hw.V6e, llama7, 1, 256, 300, 1024, 256},
		{"v4 has no default", hw.V4, llama7, 1, 32, 512, 0, 0},
	} {
		q, k := kernelBlocks(c.g, c.m, c.tp, c.page, c.mml)
		if q != c.wantQ || k != c.wantKeys {
			t.Errorf("%s: kernelBlocks = %d, %d, want %d, %d", c.name, q, k, c.wantQ, c.wantKeys)
		}
	}
}

// TestPrefillKernel: the kernel's pairs and KV reads for a chunk, by
// hand and against a second, per-query-row count.
func TestPrefillKernel(t *testing.T) {
	// 8192 new tokens, none before, query blocks of 128, keys by 512:
	// block i (1..64) attends 128·i keys, computed in ceil(128i/512)
	// blocks of 512: pairs 128·512·Σceil(i/4) = 65536·4·(1+…+16) =
	// 35,651,584 (exact causal: 33,558,528); KV read 128·Σi = 266,240.
	if p, kv := prefillKernel(0, 8192, 128, 512, 0); p != 35651584 || kv != 266240 {
		t.Errorf("prefillKernel(0, 8192, 128, 512, 0) = %v, %v, want 35651584, 266240", p, kv)
	}
	// a chunk of 100 after 900: one query block, effective 1000 keys,
	// computed in 2 blocks of 512, 128 rows: 131072 pairs; 1000 read
	if p, kv := prefillKernel(900, 100, 128, 512, 0); p != 131072 || kv != 1000 {
		t.Errorf("prefillKernel(900, 100, 128, 512, 0) = %v, %v, want 131072, 1000", p, kv)
	}
	// second implementation: walk the blocks of bq query rows one by one
	for _, c := range [][4]int{{0, 1000, 32, 256}, {37, 513, 64, 128}, {4096, 2, 128, 512}, {0, 5, 256, 256}} {
		cc, n, bq, bkv := c[0], c[1], c[2], c[3]
		var pairs, kv float64
		for start := 0; start < n; start += bq {
			eff := min(cc+n, cc+start+bq)
			cols := 0
			for k := 0; k < eff; k += bkv {
				cols += bkv
			}
			pairs += float64(bq * cols)
			kv += float64(eff)
		}
		if p, k := prefillKernel(cc, n, bq, bkv, 0); p != pairs || k != kv {
			t.Errorf("prefillKernel%v = %v, %v, want %v, %v", c, p, k, pairs, kv)
		}
		if exact := float64(n) * (float64(cc) + float64(n+1)/2); pairs < exact {
			t.Errorf("prefillKernel%v computes %v pairs, fewer than the %v causal ones", c, pairs, exact)
		}
	}
}
