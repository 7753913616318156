package cost

import (
	"testing"

	"shardlab/schedule"
	"shardlab/unit"
)

// TestPipelineLossOnEveryStage holds a pipeline's output layer and loss
// to a hand derivation. Llama 3 8B (vocabulary 128,256, d_model 4096,
// bf16 activations) on 2 slices of v5p-8 as fsdp=4,pipeline=2(dcn),
// 8192 tokens a sequence.
//
// MaxText's pipelines (GPipe, circular) apply the output head after the
// pipeline to the whole batch, sharded over data, stage and fsdp
// (setInFlight): 32 sequences over fsdp 4 and 2 stages is 4 a chip, on
// both stages. Logits and their gradient 4 × 8192 × 128,256 × 2 =
// 8,405,385,216 bytes each, the fp32 exponentials twice that,
// 16,810,770,432; the output layer gathered over fsdp and its unreduced
// gradient 2 × 128,256 × 4096 × 2 = 2,101,346,304. 1F1B runs the loss on
// the last stage a micro-batch at a time: 32 / (4 × 8) = 1 sequence,
// 2,101,346,304 bytes of logits, and the first stage has no output
// phase. GPipe over 3 micro-batches of 12 sequences: 3 sequences a chip
// over 2 stages, padded to 2 a chip, 4,202,692,608 bytes of logits.
func TestPipelineLossOnEveryStage(t *testing.T) {
	e := NewEstimator()
	m := layout(t, "v5p-8", 2, "fsdp=4,pipeline=2(dcn)")
	const seq, gathered = 8192 * 128256 * 2, 2_101_346_304
	cases := []struct {
		k            schedule.Kind
		batch, micro int
		chunks       int
		first, last  int64 // sequences a chip in each stage's output phase
	}{
		{schedule.GPipe, 32, 8, 1, 4, 4},
		{schedule.Circular, 32, 8, 2, 4, 4},
		{schedule.OneFOneB, 32, 8, 1, 0, 1},
		{schedule.Interleaved, 32, 8, 2, 0, 1},
		{schedule.GPipe, 12, 3, 1, 2, 2},
	}
	for _, c := range cases {
		j := NewJob(lookup(t, "llama3-8b"), 8192, c.batch)
		j.Schedule, j.MicroBatches, j.Chunks = c.k, c.micro, c.chunks
		sh, err := e.validShape(&j, &m)
		if err != nil {
			t.Fatal(err)
		}
		first := j.stageMemory(e.stageBase(&j, &m, &sh, firstStage), &sh)
		last := j.stageMemory(e.stageBase(&j, &m, &sh, lastStage), &sh)
		for _, st := range []struct {
			name string
			ps   stagePhases
			seqs int64
		}{{"first", first.phases, c.first}, {"last", last.phases, c.last}} {
			out := st.ps.list()
			if st.seqs == 0 {
				if len(out) != 1 {
					t.Errorf("%s %d micro-batches, %s stage: phases %v, want the layer backward alone", c.k, c.micro, st.name, out)
				}
				continue
			}
			want := Phase{Name: PhaseOutput, Buffers: []Buffer{
				{"logits", unit.Bytes(st.seqs * seq)}, {"logits gradient", unit.Bytes(st.seqs * seq)},
				{"gathered output layer and its unreduced gradient (FSDP)", gathered}},
				Recomputable: []Buffer{{BufferLossExponentials, unit.Bytes(2 * st.seqs * seq)}}}
			if len(out) != 2 || !samePhase(out[1], want) {
				t.Errorf("%s %d micro-batches, %s stage: phases %v, want the output phase %v", c.k, c.micro, st.name, out, want)
			}
		}
	}
}

// samePhase reports whether a and b name the same buffers of the same
// bytes in the same order.
func samePhase(a, b Phase) bool {
	eq := func(x, y []Buffer) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	return a.Name == b.Name && eq(a.Buffers, b.Buffers) && eq(a.Recomputable, b.Recomputable)
}
