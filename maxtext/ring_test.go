package maxtext

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"shardlab/model"
)

// ringRules reads testdata/ring-rules.txt: MaxText's own text of the
// ring's rules at e591f30c (types.py lines 4004-4066, attention_op.py,
// the decoder blocks' layer types, validate_head_sharding), as extracted.
func ringRules(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/ring-rules.txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// transcribed is MaxText's ring rules, each as its source states the
// condition that raises, transcribed one by one into Go (a second
// implementation of Ring.Check, in MaxText's words and order), and the
// key Check names for it. layerType is the attention_type of the
// block's layers that are not global: gemma2.py line 90 and llama4.py
// line 386 in the excerpt.
var transcribed = []struct {
	source string // the condition as MaxText writes it, found in the excerpt
	key    string
	raises func(r Ring, layerType string) bool
}{
	{"self.max_target_length % (context_parallel_size * context_parallel_size) != 0", MaxTargetLength,
		func(r Ring, _ string) bool { return r.Seq%(r.Context*r.Context) != 0 }},
	{`if self.attention != "flash":`, Attention,
		func(r Ring, _ string) bool { return r.Attention != "flash" }},
	{`if self.attention_type not in (AttentionType.GLOBAL, AttentionType.MLA):`, DecoderBlock,
		func(_ Ring, lt string) bool { return lt != "" && lt != "global" && lt != "mla" }},
	{"if context_parallel_size % 2 != 0:", ContextParallelSize,
		func(r Ring, _ string) bool { return r.Context%2 != 0 }},
	{"if self.mtp_num_layers > 0:", MTPNumLayers,
		func(r Ring, _ string) bool { return r.Model.MTPLayers > 0 }},
	{"if num_kv_heads % kv_head_shards != 0:", "ici_tensor_parallelism",
		func(r Ring, _ string) bool { return r.Model.KV()%r.Tensor != 0 }},
}

// layerTypes are the non-global attention types of MaxText's blocks, as
// the excerpt's model lines set them (and common_types.py spells them).
var layerTypes = map[string]struct{ source, value string }{
	"gemma2": {"attention_type=attentions.AttentionType.LOCAL_SLIDING", "local_sliding"},
	"llama4": {"AttentionType.GLOBAL if self.is_nope_layer else AttentionType.CHUNK", "chunk"},
}

// TestRingRulesAreMaxTexts: each transcribed condition is MaxText's text,
// and Check refuses a job that breaks it alone, naming its key.
func TestRingRulesAreMaxTexts(t *testing.T) {
	src := ringRules(t)
	for _, s := range []string{`LOCAL_SLIDING = "local_sliding"`, `CHUNK = "chunk"`,
		`raise ValueError("TPU Tokamax ring attention supports only attention_type='global' or 'mla'.")`} {
		if !strings.Contains(src, s) {
			t.Errorf("testdata/ring-rules.txt has no %q", s)
		}
	}
	for _, r := range transcribed {
		if !strings.Contains(src, r.source) {
			t.Errorf("the rule %q is not in MaxText's text (testdata/ring-rules.txt)", r.source)
		}
	}
	for _, lt := range layerTypes {
		if !strings.Contains(src, lt.source) {
			t.Errorf("the layer type %q is not in MaxText's text", lt.source)
		}
	}
	llama, _ := model.Lookup("llama3-8b") // 8 K/V heads, no MTP
	ok := Ring{Context: 4, Tensor: 2, Seq: 8192, Attention: "flash", Model: llama, Block: "llama2"}
	if err := ok.Check(); err != nil {
		t.Fatalf("%s: %v, want nil", show(ok), err)
	}
	mtp := llama
	mtp.MTPLayers = 1
	for _, tt := range []struct {
		edit func(*Ring)
		key  string
	}{
		{func(r *Ring) { r.Context = 3; r.Seq = 9 * 1024 }, ContextParallelSize}, // 3^2 divides 9216
		{func(r *Ring) { r.Seq = 8192 + 8 }, MaxTargetLength},                    // 4^2 = 16 does not divide 8200
		{func(r *Ring) { r.Attention = "dot_product" }, Attention},
		{func(r *Ring) { r.Block = "gemma2" }, DecoderBlock},
		{func(r *Ring) { r.Block = "llama4" }, DecoderBlock},
		{func(r *Ring) { r.Model = mtp }, MTPNumLayers},
		{func(r *Ring) { r.Tensor = 16 }, "ici_tensor_parallelism"},
	} {
		r := ok
		tt.edit(&r)
		var re *RingError
		if err := r.Check(); !errors.As(err, &re) || re.Key != tt.key {
			t.Errorf("%s: Check = %v, want a *RingError on %s", show(r), err, tt.key)
		}
	}
}

// TestRingAgainstTranscription: over a grid of jobs, Check accepts
// exactly those that no transcribed MaxText condition refuses.
func TestRingAgainstTranscription(t *testing.T) {
	llama, _ := model.Lookup("llama3-8b")
	gemma, _ := model.Lookup("gemma2-27b")
	mtp := llama
	mtp.MTPLayers = 1
	specs := []struct {
		m     model.Spec
		block string
	}{{llama, "llama2"}, {mtp, "llama2"}, {gemma, "gemma2"}, {llama, "llama4"}, {llama, "deepseek"}, {gemma, ""}}
	n := 0
	for _, s := range specs {
		for _, ctx := range []int{1, 2, 3, 4, 6, 8, 64, 128} {
			for _, tensor := range []int{1, 2, 4, 8, 16} {
				for _, seq := range []int{8192, 4096 + 36, 131072} {
					for _, att := range []string{"flash", "dot_product"} {
						r := Ring{Context: ctx, Tensor: tensor, Seq: seq, Attention: att, Model: s.m, Block: s.block}
						lt := layerTypes[s.block].value
						if s.block == "" && s.m.Windowed() {
							lt = "local_sliding" // a spec's sliding-window layers
						}
						want := ""
						for _, rule := range transcribed {
							if ctx > 1 && rule.raises(r, lt) {
								want = "refused"
							}
						}
						// the kernel's blocks, when it is built
						// (TestFlashBlocksAgainstTranscription)
						if ctx > 1 && att == "flash" && transcribedSplash(SplashBlock, splashLanes, seq, ctx, false) {
							want = "refused"
						}
						got := ""
						if r.Check() != nil {
							got = "refused"
						}
						if got != want {
							t.Errorf("%s (layers %q): Check %q, MaxText's rules %q", show(r), lt, got, want)
						}
						n++
					}
				}
			}
		}
	}
	if n < 1000 {
		t.Errorf("%d jobs checked, want the whole grid", n)
	}
}

// show is r in short, for the errors above.
func show(r Ring) string {
	return fmt.Sprintf("%s (block %q, MTP %d, %d K/V heads) context %d tensor %d seq %d attention %s",
		r.Model.Name, r.Block, r.Model.MTPLayers, r.Model.KV(), r.Context, r.Tensor, r.Seq, r.Attention)
}
