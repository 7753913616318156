package cost

import (
	"math"
	"testing"

	"shardlab/mesh"
	"shardlab/schedule"
	"shardlab/unit"
)

// TestLossExponentialsByHand holds the output phase's recomputable buffer
// to a hand count: the loss's fp32 exponentials are tokens per chip ×
// vocabulary ÷ tensor ÷ vocabulary tiles × 4 bytes. Llama 3 8B (vocab
// 128,256) at 8,192 tokens, 2 sequences per chip: 16,384 × 128,256 × 4 =
// 8,405,385,216 bytes; with tensor=2 (the logits' vocabulary sharded)
// 16,384 × 128,256 × 4 ÷ 2 = 4,202,692,608; with 4 vocabulary tiles,
// 2,101,346,304. Nothing else of the memory changes, and Total does not
// hold it.
func TestLossExponentialsByHand(t *testing.T) {
	e := NewEstimator()
	for _, c := range []struct {
		mesh  string
		tiles int
		want  unit.Bytes
	}{
		{"fsdp=8", 0, 8405385216},
		{"fsdp=4,tensor=2", 0, 4202692608},
		{"fsdp=8", 4, 2101346304},
	} {
		m := layout(t, "v5p-16", 1, c.mesh)
		// 2 sequences per data-parallel shard
		j := NewJob(lookup(t, "llama3-8b"), 8192, 2*m.Size(mesh.Data)*m.Size(mesh.FSDP))
		j.VocabTiles = c.tiles
		mem, err := e.Memory(j, m)
		if err != nil {
			t.Fatal(err)
		}
		var got unit.Bytes
		for _, p := range mem.Phases {
			for _, r := range p.Recomputable {
				if p.Name != PhaseOutput || r.Name != BufferLossExponentials {
					t.Errorf("%s: recomputable %q in phase %q", c.mesh, r.Name, p.Name)
				}
				got += r.Bytes
			}
		}
		if got != c.want {
			t.Errorf("%s, %d tiles: loss exponentials %d bytes, want %d", c.mesh, c.tiles, got, c.want)
		}
		if out := phaseBytes(mem, PhaseOutput); mem.Nominal() != mem.Total()-mem.Transient+max(mem.Transient, out+got) {
			t.Errorf("%s: Nominal %v, want Total − Transient + max(Transient, output phase + exponentials)", c.mesh, mem.Nominal())
		}
	}
}

func phaseBytes(m Memory, name string) unit.Bytes {
	for _, p := range m.Phases {
		if p.Name == name {
			return p.Bytes()
		}
	}
	return 0
}

// TestCompiledRegimes holds what XLA's report is predicted to read to the
// three cases, by hand: a job needing 60 GiB (state 20, activations 30,
// largest phase 10) whose output phase (8 GiB) keeps 6 GiB of
// recomputable exponentials, so that as laid out it peaks at 64 GiB.
// Against 80 GiB it reads 64 as laid out; against 62, 62, XLA
// recomputing to its limit; against 50, 60, out of memory with at least
// what it needs.
func TestCompiledRegimes(t *testing.T) {
	g := unit.GiB
	m := Memory{Weights: 10 * g, Optimizer: 10 * g, Activations: 30 * g, Transient: 10 * g, Phases: []Phase{
		{Name: PhaseLayerBackward, Buffers: []Buffer{{"a", 10 * g}}},
		{Name: PhaseOutput, Buffers: []Buffer{{"logits", 8 * g}}, Recomputable: []Buffer{{BufferLossExponentials, 6 * g}}},
	}}
	if m.Total() != 60*g || m.Nominal() != 64*g {
		t.Fatalf("Total %v, Nominal %v, want 60 and 64 GiB", m.Total(), m.Nominal())
	}
	for _, c := range []struct {
		limit, want unit.Bytes
		squeezed    bool
	}{{80 * g, 64 * g, false}, {64 * g, 64 * g, false}, {62 * g, 62 * g, true}, {60 * g, 60 * g, true}, {50 * g, 60 * g, true}} {
		got, sq := m.Compiled(c.limit)
		if got != c.want || sq != c.squeezed {
			t.Errorf("Compiled(%v) = %v, %v, want %v, %v", c.limit, got, sq, c.want, c.squeezed)
		}
	}
	// with no recomputable buffer the report is what the job needs
	m.Phases[1].Recomputable = nil
	if got, sq := m.Compiled(80 * g); got != 60*g || sq {
		t.Errorf("without recomputable buffers Compiled(80 GiB) = %v, %v, want 60 GiB, false", got, sq)
	}
}

// TestLaidOutPeakOfAPipeline: the same program runs on every pipeline
// stage, so the laid-out peak (Nominal) is the larger of the two costed
// stages', though the needed peak (Total) is the most loaded stage's.
// Llama 3 70B on v5p-64, pipeline=2,fsdp=16, 1F1B over 8 micro-batches,
// remat full, 128 sequences: the first stage needs more (the embedding,
// more micro-batches in flight), the last lays out more (the loss's
// exponentials); Nominal is the last's. Under GPipe (MaxText's) every
// stage runs the loss on its share of the whole batch, and keeps its
// exponentials: 4 times 1F1B's one micro-batch (TestPipelineLossOnEveryStage).
func TestLaidOutPeakOfAPipeline(t *testing.T) {
	e := NewEstimator()
	m := layout(t, "v5p-64", 1, "pipeline=2,fsdp=16")
	j := NewJob(lookup(t, "llama3-70b"), 8192, 128)
	j.Remat, j.Schedule, j.MicroBatches = RematFull, schedule.OneFOneB, 8
	sh, err := e.validShape(&j, &m)
	if err != nil {
		t.Fatal(err)
	}
	most, other := e.stages(&j, &m, &sh)
	most.mem.Phases, other.mem.Phases = most.phases.list(), other.phases.list()
	if most.mem.ownNominal() >= other.mem.ownNominal() {
		t.Fatalf("the most loaded stage lays out %v, the other %v: want the case where the other lays out more", most.mem.ownNominal(), other.mem.ownNominal())
	}
	mem, err := e.Memory(j, m)
	if err != nil {
		t.Fatal(err)
	}
	if mem.Total() != most.mem.Total() || mem.Nominal() != other.mem.ownNominal() {
		t.Errorf("Total %v, Nominal %v; want the most loaded stage's need %v and the other's laid-out peak %v", mem.Total(), mem.Nominal(), most.mem.Total(), other.mem.ownNominal())
	}
	exps := func(j Job) unit.Bytes {
		mem, err := e.Memory(j, m)
		if err != nil {
			t.Fatal(err)
		}
		var b unit.Bytes
		for _, p := range mem.Phases {
			for _, r := range p.Recomputable {
				b += r.Bytes
			}
		}
		if b == 0 {
			t.Fatalf("%s: no exponentials on the most loaded stage", j.Schedule)
		}
		return b
	}
	j.Schedule = schedule.GPipe
	g := exps(j)
	// 128 sequences over 16 fsdp shards and 2 stages is 4 sequences a
	// chip, 8192 × 128,256 × 4 bytes of exponentials each
	if want := unit.Bytes(4 * 8192 * 128256 * 4); g != want {
		t.Errorf("GPipe's most loaded stage keeps %v of exponentials, want 4 sequences' %v", g, want)
	}
}

// TestTempScaleScalesTheExponentials: a compile log's temporaries factor
// scales the recomputable buffer as it does every temporary.
func TestTempScaleScalesTheExponentials(t *testing.T) {
	e := NewEstimator()
	m := layout(t, "v5p-16", 1, "fsdp=8")
	j := NewJob(lookup(t, "llama3-8b"), 8192, 16)
	rec := func(j Job) unit.Bytes {
		mem, err := e.Memory(j, m)
		if err != nil {
			t.Fatal(err)
		}
		return mem.Phases[len(mem.Phases)-1].Recomputable[0].Bytes
	}
	base := rec(j)
	j.TempScale = 1.5
	if got := rec(j); got != unit.Bytes(math.Round(float64(base)*1.5)) {
		t.Errorf("TempScale 1.5: exponentials %v, want 1.5 × %v", got, base)
	}
}
