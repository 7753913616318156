package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"shardlab/cost"
	"shardlab/mesh"
)

// checkAcross holds a multislice plan's across-slices reason to the
// layout the plan chose (review 123 #2: it explained data parallelism
// across slices while the layout put fsdp or pipeline on DCN): there is
// one such reason; it names the chosen tier's cross-slice strategy, and
// the JSON's across_slices is that tier's; unless only data crosses the
// slices, it names each of the layout's DCN axes and not the DP default's
// "only the gradients cross DCN". It returns the reason.
func checkAcross(t *testing.T, p Plan) string {
	t.Helper()
	var got []string
	for _, r := range phrases(p.Reasons, nil) {
		if strings.HasPrefix(r, "across slices: ") {
			got = append(got, r)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d across-slices reasons, want 1:\n%s", len(got), reasons(p))
	}
	r, best := got[0], p.Best.Tier
	if want := "across slices: " + acrossWords[best.Across]; !strings.HasPrefix(r, want+",") && !strings.HasPrefix(r, want+";") {
		t.Errorf("layout %s (%s) is explained as %q, want it to start %q", p.Best.Estimate.Mesh, best, r, want)
	}
	if j := p.JSON(nil); j.AcrossSlices != best.Across.String() || !slices.Contains(j.Reasons, r) {
		t.Errorf("JSON across_slices %q, reasons %q: want %q and the reason %q", j.AcrossSlices, j.Reasons, best.Across, r)
	}
	if best.Across == AcrossDP {
		return r
	}
	if strings.Contains(r, "only the gradients cross DCN") {
		t.Errorf("layout %s puts more than data on DCN, yet the reason says %q", p.Best.Estimate.Mesh, r)
	}
	for a := range mesh.Axis(mesh.NumAxes) {
		if d := p.Best.Estimate.Mesh.Degree(a); d.DCN > 1 && !strings.Contains(r, fmt.Sprintf("%s=%d", a, d.DCN)) {
			t.Errorf("reason %q does not name %s's DCN factor %d of %s", r, a, d.DCN, p.Best.Estimate.Mesh)
		}
	}
	return r
}

// TestAcrossReasonDP: Llama 3 70B on 2 slices of tpu7x-128 keeps the
// rule order's default, data parallelism across slices (the README's
// example), and says so in the default's words.
func TestAcrossReasonDP(t *testing.T) {
	r := request(t, "llama3-70b", "tpu7x-128", 2, 512)
	r.Seq = 8192
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	if p.Best.Tier.Across != AcrossDP {
		t.Fatalf("chose %s (%s), want DP across slices, the case this test is for", p.Best.Estimate.Mesh, p.Best.Tier)
	}
	if got, want := checkAcross(t, p), "across slices: data parallelism, the Multislice default: only the gradients cross DCN, once per step"; got != want {
		t.Errorf("across-slices reason %q, want %q", got, want)
	}
}

// TestAcrossReasonFSDPBeyondBand: Llama 3 405B on 4 slices of v6e-256
// (review 123 #2): the rule order reaches DP across slices, and a layout
// with fsdp=4 over DCN, predicted faster by more than the error band, is
// chosen in its place. The reason must explain FSDP across slices, whose
// weights are gathered over DCN, not the DP default.
func TestAcrossReasonFSDPBeyondBand(t *testing.T) {
	r := request(t, "llama3-405b", "v6e-256", 4, 512)
	r.Seq = 8192
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	if p.Rule.Tier.Across != AcrossDP || p.Best.Tier.Across != AcrossFSDP {
		t.Fatalf("rule %s (%s), chosen %s (%s): want the rule's DP across slices overridden by FSDP across them, the case this test is for\n%s",
			p.Rule.Estimate.Mesh, p.Rule.Tier, p.Best.Estimate.Mesh, p.Best.Tier, reasons(p))
	}
	got := checkAcross(t, p)
	for _, want := range []string{"chosen beyond the band in place of the rule order's data parallelism across slices", "fsdp weight all-gather", "fsdp gradient reduce-scatter"} {
		if !strings.Contains(got, want) {
			t.Errorf("across-slices reason %q does not say %q", got, want)
		}
	}
}

// TestAcrossReasonPipelineByBatchRule: Llama 3 70B on 8 slices of
// v5p-128 with a limit of 128 sequences of 8192 tokens, 131k tokens per
// slice (review 123 #2): below the batch rule's 294k, so pipeline across
// slices competes with DP across them and wins. The reason must explain
// the pipeline and what the layout sends over DCN.
func TestAcrossReasonPipelineByBatchRule(t *testing.T) {
	r := request(t, "llama3-70b", "v5p-128", 8, 128)
	r.Seq = 8192
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	if p.Best.Tier.Across != AcrossPipeline {
		t.Fatalf("chose %s (%s), want pipeline across slices, the case this test is for\n%s", p.Best.Estimate.Mesh, p.Best.Tier, reasons(p))
	}
	got := checkAcross(t, p)
	if !strings.Contains(got, "pipeline stage activations") {
		t.Errorf("across-slices reason %q does not name the stage activations the pipeline sends over DCN", got)
	}
}

// TestAcrossNoteFollowsTheChoice: acrossNote, the one writer of the
// across-slices reason, explains the chosen layout whichever tier the
// rule order reached: here a DP layout chosen beyond the band in place
// of the rule's pipeline across slices, and an FSDP layout the rule
// chose because DP across slices does not fit.
func TestAcrossNoteFollowsTheChoice(t *testing.T) {
	r := request(t, "llama3-8b", "v5p-16", 2, 64)
	r.Seq = 8192
	dp := givenLayout(t, r, "data=2(dcn),fsdp=8").Best
	pp := givenLayout(t, r, "pipeline=2(dcn),fsdp=8").Best
	fs := givenLayout(t, r, "fsdp=2(dcn),fsdp=8").Best
	s := &searcher{rejected: map[Tier]map[cost.Reason]int{{InFSDP, AcrossDP}: {cost.ReasonHBM: 3}}}
	s.across.in = InFSDP
	for _, tc := range []struct {
		best, rule Candidate
		want       []string
	}{
		{dp, pp, []string{"across slices: data parallelism, chosen beyond the band in place of the rule order's pipeline parallelism across slices", "over DCN (data=2)", "data gradient all-reduce once"}},
		{fs, fs, []string{"across slices: FSDP, because data parallelism across slices does not fit (3 layouts do not fit in HBM)", "over DCN (fsdp=2)", "fsdp weight all-gather"}},
		{dp, dp, []string{"across slices: data parallelism, the Multislice default: only the gradients cross DCN, once per step"}},
	} {
		got := s.acrossNote(Plan{Best: tc.best, Rule: tc.rule}).String()
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("best %s, rule %s: %q does not say %q", tc.best.Estimate.Mesh, tc.rule.Estimate.Mesh, got, w)
			}
		}
	}
}

// TestAcrossReasonNamesItsOptions is review 145's small finding: Llama 3.1
// 405B on 2 v5e-256 slices shards over DCN because data parallelism
// across slices does not fit, and some of those layouts need a global
// batch above the option's limit (ReasonBatchLimit names it as
// {max_global_batch}). The across-slices reason spells that option as the
// caller names it, in the text and in the JSON, like every other reason,
// and leaves no markup.
func TestAcrossReasonNamesItsOptions(t *testing.T) {
	p, err := Search(parsed(t, func(o *Options) { o.Model, o.TPU = "llama3-405b", "v5e" }))
	if err != nil {
		t.Fatal(err)
	}
	flag := func(o Option) string { return "--" + strings.ReplaceAll(string(o), "_", "-") }
	var across string
	for _, n := range p.Reasons {
		if s := n.Phrase(flag); strings.HasPrefix(s, "across slices: FSDP, because data parallelism across slices does not fit") {
			across = s
		}
	}
	if want := "layouts need a global batch above --max-global-batch"; !strings.Contains(across, want) || strings.ContainsAny(across, "{}") {
		t.Errorf("across-slices reason %q: want %q and no braces", across, want)
	}
	for _, r := range p.JSON(nil).Reasons {
		if strings.ContainsAny(r, "{}") {
			t.Errorf("JSON reason with markup: %q", r)
		}
	}
}
