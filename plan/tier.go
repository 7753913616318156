package plan

import (
	"fmt"

	"shardlab/mesh"
)

// Inside is how a layout shards the job inside each slice.
type Inside int

// The in-slice strategies, in the order the rules try them.
const (
	InDP    Inside = iota // data parallelism only
	InFSDP                // data and fsdp
	InModel               // tensor, context or pipeline too
)

func (in Inside) String() string {
	return [...]string{"DP", "FSDP", "model parallel"}[in]
}

// Across is what a layout places across slices, on DCN: data parallelism,
// FSDP or pipeline parallelism, the three choices the Cloud TPU Multislice
// guidance gives ("data parallelism, FSDP or pipeline parallelism across
// slices"; tensor and context exchange activations inside every layer and
// never go on DCN).
type Across int

// The cross-slice strategies, in the order the rules try them.
const (
	AcrossNone     Across = iota // one slice
	AcrossDP                     // data across slices
	AcrossFSDP                   // fsdp across slices (and maybe data)
	AcrossPipeline               // pipeline across slices (and maybe data or fsdp)
)

func (a Across) String() string {
	return [...]string{"", "DP", "FSDP", "pipeline"}[a]
}

// Tier is a rung of the rule order: the pair of the in-slice strategy and
// the cross-slice one, chosen as two steps.
type Tier struct {
	In     Inside
	Across Across
}

// The single-slice tiers.
var (
	TierDP    = Tier{InDP, AcrossNone}
	TierFSDP  = Tier{InFSDP, AcrossNone}
	TierModel = Tier{InModel, AcrossNone}
)

func (t Tier) String() string {
	if t.Across == AcrossNone {
		return [...]string{"pure DP", "FSDP", "model parallel inside slices"}[t.In]
	}
	return t.across(t.Across.String())
}

// across is the tier in words with what it places across slices given.
func (t Tier) across(what string) string {
	return fmt.Sprintf("%s inside, %s across slices", t.In, what)
}

// Name is the candidate's tier in words, with what its layout places
// across slices (AcrossOf): "FSDP inside, expert across slices" for a
// layout in the FSDP-across tier whose only sharded axis on DCN is
// expert. The tier itself, the rung of the rule order, is unchanged.
//
// Pure data parallelism on a chip of several JAX devices is named for
// what MaxText runs (dpName): "pure DP across chips, FSDP over each
// chip's 2 JAX devices".
func (c Candidate) Name() string {
	t := c.Tier
	dp := ""
	if t.In == InDP {
		dp = dpName(c.Estimate)
	}
	switch {
	case t.Across == AcrossNone && dp != "":
		return dp
	case t.Across == AcrossNone:
		return t.String()
	case dp != "":
		words, _ := inChip(c.Estimate)
		return fmt.Sprintf("DP across chips (%s) inside, %s across slices", words, AcrossOf(t, c.Estimate.Mesh))
	}
	return t.across(AcrossOf(t, c.Estimate.Mesh))
}

// AcrossOf is what layout m of tier t places across slices, in words:
// t.Across's, but for the FSDP-across tier, whose rule counts expert on
// DCN as fsdp (tierOf), the axes m actually puts there: "FSDP",
// "expert", or "FSDP and expert". The cross-slice axis is what the
// step's DCN time is spent on: an expert axis's all-to-all, not an fsdp
// axis's gradient reduction.
func AcrossOf(t Tier, m mesh.Mesh) string {
	if t.Across != AcrossFSDP || m.Degree(mesh.Expert).DCN <= 1 {
		return t.Across.String()
	}
	if m.Degree(mesh.FSDP).DCN > 1 {
		return "FSDP and " + mesh.Expert.String()
	}
	return mesh.Expert.String()
}

// tiers lists the tiers of a multislice of n slices by in-slice strategy,
// then by cross-slice one, each in rule order (searcher.firstTiers
// applies the rule order: DP across slices with each in-slice strategy
// before FSDP across them). The list is shared
// (read only): a lean search asks for it at every layout it keeps
// (bars.raiseLean).
func tiers(n int) []Tier {
	if n > 1 {
		return multisliceTiers
	}
	return oneSliceTiers
}

// oneSliceTiers and multisliceTiers are what tiers returns.
var (
	oneSliceTiers   = tiersAcross(AcrossNone)
	multisliceTiers = tiersAcross(AcrossDP, AcrossFSDP, AcrossPipeline)
)

// tiersAcross lists every in-slice strategy with each of across, in the
// order tiers gives.
func tiersAcross(across ...Across) []Tier {
	var out []Tier
	for in := InDP; in <= InModel; in++ {
		for _, a := range across {
			out = append(out, Tier{in, a})
		}
	}
	return out
}

// TierOf classifies a layout. A layout with tensor or context on DCN has no
// tier: mesh and the search refuse it. The expert axis counts as fsdp
// does.
func TierOf(m mesh.Mesh) Tier {
	var ici, dcn [mesh.NumAxes]int
	for a := range mesh.Axis(mesh.NumAxes) {
		d := m.Degree(a)
		ici[d.Axis], dcn[d.Axis] = d.ICI, d.DCN
	}
	return tierOf(ici[:], dcn[:])
}

// tierOf classifies ICI and DCN factors indexed by mesh.Axis.
func tierOf(ici, dcn []int) Tier {
	var t Tier
	switch {
	case ici[mesh.Tensor] > 1 || ici[mesh.Context] > 1 || ici[mesh.Pipeline] > 1:
		t.In = InModel
	case ici[mesh.FSDP] > 1 || ici[mesh.Expert] > 1:
		// expert parallelism shards the experts' weights and the batch, as
		// fsdp shards every weight and the batch
		t.In = InFSDP
	}
	switch {
	case dcn[mesh.Pipeline] > 1:
		t.Across = AcrossPipeline
	case dcn[mesh.FSDP] > 1 || dcn[mesh.Expert] > 1:
		t.Across = AcrossFSDP
	case dcn[mesh.Data] > 1:
		t.Across = AcrossDP
	}
	return t
}
