package cost

import (
	"testing"

	"shardlab/collective"
	"shardlab/mesh"
	"shardlab/schedule"
	"shardlab/unit"
)

// llama8bMTP is Llama 3 8B's one MTP module by hand: its decoder layer,
// the model's last, 218,112,000 parameters (llama8bStageLayers), its
// projection 2 × 4096 × 4096 = 33,554,432 and two norms of 4096:
// 251,674,624.
const llama8bMTP = 218_112_000 + 2*4096*4096 + 2*4096

// TestPipelineMTPOnEveryStage holds each stage's state to a hand
// derivation, Llama 3 8B with one MTP module on v5p-16 as
// fsdp=4,pipeline=2 (MaxTextPrecision: 16 bytes a parameter). MaxText's
// MTP block is the Transformer's, beside the decoder and not in its
// pipeline_module (holdsMTP), so in GPipe and circular every stage holds
// it beside the ends: 1,135,117,312 (TestPipelineHeadOnEveryStage) +
// 251,674,624 / 4 = 1,198,035,968 parameters a chip on both stages;
// Megatron's 1F1B puts it with the output layer on the last stage,
// 1,003,783,168 + 62,918,656 = 1,066,701,824, the first keeping its
// 1,003,782,144.
func TestPipelineMTPOnEveryStage(t *testing.T) {
	if llama8bMTP/4 != 62_918_656 {
		t.Fatalf("hand derivation: %d MTP parameters a chip, want 62,918,656", llama8bMTP/4)
	}
	e := NewEstimator()
	m := layout(t, "v5p-16", 1, "fsdp=4,pipeline=2")
	spec := lookup(t, "llama3-8b")
	spec.MTPLayers = 1
	cases := []struct {
		k           schedule.Kind
		chunks      int
		first, last int64 // parameters a chip
	}{
		{schedule.GPipe, 1, 1_198_035_968, 1_198_035_968},
		{schedule.Circular, 2, 1_198_035_968, 1_198_035_968},
		{schedule.OneFOneB, 1, 1_003_782_144, 1_066_701_824},
	}
	for _, c := range cases {
		j := NewJob(spec, 8192, 32)
		j.Schedule, j.MicroBatches, j.Chunks = c.k, 8, c.chunks
		sh, err := e.validShape(&j, &m)
		if err != nil {
			t.Fatal(err)
		}
		stagesHold(t, e, &j, &m, &sh, c.first, c.last)
		if want := 0.0; c.k != schedule.OneFOneB {
			want = 262_669_312 + 62_918_656
			if sh.head != want {
				t.Errorf("%s: %.0f parameters a chip on every stage, want %.0f", c.k, sh.head, want)
			}
		}
	}
}

// TestPipelineMTPCollectives holds the collectives of the MTP module a
// MaxText pipeline keeps on every stage to a hand derivation, Llama 3 8B
// with one module on v5p-16 as fsdp=4,pipeline=2, GPipe over 8
// micro-batches. Its gradient (62,918,656 fp32 parameters a chip) joins
// the output layer's and final norm's (131,335,168): their all-reduce
// over the 2 stages, made first in the backward and overlapped, sends
// 194,253,824 × 4 = 777,015,296 bytes, the embedding's, exposed, stays
// 525,336,576. FSDP gathers the ends and the module in bf16 once a step
// for the forward and the backward, 2 × 3/4 × 4 × 651,175,936 =
// 3,907,055,616 bytes, and reduce-scatters their fp32 gradient once: 3/4
// × 4 × 777,015,296 = 2,331,045,888 under the backward, the embedding's
// 1,576,009,728 after it. The stage's layers are gathered and
// reduce-scattered per micro-batch as without the module,
// 83,755,008,000 bytes each (TestPipelineHeadGatheredOnce).
func TestPipelineMTPCollectives(t *testing.T) {
	spec := lookup(t, "llama3-8b")
	spec.MTPLayers = 1
	j := NewJob(spec, 8192, 32)
	j.Schedule, j.MicroBatches = schedule.GPipe, 8
	est, err := EstimateStep(j, layout(t, "v5p-16", 1, "fsdp=4,pipeline=2"))
	if err != nil {
		t.Fatal(err)
	}
	type comm struct {
		axis       mesh.Axis
		count      int
		bytes      unit.Bytes
		overlapped bool
	}
	want := map[string]comm{
		"final norm, output and MTP gradient all-reduce": {mesh.Pipeline, 1, 777_015_296, true},
		"embedding gradient all-reduce":                  {mesh.Pipeline, 1, 525_336_576, false},
		"embedding, output and MTP all-gather":           {mesh.FSDP, 2, 3_907_055_616, true},
		"final norm, output and MTP reduce-scatter":      {mesh.FSDP, 1, 2_331_045_888, true},
		"embedding reduce-scatter":                       {mesh.FSDP, 1, 1_576_009_728, false},
		"weight all-gather":                              {mesh.FSDP, 16, 83_755_008_000, true},
		"gradient reduce-scatter":                        {mesh.FSDP, 8, 83_755_008_000, true},
	}
	for _, c := range est.Comms {
		w, ok := want[c.What]
		if !ok || c.Axis != w.axis || c.Op == collective.AllReduce && w.axis != mesh.Pipeline {
			continue
		}
		delete(want, c.What)
		// the layers' collectives are issued one per layer, each
		// rounded down to the byte; the ends' split by parameters
		if c.Count != w.count || c.ICIBytes > w.bytes || c.ICIBytes < w.bytes-unit.Bytes(16*c.Count) || c.DCNBytes != 0 || c.Overlapped != w.overlapped {
			t.Errorf("%s: %d of them, ICI %d, DCN %d bytes, overlapped %v; want %d, %d, 0, %v", c.What, c.Count, c.ICIBytes, c.DCNBytes, c.Overlapped, w.count, w.bytes, w.overlapped)
		}
	}
	if len(want) > 0 {
		t.Errorf("not found: %v in %v", want, est.Comms)
	}
}
