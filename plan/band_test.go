package plan

import (
	"strings"
	"testing"

	"shardlab/cost"
	"shardlab/mesh"
)

// gain is how much faster a is predicted than b.
func gain(a, b Candidate) float64 {
	return a.Estimate.TokensPerSecondPerChip/b.Estimate.TokensPerSecondPerChip - 1
}

// TestBeyondBandChoosesFaster: Llama 3 8B on 4 x v6e-64 with a limit of
// 128 sequences of 8192. The rule order puts a pipeline across the slices
// (the batch is below what the Multislice rule asks to hide a DP
// all-reduce, and no DP or FSDP layout inside a slice has the batch for
// its chips), but FSDP across slices is predicted faster than the dense
// v6e band's width, so the planner chooses it and says which premise
// fails, with the DCN time that hides. (Issue 29's case, Llama 3 8B on
// 8 x v4-128, was one until the rule order tested a whole replica inside
// a slice: the rule now takes FSDP inside, DP across, itself;
// TestIssue29RuleTakesFSDPInside.)
func TestBeyondBandChoosesFaster(t *testing.T) {
	p, err := Search(request(t, "llama3-8b", "v6e-64", 4, 128))
	if err != nil {
		t.Fatal(err)
	}
	if p.Rule.Tier.Across != AcrossPipeline {
		t.Fatalf("rule order chose %s (%s), want pipeline across slices\n%s", p.Rule.Estimate.Mesh, p.Rule.Tier, reasons(p))
	}
	if a := p.Best.Tier.Across; a != AcrossDP && a != AcrossFSDP {
		t.Fatalf("chose %s (%s), want DP or FSDP across slices\n%s", p.Best.Estimate.Mesh, p.Best.Tier, reasons(p))
	}
	if g, w := gain(p.Best, p.Rule), p.Band.Width(); g <= w {
		t.Errorf("chosen layout is %.3f faster than the rule's, want more than the band's width %.3f", g, w)
	}
	for _, want := range []string{"beyond the band: " + p.Best.Estimate.Mesh.String(), "the rule order's choice, " + p.Rule.Estimate.Mesh.String(),
		"cannot hide its gradient reduction over DCN", "does not hold here", "its DCN collectives take", "hide under", "8 dense v6e runs"} {
		if !strings.Contains(reasons(p), want) {
			t.Errorf("reasons do not say %q:\n%s", want, reasons(p))
		}
	}
	for _, c := range append(append([]Candidate{p.Best}, p.Top...), p.Alternatives...) {
		for _, a := range []mesh.Axis{mesh.Tensor, mesh.Context} {
			if d := c.Estimate.Mesh.Degree(a).DCN; d > 1 {
				t.Errorf("%s puts %s on DCN (%d)", c.Estimate.Mesh, a, d)
			}
		}
	}
	if p.Top[0].Estimate.Mesh.String() != p.Best.Estimate.Mesh.String() {
		t.Errorf("top[0] = %s, want the chosen %s", p.Top[0].Estimate.Mesh, p.Best.Estimate.Mesh)
	}
	found := false
	for _, a := range p.Alternatives {
		found = found || a.Tier == p.Rule.Tier
	}
	if !found {
		t.Errorf("the rule's tier %s is not among the alternatives", p.Rule.Tier)
	}
}

// TestIssue29RuleTakesFSDPInside is issue 29's case: Llama 3 8B on
// 8 x v4-128 at the 4 Mi-token default limit. A full replica (120 GiB)
// does not fit a v4 chip's 30.8 GiB, so the rule order takes FSDP inside
// the slices with DP across them, the layout issue 29 found the model
// predicts fastest; with the batch below what the Multislice rule asks,
// pipeline across slices is in the pool and loses to it.
func TestIssue29RuleTakesFSDPInside(t *testing.T) {
	p, err := Search(request(t, "llama3-8b", "v4-128", 8, 512))
	if err != nil {
		t.Fatal(err)
	}
	if p.Rule.Tier != (Tier{InFSDP, AcrossDP}) || p.Best.Estimate.Mesh.String() != p.Rule.Estimate.Mesh.String() {
		t.Fatalf("rule chose %s (%s), best %s, want the rule's FSDP inside, DP across slices\n%s",
			p.Rule.Estimate.Mesh, p.Rule.Tier, p.Best.Estimate.Mesh, reasons(p))
	}
	want := p.Rule.Tier.String() + " wins: "
	if !strings.Contains(reasons(p), "too small: pipeline") || !strings.Contains(reasons(p), want) {
		t.Errorf("reasons do not weigh pipeline across slices and say %q:\n%s", want, reasons(p))
	}
	for _, a := range p.Alternatives {
		if gain(a, p.Best) > p.Band.Width() {
			t.Errorf("%s (%s) is %.3f faster than the rule's choice, beyond the band", a.Estimate.Mesh, a.Tier, gain(a, p.Best))
		}
	}
}

// TestWithinBandKeepsRule: Llama 3 70B on 2 x v5p-256 at the default
// limit. Context parallelism inside with FSDP across slices is predicted
// faster than the rule's DP across slices (about 9 %), but by less than
// the band's width, so the rule's choice stands and the note says by how
// much and why. (Until the data-parallel all-reduce overlapped the
// backward pass, the case was Llama 3 70B on 2 x tpu7x-128, where FSDP
// across slices hid what DP across slices exposed; now both hide it and
// neither is 5 % faster there.)
func TestWithinBandKeepsRule(t *testing.T) {
	p, err := Search(request(t, "llama3-70b", "v5p-256", 2, 512))
	if err != nil {
		t.Fatal(err)
	}
	if p.Best.Estimate.Mesh.String() != p.Rule.Estimate.Mesh.String() || p.Best.Tier != (Tier{InFSDP, AcrossDP}) {
		t.Fatalf("chose %s (%s), the rule order %s (%s), want the rule's FSDP inside, DP across slices\n%s",
			p.Best.Estimate.Mesh, p.Best.Tier, p.Rule.Estimate.Mesh, p.Rule.Tier, reasons(p))
	}
	var faster *Candidate
	for i, a := range p.Alternatives {
		if gain(a, p.Best) > 0.05 {
			faster = &p.Alternatives[i]
		}
	}
	if faster == nil {
		t.Fatalf("no alternative is predicted more than 5%% faster, want one within the band\n%s", reasons(p))
	}
	if g, w := gain(*faster, p.Best), p.Band.Width(); g > w {
		t.Errorf("%s is %.3f faster, want within the band's width %.3f", faster.Estimate.Mesh, g, w)
	}
	want := "note: " + faster.Estimate.Mesh.String() + " (" + faster.Tier.String() + ") is predicted"
	if !strings.Contains(reasons(p), want) || !strings.Contains(reasons(p), "the rule order's choice stands") {
		t.Errorf("reasons do not say %q ... the rule order's choice stands:\n%s", want, reasons(p))
	}
}

// TestBandPrinted checks that the text and the JSON carry the band of
// every predicted figure, from the plan's own band: llama3-8b on v5p-8 is
// dense v5p, a cell with rows enough of its own.
func TestBandPrinted(t *testing.T) {
	p, err := Search(request(t, "llama3-8b", "v5p-8", 1, 512))
	if err != nil {
		t.Fatal(err)
	}
	if b := p.Band; b.Generation != "v5p" || b.Class != "dense" || b.Rows < 8 {
		t.Fatalf("band %+v, want the dense v5p cell", b)
	}
	e := p.Best.Estimate
	var text strings.Builder
	if err := p.WriteText(&text, nil); err != nil {
		t.Fatal(err)
	}
	lo, hi := p.Band.Step(e.Time.Step.Seconds())
	want := "Step time: " + dur(e.Time.Step) + " (" + span(dur(secondsOf(lo)), dur(secondsOf(hi))) + ", validate's held-out 80 % band for dense v5p runs, "
	if !strings.Contains(text.String(), want) || !strings.Contains(text.String(), "in the band: MFU ") {
		t.Errorf("text does not carry the band, want %q and the MFU band:\n%s", want, text.String())
	}
	j := p.JSON(nil).Band
	if j == nil {
		t.Fatal("JSON has no prediction_band")
	}
	mlo, mhi := p.Band.Rate(e.MFU)
	tlo, thi := p.Band.Rate(e.TokensPerSecondPerChip)
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"low_step_time_s", j.StepLow, lo}, {"high_step_time_s", j.StepHigh, hi}, {"low_mfu_fraction", j.MFULow, mlo}, {"high_mfu_fraction", j.MFUHigh, mhi},
		{"low_tokens_per_s_per_chip", j.TokensChipLow, tlo}, {"high_tokens_per_s_per_chip", j.TokensChipHigh, thi},
		{"low_tokens_per_s", j.TokensLow, tlo * 4}, {"high_tokens_per_s", j.TokensHigh, thi * 4}} {
		if c.got != c.want {
			t.Errorf("prediction_band.%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if !(j.StepLow < e.Time.Step.Seconds() && e.Time.Step.Seconds() < j.StepHigh && j.MFULow < e.MFU && e.MFU < j.MFUHigh) {
		t.Errorf("band %+v does not hold the prediction (step %v, MFU %v)", j, e.Time.Step, e.MFU)
	}
}

// TestBandNamesItsOwnCell: a band pooled past the job's own cell says so
// in JSON as the text does: a quantized TPU7x job (3 quantized tpu7x rows
// in validate's table, fewer than cost.BandMinRows) carries the band it
// pools into with own_runs "quantized tpu7x runs" and 3 rows (a quantized
// v5p job, with none, shows no band: TestQuantizedBandNeedsQuantizedRuns);
// a dense v4 job (2 dense v4 rows, fewer than
// cost.BandMinRows) the dense band of every generation with "dense v4
// runs", 2; a dense v5p job (11 rows) its own band and no own_runs.
func TestBandNamesItsOwnCell(t *testing.T) {
	for _, c := range []struct {
		model, tpu, quant string
		runs              string
		rows              int
	}{
		{"llama3-8b", "tpu7x-8", "fp8", "quantized tpu7x runs", 3},
		{"llama3-8b", "v4-16", "", "dense v4 runs", 2},
		{"llama3-8b", "v5p-16", "", "", 0},
		// int8 leaves mixtral's routed experts in bf16 (cost.Job.UnquantizedExperts):
		// its own cell is MoE v5p's, not quantized v5p's (review 145 #2)
		{"mixtral-8x7b", "v5p-128", "int8", "MoE v5p runs", 3},
	} {
		r := request(t, c.model, c.tpu, 1, 512)
		r.Quantization = cost.Quantization(c.quant)
		p, err := Search(r)
		if err != nil {
			t.Fatal(err)
		}
		j := p.JSON(nil).Band
		if j == nil {
			t.Fatalf("%s on %s: no prediction_band", c.model, c.tpu)
		}
		switch {
		case c.runs == "" && (j.OwnRuns != "" || j.OwnRows != nil):
			t.Errorf("%s on %s %s: own cell %q %v, want none: the band is the job's own", c.model, c.tpu, c.quant, j.OwnRuns, j.OwnRows)
		case c.runs != "" && (j.OwnRuns != c.runs || j.OwnRows == nil || *j.OwnRows != c.rows):
			t.Errorf("%s on %s %s: own cell %q %v, want %q with %d rows", c.model, c.tpu, c.quant, j.OwnRuns, j.OwnRows, c.runs, c.rows)
		}
		// Mixtral 8x7B by hand (its config.json: 32 layers, d_model 4096,
		// expert d_ff 14336, 2 of 8 experts a token, 32 heads, 8 KV heads,
		// vocab 32000, untied): routed 32·2·3·4096·14336 = 11,274,289,152
		// of 12,879,925,248 active parameters (Mistral's paper: 12.9B), 87.5 %.
		why := "under " + c.quant + " its routed experts' GEMMs (88% of its active parameters), its output layer and its attention core stay bf16, and its attention and router projections run int8, so this job keeps its MoE band"
		if got := strings.Contains(planText(t, p), why); got != (c.quant != "" && p.Best.Estimate.Job.UnquantizedExperts()) {
			t.Errorf("%s on %s %s: text says %q: %v, want %v", c.model, c.tpu, c.quant, why, got, !got)
		}
	}
}
