package emu

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"shardlab/emu/fabric"
	"shardlab/mesh"
	"shardlab/schedule"
)

func TestResumeIsBitIdentical(t *testing.T) {
	resumeBitIdentical(t, parityModel, testMesh(t, "v5litepod-4", 2, "data=2(dcn),fsdp=2,tensor=2"))
	// and a mixture of experts, its routed experts sharded over expert
	resumeBitIdentical(t, moeParityModel, testMesh(t, "v5litepod-4", 2, "data=2(dcn),expert=2,fsdp=2"))
}

// resumeBitIdentical holds a run resumed at step 2 from its encoded
// checkpoint to the same run uninterrupted, bit for bit.
func resumeBitIdentical(t *testing.T, model Config, m mesh.Mesh) {
	t.Helper()
	base := TrainConfig{Model: model, Mesh: m, GlobalBatch: 8, MicroBatches: 1, Steps: 4, Seed: 5, LR: 1e-2,
		BF16Compute: true, Data: &Synthetic{V: model.Vocab, Seed: 11}}
	straight, err := Train(base)
	if err != nil {
		t.Fatal(err)
	}
	// stop after step 2, through the encoded checkpoint
	var saved bytes.Buffer
	first := base
	first.CheckpointEvery = 2
	first.Hooks.Checkpoint = func(c *Checkpoint) error {
		if c.Step == 2 {
			saved.Reset()
			_, err := c.WriteTo(&saved)
			return err
		}
		return nil
	}
	first.Steps = 2
	if _, err := Train(first); err != nil {
		t.Fatal(err)
	}
	ck, err := ReadCheckpoint(bytes.NewReader(saved.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	resumed := base
	resumed.Resume = ck
	r, err := Train(resumed)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range r.Losses {
		if l != straight.Losses[2+i] {
			t.Errorf("resumed step %d loss %v, uninterrupted %v", 3+i, l, straight.Losses[2+i])
		}
	}
	a, b := r.Final.Tensors(), straight.Final.Tensors()
	for ti := range a {
		for i := range a[ti] {
			if a[ti][i] != b[ti][i] {
				t.Fatalf("tensor %d element %d: resumed %v, uninterrupted %v", ti, i, a[ti][i], b[ti][i])
			}
		}
	}
	// a checkpoint of another layout is refused
	other := base
	other.Mesh = testMesh(t, "v5litepod-8", 1, "data=8")
	other.Resume = ck
	if _, err := Train(other); !errors.Is(err, ErrCheckpoint) {
		t.Errorf("other layout: %v, want ErrCheckpoint", err)
	}
}

// TestResumeChunkedSchedule: a run whose devices hold several chunks of
// layers resumes bit for bit, and only under its own schedule.
func TestResumeChunkedSchedule(t *testing.T) {
	base := TrainConfig{Model: parityModel, Mesh: testMesh(t, "v5litepod-4", 1, "pipeline=2,data=2"), GlobalBatch: 8, MicroBatches: 2,
		Schedule: schedule.Interleaved, Chunks: 2, Steps: 3, Seed: 5, LR: 1e-2, Data: &Synthetic{V: parityModel.Vocab, Seed: 11}}
	straight, err := Train(base)
	if err != nil {
		t.Fatal(err)
	}
	first := base
	first.Steps = 1
	r, err := Train(first)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := r.Checkpoint.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	ck, err := ReadCheckpoint(&b)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Header.Schedule != "interleaved" || ck.Header.Chunks != 2 {
		t.Errorf("header schedule %q, chunks %d; want interleaved, 2", ck.Header.Schedule, ck.Header.Chunks)
	}
	resumed := base
	resumed.Resume = ck
	rr, err := Train(resumed)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range rr.Losses {
		if l != straight.Losses[1+i] {
			t.Errorf("resumed step %d loss %v, uninterrupted %v", 2+i, l, straight.Losses[1+i])
		}
	}
	circular := resumed
	circular.Schedule = schedule.Circular
	want := `schedule "interleaved", this run "circular"`
	if _, err := Train(circular); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("resumed as circular: %v, want a mismatch naming %s", err, want)
	}
}

// TestResumeRefusesOtherSettings: a checkpoint resumes only under the
// settings it was written with; a mismatch names the field and both values.
func TestResumeRefusesOtherSettings(t *testing.T) {
	base := TrainConfig{Model: parityModel, Mesh: testMesh(t, "v5litepod-4", 1, "pipeline=2,data=2"), GlobalBatch: 8, MicroBatches: 2,
		Schedule: schedule.OneFOneB, Steps: 2, Seed: 5, LR: 1e-2, BF16Compute: true, Data: &Synthetic{V: parityModel.Vocab, Seed: 11}}
	first := base
	first.Steps = 1
	r, err := Train(first)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := r.Checkpoint.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	ck, err := ReadCheckpoint(&b)
	if err != nil {
		t.Fatal(err)
	}
	same := base
	same.Resume = ck
	if _, err := Train(same); err != nil {
		t.Fatalf("same settings: %v", err)
	}
	for _, tt := range []struct {
		field, values string
		change        func(*TrainConfig)
	}{
		{"bf16_compute", "true, this run false", func(tc *TrainConfig) { tc.BF16Compute = false }},
		{"lr", "0.01, this run 0.02", func(tc *TrainConfig) { tc.LR = 0.02 }},
		{"seed", "5, this run 6", func(tc *TrainConfig) { tc.Seed = 6 }},
		{"model.d_ff", "32, this run 64", func(tc *TrainConfig) { tc.Model.DFF = 64 }},
		{"global_batch", "8, this run 16", func(tc *TrainConfig) { tc.GlobalBatch = 16 }},
		{"micro_batches", "2, this run 4", func(tc *TrainConfig) { tc.MicroBatches = 4 }},
		{"schedule", `"1f1b", this run "gpipe"`, func(tc *TrainConfig) { tc.Schedule = schedule.GPipe }},
		{"schedule", `"1f1b", this run "interleaved"`, func(tc *TrainConfig) { tc.Schedule, tc.Chunks = schedule.Interleaved, 2 }},
		{"chunks", "0, this run 2", func(tc *TrainConfig) { tc.Schedule, tc.Chunks = schedule.Circular, 2 }},
		{"data", `"synthetic, vocab 32, seed 11", this run "synthetic, vocab 32, seed 12"`, func(tc *TrainConfig) { tc.Data = &Synthetic{V: parityModel.Vocab, Seed: 12} }},
		{"efficiency", "1, this run 0.5", func(tc *TrainConfig) { tc.Efficiency = 0.5 }},
		{"free_comm", "false, this run true", func(tc *TrainConfig) { tc.FreeComm = true }},
		{"layout", `"data=2,pipeline=2", this run "fsdp=2,pipeline=2"`, func(tc *TrainConfig) { tc.Mesh = testMesh(t, "v5litepod-4", 1, "pipeline=2,fsdp=2") }},
	} {
		tc := base
		tt.change(&tc)
		tc.Resume = ck
		_, err := Train(tc)
		var mm *MismatchError
		if !errors.As(err, &mm) || !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), tt.field+" "+tt.values) {
			t.Errorf("%s changed: %v; want a MismatchError with %q", tt.field, err, tt.field+" "+tt.values)
		}
	}
}

func TestCorruptCheckpointRefused(t *testing.T) {
	m := testMesh(t, "v5litepod-4", 1, "fsdp=4")
	r, err := Train(TrainConfig{Model: parityModel, Mesh: m, GlobalBatch: 8, MicroBatches: 1, Steps: 1, Seed: 1, LR: 1e-3,
		Data: &Synthetic{V: parityModel.Vocab, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := r.Checkpoint.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	good := b.Bytes()
	if _, err := ReadCheckpoint(bytes.NewReader(good)); err != nil {
		t.Fatalf("good checkpoint refused: %v", err)
	}
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/2] ^= 1
	for name, data := range map[string][]byte{
		"flipped bit": flipped, "truncated": good[:len(good)-100], "empty": nil, "header only": good[:20],
	} {
		if _, err := ReadCheckpoint(bytes.NewReader(data)); !errors.Is(err, ErrCheckpoint) {
			t.Errorf("%s: %v, want ErrCheckpoint", name, err)
		}
	}
}

func TestFailedLinkStopsStartup(t *testing.T) {
	m := testMesh(t, "v5litepod-8", 1, "data=8")
	_, err := Train(TrainConfig{Model: parityModel, Mesh: m, GlobalBatch: 8, Steps: 1, Seed: 1, LR: 1e-3,
		Data: &Synthetic{V: parityModel.Vocab, Seed: 1}, FailLinks: [][2]int{{3, 4}}})
	var down *fabric.ErrLinkDown
	if !errors.As(err, &down) || down.A != 3 || down.B != 4 {
		t.Errorf("error = %v, want link 3-4 down", err)
	}
}

// seal frames a checkpoint body as WriteTo does: the magic before it and
// a valid SHA-256 after, so the decoder below the checksum is reached.
func seal(body []byte) []byte {
	out := append([]byte(ckptMagic), body...)
	sum := sha256.Sum256(out)
	return append(out, sum[:]...)
}

func u64s(v ...uint64) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	return b
}

// TestCraftedCheckpointRefused: files whose checksum is valid but whose
// counts and lengths are absurd are refused without a panic or a huge
// allocation.
func TestCraftedCheckpointRefused(t *testing.T) {
	hdr := []byte(`{"step":1}`)
	head := append(u64s(uint64(len(hdr))), hdr...)
	device := func(rest ...uint64) []byte { // one device: id 0, Adam step 1, clock 0, then rest
		b := append(append([]byte(nil), head...), u64s(1, 0, 1, 0)...)
		return append(b, u64s(rest...)...)
	}
	for _, tt := range []struct {
		name string
		body []byte
		want string
	}{
		{"tensor length 2^62", append(device(1, 1<<62), make([]byte, 64)...), "tensor length"},
		{"tensor length 2^64-1", append(device(1, math.MaxUint64), make([]byte, 64)...), "tensor length"},
		{"tensor length a value too long", append(device(1, 3), make([]byte, 8)...), "tensor length"},
		{"tensor count 2^61", append(device(1<<61), make([]byte, 64)...), "tensor count"},
		{"device count 2^63", append(append(append([]byte(nil), head...), u64s(1<<63)...), make([]byte, 64)...), "device count"},
		{"header length 2^63", u64s(1 << 63), "header length"},
		{"negative step", append(u64s(11), []byte(`{"step":-1}`)...), "step -1"},
		{"NaN clock", append(append(append([]byte(nil), head...), u64s(1, 0, 1, math.Float64bits(math.NaN()))...), u64s(0, 0, 0)...), "clock NaN"},
	} {
		c, err := ReadCheckpoint(bytes.NewReader(seal(tt.body)))
		if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: ReadCheckpoint = %v, %v; want ErrCheckpoint naming %q", tt.name, c, err, tt.want)
		}
	}
}

// FuzzReadCheckpoint feeds the decoder both raw files and bodies sealed
// with a valid checksum (so the fuzzer explores the decoder, not SHA-256).
func FuzzReadCheckpoint(f *testing.F) {
	f.Add([]byte(ckptMagic))
	f.Add([]byte("garbage"))
	m := testMesh(f, "v5litepod-4", 1, "fsdp=4")
	small := Config{Layers: 1, DModel: 4, Heads: 2, KVHeads: 1, DFF: 4, Vocab: 8, Seq: 2}
	r, err := Train(TrainConfig{Model: small, Mesh: m, GlobalBatch: 4, Steps: 1, Seed: 1, LR: 1e-3, Data: &Synthetic{V: small.Vocab, Seed: 1}})
	if err != nil {
		f.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := r.Checkpoint.WriteTo(&b); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add(b.Bytes()[len(ckptMagic) : b.Len()-sha256.Size]) // the body alone, sealed below
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{data, seal(data)} {
			c, err := ReadCheckpoint(bytes.NewReader(in))
			if err == nil && c == nil {
				t.Fatal("nil checkpoint without error")
			}
			if err != nil && !errors.Is(err, ErrCheckpoint) {
				t.Fatalf("error %v does not wrap ErrCheckpoint", err)
			}
			if err == nil {
				// what decodes re-encodes to the same bytes
				var again bytes.Buffer
				if _, err := c.WriteTo(&again); err != nil {
					t.Fatal(err)
				}
				if d, err := ReadCheckpoint(&again); err != nil || len(d.Devices) != len(c.Devices) {
					t.Fatalf("re-read of a decoded checkpoint: %v", err)
				}
			}
		}
	})
}

func TestNewestCommon(t *testing.T) {
	for _, tt := range []struct {
		held [][]int
		want int
		ok   bool
		desc string
	}{
		// the crash: rank 0 wrote step 7, rank 1 died before it
		{[][]int{{6, 7}, {6}}, 6, true, "rank 0 holds steps 6, 7; rank 1 holds step 6"},
		{[][]int{{7}, {6, 7}}, 7, true, "rank 0 holds step 7; rank 1 holds steps 6, 7"},
		{[][]int{{4}}, 4, true, "rank 0 holds step 4"},
		{[][]int{{6}, {7}}, 0, false, "rank 0 holds step 6; rank 1 holds step 7"},
		{[][]int{{6}, nil}, 0, false, "rank 0 holds step 6; rank 1 holds none"},
		{nil, 0, false, ""},
	} {
		got, ok := newestCommon(tt.held)
		if got != tt.want || ok != tt.ok {
			t.Errorf("newestCommon(%v) = %d, %v; want %d, %v", tt.held, got, ok, tt.want, tt.ok)
		}
		if d := describeHeld(tt.held); d != tt.desc {
			t.Errorf("describeHeld(%v) = %q, want %q", tt.held, d, tt.desc)
		}
	}
}

// TestResumeFromStoredCheckpoints: with LoadCheckpoint, a run resumes from
// the newest step it holds and ends with the uninterrupted run's bits;
// a checkpoint at or past the last step is refused, as is a file that
// holds another step.
func TestResumeFromStoredCheckpoints(t *testing.T) {
	base := TrainConfig{Model: parityModel, Mesh: testMesh(t, "v5litepod-4", 1, "fsdp=2,tensor=2"), GlobalBatch: 8, Steps: 5, Seed: 3, LR: 1e-2,
		BF16Compute: true, Data: &Synthetic{V: parityModel.Vocab, Seed: 3}}
	straight, err := Train(base)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[int][]byte{}
	first := base
	first.Steps = 3
	first.CheckpointEvery = 1
	first.Hooks.Checkpoint = func(c *Checkpoint) error {
		var b bytes.Buffer
		_, err := c.WriteTo(&b)
		stored[c.Step] = b.Bytes()
		return err
	}
	var committed []int
	first.Hooks.Committed = func(step int) error {
		committed = append(committed, step)
		return nil
	}
	if _, err := Train(first); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(committed) != "[1 2 3]" {
		t.Errorf("committed %v, want [1 2 3]", committed)
	}
	load := func(step int, _ *CheckpointShape) (*Checkpoint, error) {
		return ReadCheckpoint(bytes.NewReader(stored[step]))
	}
	resumed := base
	resumed.ResumeSteps, resumed.LoadCheckpoint = []int{3, 1, 2}, load
	var heard []int
	resumed.Hooks.Resumed = func(step int, held [][]int) error { heard = append(heard, step); return nil }
	r, err := Train(resumed)
	if err != nil {
		t.Fatal(err)
	}
	if r.ResumedFrom != 3 || fmt.Sprint(heard) != "[3]" || len(r.Losses) != 2 {
		t.Fatalf("resumed from %d (heard %v) with %d losses, want step 3 and 2 losses", r.ResumedFrom, heard, len(r.Losses))
	}
	if r.Losses[0] != straight.Losses[3] || r.Losses[1] != straight.Losses[4] {
		t.Errorf("resumed losses %v, uninterrupted %v", r.Losses, straight.Losses[3:])
	}
	a, b := r.Final.Tensors(), straight.Final.Tensors()
	for ti := range a {
		for i := range a[ti] {
			if a[ti][i] != b[ti][i] {
				t.Fatalf("tensor %d element %d: resumed %v, uninterrupted %v", ti, i, a[ti][i], b[ti][i])
			}
		}
	}
	done := resumed
	done.Steps = 3
	var sd *StepsDoneError
	if _, err := Train(done); !errors.As(err, &sd) || sd.Step != 3 || sd.Steps != 3 || !errors.Is(err, ErrInvalid) {
		t.Errorf("resume at the last step: %v, want a StepsDoneError", err)
	}
	one := base
	one.Steps = 2
	one.Resume, _ = load(3, nil)
	if _, err := Train(one); !errors.As(err, &sd) || sd.Step != 3 || sd.Steps != 2 {
		t.Errorf("resume of step 3 with 2 steps: %v, want a StepsDoneError", err)
	}
	wrong := resumed
	wrong.ResumeSteps = []int{3} // nothing older to fall back on
	wrong.LoadCheckpoint = func(int, *CheckpointShape) (*Checkpoint, error) { return load(2, nil) }
	if _, err := Train(wrong); !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), "step 3 holds step 2") {
		t.Errorf("file of another step: %v", err)
	}
	none := resumed
	none.ResumeSteps = nil
	var re *ResumeError
	if _, err := Train(none); !errors.As(err, &re) || !strings.Contains(err.Error(), "rank 0 holds none") {
		t.Errorf("no checkpoints: %v, want a ResumeError", err)
	}
}

// TestDivergenceStops: a learning rate far too high makes the loss explode;
// the run stops at that step with the reason, checkpoints nothing past it,
// and still returns its results.
func TestDivergenceStops(t *testing.T) {
	tc := TrainConfig{Model: parityModel, Mesh: testMesh(t, "v5litepod-4", 1, "fsdp=2,tensor=2"), GlobalBatch: 8, Steps: 20, Seed: 1, LR: 3,
		BF16Compute: true, Data: &Synthetic{V: parityModel.Vocab, Seed: 1}, CheckpointEvery: 1}
	var saved []int
	tc.Hooks.Checkpoint = func(c *Checkpoint) error { saved = append(saved, c.Step); return nil }
	r, err := Train(tc)
	if err != nil {
		t.Fatal(err)
	}
	d := r.Diverged
	if d == nil {
		t.Fatalf("losses %v: no divergence reported", r.Losses)
	}
	if d.Step >= tc.Steps || len(r.Losses) != d.Step || r.Losses[d.Step-1] != d.Loss || d.Loss <= d.Limit && !math.IsNaN(d.Loss) {
		t.Errorf("diverged at step %d with loss %v (limit %v), losses %v", d.Step, d.Loss, d.Limit, r.Losses)
	}
	for i, l := range r.Losses[:d.Step-1] {
		if !(l <= d.Limit) {
			t.Errorf("step %d loss %v is past the limit %v but the run went on", i+1, l, d.Limit)
		}
	}
	if len(saved) != d.Step-1 || r.Checkpoint.Step != d.Step || r.Final == nil {
		t.Errorf("checkpoints %v, final checkpoint at step %d; want steps 1 to %d only", saved, r.Checkpoint.Step, d.Step-1)
	}
	if got := divergenceLimit(256); math.Abs(got-3*math.Log(256)) > 1e-12 {
		t.Errorf("divergenceLimit(256) = %v, want 3 ln 256", got)
	}
	if got := divergenceLimit(2); math.Abs(got-(math.Log(2)+5)) > 1e-12 {
		t.Errorf("divergenceLimit(2) = %v, want ln 2 + 5", got)
	}
}

// TestCheckpointV2Refused: a version-2 checkpoint (its header wrote the
// model's keys as seq and tied, not model.Spec's seq_len and
// tied_embeddings) is refused by its version, not read as a model with no
// sequence length.
func TestCheckpointV2Refused(t *testing.T) {
	v2 := append([]byte("SHARDLAB-CKPT-2\n"), `{"model":{"layers":2,"seq":16,"tied":true}}`...)
	_, err := ReadCheckpoint(bytes.NewReader(v2))
	if !errors.Is(err, ErrCheckpoint) || !strings.Contains(fmt.Sprint(err), `checkpoint format "2", this shardlab reads "3" only`) {
		t.Errorf("error = %v, want format 2 refused, naming 3", err)
	}
}
