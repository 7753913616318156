package emu

import (
	"bytes"
	"errors"
	"testing"
)

func TestResumeIsBitIdentical(t *testing.T) {
	m := testMesh(t, "v5litepod-4", 2, "data=2(dcn),fsdp=2,tensor=2")
	base := TrainConfig{Model: parityModel, Mesh: m, GlobalBatch: 8, MicroBatches: 1, Steps: 4, Seed: 5, LR: 1e-2,
		Data: &Synthetic{V: parityModel.Vocab, Seed: 11}}
	straight, err := Train(base)
	if err != nil {
		t.Fatal(err)
	}
	// stop after step 2, through the encoded checkpoint
	var saved bytes.Buffer
	first := base
	first.CheckpointEvery = 2
	first.OnCheckpoint = func(c *Checkpoint) error {
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
	var down *ErrLinkDown
	if !errors.As(err, &down) || down.A != 3 || down.B != 4 {
		t.Errorf("error = %v, want link 3-4 down", err)
	}
}

func FuzzReadCheckpoint(f *testing.F) {
	f.Add([]byte(ckptMagic))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ReadCheckpoint(bytes.NewReader(data))
		if err == nil && c == nil {
			t.Fatal("nil checkpoint without error")
		}
	})
}
