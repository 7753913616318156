package emu

import (
	"slices"
	"testing"

	"shardlab/emu/fabric"
	"shardlab/mesh"
	"shardlab/schedule"
)

// TestInboxesMatchSends: with two stages and two chunks one FIFO carries
// activations one way and gradients the other; every message a stage waits
// for is one its peer sends, and it takes all of them. (The schedules in
// package schedule happen to take them in send order; TestRecvOutOfOrder
// covers an op list that does not.)
func TestInboxesMatchSends(t *testing.T) {
	out := 0
	for _, k := range []schedule.Kind{schedule.Interleaved, schedule.Circular} {
		for _, m := range []int{2, 4, 6, 8} {
			s, err := schedule.NewChunked(k, 2, m, 2)
			if err != nil {
				t.Fatal(err)
			}
			for si := range 2 {
				in := inboxes(s, si, []int{0, 1})[1-si]
				// the sends si waits for, in its own op order
				var need []int
				for _, op := range s.Ops[si] {
					vs := op.Chunk*2 + si
					from := vs - 1
					if op.Pass == schedule.Backward {
						from = vs + 1
					}
					if from < 0 || from > 3 {
						continue
					}
					i, ok := in.pos[schedule.Op{Pass: op.Pass, MicroBatch: op.MicroBatch, Chunk: from / 2}]
					if !ok {
						t.Fatalf("%s m=%d: stage %d waits for %v, which stage %d never sends", k, m, si, op, 1-si)
					}
					need = append(need, i)
				}
				if len(need) != len(in.pos) {
					t.Errorf("%s m=%d: stage %d takes %d messages, stage %d sends it %d", k, m, si, len(need), 1-si, len(in.pos))
				}
				for j := 1; j < len(need); j++ {
					if need[j] < need[j-1] {
						out++
						break
					}
				}
			}
		}
	}
	t.Logf("%d of 16 (schedule, micro-batches, stage) cases take messages out of send order", out)
}

// TestRecvOutOfOrder: a stage that takes its peer's messages in another
// order than they were sent gets each op its own input.
func TestRecvOutOfOrder(t *testing.T) {
	s, err := schedule.NewChunked(schedule.Circular, 2, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	// stage 1 runs its two chunk-0 forwards in the other order
	s.Ops[1][0], s.Ops[1][1] = s.Ops[1][1], s.Ops[1][0]
	tc := &TrainConfig{Chunks: 2, sched: s}
	fab := fabric.New([]int{0, 0})
	devs := make([]*device, 2)
	for si := range devs {
		devs[si] = &device{tc: tc, id: si, ep: fab.Endpoint(si), pipe: []int{0, 1}, inbox: inboxes(s, si, []int{0, 1})}
		devs[si].coord[mesh.Pipeline] = si
	}
	for _, op := range s.Ops[0] { // stage 0 sends everything first
		if _, ok := sendTo(s, 0, op); ok {
			devs[0].send(op, []float32{float32(op.Pass), float32(op.MicroBatch), float32(op.Chunk)})
		}
	}
	for _, op := range s.Ops[1] {
		if op.Chunk == 1 && op.Pass == schedule.Backward {
			continue // the head: no input from stage 0
		}
		got := devs[1].recv(op)
		from := op.Chunk // the sender's chunk: vs−1 forward, vs+1 backward, both on stage 0
		if op.Pass == schedule.Backward {
			from++
		}
		if want := []float32{float32(op.Pass), float32(op.MicroBatch), float32(from)}; !slices.Equal(got, want) {
			t.Errorf("stage 1 %v received %v, want stage 0's output %v", op, got, want)
		}
	}
}
