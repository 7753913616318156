package export

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"shardlab/cost"
	"shardlab/model"
	"shardlab/plan"
)

// MaxText's context-parallel strategies, read in the MaxText mirror at
// e591f30c: types.py line 4008 accepts these (lower-cased), line 1129
// defaults to all_gather, and base.yml line 1201 lists the same four.
var allowedContextStrategy = []string{"all_gather", "ring", "ulysses", "usp"}

// checkContext holds a config's context parallelism to the rules
// types.py (lines 4004-4066 @e591f30c) applies on TPU when it loads one,
// and to what cost models: ring attention whenever MaxText's context axis
// (ici_context x dcn_context, in JAX devices) is above 1.
func checkContext(t *testing.T, name string, e cost.Estimate, vals map[string]any) {
	t.Helper()
	cps := 1
	for _, k := range []string{"ici_context_parallelism", "dcn_context_parallelism"} {
		if v, ok := vals[k].(int); ok {
			cps *= v
		}
	}
	strategy, written := vals["context_parallel_strategy"]
	if cps <= 1 {
		if written {
			t.Errorf("%s: context_parallel_strategy %v written without a context axis", name, strategy)
		}
		return
	}
	if s, _ := strategy.(string); !slices.Contains(allowedContextStrategy, s) || s != "ring" {
		// absent, MaxText runs its default all_gather, which is not costed
		t.Errorf("%s: context %d with context_parallel_strategy %#v, want %q (cost's ring attention) of MaxText's %q", name, cps, strategy, "ring", allowedContextStrategy)
		return
	}
	// load balancing (base.yml line 1200 defaults it on): written on, as
	// cost divides causal attention evenly; then types.py wants an even
	// size and no MTP
	if vals["context_parallel_load_balance"] != true || cps%2 != 0 || e.Job.Model.MTPLayers > 0 {
		t.Errorf("%s: context_parallel_load_balance %v with context %d and %d MTP layers", name, vals["context_parallel_load_balance"], cps, e.Job.Model.MTPLayers)
	}
	if seq, _ := vals["max_target_length"].(int); seq%(cps*cps) != 0 {
		t.Errorf("%s: max_target_length %d is not a multiple of context_parallel_size squared %d", name, seq, cps*cps)
	}
	if vals["attention"] != "flash" || vals["use_tokamax_splash"] != true || vals["use_jax_splash"] == true {
		t.Errorf("%s: ring on TPU with attention %v, use_tokamax_splash %v, use_jax_splash %v; want flash, true, false", name, vals["attention"], vals["use_tokamax_splash"], vals["use_jax_splash"])
	}
	at, ok := vals["attention_type"]
	if !ok {
		at = "global" // base.yml line 393; no catalog model's config sets another
	}
	if at != "global" && at != "mla" || at == "mla" && vals["packing"] != false {
		t.Errorf("%s: ring with attention_type %v and packing %v (types.py: global or mla, mla without packing)", name, at, vals["packing"])
	}
	// tokamax_ring_attention.validate_head_sharding: K/V heads over tensor
	tensor := 1
	for _, k := range []string{"ici_tensor_parallelism", "dcn_tensor_parallelism"} {
		if v, ok := vals[k].(int); ok {
			tensor *= v
		}
	}
	if e.Job.Model.KV()%tensor != 0 {
		t.Errorf("%s: %d K/V heads over tensor %d", name, e.Job.Model.KV(), tensor)
	}
}

// TestContextStrategyRing: the context-parallel cases write ring, and
// the 70B long-context plan of review 123 #7 too.
func TestContextStrategyRing(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*plan.Options)
	}{
		{"v5p context=2", func(o *plan.Options) {
			o.Model, o.TPU, o.Mesh, o.GlobalBatch = "llama3-8b", "v5p-64", "fsdp=16,context=2", "32"
		}},
		{"llama3-70b 128k on 2 x v5p-128, searched", func(o *plan.Options) {
			o.Model, o.TPU, o.Slices, o.Seq = "llama3-70b", "v5p-128", 2, 131072
		}},
	} {
		p := search(t, tt.edit)
		c, err := MaxText(p)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		checkMaxText(t, tt.name, p, c)
		if got, _ := c.Get("context_parallel_strategy"); got != "ring" {
			t.Errorf("%s: %s: context_parallel_strategy = %#v, want \"ring\"", tt.name, p.Best.Estimate.Mesh, got)
		}
	}
}

// TestContextStrategyRefuses: what MaxText's ring does not run (types.py
// lines 4004-4066 @e591f30c) is refused, naming the setting.
func TestContextStrategyRefuses(t *testing.T) {
	llama, _ := model.Lookup("llama3-8b") // 8 K/V heads
	mtp := llama
	mtp.MTPLayers = 1
	for _, tt := range []struct {
		name        string
		j           cost.Job
		block       string
		ctx, tensor int
		field       string
	}{
		{"odd size", cost.Job{Model: llama, Seq: 8192}, "llama2", 3, 1, "context_parallel_size"},
		// 8192 = 2^13: 128^2 = 2^14 does not divide it, 64^2 = 2^12 does
		{"seq not a multiple of size squared", cost.Job{Model: llama, Seq: 8192}, "llama2", 128, 1, "max_target_length"},
		{"dot_product", cost.Job{Model: llama, Seq: 8192, Settings: cost.Settings{Attention: cost.AttentionDot}}, "llama2", 2, 1, "attention"},
		// attention_op.py line 625: local_sliding and chunk layers refused
		{"gemma2's sliding-window layers", cost.Job{Model: llama, Seq: 8192}, "gemma2", 2, 1, "decoder_block"},
		{"llama4's chunked layers", cost.Job{Model: llama, Seq: 8192}, "llama4", 2, 1, "decoder_block"},
		{"MTP", cost.Job{Model: mtp, Seq: 8192}, "llama2", 2, 1, "mtp_num_layers"},
		{"K/V heads over tensor", cost.Job{Model: llama, Seq: 8192}, "llama2", 2, 16, "ici_tensor_parallelism"},
	} {
		var c MaxTextConfig
		set := func(k string, v any) { c.Settings = append(c.Settings, Setting{k, v}) }
		err := contextParallel(set, &c, tt.j, tt.block, tt.ctx, tt.tensor)
		var ee *Error
		if !errors.As(err, &ee) || ee.Field != tt.field || !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "ring") {
			t.Errorf("%s: contextParallel = %v, want an unsupported %s naming the ring", tt.name, err, tt.field)
		}
		if len(c.Settings) != 0 {
			t.Errorf("%s: refused, yet wrote %v", tt.name, c.Settings)
		}
	}
	var c MaxTextConfig
	set := func(k string, v any) { c.Settings = append(c.Settings, Setting{k, v}) }
	if err := contextParallel(set, &c, cost.Job{Model: llama, Seq: 8192}, "llama2", 64, 8); err != nil {
		t.Errorf("context 64, tensor 8, seq 8192 (64^2 = 4096 divides it): %v", err)
	}
}
