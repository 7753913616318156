package plan

import (
	"fmt"
	"strings"
	"testing"

	"shardlab/mesh"
	"shardlab/unit"
)

// llama3_8BReplica is a full replica's state of Llama 3 8B at MaxText's
// precision, by hand: 8,030,261,248 parameters (meta-llama/Meta-Llama-3-8B
// safetensors metadata) × 16 B (fp32 weights and gradients, 4 B each, and
// Adam's two fp32 moments, 8 B) = 128,484,179,968 B = 119.66 GiB.
const llama3_8BReplica = unit.Bytes(8_030_261_248 * 16)

// givenLayout costs the layout axes on r's slices, as --mesh does.
func givenLayout(t *testing.T, r Request, axes string) Plan {
	t.Helper()
	d, err := mesh.ParseAxes(axes)
	if err != nil {
		t.Fatal(err)
	}
	r.Axes = d
	p, err := Search(r)
	if err != nil && p.Best.Estimate.Mesh.String() == "" {
		t.Fatalf("%s: %v", axes, err)
	}
	return p
}

// TestRuleDPInsideTestsAWholeReplica is review 3's defect 2: Llama 3 8B on
// 2 × v5p-32. A full replica (119.7 GiB) does not fit a v5p chip's 95 GiB,
// so pure data parallelism inside each slice cannot run with a whole
// replica there; the rule's next step, FSDP inside with DP across the
// slices, applies. The plan once took data=16,fsdp=2(dcn) and called its
// DCN-halved state (59.8 GiB) "a full replica's".
func TestRuleDPInsideTestsAWholeReplica(t *testing.T) {
	r := request(t, "llama3-8b", "v5p-32", 2, 512)
	p, err := Search(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Request.replicaState(); got != llama3_8BReplica {
		t.Errorf("replica state = %d B, want %d B by hand", got, llama3_8BReplica)
	}
	// The layout the premise is about: pure DP inside, DP across slices.
	dp := givenLayout(t, r, "data=2(dcn),data=16").Best.Estimate
	if dp.Memory.State() != llama3_8BReplica || dp.Memory.Fits() {
		t.Errorf("data=2(dcn),data=16: state %v (fits %v), want the whole replica's %v, not fitting",
			dp.Memory.State(), dp.Memory.Fits(), llama3_8BReplica)
	}
	want := fmt.Sprintf("pure data parallelism with a whole replica in each slice cannot run (4 layouts do not fit in HBM): a full replica's state is %v against %v",
		llama3_8BReplica, dp.Memory.Usable)
	if !strings.Contains(reasons(p), want) || strings.Contains(reasons(p), "pure data parallelism: a full replica") {
		t.Errorf("reasons do not say %q:\n%s", want, reasons(p))
	}
	if p.Rule.Tier != (Tier{InFSDP, AcrossDP}) || p.Best.Estimate.Mesh.String() != "data=2(dcn),fsdp=16" {
		t.Errorf("rule chose %s (%s), best %s, want data=2(dcn),fsdp=16 (FSDP inside, DP across slices)\n%s",
			p.Rule.Estimate.Mesh, p.Rule.Tier, p.Best.Estimate.Mesh, reasons(p))
	}
	// The layout once chosen is now an alternative, and slower.
	for _, a := range p.Alternatives {
		if a.Tier == (Tier{InDP, AcrossFSDP}) && a.Estimate.TokensPerSecondPerChip >= p.Best.Estimate.TokensPerSecondPerChip {
			t.Errorf("%s (%s) runs %.0f tokens/s per chip, not slower than the choice's %.0f", a.Estimate.Mesh, a.Tier,
				a.Estimate.TokensPerSecondPerChip, p.Best.Estimate.TokensPerSecondPerChip)
		}
	}
}

// TestInsideReasonNamesTheStateOfItsLayout: on each multislice case the
// inside reason's bytes are the state of the layout it describes. Where
// it says a full replica fits, the rule's layout keeps DP across slices
// and holds the whole replica; where the state is sharded across slices
// too, it names the rule's layout and that layout's state.
func TestInsideReasonNamesTheStateOfItsLayout(t *testing.T) {
	cases := []struct {
		model, tpu       string
		slices, max, seq int
		branch           string // the reason's premise
	}{
		{"llama3-8b", "v5p-32", 2, 512, 8192, "cannot run"},                           // a replica does not fit
		{"llama3-8b", "tpu7x-8", 2, 512, 8192, "fits"},                                // its half fits each 94.7 GiB device
		{"llama3-70b", "v5litepod-64", 4, 256, 1024, "with the state sharded across"}, // FSDP across slices too
	}
	for _, c := range cases {
		r := request(t, c.model, c.tpu, c.slices, c.max)
		r.Seq = c.seq
		p, err := Search(r)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		r = p.Request // with its defaults
		rule, text := p.Rule.Estimate, reasons(p)
		switch c.branch {
		case "fits":
			// TPU7x: two JAX devices a chip, FSDP over them (review 163 #2)
			want := fmt.Sprintf("a full replica's weights, gradients and optimizer state (%v) fit no JAX device, but a share of it, %v, fits each of a chip's 2 devices",
				rule.Memory.State(), rule.Memory.State()/2)
			if p.Rule.Tier.Across != AcrossDP || rule.Memory.State() != r.replicaState() || !strings.Contains(text, want) {
				t.Errorf("%v: the rule's %s (%s) holds %v of a replica's %v; reasons do not say %q\n%s", c, rule.Mesh, p.Rule.Tier,
					rule.Memory.State(), r.replicaState(), want, text)
			}
		case "with the state sharded across":
			want := fmt.Sprintf("%s holds %v of state a chip", rule.Mesh, rule.Memory.State())
			if p.Rule.Tier.Across == AcrossDP || !strings.Contains(text, want) || strings.Contains(text, "a full replica's weights") {
				t.Errorf("%v: rule %s (%s), reasons do not say %q\n%s", c, rule.Mesh, p.Rule.Tier, want, text)
			}
		default:
			want := "FSDP: pure data parallelism with a whole replica in each slice cannot run ("
			if p.Rule.Tier != (Tier{InFSDP, AcrossDP}) || !strings.Contains(text, want) || strings.Contains(text, "a full replica's weights") {
				t.Errorf("%v: rule %s (%s), reasons do not say %q\n%s", c, rule.Mesh, p.Rule.Tier, want, text)
			}
		}
	}
}
