package emu_test

import (
	"fmt"

	"shardlab/emu"
	"shardlab/hw"
	"shardlab/mesh"
	"shardlab/schedule"
)

func ExampleTrain() {
	m, _ := mesh.ParseOn("v5litepod-4", 2, "data=2(dcn),fsdp=2,tensor=2") // 8 virtual chips, 2 slices
	r, err := emu.Train(emu.TrainConfig{
		Model: emu.Config{Layers: 2, DModel: 16, Heads: 4, KVHeads: 2, DFF: 32, Vocab: 32, Seq: 8},
		Mesh:  m, GlobalBatch: 8, Steps: 5, Seed: 1, LR: 1e-2, Data: &emu.Synthetic{V: 32, Seed: 1},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	dcn := r.Devices[0].Sent["all-reduce"][hw.DCN]
	fmt.Println(len(r.Devices), "chips; loss fell:", r.Losses[4] < r.Losses[0], "; DCN bytes of chip 0:", dcn)
	// Output:
	// 8 chips; loss fell: true ; DCN bytes of chip 0: 35360
}

func ExampleEstimateMemory() {
	m, _ := mesh.ParseOn("v5litepod-4", 2, "data=2(dcn),fsdp=2,tensor=2")
	fp, err := emu.EstimateMemory(emu.TrainConfig{
		Model: emu.Config{Layers: 2, DModel: 16, Heads: 4, KVHeads: 2, DFF: 32, Vocab: 32, Seq: 8},
		Mesh:  m, GlobalBatch: 8, Steps: 5, Seed: 1, LR: 1e-2, Data: &emu.Synthetic{V: 32, Seed: 1},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// chip 0's weights, gradients and Adam moments: fp32 shards of its quarter
	d := fp.Devices[0]
	fmt.Println(len(fp.Devices), "chips; chip 0 holds", d.Weights, "B of weights,", d.Optimizer, "B of Adam moments")
	fmt.Println("the process:", fp.Static, "B throughout,", fp.Process, "B at its peak")
	// Output:
	// 8 chips; chip 0 holds 7072 B of weights, 14144 B of Adam moments
	// the process: 415536 B throughout, 1175088 B at its peak
}

// An interleaved 1F1B pipeline: each of the 2 pipeline devices holds 2
// non-contiguous chunks of the 4 layers (device 0 layers 0 and 2, device 1
// layers 1 and 3). The Step hook hears every step; with free communication
// and only the blocks on the clock the measured bubble is the schedule's.
func ExampleTrain_interleaved() {
	m, _ := mesh.ParseOn("v5litepod-4", 1, "pipeline=2,data=2")
	r, err := emu.Train(emu.TrainConfig{
		Model: emu.Config{Layers: 4, DModel: 16, Heads: 4, KVHeads: 2, DFF: 32, Vocab: 32, Seq: 8},
		Mesh:  m, GlobalBatch: 8, MicroBatches: 4, Schedule: schedule.Interleaved, Chunks: 2,
		Steps: 2, Seed: 1, LR: 1e-2, Data: &emu.Synthetic{V: 32, Seed: 1}, FreeComm: true, BlocksOnlyClock: true,
		Hooks: emu.Hooks{Step: func(s emu.StepReport) error {
			fmt.Printf("step %d: loss %.4f\n", s.Step, s.Loss)
			return nil
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	want, _ := schedule.BubbleChunked(schedule.Interleaved, 2, 4, 2)
	fmt.Printf("bubble %.4f, schedule's %.4f\n", r.Bubble, want)
	// Output:
	// step 1: loss 3.4835
	// step 2: loss 3.4059
	// bubble 0.1111, schedule's 0.1111
}
