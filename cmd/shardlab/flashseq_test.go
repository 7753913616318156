package main

import (
	"strconv"
	"strings"
	"testing"
)

// TestFlashSequence: MaxText's flash attention cuts the sequence into
// 512-token splash blocks and pads none (review170 finding 2: a --seq
// 12000 config failed on its first step, q_block_size=512 should divide
// q_seq_len=12000). export maxtext refuses such a sequence with exit 2,
// naming --seq, its value and what is accepted, as it does 300, which
// JAX's kernel refuses for a key/value block of no multiple of 128
// (review178 finding 1); 8192, 512 and 256 still export; plan --verify
// gives no compile for it and says why.
func TestFlashSequence(t *testing.T) {
	job := []string{"--model", "llama3-8b", "--tpu", "v5p-128"}
	for _, seq := range []int{8192, 512, 256} {
		args := append([]string{"export", "maxtext", "--seq", strconv.Itoa(seq)}, job...)
		out, errOut, code := runCmd(args...)
		if code != 0 || !strings.Contains(out, "max_target_length: "+strconv.Itoa(seq)+"\n") || !strings.Contains(out, "attention: 'flash'") {
			t.Errorf("shardlab %s: exit %d (want 0 and a flash config), stderr %q", strings.Join(args, " "), code, errOut)
		}
	}
	for _, c := range []struct{ seq, near string }{{"12000", "11776 or 12288"}, {"768", "512 or 1024"}, {"300", "256 or 384"}} {
		fail(t, append([]string{"export", "maxtext", "--seq", c.seq}, job...),
			"export maxtext: --seq "+c.seq+": MaxText's flash attention", "a multiple of 512, or exactly 128, 256 or 384 (such as "+c.near+")", "--attention dot_product")
	}
	out, errOut, code := runCmd(append([]string{"plan", "--verify", "--top", "1", "--seq", "12000"}, job...)...)
	if code != 0 || !strings.Contains(out, "Verify: MaxText cannot compile this plan as it is (export: maxtext: max_target_length 12000; MaxText's flash attention") ||
		strings.Contains(out, "pre_train.train_compile") || !strings.Contains(out, "so MaxText cannot run this plan, and an export to MaxText refuses it: pass such a --seq, or --attention dot_product") {
		t.Errorf("plan --verify --seq 12000: exit %d %s, want a warning, no compile and why:\n%s", code, errOut, out)
	}
}
