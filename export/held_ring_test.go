package export

import (
	"errors"
	"strings"
	"testing"

	"shardlab/maxtext"
	"shardlab/plan"
)

// ringOfConfig is MaxText's ring rule (maxtext.Ring) on the values a
// config writes: its context and tensor sizes (ici × dcn, in JAX
// devices), max_target_length, attention and the model's block.
func ringOfConfig(t *testing.T, p plan.Plan, vals map[string]any) maxtext.Ring {
	t.Helper()
	size := func(axis string) int {
		n := 1
		for _, k := range []string{maxtext.ICIKey(axis), maxtext.DCNKey(axis)} {
			if v, ok := vals[k].(int); ok {
				n *= v
			}
		}
		return n
	}
	m := p.Best.Estimate.Job.Model
	mt, ok := maxtext.ModelOf(m)
	if !ok {
		t.Fatalf("%s: no MaxText config", m.Name)
	}
	seq, _ := vals["max_target_length"].(int)
	att, _ := vals["attention"].(string)
	return maxtext.Ring{Context: size("context"), Tensor: size("tensor"), Seq: seq, Attention: att, Model: m, Block: mt.Block}
}

// TestMaxTextHeldRunsTheRing: review 128 #2, end to end. Plan's choice for
// gemma2-27b on tpu7x-8 and llama4-maverick on tpu7x-256 puts each chip's
// second JAX device on context, which MaxText's ring refuses for their
// sliding-window and chunked layers (configs/types.py line 4041
// @e591f30c), and export exited 2. The export now holds MaxText's best
// (MaxTextHeld, MaxTextOf, XPKOf), says so, and writes a config that
// MaxText's own rules pass (checkMaxText) with no context the ring
// refuses; plan under the MaxText framework chooses that layout itself,
// and its export is the plan's own.
func TestMaxTextHeldRunsTheRing(t *testing.T) {
	for _, c := range []struct{ model, tpu string }{{"gemma2-27b", "tpu7x-8"}, {"llama4-maverick", "tpu7x-256"}} {
		name := c.model + " on " + c.tpu
		o := plan.DefaultOptions()
		o.Model, o.TPU = c.model, c.tpu
		p := search(t, func(x *plan.Options) { *x = o })
		h, err := MaxTextHeld(o, p, func(mo plan.Options) (plan.Plan, error) { return search(t, func(x *plan.Options) { *x = mo }), nil })
		var xe *Error
		if err != nil || h == nil || !errors.As(h.Refused, &xe) || xe.Field != maxtext.DecoderBlock {
			t.Fatalf("%s: MaxTextHeld = %v, %v; want MaxText's best in place of a plan refused on decoder_block", name, h, err)
		}
		cfg, err := MaxTextOf(p, h)
		if err != nil {
			t.Fatalf("%s: MaxTextOf: %v", name, err)
		}
		checkMaxText(t, name, h.Plan, cfg)
		vals := map[string]any{}
		for _, s := range cfg.Settings {
			vals[s.Key] = s.Value
		}
		if r := ringOfConfig(t, h.Plan, vals); r.Context != 1 || r.Check() != nil {
			t.Errorf("%s: the config's context %d, ring %v; want none", name, r.Context, r.Check())
		}
		if !strings.Contains(strings.Join(cfg.Comments, "\n"), "which MaxText cannot run (decoder_block "+maxTextModelBlock(t, c.model)+")") {
			t.Errorf("%s: the config does not say it holds MaxText's best:\n%s", name, strings.Join(cfg.Comments, "\n"))
		}
		var b strings.Builder
		if err := XPKOf(&b, p, h, XPKOptions{Cluster: "c", Workload: "w", BaseDockerImage: "img"}); err != nil || !strings.Contains(b.String(), "ici_context_parallelism=1 ") {
			t.Errorf("%s: XPKOf: %v\n%.400s", name, err, b.String())
		}
		mp := search(t, func(x *plan.Options) { *x = o; x.Framework = "maxtext" })
		if got, want := layoutSpec(mp), layoutSpec(h.Plan); got != want {
			t.Errorf("%s: plan under the MaxText framework chooses %s, the export holds %s", name, got, want)
		}
		if held, err := MaxTextHeld(o, mp, nil); held != nil || err != nil {
			t.Errorf("%s: MaxText refuses the MaxText framework's plan: %v %v", name, held, err)
		}
	}
}

// maxTextModelBlock is the decoder_block of catalog model name's MaxText
// config.
func maxTextModelBlock(t *testing.T, name string) string {
	t.Helper()
	mt, ok := maxtext.ModelNamed(name)
	if !ok {
		t.Fatalf("%s: no MaxText config", name)
	}
	return mt.Block
}
