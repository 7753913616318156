package cost

import (
	"testing"

	"shardlab/collective"
	"shardlab/mesh"
	"shardlab/schedule"
	"shardlab/unit"
)

// Llama 3 8B by hand: a layer is q and o 4096 × 4096 each, k and v
// 4096 × 1024 each, the MLP 3 × 4096 × 14,336 and two norms of 4096,
// 218,112,000 parameters; 16 of them a stage is 3,489,792,000. The
// embedding and the untied output layer are 128,256 × 4096 =
// 525,336,576 each, the final norm 4096.
const (
	llama8bStageLayers = 16 * 218_112_000
	llama8bVocabMatrix = 128_256 * 4096
	llama8bFinalNorm   = 4096
)

// TestPipelineHeadOnEveryStage holds each stage's state to a hand
// derivation, Llama 3 8B on v5p-16 as fsdp=4,pipeline=2 (MaxTextPrecision:
// fp32 weights and gradients, two fp32 Adam moments). In MaxText's
// pipelines (GPipe, circular) every stage holds the embedding, the final
// norm and the output layer (headOnEveryStage): (3,489,792,000 +
// 2 × 525,336,576 + 4096) / 4 = 1,135,117,312 parameters a chip on both
// stages. Megatron's (1F1B) puts the embedding on the first stage,
// (3,489,792,000 + 525,336,576) / 4 = 1,003,782,144, and the norm and
// output layer on the last, 1,003,783,168.
func TestPipelineHeadOnEveryStage(t *testing.T) {
	e := NewEstimator()
	m := layout(t, "v5p-16", 1, "fsdp=4,pipeline=2")
	cases := []struct {
		k           schedule.Kind
		chunks      int
		first, last int64 // parameters a chip
	}{
		{schedule.GPipe, 1, 1_135_117_312, 1_135_117_312},
		{schedule.Circular, 2, 1_135_117_312, 1_135_117_312},
		{schedule.OneFOneB, 1, 1_003_782_144, 1_003_783_168},
	}
	for _, c := range cases {
		if got := int64(llama8bStageLayers+2*llama8bVocabMatrix+llama8bFinalNorm) / 4; c.k != schedule.OneFOneB && got != c.first {
			t.Fatalf("hand derivation: %d, want %d", got, c.first)
		}
		j := NewJob(lookup(t, "llama3-8b"), 8192, 32)
		j.Schedule, j.MicroBatches, j.Chunks = c.k, 8, c.chunks
		sh, err := e.validShape(&j, &m)
		if err != nil {
			t.Fatal(err)
		}
		stagesHold(t, e, &j, &m, &sh, c.first, c.last)
	}
}

// stagesHold checks that the first and last pipeline stages of j on m
// hold first and last parameters a chip at MaxText's precision: fp32
// weights and gradients and two fp32 moments, 4 + 4 + 8 bytes each.
func stagesHold(t *testing.T, e *Estimator, j *Job, m *mesh.Mesh, sh *shape, first, last int64) {
	t.Helper()
	for _, st := range []struct {
		s      stage
		params int64
	}{{firstStage, first}, {lastStage, last}} {
		got := e.stageBase(j, m, sh, st.s).mem
		want := Memory{Weights: unit.Bytes(st.params * 4), Gradients: unit.Bytes(st.params * 4), Optimizer: unit.Bytes(st.params * 8)}
		if got.Weights != want.Weights || got.Gradients != want.Gradients || got.Optimizer != want.Optimizer {
			t.Errorf("%s, %s stage: weights, gradients, optimizer %d, %d, %d bytes, want %d, %d, %d", j.Schedule, st.s,
				got.Weights, got.Gradients, got.Optimizer, want.Weights, want.Gradients, want.Optimizer)
		}
	}
}

// TestPipelineHeadGradientAllReduce holds the all-reduces of the ends'
// gradients over the stages to a hand derivation, Llama 3 8B on v5p-16 as
// fsdp=4,pipeline=2 (and across two slices): a chip holds a quarter of
// the embedding, 525,336,576 / 4 = 131,334,144 parameters, 525,336,576
// bytes of fp32 gradient, and of the output layer and final norm,
// (525,336,576 + 4096) / 4 = 131,335,168 parameters, 525,340,672 bytes; a
// ring all-reduce over 2 stages sends 2 × (2 − 1) / 2 of each, over ICI
// with the stages in one slice and over DCN with them across two. The
// output layer's and norm's gradients are made first in the backward (the
// head's runs before the pipeline's), so their all-reduce overlaps it;
// the embedding's is made last, so its all-reduce is on the critical
// path (tally's after-the-loop time, with the embedding's FSDP
// reduce-scatter all of it). Megatron's 1F1B has neither.
func TestPipelineHeadGradientAllReduce(t *testing.T) {
	const emb, out = llama8bVocabMatrix / 4 * 4, (llama8bVocabMatrix + llama8bFinalNorm) / 4 * 4
	if emb != 525_336_576 || out != 525_340_672 {
		t.Fatalf("hand derivation: %d and %d bytes, want 525,336,576 and 525,340,672", emb, out)
	}
	cases := []struct {
		accel  string
		slices int
		spec   string
		k      schedule.Kind
		dcn    bool
	}{
		{"v5p-16", 1, "fsdp=4,pipeline=2", schedule.GPipe, false},
		{"v5p-8", 2, "fsdp=4,pipeline=2(dcn)", schedule.GPipe, true},
		{"v5p-16", 1, "fsdp=4,pipeline=2", schedule.OneFOneB, false},
	}
	e := NewEstimator()
	for _, c := range cases {
		j := NewJob(lookup(t, "llama3-8b"), 8192, 32)
		j.Schedule, j.MicroBatches = c.k, 8
		m := layout(t, c.accel, c.slices, c.spec)
		est, err := EstimateStep(j, m)
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]Comm{}
		var embRS Comm // the embedding's FSDP reduce-scatter, after the backward too
		for _, cm := range est.Comms {
			switch {
			case cm.Axis == mesh.Pipeline && cm.Op == collective.AllReduce:
				found[cm.What] = cm
			case cm.Axis == mesh.FSDP && cm.What == "embedding reduce-scatter":
				embRS = cm
			}
		}
		if c.k == schedule.OneFOneB {
			if len(found) != 0 {
				t.Errorf("%s on %s: %v, want no all-reduce over the stages", c.k, c.spec, found)
			}
			continue
		}
		late := found["embedding gradient all-reduce"]
		for _, w := range []struct {
			what       string
			bytes      unit.Bytes
			overlapped bool
		}{{"final norm and output gradient all-reduce", out, true}, {"embedding gradient all-reduce", emb, false}} {
			ici, dcn := w.bytes, unit.Bytes(0)
			if c.dcn {
				ici, dcn = 0, w.bytes
			}
			if got, ok := found[w.what]; !ok || got.ICIBytes != ici || got.DCNBytes != dcn || got.Overlapped != w.overlapped {
				t.Errorf("%s on %s: %s %+v, want ICI %d, DCN %d bytes, overlapped %v", c.k, c.spec, w.what, got, ici, dcn, w.overlapped)
			}
		}
		sh, err := e.validShape(&j, &m)
		if err != nil {
			t.Fatal(err)
		}
		tl, _, _ := e.collectives(&Estimate{Job: j, Mesh: m}, &sh, false)
		if late.ICITime+late.DCNTime == 0 || embRS.ICITime == 0 || tl.afterICI != late.ICITime+embRS.ICITime || tl.afterDCN != late.DCNTime+embRS.DCNTime {
			t.Errorf("%s on %s: on the critical path ICI %v, DCN %v; want the embedding's all-reduce and reduce-scatter, %v + %v, %v + %v",
				c.k, c.spec, tl.afterICI, tl.afterDCN, late.ICITime, embRS.ICITime, late.DCNTime, embRS.DCNTime)
		}
	}
}

// TestPipelineHeadGatheredOnce holds the FSDP collectives of a MaxText
// pipeline to a hand derivation, Llama 3 8B on v5p-16 as
// fsdp=4,pipeline=2, GPipe over 8 micro-batches: the embedding, norm and
// output layer (262,669,312 parameters a chip) are gathered in bf16 for
// the forward and the backward once a step, 2 × 3/4 × 4 × 525,338,624 =
// 3,152,031,744 bytes a chip, and their fp32 gradient reduce-scattered
// once, 3/4 × 4 × 1,050,677,248 = 3,152,031,744: the output layer's and
// final norm's (131,335,168 parameters a chip: 3/4 × 4 × 525,340,672 =
// 1,576,022,016) under the backward pass, the embedding's (131,334,144:
// 3/4 × 4 × 525,336,576 = 1,576,009,728), made at its very end, after
// it, on the critical path; the stage's 16 layers
// (872,448,000 parameters a chip) are gathered twice per micro-batch, 16 ×
// 3/4 × 4 × 1,744,896,000 = 83,755,008,000 bytes, and reduce-scattered once
// per micro-batch, 8 × 3/4 × 4 × 3,489,792,000 = 83,755,008,000.
func TestPipelineHeadGatheredOnce(t *testing.T) {
	if got := int64(llama8bStageLayers) / 4; got != 872_448_000 {
		t.Fatalf("hand derivation: %d layer parameters a chip, want 872,448,000", got)
	}
	j := NewJob(lookup(t, "llama3-8b"), 8192, 32)
	j.Schedule, j.MicroBatches = schedule.GPipe, 8
	est, err := EstimateStep(j, layout(t, "v5p-16", 1, "fsdp=4,pipeline=2"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		count      int
		bytes      unit.Bytes
		overlapped bool
	}{
		"embedding and output all-gather":      {2, 3_152_031_744, true},
		"final norm and output reduce-scatter": {1, 1_576_022_016, true},
		"embedding reduce-scatter":             {1, 1_576_009_728, false},
		"weight all-gather":                    {16, 83_755_008_000, true},
		"gradient reduce-scatter":              {8, 83_755_008_000, true},
	}
	seen := 0
	for _, c := range est.Comms {
		w, ok := want[c.What]
		if c.Axis != mesh.FSDP || !ok {
			continue
		}
		seen++
		// the layers' collectives are issued one per layer, each
		// rounded down to the byte
		if c.Count != w.count || c.ICIBytes > w.bytes || c.ICIBytes < w.bytes-unit.Bytes(16*c.Count) || c.DCNBytes != 0 || c.Overlapped != w.overlapped {
			t.Errorf("%s: %d of them, ICI %d, DCN %d bytes, overlapped %v; want %d, %d, 0, %v", c.What, c.Count, c.ICIBytes, c.DCNBytes, c.Overlapped, w.count, w.bytes, w.overlapped)
		}
	}
	if seen != len(want) {
		t.Errorf("%d of the %d FSDP collectives found in %v", seen, len(want), est.Comms)
	}
}
