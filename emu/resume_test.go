package emu

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"shardlab/schedule"
)

// storedRun trains tc with a checkpoint after every step and returns each
// step's encoded checkpoint.
func storedRun(t *testing.T, tc TrainConfig) map[int][]byte {
	t.Helper()
	stored := map[int][]byte{}
	tc.CheckpointEvery = 1
	tc.Hooks.Checkpoint = func(c *Checkpoint) error {
		var b bytes.Buffer
		_, err := c.WriteTo(&b)
		stored[c.Step] = b.Bytes()
		return err
	}
	if _, err := Train(tc); err != nil {
		t.Fatal(err)
	}
	return stored
}

// readStored reads stored checkpoints as a file of known size is read:
// against the run's shape, header first.
func readStored(stored map[int][]byte) func(int, *CheckpointShape) (*Checkpoint, error) {
	return func(step int, want *CheckpointShape) (*Checkpoint, error) {
		b := stored[step]
		return ReadCheckpointOf(bytes.NewReader(b), int64(len(b)), want)
	}
}

// TestCheckpointShapeSize: the size a run's shape gives is what its
// devices write, for every kind of layout (a wrong one would refuse every
// resume below).
func TestCheckpointShapeSize(t *testing.T) {
	for _, tt := range []struct {
		model  Config
		accel  string
		layout string
		micro  int
		sched  schedule.Kind
		chunks int
	}{
		{parityModel, "v5litepod-4", "data=2(dcn),fsdp=2,tensor=2", 1, "", 0},
		{parityModel, "v5litepod-4", "pipeline=2,data=2", 4, schedule.Interleaved, 2},
		{moeParityModel, "v5litepod-4", "data=2(dcn),expert=2,fsdp=2", 1, "", 0},
		// tied, and groups that do not split evenly: padded shards
		{Config{Layers: 2, DModel: 6, Heads: 2, KVHeads: 1, DFF: 10, Vocab: 15, Seq: 4, Tied: true}, "v5litepod-4", "fsdp=4", 1, "", 0},
	} {
		slices := 1
		if strings.Contains(tt.layout, "dcn") {
			slices = 2
		}
		tc := TrainConfig{Model: tt.model, Mesh: testMesh(t, tt.accel, slices, tt.layout), GlobalBatch: 16, MicroBatches: tt.micro, Schedule: tt.sched, Chunks: tt.chunks,
			Steps: 1, Seed: 1, LR: 1e-2, Data: &Synthetic{V: tt.model.Vocab, Seed: 1}}
		stored := storedRun(t, tc)
		resumed := tc
		resumed.Steps = 2
		resumed.ResumeSteps, resumed.LoadCheckpoint = []int{1}, readStored(stored)
		if r, err := Train(resumed); err != nil || r.ResumedFrom != 1 {
			t.Errorf("%s: resume through ReadCheckpointOf: %v (checkpoint of %d bytes)", tt.layout, err, len(stored[1]))
		}
	}
}

// TestReadCheckpointOfHeaderFirst: a checkpoint of this run extended to 2
// GiB (as a sparse file is) is refused from its header and size, having
// read no more than the reader's first buffer; one of another run is
// refused as a mismatch, before its size.
func TestReadCheckpointOfHeaderFirst(t *testing.T) {
	tc := TrainConfig{Model: parityModel, Mesh: testMesh(t, "v5litepod-4", 1, "fsdp=2,tensor=2"), GlobalBatch: 8, Steps: 1, Seed: 3, LR: 1e-2,
		Data: &Synthetic{V: parityModel.Vocab, Seed: 3}}
	stored := storedRun(t, tc)
	good := stored[1]
	var got *CheckpointShape
	resumed := tc
	resumed.Steps = 2
	resumed.ResumeSteps = []int{1}
	var read int64
	var sizeErr *SizeError
	resumed.LoadCheckpoint = func(step int, want *CheckpointShape) (*Checkpoint, error) {
		got = want
		huge := int64(2 << 30)
		// what ReadCheckpointOf reads is copied to, and counted by, counted
		counted := &countingWriter{w: io.Discard}
		r := io.MultiReader(bytes.NewReader(good), io.LimitReader(zeros{}, huge-int64(len(good))))
		c, err := ReadCheckpointOf(io.TeeReader(r, counted), huge, want)
		read = counted.n
		return c, err
	}
	if _, err := Train(resumed); !errors.As(err, &sizeErr) || sizeErr.Size != 2<<30 || sizeErr.Want != int64(len(good)) || !errors.Is(err, ErrCheckpoint) {
		t.Fatalf("a 2 GiB checkpoint: %v, want a SizeError of %d bytes, want %d", err, 2<<30, len(good))
	}
	if read > 1<<16 {
		t.Errorf("refusing a 2 GiB checkpoint read %d bytes of it, want at most the first 64 KiB", read)
	}
	// another run's checkpoint: the header's mismatch, not the size
	other := resumed
	other.Seed = 4
	var mm *MismatchError
	if _, err := Train(other); !errors.As(err, &mm) || !strings.Contains(err.Error(), "seed 3, this run 4") {
		t.Errorf("another run's 2 GiB checkpoint: %v, want a MismatchError naming the seed", err)
	}
	// a file cut short, or longer than its size says, is refused too
	for name, tt := range map[string]struct {
		data []byte
		size int64
	}{
		"cut short":    {good[:len(good)-1], int64(len(good))},
		"grew":         {append(append([]byte(nil), good...), 0), int64(len(good))},
		"no header":    {good[:10], 10},
		"bit flipped":  {flip(good, len(good)/2), int64(len(good))},
		"checksum cut": {good[:len(good)-1], int64(len(good) - 1)},
	} {
		if _, err := ReadCheckpointOf(bytes.NewReader(tt.data), tt.size, got); !errors.Is(err, ErrCheckpoint) {
			t.Errorf("%s: %v, want ErrCheckpoint", name, err)
		}
	}
	if c, err := ReadCheckpointOf(bytes.NewReader(good), int64(len(good)), nil); err != nil || c.Step != 1 {
		t.Errorf("without a shape: %v, %v; want step 1", c, err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func flip(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 1
	return out
}

// TestResumeSkipsUnusable: a corrupt newest checkpoint is skipped for the
// newest intact one (Hooks.Skipped hears which and why) and the run ends
// as the uninterrupted one does; every one corrupt is refused with the
// newest's error; another run's is refused, not skipped.
func TestResumeSkipsUnusable(t *testing.T) {
	base := TrainConfig{Model: parityModel, Mesh: testMesh(t, "v5litepod-4", 1, "fsdp=2,tensor=2"), GlobalBatch: 8, Steps: 5, Seed: 3, LR: 1e-2,
		BF16Compute: true, Data: &Synthetic{V: parityModel.Vocab, Seed: 3}}
	straight, err := Train(base)
	if err != nil {
		t.Fatal(err)
	}
	first := base
	first.Steps = 3
	stored := storedRun(t, first)
	stored[3] = flip(stored[3], len(stored[3])/2)
	resumed := base
	resumed.ResumeSteps, resumed.LoadCheckpoint = []int{1, 2, 3}, readStored(stored)
	var skipped []int
	var why error
	resumed.Hooks.Skipped = func(step int, err error) error { skipped, why = append(skipped, step), err; return nil }
	r, err := Train(resumed)
	if err != nil {
		t.Fatalf("resume with a corrupt newest checkpoint: %v", err)
	}
	if r.ResumedFrom != 2 || len(skipped) != 1 || skipped[0] != 3 || !errors.Is(why, ErrCheckpoint) || !strings.Contains(why.Error(), "checksum") {
		t.Errorf("resumed from %d, skipped %v (%v); want step 2, step 3 skipped for its checksum", r.ResumedFrom, skipped, why)
	}
	a, b := r.Final.Tensors(), straight.Final.Tensors()
	for ti := range a {
		for i := range a[ti] {
			if a[ti][i] != b[ti][i] {
				t.Fatalf("tensor %d element %d: resumed %v, uninterrupted %v", ti, i, a[ti][i], b[ti][i])
			}
		}
	}
	// every one corrupt: the newest's error, with the others'
	for s := range stored {
		stored[s] = stored[s][:len(stored[s])-1]
	}
	skipped = nil
	if _, err := Train(resumed); !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), "no older checkpoint is usable either (step 2: ") || len(skipped) != 0 {
		t.Errorf("every checkpoint corrupt: %v (skipped hook heard %v), want the newest's error naming the older ones and no skip reported", err, skipped)
	}
	// a newest checkpoint of another run stops the resume
	other := first
	other.Seed = 9
	stored = storedRun(t, first)
	stored[3] = storedRun(t, other)[3]
	resumed.LoadCheckpoint = readStored(stored)
	var mm *MismatchError
	if _, err := Train(resumed); !errors.As(err, &mm) {
		t.Errorf("another run's newest checkpoint: %v, want a MismatchError", err)
	}
}
